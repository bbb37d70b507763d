//! The HTML report's parts for streamed responses (`--stream`, `--llm`): the spectra of TTFT,
//! ITL, TPOT and the event measures on the percentile axis the response-time spectrum uses, an
//! LLM run's output tokens per second over time, and a summary table per measure. Everything
//! comes from the results' stream histograms (`extra`) and intervals; a run without streams gets
//! none of it and its page is unchanged.

use super::error::HtmlError;
use super::format::{esc, p99_max, spectrum, summary_row};
use candor_core::interval_stats::IntervalStats;
use candor_core::results::RunResults;
use candor_core::stream_measures::StreamMeasure;
use candor_core::units::format_count;
use candor_core::{new_histogram, Histo};
use serde_json::{json, Value};

/// The chart data of one run's streams (`run.stream` in the page's data), `None` when the run
/// recorded no stream measure.
pub(crate) fn chart_data(
    label: &str,
    r: &RunResults,
    xs: &[f64],
) -> Result<Option<Value>, HtmlError> {
    let mut spectra = Vec::new();
    for m in r.stream_measures() {
        let Some(h) = r.stream_histogram(m) else {
            continue;
        };
        let h = h.map_err(|cause| HtmlError {
            label: label.to_string(),
            what: m.name().into(),
            cause,
        })?;
        let (h, zero) = without_zero_gaps(m, h);
        if h.is_empty() {
            continue;
        }
        let mut legend = p99_max(&h);
        if zero > 0 {
            legend.push_str(&format!(
                " \u{b7} {} zero-length not drawn",
                format_count(zero)
            ));
        }
        let one = json!({
            "name": m.name(),
            "label": m.label(),
            // The actual-send twin is drawn dashed beside TTFT, as service time beside response.
            "dash": m == StreamMeasure::TtftService,
            // The first event is usually the first token: drawn wide and pale beneath TTFT, so
            // that both show where they coincide.
            "under": m == StreamMeasure::FirstEvent,
            "values": spectrum(&h, xs),
            "legend": legend,
            "zero": zero,
        });
        if m == StreamMeasure::FirstEvent {
            spectra.insert(0, one);
        } else {
            spectra.push(one);
        }
    }
    // Embeddings have no output tokens: their inputs/s are in the headline card.
    let embeddings = r
        .main
        .stream
        .as_ref()
        .and_then(|s| s.llm)
        .is_some_and(|t| t.inputs > 0);
    let tokens = !embeddings
        && r.intervals.iter().any(|iv| {
            iv.stream
                .as_ref()
                .is_some_and(|s| s.output_tokens.is_some())
        });
    if spectra.is_empty() && !tokens {
        return Ok(None);
    }
    let mut out = json!({ "spectra": spectra });
    if let Some(t) = ttft_over_time(r) {
        out["ttft_time"] = t;
    }
    if let Some(g) = goodput_over_time(r) {
        out["goodput_time"] = g;
    }
    if tokens {
        let per_s: Vec<Option<f64>> = r
            .intervals
            .iter()
            .map(|iv| iv.stream.as_ref().and_then(|s| s.output_tokens_per_s))
            .collect();
        out["tokens"] = json!({
            "t": r.intervals.iter().map(|iv| iv.start_s + iv.length_s).collect::<Vec<_>>(),
            "per_s": per_s,
            "mean_per_s": r.main.stream.as_ref().and_then(|s| s.llm).map(|t| t.output_tokens_per_s),
        });
    }
    Ok(Some(out))
}

