//! The HTML page of a throughput sweep: response-time percentiles against offered load (one
//! curve per percentile, log scale) and achieved against offered rate, with the table; one
//! self-contained file with the vendored uPlot inlined.

use candor_analysis::late::count_noun;
use candor_analysis::sweep_results::{SweepResults, SWEEP_PERCENTILES};
use candor_core::units::{format_count, format_ns, format_rate};
use serde_json::json;

const COLOURS: [&str; 5] = ["#1f6fb2", "#2a9d5c", "#e08a1e", "#d1495b", "#7a7a7a"];

use super::assets::{PAGE_CSS, UPLOT_CSS, UPLOT_JS};
use crate::escape::html_text as esc;

/// Draws both charts from the data block and marks the page when done (for automated checks).
const SCRIPT: &str = r#"(function(){
var D=JSON.parse(document.getElementById('sweep-data').textContent);
function fmt(v){if(v==null)return'';var u=[[1e9,'s'],[1e6,'ms'],[1e3,'\u00b5s'],[1,'ns']];for(var i=0;i<u.length;i++){if(Math.abs(v)>=u[i][0]||i==u.length-1){var x=v/u[i][0];return (x>=100?x.toFixed(0):x>=10?x.toFixed(1):x.toFixed(2))+' '+u[i][1];}}}
function rate(v){return v>=1e6?(v/1e6).toFixed(2)+'M/s':v>=1e3?(v/1e3).toFixed(2)+'k/s':v.toFixed(0)+'/s';}
var w=Math.max(320,document.getElementById('latency').clientWidth-18);
var lat=[D.offered].concat(D.series.map(function(s){return s.values;}));
var ser=[{label:'offered',value:function(u,v){return v==null?D.offered.length+' steps':rate(v);}}].concat(D.series.map(function(s){return {label:s.label,stroke:s.colour,width:2,points:{show:true,size:6},value:function(u,v){return v==null?'highest '+fmt(Math.max.apply(null,s.values)):fmt(v);}};}));
new uPlot({width:w,height:380,scales:{x:{time:false},y:{distr:3}},series:ser,
 axes:[{label:'offered load (requests/s)',values:function(u,t){return t.map(rate);}},{label:'response time',size:70,values:function(u,t){return t.map(fmt);}}]},lat,document.getElementById('latency'));
new uPlot({width:w,height:300,scales:{x:{time:false}},
 series:[{label:'offered',value:function(u,v){return v==null?D.offered.length+' steps':rate(v);}},{label:'offered (ideal)',stroke:'#aaa',dash:[4,4],value:function(u,v){return v==null?'up to '+rate(Math.max.apply(null,D.offered)):rate(v);}},{label:'throughput',stroke:'#1f6fb2',width:2,points:{show:true,size:6},value:function(u,v){return v==null?'highest '+rate(Math.max.apply(null,D.achieved)):rate(v);}}],
 axes:[{label:'offered load (requests/s)',values:function(u,t){return t.map(rate);}},{label:'requests/s',size:70,values:function(u,t){return t.map(rate);}}]},[D.offered,D.offered,D.achieved],document.getElementById('rate'));
document.documentElement.setAttribute('data-charts-drawn','2');
})();"#;

