//! How a run with `--precision` or `--abort-on-fail` ended: the bounds that let an objective be
//! judged lost before the end, and the `stop` record written into the results.

use candor_analysis::stopping::{max_intended, AbortVerdict, PrecisionTarget, RunBounds};
use candor_core::results::{RunResults, StopDetail, StopReason};
use candor_load::{RunOutcome, RunPlan};

/// What ended a run early, and after how many measured intervals.
pub enum Decision {
    Precision { at_s: f64 },
    Abort(AbortVerdict),
}

/// What bounds the measured window of `config`, for deciding that an objective can no longer pass.
pub fn run_bounds(config: &RunPlan) -> RunBounds {
    let target = config.shard_rate_per_s();
    let max_intended = target.map(|r| {
        let most = max_intended(
            r,
            config.duration_ns as f64 / 1e9,
            config.threads as u64,
            matches!(
                config.shape.arrival(),
                candor_load::schedule::ArrivalKind::Poisson { .. }
            ),
        );
        config.shape.count().map_or(most, |n| n.min(most))
    });
    RunBounds {
        target_per_s: target,
        max_intended,
    }
}

/// Records how the run ended in `results` (`stop`, and a first warning for an abort); true
/// when the run was aborted. `watched` counts the measured intervals seen, `decided` what
/// decided the run and after how many of them.
pub fn record_stop(
    precision: &[PrecisionTarget],
    watched: u64,
    decided: Option<&(u64, Decision)>,
    outcome: &RunOutcome,
    config: &RunPlan,
    results: &mut RunResults,
) -> bool {
    let planned_s = (config.warmup_ns + config.duration_ns) as f64 / 1e9;
    let at_s = outcome
        .ended_early
        .map_or(planned_s, |(_, after)| after as f64 / 1e9);
    let rows: Vec<_> = match results.main.histograms.decode() {
        Ok(rec) => precision.iter().map(|t| t.row(&rec.response)).collect(),
        Err(_) => Vec::new(),
    };
    let mut detail = StopDetail {
        at_s,
        intervals: watched,
        precision: rows,
        objective: None,
        detail: String::new(),
    };
    let mut aborted = false;
    match (results.stop_reason, decided) {
        (Some(StopReason::Precision), Some((n, Decision::Precision { at_s: decided_s }))) => {
            detail.intervals = *n;
            detail.detail = format!(
                "every --precision target was reached after {n} measured intervals (decided at {decided_s:.1} s); \
                 the schedule ended at {at_s:.1} s of {planned_s:.1} s planned and the outstanding requests drained"
            );
        }
        (Some(StopReason::Abort), Some((n, Decision::Abort(v)))) => {
            aborted = true;
            detail.intervals = *n;
            detail.objective = Some(v.objective.clone());
            detail.detail = format!(
                "objective {} can no longer pass (decided at {:.1} s, after {n} measured intervals): {}",
                v.objective, v.at_s, v.reason
            );
            results.warnings.insert(
                0,
                format!(
                    "aborted at {at_s:.1} s of {planned_s:.1} s planned (--abort-on-fail: objective {} could no \
                     longer pass); these results cover only what was due before the abort",
                    v.objective
                ),
            );
        }
        (Some(StopReason::Interrupt), _) => {
            detail.detail = "interrupted by a signal before the run was decided".into();
        }
        (Some(StopReason::Failure), _) => {
            detail.detail =
                "a load thread failed and the run was ended there (the warnings name it)".into();
        }
        _ if !precision.is_empty() => {
            detail.detail = format!(
                "the planned duration ({:.1} s measured) ended before every --precision target was reached",
                config.duration_ns as f64 / 1e9
            );
        }
        _ => {
            detail.detail = "no objective failed for good before the planned end".into();
        }
    }
    results.stop = Some(detail);
    aborted
}
