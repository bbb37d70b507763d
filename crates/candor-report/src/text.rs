//! The terminal report of a run: the headline table of response time, service time and send
//! lag side by side, the accounting, and the warnings, in the order a reader needs them.

use crate::books::Books;
use candor_analysis::late::count_noun;
use candor_core::hist::{Statistic, SUMMARY_ROWS};
use candor_core::results::{
    FailureClass, PacingMargin, PacingResults, PhaseResults, PoolResults, RequestCounts, RunResults,
};
use candor_core::table::{Column, TextTable};
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use std::fmt::Write as _;

/// The share of the schedule answered: responses over intended requests. (The ratio of the
/// rates would say the same for a window of many requests, but a rate so low that the window holds
/// one request, sent at its start, would read as millions of percent.)
fn achieved_share(r: &candor_core::results::RequestCounts) -> String {
    if r.intended == 0 {
        return "no request was due".into();
    }
    format!(
        "{:.1}% of {} intended",
        100.0 * r.responses() as f64 / r.intended as f64,
        candor_core::units::format_count(r.intended)
    )
}

/// Renders the full text report of `results`.
pub fn render(results: &RunResults) -> String {
    let mut out = String::new();
    let closed = results.mode.is_closed_loop();
    let cfg = &results.config;
    // The protocol spoken, where the file records it (a run's own results; not a log or a merge).
    let recorded = results.run_config();
    // A WebSocket run's replies are messages: they have no HTTP status, and arrive whole (their
    // first byte is their end), so the status line and the first-byte column would only repeat
    // zeros and the response time. The JSON keeps both (its contract does not vary by protocol).
    let websocket = recorded
        .as_ref()
        .and_then(|c| c.protocol)
        .is_some_and(|p| p.replies_are_messages());
    let protocol = recorded
        .as_ref()
        .and_then(|c| c.protocol)
        .map_or(String::new(), |p| format!(" ({})", p.describe()));
    // A gRPC run names its method after the target (the URL has no path).
    let protocol = match recorded.as_ref().and_then(|c| c.grpc_call.as_deref()) {
        Some(call) => format!(" {call}{protocol}"),
        None => protocol,
    };
    let _ = writeln!(
        out,
        "candor {} {} @ {}{protocol}",
        results.candor_version, results.mode, results.target
    );
    // Imported logs and harness results have no threads or connections: say only what is known.
    let shape = match (cfg.threads(), cfg.connections()) {
        (Some(t), Some(c)) => format!("{t} threads, {c} connections, "),
        _ => String::new(),
    };
    let books = Books::of(results);
    let _ = writeln!(
        out,
        "  {shape}{}{}",
        if books == Books::LatencyOnly && results.intervals.is_empty() {
            "no intervals in the log".to_string()
        } else {
            format!("{} measured", format_ns(results.main.duration_s * 1e9))
        },
        match &results.warmup {
            Some(w) => format!(" after {} warm-up", format_ns(w.duration_s * 1e9)),
            None => String::new(),
        }
    );
    let rate = &results.main.rate;
    match rate.target_per_s {
        None if books == Books::LatencyOnly => {
            let _ = writeln!(
                out,
                "  rate: {} recorded (a log has no schedule: the offered rate is unknown)",
                format_rate(rate.achieved_per_s)
            );
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "  rate: target {}, achieved {} ({})",
                format_rate(t),
                format_rate(rate.achieved_per_s),
                achieved_share(&results.main.requests)
            );
        }
        None if !closed => {
            let _ = writeln!(out, "  rate: achieved {}", format_rate(rate.achieved_per_s));
        }
        None => {
            let _ = writeln!(
                out,
                "  rate: closed loop, achieved {}",
                format_rate(rate.achieved_per_s)
            );
        }
    }
    // A streamed or LLM run leads with what it is read for before the end-to-end table.
    out.push_str(&crate::llm_headline::text_lead(results));
    if let Some(loud) = failures_dominate(&results.main.requests) {
        let _ = writeln!(out, "\n  !!! {loud}");
    }
    out.push('\n');
    out.push_str(&phase_table_of(&results.main, closed, !websocket));
    // A gRPC server-streaming run: each call's first message, timed as its response is.
    if let Some(first) = results
        .extra
        .iter()
        .find(|h| h.name == "grpc_first_message")
    {
        let s = &first.summary;
        let _ = writeln!(
            out,
            "  first message (gRPC stream): p50 {}  p90 {}  p99 {}  max {}  ({} calls)",
            fmt_at(s, 50.0),
            fmt_at(s, 90.0),
            fmt_at(s, 99.0),
            format_ns(s.max_ns as f64),
            format_count(s.count)
        );
    }
    out.push('\n');
    let streams = crate::stream_text::stream_section(&results.main)
        + &crate::stream_text::run_tokens_over_time(results)
        + &crate::stream_text::goodput_over_time(&results.intervals)
        + &crate::stream_text::cached_over_time(&results.intervals)
        + &crate::stream_text::conversations_over_time(&results.intervals);
    if !streams.is_empty() {
        out.push_str(&streams);
        out.push('\n');
    }
    out.push_str(&match books {
        Books::Full => accounting_of(&results.main, !websocket),
        Books::LatencyOnly => format!(
            "  requests: {} recorded; intended, failed and unfinished requests, status classes, failures by \
             class and bytes are unknown (an interval log records latencies only)\n",
            count_noun(results.main.response_time.count, "latency", "latencies")
        ),
        Books::Slice => format!(
            "  requests: {} completed + {} failed in the slice; failures by class, status classes, bytes and \
             unfinished requests are unknown (not kept per interval)\n",
            format_count(results.main.requests.completed),
            format_count(results.main.requests.failed)
        ),
    });
    out.push_str(&crate::workload_text::render_failure_examples(
        &results.workload.failure_examples,
    ));
    if let Some(w) = &results.warmup {
        let _ = writeln!(
            out,
            "\nwarm-up (excluded above): {}, response time p50 {} p99 {} max {}",
            count_noun(w.requests.intended, "request", "requests"),
            fmt_at(&w.response_time, 50.0),
            fmt_at(&w.response_time, 99.0),
            format_ns(w.response_time.max_ns as f64),
        );
    }
    out.push_str(&crate::workload_text::render(&results.workload));
    // Confidence intervals, sample support, events and the saturation / CO verdicts.
    out.push_str(&candor_analysis::run::render_text(results));
    out.push_str(&render_stop(results));
    if !results.warnings.is_empty() {
        out.push('\n');
        for w in &results.warnings {
            let _ = writeln!(out, "WARNING: {w}");
        }
    }
    out
}

