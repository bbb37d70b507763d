//! One step of a sweep or capacity search of an LLM server (`--llm`): the figures it is read
//! for beside response time (goodput, TTFT from the intended and from the actual send, TPOT,
//! ITL, output tokens per second), taken from the step's results.

use candor_core::results::RunResults;
use candor_core::units::format_ns;
use candor_core::Summary;

/// One step's LLM figures; a figure the step did not record is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmStep {
    pub offered_per_s: f64,
    /// Requests per second that met every per-request objective, and their share of intended.
    pub goodput: Option<(f64, f64)>,
    pub ttft_p99_ns: Option<u64>,
    pub ttft_service_p99_ns: Option<u64>,
    pub tpot_p99_ns: Option<u64>,
    pub itl_p99_ns: Option<u64>,
    /// Delivered during the measured window ([`delivered_tokens_per_s`]), else the phase's.
    pub output_tokens_per_s: Option<f64>,
    /// Embeddings runs: the inputs embedded per second during the measured window (as
    /// [`delivered_tokens_per_s`] counts tokens), else the phase's; `None` for other runs.
    pub inputs_per_s: Option<f64>,
}

/// Output tokens delivered per second during the measured window, from the intervals whose
/// streams ended inside it, as `saturation::throughput` counts completions: the phase's own
/// figure counts the tokens of the requests *intended* in the window, those that ended in the
/// drain included, which overstates what a saturated server delivered. `None` without such
/// intervals (under half a second of them).
pub fn delivered_tokens_per_s(results: &RunResults) -> Option<f64> {
    delivered_per_s(results, |s| s.output_tokens)
}

/// Embeddings: the inputs embedded per second during the measured window, counted as
/// [`delivered_tokens_per_s`] counts tokens.
pub fn delivered_inputs_per_s(results: &RunResults) -> Option<f64> {
    delivered_per_s(results, |s| s.inputs)
}

/// What `count` says of each interval whose streams ended inside the measured window, per
/// second of those intervals; `None` when none counts it (or under half a second of them).
fn delivered_per_s(
    results: &RunResults,
    count: impl Fn(&candor_core::stream_measures::IntervalStream) -> Option<u64>,
) -> Option<f64> {
    let warm = results.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    let end = warm + results.main.duration_s;
    let inside: Vec<_> = results
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.start_s >= warm - 1e-6 && i.start_s + i.length_s <= end + 1e-6)
        .collect();
    let counted = inside
        .iter()
        .any(|i| i.stream.as_ref().is_some_and(|st| count(st).is_some()));
    let total: u64 = inside
        .iter()
        .filter_map(|i| i.stream.as_ref().and_then(&count))
        .sum();
    let secs: f64 = inside.iter().map(|i| i.length_s).sum();
    (counted && secs >= 0.5).then(|| total as f64 / secs)
}

fn p99(s: &Option<Summary>) -> Option<u64> {
    s.as_ref().filter(|s| s.count > 0).and_then(|s| s.at(99.0))
}

impl LlmStep {
    /// The figures of a step run at `offered_per_s`; `None` for a step that is not an LLM run.
    pub fn of(offered_per_s: f64, r: &RunResults) -> Option<LlmStep> {
        let m = &r.main;
        let llm = m.stream.as_ref().and_then(|s| s.llm)?;
        Some(LlmStep {
            offered_per_s,
            goodput: m
                .stream
                .as_ref()
                .and_then(|s| s.goodput.as_ref())
                .map(|g| (g.per_s, g.fraction)),
            ttft_p99_ns: p99(&m.ttft),
            ttft_service_p99_ns: p99(&m.ttft_service),
            tpot_p99_ns: p99(&m.tpot),
            itl_p99_ns: p99(&m.itl),
            output_tokens_per_s: Some(delivered_tokens_per_s(r).unwrap_or(llm.output_tokens_per_s)),
            inputs_per_s: (llm.inputs > 0 || delivered_inputs_per_s(r).is_some())
                .then(|| delivered_inputs_per_s(r).unwrap_or(llm.inputs_per_s)),
        })
    }

    /// The words a step's progress line ends with.
    pub fn suffix(&self) -> String {
        let ns = |v: Option<u64>| v.map_or("-".to_string(), |v| format_ns(v as f64));
        let mut out = format!(
            "; TTFT p99 {} (actual send {}), TPOT p99 {}, ITL p99 {}, {:.1} tokens/s",
            ns(self.ttft_p99_ns),
            ns(self.ttft_service_p99_ns),
            ns(self.tpot_p99_ns),
            ns(self.itl_p99_ns),
            self.output_tokens_per_s.unwrap_or(0.0)
        );
        if let Some(inputs) = self.inputs_per_s {
            out.push_str(&format!(", {inputs:.1} inputs/s"));
        }
        if let Some((per_s, share)) = self.goodput {
            out.push_str(&format!(", goodput {per_s:.2}/s ({:.1}%)", share * 100.0));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{delivered_inputs_per_s, delivered_tokens_per_s};
    use candor_core::interval_stats::IntervalStats;
    use candor_core::results::{EncodedHistograms, Interval};
    use candor_core::stream_measures::IntervalStream;

    fn interval(start_s: f64, warmup: bool, tokens: u64) -> Interval {
        Interval {
            start_s,
            length_s: 1.0,
            warmup,
            completed: 1,
            failed: 0,
            response_time: IntervalStats::default(),
            service_time: IntervalStats::default(),
            send_lag: IntervalStats::default(),
            first_byte: None,
            histograms: EncodedHistograms {
                response_time: String::new(),
                service_time: String::new(),
                send_lag: String::new(),
                first_byte: None,
            },
            stream: Some(IntervalStream::of(1, 9, Some(tokens), 1.0, [])),
        }
    }

    #[test]
    fn delivered_tokens_count_only_intervals_inside_the_measured_window() {
        let mut r = crate::test_support::empty_run(Some(10.0), 10.0);
        r.main.duration_s = 2.0;
        assert_eq!(delivered_tokens_per_s(&r), None);
        let mut warm = r.main.clone();
        warm.duration_s = 1.0;
        r.warmup = Some(warm);
        // Warm-up [0,1), window [1,3), drain [3,4): only the window's 256 + 264 count.
        r.intervals = vec![
            interval(0.0, true, 248),
            interval(1.0, false, 256),
            interval(2.0, false, 264),
            interval(3.0, false, 500),
        ];
        assert_eq!(delivered_tokens_per_s(&r), Some(260.0));
        assert_eq!(delivered_inputs_per_s(&r), None, "no embeddings");
        // Embeddings: inputs counted the same way.
        for (iv, n) in r.intervals.iter_mut().zip([40, 80, 82, 200]) {
            iv.stream = iv.stream.take().map(|s| s.with_inputs(n, 1.0));
        }
        assert_eq!(delivered_inputs_per_s(&r), Some(81.0));
        for iv in &mut r.intervals {
            iv.stream = None;
        }
        assert_eq!(delivered_tokens_per_s(&r), None);
    }
}
