//! The Prometheus text exposition of a run: histograms derived from the HdrHistograms on fixed
//! 1-2-5 bucket bounds, request counters and gauges.

use candor_core::results::RequestCounts;
use candor_core::Histo;
use std::fmt::Write as _;

/// Upper bucket bounds in nanoseconds: 1-2-5 steps from 1 us up to 2000 s, then 1 h (the
/// histograms' own ceiling). Fixed for every run so that shards and runs add up bucket by bucket.
pub const BUCKET_BOUNDS_NS: [u64; 30] = {
    let mut b = [0u64; 30];
    let mut decade = 1_000u64;
    let mut i = 0;
    while i < 27 {
        b[i] = decade;
        b[i + 1] = 2 * decade;
        b[i + 2] = 5 * decade;
        decade *= 10;
        i += 3;
    }
    b[27] = decade;
    b[28] = 2 * decade;
    b[29] = 3_600_000_000_000;
    b
};

/// A histogram on [`BUCKET_BOUNDS_NS`]: `cumulative[i]` values at most bound `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub cumulative: [u64; BUCKET_BOUNDS_NS.len()],
    pub count: u64,
    pub sum_ns: u128,
}

impl Buckets {
    /// Counts every recorded value of `h` under the first bound at or above it. A value stands
    /// for its HdrHistogram bucket's highest equivalent, as candor's percentiles do, so a
    /// percentile candor reports lies in the bucket where Prometheus finds it.
    pub fn of(h: &Histo) -> Buckets {
        let mut per = [0u64; BUCKET_BOUNDS_NS.len()];
        let mut sum_ns = 0u128;
        let mut above = 0u64;
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            sum_ns += h.median_equivalent(value) as u128 * n as u128;
            match BUCKET_BOUNDS_NS.iter().position(|&b| value <= b) {
                Some(i) => per[i] += n,
                None => above += n,
            }
        }
        let mut cumulative = per;
        for i in 1..cumulative.len() {
            cumulative[i] += cumulative[i - 1];
        }
        Buckets {
            cumulative,
            count: cumulative[cumulative.len() - 1] + above,
            sum_ns,
        }
    }
}

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
    /// gRPC calls of the measured window by `grpc-status` name (empty for other protocols).
    pub grpc_status: std::collections::BTreeMap<String, u64>,
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

/// The label set `{shard="i",extra}` (or `{extra}`, or nothing).
fn labels(shard: Option<u32>, extra: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = shard {
        parts.push(format!("shard=\"{s}\""));
    }
    for (k, v) in extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, help: &str, shard: Option<u32>, b: &Buckets) {
    header(out, name, "histogram", help);
    for (bound, n) in BUCKET_BOUNDS_NS.iter().zip(b.cumulative.iter()) {
        let le = num(*bound as f64 / 1e9);
        let _ = writeln!(out, "{name}_bucket{} {n}", labels(shard, &[("le", &le)]));
    }
    let _ = writeln!(
        out,
        "{name}_bucket{} {}",
        labels(shard, &[("le", "+Inf")]),
        b.count
    );
    let _ = writeln!(
        out,
        "{name}_sum{} {}",
        labels(shard, &[]),
        num(b.sum_ns as f64 / 1e9)
    );
    let _ = writeln!(out, "{name}_count{} {}", labels(shard, &[]), b.count);
}

fn single(out: &mut String, name: &str, kind: &str, help: &str, shard: Option<u32>, v: f64) {
    header(out, name, kind, help);
    let _ = writeln!(out, "{name}{} {}", labels(shard, &[]), num(v));
}

