//! The report of streamed responses (`--stream`, `--llm`): the events' and tokens' measures
//! beside each other (TTFT from the intended send next to its actual-send twin, ITL, TPOT,
//! first event, event gap), then the counts: events per response, failed streams by name, and
//! an LLM run's output tokens with where their count came from, and `--goodput`'s requests per
//! second meeting every per-request objective.

use candor_core::hist::{Statistic, SUMMARY_ROWS};
use candor_core::results::PhaseResults;
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
        out.push_str(
            "  ttft, first event: from the intended send; ttft (sent): from the actual send, as \
             a client that waits for a connection before timing reports it\n",
        );
    }
    let _ = write!(
        out,
        "  streams:  {} responses delivered {} events ({:.1} per response)",
        format_count(s.responses),
        format_count(s.events),
        s.events_per_response
    );
    if !s.failures.is_empty() {
        let named: Vec<String> = s
            .failures
            .iter()
            .map(|(k, n)| format!("{k} {}", format_count(*n)))
            .collect();
        let _ = write!(out, "; failed streams: {}", named.join("  "));
    }
    out.push('\n');
    if let Some(t) = &s.llm {
        let source = match (t.counted_from_usage, t.counted_from_chunks) {
            (_, 0) => "the server's usage in every response".to_string(),
            (0, _) => "counted content chunks (the server sent no usage)".to_string(),
            (u, c) => format!(
                "the server's usage in {} responses, counted content chunks in {}",
                format_count(u),
                format_count(c)
            ),
        };
        let _ = writeln!(
            out,
            "  tokens:   {} output tokens, {:.1}/s (from {source})",
            format_count(t.output_tokens),
            t.output_tokens_per_s
        );
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
    out
}
