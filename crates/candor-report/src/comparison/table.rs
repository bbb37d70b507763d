//! The comparison table: each run's percentiles side by side, its change against the first, and
//! the `% Variation` column of repeated runs (the formulas in the module docs of `comparison`).

use super::measure::{histogram, pct_label, CompareError, ComparisonMeasure};
use candor_core::results::RunResults;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Histo;

/// Percentiles compared; 100 is the max.
pub const COMPARE_PERCENTILES: [f64; 7] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// The spread formula described in the module docs; `None` for fewer than two values or a zero
/// mid-range.
pub fn variation_pct(values: &[u64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let max = *values.iter().max()? as f64;
    let min = *values.iter().min()? as f64;
    let mid = (max + min) / 2.0;
    if mid == 0.0 {
        return None;
    }
    Some(100.0 * (max - min) / mid)
}

/// JLBH's own `% Variation` (runs 2..n, its denominator as printed), for comparing with JLBH output.
pub fn jlbh_variation_pct(values: &[u64]) -> Option<f64> {
    let rest = values.get(1..)?;
    let max = *rest.iter().max()? as f64;
    let min = *rest.iter().min()? as f64;
    let d = max + min / 2.0;
    if d == 0.0 {
        return None;
    }
    Some(100.0 * (max - min) / d)
}

/// A percentile is shown only when the run has enough samples for it to mean something: at least
/// one sample above it (the max row is always shown).
fn meaningful(p: f64, count: u64) -> bool {
    // The epsilon absorbs float error: 1000 samples do resolve p99.9.
    p >= 100.0 || (count as f64) * (1.0 - p / 100.0) >= 1.0 - 1e-9
}

/// The comparison table as text, one column per run, for one measure.
pub fn compare_text(
    runs: &[(String, RunResults)],
    measure: ComparisonMeasure,
) -> Result<String, CompareError> {
    let hists: Vec<Histo> = runs
        .iter()
        .map(|(l, r)| histogram(r, measure, l))
        .collect::<Result<_, _>>()?;
    let mut out = String::new();
    out.push_str(&format!(
        "Comparison of {} ({} runs; changes are against run 1)\n\n",
        measure.label(),
        runs.len()
    ));
    for (i, (label, r)) in runs.iter().enumerate() {
        let target = r
            .main
            .rate
            .target_per_s
            .map_or("closed loop".to_string(), |t| {
                format!("target {}", format_rate(t))
            });
        // A log holds latencies only: its rate target and failures are unknown, not zero.
        let books = match crate::books::Books::of(r) {
            crate::books::Books::LatencyOnly => {
                "offered rate and failures unknown (a log holds latencies only)".to_string()
            }
            _ => format!(
                "achieved {} ({target}), {} failed",
                format_rate(r.main.rate.achieved_per_s),
                format_count(r.main.requests.failed)
            ),
        };
        let repeats = if r.repeats.len() > 1 {
            format!(" ({} repeats)", r.repeats.len())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  [{}] {label}: {} {}{repeats}, {}, {books}\n",
            i + 1,
            r.kind,
            r.mode,
            candor_analysis::late::count_noun(hists[i].len(), "sample", "samples"),
        ));
    }
    out.push('\n');
    let min_count = hists.iter().map(|h| h.len()).min().unwrap_or(0);
    let width = 20usize;
    let mut header = format!("{:<8}", "");
    for i in 0..runs.len() {
        header.push_str(&format!("{:>width$}", format!("[{}]", i + 1)));
    }
    if runs.len() > 1 {
        header.push_str(&format!("{:>13}", "% Variation"));
    }
    out.push_str(header.trim_end());
    out.push('\n');
    for &p in COMPARE_PERCENTILES.iter() {
        if !meaningful(p, min_count) {
            continue;
        }
        let values: Vec<u64> = hists
            .iter()
            .map(|h| candor_core::hist::value_at(h, p))
            .collect();
        let mut row = format!("{:<8}", pct_label(p));
        for (i, &v) in values.iter().enumerate() {
            let cell = if i == 0 || values[0] == 0 {
                format_ns(v as f64)
            } else {
                let change = 100.0 * (v as f64 - values[0] as f64) / values[0] as f64;
                format!("{} ({:+.1}%)", format_ns(v as f64), change)
            };
            row.push_str(&format!("{cell:>width$}"));
        }
        if runs.len() > 1 {
            let var = variation_pct(&values).map_or("-".to_string(), |v| format!("{v:.2}"));
            row.push_str(&format!("{var:>13}"));
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\n(percentiles with fewer than one sample above them in the smallest run are left out; \
         % Variation = 100*(max-min)/((max+min)/2) across runs)\n",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variation_formulas() {
        assert_eq!(variation_pct(&[100, 100, 100]), Some(0.0));
        assert_eq!(variation_pct(&[90, 110]), Some(20.0));
        assert_eq!(variation_pct(&[5]), None);
        // JLBH: runs 2.. only, denominator max + min/2 = 110 + 45.
        let j = jlbh_variation_pct(&[1000, 90, 110]).unwrap();
        assert!((j - 100.0 * 20.0 / 155.0).abs() < 1e-12);
    }

    #[test]
    fn meaningful_percentiles_depend_on_sample_count() {
        assert!(meaningful(99.9, 1000));
        assert!(!meaningful(99.99, 1000));
        assert!(meaningful(100.0, 1));
    }
}
