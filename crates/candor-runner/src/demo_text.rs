//! What `candor demo` says: the plan, each measurement as it starts, and the table of the
//! truth beside the closed loop's and candor's numbers, explained.

use crate::demo_runs::{DemoMeasured, DemoPlan, DemoStep};
use candor_core::results::PhaseResults;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use candor_truth::{StallTruth, TRUTH_ROWS};
use std::fmt::Write as _;

/// The opening: what the demo's server at `url` does, and that it is measured twice.
pub fn intro(url: &str, plan: &DemoPlan) -> String {
    let (every_ns, for_ns) = (plan.every_ns, plan.for_ns);
    let mut out = String::new();
    let _ = writeln!(out, "candor demo: what coordinated omission hides\n");
    let _ = writeln!(
        out,
        "A built-in server at {url} answers at once, except that every {} it freezes for {}\n\
         ({:.0}% of the time), like the Go server in the wrk2 example. We measure it twice.\n",
        format_ns(every_ns as f64),
        format_ns(for_ns as f64),
        100.0 * for_ns as f64 / every_ns as f64
    );
    out
}

/// The line that announces measurement `step`.
pub fn step_line(step: DemoStep, plan: &DemoPlan) -> String {
    let (secs, rate) = (plan.duration_ns as f64 / 1e9, plan.rate);
    match step {
        DemoStep::ClosedLoop => format!("1/2  wrk-style closed loop for {secs:.0}s: 10 connections, each sends its next request when the last answer arrives..."),
        DemoStep::OpenLoop => format!(
                "2/2  candor open loop for {secs:.0}s: {} on a fixed schedule over 16 connections, each request timed from when it was due...",
                format_rate(rate)
            ),
    }
}

/// The table of the truth, the closed loop's response time and candor's response and service
/// times, and what it shows.
pub fn results(measured: &DemoMeasured, plan: &DemoPlan) -> String {
    let (every_ns, for_ns) = (plan.every_ns, plan.for_ns);
    let mut out = String::new();
    let (closed_phase, open_res, truth) = (&measured.closed, &measured.open, &measured.truth);

    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "", "truth", "wrk-style", "candor", "candor"
    );
    let _ = writeln!(
        out,
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "", "(predicted)", "closed loop", "response time", "service time"
    );
    for (label, statistic) in TRUTH_ROWS {
        let cell = |s: &Summary| match statistic {
            // The summary's p100, as the demo has always shown it.
            candor_truth::Statistic::Max => format_ns(s.at(100.0).unwrap_or(0) as f64),
            _ => format_ns(statistic.of(s)),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:>12} {:>18} {:>20} {:>16}",
            label,
            format_ns(truth.predicted(statistic)),
            cell(&closed_phase.response_time),
            cell(&open_res.response_time),
            cell(&open_res.service_time)
        );
    }
    let closed_n = closed_phase.requests.completed;
    let _ = writeln!(
        out,
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "requests",
        "",
        format_count(closed_n),
        format_count(open_res.requests.completed),
        ""
    );
    let _ = writeln!(out);
    explain(&mut out, closed_phase, open_res, truth, for_ns, every_ns);
    out
}

fn explain(
    out: &mut String,
    closed: &PhaseResults,
    open: &PhaseResults,
    truth: &StallTruth,
    for_ns: u64,
    every_ns: u64,
) {
    let stalled_pct = 100.0 * truth.stalled_fraction();
    let p90_truth = truth.percentile(90.0) as f64;
    let p90_closed = closed.response_time.at(90.0).unwrap_or(0) as f64;
    let p90_open = open.response_time.at(90.0).unwrap_or(0) as f64;
    let p90_service = open.service_time.at(90.0).unwrap_or(0) as f64;
    let _ = writeln!(out, "What you are looking at:");
    let _ = writeln!(out,
        "- The truth column needs no measurement: {stalled_pct:.0}% of the moments a user could send a request fall in a freeze, and such a\n  request waits for the rest of it (0 to {}). So p90 must be about {}.",
        format_ns(for_ns as f64),
        format_ns(p90_truth)
    );
    let _ = writeln!(out,
        "- The closed loop says p90 = {}. During each freeze its 10 connections each had one request stuck, and it simply\n  stopped sending: it recorded ~10 slow samples per freeze and hundreds of thousands of fast ones in between.\n  The user population it stands for would have sent requests during the freeze too. That is coordinated omission.",
        format_ns(p90_closed)
    );
    let _ = writeln!(out,
        "- candor kept sending on schedule ({} completed, achieved {}), timing each request from when it was due:\n  response time p90 = {}, close to the truth. Its service time (from the actual write, what wrk reports)\n  is p90 = {}: the server was fast whenever it was running; the users still waited.",
        format_count(open.requests.completed),
        format_rate(open.rate.achieved_per_s),
        format_ns(p90_open),
        format_ns(p90_service)
    );
    let _ = writeln!(out,
        "- Try it on your own service: candor run -R <rate> -c <conns> -d 30s <url>. Stalls here: every {}, for {}.",
        format_ns(every_ns as f64),
        format_ns(for_ns as f64)
    );
}
