//! The series of `/metrics` as metric families (histograms derived from the HdrHistograms,
//! request counters and gauges) and their Prometheus text exposition (version 0.0.4); the
//! protobuf exposition (`protobuf.rs`) encodes the same families.

use candor_core::results::RequestCounts;
use std::fmt::Write as _;

pub use crate::buckets::{Buckets, BUCKET_BOUNDS_NS};

/// What `/metrics` shows: the measured window so far.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    /// `Some(i)` adds the label `shard="i"` to every series.
    pub shard: Option<u32>,
    pub response: Buckets,
    pub service: Buckets,
    pub send_lag: Buckets,
    /// From the intended send to the first byte of the response; `None` until one is recorded
    /// (a run that records none shows no such series).
    pub first_byte: Option<Buckets>,
    /// Streamed responses (`--stream`, `--llm`): each measure that recorded something, and an
    /// LLM run's output tokens; `None` in runs without streams.
    pub stream: Option<StreamSnapshot>,
    /// Counts of the measured window.
    pub measured: RequestCounts,
    /// Responses of the measured window by status code (`"200"`, ..., `"other"`).
    pub codes: std::collections::BTreeMap<String, u64>,
    /// Replies of the measured window by the code their protocol gives them (gRPC's
    /// `grpc-status`); no table for protocols without such codes.
    pub reply_codes: candor_core::reply_codes::ReplyCodeCounts,
    pub in_flight: u64,
    /// `None` in a closed loop (no target).
    pub target_per_s: Option<f64>,
    pub elapsed_s: f64,
    pub done: bool,
}

/// What `/metrics` shows of streamed responses: the measured window so far.
#[derive(Debug, Clone, Default)]
pub struct StreamSnapshot {
    /// Each measure that recorded something, in report order.
    pub measures: Vec<(candor_core::stream_measures::StreamMeasure, Buckets)>,
    /// Responses read as streams and their events.
    pub responses: u64,
    pub events: u64,
    /// LLM runs: output tokens so far.
    pub output_tokens: Option<u64>,
    /// Runs that judge goodput (`--goodput`, or bounds from `--slo`): the responses so far that
    /// met every per-request bound; `None` (no series) in runs without bounds.
    pub good: Option<u64>,
}

/// What the metrics of a family hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric's value.
#[derive(Debug, Clone, Copy)]
pub enum Sample<'a> {
    Number(f64),
    Histogram(&'a Buckets),
}

/// One metric of a family: its labels (the shard's first) and value.
#[derive(Debug, Clone)]
pub struct Metric<'a> {
    pub labels: Vec<(&'static str, String)>,
    pub sample: Sample<'a>,
}

/// A metric family: one name, its help, kind and metrics (there may be none, e.g. no status
/// code seen yet).
#[derive(Debug, Clone)]
pub struct Family<'a> {
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub metrics: Vec<Metric<'a>>,
}

/// The labels of one metric: `shard` (when sharded), then `extra`.
fn labels(shard: Option<u32>, extra: Option<(&'static str, &str)>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(s) = shard {
        out.push(("shard", s.to_string()));
    }
    if let Some((k, v)) = extra {
        out.push((k, v.to_string()));
    }
    out
}

/// Builds the families of one snapshot, in exposition order.
struct Families<'a> {
    shard: Option<u32>,
    out: Vec<Family<'a>>,
}

impl<'a> Families<'a> {
    fn histogram(&mut self, name: &str, help: &str, b: &'a Buckets) {
        self.out.push(Family {
            name: name.into(),
            help: help.into(),
            kind: Kind::Histogram,
            metrics: vec![Metric {
                labels: labels(self.shard, None),
                sample: Sample::Histogram(b),
            }],
        });
    }

    fn single(&mut self, name: &str, kind: Kind, help: &str, v: f64) {
        self.out.push(Family {
            name: name.into(),
            help: help.into(),
            kind,
            metrics: vec![Metric {
                labels: labels(self.shard, None),
                sample: Sample::Number(v),
            }],
        });
    }

    /// A counter family with one metric per `(label value, count)`.
    fn counters<'k>(
        &mut self,
        name: &str,
        help: &str,
        label: &'static str,
        rows: impl Iterator<Item = (&'k str, u64)>,
    ) {
        let shard = self.shard;
        self.out.push(Family {
            name: name.into(),
            help: help.into(),
            kind: Kind::Counter,
            metrics: rows
                .map(|(value, n)| Metric {
                    labels: labels(shard, Some((label, value))),
                    sample: Sample::Number(n as f64),
                })
                .collect(),
        });
    }
}

