//! The live view's memory of a run: the measured window's histograms accumulated from the
//! interval reports, the counts, and the JSON event of each interval (pure, no I/O).

use crate::exposition::{Buckets, MetricsSnapshot};
use candor_core::hist::value_at;
use candor_core::results::{CodeCounts, IntervalStats, RequestCounts};
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Recorder;
use candor_load::engine::books::StreamAcc;
use candor_load::load_run::RunOutcome;
use candor_load::IntervalReport;
use serde_json::{json, Value};

/// What is known of a run before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub target: String,
    /// This process's intended rate (its share with `--shard`); `None` in a closed loop.
    pub target_per_s: Option<f64>,
    /// Warm-up plus measured window, seconds.
    pub total_s: f64,
    pub warmup_s: f64,
    /// This process's shard index when the schedule is sharded.
    pub shard: Option<u32>,
    /// A label for the run shown on the page (e.g. the sweep step).
    pub label: String,
}

/// Percentiles of the cumulative spectrum sent to the page (the max travels separately).
const SPECTRUM: [f64; 16] = [
    0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.8, 99.9, 99.95, 99.98, 99.99, 99.995,
    99.999,
];

/// Send lag p99 above this in an interval means requests commonly left late (as in the report).
const LAG_WARN_NS: u64 = 1_000_000;

/// The accumulated state of one run.
pub struct LiveState {
    pub info: RunInfo,
    /// Measured window so far, by completion time (intervals that start after the warm-up).
    measured: Recorder,
    totals: [RequestCounts; 2],
    /// Responses of the measured window by status code, so far.
    codes: CodeCounts,
    /// gRPC calls of the measured window by `grpc-status`, so far (all zero for other protocols).
    reply_codes: candor_core::reply_codes::ReplyCodeCounts,
    /// Streamed responses of the measured window so far (runs with `--stream` or `--llm`).
    stream: Option<Box<StreamAcc>>,
    /// Goodput is judged (the intervals say so): `stream`'s good responses are a series.
    goodput: bool,
    elapsed_s: f64,
    done: bool,
    /// 1 for the first run of the process, 2 for the next (sweep and capacity steps).
    run: u32,
}

fn stats_json(s: &IntervalStats) -> Value {
    json!({
        "p50_ns": s.p50_ns,
        "p90_ns": s.p90_ns,
        "p99_ns": s.p99_ns,
        "p999_ns": s.p999_ns,
        "max_ns": s.max_ns,
        "count": s.count,
    })
}

/// Failures by class, every class (`check` included), as the results name them.
/// An interval's streamed responses in its event: each measure's percentiles, the events, and
/// an LLM run's output tokens and tokens per second.
fn stream_json(s: &StreamAcc, length_s: f64) -> Value {
    let mut v = json!({ "responses": s.responses, "events": s.events });
    for (name, h) in s.measures() {
        if !h.is_empty() {
            v[name] = stats_json(&IntervalStats::of(h));
        }
    }
    if s.is_llm() {
        v["output_tokens"] = json!(s.output_tokens);
        v["output_tokens_per_s"] = json!(if length_s > 0.0 {
            s.output_tokens as f64 / length_s
        } else {
            0.0
        });
    }
    v
}

/// What `/metrics` shows of the streams so far; `goodput` whether the run judges goodput.
fn stream_snapshot(s: &StreamAcc, goodput: bool) -> crate::exposition::StreamSnapshot {
    use candor_core::stream_measures::StreamMeasure;
    crate::exposition::StreamSnapshot {
        measures: s
            .measures()
            .into_iter()
            .filter(|(_, h)| !h.is_empty())
            .filter_map(|(name, h)| Some((StreamMeasure::of_name(name)?, Buckets::of(h))))
            .collect(),
        responses: s.responses,
        events: s.events,
        output_tokens: s.is_llm().then_some(s.output_tokens),
        good: goodput.then_some(s.good),
    }
}

fn failures_json(c: &RequestCounts) -> Value {
    Value::Object(
        c.errors
            .by_class()
            .into_iter()
            .map(|(class, n)| (class.to_string(), json!(n)))
            .collect(),
    )
}

/// Responses received in interval `r`, whatever their status or checks (answered but failed
/// is not unanswered): its responses by code, or its completed requests when the protocol has
/// no status (raw TCP).
fn responses(r: &IntervalReport) -> u64 {
    let coded = r.codes[0].total() + r.codes[1].total();
    coded.max(r.completed)
}

