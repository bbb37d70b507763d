//! The live page: one self-contained HTML document (the vendored uPlot inlined, no network) that
//! follows `/events` and redraws its charts on every interval.

const UPLOT_JS: &str = include_str!("../../../vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../vendor/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("live.js");
const PAGE_CSS: &str = include_str!("live.css");
/// Runs before anything else so that any script error is recorded where automated checks (and
/// people with devtools closed) can see it.
const ERROR_CAPTURE: &str = "<script>window.__candorErrors=[];addEventListener('error',function(e){__candorErrors.push(String(e.message));document.documentElement.setAttribute('data-js-error',__candorErrors.join(' | '))});</script>";

const BODY: &str = r#"<header>
<h1>candor live</h1>
<div id="label" class="label"></div>
<div id="status" class="status">connecting&hellip;</div>
</header>
<div id="warnings" class="warnings" hidden></div>
<section class="facts">
<div><span class="k">elapsed</span> <span id="elapsed">&mdash;</span><div class="bar"><div id="progress"></div></div></div>
<div><span class="k">requests</span> <span id="requests">&mdash;</span></div>
<div><span class="k">in flight</span> <span id="inflight">&mdash;</span></div>
<div><span class="k">failures</span> <span id="failures">&mdash;</span></div>
<div><span class="k">status codes</span> <span id="codes">&mdash;</span></div>
<div><span class="k">rate</span> <span id="rate">&mdash;</span></div>
</section>
<section class="grid">
<figure><figcaption>Target vs achieved rate (per interval)</figcaption><div id="c-rate"></div></figure>
<figure><figcaption>Response time per interval (from the intended send) and service time p99</figcaption><div id="c-latency"></div></figure>
<figure><figcaption>Send lag per interval (actual minus intended send)</figcaption><div id="c-lag"></div></figure>
<figure><figcaption>Failures per interval by class, and requests in flight</figcaption><div id="c-failures"></div></figure>
<figure class="wide"><figcaption>Response time percentile spectrum of the measured window so far <span id="spectrum-max"></span></figcaption><div id="c-spectrum"></div></figure>
</section>
<footer>Also here: <a href="/metrics">/metrics</a> (Prometheus) and <a href="/events">/events</a> (Server-Sent Events). See docs/live.md.</footer>
"#;

/// The whole page.
pub fn html() -> String {
    let mut page = String::with_capacity(UPLOT_JS.len() + 32 * 1024);
    page.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    page.push_str("<title>candor live</title>");
    page.push_str(ERROR_CAPTURE);
    page.push_str("<style>");
    page.push_str(UPLOT_CSS);
    page.push_str(PAGE_CSS);
    page.push_str("</style></head><body>");
    page.push_str(BODY);
    page.push_str("<script>");
    page.push_str(UPLOT_JS);
    page.push_str("</script><script>");
    page.push_str(PAGE_JS);
    page.push_str("</script></body></html>");
    page
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_is_self_contained() {
        let p = super::html();
        assert!(p.contains("uPlot"));
        assert!(p.contains("new EventSource(\"/events\")"));
        // No network: nothing loaded from elsewhere.
        assert!(!p.contains("src=\"http"));
        assert!(!p.contains("href=\"http"));
    }
}
