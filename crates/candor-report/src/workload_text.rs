//! The text report's workload sections: one row per stage of a load profile (window, target and
//! achieved rate, intended/completed/failed, response time, service time and send lag
//! percentiles), one row per request name, and the first failed responses as they came back.

use candor_core::results::PhaseResults;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::workload_results::{FailureExample, WorkloadResults};
use std::fmt::Write as _;

fn at(measure: &candor_core::Summary, q: f64) -> String {
    measure
        .percentiles
        .iter()
        .find(|e| (e.percentile - q).abs() < 1e-9)
        .map_or("-".into(), |e| format_ns(e.value_ns as f64))
}

fn row(out: &mut String, label: &str, p: &PhaseResults) {
    let r = &p.requests;
    let _ = writeln!(
        out,
        "  {label:<28} {:>9} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
        format_count(r.intended),
        format_count(r.completed),
        format_count(r.failed),
        format_rate(p.rate.achieved_per_s),
        at(&p.response_time, 50.0),
        at(&p.response_time, 99.0),
        at(&p.service_time, 99.0),
        at(&p.send_lag, 99.0),
    );
}

const HEAD: &str =
    "intended completed  failed   achieved   resp p50   resp p99   serv p99    lag p99";

/// The sections, or nothing for a run without stages or names.
pub fn render(w: &WorkloadResults) -> String {
    let mut out = String::new();
    if !w.stages.is_empty() {
        let _ = writeln!(
            out,
            "\nstages (a request belongs to the stage of its intended time):"
        );
        let _ = writeln!(out, "  {:<28} {HEAD}", "window / target");
        for s in &w.stages {
            let target = if s.from_per_s == s.to_per_s {
                format_rate(s.from_per_s)
            } else {
                format!("{}..{}", format_rate(s.from_per_s), format_rate(s.to_per_s))
            };
            let end = s.start_s + s.results.duration_s;
            row(
                &mut out,
                &format!("{:.1}-{:.1}s {target}", s.start_s, end),
                &s.results,
            );
        }
    }
    if !w.by_request.is_empty() {
        let _ = writeln!(out, "\nby request name:");
        let _ = writeln!(out, "  {:<28} {HEAD}", "name");
        for (name, p) in &w.by_request {
            let shown: String = name.chars().take(28).collect();
            row(&mut out, &shown, p);
        }
    }
    out
}

/// The first failed responses, once, one line each: name, status, class (and the check that
/// failed) and the body excerpt; nothing when none failed their status or a check.
pub fn render_failure_examples(examples: &[FailureExample]) -> String {
    let mut out = String::new();
    if examples.is_empty() {
        return out;
    }
    let _ = writeln!(out, "  first failed responses:");
    for e in examples {
        let class = match e.check {
            candor_core::workload_results::FailedCheck::Status => e.class.name().to_string(),
            check => format!("{} ({})", e.class.name(), check.name()),
        };
        let body = match &e.excerpt {
            // Quotes inside are escaped, so the excerpt's own end is unambiguous.
            Some(text) => format!("body \"{}\"", text.replace('"', "\\\"")),
            None => "body not captured".to_string(),
        };
        // The whole name, however long: a cut path (`POST /helloworld.Greeter/Sa`) names no
        // method of the service.
        let name = &e.request;
        let _ = writeln!(
            out,
            "    {name:<28} status {:>3}  {class:<14} {body}",
            e.status
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::workload_results::FailedCheck;

    #[test]
    fn failed_responses_get_one_line_each_with_status_class_and_excerpt() {
        assert_eq!(render_failure_examples(&[]), "");
        let shown = render_failure_examples(&[
            FailureExample::new(
                "GET /a".into(),
                0,
                0.01,
                503,
                FailedCheck::Status,
                Some(b"busy\n"),
            ),
            FailureExample::new("b".into(), 1, 0.02, 200, FailedCheck::Body, Some(b"{}")),
            FailureExample::new("c".into(), 2, 0.03, 404, FailedCheck::Status, None),
        ]);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "  first failed responses:");
        assert_eq!(
            lines[1],
            "    GET /a                       status 503  status         body \"busy\\n\""
        );
        assert_eq!(
            lines[2],
            "    b                            status 200  check (body)   body \"{}\""
        );
        assert!(
            lines[3].ends_with("status         body not captured"),
            "{}",
            lines[3]
        );
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn a_long_request_name_is_shown_whole() {
        let shown = render_failure_examples(&[FailureExample::new(
            "POST /helloworld.Greeter/SayHelloAgain".into(),
            0,
            0.01,
            200,
            FailedCheck::Grpc,
            Some(b"INTERNAL: gRPC response ended inside a message (12 bytes missing)"),
        )]);
        let line = shown.lines().nth(1).unwrap();
        assert!(
            line.starts_with("    POST /helloworld.Greeter/SayHelloAgain status 200  grpc"),
            "{line}"
        );
        assert!(
            line.ends_with(
                "body \"INTERNAL: gRPC response ended inside a message (12 bytes missing)\""
            ),
            "{line}"
        );
    }
}
