//! A run's series as the push outputs see them, accumulated from the interval reports the run's
//! collector already makes (as the live view's are) and made a [`Batch`] at each push (pure).

use crate::native::NativeHistogram;
use crate::series::{Batch, Series, Value};
use candor_core::reply_codes::ReplyCodeCounts;
use candor_core::results::{CodeCounts, RequestCounts};
use candor_core::Recorder;
use candor_load::engine::books::{PhaseAcc, StreamAcc};
use candor_load::load_run::RunOutcome;
use candor_load::IntervalReport;

/// Labels of one series, the common ones included.
type LabelSet = Vec<(String, String)>;

/// Makes a phase's label set with extra labels.
type Labeller<'a> = &'a dyn Fn(&[(&str, &str)]) -> LabelSet;

/// The two phases of a run, as the `phase` label names them.
const PHASES: [&str; 2] = ["warmup", "measured"];

/// What is known of a run before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLabels {
    /// Labels on every series: `run_id`, `shard` when sharded, then the user's `--tag`s.
    pub common: Vec<(String, String)>,
    /// This process's intended rate; `None` in a closed loop.
    pub target_per_s: Option<f64>,
    pub has_warmup: bool,
    /// Wall-clock start of the run, ns since the Unix epoch.
    pub start_unix_ns: u64,
}

/// One phase's accumulated books.
#[derive(Default)]
struct Phase {
    hist: Option<Box<Recorder>>,
    counts: RequestCounts,
    codes: CodeCounts,
    /// Replies by the code their protocol gives them (gRPC's `grpc-status`).
    reply_codes: ReplyCodeCounts,
    stream: Option<Box<StreamAcc>>,
}

/// The accumulated state of one run.
pub struct PushState {
    labels: RunLabels,
    phases: [Phase; 2],
    /// The measured phase per request name (label `name`), known at the end of the run only.
    names: Vec<(String, Phase)>,
    /// Goodput is judged (the intervals say so): the streams' good responses are a series.
    goodput: bool,
    elapsed_s: f64,
    done: bool,
}

impl PushState {
    pub fn new(labels: RunLabels) -> PushState {
        PushState {
            labels,
            phases: Default::default(),
            names: Vec::new(),
            goodput: false,
            elapsed_s: 0.0,
            done: false,
        }
    }

    /// Takes one interval report. Histograms go by completion time (the interval's phase),
    /// counters by intended time, as the live view's do.
    pub fn interval(&mut self, r: &IntervalReport) {
        self.goodput = r.goodput;
        let p = &mut self.phases[usize::from(!r.warmup)];
        p.hist
            .get_or_insert_with(|| Box::new(Recorder::new()))
            .add(r.histograms);
        if let Some(s) = r.stream {
            p.stream.get_or_insert_with(Box::default).add(s);
        }
        for (i, phase) in self.phases.iter_mut().enumerate() {
            phase.counts = r.totals[i];
            phase.codes.add(&r.codes[i]);
            phase.reply_codes.merge(&r.reply_codes[i]);
        }
        self.elapsed_s = r.elapsed_s;
    }

    /// Takes the measured phase's final books per request name (`RunOutcome::named_books`):
    /// their histograms, request counts and reply codes (the books per name keep no status
    /// codes or stream measures).
    pub fn names(&mut self, named: &[(String, &PhaseAcc)]) {
        self.names = named
            .iter()
            .map(|(name, acc)| {
                let phase = Phase {
                    hist: Some(Box::new(acc.rec.clone())),
                    counts: acc.counts,
                    codes: CodeCounts::default(),
                    reply_codes: acc.reply_codes,
                    stream: None,
                };
                (name.clone(), phase)
            })
            .collect();
    }

    /// Takes the run's final counts (the backlog never sent included): counters only grow.
    pub fn finish(&mut self, outcome: &RunOutcome) {
        self.phases[1].counts = outcome.main.counts;
        self.phases[1].codes = outcome.main.codes.clone();
        self.phases[1].reply_codes = outcome.main.reply_codes;
        if let Some(w) = &outcome.warmup {
            self.phases[0].counts = w.counts;
            self.phases[0].codes = w.codes.clone();
            self.phases[0].reply_codes = w.reply_codes;
        }
        self.done = true;
    }

