//! The top of the page: its title and what was run, each run's headline numbers (a card) and
//! the runs' warnings.

use super::format::{esc, format_ns, PALETTE};
use crate::books::Books;
use candor_analysis::late::count_noun;
use candor_core::dates::utc_seconds as utc;
use candor_core::hist::value_at;
use candor_core::results::RunResults;
use candor_core::units::{format_count, format_rate};
use candor_core::{Histo, Recorder};

/// The page's header: its title, and the target, start and mode of each run.
pub(crate) fn header(runs: &[(String, RunResults)], title: &str) -> String {
    let mut body = String::new();
    body.push_str(&format!(
        "<header><div class=\"brand\">candor</div><h1>{}</h1>",
        esc(title)
    ));
    if let [(_, r)] = runs {
        body.push_str(&format!(
            "<p class=\"sub\">{} · started {} · {}</p>",
            esc(&r.target),
            utc(r.start_time_unix_s),
            esc(&r.mode.name())
        ));
    } else {
        // Several runs: each one's target, so a comparison says what was compared.
        body.push_str(&format!(
            "<p class=\"sub\">{} runs overlaid:</p><ul class=\"targets\">",
            runs.len()
        ));
        for (i, (label, r)) in runs.iter().enumerate() {
            body.push_str(&format!(
                "<li><span class=\"swatch\" style=\"background:{}\"></span><b>{}</b>: {} · started {} · {}</li>",
                PALETTE[i % PALETTE.len()],
                esc(label),
                esc(&r.target),
                utc(r.start_time_unix_s),
                esc(&r.mode.name())
            ));
        }
        body.push_str("</ul>");
    }
    body.push_str("</header>");
    body
}

/// Each run's headline numbers, one card a run.
pub(crate) fn cards(runs: &[(String, RunResults)], decoded: &[Recorder]) -> String {
    let mut body = String::new();
    body.push_str(if runs.len() > 2 {
        "<section class=\"cards many\">"
    } else {
        "<section class=\"cards\">"
    });
    for (i, ((label, r), rec)) in runs.iter().zip(decoded).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let target = r
            .main
            .rate
            .target_per_s
            .map_or("closed loop".to_string(), |t| {
                format!("target {}", format_rate(t))
            });
        // A streamed or LLM run leads with what it is read for; end to end follows, named.
        let (lead, e2e) = match stream_metrics(r) {
            Some(m) => (m, "end to end "),
            None => (String::new(), ""),
        };
        body.push_str(&format!(
            "<div class=\"card\" style=\"border-top-color:{color}\"><div class=\"card-label\"><span class=\"swatch\" style=\"background:{color}\"></span>{}</div>{lead}\
             <div class=\"metrics\"><div><span class=\"k\">{e2e}p50</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">{e2e}p99</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">{e2e}p99.9</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">{e2e}max</span><span class=\"v\">{}</span></div></div>\
             <div class=\"card-foot\">{}</div></div>",
            esc(label),
            card_value(&rec.response, 50.0),
            card_value(&rec.response, 99.0),
            card_value(&rec.response, 99.9),
            card_value(&rec.response, 100.0),
            esc(&card_foot(r, &target)),
        ));
    }
    body.push_str("</section>");
    body
}

/// The runs' warnings, each with its run's label; empty when there are none.
pub(crate) fn warnings(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
    let warnings: Vec<(String, String)> = runs
        .iter()
        .flat_map(|(l, r)| r.warnings.iter().map(move |w| (l.clone(), w.clone())))
        .collect();
    if !warnings.is_empty() {
        body.push_str("<section class=\"warn\"><h2>Warnings</h2><ul>");
        for (l, w) in warnings {
            body.push_str(&format!("<li><b>{}</b>: {}</li>", esc(&l), esc(&w)));
        }
        body.push_str("</ul></section>");
    }
    body
}

/// The headline figures of a run with streams (TTFT, TPOT, ITL, goodput, tokens/s), as a row
/// of the card; `None` for a run without streams.
fn stream_metrics(r: &RunResults) -> Option<String> {
    let figures = crate::llm_headline::StreamHeadline::of(&r.main)?.figures();
    if figures.is_empty() {
        return None;
    }
    let mut out = String::from("<div class=\"metrics lead\">");
    for (k, v) in figures {
        out.push_str(&format!(
            "<div><span class=\"k\">{}</span><span class=\"v\">{}</span></div>",
            esc(&k),
            esc(&v)
        ));
    }
    out.push_str("</div>");
    Some(out)
}

fn card_value(h: &Histo, p: f64) -> String {
    if h.is_empty() {
        "no data".into()
    } else {
        format_ns(value_at(h, p) as f64)
    }
}

/// The line under a run's headline numbers: only what the input knows.
fn card_foot(r: &RunResults, target: &str) -> String {
    let secs = crate::javafmt::fixed(r.main.duration_s, 1);
    match Books::of(r) {
        Books::Full => format!(
            "{} · achieved {} ({target}) · {} failed · {secs}s measured",
            count_noun(r.main.requests.completed, "request", "requests"),
            format_rate(r.main.rate.achieved_per_s),
            format_count(r.main.requests.failed),
        ),
        Books::LatencyOnly => format!(
            "{} · {} recorded · {secs}s of intervals · offered rate and failures unknown (a log holds latencies only)",
            count_noun(r.main.response_time.count, "latency", "latencies"),
            format_rate(r.main.rate.achieved_per_s),
        ),
        Books::Slice => format!(
            "{} completed · {} failed · {secs}s slice · failure classes and statuses unknown",
            format_count(r.main.requests.completed),
            format_count(r.main.requests.failed),
        ),
    }
}