/// How a run with `--precision` or `--abort-on-fail` ended: the precision reached per target and
/// the stop reason in words (nothing for runs without them).
pub fn render_stop(results: &RunResults) -> String {
    let Some(stop) = &results.stop else {
        return String::new();
    };
    let mut out = String::new();
    if !stop.precision.is_empty() {
        out.push_str("\nPrecision of the measured window (95% order-statistic intervals):\n");
        for r in &stop.precision {
            let _ = writeln!(out, "  {}", candor_analysis::stopping::describe(r));
        }
    }
    let reason = results
        .stop_reason
        .map_or("duration", candor_core::results::StopReason::name);
    if results.stop_reason == Some(candor_core::results::StopReason::Abort) {
        let _ = writeln!(out, "\nABORTED at {:.1} s: {}", stop.at_s, stop.detail);
        let _ = writeln!(out, "stop reason: abort");
    } else {
        let _ = writeln!(out, "stop reason: {reason}: {}", stop.detail);
    }
    out
}

/// What the failures of class `class` were, in words ending with the class name, e.g.
/// "failed with HTTP status 5xx (status)".
fn failed_how(class: FailureClass, r: &RequestCounts) -> String {
    let what = match class {
        FailureClass::Connect => "failed to connect".to_string(),
        FailureClass::Read => "lost their connection before the full response".to_string(),
        FailureClass::Write => "could not be written".to_string(),
        FailureClass::Stream => {
            "got a streamed response that failed (cut off, an error event, no [DONE], not an \
             event stream, an event that is no completion chunk: see failed streams by name)"
                .to_string()
        }
        FailureClass::Timeout => "got no full response within the timeout".to_string(),
        FailureClass::Parse => {
            "met a protocol error (a malformed response or frame, bytes not asked for, a connection \
             the server refused or flooded, or a broken TLS record or alert; the connection faults \
             name the cause)"
                .to_string()
        }
        FailureClass::Status => {
            let s = &r.status;
            let classes: Vec<&str> = s
                .by_class()
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(c, _)| *c)
                .collect();
            let answered = s.s1xx + s.s2xx + s.s3xx + s.s4xx + s.s5xx;
            // The classes count every response; they name the failures' statuses only when
            // every response was a status failure.
            if classes.is_empty() || answered != r.errors.status {
                "failed with an unaccepted HTTP status".to_string()
            } else {
                format!("failed with HTTP status {}", classes.join("/"))
            }
        }
        // The results do not say which of the run's sources made or judged the requests: the
        // words name each that can.
        FailureClass::Check => {
            "got a response that failed its checks (--check-body, --check-header, or a script's response())"
                .to_string()
        }
        FailureClass::Template => {
            "were not sent: their request could not be made (a --data value with a line break, NUL or other control character where it would go into a header, or a script's request() that failed)"
                .to_string()
        }
        FailureClass::Grpc => {
            "ended with a gRPC status outside --check-status (by default anything but OK)"
                .to_string()
        }
        FailureClass::Protocol => {
            "were on the wire when the server sent a reply that matched no message (--ws-match)"
                .to_string()
        }
    };
    format!("{what} ({})", class.name())
}

