//! The stop-reason section checked on whole pages.

use super::stop::*;
use super::{write_html, HtmlOptions};
use candor_core::results::StopDetail;
use candor_core::results::{PrecisionRow, RunResults, StopReason};

fn run() -> RunResults {
    crate::synthetic::synthetic_run(3, 12, 500, 1_000_000, 0)
}

fn precision_row(reached: bool, samples: u64) -> PrecisionRow {
    PrecisionRow {
        percentile: 99.0,
        target: 0.05,
        samples,
        estimate_ns: 1_000_000,
        ci_low_ns: Some(980_000),
        ci_high_ns: Some(1_030_000),
        half_width: Some(0.03),
        reached,
    }
}

#[test]
fn the_page_shows_the_stop_reason_and_the_precision_reached() {
    let mut precise = run();
    precise.stop_reason = Some(StopReason::Precision);
    precise.stop = Some(StopDetail {
        at_s: 12.0,
        intervals: 10,
        precision: vec![precision_row(true, 12_000), {
            let mut r = precision_row(false, 900);
            r.percentile = 99.9;
            r.target = 0.1;
            r
        }],
        objective: None,
        detail: "every --precision target was reached".into(),
    });
    let mut aborted = run();
    aborted.stop_reason = Some(StopReason::Abort);
    aborted.stop = Some(StopDetail {
        at_s: 4.0,
        intervals: 3,
        precision: vec![],
        objective: Some("errors<1%".into()),
        detail: "objective errors<1% can no longer pass".into(),
    });
    let runs = vec![
        ("precise".to_string(), precise),
        ("plain".to_string(), run()),
        ("aborted".to_string(), aborted),
    ];
    let page = write_html(&runs, &HtmlOptions::default()).unwrap();
    assert!(page.contains("<h2>How the measured window ended</h2>"));
    assert!(page.contains(
        "data-stop-reason=\"precision\"><span class=\"swatch\" style=\"background:#1f6fb2\"></span>\
         <b>precise</b>: stop reason: <b>precision</b> (at 12.0 s, after 10 measured \
         intervals): every --precision target was reached</p>"
    ));
    assert!(
        page.contains(
            "<tr><th>p99=±5%</th><td>1.000ms</td><td>980.0\u{b5}s .. 1.030ms</td><td>±3.00%</td>\
         <td>12,000</td><td class=\"pass\">✓ reached</td></tr>"
        ),
        "{page}"
    );
    assert!(page.contains("<th>p99.9=±10%</th>"));
    assert!(page.contains(
        "<td class=\"fail\">✗ not reached: 900 of the ~100,000 samples p99.9 needs</td>"
    ));
    // The run without a stop has no line; the abort names its objective.
    assert!(!page.contains("<b>plain</b>: stop reason"));
    assert!(page.contains("data-stop-reason=\"abort\" style=\"color:var(--fail)\">"));
    assert!(page.contains(
        "<b>aborted</b>: <b>ABORTED</b> at 4.0 s, after 3 measured intervals: objective \
         errors&lt;1% can no longer pass (objective <code>errors&lt;1%</code>)</p>"
    ));
    assert_eq!(page.matches("class=\"stop-reason ").count(), 2);
}

#[test]
fn runs_without_a_stop_get_no_section() {
    let runs = vec![("plain".to_string(), run())];
    assert_eq!(stop_section(&runs, &["#000"]), "");
    let page = write_html(&runs, &HtmlOptions::default()).unwrap();
    assert!(!page.contains("How the measured window ended"));
}
