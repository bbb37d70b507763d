//! The report of streamed responses (`--stream`, `--llm`): the events' and tokens' measures
//! beside each other (TTFT from the intended send next to its actual-send twin, ITL, TPOT,
//! first event, event gap), then the counts: events per response, failed streams by name, and
//! an LLM run's output tokens with where their count came from and their rate over time, and
//! `--goodput`'s requests per second meeting every per-request objective.

use candor_core::hist::{Statistic, SUMMARY_ROWS};
use candor_core::results::{Interval, PhaseResults};
use candor_core::table::{Column, TextTable};
use candor_core::units::{format_count, format_ns};
use candor_core::Summary;
use std::fmt::Write as _;

/// The section, empty when the phase had no streams.
pub fn stream_section(p: &PhaseResults) -> String {
    let Some(s) = &p.stream else {
        return String::new();
    };
    let mut out = String::new();
    let columns: Vec<(&str, &Summary)> = [
        ("ttft", &p.ttft),
        ("ttft (sent)", &p.ttft_service),
        ("itl", &p.itl),
        ("tpot", &p.tpot),
        ("first event", &p.first_event),
        ("event gap", &p.event_gap),
    ]
    .into_iter()
    .filter_map(|(name, m)| m.as_ref().map(|m| (name, m)))
    .collect();
    if !columns.is_empty() {
        let mut layout = vec![Column::left(10)];
        layout.extend(columns.iter().map(|_| Column::right(12)));
        let mut table = TextTable::new(layout);
        let mut head = vec![""];
        head.extend(columns.iter().map(|(name, _)| *name));
        table.row(&head);
        for row in SUMMARY_ROWS {
            let mut cells = vec![row.label.to_string()];
            cells.extend(columns.iter().map(|(_, m)| match row.statistic {
                Statistic::Percentile(q) => format_ns(m.at(q).unwrap_or(0) as f64),
                Statistic::Mean => format_ns(m.mean_ns),
            }));
            table.row(&cells);
        }
        let mut cells = vec!["samples".to_string()];
        cells.extend(columns.iter().map(|(_, m)| format_count(m.count)));
        table.row(&cells);
        out.push_str(&table.finish());
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        out.push_str(&legend(&names));
    }
    if s.llm.is_some_and(|t| t.inputs > 0) {
        // Embeddings are read whole: they have no events to count.
        out.push_str("  answers:  embeddings, each read whole");
    } else {
        let _ = write!(
            out,
            "  streams:  {} responses delivered {} events ({:.1} per response)",
            format_count(s.responses),
            format_count(s.events),
            s.events_per_response
        );
    }
    if !s.failures.is_empty() {
        let named: Vec<String> = s
            .failures
            .iter()
            .map(|(k, n)| format!("{k} {}", format_count(*n)))
            .collect();
        let _ = write!(out, "; failed streams: {}", named.join("  "));
    }
    out.push('\n');
    for name in s.failures.keys() {
        if let Some(words) = failure_words(name) {
            let _ = writeln!(out, "    {name}: {words}");
        }
    }
    if let Some(t) = &s.llm {
        out.push_str(&token_lines(t));
    }
    if let Some(g) = &s.goodput {
        let _ = writeln!(
            out,
            "  goodput:  {:.2} req/s meet {} ({} requests, {:.1}% of intended); timed from the actual send: {:.2} req/s ({:.1}%)",
            g.per_s,
            g.slo,
            format_count(g.good),
            g.fraction * 100.0,
            g.per_s_service,
            g.fraction_service * 100.0
        );
    }
    if let Some(c) = &p.conversations {
        out.push_str(&conversation_line(c));
    }
    out
}

/// A multi-turn run's conversations: how many started and how each ended.
fn conversation_line(c: &candor_core::results::Conversations) -> String {
    format!(
        "  conversations: {} started, {} completed every turn, {} cut short (a turn failed or \
         was outstanding at the end {}, queue of follow-ups full {}, next turn due after the end \
         {}); {:.2} turns each\n",
        format_count(c.started),
        format_count(c.completed),
        format_count(c.cut_short()),
        format_count(c.cut),
        format_count(c.unqueued),
        format_count(c.past_end),
        c.turns_per_conversation()
    )
}

