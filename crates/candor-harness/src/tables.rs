//! The summary tables across a session's runs (a row per percentile, a column per run, the
//! variation) and each run's comparison with the first, as `candor compare` makes it.

use crate::summary::{percentile_rows, variation_runs};
use candor_analysis::compare_ci::{self, Method, RatioRow, RunSamples, Verdict};
use candor_analysis::repeats::Policy;
use candor_core::hist::{value_at, Histo};

/// One row of a summary table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryRow {
    /// The percentile, or `None` for the "worst" row.
    pub percentile: Option<f64>,
    /// One value per run, ns.
    pub values_ns: Vec<u64>,
    /// % variation over the runs chosen by [`variation_runs`], with the configured formula.
    pub variation_pct: f64,
}

/// One run against the first, percentile by percentile: the ratio run / run 1 with its 95%
/// confidence interval and verdict, by the method of `candor compare`
/// ([`candor_analysis::compare_ci`]); the same shape as an element of its `--json` comparisons.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunComparison {
    /// `run1`.
    pub baseline: String,
    /// `run2`, `run3`, ...
    pub candidate: String,
    /// A harness run is one histogram, not a series of intervals, so this is always
    /// order statistics (a bootstrap needs blocks to draw).
    pub method: Method,
    /// One per row of the table, in its order; the worst row is percentile 100.
    pub rows: Vec<RatioRow>,
}

/// A percentile-by-run table for one measure, as JLBH prints after all runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryTable {
    pub name: String,
    pub rows: Vec<SummaryRow>,
    /// Each run after the first against the first, at the table's percentiles.
    pub comparisons: Vec<RunComparison>,
}

impl SummaryTable {
    /// Builds the table from one histogram per run. Rows are those the smallest run's sample
    /// count supports ([`percentile_rows`]), then "worst".
    pub fn of(name: &str, per_run: &[&Histo], variation: crate::Variation) -> SummaryTable {
        let min_count = per_run.iter().map(|h| h.len()).min().unwrap_or(0);
        let mut percentiles: Vec<Option<f64>> =
            percentile_rows(min_count).into_iter().map(Some).collect();
        percentiles.push(None);
        let range = variation_runs(per_run.len());
        let rows: Vec<SummaryRow> = percentiles
            .into_iter()
            .map(|p| {
                let values_ns: Vec<u64> = per_run
                    .iter()
                    .map(|h| value_at(h, p.unwrap_or(100.0)))
                    .collect();
                let chosen: Vec<f64> = values_ns[range.clone()].iter().map(|&v| v as f64).collect();
                SummaryRow {
                    percentile: p,
                    variation_pct: variation.of(&chosen),
                    values_ns,
                }
            })
            .collect();
        let percentiles: Vec<f64> = rows.iter().map(|r| r.percentile.unwrap_or(100.0)).collect();
        SummaryTable {
            name: name.to_string(),
            rows,
            comparisons: compare_with_first(per_run, &percentiles),
        }
    }

    /// The row for percentile `p` (`None` for worst), if shown.
    pub fn row(&self, p: Option<f64>) -> Option<&SummaryRow> {
        self.rows.iter().find(|r| match (r.percentile, p) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (None, None) => true,
            _ => false,
        })
    }
}

/// Each run after the first against the first at `percentiles` (ascending, 100 = worst).
fn compare_with_first(per_run: &[&Histo], percentiles: &[f64]) -> Vec<RunComparison> {
    // The run is its only block: fewer than MIN_BOOTSTRAP_INTERVALS, so compare_ci takes
    // order-statistic bounds, which is all one histogram per run can support.
    let samples = |h: &Histo| RunSamples {
        total: h.clone(),
        intervals: vec![h.clone()],
        measured: usize::from(!h.is_empty()),
    };
    let Some((first, rest)) = per_run.split_first() else {
        return Vec::new();
    };
    let base = samples(first);
    rest.iter()
        .enumerate()
        .map(|(i, h)| {
            // Runs of one session repeat the same code: one run against one cannot tell a change
            // from run-to-run variation, so no noise floor is assumed and a difference beyond
            // the one-run interval reads "not enough runs", never faster or slower.
            let c = compare_ci::compare(
                &base,
                &samples(h),
                percentiles,
                compare_ci::RESAMPLES,
                compare_ci::SEED,
                Policy::default(),
            );
            RunComparison {
                baseline: "run1".into(),
                candidate: format!("run{}", i + 2),
                method: c.method,
                rows: c.rows,
            }
        })
        .collect()
}

/// A comparison cell of the text: ratio, interval, verdict; significant changes in capitals so
/// they stand out, as in `candor compare`.
pub fn ratio_cell(row: &RatioRow) -> String {
    let Some(ratio) = row.ratio else {
        return row.verdict.label().to_string();
    };
    let ci = match (row.ci_low, row.ci_high) {
        (None, None) => String::new(),
        (l, h) => format!(
            " [{}, {}]",
            l.map_or("0".to_string(), |v| format!("{v:.3}")),
            h.map_or("inf".to_string(), |v| format!("{v:.3}"))
        ),
    };
    if row.percentile >= 100.0 {
        return format!("{ratio:.3} (no interval)");
    }
    let verdict = match row.verdict {
        Verdict::Slower | Verdict::Faster | Verdict::ChangedBeyondNoise => {
            row.verdict.label().to_uppercase()
        }
        Verdict::Same
        | Verdict::Inconclusive
        | Verdict::NotEnoughRuns
        | Verdict::NotEnoughSamples => row.verdict.label().to_string(),
    };
    format!("{ratio:.3}{ci} {verdict}")
}
