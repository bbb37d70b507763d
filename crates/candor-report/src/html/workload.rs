//! The HTML report's workload parts: the load profile drawn on the charts over time (the target
//! rate as the profile intends it, and the stage boundaries), a table per stage, and per request
//! name a table and a percentile overlay. Everything comes from the results' `stages` and
//! `by_request`; a run without them gets none of it.

use super::error::HtmlError;
use super::format::{esc, format_ns, p99_max, spectrum};
use candor_core::results::{Interval, PhaseResults, RunResults};
use candor_core::units::{format_count, format_rate};
use candor_core::workload_results::StageResults;
use candor_core::Summary;
use serde_json::{json, Value};

/// Where the measured window starts on the charts' time axis (seconds from the start of the run,
/// which is where the warm-up starts): at the end of the warm-up. Not at the first measured
/// interval: intervals are cut every `--interval` from the start, so one may span the warm-up's
/// end (and be marked warm-up).
fn measured_offset(r: &RunResults) -> f64 {
    r.warmup.as_ref().map_or(0.0, |w| w.duration_s)
}

/// The intended rate over time as (seconds on the time axis, requests/s) corners of a
/// piecewise-linear line: each stage from its start at `from` to its end at `to` (a hold is flat,
/// a ramp linear; where one stage's end rate differs from the next one's start there are two
/// corners at one instant), and before them the warm-up, which holds the first stage's rate.
pub(super) fn profile(r: &RunResults) -> Vec<(f64, f64)> {
    let stages = &r.workload.stages;
    let Some(first) = stages.first() else {
        return Vec::new();
    };
    let offset = measured_offset(r);
    let mut out = Vec::new();
    if let Some(w) = r.warmup.as_ref().filter(|w| w.duration_s > 0.0) {
        out.push((offset - w.duration_s, first.from_per_s));
        out.push((offset, first.from_per_s));
    }
    for s in stages {
        let x0 = offset + s.start_s;
        out.push((x0, s.from_per_s));
        out.push((x0 + s.results.duration_s, s.to_per_s));
    }
    out
}

/// The mean of the piecewise-linear `line` over `[a, b]`, taking the rate as 0 where the line does
/// not reach (after the last stage, while the run drains); `None` when it reaches no part of it.
pub(super) fn mean_over(line: &[(f64, f64)], a: f64, b: f64) -> Option<f64> {
    let mut area = 0.0;
    let mut covered = false;
    for w in line.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let (lo, hi) = (a.max(x0), b.min(x1));
        if x1 <= x0 || hi <= lo {
            continue;
        }
        covered = true;
        let at = |x: f64| y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        area += (at(lo) + at(hi)) / 2.0 * (hi - lo);
    }
    (covered && b > a).then(|| area / (b - a))
}

/// The target rate as the profile states it: `500/s` for a hold, `500/s → 5.00k/s` for a ramp.
fn target_words(s: &StageResults) -> String {
    if s.from_per_s == s.to_per_s {
        format_rate(s.from_per_s)
    } else {
        format!(
            "{} \u{2192} {}",
            format_rate(s.from_per_s),
            format_rate(s.to_per_s)
        )
    }
}

/// Name colours: the run palette, then the same colours dashed, so eight more names stay apart.
fn name_style(palette: &[&str], k: usize) -> (String, Option<[u32; 2]>) {
    let dash = (k / palette.len() % 2 == 1).then_some([6, 4]);
    (palette[k % palette.len()].to_string(), dash)
}

/// What the charts of `r` draw of its workload, for the page's data block (`None` without one):
/// `stages` (boundaries on the time axis and the words of their targets), `profile` (the target
/// line's corners), `target_mean` (the profile's mean rate over each interval, for the legend and
/// the scale) and `names` (each name's response-time spectrum on the grid `xs`).
pub(crate) fn chart_data(
    label: &str,
    r: &RunResults,
    xs: &[f64],
    palette: &[&str],
) -> Result<Option<Value>, HtmlError> {
    if r.workload.is_empty() {
        return Ok(None);
    }
    let offset = measured_offset(r);
    let line = profile(r);
    let stages: Vec<Value> = r
        .workload
        .stages
        .iter()
        .map(|s| {
            json!({
                "x0": offset + s.start_s,
                "x1": offset + s.start_s + s.results.duration_s,
                "target": target_words(s),
            })
        })
        .collect();
    let target_mean: Vec<Option<f64>> = r
        .intervals
        .iter()
        .map(|iv: &Interval| mean_over(&line, iv.start_s, iv.start_s + iv.length_s))
        .collect();
    let mut names = Vec::new();
    for (k, (name, p)) in r.workload.by_request.iter().enumerate() {
        let rec = p.histograms.decode().map_err(|cause| HtmlError {
            label: label.to_string(),
            what: format!("by_request '{name}'"),
            cause,
        })?;
        let (color, dash) = name_style(palette, k);
        names.push(json!({
            "label": name,
            "color": color,
            "dash": dash,
            "response": spectrum(&rec.response, xs),
            "legend": p99_max(&rec.response),
        }));
    }
    Ok(Some(json!({
        "stages": stages,
        "profile": line.iter().map(|&(x, y)| [x, y]).collect::<Vec<_>>(),
        "target_mean": if line.is_empty() { None } else { Some(target_mean) },
        "names": names,
    })))
}