/// The page for `sweep`. Pure: the same input gives the same bytes.
pub fn write_sweep_html(sweep: &SweepResults, title: Option<&str>) -> String {
    let offered: Vec<f64> = sweep.steps.iter().map(|s| s.offered_per_s).collect();
    let achieved: Vec<f64> = sweep
        .steps
        .iter()
        .map(|s| {
            candor_analysis::saturation::throughput(&s.results)
                .unwrap_or(s.results.main.rate.achieved_per_s)
        })
        .collect();
    let series: Vec<serde_json::Value> = SWEEP_PERCENTILES
        .iter()
        .zip(COLOURS)
        .map(|(&(label, p), colour)| {
            let values: Vec<u64> = sweep
                .steps
                .iter()
                .map(|s| s.results.main.response_time.at(p).unwrap_or(0).max(1))
                .collect();
            json!({"label": label, "colour": colour, "values": values})
        })
        .collect();
    let data = json!({"offered": offered, "achieved": achieved, "series": series});
    let llm_steps = crate::sweep_llm::llm_steps(sweep);
    let mut rows = String::new();
    for s in &sweep.steps {
        let m = &s.results.main;
        let done =
            candor_analysis::saturation::throughput(&s.results).unwrap_or(m.rate.achieved_per_s);
        rows.push_str(&format!(
            "<tr><th>{}</th><td>{}</td>",
            format_rate(s.offered_per_s),
            format_rate(done)
        ));
        for (_, p) in SWEEP_PERCENTILES {
            rows.push_str(&format!(
                "<td>{}</td>",
                format_ns(m.response_time.at(p).unwrap_or(0) as f64)
            ));
        }
        // The same verdict as the terminal table, never blank; the saturation detail on hover.
        let verdict = match &s.saturation {
            Some(why) => format!(
                "<span title=\"{}\">{}</span>",
                esc(why),
                esc(&s.verdict().join("; "))
            ),
            None => esc(&s.verdict().join("; ")),
        };
        rows.push_str(&format!(
            "<td>{}</td><td>{}</td></tr>\n",
            format_count(m.requests.failed + m.requests.in_flight_at_end),
            verdict
        ));
    }
    let head: String = SWEEP_PERCENTILES
        .iter()
        .map(|(l, _)| format!("<th>{l}</th>"))
        .collect();
    let title = title.map_or_else(
        || format!("candor sweep of {}", sweep.target),
        |t| t.to_string(),
    );
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title>\n\
         <style>{css}</style>\n<style>{page_css}</style></head><body>\n\
         <header><div class=\"brand\">candor</div><h1>{t}</h1><p class=\"sub\">{target} · {steps}</p></header>\n\
         <section><p class=\"note\">Response time is measured from each request's intended send time (open loop). Each \
         point is one step of the sweep; the percentile curves bend upwards where the offered load approaches capacity, \
         and throughput (completions per second during the measured window) falls below offered beyond it.</p>\
         <h2>Response time against offered load</h2><div class=\"chart\" id=\"latency\"></div>\
         <h2>Throughput against offered load</h2><div class=\"chart\" id=\"rate\"></div></section>\n\
         <section><h2>Steps</h2><table class=\"grid num\"><thead><tr><th>offered</th><th>throughput</th>{head}\
         <th>failed + unfinished</th><th>verdict</th></tr></thead><tbody>\n{rows}</tbody></table>\
         <p class=\"note\">The sweep's exit code is 0 whatever these verdicts: its top steps are meant to pass capacity. \
         <code>candor capacity</code> answers with its exit code whether a rate meets the SLOs.</p></section>\n\
         {llm}<footer>Generated by candor {version}. Charts: uPlot (MIT).</footer>\n\
         <script type=\"application/json\" id=\"sweep-data\">{data}</script>\n<script>{js}</script>\n<script>{script}</script>\n<script>{llm_script}</script>\n\
         </body></html>\n",
        data = crate::escape::script_json(&data.to_string()),
        t = esc(&title),
        target = esc(&sweep.target),
        steps = count_noun(sweep.steps.len() as u64, "step", "steps"),
        css = UPLOT_CSS,
        page_css = PAGE_CSS,
        version = esc(&sweep.candor_version),
        js = UPLOT_JS,
        script = SCRIPT,
        llm = super::sweep_llm::section(&llm_steps),
        llm_script = if llm_steps.is_empty() { "" } else { super::sweep_llm::SCRIPT },
    )
}

/// The sweep page as an export (`candor sweep -o`, `candor report` of a sweep).
pub struct SweepHtmlExporter {
    pub title: Option<String>,
}

impl crate::export::Exporter<SweepResults> for SweepHtmlExporter {
    fn export(&self, sweep: &SweepResults) -> Result<Vec<u8>, crate::export::ExportError> {
        Ok(write_sweep_html(sweep, self.title.as_deref()).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_analysis::sweep_results::SweepStep;
    use candor_core::results::*;

    #[test]
    fn page_has_both_charts_the_data_and_the_table() {
        let mut rec = candor_core::Recorder::new();
        rec.record(1_000_000, 900_000, 100);
        let results = RunResults {
            candor_version: "t".into(),
            ..RunResults::new(
                candor_core::results::Kind::Run,
                candor_core::results::Mode::OpenLoop,
                "http://127.0.0.1:1/",
                serde_json::Value::Null,
                PhaseResults::from_recorder(
                    &rec,
                    &candor_core::new_histogram(),
                    RequestCounts::default(),
                    1.0,
                    Some(1000.0),
                ),
            )
        };
        let sweep = SweepResults {
            schema_version: SCHEMA_VERSION,
            kind: candor_core::results::Kind::Sweep,
            candor_version: "t".into(),
            target: "http://127.0.0.1:1/<x>".into(),
            command_line: vec![],
            steps: vec![SweepStep {
                offered_per_s: 1000.0,
                results,
                slo: vec![],
                saturation: None,
            }],
        };
        let page = write_sweep_html(&sweep, None);
        assert!(page.contains("id=\"latency\"") && page.contains("id=\"rate\""));
        assert!(page.contains("\"offered\":[1000.0]"), "data block");
        assert!(page.contains("<th>1.00k/s</th>"));
        // The run report's styles.
        assert!(page.contains(PAGE_CSS) && page.contains("class=\"grid num\""));
        assert!(page.contains("&lt;x&gt;") && !page.contains("/<x>"));
        // The verdict column is filled even without SLOs or saturation.
        assert!(
            page.contains("<td>0</td><td>rate not reached</td></tr>"),
            "{page}"
        );
    }
}