/// The series of streamed responses: `candor_<measure>_seconds` histograms (`candor_ttft_seconds`,
/// ...), the events and responses, and an LLM run's output tokens (their rate over time is
/// `rate(candor_output_tokens_total[1m])`).
fn render_stream(out: &mut String, sh: Option<u32>, s: &StreamSnapshot) {
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
        histogram(
            out,
            &format!("candor_{}_seconds", m.name()),
            &format!("{help}, since the start of the measured window."),
            sh,
            b,
        );
    }
    single(
        out,
        "candor_stream_responses_total",
        "counter",
        "Responses of the measured window read as streams that delivered at least one event.",
        sh,
        s.responses as f64,
    );
    single(
        out,
        "candor_stream_events_total",
        "counter",
        "Events of the measured window's streamed responses.",
        sh,
        s.events as f64,
    );
    if let Some(tokens) = s.output_tokens {
        single(
            out,
            "candor_output_tokens_total",
            "counter",
            "Output tokens of the measured window's LLM responses (from usage, else counted chunks).",
            sh,
            tokens as f64,
        );
    }
}

/// The text exposition format (version 0.0.4) of `s`.
pub fn render(s: &MetricsSnapshot) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let sh = s.shard;
    histogram(
        &mut out,
        "candor_response_time_seconds",
        "Response time from the intended send time, of requests completed (and timed out) since the start of the measured window.",
        sh,
        &s.response,
    );
    histogram(
        &mut out,
        "candor_service_time_seconds",
        "Service time from the actual send, since the start of the measured window.",
        sh,
        &s.service,
    );
    histogram(
        &mut out,
        "candor_send_lag_seconds",
        "Actual send time minus intended send time, since the start of the measured window.",
        sh,
        &s.send_lag,
    );
    if let Some(first_byte) = &s.first_byte {
        histogram(
            &mut out,
            "candor_first_byte_seconds",
            "From the intended send time to the first byte of the response, since the start of the measured window.",
            sh,
            first_byte,
        );
    }
    if let Some(stream) = &s.stream {
        render_stream(&mut out, sh, stream);
    }
    let m = &s.measured;
    single(
        &mut out,
        "candor_requests_intended_total",
        "counter",
        "Requests of the measured window that left the schedule (with, at the end, those never sent).",
        sh,
        m.intended as f64,
    );
    single(
        &mut out,
        "candor_requests_completed_total",
        "counter",
        "Requests of the measured window with a full response that passed: its status accepted (--check-status) and its response checks met; the responses that failed either are in candor_requests_failed_total (class status or check), so intended = completed + failed + in flight.",
        sh,
        m.completed as f64,
    );
    header(
        &mut out,
        "candor_requests_failed_total",
        "counter",
        "Requests of the measured window that failed, by class.",
    );
    for (class, n) in m.errors.by_class() {
        let _ = writeln!(
            out,
            "candor_requests_failed_total{} {n}",
            labels(sh, &[("class", class)])
        );
    }
    header(
        &mut out,
        "candor_responses_total",
        "counter",
        "Responses of the measured window by HTTP status code, completed and failed alike (code \"other\": outside 100-599).",
    );
    for (code, n) in &s.codes {
        let _ = writeln!(
            out,
            "candor_responses_total{} {n}",
            labels(sh, &[("code", code)])
        );
    }
    if !s.grpc_status.is_empty() {
        header(
            &mut out,
            "candor_grpc_calls_total",
            "counter",
            "gRPC calls of the measured window by the grpc-status they ended with, accepted and failed alike (those outside --check-status are in candor_requests_failed_total class grpc).",
        );
        for (status, n) in &s.grpc_status {
            let _ = writeln!(
                out,
                "candor_grpc_calls_total{} {n}",
                labels(sh, &[("grpc_status", status)])
            );
        }
    }
    if let Some(rate) = s.target_per_s {
        single(
            &mut out,
            "candor_target_rate_per_second",
            "gauge",
            "The intended request rate of this process (its share of the total with --shard).",
            sh,
            rate,
        );
    }
    single(
        &mut out,
        "candor_requests_in_flight",
        "gauge",
        "Requests sent and neither answered nor failed yet (at the end: unfinished requests).",
        sh,
        s.in_flight as f64,
    );
    single(
        &mut out,
        "candor_run_elapsed_seconds",
        "gauge",
        "Time since the first intended send (warm-up included).",
        sh,
        s.elapsed_s,
    );
    single(
        &mut out,
        "candor_run_finished",
        "gauge",
        "1 once the run has ended and these are its final numbers, else 0.",
        sh,
        if s.done { 1.0 } else { 0.0 },
    );
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
            grpc_status: Default::default(),
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
        // A run without streams shows none of these series.
        let plain = render(&snapshot(None));
        assert!(!plain.contains("candor_ttft") && !plain.contains("output_tokens"));
    }

    #[test]
    fn bounds_are_one_two_five_from_a_microsecond_to_an_hour() {
        assert_eq!(BUCKET_BOUNDS_NS[0], 1_000);
        assert_eq!(BUCKET_BOUNDS_NS[1], 2_000);
        assert_eq!(BUCKET_BOUNDS_NS[2], 5_000);
        assert_eq!(BUCKET_BOUNDS_NS[3], 10_000);
        assert_eq!(BUCKET_BOUNDS_NS[28], 2_000_000_000_000);
        assert_eq!(
            BUCKET_BOUNDS_NS[29],
            candor_core::hist::HIGHEST_TRACKABLE_NS
        );
        assert!(BUCKET_BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn buckets_are_cumulative_and_inclusive_of_their_bound() {
        let s = snapshot(None);
        let b = &s.response;
        assert_eq!(b.count, 6);
        assert_eq!(b.cumulative[0], 2, "500 ns and exactly 1 us are <= 1 us");
        assert_eq!(b.cumulative[1], 3, "1001 ns is <= 2 us");
        // 1.5 ms and 1.999 ms are <= 2 ms.
        let two_ms = BUCKET_BOUNDS_NS
            .iter()
            .position(|&x| x == 2_000_000)
            .unwrap();
        assert_eq!(b.cumulative[two_ms - 1], 3);
        assert_eq!(b.cumulative[two_ms], 5);
        let five_s = BUCKET_BOUNDS_NS
            .iter()
            .position(|&x| x == 5_000_000_000)
            .unwrap();
        assert_eq!(b.cumulative[five_s], 5);
        assert_eq!(b.cumulative[five_s + 1], 6, "7 s is <= 10 s");
        let expect_sum = 500.0 + 1_000.0 + 1_001.0 + 1.5e6 + 1.999e6 + 7e9;
        assert!(((b.sum_ns as f64) - expect_sum).abs() / expect_sum < 1e-3);
    }

    #[test]
    fn a_value_counts_as_its_hdr_bucket_s_highest_equivalent() {
        // Exactly 2 ms shares an HdrHistogram bucket (512 ns wide there) with values above 2 ms;
        // it is counted where candor's own percentiles would put it: above the 2 ms bound.
        let mut h = candor_core::new_histogram();
        h.record(2_000_000).unwrap();
        let b = Buckets::of(&h);
        let two_ms = BUCKET_BOUNDS_NS
            .iter()
            .position(|&x| x == 2_000_000)
            .unwrap();
        assert_eq!(b.cumulative[two_ms], 0);
        assert_eq!(b.cumulative[two_ms + 1], 1);
        assert!(candor_core::hist::value_at(&h, 99.0) > 2_000_000);
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
        // 30 bounds plus +Inf per histogram.
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
        assert!(text.contains("candor_response_time_seconds_bucket{le=\"0.000002\"} 3\n"));
    }

    /// `promtool check metrics` (Debian's prometheus package, from scripts/install-test-deps.sh)
    /// is the reference linter of the format: ignored by a plain `cargo test`, run by
    /// scripts/test.sh (`--include-ignored`), where a missing promtool fails it.
    #[test]
    #[ignore = "needs promtool (Prometheus): scripts/test.sh"]
    fn promtool_accepts_the_exposition() {
        for s in [snapshot(Some(0)), snapshot(None)] {
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