/// The series of streamed responses: `candor_<measure>_seconds` histograms (`candor_ttft_seconds`,
/// ...), the events and responses, and an LLM run's output tokens (their rate over time is
/// `rate(candor_output_tokens_total[1m])`).
fn stream_families<'a>(f: &mut Families<'a>, s: &'a StreamSnapshot) {
    use candor_core::stream_measures::StreamMeasure as M;
    for (m, b) in &s.measures {
        let help = match m {
            M::Ttft => "Time to first token from the intended send time (LLM)",
            M::TtftService => "Time to first token from the actual send (LLM), as a client timing from its own send reports it",
            M::Itl => "Inter-token latency, each gap between content chunks (LLM)",
            M::Tpot => "Time per output token, (last token - first token) / (output tokens - 1) (LLM)",
            M::FirstEvent => "From the intended send time to the first event of a streamed response",
            M::EventGap => "Gaps between consecutive events of a streamed response",
        };
        f.histogram(
            &format!("candor_{}_seconds", m.name()),
            &format!("{help}, since the start of the measured window."),
            b,
        );
    }
    f.single(
        "candor_stream_responses_total",
        Kind::Counter,
        "Responses of the measured window read as streams that delivered at least one event.",
        s.responses as f64,
    );
    f.single(
        "candor_stream_events_total",
        Kind::Counter,
        "Events of the measured window's streamed responses.",
        s.events as f64,
    );
    if let Some(tokens) = s.output_tokens {
        f.single(
            "candor_output_tokens_total",
            Kind::Counter,
            "Output tokens of the measured window's LLM responses (from usage, else counted chunks).",
            tokens as f64,
        );
    }
    if let Some(good) = s.good {
        f.single(
            "candor_good_requests_total",
            Kind::Counter,
            "Responses of the measured window that met every per-request objective (--goodput, or the bounds --slo sets), judged from the intended send; only in runs that judge goodput.",
            good as f64,
        );
    }
}

/// Every family of `/metrics` for `s`.
pub fn families(s: &MetricsSnapshot) -> Vec<Family<'_>> {
    let mut f = Families {
        shard: s.shard,
        out: Vec::with_capacity(24),
    };
    f.histogram(
        "candor_response_time_seconds",
        "Response time from the intended send time, of requests completed (and timed out) since the start of the measured window.",
        &s.response,
    );
    f.histogram(
        "candor_service_time_seconds",
        "Service time from the actual send, since the start of the measured window.",
        &s.service,
    );
    f.histogram(
        "candor_send_lag_seconds",
        "Actual send time minus intended send time, since the start of the measured window.",
        &s.send_lag,
    );
    if let Some(first_byte) = &s.first_byte {
        f.histogram(
            "candor_first_byte_seconds",
            "From the intended send time to the first byte of the response, since the start of the measured window.",
            first_byte,
        );
    }
    if let Some(stream) = &s.stream {
        stream_families(&mut f, stream);
    }
    let m = &s.measured;
    f.single(
        "candor_requests_intended_total",
        Kind::Counter,
        "Requests of the measured window that left the schedule (with, at the end, those never sent).",
        m.intended as f64,
    );
    f.single(
        "candor_requests_completed_total",
        Kind::Counter,
        "Requests of the measured window with a full response that passed: its status accepted (--check-status) and its response checks met; the responses that failed either are in candor_requests_failed_total (class status or check), so intended = completed + failed + in flight.",
        m.completed as f64,
    );
    f.counters(
        "candor_requests_failed_total",
        "Requests of the measured window that failed, by class.",
        "class",
        m.errors.by_class().into_iter(),
    );
    f.counters(
        "candor_responses_total",
        "Responses of the measured window by HTTP status code, completed and failed alike (code \"other\": outside 100-599).",
        "code",
        s.codes.iter().map(|(k, n)| (k.as_str(), *n)),
    );
    if let Some(table) = s.reply_codes.table() {
        let by_name = s.reply_codes.by_name();
        f.counters(
            table.series,
            &format!(
                "Replies of the measured window by the {} they ended with, accepted and failed alike (those outside --check-status are in candor_requests_failed_total class {}).",
                table.field,
                table.failure.name()
            ),
            table.field,
            by_name.iter().map(|(k, n)| (k.as_str(), *n)),
        );
    }
    if let Some(rate) = s.target_per_s {
        f.single(
            "candor_target_rate_per_second",
            Kind::Gauge,
            "The intended request rate of this process (its share of the total with --shard).",
            rate,
        );
    }
    f.single(
        "candor_requests_in_flight",
        Kind::Gauge,
        "Requests sent and neither answered nor failed yet (at the end: unfinished requests).",
        s.in_flight as f64,
    );
    f.single(
        "candor_run_elapsed_seconds",
        Kind::Gauge,
        "Time since the first intended send (warm-up included).",
        s.elapsed_s,
    );
    f.single(
        "candor_run_finished",
        Kind::Gauge,
        "1 once the run has ended and these are its final numbers, else 0.",
        if s.done { 1.0 } else { 0.0 },
    );
    f.out
}

