//! The HTML report: one self-contained page (uPlot inlined, no network) with the percentile
//! spectrum, latency and throughput over time, summary tables, environment and configuration of
//! one or several runs, overlaid with a legend so systems and loads can be compared; with load
//! profiles and named requests, their stages and names (`html_workload.rs`).

use crate::input::Books;
use candor_analysis::late::count_noun;
use candor_core::hist::{value_at, HistCodecError};
use candor_core::results::RunResults;
use candor_core::units::{format_count, format_rate};
use candor_core::{Histo, Summary};
use serde_json::json;

const UPLOT_JS: &str = include_str!("../../../vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../vendor/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("html_report.js");
/// The report's styles, shared by every candor page (the sweep page uses them too).
pub(crate) const PAGE_CSS: &str = include_str!("html_report.css");
/// Runs before anything else so that any script error, even in the library, is recorded on the
/// page where automated checks (and people with devtools closed) can see it.
const ERROR_CAPTURE: &str = "<script>window.__candorErrors=[];addEventListener('error',function(e){__candorErrors.push(String(e.message));document.documentElement.setAttribute('data-js-error',__candorErrors.join(' | '))});</script>";

/// Run colours, chosen to stay distinguishable for common colour-vision deficiencies.
const PALETTE: [&str; 8] = [
    "#1f6fb2", "#d1495b", "#2a9d5c", "#8e5cc2", "#e08a1e", "#3b8ea5", "#7a7a7a", "#b5651d",
];

/// A service-level objective drawn on the spectrum and checked in a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub label: String,
    /// 0..=100 (100 = max).
    pub percentile: f64,
    pub threshold_ns: u64,
}

/// An SLO line of the HTML report that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloParseError {
    #[error(
        "invalid SLO '{0}': expected [NAME:]pPERCENTILE=DURATION, like p99=5ms or api:p99.9=20ms"
    )]
    Form(String),
    #[error("invalid SLO '{text}': {reason}")]
    Duration { text: String, reason: String },
}