/// A loud line when more than half of the intended requests failed, naming the main class.
pub fn failures_dominate(r: &RequestCounts) -> Option<String> {
    if r.intended == 0 || r.failed.saturating_mul(2) <= r.intended {
        return None;
    }
    let (class, n) = r.errors.dominant()?;
    // Failed responses (their status or their checks) and timeouts are in the histograms; the
    // other classes are not.
    let latencies = match class {
        FailureClass::Status | FailureClass::Check | FailureClass::Grpc | FailureClass::Timeout => {
            "the latencies below are mostly of failures"
        }
        _ => "the latencies below describe only the minority that was answered",
    };
    Some(format!(
        "FAILURES DOMINATE: {:.1}% of requests failed ({} of {}); {} {}; {latencies}",
        100.0 * r.failed as f64 / r.intended as f64,
        format_count(r.failed),
        format_count(r.intended),
        format_count(n),
        failed_how(class, r)
    ))
}

/// The one-line diagnosis of a run in which no request succeeded (nothing completed although
/// requests were intended), naming the dominant failure class; `None` when some succeeded.
pub fn no_success(r: &RequestCounts) -> Option<String> {
    if r.intended == 0 || r.completed > 0 {
        return None;
    }
    Some(match r.errors.dominant() {
        Some((class, n)) => {
            let others = r.failed - n;
            format!(
                "no request succeeded: {} of {} {}{}",
                format_count(n),
                format_count(r.intended),
                failed_how(class, r),
                if others > 0 {
                    format!(", {} failed otherwise", format_count(others))
                } else {
                    String::new()
                }
            ) + &if r.in_flight_at_end > 0 {
                format!(", {} unfinished", format_count(r.in_flight_at_end))
            } else {
                String::new()
            }
        }
        None => format!(
            "no request succeeded: none of {} requests was answered before the run ended",
            format_count(r.intended)
        ),
    })
}

fn fmt_at(s: &Summary, p: f64) -> String {
    format_ns(s.at(p).unwrap_or(0) as f64)
}

/// The side-by-side table. In closed loop the "response time" equals service time by
/// construction, so the column is labelled for what it is.
pub fn phase_table(p: &PhaseResults, closed_loop: bool) -> String {
    phase_table_of(p, closed_loop, true)
}