/// `[[percentile, ns], ...]` of `h` up to the finest percentile its count resolves.
fn spectrum_json(h: &candor_core::Histo) -> Value {
    let n = h.len() as f64;
    let points: Vec<Value> = SPECTRUM
        .iter()
        .filter(|&&p| n > 0.0 && 1.0 / (1.0 - p / 100.0) <= n)
        .map(|&p| json!([p, value_at(h, p)]))
        .collect();
    Value::Array(points)
}

impl LiveState {
    pub fn new(info: RunInfo, run: u32) -> LiveState {
        LiveState {
            info,
            run,
            measured: Recorder::new(),
            totals: [RequestCounts::default(); 2],
            codes: CodeCounts::default(),
            reply_codes: Default::default(),
            stream: None,
            goodput: false,
            elapsed_s: 0.0,
            done: false,
        }
    }

    fn in_flight(&self) -> u64 {
        self.totals
            .iter()
            .map(|c| c.intended.saturating_sub(c.completed + c.failed))
            .sum()
    }

    fn requests_json(&self) -> Value {
        let m = &self.totals[1];
        json!({
            "intended": m.intended,
            "completed": m.completed,
            "failed": m.failed,
            "in_flight": self.in_flight(),
        })
    }

    /// Plain-words warnings about the last interval and the run so far, worded as the text
    /// report words them, for the page to show loudly.
    fn warnings(&self, r: Option<&IntervalReport>) -> Vec<String> {
        let mut w = Vec::new();
        if let (Some(r), Some(target)) = (r, self.info.target_per_s) {
            let achieved = responses(r) as f64 / r.length_s;
            // A partial last interval or the first one (connections opening) says little.
            let full = (r.length_s - 1.0).abs() < 0.05 && r.index > 0;
            if full && candor_core::thresholds::fell_behind(achieved, target) {
                w.push(format!(
                    "achieved rate {} is below the target {}: the target (or candor) is not keeping up",
                    format_rate(achieved),
                    format_rate(target)
                ));
            }
            if r.send_lag.p99_ns > LAG_WARN_NS {
                w.push(format!(
                    "send lag p99 is {} in the last interval: requests are waiting to be sent",
                    format_ns(r.send_lag.p99_ns as f64)
                ));
            }
        }
        let late: u64 = self.totals.iter().map(|c| c.generator_late).sum();
        if late > 0 {
            w.push(format!(
                "the generator itself sent {} requests more than 1ms late while a connection was free: \
                 candor is short of CPU; the numbers are pessimistic",
                format_count(late)
            ));
        }
        w
    }

    /// Takes one interval report; returns its event.
    pub fn interval(&mut self, r: &IntervalReport) -> Value {
        self.goodput = r.goodput;
        if !r.warmup {
            self.measured.add(r.histograms);
            if let Some(s) = r.stream {
                self.stream.get_or_insert_with(Box::default).add(s);
            }
        }
        self.totals = r.totals;
        self.codes.add(&r.codes[1]);
        self.reply_codes.merge(&r.reply_codes[1]);
        self.elapsed_s = r.elapsed_s;
        let mut event = json!({
            "index": r.index,
            "elapsed_s": r.elapsed_s,
            "total_s": r.total_s,
            "interval_s": r.length_s,
            "warmup": r.warmup,
            "label": self.info.label,
            "run": self.run,
            "requests": self.requests_json(),
            "failures": failures_json(&self.totals[1]),
            "status_codes": self.codes.to_map(),
            "generator_late": self.totals.iter().map(|c| c.generator_late).sum::<u64>(),
            "achieved_per_s": responses(r) as f64 / r.length_s,
            "target_per_s": self.info.target_per_s,
            "response_time": stats_json(&r.response_time),
            "service_time": stats_json(&r.service_time),
            "send_lag": stats_json(&r.send_lag),
            "spectrum": spectrum_json(&self.measured.response),
            "spectrum_max_ns": value_at(&self.measured.response, 100.0),
            "warnings": self.warnings(Some(r)),
            "done": false,
        });
        self.add_reply_codes(&mut event);
        if let Some(s) = r.stream {
            event["stream"] = stream_json(s, r.length_s);
        }
        event
    }

    /// The events of a protocol whose replies carry codes (gRPC's `grpc-status`) also carry
    /// the replies by code name, under the results' field; other runs' are unchanged.
    fn add_reply_codes(&self, event: &mut Value) {
        if let Some(field) = self.reply_codes.field() {
            event[field] = json!(self.reply_codes.by_name());
        }
    }

