//! The ratio of each run to the first with a 95% confidence interval, a verdict and the rule
//! that decided it, as text and as `--json`; and the warnings about runs that are not alike.

use super::measure::{histogram, of_recorder, pct_label, CompareError, ComparisonMeasure};
use candor_analysis::compare_ci::{self, Method, RatioRow, RunSamples, Verdict};
use candor_analysis::repeats::{pct, Policy, Rule};
use candor_core::results::{Kind, RunResults};
use candor_core::units::format_count;
use candor_core::Histo;
use serde::Serialize;

/// One candidate against the baseline (an element of `--json`'s `comparisons`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Label of the first input.
    pub baseline: String,
    /// Label of this input.
    pub candidate: String,
    /// How the intervals were derived.
    pub method: Method,
    /// Runs compared in the baseline and in the candidate: their repeats, or 1.
    pub runs: [usize; 2],
    /// A ratio within this fraction of 1 reads `same` (`--threshold`).
    pub threshold: f64,
    /// One run a side: the noise floor the interval was widened by (`--noise`), a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// Measured intervals with samples in the baseline and in the candidate.
    pub intervals: [usize; 2],
    /// Warnings about the comparison itself (unlike runs, a fallback).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub rows: Vec<RatioRow>,
    /// Samples in the baseline and in the candidate (across runs: in the smallest run of each),
    /// for the text's sample-support notes.
    #[serde(skip)]
    pub samples: [u64; 2],
}

/// The `--json` document of `candor compare`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfidenceReport {
    pub comparisons: Vec<Comparison>,
}

