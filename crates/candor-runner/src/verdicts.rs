//! The verdicts of one run in plain words: why not to trust, or how to read, its measured window
//! (a rate not kept, send lag, a late generator, failed checks, failing connections, unfinished
//! requests), written from the engine's numbers and the run's settings.

use candor_core::results::{PhaseResults, RequestCounts};
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use candor_load::RunPlan;

/// The first warning of an interrupted run: the results cover only the part that ran.
pub fn interrupted_warning(after_ns: u64, config: &RunPlan) -> String {
    if after_ns == 0 {
        return "interrupted before the first intended send (while the connections opened or a --start-at \
                was awaited): nothing was due, so these results hold no measurement"
            .into();
    }
    format!(
        "interrupted after {:.1} s of {:.1} s planned{}: these results cover only what ran before the stop",
        after_ns as f64 / 1e9,
        (config.warmup_ns + config.duration_ns) as f64 / 1e9,
        if config.warmup_ns > 0 { " (warm-up included)" } else { "" }
    )
}

/// Send lag above this at p99 means requests commonly left late.
const LAG_WARN_NS: u64 = candor_core::thresholds::SEND_LAG_WARN_NS;

/// Responses that failed their checks, named as such: they were answered (the achieved rate counts
/// them and their latencies are recorded), so a shortfall of completed requests is the checks',
/// not the target's capacity.
fn failed_checks_warning(config: &RunPlan, r: &RequestCounts) -> Option<String> {
    if r.errors.check == 0 {
        return None;
    }
    let w = &config.workload;
    let mut which = Vec::new();
    if w.checks.body.is_some() {
        which.push("--check-body");
    }
    if !w.checks.headers.is_empty() {
        which.push("--check-header");
    }
    if w.lines.iter().any(|l| l.check_body.is_some()) {
        which.push("the request lines' \"check_body\"");
    }
    let which = if which.is_empty() {
        "the response checks".to_string()
    } else {
        which.join(", ")
    };
    Some(format!(
        "{} of {} responses failed {which} (class check): they were answered, so they count in the \
         achieved rate and their latencies are recorded, but their content did not match",
        format_count(r.errors.check),
        format_count(r.responses())
    ))
}

/// Connections that failed, with the dominant cause named: a server that refuses, resets or
/// breaks the protocol on every connection must read as that, never as a silent reconnect storm.
fn connection_faults_warning(main: &PhaseResults) -> Option<String> {
    let total: u64 = main.connection_faults.values().sum();
    let (cause, n) = main
        .connection_faults
        .iter()
        .max_by_key(|&(cause, n)| (*n, std::cmp::Reverse(cause.clone())))?;
    Some(format!(
        "connections failed {} times ({} opened); the most common cause: {cause} ({}); a connection that \
         keeps failing is retried after a back-off (1 ms doubling up to 1 s, reset by an answer), and the \
         wait is in send lag",
        format_count(total),
        format_count(main.requests.connections_opened),
        format_count(*n)
    ))
}

/// Plain-words reasons not to trust (or to read carefully) the measured window.
pub fn verdicts(config: &RunPlan, main: &PhaseResults) -> Vec<String> {
    let mut w = Vec::new();
    let r = &main.requests;
    match config.shard_rate_per_s() {
        None => w.push(
            "closed loop (-R max): each connection waited for its previous response before sending, so the \
             latency here is service time only and is subject to coordinated omission; it says nothing about \
             the response time users would see at any particular rate"
                .into(),
        ),
        Some(target) => {
            let achieved = main.rate.achieved_per_s;
            let unanswered_failed = r.failed - r.errors.status - r.errors.check - r.errors.grpc;
            let unanswered = r.intended.saturating_sub(r.responses());
            let faults = !main.connection_faults.is_empty();
            // With nothing due (a stop before the start), there was nothing to keep up with.
            let behind = r.intended > 0 && candor_core::thresholds::fell_behind(achieved, target);
            if behind
                && (faults || unanswered_failed.saturating_mul(2) >= unanswered)
                && unanswered_failed + u64::from(faults) > 0
            {
                // Most of the shortfall failed without an answer, or waited on connections that
                // kept failing: that is the news, not the target's capacity.
                let class = r.errors.dominant().map_or("", |(c, _)| c.name());
                let failed = if unanswered_failed > 0 {
                    format!(
                        "{} requests failed without a response (mostly class {class})",
                        format_count(unanswered_failed)
                    )
                } else {
                    "no request failed without a response".to_string()
                };
                let held = if faults && r.queued_unsent > 0 {
                    format!(
                        " and {} waited for a connection that kept failing and were never sent",
                        format_count(r.queued_unsent)
                    )
                } else {
                    String::new()
                };
                w.push(format!(
                    "achieved rate {} is below the target {}: {failed}{held}; the shortfall is those failures \
                     (see the errors line{}), not the target's capacity",
                    format_rate(achieved),
                    format_rate(target),
                    if faults { " and the connection faults" } else { "" }
                ));
            } else if behind {
                w.push(format!(
                    "achieved rate {} is below the target {}: the target (or candor) could not keep up; response \
                     times include the resulting queueing, and {} requests were still unfinished at the end",
                    format_rate(achieved),
                    format_rate(target),
                    format_count(r.in_flight_at_end)
                ));
            }
            let lag_p99 = Summary::at(&main.send_lag, 99.0).unwrap_or(0);
            if lag_p99 > LAG_WARN_NS {
                w.push(format!(
                    "send lag p99 is {}: requests often waited to be sent, for a free connection (add connections \
                     if the server can take them) or because the generator fell behind (see generator_late)",
                    format_ns(lag_p99 as f64)
                ));
            }
            if let Some(effect) =
                candor_analysis::late::generator_late_effect(r.generator_late, r.intended)
            {
                w.push(effect.warning());
            }
        }
    }
    if let Some(text) = failed_checks_warning(config, r) {
        w.push(text);
    }
    if let Some(text) = connection_faults_warning(main) {
        w.push(text);
    }
    if let Some(plan) = config.shape.replay_plan() {
        if plan.malformed_count > 0 {
            let first = plan
                .malformed
                .first()
                .map(|m| format!(" (the first at line {}: {})", m.line, m.reason))
                .unwrap_or_default();
            w.push(format!(
                "--lenient skipped {} malformed lines of {}{first}",
                format_count(plan.malformed_count),
                plan.path.display()
            ));
        }
    }
    if r.failed > 0 {
        w.push(format!(
            "{} of {} requests failed (see errors by class)",
            format_count(r.failed),
            format_count(r.intended)
        ));
    }
    if r.in_flight_at_end > 0 {
        w.push(format!(
            "{} requests were unfinished when the run ended ({} sent and unanswered, {} never sent); their ages \
             are reported as unfinished_age",
            format_count(r.in_flight_at_end),
            format_count(r.sent_unanswered),
            format_count(r.queued_unsent)
        ));
    }
    if r.clamped_values > 0 {
        w.push(format!(
            "{} values exceeded one hour and were recorded as one hour",
            format_count(r.clamped_values)
        ));
    }
    w
}