/// [`phase_table`], with the first-byte column (where recorded) only if `first_byte`.
fn phase_table_of(p: &PhaseResults, closed_loop: bool, first_byte: bool) -> String {
    let first = if closed_loop {
        "latency (CO-affected)"
    } else {
        "response time"
    };
    // Imported logs carry one latency only; empty columns would read as "0ns", so omit them.
    let mut columns: Vec<(&str, &Summary)> = if p.service_time.count == 0 && p.send_lag.count == 0 {
        vec![("latency (as recorded)", &p.response_time)]
    } else {
        vec![
            (first, &p.response_time),
            ("service time", &p.service_time),
            ("send lag", &p.send_lag),
        ]
    };
    // Shown only when recorded, so that results without it read as before.
    if let Some(recorded) = p.first_byte.as_ref().filter(|_| first_byte) {
        columns.push(("first byte", recorded));
    }
    if columns.iter().all(|(_, s)| s.count == 0) {
        // Zeros here would read as a measurement of 0ns.
        return "  latency: no data (the input holds no samples)\n".to_string();
    }
    let widths = [22, 14, 12, 12];
    let mut layout = vec![Column::left(10)];
    layout.extend(widths.iter().take(columns.len()).map(|&w| Column::right(w)));
    let mut table = TextTable::new(layout);
    let mut head = vec![""];
    head.extend(columns.iter().map(|(name, _)| *name));
    table.row(&head);
    // A column without samples says so rather than showing zeros.
    let mut line = |label: &str, cell: &dyn Fn(&Summary) -> String| {
        let mut cells = vec![label.to_string()];
        cells.extend(columns.iter().map(|(_, s)| match s.count {
            0 => "no data".to_string(),
            _ => cell(s),
        }));
        table.row(&cells);
    };
    for row in SUMMARY_ROWS {
        line(row.label, &|s: &Summary| match row.statistic {
            Statistic::Percentile(q) => fmt_at(s, q),
            Statistic::Mean => format_ns(s.mean_ns),
        });
    }
    line("stdev", &|s: &Summary| format_ns(s.stdev_ns));
    let mut cells = vec!["samples".to_string()];
    cells.extend(columns.iter().map(|(_, s)| format_count(s.count)));
    table.row(&cells);
    table.finish()
}

/// Where every intended request went.
pub fn accounting(p: &PhaseResults) -> String {
    accounting_of(p, true)
}

/// [`accounting`], with the line of HTTP status classes only if `statuses`.
fn accounting_of(p: &PhaseResults, statuses: bool) -> String {
    let r = &p.requests;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  requests: {} intended = {} completed + {} failed + {} unfinished ({} sent, {} never sent)",
        format_count(r.intended),
        format_count(r.completed),
        format_count(r.failed),
        format_count(r.in_flight_at_end),
        format_count(r.sent_unanswered),
        format_count(r.queued_unsent)
    );
    let s = &r.status;
    if statuses {
        let _ = writeln!(
            out,
            "  status:   1xx {}  2xx {}  3xx {}  4xx {}  5xx {}",
            format_count(s.s1xx),
            format_count(s.s2xx),
            format_count(s.s3xx),
            format_count(s.s4xx),
            format_count(s.s5xx)
        );
    }
    if !p.status_codes.is_empty() {
        let _ = writeln!(
            out,
            "  codes:    {}",
            candor_core::results::status_codes_line(&p.status_codes)
        );
    }
    if !p.grpc_status.is_empty() {
        let _ = writeln!(
            out,
            "  grpc:     {}",
            candor_core::results::grpc_status_line(&p.grpc_status)
        );
    }
    let e = &r.errors;
    let _ = write!(
        out,
        "  errors:   connect {}  read {}  write {}  timeout {}  parse {}  status {}",
        format_count(e.connect),
        format_count(e.read),
        format_count(e.write),
        format_count(e.timeout),
        format_count(e.parse),
        format_count(e.status)
    );
    // Only runs with response checks can fail them; other reports keep their line as it was.
    if e.check > 0 {
        let _ = write!(out, "  check {}", format_count(e.check));
    }
    if e.stream > 0 {
        let _ = write!(out, "  stream {}", format_count(e.stream));
    }
    if e.template > 0 {
        let _ = write!(out, "  template {}", format_count(e.template));
    }
    if e.grpc > 0 || !p.grpc_status.is_empty() {
        let _ = write!(out, "  grpc {}", format_count(e.grpc));
    }
    if e.protocol > 0 {
        let _ = write!(out, "  protocol {}", format_count(e.protocol));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  bytes:    {} written, {} read",
        format_count(r.bytes_written),
        format_count(r.bytes_read)
    );
    // 0 means not counted (older files, imported logs), never "no connection".
    if r.connections_opened > 0 {
        let _ = writeln!(
            out,
            "  connections: {} opened (initial and reconnects)",
            format_count(r.connections_opened)
        );
    }
    if !p.connection_faults.is_empty() {
        let mut causes: Vec<(&String, &u64)> = p.connection_faults.iter().collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let causes: Vec<String> = causes
            .iter()
            .map(|(cause, n)| format!("{cause} ×{}", format_count(**n)))
            .collect();
        let _ = writeln!(out, "  connection faults: {}", causes.join("; "));
    }
    if let Some(pool) = &p.pool {
        let _ = writeln!(out, "{}", pool_line(pool));
    }
    if let Some(pacing) = &p.pacing {
        let _ = writeln!(out, "{}", pacing_line(pacing));
    }
    if r.in_flight_at_end > 0 {
        let _ = writeln!(
            out,
            "  unfinished ages: p50 {} max {}",
            fmt_at(&p.unfinished_age, 50.0),
            format_ns(p.unfinished_age.max_ns as f64)
        );
    }
    out
}