/// The measure's histogram of each repeat of `r`, when it holds at least two.
pub fn repeat_histograms(
    r: &RunResults,
    m: ComparisonMeasure,
    label: &str,
) -> Result<Option<Vec<Histo>>, CompareError> {
    if r.repeats.len() < 2 {
        return Ok(None);
    }
    r.repeats
        .iter()
        .enumerate()
        .map(|(i, rep)| histogram(rep, m, &format!("{label}: repeat {}", i + 1)))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The measure's histograms of the measured window and of its measured intervals holding
/// samples, grouped into at most [`compare_ci::MAX_BLOCKS`] consecutive blocks as they are read.
pub fn run_samples(
    r: &RunResults,
    m: ComparisonMeasure,
    label: &str,
) -> Result<RunSamples, CompareError> {
    let total = histogram(r, m, label)?;
    let stats = |i: &candor_core::results::Interval| match m {
        ComparisonMeasure::ResponseTime => i.response_time.count,
        ComparisonMeasure::ServiceTime => i.service_time.count,
        ComparisonMeasure::SendLag => i.send_lag.count,
        ComparisonMeasure::FirstByte => i.first_byte.map_or(0, |s| s.count),
        ComparisonMeasure::Stream(sm) => i
            .stream
            .as_ref()
            .and_then(|s| s.stats(sm))
            .map_or(0, |s| s.count),
    };
    let measured: Vec<_> = r
        .intervals
        .iter()
        .filter(|i| !i.warmup && stats(i) > 0)
        .collect();
    let mut blocks = compare_ci::Coalescer::new(measured.len(), compare_ci::MAX_BLOCKS);
    for i in &measured {
        let bad = |cause| CompareError::Histogram {
            label: format!("{label}: interval at {}s", i.start_s),
            cause,
        };
        blocks.push(match (m, &i.stream) {
            (ComparisonMeasure::Stream(sm), Some(s)) => s.histograms.decode(sm).map_err(bad)?,
            _ => of_recorder(i.histograms.decode().map_err(bad)?, m),
        });
    }
    Ok(RunSamples {
        total,
        intervals: blocks.finish(),
        measured: measured.len(),
    })
}

/// Warnings for comparing runs that did not measure the same thing the same way: allowed (a
/// change of target or mode may be the point), but said.
pub fn unlike_warnings(base: &(String, RunResults), cand: &(String, RunResults)) -> Vec<String> {
    let mut w = Vec::new();
    let (bl, b) = base;
    let (cl, c) = cand;
    // A log holds latencies only: its "target" is its file name and its mode unknown, so there
    // is nothing to tell apart.
    if b.kind == Kind::Hlog || c.kind == Kind::Hlog {
        return w;
    }
    if b.target != c.target {
        w.push(format!(
            "{cl} measured {} but {bl} measured {}: the ratios compare different targets",
            c.target, b.target
        ));
    }
    if b.mode != c.mode {
        w.push(format!(
            "{cl} ran {} but {bl} ran {}: latencies from different modes are not alike \
             (a closed loop hides queueing that an open loop counts)",
            c.mode, b.mode
        ));
    }
    w
}

/// A compared run's own warnings (send lag, late sends, drift...), said again: a ratio is no
/// better than the numbers it divides, and the verdict table alone would hide them.
pub fn own_warnings((label, r): &(String, RunResults)) -> Vec<String> {
    r.warnings
        .iter()
        .map(|w| {
            format!("{label} carries a warning of its own, so its numbers may not be trusted: {w}")
        })
        .collect()
}

/// The ratio of each later run to the first at `percentiles` (0..=100, ascending), with 95%
/// intervals: across runs when both hold repeats, else from `resamples` bootstrap resamples seeded
/// with `seed` of one run each, read by `policy`.
pub fn compare_confidence(
    runs: &[(String, RunResults)],
    measure: ComparisonMeasure,
    percentiles: &[f64],
    resamples: usize,
    seed: u64,
    policy: Policy,
) -> Result<Vec<Comparison>, CompareError> {
    let Some((base_run, rest)) = runs.split_first() else {
        return Ok(Vec::new());
    };
    let base = run_samples(&base_run.1, measure, &base_run.0)?;
    let base_reps = repeat_histograms(&base_run.1, measure, &base_run.0)?;
    let mut out = Vec::new();
    for cand_run in rest {
        let cand = run_samples(&cand_run.1, measure, &cand_run.0)?;
        let cand_reps = repeat_histograms(&cand_run.1, measure, &cand_run.0)?;
        let intervals = [
            compare_ci::usable_intervals(&base),
            compare_ci::usable_intervals(&cand),
        ];
        let mut warnings = unlike_warnings(base_run, cand_run);
        warnings.extend(own_warnings(base_run));
        warnings.extend(own_warnings(cand_run));
        let (c, n) = match (&base_reps, &cand_reps) {
            (Some(b), Some(c)) => (
                compare_ci::compare_repeats(b, c, percentiles, policy.threshold),
                [b.len(), c.len()],
            ),
            (b, c) => {
                let n = [
                    b.as_ref().map_or(1, Vec::len),
                    c.as_ref().map_or(1, Vec::len),
                ];
                let c = compare_ci::compare(&base, &cand, percentiles, resamples, seed, policy);
                if n != [1, 1] {
                    warnings.push(format!(
                        "only one side holds repeats ({} runs in {}, {} in {}): the unions are \
                         compared as one run each; compare repeats with repeats",
                        n[0], base_run.0, n[1], cand_run.0
                    ));
                }
                (c, n)
            }
        };
        if c.method == Method::OrderStatistics {
            warnings.push(format!(
                "too few intervals for a bootstrap ({} in {}, {} in {}; it needs {} in each): the \
                 intervals are order-statistic bounds of each run's percentile, which treat \
                 requests as independent and so may be too narrow when latency comes in bursts",
                intervals[0],
                base_run.0,
                intervals[1],
                cand_run.0,
                compare_ci::MIN_BOOTSTRAP_INTERVALS
            ));
        }
        let across = c.method == Method::AcrossRuns;
        // Across runs a percentile needs its samples in every run: the smallest run of each side.
        let smallest =
            |reps: &Option<Vec<Histo>>| reps.as_ref().and_then(|r| r.iter().map(|h| h.len()).min());
        let samples = match (across, smallest(&base_reps), smallest(&cand_reps)) {
            (true, Some(b), Some(c)) => [b, c],
            _ => [base.total.len(), cand.total.len()],
        };
        out.push(Comparison {
            baseline: base_run.0.clone(),
            candidate: cand_run.0.clone(),
            method: c.method,
            runs: n,
            threshold: policy.threshold,
            noise: policy.noise.filter(|_| !across),
            intervals,
            warnings,
            rows: c.rows,
            samples,
        });
    }
    Ok(out)
}

fn ratio_cell(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |r| format!("{r:.3}"))
}

