//! `candor merge`: combines runs exactly (histograms added, counts summed, intervals aligned by
//! absolute time) into one results file of kind "merged". Shards of one schedule
//! (`candor run --shard I/N`) are recognised and reported on: completeness and consistency of
//! the set, each shard's start offset, and the shards that fell behind.

use candor_report::export::Destination;
use candor_report::input::{expand_directories, load_for_merge};
use candor_report::json::JsonExporter;
use candor_report::merged::{merge_inputs, summary};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Results to merge (candor JSON or interval logs). A directory stands for every *.json in it;
    /// a pod log captured with `kubectl logs` (from `candor k8s`) is read for the JSON it carries.
    #[arg(value_name = "FILE|DIR", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Where to write the merged JSON ("-" = stdout).
    #[arg(short = 'o', long, value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Service-level objectives on the merged response time, like 'p99<10ms,max<1s,errors<0.1%'
    /// (repeatable): a PASS/FAIL line per objective; exit code 3 if any fails. Load-profile stages
    /// are judged too (shown and recorded; the exit code is the whole merge's).
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// Keep the runs apart as repeats of one test (beside their union), so `candor compare`
    /// compares across them; an input made by `run --repeat` gives its repeats.
    #[arg(long)]
    pub as_repeats: bool,
}

pub fn main(args: MergeArgs) -> anyhow::Result<i32> {
    let slo_set = candor_analysis::SloSet::parse_all(&args.slo)?;
    let files = expand_directories(&args.files)?;
    // Opened and checked before anything is read: a merged file left among the inputs would be
    // counted in the merge that replaces it.
    let mut out = Destination::open("-o", &args.output)?;
    out.refuse_inputs(&files)?;
    let runs = load_for_merge(&files)?;
    let merged = merge_inputs(&runs, args.as_repeats, &slo_set)?;
    for m in &merged.mismatches {
        eprintln!("warning: {m}");
    }
    out.export(&JsonExporter, &merged.results)?;
    let (text, code) = summary(&merged, &out.name(), crate::cmd::EXIT_VERDICT_FAILED);
    eprint!("{text}");
    Ok(code)
}
