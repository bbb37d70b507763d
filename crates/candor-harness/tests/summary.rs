//! Summary math: percentile rows by sample count, the % variation formulas (checked against
//! JLBH's published table), and the summary table built from per-run histograms.

use candor_core::hist::new_histogram;
use candor_harness::summary::{percentile_rows, variation_runs};
use candor_harness::{SummaryTable, Variation};

#[test]
fn percentile_rows_follow_the_sample_count() {
    assert_eq!(percentile_rows(0), vec![50.0, 90.0, 99.0]);
    assert_eq!(percentile_rows(10_000), vec![50.0, 90.0, 99.0]);
    assert_eq!(percentile_rows(10_001), vec![50.0, 90.0, 99.0, 99.7]);
    assert_eq!(percentile_rows(99_999).len(), 4);
    let r = percentile_rows(100_000);
    assert_eq!(r.len(), 5);
    assert!((r[4] - 99.9).abs() < 1e-9);
    assert_eq!(percentile_rows(999_999).len(), 5);
    let r = percentile_rows(1_100_000);
    assert_eq!(r.len(), 6);
    assert!((r[5] - 99.99).abs() < 1e-9);
    let r = percentile_rows(10_000_000);
    assert!((r[6] - 99.999).abs() < 1e-9);
    assert_eq!(percentile_rows(u64::MAX).len(), 4 + 15);
}

#[test]
fn jlbh_variation_reproduces_its_published_table() {
    // JLBH's corrected hiccup summary: runs 2 and 3 (run 1 is skipped) and its % Variation.
    let round2 = |x: f64| (x * 100.0).round() / 100.0;
    assert_eq!(round2(Variation::Jlbh.of(&[41.98, 46.08])), 6.11);
    assert_eq!(round2(Variation::Jlbh.of(&[1032.19, 999.42])), 2.14);
    // QuickFIX at 50,000/s, p90 row: runs 2 and 3 of 12845.06 / 29884.42 / 3604.48.
    assert_eq!(round2(Variation::Jlbh.of(&[29884.42, 3604.48])), 82.94);
    assert_eq!(Variation::Jlbh.of(&[999.42, 999.42]), 0.0);
    // The relative range: 100 * 4.1 / 44.03.
    assert_eq!(round2(Variation::RelativeRange.of(&[41.98, 46.08])), 9.31);
    assert_eq!(Variation::Jlbh.of(&[5.0]), 0.0);
    assert_eq!(Variation::Jlbh.of(&[0.0, 0.0]), 0.0);
    assert_eq!(variation_runs(3), 1..3);
    assert_eq!(variation_runs(2), 0..2);
    assert_eq!(variation_runs(1), 0..1);
}

#[test]
fn summary_table_rows_use_the_smallest_run_and_skip_run_one_for_variation() {
    // Three runs; values in ns. Run 1 is wild (ignored by the variation), runs 2 and 3 differ.
    let mut runs = [new_histogram(), new_histogram(), new_histogram()];
    for v in 1..=200_000u64 {
        runs[0].record(v * 10).unwrap();
    }
    for v in 1..=20_000u64 {
        runs[1].record(v).unwrap();
        runs[2].record(v * 2).unwrap();
    }
    let refs: Vec<_> = runs.iter().collect();
    let t = SummaryTable::of("x", &refs, Variation::Jlbh);
    // The smallest run has 20,000 samples: 50, 90, 99, 99.7 and worst; no 99.9 row.
    let ps: Vec<Option<f64>> = t.rows.iter().map(|r| r.percentile).collect();
    assert_eq!(
        ps,
        vec![Some(50.0), Some(90.0), Some(99.0), Some(99.7), None]
    );
    let p50 = t.row(Some(50.0)).unwrap();
    assert_eq!(p50.values_ns.len(), 3);
    assert_eq!(p50.values_ns[1], 10_007); // 10,000 at 3 significant digits (highest equivalent)
    assert_eq!(p50.values_ns[2], 20_015);
    let expected = Variation::Jlbh.of(&[10_007.0, 20_015.0]);
    assert!((p50.variation_pct - expected).abs() < 1e-9);
    let worst = t.row(None).unwrap();
    assert_eq!(worst.values_ns[0], runs[0].max());
}