/// The verdict as the text shows it, with the rule that decided it in parentheses: significant
/// changes in capitals so they stand out.
fn verdict_cell(row: &RatioRow, samples: [u64; 2], threshold: f64, per_run: bool) -> String {
    let rule = row.rule.describe(threshold);
    match row.verdict {
        Verdict::Slower => format!("SLOWER ({rule})"),
        Verdict::Faster => format!("FASTER ({rule})"),
        Verdict::ChangedBeyondNoise => {
            let way = if row.ratio.is_some_and(|r| r > 1.0) {
                "higher"
            } else {
                "lower"
            };
            format!("CHANGED beyond noise, {way} ({rule})")
        }
        Verdict::Same | Verdict::Inconclusive | Verdict::NotEnoughRuns => {
            format!("{} ({rule})", row.verdict.label())
        }
        Verdict::NotEnoughSamples if row.rule == Rule::NoRatio => format!("no ratio ({rule})"),
        Verdict::NotEnoughSamples if row.percentile >= 100.0 => {
            "not enough samples (no interval bounds a max)".to_string()
        }
        Verdict::NotEnoughSamples => {
            let need = candor_analysis::confidence::samples_needed(row.percentile / 100.0);
            format!(
                "not enough samples ({} and {} of ~{}{})",
                format_count(samples[0]),
                format_count(samples[1]),
                format_count(need),
                if per_run { " in every run" } else { "" }
            )
        }
    }
}

