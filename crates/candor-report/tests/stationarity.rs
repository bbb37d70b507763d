//! The stationarity verdict reaches every report: a run whose per-interval latency climbs gets
//! the drift warning in the analysis JSON, the text report and the HTML page; a steady one is
//! called steady.

use candor_core::results::RunResults;
use candor_report::html::{write_html, HtmlOptions};
use candor_report::synthetic::synthetic_run;

/// A 20-second synthetic run whose measured intervals are replaced by intervals with typical
/// latency growing 5% a second (1 ms to 1.95 ms): a drift of about +50% from the first third
/// to the last, at p50 and p99 alike.
fn drifting() -> RunResults {
    let mut r = synthetic_run(5, 20, 300, 1_000_000, 0);
    for (i, iv) in r.intervals.iter_mut().filter(|i| !i.warmup).enumerate() {
        let base = 1_000_000 + 50_000 * i as u64;
        let one = synthetic_run(100 + i as u64, 1, 300, base, 0);
        iv.histograms = one.intervals[1].histograms.clone();
    }
    r
}

#[test]
fn a_drifting_run_is_warned_about_in_json_text_and_html() {
    let r = drifting();
    let a = candor_analysis::analyze(&r);
    let st = a.stationarity.as_ref().expect("intervals were tested");
    assert_eq!(st.verdict, candor_analysis::trend::Steadiness::Drifted);
    assert_eq!(st.intervals, 20);
    let json = a.to_value();
    assert_eq!(json["stationarity"]["verdict"], "drifted");
    let warning = json["stationarity"]["warnings"][0].as_str().unwrap();
    assert!(
        warning.starts_with("p50 rose ")
            && warning.ends_with(
                "% from the first third to the last: the system was not in a steady state; \
                 a longer warm-up or a lower rate may be needed"
            ),
        "{warning}"
    );

    let text = candor_report::text::render(&r);
    assert!(text.contains(&format!("VERDICT: {warning}")), "{text}");
    assert!(
        text.contains("stationarity: drifted over 20 intervals"),
        "{text}"
    );

    let page = write_html(&[("drift".into(), r)], &HtmlOptions::default()).unwrap();
    assert!(
        page.contains(&format!("verdict: {warning}")),
        "no warning in the page"
    );
}

#[test]
fn a_steady_run_is_called_steady_and_a_short_one_untested() {
    let r = synthetic_run(6, 20, 300, 1_000_000, 0);
    let a = candor_analysis::analyze(&r);
    assert_eq!(
        a.stationarity.as_ref().unwrap().verdict,
        candor_analysis::trend::Steadiness::Steady
    );
    assert!(candor_report::text::render(&r).contains("stationarity: steady"));
    let short = synthetic_run(6, 5, 300, 1_000_000, 0);
    let a = candor_analysis::analyze(&short);
    assert_eq!(
        a.stationarity.as_ref().unwrap().verdict,
        candor_analysis::trend::Steadiness::TooFewIntervals
    );
    assert!(candor_report::text::render(&short).contains("stationarity: not tested (5 measured"));
}
