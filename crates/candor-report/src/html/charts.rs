//! The page's charts: the data block the page's script draws them from (spectra, latency and
//! throughput over time, and the workload's and streams' parts) and the places on the page they
//! are drawn into.

use super::error::HtmlError;
use super::format::{esc, p99_max, spectrum, PALETTE};
use super::options::HtmlOptions;
use candor_core::results::RunResults;
use candor_core::Recorder;
use serde_json::{json, Value};

/// The data block of the page (`candor-data`), escaped for a `<script>` element.
pub(crate) fn data_block(
    runs: &[(String, RunResults)],
    decoded: &[Recorder],
    xs: &[f64],
    options: &HtmlOptions,
) -> Result<String, HtmlError> {
    let mut js_runs = Vec::new();
    for (i, ((label, r), rec)) in runs.iter().zip(decoded).enumerate() {
        js_runs.push(run_data(i, label, r, rec, xs)?);
    }
    let data = json!({
        "xs": xs,
        "runs": js_runs,
        "slos": options.slos.iter().map(|s| json!({"label": s.label, "percentile": s.percentile, "threshold_ns": s.threshold_ns})).collect::<Vec<_>>(),
    });
    Ok(crate::escape::script_json(&data.to_string()))
}

/// Run `i`'s entry of the data block: its spectra, its series over time, and its workload's and
/// streams' parts when it has them.
fn run_data(
    i: usize,
    label: &str,
    r: &RunResults,
    rec: &Recorder,
    xs: &[f64],
) -> Result<Value, HtmlError> {
    let color = PALETTE[i % PALETTE.len()];
    let ivs = &r.intervals;
    let t: Vec<f64> = ivs.iter().map(|iv| iv.start_s + iv.length_s).collect();
    let nz = |v: u64, c: u64| if c == 0 { None } else { Some(v) };
    let warmup_end = ivs
        .iter()
        .filter(|iv| iv.warmup)
        .map(|iv| iv.start_s + iv.length_s)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let workload = super::workload::chart_data(label, r, xs, &PALETTE)?;
    let mut js_run = json!({
        "label": label,
        "color": color,
        "count": rec.response.len(),
        "spectrum": {
            "response": spectrum(&rec.response, xs),
            "service": spectrum(&rec.service, xs),
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
    if let Some(s) = super::stream::chart_data(label, r, xs)? {
        js_run["stream"] = s;
    }
    Ok(js_run)
}

/// Where the spectrum is drawn, with what its lines mean.
pub(crate) const SPECTRUM_SECTION: &str = "<section><h2>Percentile spectrum</h2><p class=\"note\">Latency at each percentile, on the classic \
     1/(1−p) axis so the tail gets the room it deserves. Solid: response time (from the intended send \
     time, what users wait). Dashed: service time (from the actual send). A gap between them is \
     queueing the server caused.</p><div class=\"chart\" id=\"spectrum\"></div></section>";

/// Where each run's latency and throughput over time are drawn.
pub(crate) fn over_time_section(runs: &[(String, RunResults)]) -> String {
    let mut body = String::new();
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
    body
}
