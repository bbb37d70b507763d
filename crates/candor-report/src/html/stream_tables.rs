//! The tables of the streamed-responses section beside its charts: each run's LLM settings (as
//! its recorded command line gives them), its goodput, its conversations, and the zero-length
//! gaps its spectra leave out.

use super::format::esc;
use candor_core::results::RunResults;
use candor_core::stream_measures::StreamMeasure;
use candor_core::units::format_count;

fn swatch(palette: &[&str], i: usize, label: &str) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>{}",
        palette[i % palette.len()],
        esc(label)
    )
}

/// The settings of each run that has some: model, token budgets, tokenizer, dataset, ...
/// (`crate::llm_headline::settings`). Empty when no run has any.
pub(crate) fn settings_table(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let rows: Vec<(usize, Vec<(&str, String)>)> = runs
        .iter()
        .enumerate()
        .map(|(i, (_, r))| (i, crate::llm_headline::settings(r)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Settings</h3><p class=\"note\">As the recorded command line gives them; a setting \
         left at its default is not recorded, so it is not shown.</p><table class=\"grid\"><thead>\
         <tr><th>Run</th><th>setting</th><th>value</th></tr></thead><tbody>",
    );
    for (i, settings) in rows {
        for (k, v) in settings {
            out.push_str(&format!(
                "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
                swatch(palette, i, &runs[i].0),
                esc(k),
                esc(&v)
            ));
        }
    }
    out.push_str("</tbody></table>");
    out
}

/// Goodput (`--goodput`, or the per-request bounds an `--llm` run's `--slo` implies) of each run
/// that counted it, judged from the intended send and from the actual send. Empty when none did.
pub(crate) fn goodput_table(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let with: Vec<usize> = (0..runs.len())
        .filter(|&i| {
            runs[i]
                .1
                .main
                .stream
                .as_ref()
                .is_some_and(|s| s.goodput.is_some())
        })
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Goodput</h3><p class=\"note\">Requests that met every per-request objective, per \
         second of the measured window and as a share of the intended requests (a failed or \
         unfinished request is not good). From the intended send, as a user waits; from the \
         actual send, as a client that times from its own send judges.</p><table class=\"grid num\">\
         <thead><tr><th>Run</th><th>objectives</th><th>good</th><th>req/s</th><th>share</th>\
         <th>good (actual send)</th><th>req/s (actual send)</th><th>share (actual send)</th></tr></thead><tbody>",
    );
    for i in with {
        let (label, r) = &runs[i];
        let Some(g) = r.main.stream.as_ref().and_then(|s| s.goodput.as_ref()) else {
            continue;
        };
        out.push_str(&format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}%</td><td>{}</td><td>{:.2}</td><td>{:.1}%</td></tr>",
            swatch(palette, i, label),
            esc(&g.slo),
            format_count(g.good),
            g.per_s,
            g.fraction * 100.0,
            format_count(g.good_service),
            g.per_s_service,
            g.fraction_service * 100.0
        ));
    }
    out.push_str("</tbody></table>");
    out
}

/// How each multi-turn run's conversations ended (`--multi-turn`, `--turns`). Empty when no run
/// had conversations.
pub(crate) fn conversations_table(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let with: Vec<(usize, candor_core::results::Conversations)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, (_, r))| r.main.conversations.map(|c| (i, c)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Conversations</h3><p class=\"note\">Multi-turn runs: the schedule starts \
         conversations, each next turn is due at its previous turn's completion plus the think \
         time. Cut: a turn failed or was outstanding at the end; queue full: its next turn was \
         never intended; past the end: its next turn would have been due after the schedule's \
         end.</p><table class=\"grid num\"><thead><tr><th>Run</th><th>started</th>\
         <th>completed</th><th>cut</th><th>queue full</th><th>past the end</th>\
         <th>turns each</th></tr></thead><tbody>",
    );
    for (i, c) in with {
        out.push_str(&format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
            swatch(palette, i, &runs[i].0),
            format_count(c.started),
            format_count(c.completed),
            format_count(c.cut),
            format_count(c.unqueued),
            format_count(c.past_end),
            c.turns_per_conversation()
        ));
    }
    out.push_str("</tbody></table>");
    out.push_str(&conversations_by_interval(runs, palette));
    out
}

/// Each multi-turn run's conversations per interval of its measured window: those started,
/// completed, cut short and the turns taken in it (booked when they happened). Folded, as a
/// long run has many intervals.
fn conversations_by_interval(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let mut rows = String::new();
    for (i, (label, r)) in runs.iter().enumerate() {
        for iv in r.intervals.iter().filter(|iv| !iv.warmup) {
            let Some(c) = iv.stream.as_ref().and_then(|s| s.conversations) else {
                continue;
            };
            rows.push_str(&format!(
                "<tr><th>{}</th><td>{:.1}s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                swatch(palette, i, label),
                iv.start_s,
                format_count(c.started),
                format_count(c.completed),
                format_count(c.cut_short()),
                format_count(c.turns)
            ));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<details><summary>Conversations per interval</summary><p class=\"note\">Each start and \
         turn in the interval it was taken to be sent in, each end in the interval it was decided \
         in (its last turn's completion or failure, or the run's end).</p><table class=\"grid \
         num\"><thead><tr><th>Run</th><th>interval at</th><th>started</th><th>completed</th>\
         <th>cut short</th><th>turns</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )
}

/// One line per run whose gap measures held zero-length gaps: how many, since the spectra
/// leave them out. Empty when none did.
pub(crate) fn zero_gaps_note(runs: &[(String, RunResults)]) -> String {
    let mut parts = Vec::new();
    for (label, r) in runs {
        for m in [StreamMeasure::Itl, StreamMeasure::EventGap] {
            let Some(Ok(h)) = r.stream_histogram(m) else {
                continue;
            };
            let zero = h.count_between(0, 1);
            if zero > 0 {
                parts.push(format!(
                    "{}: {} of {} {} gaps had zero length",
                    esc(label),
                    format_count(zero),
                    format_count(h.len()),
                    m.label()
                ));
            }
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"note\" id=\"zero-gaps\">Not drawn in the spectra above: {}.</p>",
        parts.join("; ")
    )
}