/// Formats a number the way Prometheus parses it (and without a trailing `.0` noise).
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// The text label set `{a="x",...,le="b"}` (or nothing when empty).
fn label_text(labels: &[(&str, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn histogram_text(out: &mut String, name: &str, labels: &[(&str, String)], b: &Buckets) {
    for (bound, n) in BUCKET_BOUNDS_NS.iter().zip(b.cumulative.iter()) {
        let le = num(*bound as f64 / 1e9);
        let _ = writeln!(out, "{name}_bucket{} {n}", label_text(labels, Some(&le)));
    }
    let inf = label_text(labels, Some("+Inf"));
    let _ = writeln!(out, "{name}_bucket{inf} {}", b.count);
    let plain = label_text(labels, None);
    let _ = writeln!(out, "{name}_sum{plain} {}", num(b.sum_ns as f64 / 1e9));
    let _ = writeln!(out, "{name}_count{plain} {}", b.count);
}

/// The text exposition format (version 0.0.4) of `s`.
pub fn render(s: &MetricsSnapshot) -> String {
    let mut out = String::with_capacity(64 * 1024);
    for f in families(s) {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for m in &f.metrics {
            match m.sample {
                Sample::Number(v) => {
                    let _ = writeln!(out, "{}{} {}", f.name, label_text(&m.labels, None), num(v));
                }
                Sample::Histogram(b) => histogram_text(&mut out, &f.name, &m.labels, b),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    fn snapshot(shard: Option<u32>) -> MetricsSnapshot {
        let mut h = new_histogram();
        for v in [500u64, 1_000, 1_001, 1_500_000, 1_999_000, 7_000_000_000] {
            h.record(v).unwrap();
        }
        let mut measured = RequestCounts {
            intended: 10,
            completed: 6,
            failed: 3,
            ..Default::default()
        };
        measured.errors.timeout = 2;
        measured.errors.connect = 1;
        MetricsSnapshot {
            shard,
            response: Buckets::of(&h),
            service: Buckets::of(&new_histogram()),
            send_lag: Buckets::of(&h),
            first_byte: Some(Buckets::of(&h)),
            stream: None,
            measured,
            codes: [("200".to_string(), 5), ("404".to_string(), 1)].into(),
            reply_codes: Default::default(),
            in_flight: 1,
            target_per_s: Some(2500.0),
            elapsed_s: 3.5,
            done: false,
        }
    }

    #[test]
    fn a_stream_run_shows_each_recorded_measure_and_its_tokens() {
        use candor_core::stream_measures::StreamMeasure;
        let mut ttft = new_histogram();
        ttft.record(50_000_000).unwrap();
        ttft.record(350_000_000).unwrap();
        let mut s = snapshot(None);
        s.stream = Some(StreamSnapshot {
            measures: vec![(StreamMeasure::Ttft, Buckets::of(&ttft))],
            responses: 2,
            events: 18,
            output_tokens: Some(16),
            good: None,
        });
        let text = render(&s);
        assert!(
            text.contains("# TYPE candor_ttft_seconds histogram"),
            "{text}"
        );
        assert!(text.contains("candor_ttft_seconds_count 2\n"), "{text}");
        assert!(
            text.contains("candor_ttft_seconds_bucket{le=\"0.1\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("candor_output_tokens_total 16\n"), "{text}");
        assert!(text.contains("candor_stream_events_total 18\n"), "{text}");
        assert!(!text.contains("candor_itl_seconds"), "{text}");
        // Without goodput bounds there is no good counter (not a 0 that reads as "none good").
        assert!(!text.contains("candor_good_requests_total"), "{text}");
        s.stream.as_mut().unwrap().good = Some(2);
        let text = render(&s);
        assert!(
            text.contains(
                "# TYPE candor_good_requests_total counter\ncandor_good_requests_total 2\n"
            ),
            "{text}"
        );
        // A run without streams shows none of these series.
        let plain = render(&snapshot(None));
        assert!(!plain.contains("candor_ttft") && !plain.contains("output_tokens"));
    }

    #[test]
    fn exposition_has_every_series_once_with_shard_label() {
        let text = render(&snapshot(Some(3)));
        assert!(
            text.contains("candor_response_time_seconds_bucket{shard=\"3\",le=\"0.000001\"} 2\n")
        );
        assert!(text.contains("candor_response_time_seconds_bucket{shard=\"3\",le=\"3600\"} 6\n"));
        assert!(text.contains("candor_response_time_seconds_bucket{shard=\"3\",le=\"+Inf\"} 6\n"));
        assert!(text.contains("candor_response_time_seconds_count{shard=\"3\"} 6\n"));
        assert!(text.contains("candor_service_time_seconds_count{shard=\"3\"} 0\n"));
        assert!(text.contains("candor_requests_intended_total{shard=\"3\"} 10\n"));
        assert!(text.contains("candor_requests_completed_total{shard=\"3\"} 6\n"));
        assert!(text.contains("candor_requests_failed_total{shard=\"3\",class=\"timeout\"} 2\n"));
        assert!(text.contains("candor_requests_failed_total{shard=\"3\",class=\"connect\"} 1\n"));
        assert!(text.contains("candor_target_rate_per_second{shard=\"3\"} 2500\n"));
        assert!(text.contains("candor_requests_in_flight{shard=\"3\"} 1\n"));
        assert!(text.contains("candor_run_finished{shard=\"3\"} 0\n"));
        for name in [
            "candor_response_time_seconds",
            "candor_service_time_seconds",
            "candor_send_lag_seconds",
            "candor_first_byte_seconds",
            "candor_requests_intended_total",
            "candor_requests_completed_total",
            "candor_requests_failed_total",
            "candor_target_rate_per_second",
            "candor_requests_in_flight",
        ] {
            assert_eq!(
                text.matches(&format!("# TYPE {name} ")).count(),
                1,
                "{name} declared once"
            );
        }
        // Every bound plus +Inf per histogram.
        assert_eq!(
            text.matches("candor_send_lag_seconds_bucket{").count(),
            BUCKET_BOUNDS_NS.len() + 1
        );
    }

    #[test]
    fn every_failure_class_and_status_code_is_exposed_so_the_books_add_up() {
        let mut s = snapshot(None);
        // 10 intended = 4 completed + 5 failed (2 timeout, 1 connect, 2 check) + 1 in flight.
        s.measured.completed = 4;
        s.measured.failed = 5;
        s.measured.errors.check = 2;
        let text = render(&s);
        assert!(
            text.contains("candor_requests_failed_total{class=\"check\"} 2\n"),
            "{text}"
        );
        let failed: u64 = text
            .lines()
            .filter(|l| l.starts_with("candor_requests_failed_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(failed, 5, "the classes add up to the failed requests");
        assert_eq!(
            s.measured.intended,
            s.measured.completed + failed + s.in_flight
        );
        let help = text
            .lines()
            .find(|l| l.starts_with("# HELP candor_requests_completed_total "))
            .unwrap();
        assert!(!help.contains("any status"), "{help}");
        assert!(help.contains("class status or check"), "{help}");
        assert!(text.contains("# TYPE candor_responses_total counter\n"));
        assert!(
            text.contains("candor_responses_total{code=\"200\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("candor_responses_total{code=\"404\"} 1\n"),
            "{text}"
        );
        let sharded = render(&snapshot(Some(2)));
        assert!(sharded.contains("candor_responses_total{shard=\"2\",code=\"200\"} 5\n"));
    }

    #[test]
    fn exposition_without_shard_or_target_has_no_empty_label_sets() {
        let mut s = snapshot(None);
        s.target_per_s = None;
        let text = render(&s);
        assert!(!text.contains("{}"));
        assert!(text.contains("candor_requests_completed_total 6\n"));
        assert!(!text.contains("candor_target_rate_per_second"));
        assert!(text.contains("candor_response_time_seconds_bucket{le=\"0.0000011\"} 3\n"));
    }

    /// `promtool check metrics` (Debian's prometheus package, from scripts/install-test-deps.sh)
    /// is the reference linter of the format: ignored by a plain `cargo test`, run by
    /// scripts/test.sh (`--include-ignored`), where a missing promtool fails it.
    #[test]
    #[ignore = "needs promtool (Prometheus): scripts/test.sh"]
    fn promtool_accepts_the_exposition() {
        // A stream run that judges goodput too, so its counters are linted as well.
        let mut llm = snapshot(None);
        llm.stream = Some(StreamSnapshot {
            measures: Vec::new(),
            responses: 2,
            events: 18,
            output_tokens: Some(16),
            good: Some(1),
        });
        for s in [snapshot(Some(0)), snapshot(None), llm] {
            let text = render(&s);
            let mut child = std::process::Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("promtool not found: run scripts/install-test-deps.sh");
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "promtool check metrics: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.stdout.is_empty() && out.stderr.is_empty(),
                "promtool lint findings: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