/// The tokens lines: output (and where their count came from), input and total, each per
/// second; a count made from content chunks is said to be an estimate, and a tokenizer that
/// disagreed with the server is named in the results' warnings.
fn token_lines(t: &candor_core::results::LlmTokens) -> String {
    if t.inputs > 0 {
        // Embeddings: inputs in, vectors out; no output tokens to count.
        let tokens = if t.input_counted > 0 {
            format!(
                "{} input tokens (the server's usage, {} responses), {:.1}/s",
                format_count(t.input_tokens),
                format_count(t.input_counted),
                t.input_tokens_per_s
            )
        } else {
            "input tokens: the server's usage did not say them".into()
        };
        return format!(
            "  inputs:   {} inputs embedded by the answers that succeeded, {:.1}/s; {tokens}\n",
            format_count(t.inputs),
            t.inputs_per_s
        );
    }
    let mut ways = Vec::new();
    for (n, way) in [
        (t.counted_from_usage, "the server's usage"),
        (
            t.counted_by_tokenizer,
            "the run's tokenizer (no usage sent)",
        ),
        (t.counted_from_chunks, "counted content chunks"),
    ] {
        if n > 0 {
            ways.push((n, way));
        }
    }
    let source = match ways.as_slice() {
        // A `--records` file carries the counts but not how each was made.
        [] if t.output_tokens > 0 => "counts whose source the file does not say".to_string(),
        [] => "no response said".to_string(),
        [(_, way)] => format!("{way} in every response"),
        _ => ways
            .iter()
            .map(|(n, way)| format!("{way} in {}", format_count(*n)))
            .collect::<Vec<_>>()
            .join("; "),
    };
    let mut out = format!(
        "  tokens:   {} output tokens of the streams that succeeded, {:.1}/s (from {source})\n",
        format_count(t.output_tokens),
        t.output_tokens_per_s
    );
    if t.counted_from_chunks > 0 {
        out.push_str(
            "            a count of content chunks is an estimate (a chunk taken as one token): give --tokenizer to count exactly\n",
        );
    }
    if t.input_counted > 0 {
        out.push_str(&format!(
            "            {} input tokens (the server's usage, {} responses), {:.1}/s; total {}, {:.1}/s\n",
            format_count(t.input_tokens),
            format_count(t.input_counted),
            t.input_tokens_per_s,
            format_count(t.total_tokens),
            t.total_tokens_per_s
        ));
        if t.cached_counted > 0 {
            out.push_str(&format!(
                "            of them {} cached (served by the server's prefix cache, as {} responses' usage said)\n",
                format_count(t.cached_tokens),
                format_count(t.cached_counted)
            ));
        }
    } else {
        out.push_str("            input tokens: the server's usage did not say them\n");
    }
    if let Some(c) = &t.tokenizer_check {
        out.push_str(&format!(
            "            tokenizer check: {} output tokens by the tokenizer, {} by the server's usage ({} of {} responses more than 5% apart)\n",
            format_count(c.tokenizer_tokens),
            format_count(c.usage_tokens),
            format_count(c.disagreeing),
            format_count(c.responses)
        ));
    }
    out
}

/// What the table's columns are timed from, for the columns it has (a `--stream` run has no
/// TTFT: its legend does not speak of one), and that every stream's measures count whatever
/// ended it.
fn legend(columns: &[&str]) -> String {
    let has = |name: &str| columns.contains(&name);
    let from_intended: Vec<&str> = ["ttft", "first event"]
        .into_iter()
        .filter(|n| has(n))
        .collect();
    let mut parts = Vec::new();
    if !from_intended.is_empty() {
        parts.push(format!(
            "{}: from the intended send",
            from_intended.join(", ")
        ));
    }
    if has("ttft (sent)") {
        parts.push(
            "ttft (sent): from the actual send, as a client that waits for a connection before \
             timing reports it"
                .to_string(),
        );
    }
    let mut out = String::new();
    if !parts.is_empty() {
        let _ = writeln!(out, "  {}", parts.join("; "));
    }
    out.push_str(
        "  every stream's first event, first token and gaps count once seen, whatever ended it \
         (its end, a failure, --timeout)\n",
    );
    out
}

/// A failed stream's name in words (the names are the results'; see `LlmFailure`).
fn failure_words(name: &str) -> Option<&'static str> {
    Some(match name {
        "stream_error" => "the server sent an error event mid-stream",
        "no_done" => "the event stream ended without data: [DONE]",
        "stream_cut" => "the connection closed (or the stream was reset) mid-stream",
        "event_timeout" => "no event within --event-timeout",
        "rate_limited" => "HTTP 429 (class status)",
        "not_json" => "an event's data was not JSON",
        "not_openai" => "an event was JSON but no completion chunk (no choices, usage or error)",
        "bad_usage" => "usage.completion_tokens was not a whole number from 0 to 4294967295",
        "not_event_stream" => {
            "the answer was not an event stream: its Content-Type was not text/event-stream and \
             it had no [DONE] (a server that ignored \"stream\": true?)"
        }
        "timeout" => "--timeout ran out mid-stream (class timeout)",
        "embedding_count" => {
            "an embeddings answer's data held another number of embeddings than the inputs sent"
        }
        _ => return None,
    })
}

