//! `candor compare`: runs side by side by percentile, with the change against the first run and
//! the `% Variation` across runs.

use crate::cmd::report::load_inputs;
use candor_report::compare::{compare_text, Measure};
use candor_report::input::Selection;
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
          value_parser = PossibleValuesParser::new(["response", "service", "send-lag"]))]
    pub measure: String,
    /// Labels for the inputs, one per input in order, comma-separated (`--label before,after`)
    /// or repeated (default: file names).
    #[arg(long, value_name = "LABEL,...", value_delimiter = ',')]
    pub label: Vec<String>,
}

pub fn main(args: CompareArgs) -> anyhow::Result<i32> {
    let runs = load_inputs(&args.files, &args.label, &Selection::default())?;
    let measure = match args.measure.as_str() {
        "service" => Measure::ServiceTime,
        "send-lag" => Measure::SendLag,
        _ => Measure::ResponseTime,
    };
    print!("{}", compare_text(&runs, measure)?);
    Ok(0)
}