    /// Every series now, stamped `timestamp_ms`.
    pub fn batch(&self, timestamp_ms: i64) -> Batch {
        let mut out = Vec::new();
        for (i, phase) in self.phases.iter().enumerate() {
            if i == 0 && !self.labels.has_warmup {
                continue;
            }
            let labels = |extra: &[(&str, &str)]| {
                let mut l = self.labels.common.clone();
                l.push(("phase".into(), PHASES[i].into()));
                l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
                l
            };
            self.phase_series(phase, &labels, &mut out);
        }
        for (name, phase) in &self.names {
            let labels = |extra: &[(&str, &str)]| {
                let mut l = self.labels.common.clone();
                l.push(("phase".into(), PHASES[1].into()));
                l.push(("name".into(), name.clone()));
                l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
                l
            };
            self.phase_series(phase, &labels, &mut out);
        }
        let plain = || self.labels.common.clone();
        if let Some(rate) = self.labels.target_per_s {
            out.push(gauge(
                "candor_target_rate_per_second",
                "The intended request rate of this process (its share with --shard).",
                plain(),
                rate,
            ));
        }
        out.push(gauge(
            "candor_run_elapsed_seconds",
            "Time since the first intended send (warm-up included).",
            plain(),
            self.elapsed_s,
        ));
        out.push(gauge(
            "candor_run_finished",
            "1 once these are the run's final numbers, else 0.",
            plain(),
            f64::from(u8::from(self.done)),
        ));
        Batch {
            timestamp_ms,
            start_unix_ns: self.labels.start_unix_ns,
            series: out,
            last: self.done,
        }
    }

    fn phase_series(&self, phase: &Phase, labels: Labeller<'_>, out: &mut Vec<Series>) {
        if let Some(h) = &phase.hist {
            for (name, help, histo) in [
                (
                    "candor_response_time_seconds",
                    "Response time from the intended send.",
                    &h.response,
                ),
                (
                    "candor_service_time_seconds",
                    "Service time from the actual send.",
                    &h.service,
                ),
                (
                    "candor_send_lag_seconds",
                    "Actual minus intended send time.",
                    &h.send_lag,
                ),
                (
                    "candor_first_byte_seconds",
                    "From the intended send to the response's first byte.",
                    &h.first_byte,
                ),
            ] {
                if name == "candor_first_byte_seconds" && histo.is_empty() {
                    continue;
                }
                out.push(histogram(name, help, labels(&[]), histo));
            }
        }
        if let Some(s) = &phase.stream {
            for (measure, histo) in s.measures() {
                if let (false, Some(name)) = (histo.is_empty(), stream_name(measure)) {
                    out.push(histogram(
                        name,
                        "A stream measure (docs/streams.md).",
                        labels(&[]),
                        histo,
                    ));
                }
            }
            out.push(counter(
                "candor_stream_responses_total",
                "Responses read as streams that delivered an event.",
                labels(&[]),
                s.responses,
            ));
            out.push(counter(
                "candor_stream_events_total",
                "Events of the streamed responses.",
                labels(&[]),
                s.events,
            ));
            if s.is_llm() {
                out.push(counter(
                    "candor_output_tokens_total",
                    "Output tokens of the LLM responses.",
                    labels(&[]),
                    s.output_tokens,
                ));
            }
            // Only in runs with bounds, as on /metrics: a 0 would read as "none met them".
            if self.goodput {
                out.push(counter(
                    "candor_good_requests_total",
                    "Responses that met every per-request objective (--goodput, or the bounds --slo sets), from the intended send.",
                    labels(&[]),
                    s.good,
                ));
            }
        }
        let c = &phase.counts;
        out.push(counter(
            "candor_requests_intended_total",
            "Requests that left the schedule (at the end: with those never sent).",
            labels(&[]),
            c.intended,
        ));
        out.push(counter(
            "candor_requests_completed_total",
            "Requests with a full response that passed.",
            labels(&[]),
            c.completed,
        ));
        for (class, n) in c.errors.by_class() {
            out.push(counter(
                "candor_requests_failed_total",
                "Requests that failed, by class.",
                labels(&[("class", class)]),
                n,
            ));
        }
        for (code, n) in phase.codes.to_map() {
            out.push(counter(
                "candor_responses_total",
                "Responses by HTTP status code.",
                labels(&[("code", &code)]),
                n,
            ));
        }
        if let Some(table) = phase.reply_codes.table() {
            for (code, n) in phase.reply_codes.by_name() {
                out.push(counter(
                    table.series,
                    "Replies by the code their protocol gives them (gRPC: grpc-status).",
                    labels(&[(table.field, &code)]),
                    n,
                ));
            }
        }
        let in_flight = if self.done {
            c.in_flight_at_end
        } else {
            c.intended.saturating_sub(c.completed + c.failed)
        };
        out.push(gauge(
            "candor_requests_in_flight",
            "Requests sent and neither answered nor failed (at the end: unfinished).",
            labels(&[]),
            in_flight as f64,
        ));
    }
}