    /// Takes the run's final numbers; returns the closing event. Counters only grow: the final
    /// counts include everything the interval reports had.
    pub fn finish(&mut self, outcome: &RunOutcome, stopped_early: bool, last: bool) -> Value {
        self.totals[1] = outcome.main.counts;
        self.codes = outcome.main.codes.clone();
        self.reply_codes = outcome.main.reply_codes;
        if let Some(s) = &outcome.main.stream {
            self.stream = Some(s.clone());
        }
        if let Some(w) = &outcome.warmup {
            self.totals[0] = w.counts;
        }
        self.done = true;
        let main = &outcome.main.recorder;
        let m = &outcome.main.counts;
        let mut event = json!({
            "done": true,
            "last": last,
            "run": self.run,
            "stopped_early": stopped_early,
            "elapsed_s": self.elapsed_s,
            "total_s": self.info.total_s,
            "label": self.info.label,
            "requests": {
                "intended": m.intended,
                "completed": m.completed,
                "failed": m.failed,
                "in_flight": self.totals.iter().map(|c| c.in_flight_at_end).sum::<u64>(),
            },
            "failures": failures_json(m),
            "status_codes": self.codes.to_map(),
            "generator_late": self.totals.iter().map(|c| c.generator_late).sum::<u64>(),
            "target_per_s": self.info.target_per_s,
            "achieved_per_s": m.responses() as f64 / (outcome.main.duration_ns as f64 / 1e9),
            "summary": {
                "response_time": stats_json(&IntervalStats::of(&main.response)),
                "service_time": stats_json(&IntervalStats::of(&main.service)),
                "send_lag": stats_json(&IntervalStats::of(&main.send_lag)),
            },
            "spectrum": spectrum_json(&main.response),
            "spectrum_max_ns": value_at(&main.response, 100.0),
            "warnings": self.warnings(None),
        });
        self.add_reply_codes(&mut event);
        event
    }