/// The comparisons as text: one block per candidate, one line per percentile, each verdict with
/// its rule.
pub fn confidence_text(comparisons: &[Comparison], resamples: usize) -> String {
    let mut out = String::new();
    for (i, c) in comparisons.iter().enumerate() {
        let method = match c.method {
            Method::Bootstrap => format!(
                "block bootstrap over {} and {} measured intervals, {} resamples",
                c.intervals[0],
                c.intervals[1],
                format_count(resamples as u64)
            ),
            Method::OrderStatistics => {
                "order statistics (too few intervals for a bootstrap)".into()
            }
            Method::AcrossRuns => format!(
                "across {} and {} runs: Welch's t on the logs of per-run percentiles, the ratio \
                 of their geometric means",
                c.runs[0], c.runs[1]
            ),
        };
        out.push_str(&format!(
            "\n[{}] {} against [1] {}: ratio with 95% confidence interval ({method})\n",
            i + 2,
            c.candidate,
            c.baseline
        ));
        if c.method != Method::AcrossRuns {
            out.push_str(&match c.noise {
                Some(n) => format!(
                    "one run per side: its interval does not cover run-to-run variation, so it is \
                     widened by the noise floor of {} (--noise) and a change reads only \"changed \
                     beyond noise\"\n",
                    pct(n)
                ),
                None => "one run per side cannot separate a change from run-to-run variation: \
                         without --noise (candor calibrate --noise measures it) a change reads \
                         \"not enough runs\"; `candor run --repeat N` on both sides gives verdicts \
                         across runs\n"
                    .to_string(),
            });
        }
        let ci_head = if c.noise.is_some() {
            "95% CI + noise"
        } else {
            "95% CI"
        };
        let ci_cells: Vec<String> = c
            .rows
            .iter()
            .map(|row| match (row.ci_low, row.ci_high) {
                (None, None) => "-".to_string(),
                (l, h) => format!(
                    "{} .. {}",
                    l.map_or("0".to_string(), |v| format!("{v:.3}")),
                    h.map_or("inf".to_string(), |v| format!("{v:.3}"))
                ),
            })
            .collect();
        // The interval column is as wide as its widest cell, and always two spaces from the
        // verdict: a wide interval (0.079 .. 12681.403) must not run into it.
        let ci_width = ci_cells
            .iter()
            .map(|c| c.chars().count())
            .chain([ci_head.chars().count(), 16])
            .max()
            .unwrap_or(16)
            + 2;
        out.push_str(&format!(
            "{:<8}{:>8}  {:<ci_width$}{}\n",
            "", "ratio", ci_head, "verdict (rule)"
        ));
        for (row, ci) in c.rows.iter().zip(&ci_cells) {
            out.push_str(&format!(
                "{:<8}{:>8}  {:<ci_width$}{}\n",
                pct_label(row.percentile),
                ratio_cell(row.ratio),
                ci,
                verdict_cell(row, c.samples, c.threshold, c.method == Method::AcrossRuns)
            ));
        }
        for w in &c.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    if let Some(c) = comparisons.first() {
        out.push_str(&format!(
            "\n(ratio = run / run 1. Rules, in order: too few samples for the percentile -> not \
             enough samples, no interval shown; the interval contains 1 but admits a change beyond \
             {}x either way -> inconclusive; the interval contains 1 -> same; the ratio within \
             {} of 1 (--threshold) -> same; otherwise, with repeats on both sides, SLOWER or \
             FASTER; with one run a side, changed beyond noise when the interval widened by \
             --noise excludes 1, else not enough runs. The method is described in \
             docs/statistics.md)\n",
            candor_analysis::repeats::INCONCLUSIVE_FACTOR,
            pct(c.threshold)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: f64) -> Policy {
        Policy {
            noise: Some(n),
            ..Policy::default()
        }
    }

    #[test]
    fn confidence_rows_and_json_shape() {
        use crate::synthetic::synthetic_run;
        let runs = vec![
            (
                "base".to_string(),
                synthetic_run(1, 12, 2_000, 1_000_000, 0),
            ),
            (
                "slow".to_string(),
                synthetic_run(2, 12, 2_000, 2_000_000, 0),
            ),
        ];
        let c = compare_confidence(
            &runs,
            ComparisonMeasure::ResponseTime,
            &compare_ci::RATIO_PERCENTILES,
            500,
            compare_ci::SEED,
            noise(0.05),
        )
        .unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].method, Method::Bootstrap);
        assert_eq!(c[0].intervals, [12, 12]);
        assert!(c[0].warnings.is_empty(), "{:?}", c[0].warnings);
        // 24,000 samples each: p50, p90, p99 supported and slower; p99.9 and max not.
        let v: Vec<Verdict> = c[0].rows.iter().map(|r| r.verdict).collect();
        assert_eq!(v[..3], [Verdict::ChangedBeyondNoise; 3]);
        assert_eq!((c[0].runs, c[0].noise), ([1, 1], Some(0.05)));
        assert_eq!(v[3..], [Verdict::NotEnoughSamples; 2]);
        let json = serde_json::to_value(ConfidenceReport {
            comparisons: c.clone(),
        })
        .unwrap();
        let row = &json["comparisons"][0]["rows"][2];
        assert_eq!(json["comparisons"][0]["baseline"], "base");
        assert_eq!(json["comparisons"][0]["candidate"], "slow");
        assert_eq!(row["percentile"], 99.0);
        assert_eq!(row["verdict"], "changed beyond noise");
        assert_eq!(row["rule"], "beyond_noise");
        assert_eq!(json["comparisons"][0]["threshold"], 0.02);
        assert_eq!(json["comparisons"][0]["noise"], 0.05);
        assert!(row["ratio"].as_f64().unwrap() > 1.0);
        assert!(row["ci_low"].as_f64().unwrap() > 1.0);
        assert!(row["ci_high"].as_f64().unwrap() >= row["ci_low"].as_f64().unwrap());
        assert!(json["comparisons"][0]["rows"][4]["ci_low"].is_null());
        let t = confidence_text(&c, 500);
        assert!(t.contains("[2] slow against [1] base"), "{t}");
        assert!(
            t.contains("CHANGED beyond noise, higher (beyond noise and above the 2% threshold)")
                && t.contains("not enough samples (24,000 and 24,000 of ~100,000)")
                && t.contains("widened by the noise floor of 5% (--noise)"),
            "{t}"
        );
    }

    #[test]
    fn every_later_run_is_compared_with_the_first() {
        use crate::synthetic::synthetic_run;
        let runs: Vec<(String, RunResults)> =
            [("a", 1_000_000), ("b", 1_000_000), ("c", 3_000_000)]
                .iter()
                .enumerate()
                .map(|(i, (l, base))| {
                    (
                        l.to_string(),
                        synthetic_run(10 + i as u64, 10, 300, *base, 0),
                    )
                })
                .collect();
        let c = compare_confidence(
            &runs,
            ComparisonMeasure::ResponseTime,
            &[50.0],
            200,
            1,
            noise(0.05),
        )
        .unwrap();
        let pairs: Vec<(&str, &str)> = c
            .iter()
            .map(|c| (c.baseline.as_str(), c.candidate.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "b"), ("a", "c")]);
        assert_eq!(c[1].rows[0].verdict, Verdict::ChangedBeyondNoise);
    }

    #[test]
    fn verdict_cells_name_their_rule() {
        let row = |p: f64, ratio: Option<f64>, verdict, rule| RatioRow {
            percentile: p,
            ratio,
            ci_low: None,
            ci_high: None,
            verdict,
            rule,
        };
        let n = [50_000, 50_000];
        let cell = |r: &RatioRow| verdict_cell(r, n, 0.02, false);
        assert_eq!(
            cell(&row(50.0, None, Verdict::NotEnoughSamples, Rule::NoRatio)),
            "no ratio (the first run's value is 0)"
        );
        assert_eq!(
            cell(&row(
                99.9,
                Some(1.0),
                Verdict::NotEnoughSamples,
                Rule::NotEnoughSamples
            )),
            "not enough samples (50,000 and 50,000 of ~100,000)"
        );
        assert_eq!(
            verdict_cell(
                &row(
                    99.9,
                    Some(1.0),
                    Verdict::NotEnoughSamples,
                    Rule::NotEnoughSamples
                ),
                n,
                0.02,
                true
            ),
            "not enough samples (50,000 and 50,000 of ~100,000 in every run)"
        );
        assert_eq!(
            cell(&row(
                100.0,
                Some(1.0),
                Verdict::NotEnoughSamples,
                Rule::NotEnoughSamples
            )),
            "not enough samples (no interval bounds a max)"
        );
        assert_eq!(
            cell(&row(
                50.0,
                Some(1.2),
                Verdict::Slower,
                Rule::SignificantAboveThreshold
            )),
            "SLOWER (significant and above the 2% threshold)"
        );
        assert_eq!(
            cell(&row(50.0, Some(1.01), Verdict::Same, Rule::BelowThreshold)),
            "same (below threshold: the ratio is within 2% of 1)"
        );
        assert_eq!(
            cell(&row(
                50.0,
                Some(0.9),
                Verdict::NotEnoughRuns,
                Rule::NoNoiseFloor
            )),
            "not enough runs (one run per side cannot separate a change from run-to-run \
             variation: give --noise or compare repeats)"
        );
    }

    #[test]
    fn repeats_on_both_sides_are_compared_across_runs() {
        use crate::synthetic::synthetic_run;
        // Three repeats a side; the candidate's typical latency is 1.5x. The unions are the
        // first repeat here: only the repeats enter the across-run comparison.
        let side = |seed: u64, base_ns: u64| {
            let reps: Vec<RunResults> = (0..3)
                .map(|k| synthetic_run(seed + k, 12, 1_000, base_ns + k * 20_000, 0))
                .collect();
            let mut union = reps[0].clone();
            union.repeats = reps;
            union
        };
        let runs = vec![
            ("a".to_string(), side(1, 1_000_000)),
            ("a2".to_string(), side(11, 1_000_000)),
            ("b".to_string(), side(21, 1_500_000)),
        ];
        let c = compare_confidence(
            &runs,
            ComparisonMeasure::ResponseTime,
            &compare_ci::RATIO_PERCENTILES,
            100,
            1,
            noise(0.05),
        )
        .unwrap();
        assert_eq!(c[0].method, Method::AcrossRuns);
        assert_eq!((c[0].runs, c[0].noise), ([3, 3], None));
        assert_eq!(c[0].rows[0].verdict, Verdict::Same, "{:?}", c[0].rows[0]);
        assert_eq!(c[1].rows[0].verdict, Verdict::Slower, "{:?}", c[1].rows[0]);
        let t = confidence_text(&c, 100);
        assert!(t.contains("across 3 and 3 runs: Welch's t"), "{t}");
        assert!(
            t.contains("SLOWER (significant and above the 2% threshold)"),
            "{t}"
        );
        // 12,000 samples a run support p99 but not p99.9: said per run.
        assert!(t.contains("of ~100,000 in every run)"), "{t}");
        assert!(!t.contains("one run per side"), "{t}");
        // A single run against repeats: one run a side, said.
        let mixed = compare_confidence(
            &[
                runs[0].clone(),
                ("one".into(), synthetic_run(5, 12, 1_000, 1_000_000, 0)),
            ],
            ComparisonMeasure::ResponseTime,
            &[50.0],
            100,
            1,
            Policy::default(),
        )
        .unwrap();
        assert_eq!(mixed[0].runs, [3, 1]);
        assert!(mixed[0].warnings[0].starts_with("only one side holds repeats"));
        assert!(confidence_text(&mixed, 100).contains("one run per side cannot separate"));
    }

    #[test]
    fn unlike_runs_and_few_intervals_are_said() {
        use crate::synthetic::synthetic_run;
        let mut other = synthetic_run(2, 5, 400, 1_000_000, 0);
        other.target = "http://10.0.0.1/".into();
        other.mode = candor_core::results::Mode::ClosedLoop;
        let runs = vec![
            ("a".to_string(), synthetic_run(1, 5, 400, 1_000_000, 0)),
            ("b".to_string(), other),
        ];
        let c = compare_confidence(
            &runs,
            ComparisonMeasure::ResponseTime,
            &[50.0, 90.0],
            100,
            1,
            Policy::default(),
        )
        .unwrap();
        assert_eq!(c[0].method, Method::OrderStatistics);
        let w = &c[0].warnings;
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].starts_with("b measured http://10.0.0.1/ but a measured"),
            "{w:?}"
        );
        assert!(
            w[1].contains("b ran closed-loop but a ran open-loop"),
            "{w:?}"
        );
        assert!(
            w[2].starts_with("too few intervals for a bootstrap (5 in a, 5 in b"),
            "{w:?}"
        );
        assert!(confidence_text(&c, 100).contains("order statistics (too few intervals"));
        // Logs name no target or mode: nothing to warn about.
        let mut log = runs[1].clone();
        log.1.kind = Kind::Hlog;
        assert!(unlike_warnings(&runs[0], &log).is_empty());
    }

    #[test]
    fn a_wide_interval_is_inconclusive_in_its_own_column_and_run_warnings_are_said() {
        // The row of issue 36: p90 31.570 with interval 0.079 .. 12681.403.
        let row = RatioRow {
            percentile: 90.0,
            ratio: Some(31.570),
            ci_low: Some(0.079),
            ci_high: Some(12681.403),
            verdict: Verdict::Inconclusive,
            rule: Rule::IntervalTooWide,
        };
        let c = Comparison {
            baseline: "a".into(),
            candidate: "b".into(),
            method: Method::Bootstrap,
            runs: [1, 1],
            threshold: 0.02,
            noise: None,
            intervals: [20, 20],
            warnings: Vec::new(),
            rows: vec![row],
            samples: [10_000, 10_000],
        };
        let t = confidence_text(&[c], 100);
        let line = t.lines().find(|l| l.starts_with("p90")).unwrap();
        assert!(
            line.contains("0.079 .. 12681.403  inconclusive (interval contains 1 but"),
            "{t}"
        );
        // The verdict column starts at the same place on the header line.
        let head = t.lines().find(|l| l.contains("verdict (rule)")).unwrap();
        assert_eq!(head.find("verdict"), line.find("inconclusive"), "{t}");

        use crate::synthetic::synthetic_run;
        let mut late = synthetic_run(2, 12, 1_000, 1_000_000, 0);
        late.warnings = vec!["send lag p99 is 801 ms: requests were sent late".into()];
        let runs = vec![
            ("a".to_string(), synthetic_run(1, 12, 1_000, 1_000_000, 0)),
            ("b".to_string(), late),
        ];
        let c = compare_confidence(
            &runs,
            ComparisonMeasure::ResponseTime,
            &[50.0],
            100,
            1,
            noise(0.05),
        )
        .unwrap();
        assert_eq!(
            c[0].warnings,
            [
                "b carries a warning of its own, so its numbers may not be trusted: send lag p99 \
              is 801 ms: requests were sent late"
            ],
        );
        assert!(confidence_text(&c, 100).contains("warning: b carries a warning of its own"));
    }
}
