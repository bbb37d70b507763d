//! The workload's parts of the page (stages, request names, the profile on the charts) checked
//! on whole pages.

use super::workload::*;
use super::{write_html, HtmlOptions};
use crate::synthetic::{synthetic_run, synthetic_workload_run};
use candor_core::units::{format_count, format_rate};
use serde_json::{json, Value};

/// The page's data block, parsed.
fn data(page: &str) -> Value {
    let start = page.find("id=\"candor-data\">").unwrap() + "id=\"candor-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn the_profile_line_holds_ramps_and_starts_with_the_warm_up() {
    let r = synthetic_workload_run(1, 400, &["home"]);
    // One warm-up second, then 400/s for 2 s and 400..800/s for 3 s.
    assert_eq!(
        profile(&r),
        [
            (0.0, 400.0),
            (1.0, 400.0),
            (1.0, 400.0),
            (3.0, 400.0),
            (3.0, 400.0),
            (6.0, 800.0)
        ]
    );
    let line = profile(&r);
    assert_eq!(mean_over(&line, 1.0, 2.0), Some(400.0));
    // The ramp's first second: 400 → 533.3, mean 466.7.
    let m = mean_over(&line, 3.0, 4.0).unwrap();
    assert!((m - 1400.0 / 3.0).abs() < 1e-9, "{m}");
    // Half an interval past the end: the intended rate is 0 there.
    assert_eq!(mean_over(&line, 6.0, 7.0), None);
    let m = mean_over(&line, 5.0, 7.0).unwrap();
    assert!((m - (2000.0 / 3.0 + 800.0) / 2.0 / 2.0).abs() < 1e-9, "{m}");
}

#[test]
fn the_page_carries_stage_marks_target_line_and_name_tables() {
    let r = synthetic_workload_run(1, 400, &["home", "<img src=x onerror=alert(1)>"]);
    let page = write_html(
        &[("staged".to_string(), r.clone())],
        &HtmlOptions::default(),
    )
    .unwrap();
    let d = data(&page);
    let w = &d["runs"][0]["workload"];
    // Stage boundaries on the time axis (after the 1 s warm-up) with their targets' words.
    assert_eq!(w["stages"][0]["x0"], 1.0);
    assert_eq!(w["stages"][1]["x0"], 3.0);
    assert_eq!(w["stages"][1]["x1"], 6.0);
    assert_eq!(w["stages"][1]["target"], "400.0/s \u{2192} 800.0/s");
    assert_eq!(w["profile"][5], json!([6.0, 800.0]));
    assert_eq!(
        w["target_mean"].as_array().unwrap().len(),
        r.intervals.len()
    );
    // Each name's curve runs to its own max, as the spectrum does.
    let names = w["names"].as_array().unwrap();
    assert_eq!(names.len(), 2);
    let max = r.workload.by_request["home"].response_time.max_ns;
    let home = names.iter().find(|n| n["label"] == "home").unwrap();
    let last = home["response"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|v| !v.is_null())
        .unwrap();
    assert_eq!(last.as_u64(), Some(max));
    assert!(page.contains("id=\"names-0\""));
    // The stage table: window, target, achieved and books of each stage.
    let stage2 = &r.workload.stages[1].results;
    assert!(page.contains(&format!(
        "<tr><th>2</th><td>2.0\u{2013}5.0 s</td><td>400.0/s \u{2192} 800.0/s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        format_rate(stage2.rate.achieved_per_s),
        format_count(stage2.requests.intended),
        format_count(stage2.requests.completed),
        format_count(stage2.requests.failed),
    )), "stage row");
    // The name table: the hostile name is text, in the table and in the data block.
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    // Markup only in the JSON data block, which the browser does not parse as HTML.
    let start = page.find("id=\"candor-data\">").unwrap();
    let end = start + page[start..].find("</script>").unwrap();
    assert!(!page[..start].contains("<img src=x") && !page[end..].contains("<img src=x"));
    assert_eq!(
        names
            .iter()
            .filter(|n| n["label"] == "<img src=x onerror=alert(1)>")
            .count(),
        1
    );
    let home_books = &r.workload.by_request["home"].requests;
    assert!(page.contains(&format!(
        "home</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        format_rate(r.workload.by_request["home"].rate.achieved_per_s),
        format_count(home_books.intended),
        format_count(home_books.completed),
        format_count(home_books.failed)
    )));
    // The second name got the two stalled seconds: their timeouts, and their 2xx.
    let row_at = page
        .find("&lt;img src=x onerror=alert(1)&gt;</th>")
        .unwrap();
    let row = &page[row_at..row_at + page[row_at..].find("</tr>").unwrap()];
    assert!(row.contains("<td>timeout 6</td><td>2xx 800</td>"), "{row}");
}

#[test]
fn a_name_that_would_end_the_script_stays_inside_it() {
    let r = synthetic_workload_run(1, 400, &["</script><script>alert(1)</script>"]);
    let page = write_html(&[("staged".to_string(), r)], &HtmlOptions::default()).unwrap();
    assert!(!page.contains("</script><script>alert(1)"));
    assert_eq!(
        data(&page)["runs"][0]["workload"]["names"][0]["label"],
        "</script><script>alert(1)</script>"
    );
}

#[test]
fn runs_without_stages_or_names_render_as_before() {
    let r = synthetic_run(1, 5, 400, 1_000_000, 2);
    let page = write_html(&[("plain".to_string(), r)], &HtmlOptions::default()).unwrap();
    assert!(data(&page)["runs"][0].get("workload").is_none());
    assert!(!page.contains("id=\"stages\""));
    assert!(!page.contains("id=\"by-request\""));
    assert!(sections(&[], &["#000"]).is_empty());
}