/// A percentile cell, grey when the sample count cannot support it (the rule of the summary).
fn pct_cell(s: &Summary, p: f64) -> String {
    let Some(v) = (s.count > 0).then(|| s.at(p)).flatten() else {
        return "<td class=\"dim\">no data</td>".into();
    };
    let needed = candor_analysis::confidence::samples_needed(p / 100.0);
    if p >= 100.0 || s.count >= needed {
        format!("<td>{}</td>", format_ns(v as f64))
    } else {
        format!(
            "<td class=\"dim\" title=\"not enough samples ({} of ~{})\">{}</td>",
            format_count(s.count),
            format_count(needed),
            format_ns(v as f64)
        )
    }
}

/// The classes with a count, as `name count, ...`; `none` when every count is 0.
pub(crate) fn nonzero_classes(pairs: &[(&str, u64)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {}", format_count(*n)))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The counts and latency cells shared by a stage's row and a name's row.
fn books_cells(p: &PhaseResults) -> String {
    let q = &p.requests;
    let mut cells = format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        format_count(q.intended),
        format_count(q.completed),
        format_count(q.failed)
    );
    for p_ in [50.0, 99.0, 99.9, 100.0] {
        cells.push_str(&pct_cell(&p.response_time, p_));
    }
    // The text report's columns: what the server took (service time) and how late requests left
    // (send lag), at p99, beside the whole response-time curve.
    cells.push_str(&pct_cell(&p.service_time, 99.0));
    cells.push_str(&pct_cell(&p.send_lag, 99.0));
    cells
}

const LATENCY_HEAD: &str = "<th class=\"group\" colspan=\"4\">response time</th>\
    <th class=\"group\">service time</th><th class=\"group\">send lag</th>";
const LATENCY_COLUMNS: &str =
    "<th>intended</th><th>completed</th><th>failed</th><th>p50</th><th>p99</th>\
    <th>p99.9</th><th>max</th><th>p99</th><th>p99</th>";

/// The run's heading inside a workload section when the page shows several runs.
fn run_heading(runs: &[(String, RunResults)], i: usize, palette: &[&str]) -> String {
    if runs.len() == 1 {
        return String::new();
    }
    format!(
        "<h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3>",
        palette[i % palette.len()],
        esc(&runs[i].0)
    )
}

/// The stage and request-name sections of the page; empty when no run has stages or names.
pub(crate) fn sections(runs: &[(String, RunResults)], palette: &[&str]) -> String {
    let mut out = String::new();
    if runs.iter().any(|(_, r)| !r.workload.stages.is_empty()) {
        out.push_str(
            "<section id=\"stages\"><h2>Load profile stages</h2><p class=\"note\">A request belongs to the \
             stage of its intended send time; windows are from the start of the measured window. Target: the rate the profile intends (a ramp from its start \
             to its end rate); achieved: responses over the stage's window. The charts over time draw \
             the target line and the stage boundaries.</p>",
        );
        for (i, (_, r)) in runs.iter().enumerate() {
            if r.workload.stages.is_empty() {
                continue;
            }
            out.push_str(&run_heading(runs, i, palette));
            out.push_str(&format!(
                "<div class=\"scroll\"><table class=\"grid num stages\"><thead><tr><th colspan=\"4\"></th>\
                 <th class=\"group\" colspan=\"3\">requests</th>{LATENCY_HEAD}</tr><tr><th>stage</th><th>window</th>\
                 <th>target</th><th>achieved</th>{LATENCY_COLUMNS}</tr></thead><tbody>"
            ));
            for (k, s) in r.workload.stages.iter().enumerate() {
                let end = s.start_s + s.results.duration_s;
                out.push_str(&format!(
                    "<tr><th>{}</th><td>{}\u{2013}{} s</td><td>{}</td><td>{}</td>{}</tr>",
                    k + 1,
                    crate::javafmt::fixed(s.start_s, 1),
                    crate::javafmt::fixed(end, 1),
                    esc(&target_words(s)),
                    format_rate(s.results.rate.achieved_per_s),
                    books_cells(&s.results)
                ));
            }
            out.push_str("</tbody></table></div>");
        }
        out.push_str("</section>");
    }
    if runs.iter().any(|(_, r)| !r.workload.by_request.is_empty()) {
        out.push_str(
            "<section id=\"by-request\"><h2>By request name</h2><p class=\"note\">Each name's own books \
             and latencies (the names of a <code>--requests</code> file). Requests never sent were never \
             given a name: they count in the totals only. The chart overlays each name's response-time \
             percentile spectrum.</p>",
        );
        for (i, (_, r)) in runs.iter().enumerate() {
            if r.workload.by_request.is_empty() {
                continue;
            }
            out.push_str(&run_heading(runs, i, palette));
            out.push_str(&format!(
                "<div class=\"scroll\"><table class=\"grid num names\"><thead><tr><th colspan=\"2\"></th>\
                 <th class=\"group\" colspan=\"3\">requests</th>{LATENCY_HEAD}<th colspan=\"2\"></th></tr>\
                 <tr><th>name</th><th>achieved</th>{LATENCY_COLUMNS}<th>failures by class</th>\
                 <th>status classes</th></tr></thead><tbody>"
            ));
            for (k, (name, p)) in r.workload.by_request.iter().enumerate() {
                let (color, _) = name_style(palette, k);
                out.push_str(&format!(
                    "<tr><th><span class=\"swatch\" style=\"background:{color}\"></span>{}</th><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
                    esc(name),
                    format_rate(p.rate.achieved_per_s),
                    books_cells(p),
                    esc(&nonzero_classes(&p.requests.errors.by_class())),
                    esc(&nonzero_classes(&p.requests.status.by_class())),
                ));
            }
            out.push_str(&format!(
                "</tbody></table></div><div class=\"chart\" id=\"names-{i}\"></div>"
            ));
        }
        out.push_str("</section>");
    }
    out
}