/// [`tokens_over_time`] of a run's intervals; for embeddings, which have no output tokens, the
/// inputs embedded per second over time instead.
pub fn run_tokens_over_time(r: &candor_core::results::RunResults) -> String {
    let embeddings = r
        .intervals
        .iter()
        .any(|i| i.stream.as_ref().is_some_and(|s| s.inputs.is_some()))
        || r.main
            .stream
            .as_ref()
            .and_then(|s| s.llm)
            .is_some_and(|t| t.inputs > 0);
    if embeddings {
        return over_time(&r.intervals, "inputs/s", |s| s.inputs_per_s);
    }
    tokens_over_time(&r.intervals)
}

/// An LLM run's output tokens per second over its measured intervals of full length (a short
/// last one says little): lowest, median and highest, with when the lowest was. Empty without
/// tokens per interval.
pub fn tokens_over_time(intervals: &[Interval]) -> String {
    over_time(intervals, "tokens/s", |s| s.output_tokens_per_s)
}

/// Goodput (`--goodput`, or the bounds `--slo` set) over time as [`tokens_over_time`]: the
/// good responses completed per second of each interval.
pub fn goodput_over_time(intervals: &[Interval]) -> String {
    over_time(intervals, "goodput req/s", |s| s.good_per_s)
}

/// The share of input tokens the server's prefix cache served (`cached_tokens` of the
/// responses' usage), in percent, over time as [`tokens_over_time`]: only intervals whose
/// responses said their cached tokens count. Empty when none did.
pub fn cached_over_time(intervals: &[Interval]) -> String {
    over_time(intervals, "cached % of input tokens", |s| {
        let cached = s.cached_tokens?;
        let input = s.input_tokens.filter(|n| *n > 0)?;
        Some(cached as f64 * 100.0 / input as f64)
    })
}

/// A multi-turn run's conversations per second over time as [`tokens_over_time`]: those started
/// and those that completed every turn in each interval. Empty without conversations.
pub fn conversations_over_time(intervals: &[Interval]) -> String {
    let per_s = |i: &Interval, n: fn(&candor_core::results::Conversations) -> u64| {
        let c = i.stream.as_ref()?.conversations?;
        Some(n(&c) as f64 / i.length_s.max(f64::MIN_POSITIVE))
    };
    over_time_by(intervals, "conversations started/s", |i| {
        per_s(i, |c| c.started)
    }) + &over_time_by(intervals, "conversations completed/s", |i| {
        per_s(i, |c| c.completed)
    })
}

fn over_time(
    intervals: &[Interval],
    what: &str,
    rate: impl Fn(&candor_core::stream_measures::IntervalStream) -> Option<f64>,
) -> String {
    over_time_by(intervals, what, |i| rate(i.stream.as_ref()?))
}

