//! The HTML report: one self-contained page (uPlot inlined, no network) with the percentile
//! spectrum, latency and throughput over time, summary tables, environment and configuration of
//! one or several runs, overlaid with a legend so systems and loads can be compared; with load
//! profiles and named requests, their stages and names (`workload.rs`), streamed responses
//! (`stream.rs`) and how runs stopped (`stop.rs`). The page is put together here from its parts,
//! top to bottom; `format.rs`, `error.rs`, `options.rs` and `assets.rs` are what the parts share.
//! `sweep.rs` is the page of a throughput sweep.

mod assets;
mod charts;
mod environment;
mod error;
mod format;
mod headline;
mod options;
mod stop;
#[cfg(test)]
mod stop_tests;
mod stream;
mod stream_tables;
#[cfg(test)]
mod stream_tests;
mod summary;
pub mod sweep;
mod sweep_llm;
mod workload;
#[cfg(test)]
mod workload_tests;

use assets::{PAGE_CSS, UPLOT_CSS, UPLOT_JS};
use candor_core::results::RunResults;
pub use error::HtmlError;
use format::{esc, spectrum_grid};
pub use options::{HtmlOptions, Slo, SloParseError};

const PAGE_JS: &str = include_str!("page.js");
/// Runs before anything else so that any script error, even in the library, is recorded on the
/// page where automated checks (and people with devtools closed) can see it.
const ERROR_CAPTURE: &str = "<script>window.__candorErrors=[];addEventListener('error',function(e){__candorErrors.push(String(e.message));document.documentElement.setAttribute('data-js-error',__candorErrors.join(' | '))});</script>";

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
    let data_text = charts::data_block(runs, &decoded, &xs, options)?;

    let title = options.title.clone().unwrap_or_else(|| {
        if runs.len() == 1 {
            format!("Latency report: {}", runs[0].0)
        } else {
            format!("Latency comparison of {} runs", runs.len())
        }
    });

    let mut body = headline::header(runs, &title);
    body.push_str(&headline::cards(runs, &decoded));
    body.push_str(&headline::warnings(runs));
    body.push_str(&stop::stop_section(runs, &format::PALETTE));
    body.push_str(charts::SPECTRUM_SECTION);
    body.push_str(&summary::slo_section(runs, &decoded, &options.slos));
    body.push_str(&summary::summary_section(runs));
    body.push_str(&workload::sections(runs, &format::PALETTE));
    body.push_str(&stream::section(runs, &format::PALETTE));
    body.push_str(&charts::over_time_section(runs));
    body.push_str(&environment::environment_section(runs));
    body.push_str(&environment::footer(runs.len()));

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
    use super::{write_html, HtmlOptions, Slo, SloParseError};
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
