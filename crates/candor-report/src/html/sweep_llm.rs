//! The LLM part of a sweep's page (`candor sweep --llm`): TTFT (from the intended and from the
//! actual send), TPOT and ITL p99 against offered load, output tokens per second and goodput
//! against offered load, and their table. Absent for a sweep whose steps are not LLM runs.

use crate::sweep_llm::LlmStep;
use candor_core::units::{format_ns, format_rate};
use serde_json::json;

/// Draws the two charts from `sweep-llm-data` and adds them to the page's count of drawn charts.
pub(crate) const SCRIPT: &str = r#"(function(){
var el=document.getElementById('sweep-llm-data');if(!el)return;
var D=JSON.parse(el.textContent);
function fmt(v){if(v==null)return'';var u=[[1e9,'s'],[1e6,'ms'],[1e3,'\u00b5s'],[1,'ns']];for(var i=0;i<u.length;i++){if(Math.abs(v)>=u[i][0]||i==u.length-1){var x=v/u[i][0];return (x>=100?x.toFixed(0):x>=10?x.toFixed(1):x.toFixed(2))+' '+u[i][1];}}}
function rate(v){return v==null?'':v>=1e6?(v/1e6).toFixed(2)+'M/s':v>=1e3?(v/1e3).toFixed(2)+'k/s':v.toFixed(1)+'/s';}
var w=Math.max(320,document.getElementById('llm-latency').clientWidth-18);
var off={label:'offered',value:function(u,v){return v==null?D.offered.length+' steps':rate(v);}};
function line(l,c,d){return {label:l,stroke:c,width:2,dash:d,points:{show:true,size:6},value:function(u,v){return v==null?'':fmt(v);}};}
new uPlot({width:w,height:360,scales:{x:{time:false},y:{distr:3}},
 series:[off,line('TTFT p99','#1f6fb2'),line('TTFT p99 (actual send)','#1f6fb2',[7,5]),line('TPOT p99','#8e5cc2'),line('ITL p99','#2a9d5c')],
 axes:[{label:'offered load (requests/s)',values:function(u,t){return t.map(rate);}},{label:'latency',size:70,values:function(u,t){return t.map(fmt);}}]},
 [D.offered,D.ttft,D.ttft_service,D.tpot,D.itl],document.getElementById('llm-latency'));
new uPlot({width:w,height:300,scales:{x:{time:false},y2:{}},
 series:[off,{label:D.rate_label,stroke:'#e08a1e',width:2,points:{show:true,size:6},value:function(u,v){return v==null?'':v.toFixed(1)+'/s';}},{label:'goodput (requests/s)',scale:'y2',stroke:'#2a9d5c',width:2,points:{show:true,size:6},value:function(u,v){return rate(v);}}],
 axes:[{label:'offered load (requests/s)',values:function(u,t){return t.map(rate);}},{label:D.rate_label,size:70},{label:'goodput (requests/s)',scale:'y2',side:1,size:70,grid:{show:false}}]},
 [D.offered,D.tokens,D.goodput],document.getElementById('llm-tokens'));
var h=document.documentElement;h.setAttribute('data-charts-drawn',String(Number(h.getAttribute('data-charts-drawn')||0)+2));
})();"#;

/// The section and its data block; empty when no step was an LLM run.
pub(crate) fn section(steps: &[LlmStep]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    // Embeddings have no tokens out: their steps are read by the inputs embedded per second.
    let embeddings = steps.iter().any(|s| s.inputs_per_s.is_some());
    let rate_label = if embeddings {
        "inputs/s"
    } else {
        "output tokens/s"
    };
    let rate_of = |s: &LlmStep| {
        if embeddings {
            s.inputs_per_s
        } else {
            s.output_tokens_per_s
        }
    };
    let data = json!({
        "rate_label": rate_label,
        "offered": steps.iter().map(|s| s.offered_per_s).collect::<Vec<_>>(),
        "ttft": steps.iter().map(|s| s.ttft_p99_ns).collect::<Vec<_>>(),
        "ttft_service": steps.iter().map(|s| s.ttft_service_p99_ns).collect::<Vec<_>>(),
        "tpot": steps.iter().map(|s| s.tpot_p99_ns).collect::<Vec<_>>(),
        "itl": steps.iter().map(|s| s.itl_p99_ns).collect::<Vec<_>>(),
        "tokens": steps.iter().map(rate_of).collect::<Vec<_>>(),
        "goodput": steps.iter().map(|s| s.goodput.map(|g| g.0)).collect::<Vec<_>>(),
    });
    let ns = |v: Option<u64>| v.map_or("-".to_string(), |v| format_ns(v as f64));
    let mut rows = String::new();
    for s in steps {
        rows.push_str(&format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            format_rate(s.offered_per_s),
            s.goodput.map_or("-".to_string(), |(g, share)| format!(
                "{} ({:.1}%)",
                format_rate(g),
                share * 100.0
            )),
            ns(s.ttft_p99_ns),
            ns(s.ttft_service_p99_ns),
            ns(s.tpot_p99_ns),
            ns(s.itl_p99_ns),
            rate_of(s).map_or("-".to_string(), |v| format!("{v:.1}")),
        ));
    }
    format!(
        "<section><h2>LLM measures against offered load</h2><p class=\"note\">TTFT from each \
         request's intended send (solid) and from its actual send (dashed, what a client that \
         times from its own send reports); goodput: requests per second that met every \
         per-request objective (absent without --goodput or an --slo on ttft, tpot or e2el).</p>\
         <div class=\"chart\" id=\"llm-latency\"></div><div class=\"chart\" id=\"llm-tokens\"></div>\
         <table class=\"grid num\"><thead><tr><th>offered</th><th>goodput</th><th>TTFT p99</th>\
         <th>TTFT p99 (actual send)</th><th>TPOT p99</th><th>ITL p99</th><th>{rate_label}</th>\
         </tr></thead><tbody>\n{rows}</tbody></table>\
         <script type=\"application/json\" id=\"sweep-llm-data\">{}</script></section>\n",
        crate::escape::script_json(&data.to_string())
    )
}