impl Slo {
    /// Parses `p99=5ms`, `p99.9<=20ms`, `max=1s` or `NAME:p99=5ms` (label defaults to the
    /// percentile).
    pub fn parse(text: &str) -> Result<Slo, SloParseError> {
        let err = || SloParseError::Form(text.to_string());
        let (label, spec) = match text.split_once(':') {
            Some((l, s)) if !l.trim().is_empty() => (Some(l.trim().to_string()), s),
            _ => (None, text),
        };
        let (p, d) = spec
            .split_once("<=")
            .or_else(|| spec.split_once('='))
            .ok_or_else(err)?;
        let p = p.trim();
        let percentile = if p.eq_ignore_ascii_case("max") {
            100.0
        } else {
            p.trim_start_matches(['p', 'P'])
                .parse::<f64>()
                .map_err(|_| err())?
        };
        if !(0.0..=100.0).contains(&percentile) {
            return Err(err());
        }
        let threshold_ns = candor_core::units::parse_duration_ns(d.trim()).map_err(|e| {
            SloParseError::Duration {
                text: text.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(Slo {
            label: label.unwrap_or_else(|| p.to_string()),
            percentile,
            threshold_ns,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlOptions {
    /// Page title; a default naming the runs when `None`.
    pub title: Option<String>,
    pub slos: Vec<Slo>,
}

#[derive(Debug, thiserror::Error)]
#[error("{label}: {what} histogram is not valid: {cause}")]
pub struct HtmlError {
    pub label: String,
    pub what: String,
    pub cause: HistCodecError,
}

/// Auto-scaled latency with the proper micro sign for a typeset page.
pub(crate) fn format_ns(ns: f64) -> String {
    let s = candor_core::units::format_ns(ns);
    match s.strip_suffix("us") {
        Some(v) => format!("{v}\u{b5}s"),
        None => s,
    }
}

pub(crate) use crate::escape::html_text as esc;

/// Points per decade of the 1/(1-p) axis: 40 keeps curves smooth and puts a point exactly on
/// every labelled tick (90%, 99%, ...).
const PER_DECADE: u32 = 40;

/// The curve of `h` on the grid `xs` of 1/(1-p), running to the max as HdrHistogram's plotter
/// draws it: percentiles up to 1/(1-p) = count (the last one the samples resolve), then the max
/// at the next grid point, where the curve ends.
pub(crate) fn spectrum(h: &Histo, xs: &[f64]) -> Vec<Option<u64>> {
    let n = h.len() as f64;
    let mut ended = h.is_empty();
    xs.iter()
        .map(|&x| {
            if ended {
                None
            } else if x > n * 1.0000001 {
                ended = true;
                Some(h.max())
            } else {
                let p = 100.0 * (1.0 - 1.0 / x);
                Some(value_at(h, p))
            }
        })
        .collect()
}

/// The grid of 1/(1-p) values, PER_DECADE points a decade from 1, reaching one point past
/// `max_count` so that every run's curve has a point for its max.
fn spectrum_grid(max_count: u64) -> Vec<f64> {
    let mut xs = Vec::new();
    for i in 0u32.. {
        let x = 10f64.powf(f64::from(i) / f64::from(PER_DECADE));
        xs.push(x);
        if x > max_count as f64 * 1.0000001 && xs.len() > 1 {
            break;
        }
    }
    xs
}

/// Summary text of a measure for legends and captions: "p99 4.907ms · max 22.74ms".
pub(crate) fn p99_max(h: &Histo) -> String {
    if h.is_empty() {
        "no data".to_string()
    } else {
        format!(
            "p99 {} \u{b7} max {}",
            format_ns(value_at(h, 99.0) as f64),
            format_ns(h.max() as f64)
        )
    }
}

pub(crate) fn summary_row(s: &Summary) -> String {
    let mut cells = String::new();
    for p in [50.0, 90.0, 99.0, 99.9, 99.99] {
        if s.count == 0 {
            cells.push_str("<td class=\"dim\">no data</td>");
            continue;
        }
        let v = s
            .at(p)
            .map_or("no data".to_string(), |v| format_ns(v as f64));
        // The text report's rule (candor_analysis::confidence): about 100 samples beyond a
        // percentile support it; the caveats above list the ones that fall short.
        let needed = candor_analysis::confidence::samples_needed(p / 100.0);
        if s.count >= needed {
            cells.push_str(&format!("<td>{v}</td>"));
        } else {
            cells.push_str(&format!(
                "<td class=\"dim\" title=\"not enough samples ({} of ~{})\">{v}</td>",
                format_count(s.count),
                format_count(needed)
            ));
        }
    }
    if s.count == 0 {
        cells.push_str("<td class=\"dim\">no data</td>".repeat(3).as_str());
        return cells;
    }
    cells.push_str(&format!("<td>{}</td>", format_ns(s.max_ns as f64)));
    cells.push_str(&format!(
        "<td>{}</td><td>{}</td>",
        format_ns(s.mean_ns),
        format_ns(s.stdev_ns)
    ));
    cells
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

/// The caveats and verdicts of the text report (candor_analysis::run_analysis), per run: the reported
/// percentiles its sample count cannot support, the stationarity verdict and the warnings.
fn caveats(runs: &[(String, RunResults)]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        let n = r.main.response_time.count;
        if n == 0 {
            out.push((i, "no samples: nothing to report".to_string()));
            continue;
        }
        let a = candor_analysis::analyze(r);
        let short: Vec<String> = a
            .confidence
            .iter()
            .filter(|c| c.percentile < 100.0 && !c.supported)
            .map(|c| {
                format!(
                    "p{} ({} of ~{})",
                    candor_analysis::omission::trim_pct(c.percentile),
                    format_count(c.samples),
                    format_count(c.samples_needed)
                )
            })
            .collect();
        if !short.is_empty() {
            out.push((i, support_note(n, &short)));
        }
        if let Some(st) = &a.stationarity {
            out.push((i, candor_analysis::trend::summary(st)));
        }
        for v in a.verdicts() {
            out.push((i, format!("verdict: {v}")));
        }
    }
    out
}

/// The caveat line of a run whose sample count falls short of some reported percentiles.
fn support_note(n: u64, short: &[String]) -> String {
    let support = candor_analysis::confidence::support_phrase(n);
    format!(
        "{} {support}; not enough samples for {}: those values rest on a handful of requests",
        count_noun(n, "sample", "samples"),
        short.join(", ")
    )
}

fn kv_table(rows: &[(String, String)]) -> String {
    let mut t = String::from("<table class=\"kv\">");
    for (k, v) in rows {
        t.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v)));
    }
    t.push_str("</table>");
    t
}

fn config_rows(v: &serde_json::Value, prefix: &str, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                config_rows(v, &key, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        serde_json::Value::Null => out.push((prefix.to_string(), "—".into())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

use candor_core::dates::utc_seconds as utc;

/// Writes the report page for `runs` (label, results). Pure: the same input gives the same bytes.
pub fn write_html(
    runs: &[(String, RunResults)],
    options: &HtmlOptions,
) -> Result<String, HtmlError> {
    let mut decoded = Vec::with_capacity(runs.len());
    for (label, r) in runs {
        let rec = r.main.histograms.decode().map_err(|cause| HtmlError {
            label: label.clone(),
            what: "main".into(),
            cause,
        })?;
        decoded.push(rec);
    }
    let max_count = decoded
        .iter()
        .map(|d| d.response.len().max(d.service.len()))
        .max()
        .unwrap_or(1)
        .max(10);
    let xs = spectrum_grid(max_count);

    let mut js_runs = Vec::new();
    for (i, ((label, r), rec)) in runs.iter().zip(&decoded).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let ivs = &r.intervals;
        let t: Vec<f64> = ivs.iter().map(|iv| iv.start_s + iv.length_s).collect();
        let nz = |v: u64, c: u64| if c == 0 { None } else { Some(v) };
        let warmup_end = ivs
            .iter()
            .filter(|iv| iv.warmup)
            .map(|iv| iv.start_s + iv.length_s)
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
        let workload = crate::html_workload::chart_data(label, r, &xs, &PALETTE)?;
        let mut js_run = json!({
            "label": label,
            "color": color,
            "count": rec.response.len(),
            "spectrum": {
                "response": spectrum(&rec.response, &xs),
                "service": spectrum(&rec.service, &xs),
                "max_response": rec.response.max(),
                "max_service": rec.service.max(),
                "legend_response": p99_max(&rec.response),
                "legend_service": p99_max(&rec.service),
            },
            "time": {
                "t": t,
                "t0": ivs.iter().map(|iv| iv.start_s).fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.min(b)))),
                "p50": ivs.iter().map(|iv| nz(iv.response_time.p50_ns, iv.response_time.count)).collect::<Vec<_>>(),
                "p99": ivs.iter().map(|iv| nz(iv.response_time.p99_ns, iv.response_time.count)).collect::<Vec<_>>(),
                "p999": ivs.iter().map(|iv| nz(iv.response_time.p999_ns, iv.response_time.count)).collect::<Vec<_>>(),
                "max": ivs.iter().map(|iv| nz(iv.response_time.max_ns, iv.response_time.count)).collect::<Vec<_>>(),
                "svc_p99": ivs.iter().map(|iv| nz(iv.service_time.p99_ns, iv.service_time.count)).collect::<Vec<_>>(),
                "rate": ivs.iter().map(|iv| if iv.length_s > 0.0 { iv.completed as f64 / iv.length_s } else { 0.0 }).collect::<Vec<_>>(),
                "failed": ivs.iter().map(|iv| iv.failed).collect::<Vec<_>>(),
                "target": r.main.rate.target_per_s,
                "warmup_end": warmup_end,
                "events": r.main.events.iter().map(|e| json!({"kind": e.kind, "at": e.at_s, "length": e.length_s, "detail": e.detail})).collect::<Vec<_>>(),
            },
        });
        // Only runs with stages or names carry the key, so other runs' pages stay as they were.
        if let Some(w) = workload {
            js_run["workload"] = w;
        }
        // Likewise only runs with streamed responses carry `stream`.
        if let Some(s) = crate::html_stream::chart_data(label, r, &xs)? {
            js_run["stream"] = s;
        }
        js_runs.push(js_run);
    }
    let data = json!({
        "xs": xs,
        "runs": js_runs,
        "slos": options.slos.iter().map(|s| json!({"label": s.label, "percentile": s.percentile, "threshold_ns": s.threshold_ns})).collect::<Vec<_>>(),
    });
    let data_text = crate::escape::script_json(&data.to_string());

    let title = options.title.clone().unwrap_or_else(|| {
        if runs.len() == 1 {
            format!("Latency report: {}", runs[0].0)
        } else {
            format!("Latency comparison of {} runs", runs.len())
        }
    });

    let mut body = String::new();
    body.push_str(&format!(
        "<header><div class=\"brand\">candor</div><h1>{}</h1>",
        esc(&title)
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

    // Headline cards for each run.
    body.push_str(if runs.len() > 2 {
        "<section class=\"cards many\">"
    } else {
        "<section class=\"cards\">"
    });
    for (i, ((label, r), rec)) in runs.iter().zip(&decoded).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let target = r
            .main
            .rate
            .target_per_s
            .map_or("closed loop".to_string(), |t| {
                format!("target {}", format_rate(t))
            });
        body.push_str(&format!(
            "<div class=\"card\" style=\"border-top-color:{color}\"><div class=\"card-label\"><span class=\"swatch\" style=\"background:{color}\"></span>{}</div>\
             <div class=\"metrics\"><div><span class=\"k\">p50</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">p99</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">p99.9</span><span class=\"v\">{}</span></div>\
             <div><span class=\"k\">max</span><span class=\"v\">{}</span></div></div>\
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
    body.push_str(&crate::html_stop::stop_section(runs, &PALETTE));

    body.push_str(
        "<section><h2>Percentile spectrum</h2><p class=\"note\">Latency at each percentile, on the classic \
         1/(1−p) axis so the tail gets the room it deserves. Solid: response time (from the intended send \
         time, what users wait). Dashed: service time (from the actual send). A gap between them is \
         queueing the server caused.</p><div class=\"chart\" id=\"spectrum\"></div></section>",
    );

    if !options.slos.is_empty() {
        body.push_str("<section><h2>Service-level objectives</h2><table class=\"grid\"><thead><tr><th>Objective</th>");
        for (l, _) in runs {
            body.push_str(&format!("<th>{}</th>", esc(l)));
        }
        body.push_str("</tr></thead><tbody>");
        for s in &options.slos {
            body.push_str(&format!(
                "<tr><th>{}: p{} ≤ {}</th>",
                esc(&s.label),
                format!("{}", s.percentile).trim_end_matches(".0"),
                format_ns(s.threshold_ns as f64)
            ));
            for rec in &decoded {
                let v = value_at(&rec.response, s.percentile);
                let ok = v <= s.threshold_ns;
                body.push_str(&format!(
                    "<td class=\"{}\">{} {}</td>",
                    if ok { "pass" } else { "fail" },
                    format_ns(v as f64),
                    if ok { "✓ met" } else { "✗ missed" }
                ));
            }
            body.push_str("</tr>");
        }
        body.push_str("</tbody></table></section>");
    }

    body.push_str("<section><h2>Summary</h2>");
    let notes = caveats(runs);
    if !notes.is_empty() {
        body.push_str("<div class=\"caveats\"><h3>Sample support and verdicts</h3><ul>");
        for (i, note) in notes {
            body.push_str(&format!(
                "<li><span class=\"swatch\" style=\"background:{}\"></span><b>{}</b>: {}</li>",
                PALETTE[i % PALETTE.len()],
                esc(&runs[i].0),
                esc(&note)
            ));
        }
        body.push_str("</ul><p class=\"note\">Grey cells below are such percentiles: shown, but not to be relied on.</p></div>");
    }
    type Pick = fn(&RunResults) -> Option<&Summary>;
    let measures: [(&str, Pick); 4] = [
        ("Response time", |r| Some(&r.main.response_time)),
        ("Service time", |r| Some(&r.main.service_time)),
        ("Send lag", |r| Some(&r.main.send_lag)),
        // Only pages of runs that recorded first bytes show the table.
        ("First byte", |r| r.main.first_byte.as_ref()),
    ];
    for (title, pick) in measures {
        if runs.iter().all(|(_, r)| pick(r).is_none()) {
            continue;
        }
        body.push_str(&format!(
            "<h3>{title}</h3><table class=\"grid num\"><thead><tr><th>Run</th><th>count</th><th>p50</th><th>p90</th>\
             <th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>mean</th><th>stdev</th></tr></thead><tbody>"
        ));
        for (i, (label, r)) in runs.iter().enumerate() {
            let Some(s) = pick(r) else {
                continue;
            };
            body.push_str(&format!(
                "<tr><th><span class=\"swatch\" style=\"background:{}\"></span>{}</th><td>{}</td>{}</tr>",
                PALETTE[i % PALETTE.len()],
                esc(label),
                format_count(s.count),
                summary_row(s)
            ));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str(
        "<h3>Requests</h3><table class=\"grid num\"><thead><tr><th>Run</th><th>intended</th><th>completed</th>\
         <th>failed</th><th>unfinished at end</th><th>failures by class</th><th>status classes</th>\
         <th>status codes</th><th>target rate</th><th>achieved</th></tr></thead><tbody>",
    );
    for (i, (label, r)) in runs.iter().enumerate() {
        let q = &r.main.requests;
        let e = &q.errors;
        let st = &q.status;
        let unknown = || "<span class=\"unknown\">unknown</span>".to_string();
        let books = Books::of(r);
        let full = books == Books::Full;
        let known = |v: String| if full { esc(&v) } else { unknown() };
        let target_rate = match (books, r.main.rate.target_per_s) {
            (_, Some(t)) => format_rate(t),
            (Books::LatencyOnly, None) => unknown(),
            _ => "closed loop".into(),
        };
        body.push_str(&format!(
            "<tr><th><span class=\"swatch\" style=\"background:{}\"></span>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            PALETTE[i % PALETTE.len()],
            esc(label),
            known(format_count(q.intended)),
            if books == Books::LatencyOnly {
                count_noun(r.main.response_time.count, "latency", "latencies")
            } else {
                format_count(q.completed)
            },
            if books == Books::LatencyOnly { unknown() } else { format_count(q.failed) },
            known(format_count(q.in_flight_at_end)),
            known(crate::html_workload::nonzero_classes(&e.by_class())),
            known(crate::html_workload::nonzero_classes(&st.by_class())),
            // Older files and raw TCP runs have no codes; gRPC runs add their status names.
            match (r.main.status_codes.is_empty(), r.main.grpc_status.is_empty()) {
                (true, _) => "—".to_string(),
                (false, true) => {
                    esc(&candor_core::results::status_codes_line(&r.main.status_codes))
                }
                (false, false) => format!(
                    "{}<br>gRPC: {}",
                    esc(&candor_core::results::status_codes_line(&r.main.status_codes)),
                    esc(&candor_core::results::grpc_status_line(&r.main.grpc_status))
                ),
            },
            target_rate,
            format_rate(r.main.rate.achieved_per_s),
        ));
    }
    body.push_str("</tbody></table>");
    for (label, r) in runs {
        let faults = &r.main.connection_faults;
        if faults.is_empty() {
            continue;
        }
        let mut causes: Vec<(&String, &u64)> = faults.iter().collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let causes: Vec<String> = causes
            .iter()
            .map(|(cause, n)| format!("{} ×{}", esc(cause), format_count(**n)))
            .collect();
        body.push_str(&format!(
            "<p class=\"warn\">Connection faults of {}: {}</p>",
            esc(label),
            causes.join("; ")
        ));
    }
    body.push_str("</section>");
    body.push_str(&crate::html_workload::sections(runs, &PALETTE));
    body.push_str(&crate::html_stream::section(runs, &PALETTE));

    // The band is drawn only where a run has warm-up intervals; so is the sentence about it.
    let warmup = if runs
        .iter()
        .any(|(_, r)| r.intervals.iter().any(|iv| iv.warmup))
    {
        " The shaded band is the warm-up, excluded from every summary."
    } else {
        ""
    };
    body.push_str(&format!("<section><h2>Over time</h2><p class=\"note\">Per interval, by completion time.{warmup}</p>"));
    for (i, (label, _)) in runs.iter().enumerate() {
        body.push_str(&format!(
            "<h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3><div class=\"chart\" id=\"lat-{i}\"></div><div class=\"chart short\" id=\"rate-{i}\"></div>",
            PALETTE[i % PALETTE.len()],
            esc(label)
        ));
    }
    body.push_str("</section>");

    body.push_str("<section><h2>Environment and configuration</h2><div class=\"envs\">");
    for (label, r) in runs {
        let e = &r.environment;
        let mut rows = vec![
            ("kind".to_string(), format!("{} ({})", r.kind, r.mode)),
            ("target".into(), r.target.clone()),
            ("start time".into(), utc(r.start_time_unix_s)),
            ("candor version".into(), r.candor_version.clone()),
            (
                "command line".into(),
                if r.command_line.is_empty() {
                    "—".into()
                } else {
                    r.command_line.join(" ")
                },
            ),
            (
                "CPU".into(),
                if e.cpu_model.is_empty() {
                    "unknown".into()
                } else {
                    e.cpu_model.clone()
                },
            ),
            ("cores".into(), e.cores.to_string()),
            (
                "kernel".into(),
                if e.kernel.is_empty() {
                    "unknown".into()
                } else {
                    e.kernel.clone()
                },
            ),
            (
                "host".into(),
                if e.hostname.is_empty() {
                    "unknown".into()
                } else {
                    e.hostname.clone()
                },
            ),
            ("schema".into(), r.schema_version.to_string()),
        ];
        config_rows(&r.config.to_value(), "config", &mut rows);
        body.push_str(&format!(
            "<div class=\"env\"><h3>{}</h3>{}</div>",
            esc(label),
            kv_table(&rows)
        ));
    }
    body.push_str("</div></section>");
    body.push_str(&format!(
        "<footer>Generated by candor {} from {} result file{}. Percentiles come from full HdrHistograms \
         (3 significant digits); merged runs add histograms, never average percentiles. \
         Charts: uPlot (MIT).</footer>",
        env!("CARGO_PKG_VERSION"),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    ));

    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title>\n{}\n<style>{}</style>\n<style>{}</style>\n</head><body>\n{}\n\
         <script type=\"application/json\" id=\"candor-data\">{}</script>\n<script>{}</script>\n<script>{}</script>\n</body></html>\n",
        esc(&title),
        ERROR_CAPTURE,
        UPLOT_CSS,
        PAGE_CSS,
        body,
        data_text,
        UPLOT_JS,
        PAGE_JS
    ))
}

/// The page without the vendored library, for snapshot tests that should not churn when uPlot is
/// upgraded.
pub fn strip_vendored(page: &str) -> String {
    page.replace(UPLOT_JS, "/* uPlot */")
        .replace(UPLOT_CSS, "/* uPlot css */")
}

/// The report page of labelled runs as an export (`candor report -o`).
pub struct HtmlExporter(pub HtmlOptions);

impl crate::export::Exporter<[(String, RunResults)]> for HtmlExporter {
    fn export(&self, runs: &[(String, RunResults)]) -> Result<Vec<u8>, crate::export::ExportError> {
        write_html(runs, &self.0)
            .map(String::into_bytes)
            .map_err(|e| crate::export::ExportError::Format(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::{write_html, HtmlOptions};
    use super::{Slo, SloParseError};
    use crate::synthetic::synthetic_run;

    fn page(drop_warmup: bool) -> String {
        let mut r = synthetic_run(3, 4, 200, 1_000_000, 0);
        if drop_warmup {
            r.intervals.retain(|iv| !iv.warmup);
            r.warmup = None;
        }
        write_html(&[("a".into(), r)], &HtmlOptions::default()).unwrap()
    }

    #[test]
    fn the_warm_up_band_is_explained_only_when_there_is_one() {
        let sentence = "The shaded band is the warm-up";
        assert!(page(false).contains(sentence));
        assert!(!page(true).contains(sentence));
        assert!(page(true).contains("Per interval, by completion time.</p>"));
    }

    #[test]
    fn legend_samples_are_lines_solid_or_dashed_as_drawn() {
        // The markers follow each series' dash (uPlot's default is one solid square for all),
        // and the stylesheet draws a marker of a line series as a line, not a square. A browser
        // checks the drawn result in tests/browser.rs.
        let html = page(false);
        assert!(html.contains(
            "opts.legend.markers.dash = function (u, i) { return u.series[i].dash ? \"dashed\" : \"solid\"; }"
        ));
        assert!(html.contains(".u-legend .line-sample .u-marker { width:22px; height:0;"));
        assert!(html.contains("legendSamples(opts);"));
    }

    #[test]
    fn status_codes_and_connection_faults_are_shown() {
        let mut r = crate::synthetic::synthetic_run(1, 3, 100, 1_000_000, 0);
        let page = |r: &candor_core::results::RunResults| {
            super::write_html(
                &[("one".to_string(), r.clone())],
                &super::HtmlOptions {
                    title: None,
                    slos: Vec::new(),
                },
            )
            .unwrap()
        };
        assert!(!page(&r).contains("Connection faults"));
        r.main.status_codes = [("200".to_string(), 9000), ("404".to_string(), 12)]
            .into_iter()
            .collect();
        r.main.connection_faults = [("connect refused or failed".to_string(), 5)]
            .into_iter()
            .collect();
        let html = page(&r);
        assert!(html.contains("<td>200 ×9,000  404 ×12</td>"), "codes");
        assert!(
            html.contains("Connection faults of one: connect refused or failed ×5"),
            "faults"
        );
    }

    #[test]
    fn slo_parsing() {
        assert_eq!(
            Slo::parse("p99=5ms"),
            Ok(Slo {
                label: "p99".into(),
                percentile: 99.0,
                threshold_ns: 5_000_000
            })
        );
        assert_eq!(Slo::parse("api:p99.9<=20ms").unwrap().percentile, 99.9);
        assert_eq!(Slo::parse("api:p99.9<=20ms").unwrap().label, "api");
        assert_eq!(Slo::parse("max=1s").unwrap().percentile, 100.0);
        for bad in ["p99", "p101=1ms", "x=1ms", "p99=fast"] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_slo_that_does_not_parse_says_which_and_why() {
        assert_eq!(
            Slo::parse("p99").unwrap_err().to_string(),
            "invalid SLO 'p99': expected [NAME:]pPERCENTILE=DURATION, like p99=5ms or api:p99.9=20ms"
        );
        let e = Slo::parse("p99=fast").unwrap_err();
        assert!(matches!(e, SloParseError::Duration { .. }), "{e:?}");
        assert!(e.to_string().starts_with("invalid SLO 'p99=fast': "), "{e}");
    }
}