/// The full percentile spectrum of the response and service times, in milliseconds
/// (`candor run --latency`).
pub fn spectrum(results: &RunResults) -> Result<String, candor_core::hist::HistCodecError> {
    use crate::hgrm::{write_hgrm, DEFAULT_TICKS_PER_HALF, MS_RATIO};
    let rec = results.main.histograms.decode()?;
    let mut out = String::new();
    out.push_str("\nResponse time (from intended send), percentile spectrum in ms:\n");
    out.push_str(&write_hgrm(&rec.response, DEFAULT_TICKS_PER_HALF, MS_RATIO));
    out.push_str("\nService time (from actual send), percentile spectrum in ms:\n");
    out.push_str(&write_hgrm(&rec.service, DEFAULT_TICKS_PER_HALF, MS_RATIO));
    Ok(out)
}

/// The terminal report as an export (`candor run`'s text, one run).
pub struct TextExporter;

impl crate::export::Exporter<RunResults> for TextExporter {
    fn export(&self, results: &RunResults) -> Result<Vec<u8>, crate::export::ExportError> {
        Ok(render(results).into_bytes())
    }
}

/// How the connection pool opened, apart from the requests.
fn pool_line(pool: &PoolResults) -> String {
    let mut line = format!(
        "  pool:     {} of {} connections ready in {} before the first send; connect p50 {} p99 {} max {}",
        format_count(pool.ready),
        format_count(pool.connections),
        format_ns(pool.open_s * 1e9),
        fmt_at(&pool.connect_time, 50.0),
        fmt_at(&pool.connect_time, 99.0),
        format_ns(pool.connect_time.max_ns as f64)
    );
    if pool.not_ready > 0 {
        let _ = write!(
            line,
            "; {} not ready (their requests connected again and waited)",
            format_count(pool.not_ready)
        );
    }
    line
}

/// What precise pacing cost.
fn pacing_line(pacing: &PacingResults) -> String {
    format!(
        "  pacing:   {} spinning before sends ({:.1}% of the threads' time); spin margin {} ({})",
        format_ns(pacing.spin_s * 1e9),
        pacing.spin_share * 100.0,
        format_ns(pacing.margin_us * 1e3),
        match pacing.margin {
            PacingMargin::Adaptive => "adaptive, from measured wake-up lateness",
            PacingMargin::Fixed => "fixed by --spin",
        }
    )
}

#[cfg(test)]
mod text_tests;
