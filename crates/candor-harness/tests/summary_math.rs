//! Summary math: percentile rows by sample count, the % variation formulas (checked against
//! JLBH's published table), the summary table built from per-run histograms, and its ratios to
//! run 1 with confidence intervals and verdicts (synthetic runs with known answers).

use candor_core::hist::{new_histogram, Histo};
use candor_harness::summary::{percentile_rows, variation_runs};
use candor_harness::{
    comparison_text, ratio_cell, Method, RunComparison, SummaryTable, Variation, Verdict,
};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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

/// `n` samples of 0.6 ms plus an exponential of mean 0.4 ms (p50 ≈ 0.88 ms, p90 ≈ 1.52 ms), plus
/// `shift_ns`, from `rng`.
fn run(rng: &mut Xoshiro256PlusPlus, n: usize, shift_ns: u64) -> Histo {
    let mut h = new_histogram();
    for _ in 0..n {
        let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        h.record((600_000.0 - 400_000.0 * u.ln()) as u64 + shift_ns)
            .unwrap();
    }
    h
}

fn verdicts(c: &RunComparison) -> Vec<Verdict> {
    c.rows.iter().map(|r| r.verdict).collect()
}

#[test]
fn runs_from_one_distribution_read_same_against_run_one_at_most_about_5_percent_of_the_time() {
    // 200 seeded trials of two runs of 20,000 samples from one distribution. A 95% interval
    // excludes 1 in at most 5% of trials (the order-statistic ratio bounds are conservative, so
    // fewer): Binomial(200, 0.05) has mean 10 and sd 3.1, and 20 false alarms per row is 3.2 sd
    // above it, while reading any difference of two samples as a change would alarm nearly
    // every time. Seeded, so deterministic anyway.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut alarms = [0usize; 3];
    for _ in 0..200 {
        let (a, b) = (run(&mut rng, 20_000, 0), run(&mut rng, 20_000, 0));
        let t = SummaryTable::of("x", &[&a, &b], Variation::Jlbh);
        assert_eq!(t.comparisons.len(), 1);
        let c = &t.comparisons[0];
        assert_eq!(c.method, Method::OrderStatistics);
        // Rows 50, 90, 99, 99.7 (20,000 > 10,000 samples) and worst.
        for (j, row) in c.rows[..3].iter().enumerate() {
            if row.verdict != Verdict::Same {
                alarms[j] += 1;
            }
        }
        // 99.7 needs ~33,000 samples and the worst has no interval.
        assert_eq!(c.rows[3].verdict, Verdict::NotEnoughSamples);
        assert_eq!(c.rows[4].verdict, Verdict::NotEnoughSamples);
    }
    assert!(
        alarms.iter().all(|&n| n <= 20),
        "false alarms {alarms:?} of 200"
    );
}

#[test]
fn runs_of_one_session_never_read_slower_or_faster_against_run_one() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let base = run(&mut rng, 20_000, 1_000_000);
    let same = run(&mut rng, 20_000, 1_000_000);
    let slower = run(&mut rng, 20_000, 2_000_000);
    let faster = run(&mut rng, 20_000, 0);
    let t = SummaryTable::of("x", &[&base, &same, &slower, &faster], Variation::Jlbh);
    let c = &t.comparisons;
    assert_eq!(
        c.iter().map(|c| c.candidate.as_str()).collect::<Vec<_>>(),
        ["run2", "run3", "run4"]
    );
    assert!(c.iter().all(|c| c.baseline == "run1"));
    use Verdict::*;
    let tail = [NotEnoughSamples, NotEnoughSamples];
    assert_eq!(verdicts(&c[0])[..3], [Same, Same, Same]);
    // Runs of a session repeat the same code: a difference between two of them is run-to-run
    // variation that one run against one cannot tell from a change (issue 23).
    assert_eq!(verdicts(&c[1])[..3], [NotEnoughRuns; 3]);
    assert_eq!(verdicts(&c[2])[..3], [NotEnoughRuns; 3]);
    assert!(c.iter().all(|c| verdicts(c)[3..] == tail));
    // p50 ≈ 1.88 ms -> 2.88 ms: ratio ≈ 1.53, inside its interval; the worst row has a ratio
    // but no interval.
    let r = &c[1].rows[0];
    let ratio = r.ratio.unwrap();
    assert!((1.45..1.6).contains(&ratio), "{r:?}");
    assert!(r.ci_low.unwrap() < ratio && ratio < r.ci_high.unwrap());
    assert_eq!(c[1].rows[4].percentile, 100.0);
    assert!(c[1].rows[4].ratio.is_some() && c[1].rows[4].ci_low.is_none());
    // The text marks significant changes in capitals, column by run.
    let text = comparison_text(&t);
    let p50 = text.lines().find(|l| l.starts_with("50:")).unwrap();
    let cells: Vec<&str> = p50.split("  ").filter(|c| !c.trim().is_empty()).collect();
    assert!(cells[1].trim().ends_with(" same"), "{p50}");
    assert!(cells[2].trim().ends_with(" not enough runs"), "{p50}");
    assert!(cells[3].trim().ends_with(" not enough runs"), "{p50}");
    assert!(
        !text.contains("SLOWER") && !text.contains("FASTER"),
        "{text}"
    );
    let worst = text.lines().find(|l| l.starts_with("worst:")).unwrap();
    assert!(worst.contains("(no interval)"), "{worst}");
    assert!(
        text.starts_with("Ratio to run1 with 95% confidence interval (order statistics"),
        "{text}"
    );
    // The JSON rows are those of `candor compare --json`.
    let json = serde_json::to_value(&t).unwrap();
    let row = &json["comparisons"][1]["rows"][0];
    assert_eq!(json["comparisons"][1]["candidate"], "run3");
    assert_eq!(json["comparisons"][1]["method"], "order_statistics");
    assert_eq!(row["percentile"], 50.0);
    assert_eq!(row["verdict"], "not enough runs");
    assert_eq!(row["rule"], "no_noise_floor");
    assert!(row["ci_low"].as_f64().unwrap() > 1.0);
}

#[test]
fn one_run_has_nothing_to_compare_and_small_runs_do_not_support_a_verdict() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
    let a = run(&mut rng, 150, 0);
    let t = SummaryTable::of("x", &[&a], Variation::Jlbh);
    assert!(t.comparisons.is_empty());
    assert_eq!(comparison_text(&t), "");
    // 150 samples: fewer than the ~200 even p50 needs; the ratio is still given.
    let b = run(&mut rng, 150, 1_000_000);
    let t = SummaryTable::of("x", &[&a, &b], Variation::Jlbh);
    let r = &t.comparisons[0].rows[0];
    assert_eq!(r.verdict, Verdict::NotEnoughSamples);
    assert!(r.ratio.unwrap() > 1.0);
    assert!(ratio_cell(r).ends_with("not enough samples"));
    // An empty run: no ratio at all.
    let empty = new_histogram();
    let t = SummaryTable::of("x", &[&empty, &b], Variation::Jlbh);
    assert!(t.comparisons[0]
        .rows
        .iter()
        .all(|r| r.ratio.is_none() && r.verdict == Verdict::NotEnoughSamples));
}