    /// What `/metrics` shows now.
    pub fn metrics(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            shard: self.info.shard,
            response: Buckets::of(&self.measured.response),
            service: Buckets::of(&self.measured.service),
            send_lag: Buckets::of(&self.measured.send_lag),
            first_byte: (!self.measured.first_byte.is_empty())
                .then(|| Buckets::of(&self.measured.first_byte)),
            stream: self
                .stream
                .as_deref()
                .map(|s| stream_snapshot(s, self.goodput)),
            measured: self.totals[1],
            codes: self.codes.to_map(),
            reply_codes: self.reply_codes,
            in_flight: if self.done {
                self.totals.iter().map(|c| c.in_flight_at_end).sum()
            } else {
                self.in_flight()
            },
            target_per_s: self.info.target_per_s,
            elapsed_s: self.elapsed_s,
            done: self.done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            target: "http://127.0.0.1:1/".into(),
            target_per_s: Some(1000.0),
            total_s: 3.0,
            warmup_s: 1.0,
            shard: None,
            label: String::new(),
        }
    }

    fn report(
        index: u64,
        warmup: bool,
        values: &[u64],
        totals: [RequestCounts; 2],
    ) -> IntervalReport<'static> {
        let mut rec = Recorder::new();
        for &v in values {
            rec.record(v, v / 2, 1_000);
        }
        // Leaked: a few test histograms that live as long as the test process.
        let rec: &'static Recorder = Box::leak(Box::new(rec));
        IntervalReport {
            index,
            elapsed_s: index as f64 + 1.0,
            total_s: 3.0,
            length_s: 1.0,
            warmup,
            completed: values.len() as u64,
            failed: 0,
            response_time: IntervalStats::of(&rec.response),
            service_time: IntervalStats::of(&rec.service),
            send_lag: IntervalStats::of(&rec.send_lag),
            totals,
            histograms: rec,
            codes: Box::leak(Box::default()),
            reply_codes: Box::leak(Box::default()),
            stream: None,
            goodput: false,
        }
    }

    fn counts(intended: u64, completed: u64, failed: u64) -> RequestCounts {
        RequestCounts {
            intended,
            completed,
            failed,
            ..Default::default()
        }
    }

    #[test]
    fn event_has_the_documented_shape() {
        let mut s = LiveState::new(info(), 1);
        let e = s.interval(&report(
            1,
            false,
            &[1_000_000, 2_000_000, 3_000_000],
            [counts(5, 5, 0), counts(4, 3, 0)],
        ));
        for key in [
            "elapsed_s",
            "total_s",
            "achieved_per_s",
            "target_per_s",
            "warmup",
            "spectrum",
            "warnings",
        ] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
        assert_eq!(e["done"], false);
        assert_eq!(e["elapsed_s"], 2.0);
        assert_eq!(e["requests"]["intended"], 4);
        assert_eq!(e["requests"]["completed"], 3);
        assert_eq!(e["requests"]["failed"], 0);
        assert_eq!(e["requests"]["in_flight"], 1);
        assert_eq!(e["achieved_per_s"], 3.0);
        assert_eq!(e["target_per_s"], 1000.0);
        for m in ["response_time", "service_time", "send_lag"] {
            for k in ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "count"] {
                assert!(e[m][k].is_u64(), "{m}.{k} in {e}");
            }
            assert_eq!(e[m]["count"], 3);
        }
        assert_eq!(
            e["response_time"]["p50_ns"],
            2_000_000u64.next_multiple_of(1024) - 1
        );
        // 3 values resolve percentiles up to 1/(1-p) <= 3, i.e. p <= 66.7.
        assert_eq!(e["spectrum"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn check_failures_and_status_codes_are_in_the_events_and_metrics() {
        let mut s = LiveState::new(info(), 1);
        // 1,000 answered with 200 in the interval, every one failing its body check.
        let mut measured = counts(1000, 0, 1000);
        measured.errors.check = 1000;
        let mut r = report(1, false, &[1_000; 1000], [counts(0, 0, 0), measured]);
        r.completed = 0;
        r.failed = 1000;
        let mut codes: [CodeCounts; 2] = Default::default();
        for _ in 0..1000 {
            codes[1].count(200);
        }
        r.codes = Box::leak(Box::new(codes));
        let e = s.interval(&r);
        assert_eq!(e["failures"]["check"], 1000, "{e}");
        assert_eq!(e["status_codes"]["200"], 1000, "{e}");
        // Answered but failed is not unanswered: 1,000 responses in 1 s, at the target.
        assert_eq!(e["achieved_per_s"], 1000.0);
        assert!(
            !e["warnings"].to_string().contains("below the target"),
            "{e}"
        );
        let m = s.metrics();
        assert_eq!(m.codes.get("200"), Some(&1000));
        assert_eq!(m.measured.errors.check, 1000);
    }

    #[test]
    fn warm_up_intervals_stay_out_of_the_measured_histograms() {
        let mut s = LiveState::new(info(), 1);
        s.interval(&report(
            0,
            true,
            &[9_000_000; 4],
            [counts(4, 4, 0), counts(0, 0, 0)],
        ));
        assert_eq!(s.metrics().response.count, 0);
        s.interval(&report(
            1,
            false,
            &[1_000; 2],
            [counts(4, 4, 0), counts(2, 2, 0)],
        ));
        let m = s.metrics();
        assert_eq!(m.response.count, 2);
        assert_eq!(m.response.cumulative[0], 2);
        assert_eq!(m.measured.completed, 2);
    }

    #[test]
    fn falling_behind_is_stated() {
        let mut s = LiveState::new(info(), 1);
        let mut r = report(1, false, &[1_000; 10], [counts(0, 0, 0), counts(10, 10, 0)]);
        assert_eq!(s.interval(&r)["warnings"].as_array().unwrap().len(), 1);
        r.totals[1].generator_late = 7;
        r.send_lag.p99_ns = 5_000_000;
        let w = s.interval(&r)["warnings"].to_string();
        assert!(w.contains("below the target"), "{w}");
        assert!(w.contains("send lag p99"), "{w}");
        assert!(w.contains("7 requests more than 1ms late"), "{w}");
        // At the target rate and on time: no warning.
        let ok = report(
            2,
            false,
            &[1_000; 1000],
            [counts(0, 0, 0), counts(1000, 1000, 0)],
        );
        let mut s = LiveState::new(info(), 1);
        assert_eq!(s.interval(&ok)["warnings"], json!([]));
    }

    #[test]
    fn good_responses_of_the_measured_window_are_a_metric_only_when_goodput_is_judged() {
        // Leaked: one small test book that lives as long as the test process.
        let stream: &'static StreamAcc = Box::leak(Box::new(StreamAcc {
            good: 4,
            ..Default::default()
        }));
        let good = |judged: bool| {
            let mut s = LiveState::new(info(), 1);
            for (index, warmup) in [(0, true), (1, false), (2, false)] {
                let mut r = report(index, warmup, &[1_000], [counts(1, 1, 0); 2]);
                r.stream = Some(stream);
                r.goodput = judged;
                s.interval(&r);
            }
            s.metrics().stream.and_then(|st| st.good)
        };
        // Two measured intervals of 4; the warm-up's are not in the measured window.
        assert_eq!(good(true), Some(8));
        assert_eq!(good(false), None);
    }
}
