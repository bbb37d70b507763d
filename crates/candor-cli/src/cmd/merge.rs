//! `candor merge`: combines runs exactly (histograms added, counts summed, intervals aligned by
//! absolute time) into one results file of kind "merged".

use crate::cmd::report::load_inputs;
use anyhow::Context;
use candor_report::input::Selection;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Results to merge (candor JSON or interval logs).
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Where to write the merged JSON.
    #[arg(short = 'o', long, value_name = "FILE", required = true)]
    pub output: PathBuf,
}

pub fn main(args: MergeArgs) -> anyhow::Result<i32> {
    let runs = load_inputs(&args.files, &[], &Selection::default())?;
    let results: Vec<_> = runs.into_iter().map(|(_, r)| r).collect();
    let merged = candor_report::merge::merge(&results)?;
    std::fs::write(&args.output, merged.to_json_pretty())
        .with_context(|| format!("writing {}", args.output.display()))?;
    let s = &merged.main.response_time;
    eprintln!(
        "wrote {}: {} runs, {} responses, p50 {} p99 {} p99.9 {} max {}",
        args.output.display(),
        results.len(),
        candor_core::units::format_count(s.count),
        candor_core::units::format_ns(s.at(50.0).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.at(99.0).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.at(99.9).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.max_ns as f64),
    );
    Ok(0)
}
