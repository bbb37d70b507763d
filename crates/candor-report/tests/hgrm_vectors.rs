//! `.hgrm` files in wrk2's older "inf" layout (printed by HdrHistogram's C library:
//! `%12.3f %12f %12d %12.2f` rows, 6-decimal percentiles, `inf` on the last row) parse, and a
//! histogram rebuilt from one prints the same distribution in Java's layout: same percentile
//! steps, same counts, same values.
//!
//! The wrk2-layout inputs are made here, from histograms the test builds, with the percentile
//! steps taken from the `hdrhistogram` crate's own quantile iterator (an implementation
//! independent of candor's `percentile_steps`), so no third-party data files are needed.

use candor_report::hgrm::{parse_hgrm, percentile_steps, write_hgrm, HgrmFile};
use hdrhistogram::Histogram;

/// A small deterministic generator (SplitMix64), so every run builds the same histograms.
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Service-like latencies in microseconds: a log-normal body around `median_us` and, when
/// `stall_us` is set, a coordinated-omission-corrected tail (every request queued behind a stall
/// of that length, as HdrHistogram's `recordValueWithExpectedInterval` would add).
fn distribution(seed: u64, count: u64, median_us: f64, stall_us: Option<u64>) -> Histogram<u64> {
    let mut rng = SplitMix(seed);
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for _ in 0..count {
        // Box-Muller normal, then exp: log-normal with sigma 0.35.
        let (u1, u2) = (rng.next_f64().max(1e-12), rng.next_f64());
        let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let v = (median_us * (0.35 * normal).exp()).round().max(1.0) as u64;
        h.record(v).unwrap();
    }
    if let Some(stall) = stall_us {
        // One stall: the requests that should have gone out during it wait for its end.
        let interval = 100;
        let mut missed = stall;
        while missed > interval {
            h.record(missed).unwrap();
            missed -= interval;
        }
    }
    h
}

/// Prints `h` (microseconds) as wrk2 does: values in milliseconds, C `printf` layout.
fn wrk2_layout(h: &Histogram<u64>) -> String {
    let mut out = format!(
        "{:>12} {:>12} {:>12} {:>12}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for step in h.iter_quantiles(5) {
        let value = h.highest_equivalent(step.value_iterated_to()) as f64 / 1000.0;
        let q = step.quantile_iterated_to();
        let total = h
            .iter_recorded()
            .take_while(|v| v.value_iterated_to() <= step.value_iterated_to())
            .map(|v| v.count_at_value())
            .sum::<u64>();
        if q < 1.0 {
            out.push_str(&format!(
                "{value:>12.3} {q:>12.6} {total:>12} {:>12.2}\n",
                1.0 / (1.0 - q)
            ));
        } else {
            out.push_str(&format!(
                "{value:>12.3} {q:>12.6} {total:>12} {:>12}\n",
                "inf"
            ));
        }
    }
    out.push_str(&format!(
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]\n",
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    ));
    out.push_str(&format!(
        "#[Max     = {:>12.3}, Total count    = {:>12}]\n",
        h.max() as f64 / 1000.0,
        h.len()
    ));
    out.push_str(&format!(
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]\n",
        h.buckets(),
        h.distinct_values()
    ));
    out
}

/// Rebuilds a histogram in microseconds: each row's count increase sits at the row's value.
fn rebuild(f: &HgrmFile) -> candor_core::Histo {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
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
    let cases = [
        ("12k-like", distribution(12, 300_000, 3_000.0, None)),
        (
            "12k-like, corrected",
            distribution(12, 300_000, 3_000.0, Some(60_000)),
        ),
        ("16k-like", distribution(16, 400_000, 180.0, None)),
        (
            "16k-like, corrected",
            distribution(16, 400_000, 180.0, Some(2_500_000)),
        ),
    ];
    for (name, source) in &cases {
        let text = wrk2_layout(source);
        assert!(
            text.lines().any(|l| l.trim_end().ends_with("inf")),
            "{name}"
        );
        let original = parse_hgrm(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let total = original.total_count.expect("footer total count");
        assert_eq!(total, source.len(), "{name}");
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
            // wrk2 prints 6 decimals of the percentile, Java 12: they differ by at most half a
            // unit of the sixth decimal (plus binary rounding of that half).
            assert!(
                (a.percentile - b.percentile).abs() <= 5e-7 + 1e-12,
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
