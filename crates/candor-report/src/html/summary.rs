//! The page's tables of numbers: the service-level objectives met or missed, and the summary
//! (caveats and verdicts, each measure's percentiles, the requests' books, connection faults).

use super::format::{esc, format_ns, summary_row, PALETTE};
use super::options::Slo;
use crate::books::Books;
use candor_analysis::late::count_noun;
use candor_core::hist::value_at;
use candor_core::results::RunResults;
use candor_core::units::{format_count, format_rate};
use candor_core::{Recorder, Summary};

/// Each objective against each run's response time; empty without objectives.
pub(crate) fn slo_section(
    runs: &[(String, RunResults)],
    decoded: &[Recorder],
    slos: &[Slo],
) -> String {
    let mut body = String::new();
    if slos.is_empty() {
        return body;
    }
    body.push_str("<section><h2>Service-level objectives</h2><table class=\"grid\"><thead><tr><th>Objective</th>");
    for (l, _) in runs {
        body.push_str(&format!("<th>{}</th>", esc(l)));
    }
    body.push_str("</tr></thead><tbody>");
    for s in slos {
        body.push_str(&format!(
            "<tr><th>{}: p{} ≤ {}</th>",
            esc(&s.label),
            format!("{}", s.percentile).trim_end_matches(".0"),
            format_ns(s.threshold_ns as f64)
        ));
        for rec in decoded {
            let v = value_at(&rec.response, s.percentile);
            let ok = v <= s.threshold_ns;
            body.push_str(&format!(
                "<td class=\"{}\">{} {}</td>",
                if ok { "pass" } else { "fail" },
                format_ns(v as f64),
                if ok { "✓ met" } else { "✗ missed" }
            ));
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></section>");
    body
}

/// The summary section: caveats, one table per measure, the requests and connection faults.
pub(crate) fn summary_section(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
    body.push_str("<section><h2>Summary</h2>");
    let notes = caveats(runs);
    if !notes.is_empty() {
        body.push_str("<div class=\"caveats\"><h3>Sample support and verdicts</h3><ul>");
        for (i, note) in notes {
            body.push_str(&format!(
                "<li><span class=\"swatch\" style=\"background:{}\"></span><b>{}</b>: {}</li>",
                PALETTE[i % PALETTE.len()],
                esc(&runs[i].0),
                esc(&note)
            ));
        }
        body.push_str("</ul><p class=\"note\">Grey cells below are such percentiles: shown, but not to be relied on.</p></div>");
    }
    body.push_str(&measure_tables(runs));
    body.push_str(&requests_table(runs));
    body.push_str(&connection_faults(runs));
    body.push_str("</section>");
    body
}

/// One table per measure (response time, service time, send lag, first byte when recorded).
fn measure_tables(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
    type Pick = fn(&RunResults) -> Option<&Summary>;
    let measures: [(&str, Pick); 4] = [
        ("Response time", |r| Some(&r.main.response_time)),
        ("Service time", |r| Some(&r.main.service_time)),
        ("Send lag", |r| Some(&r.main.send_lag)),
        // Only pages of runs that recorded first bytes show the table.
        ("First byte", |r| r.main.first_byte.as_ref()),
    ];
    for (title, pick) in measures {
        if runs.iter().all(|(_, r)| pick(r).is_none()) {
            continue;
        }
        body.push_str(&format!(
            "<h3>{title}</h3><table class=\"grid num\"><thead><tr><th>Run</th><th>count</th><th>p50</th><th>p90</th>\
             <th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>mean</th><th>stdev</th></tr></thead><tbody>"
        ));
        for (i, (label, r)) in runs.iter().enumerate() {
            let Some(s) = pick(r) else {
                continue;
            };
            body.push_str(&format!(
                "<tr><th><span class=\"swatch\" style=\"background:{}\"></span>{}</th><td>{}</td>{}</tr>",
                PALETTE[i % PALETTE.len()],
                esc(label),
                format_count(s.count),
                summary_row(s)
            ));
        }
        body.push_str("</tbody></table>");
    }
    body
}

/// The requests' books of each run, as far as its input knows them.
fn requests_table(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
    body.push_str(
        "<h3>Requests</h3><table class=\"grid num\"><thead><tr><th>Run</th><th>intended</th><th>completed</th>\
         <th>failed</th><th>unfinished at end</th><th>failures by class</th><th>status classes</th>\
         <th>status codes</th><th>target rate</th><th>achieved</th></tr></thead><tbody>",
    );
    for (i, (label, r)) in runs.iter().enumerate() {
        let q = &r.main.requests;
        let e = &q.errors;
        let st = &q.status;
        let unknown = || "<span class=\"unknown\">unknown</span>".to_string();
        let books = Books::of(r);
        let full = books == Books::Full;
        let known = |v: String| if full { esc(&v) } else { unknown() };
        let target_rate = match (books, r.main.rate.target_per_s) {
            (_, Some(t)) => format_rate(t),
            (Books::LatencyOnly, None) => unknown(),
            _ => "closed loop".into(),
        };
        body.push_str(&format!(
            "<tr><th><span class=\"swatch\" style=\"background:{}\"></span>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            PALETTE[i % PALETTE.len()],
            esc(label),
            known(format_count(q.intended)),
            if books == Books::LatencyOnly {
                count_noun(r.main.response_time.count, "latency", "latencies")
            } else {
                format_count(q.completed)
            },
            if books == Books::LatencyOnly { unknown() } else { format_count(q.failed) },
            known(format_count(q.in_flight_at_end)),
            known(super::workload::nonzero_classes(&e.by_class())),
            known(super::workload::nonzero_classes(&st.by_class())),
            // Older files and raw TCP runs have no codes; gRPC runs add their status names.
            match (r.main.status_codes.is_empty(), r.main.grpc_status.is_empty()) {
                (true, _) => "—".to_string(),
                (false, true) => {
                    esc(&candor_core::results::status_codes_line(&r.main.status_codes))
                }
                (false, false) => format!(
                    "{}<br>gRPC: {}",
                    esc(&candor_core::results::status_codes_line(&r.main.status_codes)),
                    esc(&candor_core::results::grpc_status_line(&r.main.grpc_status))
                ),
            },
            target_rate,
            format_rate(r.main.rate.achieved_per_s),
        ));
    }
    body.push_str("</tbody></table>");
    body
}

/// A line per run with connection faults, most frequent cause first.
fn connection_faults(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
    for (label, r) in runs {
        let faults = &r.main.connection_faults;
        if faults.is_empty() {
            continue;
        }
        let mut causes: Vec<(&String, &u64)> = faults.iter().collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let causes: Vec<String> = causes
            .iter()
            .map(|(cause, n)| format!("{} ×{}", esc(cause), format_count(**n)))
            .collect();
        body.push_str(&format!(
            "<p class=\"warn\">Connection faults of {}: {}</p>",
            esc(label),
            causes.join("; ")
        ));
    }
    body
}

/// The caveats and verdicts of the text report (candor_analysis::run), per run: the reported
/// percentiles its sample count cannot support, the stationarity verdict and the warnings.
fn caveats(runs: &[(String, RunResults)]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        let n = r.main.response_time.count;
        if n == 0 {
            out.push((i, "no samples: nothing to report".to_string()));
            continue;
        }
        let a = candor_analysis::analyze(r);
        let short: Vec<String> = a
            .confidence
            .iter()
            .filter(|c| c.percentile < 100.0 && !c.supported)
            .map(|c| {
                format!(
                    "p{} ({} of ~{})",
                    candor_analysis::omission::trim_pct(c.percentile),
                    format_count(c.samples),
                    format_count(c.samples_needed)
                )
            })
            .collect();
        if !short.is_empty() {
            out.push((i, support_note(n, &short)));
        }
        if let Some(st) = &a.stationarity {
            out.push((i, candor_analysis::trend::summary(st)));
        }
        for v in a.verdicts() {
            out.push((i, format!("verdict: {v}")));
        }
    }
    out
}

/// The caveat line of a run whose sample count falls short of some reported percentiles.
fn support_note(n: u64, short: &[String]) -> String {
    let support = candor_analysis::confidence::support_phrase(n);
    format!(
        "{} {support}; not enough samples for {}: those values rest on a handful of requests",
        count_noun(n, "sample", "samples"),
        short.join(", ")
    )
}
