//! `candor compare`: runs side by side by percentile, with the change against the first run and
//! the `% Variation` across runs, then each run's ratio to the first with a 95% confidence
//! interval, a verdict and its rule (`--json` writes those; `--fail-if-slower` gates CI on them).

use candor_analysis::compare_ci::{self, Verdict};
use candor_analysis::repeats::Policy;
use candor_core::stream_measures::StreamMeasure;
use candor_report::comparison::{
    compare_confidence, compare_text, confidence_text, ConfidenceReport, Measure,
};
use candor_report::export::Destination;
use candor_report::input::{load_labelled, Selection};
use candor_report::json::JsonExporter;
use clap::builder::PossibleValuesParser;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Results to compare (candor JSON or interval logs); changes are relative to the first.
    #[arg(value_name = "FILE", required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// The measure to compare.
    #[arg(long, value_name = "MEASURE", default_value = "response",
          value_parser = PossibleValuesParser::new(["response", "service", "send-lag", "first-byte",
              "ttft", "ttft-sent", "itl", "tpot", "first-event", "event-gap"]))]
    pub measure: String,
    /// Labels for the inputs, one per input in order, comma-separated (`--label before,after`)
    /// or repeated (default: file names).
    #[arg(long, value_name = "LABEL,...", value_delimiter = ',')]
    pub label: Vec<String>,
    /// Write the ratios, 95% confidence intervals and verdicts as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit with code 3 when percentile P (e.g. 99 or p99) of any run is slower than the first
    /// run's by the verdicts printed: SLOWER across repeats, or "changed beyond noise" upwards
    /// with one run a side (never on noise alone).
    #[arg(long, value_name = "P", value_parser = parse_percentile)]
    pub fail_if_slower: Option<f64>,
    /// A ratio within X% of 1 reads "same" however significant (the practical threshold).
    #[arg(long, value_name = "X%", default_value = "2%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// The run-to-run variation of one run on this machine, e.g. 3% (`candor calibrate --noise
    /// URL` measures it): with one run a side, a change is called only beyond it.
    #[arg(long, value_name = "X%", value_parser = parse_noise)]
    pub noise: Option<f64>,
}

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
const MAX_NOISE: f64 = 10.0;

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

pub fn main(args: CompareArgs) -> anyhow::Result<i32> {
    let runs = load_labelled(&args.files, &args.label, &Selection::default())?;
    // Opened before anything is printed; with `--json -` the text goes to stderr.
    let mut json_out = Destination::open_opt("--json", args.json.as_ref())?;
    if let Some(out) = &json_out {
        out.refuse_inputs(&args.files)?;
    }
    crate::stdio::give_stdout_to(json_out.as_ref());
    let measure = match args.measure.as_str() {
        "service" => Measure::ServiceTime,
        "send-lag" => Measure::SendLag,
        "first-byte" => Measure::FirstByte,
        "ttft" => Measure::Stream(StreamMeasure::Ttft),
        "ttft-sent" => Measure::Stream(StreamMeasure::TtftService),
        "itl" => Measure::Stream(StreamMeasure::Itl),
        "tpot" => Measure::Stream(StreamMeasure::Tpot),
        "first-event" => Measure::Stream(StreamMeasure::FirstEvent),
        "event-gap" => Measure::Stream(StreamMeasure::EventGap),
        _ => Measure::ResponseTime,
    };
    print!("{}", compare_text(&runs, measure)?);
    let percentiles = percentiles_with(args.fail_if_slower);
    let policy = Policy {
        threshold: args.threshold,
        noise: args.noise,
    };
    let comparisons = compare_confidence(
        &runs,
        measure,
        &percentiles,
        compare_ci::RESAMPLES,
        compare_ci::SEED,
        policy,
    )?;
    print!("{}", confidence_text(&comparisons, compare_ci::RESAMPLES));
    // The text has them too, but stdout may go to a file or nowhere when --json is the point.
    for w in comparisons.iter().flat_map(|c| &c.warnings) {
        eprintln!("candor: warning: {w}");
    }
    if let Some(out) = json_out.as_mut() {
        let report = ConfidenceReport {
            comparisons: comparisons.clone(),
        };
        out.export(&JsonExporter, &report)?;
    }
    let Some(p) = args.fail_if_slower else {
        return Ok(0);
    };
    let mut code = 0;
    for c in &comparisons {
        let Some(row) = c.rows.iter().find(|r| (r.percentile - p).abs() < 1e-9) else {
            continue;
        };
        let label = format!("p{}", candor_analysis::omission::trim_pct(p));
        let rule = row.rule.describe(c.threshold);
        match row.verdict {
            v if v.is_slower(row.ratio) => {
                eprintln!(
                    "candor: {label} of {} is slower than {} (ratio {:.3}, 95% CI {:.3} .. {:.3}; {}: {rule}): exit code 3 (--fail-if-slower)",
                    c.candidate,
                    c.baseline,
                    row.ratio.unwrap_or(f64::NAN),
                    row.ci_low.unwrap_or(0.0),
                    row.ci_high.unwrap_or(f64::INFINITY),
                    v.label(),
                );
                code = 3;
            }
            Verdict::NotEnoughSamples | Verdict::NotEnoughRuns | Verdict::Inconclusive => {
                let why = if rule == row.verdict.label() {
                    String::new()
                } else {
                    format!(" ({rule})")
                };
                eprintln!(
                    "candor: warning: {label} of {} against {}: {}{why}; --fail-if-slower does not fail on it",
                    c.candidate,
                    c.baseline,
                    row.verdict.label()
                )
            }
            _ => {}
        }
    }
    Ok(code)
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
