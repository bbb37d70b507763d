//! `.hgrm` files from another implementation (wrk2, "inf" style) parse, and a histogram rebuilt
//! from one prints the same distribution in Java's layout: same percentile steps, same counts,
//! same values.

use candor_report::hgrm::{parse_hgrm, percentile_steps, write_hgrm, HgrmFile};

fn vector(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/vectors/hgrm/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{path}{name}: {e}"))
}

/// Rebuilds a histogram in microseconds: each row's count increase sits at the row's value.
fn rebuild(f: &HgrmFile) -> candor_core::Histo {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    let mut prev = 0;
    for r in &f.rows {
        if r.total_count > prev {
            h.record_n((r.value * 1000.0).round() as u64, r.total_count - prev)
                .unwrap();
            prev = r.total_count;
        }
    }
    h
}

#[test]
fn wrk2_distributions_reprint_in_java_layout() {
    for name in ["12Krps", "12Krps_CO", "16Krps", "16Krps_CO"] {
        let original = parse_hgrm(&vector(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let total = original.total_count.expect("footer total count");
        assert_eq!(original.rows.last().unwrap().total_count, total, "{name}");
        assert!(
            original.mean.is_some() && original.max.is_some(),
            "{name}: footer"
        );
        let h = rebuild(&original);
        assert_eq!(h.len(), total, "{name}");

        let text = write_hgrm(&h, 5, 1000.0);
        // Java's layout: header, blank line, rows, three footer lines.
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        assert!(lines[lines.len() - 3].starts_with("#[Mean    = "));
        assert!(lines[lines.len() - 2].starts_with("#[Max     = "));
        assert!(lines[lines.len() - 1].starts_with("#[Buckets = "));
        let ours = parse_hgrm(&text).unwrap();
        assert_eq!(
            ours.rows.len(),
            original.rows.len(),
            "{name}: same percentile steps"
        );
        for (a, b) in ours.rows.iter().zip(&original.rows) {
            assert_eq!(a.total_count, b.total_count, "{name}: {a:?} vs {b:?}");
            // wrk2 prints 6 decimals of the percentile, Java 12.
            assert!(
                (a.percentile - b.percentile).abs() <= 5e-7,
                "{name}: {a:?} vs {b:?}"
            );
            assert!(
                (a.value - b.value).abs() <= 0.0011 + b.value * 1e-3,
                "{name}: {a:?} vs {b:?}"
            );
        }
        assert_eq!(ours.total_count, Some(total));
        // Rows come from the same iteration the writer uses.
        assert_eq!(percentile_steps(&h, 5).len(), ours.rows.len());
    }
}
