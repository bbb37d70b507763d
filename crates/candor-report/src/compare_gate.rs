//! `candor compare`'s settings and gate: its percentages and percentiles as typed, the measure
//! by name, and what `--fail-if-slower` makes of each comparison's verdict (an exit code and the
//! lines that say why).

use crate::comparison::{Comparison, ComparisonMeasure};
use candor_analysis::compare_ci::{self, Verdict};
use candor_core::stream_measures::StreamMeasure;

/// A percentage such as `2%`, `2` or `0.5%`, 0 or more, as a fraction (a noise floor may
/// exceed 100%: one run twice as slow as the next).
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let x: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage (write 2% or 2)"))?;
    if !(x.is_finite() && x >= 0.0) {
        return Err(format!("{s:?} is out of range: a percentage of 0 or more"));
    }
    Ok(x / 100.0)
}

/// The largest `--noise`: one run eleven times as slow as the next is no machine's run-to-run
/// variation but a typo (`1e300` would widen every interval to a number of 300 digits).
pub const MAX_NOISE: f64 = 10.0;

/// `--noise`: a percentage from 0 to 1000%.
pub fn parse_noise(s: &str) -> Result<f64, String> {
    let x = parse_pct(s)?;
    if x > MAX_NOISE {
        return Err(format!(
            "{s:?} is out of range: a noise floor from 0 up to {}%",
            MAX_NOISE * 100.0
        ));
    }
    Ok(x)
}

/// `--threshold`: a percentage below 100 (a ratio cannot be within 100% of 1 and still change).
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    let x = parse_pct(s)?;
    if x >= 1.0 {
        return Err(format!(
            "{s:?} is out of range: a threshold from 0 up to 100%"
        ));
    }
    Ok(x)
}

/// A percentile for `--fail-if-slower`: `99`, `p99`, `99.9`; 0 < P < 100 (the max has no
/// confidence interval, so it cannot be significantly slower).
pub fn parse_percentile(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_prefix('p').unwrap_or(t);
    let p: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a percentile (write 99 or p99)"))?;
    if !(p > 0.0 && p < 100.0) {
        return Err(format!(
            "{s:?} is out of range: a percentile between 0 and 100, exclusive (the max has no \
             confidence interval)"
        ));
    }
    Ok(p)
}

/// The compared percentiles, with `extra` added in order when it is not one of them.
pub fn percentiles_with(extra: Option<f64>) -> Vec<f64> {
    let mut ps = compare_ci::RATIO_PERCENTILES.to_vec();
    if let Some(p) = extra {
        if !ps.iter().any(|&x| (x - p).abs() < 1e-9) {
            ps.push(p);
            ps.sort_by(|a, b| a.total_cmp(b));
        }
    }
    ps
}

/// The measure `--measure` names (`response` when the name is none of the others).
pub fn measure_named(name: &str) -> ComparisonMeasure {
    match name {
        "service" => ComparisonMeasure::ServiceTime,
        "send-lag" => ComparisonMeasure::SendLag,
        "first-byte" => ComparisonMeasure::FirstByte,
        "ttft" => ComparisonMeasure::Stream(StreamMeasure::Ttft),
        "ttft-sent" => ComparisonMeasure::Stream(StreamMeasure::TtftService),
        "itl" => ComparisonMeasure::Stream(StreamMeasure::Itl),
        "tpot" => ComparisonMeasure::Stream(StreamMeasure::Tpot),
        "first-event" => ComparisonMeasure::Stream(StreamMeasure::FirstEvent),
        "event-gap" => ComparisonMeasure::Stream(StreamMeasure::EventGap),
        _ => ComparisonMeasure::ResponseTime,
    }
}

/// `--fail-if-slower p`: the exit code (3 when a run is slower at `p` than its baseline, else 0)
/// and the lines for stderr: why it fails, or why a verdict that cannot tell does not fail it.
pub fn fail_if_slower(comparisons: &[Comparison], p: f64) -> (i32, Vec<String>) {
    let mut code = 0;
    let mut lines = Vec::new();
    for c in comparisons {
        let Some(row) = c.rows.iter().find(|r| (r.percentile - p).abs() < 1e-9) else {
            continue;
        };
        let label = format!("p{}", candor_analysis::omission::trim_pct(p));
        let rule = row.rule.describe(c.threshold);
        match row.verdict {
            v if v.is_slower(row.ratio) => {
                lines.push(format!(
                    "candor: {label} of {} is slower than {} (ratio {:.3}, 95% CI {:.3} .. {:.3}; {}: {rule}): exit code 3 (--fail-if-slower)",
                    c.candidate,
                    c.baseline,
                    row.ratio.unwrap_or(f64::NAN),
                    row.ci_low.unwrap_or(0.0),
                    row.ci_high.unwrap_or(f64::INFINITY),
                    v.label(),
                ));
                code = 3;
            }
            Verdict::NotEnoughSamples | Verdict::NotEnoughRuns | Verdict::Inconclusive => {
                let why = if rule == row.verdict.label() {
                    String::new()
                } else {
                    format!(" ({rule})")
                };
                lines.push(format!(
                    "candor: warning: {label} of {} against {}: {}{why}; --fail-if-slower does not fail on it",
                    c.candidate,
                    c.baseline,
                    row.verdict.label()
                ))
            }
            _ => {}
        }
    }
    (code, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_analysis::repeats::{pct, DEFAULT_THRESHOLD};

    #[test]
    fn fail_if_slower_takes_a_percentile_below_100() {
        assert_eq!(parse_percentile("99"), Ok(99.0));
        assert_eq!(parse_percentile("p99.9"), Ok(99.9));
        assert!(parse_percentile("100")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_percentile("p0").is_err());
        assert!(parse_percentile("max")
            .unwrap_err()
            .contains("not a percentile"));
        assert_eq!(percentiles_with(Some(99.0)), compare_ci::RATIO_PERCENTILES);
        assert_eq!(
            percentiles_with(Some(95.0)),
            [50.0, 90.0, 95.0, 99.0, 99.9, 100.0]
        );
    }

    #[test]
    fn percentages_read_with_or_without_the_sign() {
        assert_eq!(parse_pct("2%"), Ok(0.02));
        assert_eq!(parse_pct("0.5"), Ok(0.005));
        assert_eq!(parse_pct(&pct(DEFAULT_THRESHOLD)), Ok(DEFAULT_THRESHOLD));
        assert_eq!(parse_pct("250%"), Ok(2.5));
        assert!(parse_threshold("100%")
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(parse_threshold("5"), Ok(0.05));
        assert!(parse_pct("-1").unwrap_err().contains("out of range"));
        assert!(parse_pct("lots").unwrap_err().contains("not a percentage"));
    }

    #[test]
    fn a_noise_floor_is_bounded_so_no_interval_prints_hundreds_of_digits() {
        assert_eq!(parse_noise("250%"), Ok(2.5));
        assert_eq!(parse_noise("1000%"), Ok(10.0));
        for bad in ["1e300", "1001%", "1e6"] {
            assert!(
                parse_noise(bad).unwrap_err().contains("out of range"),
                "{bad}"
            );
        }
    }
}
