//! What `candor sweep` says: each step's line as it ends, and the table of response time
//! against offered load with the saturated steps and the objectives missed.

use candor_analysis::sweep_results::{SweepResults, SweepStep};
use candor_core::units::{format_ns, format_rate};
use std::fmt::Write as _;

/// The line of a step just measured: throughput and response time, and whether it saturated.
pub fn step_line(step: &SweepStep) -> String {
    let m = &step.results.main;
    format!(
        "  {:>9}: throughput {:>9}, response time p50 {} p99 {} max {}{}",
        format_rate(step.offered_per_s),
        format_rate(
            candor_analysis::saturation::throughput(&step.results).unwrap_or(m.rate.achieved_per_s)
        ),
        format_ns(m.response_time.at(50.0).unwrap_or(0) as f64),
        format_ns(m.response_time.at(99.0).unwrap_or(0) as f64),
        format_ns(m.response_time.max_ns as f64),
        if step.saturation.is_some() {
            "  SATURATED"
        } else {
            ""
        }
    ) + &crate::sweep_llm::LlmStep::of(step.offered_per_s, &step.results)
        .map_or(String::new(), |s| s.suffix())
}

/// The sweep's report: the table, then a line for each saturated step.
pub fn render(sweep: &SweepResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "candor sweep of {}: response time against offered load\n",
        sweep.target
    );
    out.push_str(&sweep.table());
    for s in &sweep.steps {
        if let Some(v) = &s.saturation {
            let _ = writeln!(out, "  at {}: {v}", format_rate(s.offered_per_s));
        }
    }
    out.push_str(&crate::sweep_llm::table(&crate::sweep_llm::llm_steps(
        sweep,
    )));
    out
}

/// The line naming the steps whose objectives were missed, if any were.
pub fn missed_line(sweep: &SweepResults) -> Option<String> {
    let missed: Vec<String> = sweep
        .steps
        .iter()
        .filter(|s| s.slo.iter().any(|v| !v.pass))
        .map(|s| format_rate(s.offered_per_s))
        .collect();
    (!missed.is_empty()).then(|| {
        format!(
            "  SLO missed at {} (expected of a sweep's top steps; the exit code stays 0: \
             `candor capacity --slo ...` answers whether a rate meets them)",
            missed.join(", ")
        )
    })
}