/// The metric name of a stream measure (`StreamAcc::measures`'s names).
fn stream_name(measure: &str) -> Option<&'static str> {
    Some(match measure {
        "ttft" => "candor_ttft_seconds",
        "ttft_service" => "candor_ttft_service_seconds",
        "itl" => "candor_itl_seconds",
        "tpot" => "candor_tpot_seconds",
        "first_event" => "candor_first_event_seconds",
        "event_gap" => "candor_event_gap_seconds",
        _ => return None,
    })
}

fn histogram(
    name: &'static str,
    help: &'static str,
    labels: Vec<(String, String)>,
    h: &candor_core::Histo,
) -> Series {
    Series {
        name,
        help,
        labels,
        value: Value::Histogram(NativeHistogram::of(h)),
    }
}

fn counter(
    name: &'static str,
    help: &'static str,
    labels: Vec<(String, String)>,
    n: u64,
) -> Series {
    Series {
        name,
        help,
        labels,
        value: Value::Counter(n as f64),
    }
}

fn gauge(name: &'static str, help: &'static str, labels: Vec<(String, String)>, v: f64) -> Series {
    Series {
        name,
        help,
        labels,
        value: Value::Gauge(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::phase_results::FailureClass;
    use candor_core::reply_codes::{ReplyCode, ReplyCodeTable};
    use candor_core::results::IntervalStats;
    use candor_core::workload_results::FailedCheck;

    /// A protocol's reply codes as a test declares them.
    static CODES: ReplyCodeTable = ReplyCodeTable {
        field: "grpc_status",
        series: "candor_grpc_calls_total",
        names: &["OK", "CANCELLED", "UNKNOWN"],
        failure: FailureClass::Grpc,
        check: FailedCheck::Grpc,
    };

    /// An interval with `ok` and `unknown` replies in each phase (`[warm-up, measured]`).
    fn report(replies: [(u64, u64); 2]) -> IntervalReport<'static> {
        let mut codes = [ReplyCodeCounts::default(); 2];
        for (phase, (ok, unknown)) in codes.iter_mut().zip(replies) {
            for (code, n) in [(0, ok), (2, unknown)] {
                for _ in 0..n {
                    phase.record(ReplyCode {
                        table: &CODES,
                        code,
                    });
                }
            }
        }
        // Leaked: a few test books that live as long as the test process.
        let rec: &'static Recorder = Box::leak(Box::default());
        IntervalReport {
            index: 0,
            elapsed_s: 1.0,
            total_s: 3.0,
            length_s: 1.0,
            warmup: false,
            completed: 0,
            failed: 0,
            response_time: IntervalStats::of(&rec.response),
            service_time: IntervalStats::of(&rec.service),
            send_lag: IntervalStats::of(&rec.send_lag),
            totals: Default::default(),
            histograms: rec,
            codes: Box::leak(Box::default()),
            reply_codes: Box::leak(Box::new(codes)),
            stream: None,
            goodput: false,
        }
    }

    fn value(b: &Batch, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        b.series
            .iter()
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
            })
            .map(|s| match s.value {
                Value::Counter(v) | Value::Gauge(v) => v,
                Value::Histogram(_) => f64::NAN,
            })
    }

    #[test]
    fn reply_codes_are_counters_labelled_with_the_code_per_phase() {
        let mut s = PushState::new(RunLabels {
            common: vec![("run_id".into(), "r".into())],
            target_per_s: None,
            has_warmup: true,
            start_unix_ns: 0,
        });
        s.interval(&report([(1, 0), (3, 1)]));
        s.interval(&report([(0, 0), (2, 0)]));
        let b = s.batch(0);
        let calls = |phase, code| {
            value(
                &b,
                "candor_grpc_calls_total",
                &[("run_id", "r"), ("phase", phase), ("grpc_status", code)],
            )
        };
        assert_eq!(calls("measured", "OK"), Some(5.0));
        assert_eq!(calls("measured", "UNKNOWN"), Some(1.0));
        assert_eq!(calls("warmup", "OK"), Some(1.0));
        assert_eq!(calls("warmup", "UNKNOWN"), None, "only codes seen");
        assert_eq!(calls("measured", "CANCELLED"), None);
        // A run without reply codes has no such series.
        let mut plain = PushState::new(RunLabels {
            common: vec![],
            target_per_s: None,
            has_warmup: false,
            start_unix_ns: 0,
        });
        plain.interval(&report([(0, 0), (0, 0)]));
        assert!(!plain
            .batch(0)
            .series
            .iter()
            .any(|s| s.name == "candor_grpc_calls_total"));
    }

    #[test]
    fn good_responses_are_a_counter_only_when_goodput_is_judged() {
        let labels = || RunLabels {
            common: vec![],
            target_per_s: None,
            has_warmup: false,
            start_unix_ns: 0,
        };
        // Leaked: one small test book that lives as long as the test process.
        let stream: &'static StreamAcc = Box::leak(Box::new(StreamAcc {
            good: 3,
            good_service: 2,
            ..Default::default()
        }));
        let mut judged = PushState::new(labels());
        let mut plain = PushState::new(labels());
        for _ in 0..2 {
            let mut r = report([(0, 0), (0, 0)]);
            r.stream = Some(stream);
            plain.interval(&r);
            r.goodput = true;
            judged.interval(&r);
        }
        let good = |s: &PushState| value(&s.batch(0), "candor_good_requests_total", &[]);
        assert_eq!(good(&judged), Some(6.0));
        assert_eq!(good(&plain), None);
    }

    /// A name's books with `n` requests intended and completed, each of `response_ns`.
    fn named_books(n: u64, response_ns: u64) -> PhaseAcc {
        let mut acc = PhaseAcc::new();
        for _ in 0..n {
            acc.rec.record(response_ns, response_ns, 0);
        }
        acc.counts.intended = n;
        acc.counts.completed = n;
        acc
    }

    #[test]
    fn the_final_push_carries_each_request_name_beside_the_totals() {
        let mut s = PushState::new(RunLabels {
            common: vec![("run_id".into(), "r".into())],
            target_per_s: None,
            has_warmup: false,
            start_unix_ns: 0,
        });
        s.interval(&report([(0, 0), (0, 0)]));
        let (fast, slow) = (named_books(3, 1_000_000), named_books(2, 50_000_000));
        s.names(&[("fast".into(), &fast), ("slow".into(), &slow)]);
        let b = s.batch(0);
        let of_name = |metric: &str, name: &str| {
            b.series
                .iter()
                .filter(|x| x.name == metric)
                .filter(|x| x.labels.iter().any(|(k, v)| k == "name" && v == name))
                .collect::<Vec<_>>()
        };
        for (name, n, ns) in [("fast", 3.0, 1e6), ("slow", 2.0, 5e7)] {
            let done = of_name("candor_requests_completed_total", name);
            assert_eq!(done.len(), 1, "{name}");
            assert!(
                matches!(done[0].value, Value::Counter(v) if v == n),
                "{name}"
            );
            assert!(done[0]
                .labels
                .iter()
                .any(|(k, v)| k == "phase" && v == "measured"));
            let h = of_name("candor_response_time_seconds", name);
            let Value::Histogram(h) = &h[0].value else {
                panic!("{name}: a histogram")
            };
            assert_eq!(h.count, n as u64, "{name}");
            // Counted as the HDR bucket's highest equivalent: a hair above the value.
            assert!(
                (h.sum_s / n - ns / 1e9).abs() < ns / 1e9 * 0.01,
                "{name}: {}",
                h.sum_s
            );
        }
        // The totals stay without the label, once each.
        let totals: Vec<_> = b
            .series
            .iter()
            .filter(|x| x.name == "candor_requests_completed_total")
            .filter(|x| !x.labels.iter().any(|(k, _)| k == "name"))
            .collect();
        assert_eq!(totals.len(), 1);
        // No names, no named series.
        s.names(&[]);
        assert!(!s
            .batch(0)
            .series
            .iter()
            .any(|x| x.labels.iter().any(|(k, _)| k == "name")));
    }
}
