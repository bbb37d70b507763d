//! `candor merge`: combines runs exactly (histograms added, counts summed, intervals aligned by
//! absolute time) into one results file of kind "merged". Shards of one schedule
//! (`candor run --shard I/N`) are recognised and reported on: completeness and consistency of
//! the set, each shard's start offset, and the shards that fell behind.

use candor_analysis::late::count_noun;
use candor_report::export::Destination;
use candor_report::input::{expand_directories, load_for_merge};
use candor_report::json::JsonExporter;
use candor_report::shards;
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
    let is_shards = runs.iter().any(|(_, r)| shards::is_shard(r));
    if args.as_repeats && is_shards {
        anyhow::bail!(
            "--as-repeats: the inputs are shards of one schedule, which together are one run, \
             not repeats; merge them without --as-repeats"
        );
    }
    let (mut merged, shard_report) = if is_shards {
        let m = shards::merge_shards(&runs)?;
        (m.merged, Some(m.report))
    } else {
        let results: Vec<_> = runs.iter().map(|(_, r)| r.clone()).collect();
        let mut merged = if args.as_repeats {
            candor_report::exact_merge::merge_as_repeats(&results)?
        } else {
            candor_report::exact_merge::merge(&results)?
        };
        // Shard sets have their own, stricter consistency report; plain merges get these.
        let mismatches = candor_report::exact_merge::mismatches(&runs);
        for m in &mismatches {
            eprintln!("warning: {m}");
        }
        merged.warnings.splice(0..0, mismatches);
        (merged, None)
    };
    // The merged result gets the analysis a single run has, computed from the merged histograms
    // (never from the inputs' own verdicts), SLO verdicts included.
    let mut analysis = candor_analysis::analyze(&merged);
    analysis.slo = slo_set.evaluate(&merged);
    let slo = analysis.slo.clone();
    merged.main.analysis = Some(analysis);
    slo_set.judge_stages(&mut merged);
    out.export(&JsonExporter, &merged)?;
    let where_to = out.name();
    let s = &merged.main.response_time;
    eprintln!(
        "wrote {}: {}, {}, p50 {} p99 {} p99.9 {} max {}",
        where_to,
        count_noun(runs.len() as u64, "run", "runs"),
        count_noun(s.count, "response", "responses"),
        candor_core::units::format_ns(s.at(50.0).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.at(99.0).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.at(99.9).unwrap_or(0) as f64),
        candor_core::units::format_ns(s.max_ns as f64),
    );
    if !merged.repeats.is_empty() {
        eprintln!(
            "{} kept apart as repeats beside their union: candor compare judges across them",
            count_noun(merged.repeats.len() as u64, "run", "runs")
        );
    }
    if let Some(report) = shard_report {
        eprint!("{}", report.render());
        let rate = &merged.main.rate;
        eprintln!(
            "merged: {} intended, {} completed, {} failed; rate target {}, achieved {}",
            candor_core::units::format_count(merged.main.requests.intended),
            candor_core::units::format_count(merged.main.requests.completed),
            candor_core::units::format_count(merged.main.requests.failed),
            rate.target_per_s
                .map_or_else(|| "closed loop".into(), candor_core::units::format_rate),
            candor_core::units::format_rate(rate.achieved_per_s),
        );
    }
    let mut code = 0;
    if !slo.is_empty() {
        eprint!("{}", candor_analysis::slo::render(&slo));
        if !candor_analysis::slo::all_pass(&slo) {
            code = crate::cmd::EXIT_VERDICT_FAILED;
            eprintln!("SLO: FAILED on the merged result (exit code {code})");
        } else {
            eprintln!("SLO: all objectives met on the merged result");
        }
        eprint!(
            "{}",
            candor_analysis::slo::render_stages(&merged.workload.stages)
        );
    }
    Ok(code)
}