/// The gaps of zero length (events that came in one read, such as a usage chunk and `[DONE]`
/// right after the last token, recorded at the histogram's floor of 1 ns) taken out of a gap
/// measure's histogram, and their count: drawn at 1 ns they would stretch the latency axis over
/// decades that hold nothing else. Other measures are returned whole.
fn without_zero_gaps(m: StreamMeasure, h: Histo) -> (Histo, u64) {
    if !matches!(m, StreamMeasure::Itl | StreamMeasure::EventGap) {
        return (h, 0);
    }
    let zero = h.count_between(0, 1);
    if zero == 0 {
        return (h, 0);
    }
    let mut rest = new_histogram();
    for v in h.iter_recorded() {
        if v.value_iterated_to() > 1 {
            rest.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
    (rest, zero)
}

/// TTFT per interval (p50, p99, max by interval of completion), `None` when no interval has it.
fn ttft_over_time(r: &RunResults) -> Option<Value> {
    let stats: Vec<Option<IntervalStats>> = r
        .intervals
        .iter()
        .map(|iv| {
            iv.stream
                .as_ref()
                .and_then(|s| s.stats(StreamMeasure::Ttft))
        })
        .collect();
    if stats.iter().all(Option::is_none) {
        return None;
    }
    let col = |f: fn(&IntervalStats) -> u64| -> Vec<Option<u64>> {
        stats.iter().map(|s| s.as_ref().map(f)).collect()
    };
    Some(json!({
        "t": r.intervals.iter().map(|iv| iv.start_s + iv.length_s).collect::<Vec<_>>(),
        "p50": col(|s| s.p50_ns),
        "p99": col(|s| s.p99_ns),
        "max": col(|s| s.max_ns),
    }))
}

/// Goodput per interval (good responses per second beside completed per second, both by
/// interval of completion, as the intervals book them), `None` in a run that judged no goodput.
fn goodput_over_time(r: &RunResults) -> Option<Value> {
    if !has_goodput_over_time(r) {
        return None;
    }
    let per_s = |n: u64, length_s: f64| {
        if length_s > 0.0 {
            n as f64 / length_s
        } else {
            0.0
        }
    };
    Some(json!({
        "t": r.intervals.iter().map(|iv| iv.start_s + iv.length_s).collect::<Vec<_>>(),
        "good_per_s": r.intervals.iter().map(|iv| iv.stream.as_ref().and_then(|s| s.good_per_s)).collect::<Vec<_>>(),
        "completed_per_s": r.intervals.iter().map(|iv| per_s(iv.completed, iv.length_s)).collect::<Vec<_>>(),
        "mean_per_s": r.main.stream.as_ref().and_then(|s| s.goodput.as_ref()).map(|g| g.per_s),
    }))
}

/// Whether an interval of `r` carries goodput (the run judged it: `--goodput`, or `--slo` bounds).
fn has_goodput_over_time(r: &RunResults) -> bool {
    r.intervals
        .iter()
        .any(|iv| iv.stream.as_ref().is_some_and(|s| s.good.is_some()))
}

/// The section: per run with streams, its spectra chart and tokens/s chart, then a table per
/// measure across the runs. Empty when no run has streams.
pub(crate) fn section(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let with: Vec<usize> = (0..runs.len())
        .filter(|&i| {
            let r = &runs[i].1;
            !r.stream_measures().is_empty() || r.main.stream.is_some()
        })
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section><h2>Streamed responses</h2><p class=\"note\">Each measure at each percentile, on \
         the spectrum's 1/(1\u{2212}p) axis. TTFT (time to first token) and first event run from the \
         intended send, so they include any wait for a connection; the dashed TTFT runs from the \
         actual send, what a client that times from its own send reports. ITL: each gap between \
         content chunks; TPOT: (last token \u{2212} first token) / (output tokens \u{2212} 1). \
         TTFT over time, goodput over time (responses per second that met every per-request \
         objective, beside those completed; only with --goodput or --slo bounds) and output tokens \
         per second are by interval of completion. Gaps of zero \
         length (events that came in one read, as a usage chunk and [DONE] after the last token) \
         are counted, not drawn.</p>",
    );
    for &i in &with {
        let (label, r) = &runs[i];
        out.push_str(&format!(
            "<h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3>",
            palette[i % palette.len()],
            esc(label)
        ));
        if !r.stream_measures().is_empty() {
            out.push_str(&format!(
                "<div class=\"chart\" id=\"stream-spectrum-{i}\"></div>"
            ));
        }
        if r.intervals
            .iter()
            .any(|iv| iv.stream.as_ref().is_some_and(|s| s.ttft.is_some()))
        {
            out.push_str(&format!(
                "<div class=\"chart short\" id=\"ttft-time-{i}\"></div>"
            ));
        }
        if has_goodput_over_time(r) {
            out.push_str(&format!(
                "<div class=\"chart short\" id=\"goodput-time-{i}\"></div>"
            ));
        }
        if r.main.stream.as_ref().is_some_and(|s| s.llm.is_some()) {
            out.push_str(&format!(
                "<div class=\"chart short\" id=\"tokens-{i}\"></div>"
            ));
        }
    }
    out.push_str(&super::stream_tables::settings_table(runs, palette));
    out.push_str(&super::stream_tables::goodput_table(runs, palette));
    out.push_str(&super::stream_tables::conversations_table(runs, palette));
    out.push_str(&super::stream_tables::zero_gaps_note(runs));
    for m in StreamMeasure::ALL {
        if runs.iter().all(|(_, r)| r.main.stream_summary(m).is_none()) {
            continue;
        }
        out.push_str(&format!(
            "<h3>{}</h3><table class=\"grid num\"><thead><tr><th>Run</th><th>count</th><th>p50</th><th>p90</th>\
             <th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>mean</th><th>stdev</th></tr></thead><tbody>",
            esc(m.label())
        ));
        for (i, (label, r)) in runs.iter().enumerate() {
            let Some(s) = r.main.stream_summary(m) else {
                continue;
            };
            out.push_str(&format!(
                "<tr><th><span class=\"swatch\" style=\"background:{}\"></span>{}</th><td>{}</td>{}</tr>",
                palette[i % palette.len()],
                esc(label),
                format_count(s.count),
                summary_row(s)
            ));
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
    out
}