fn over_time_by(
    intervals: &[Interval],
    what: &str,
    rate: impl Fn(&Interval) -> Option<f64>,
) -> String {
    let full = intervals.iter().map(|i| i.length_s).fold(0.0_f64, f64::max);
    let mut rates: Vec<(f64, f64)> = intervals
        .iter()
        .filter(|i| !i.warmup && i.length_s >= full * 0.99)
        .filter_map(|i| Some((rate(i)?, i.start_s)))
        .collect();
    if rates.is_empty() {
        return String::new();
    }
    rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = rates[rates.len() / 2].0;
    let (low, low_at) = rates[0];
    let high = rates[rates.len() - 1].0;
    format!(
        "  {what} over time: lowest {low:.1} (interval at {low_at:.1}s), median {median:.1}, \
         highest {high:.1} of {} intervals\n",
        rates.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::{EncodedHistograms, IntervalStats};
    use candor_core::stream_measures::IntervalStream;
    use candor_core::Recorder;

    fn interval(start_s: f64, length_s: f64, tokens: Option<u64>) -> Interval {
        Interval {
            start_s,
            length_s,
            warmup: false,
            completed: 0,
            failed: 0,
            response_time: IntervalStats::default(),
            service_time: IntervalStats::default(),
            send_lag: IntervalStats::default(),
            first_byte: None,
            histograms: EncodedHistograms::of(&Recorder::new()),
            stream: Some(IntervalStream::of(0, 0, tokens, length_s, [])),
        }
    }

    #[test]
    fn tokens_over_time_names_the_lowest_interval_and_leaves_out_a_short_last_one() {
        let ivs = [
            interval(0.0, 1.0, Some(160)),
            interval(1.0, 1.0, Some(40)),
            interval(2.0, 1.0, Some(160)),
            interval(3.0, 0.2, Some(1)),
        ];
        assert_eq!(
            tokens_over_time(&ivs),
            "  tokens/s over time: lowest 40.0 (interval at 1.0s), median 160.0, highest 160.0 of 3 intervals\n"
        );
        // No goodput judged: no line.
        assert_eq!(goodput_over_time(&ivs), "");
    }

    #[test]
    fn goodput_over_time_is_the_good_responses_per_second_of_each_interval() {
        let with = |start_s, good| {
            let mut i = interval(start_s, 1.0, Some(0));
            i.stream = i.stream.map(|s| s.with_goodput(good, 1.0));
            i
        };
        let ivs = [with(0.0, 9), with(1.0, 2), with(2.0, 10)];
        assert_eq!(
            goodput_over_time(&ivs),
            "  goodput req/s over time: lowest 2.0 (interval at 1.0s), median 9.0, highest 10.0 of 3 intervals\n"
        );
    }

    #[test]
    fn cached_over_time_is_the_cached_share_of_each_intervals_input_tokens() {
        let with = |start_s, input, cached| {
            let mut i = interval(start_s, 1.0, Some(0));
            i.stream = i.stream.map(|s| {
                s.with_input_tokens(input, 1.0)
                    .with_cached_tokens(cached, u64::from(cached > 0))
            });
            i
        };
        // The second interval's responses said no cached tokens: it is left out.
        let ivs = [with(0.0, 200, 50), with(1.0, 200, 0), with(2.0, 400, 300)];
        assert_eq!(
            cached_over_time(&ivs),
            "  cached % of input tokens over time: lowest 25.0 (interval at 0.0s), median 75.0, highest 75.0 of 2 intervals\n"
        );
        assert_eq!(cached_over_time(&[with(0.0, 200, 0)]), "");
    }

    #[test]
    fn conversations_over_time_are_those_started_and_completed_per_second() {
        let with = |start_s, started, completed| {
            let mut i = interval(start_s, 2.0, Some(0));
            i.stream = i.stream.map(|s| {
                s.with_conversations(candor_core::results::Conversations {
                    started,
                    completed,
                    ..Default::default()
                })
            });
            i
        };
        assert_eq!(conversations_over_time(&[interval(0.0, 2.0, Some(0))]), "");
        let ivs = [with(0.0, 8, 0), with(2.0, 4, 6), with(4.0, 6, 2)];
        assert_eq!(
            conversations_over_time(&ivs),
            "  conversations started/s over time: lowest 2.0 (interval at 2.0s), median 3.0, highest 4.0 of 3 intervals\n\
             \x20 conversations completed/s over time: lowest 0.0 (interval at 0.0s), median 1.0, highest 3.0 of 3 intervals\n"
        );
    }

    #[test]
    fn the_legend_speaks_only_of_the_columns_there_are() {
        let sse = legend(&["first event", "event gap"]);
        assert!(
            sse.starts_with("  first event: from the intended send\n"),
            "{sse}"
        );
        assert!(!sse.contains("ttft"), "{sse}");
        let llm = legend(&[
            "ttft",
            "ttft (sent)",
            "itl",
            "tpot",
            "first event",
            "event gap",
        ]);
        assert!(
            llm.starts_with(
                "  ttft, first event: from the intended send; ttft (sent): from the actual send"
            ),
            "{llm}"
        );
        for l in [sse, llm] {
            assert!(l.contains("whatever ended it"), "{l}");
        }
    }

    #[test]
    fn every_failure_name_of_the_engine_has_words() {
        for name in [
            "stream_error",
            "no_done",
            "stream_cut",
            "event_timeout",
            "rate_limited",
            "not_json",
            "not_openai",
            "bad_usage",
            "not_event_stream",
            "timeout",
        ] {
            assert!(failure_words(name).is_some(), "{name}");
        }
        assert!(failure_words("not_event_stream")
            .unwrap()
            .contains("Content-Type"));
    }

    #[test]
    fn conversations_are_said_with_how_each_ended() {
        let c = candor_core::results::Conversations {
            started: 10,
            completed: 6,
            cut: 2,
            unqueued: 1,
            past_end: 1,
            turns: 25,
        };
        assert_eq!(
            conversation_line(&c),
            "  conversations: 10 started, 6 completed every turn, 4 cut short (a turn failed or \
             was outstanding at the end 2, queue of follow-ups full 1, next turn due after the \
             end 1); 2.50 turns each\n"
        );
    }

    #[test]
    fn intervals_without_tokens_say_nothing() {
        assert_eq!(tokens_over_time(&[interval(0.0, 1.0, None)]), "");
        assert_eq!(tokens_over_time(&[]), "");
    }
}
