//! `candor compare`: runs side by side by percentile, with the change against the first run and
//! the `% Variation` across runs, then each run's ratio to the first with a 95% confidence
//! interval, a verdict and its rule (`--json` writes those; `--fail-if-slower` gates CI on them).

use candor_analysis::compare_ci;
use candor_analysis::repeats::Policy;
use candor_report::compare_gate::{
    fail_if_slower, measure_named, parse_noise, parse_percentile, parse_threshold, percentiles_with,
};
use candor_report::comparison::{
    compare_confidence, compare_text, confidence_text, ConfidenceReport,
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

pub fn main(args: CompareArgs) -> anyhow::Result<i32> {
    let runs = load_labelled(&args.files, &args.label, &Selection::default())?;
    // Opened before anything is printed; with `--json -` the text goes to stderr.
    let mut json_out = Destination::open_opt("--json", args.json.as_ref())?;
    if let Some(out) = &json_out {
        out.refuse_inputs(&args.files)?;
    }
    crate::stdio::give_stdout_to(json_out.as_ref());
    let measure = measure_named(&args.measure);
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
    let (code, lines) = fail_if_slower(&comparisons, p);
    for line in lines {
        eprintln!("{line}");
    }
    Ok(code)
}
