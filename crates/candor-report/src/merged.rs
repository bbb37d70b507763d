//! What `candor merge` makes of its inputs: a shard set merged as one run (with its shard
//! report), or runs merged exactly (their mismatches noted), or kept as repeats beside their
//! union; analysed and judged as a single run is; and the lines that tell what was written.

use crate::exact_merge::{self, MergeError};
use crate::shards::{self, ShardReport};
use candor_analysis::late::count_noun;
use candor_analysis::slo::SloVerdict;
use candor_analysis::SloSet;
use candor_core::results::RunResults;
use candor_core::units::{format_count, format_ns, format_rate};
use std::fmt::Write as _;

/// Why the inputs could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergedError {
    #[error(
        "--as-repeats: the inputs are shards of one schedule, which together are one run, \
         not repeats; merge them without --as-repeats"
    )]
    ShardsAsRepeats,
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// The merged result and what its report needs.
pub struct Merged {
    pub results: RunResults,
    /// Inputs that disagree in ways a plain merge keeps (each also a warning in the results).
    pub mismatches: Vec<String>,
    /// A shard set's completeness, offsets and laggards.
    pub shard_report: Option<ShardReport>,
    /// The objectives' verdicts on the merged result.
    pub slo: Vec<SloVerdict>,
    /// How many inputs were merged.
    pub inputs: usize,
}

/// Merges `runs` (shards of one schedule, or any runs, kept as repeats when `as_repeats`), and
/// gives the result the analysis a single run has, computed from the merged histograms (never
/// from the inputs' own verdicts), `slo_set`'s verdicts included.
pub fn merge_inputs(
    runs: &[(String, RunResults)],
    as_repeats: bool,
    slo_set: &SloSet,
) -> Result<Merged, MergedError> {
    let is_shards = runs.iter().any(|(_, r)| shards::is_shard(r));
    if as_repeats && is_shards {
        return Err(MergedError::ShardsAsRepeats);
    }
    let (mut merged, shard_report, mismatches) = if is_shards {
        let m = shards::merge_shards(runs)?;
        (m.merged, Some(m.report), Vec::new())
    } else {
        let results: Vec<_> = runs.iter().map(|(_, r)| r.clone()).collect();
        let mut merged = if as_repeats {
            exact_merge::merge_as_repeats(&results)?
        } else {
            exact_merge::merge(&results)?
        };
        // Shard sets have their own, stricter consistency report; plain merges get these.
        let mismatches = exact_merge::mismatches(runs);
        merged.warnings.splice(0..0, mismatches.clone());
        (merged, None, mismatches)
    };
    let mut analysis = candor_analysis::analyze(&merged);
    analysis.slo = slo_set.evaluate(&merged);
    let slo = analysis.slo.clone();
    merged.main.analysis = Some(analysis);
    slo_set.judge_stages(&mut merged);
    Ok(Merged {
        results: merged,
        mismatches,
        shard_report,
        slo,
        inputs: runs.len(),
    })
}

/// The lines for stderr once the merged file is written to `where_to`, and the exit code of its
/// objectives (`failed_code` when one failed).
pub fn summary(merged: &Merged, where_to: &str, failed_code: i32) -> (String, i32) {
    let r = &merged.results;
    let s = &r.main.response_time;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "wrote {}: {}, {}, p50 {} p99 {} p99.9 {} max {}",
        where_to,
        count_noun(merged.inputs as u64, "run", "runs"),
        count_noun(s.count, "response", "responses"),
        format_ns(s.at(50.0).unwrap_or(0) as f64),
        format_ns(s.at(99.0).unwrap_or(0) as f64),
        format_ns(s.at(99.9).unwrap_or(0) as f64),
        format_ns(s.max_ns as f64),
    );
    if !r.repeats.is_empty() {
        let _ = writeln!(
            out,
            "{} kept apart as repeats beside their union: candor compare judges across them",
            count_noun(r.repeats.len() as u64, "run", "runs")
        );
    }
    if let Some(report) = &merged.shard_report {
        out.push_str(&report.render());
        let rate = &r.main.rate;
        let _ = writeln!(
            out,
            "merged: {} intended, {} completed, {} failed; rate target {}, achieved {}",
            format_count(r.main.requests.intended),
            format_count(r.main.requests.completed),
            format_count(r.main.requests.failed),
            rate.target_per_s
                .map_or_else(|| "closed loop".into(), format_rate),
            format_rate(rate.achieved_per_s),
        );
    }
    let mut code = 0;
    let slo = &merged.slo;
    if !slo.is_empty() {
        out.push_str(&candor_analysis::slo::render(slo));
        if !candor_analysis::slo::all_pass(slo) {
            code = failed_code;
            let _ = writeln!(out, "SLO: FAILED on the merged result (exit code {code})");
        } else {
            let _ = writeln!(out, "SLO: all objectives met on the merged result");
        }
        out.push_str(&candor_analysis::slo::render_stages(&r.workload.stages));
    }
    (out, code)
}
