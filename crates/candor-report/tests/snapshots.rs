//! Snapshot tests of every exporter on deterministic synthetic results, plus round trips.
//! Regenerate the expected files with `UPDATE_SNAPSHOTS=1 cargo test -p candor-report --test snapshots`
//! and review the diff.

use candor_core::results::RunResults;
use candor_report::comparison::{compare_text, ComparisonMeasure};
use candor_report::exact_merge::merge;
use candor_report::hgrm::{parse_hgrm, write_hgrm, MS_RATIO};
use candor_report::hlog::{
    read_hlog, results_from_hlog, write_hlog, TimeRange, TAG_SEND_LAG, TAG_SERVICE_TIME,
};
use candor_report::html::{strip_vendored, write_html, HtmlOptions, Slo};
use candor_report::synthetic::synthetic_run;

fn snapshot(name: &str, actual: &str) {
    let path = format!("{}/tests/snapshots/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var("UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run with UPDATE_SNAPSHOTS=1 to create it)"));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b);
        panic!(
            "{name} differs from its snapshot (first differing line {:?}); rerun with UPDATE_SNAPSHOTS=1 and review",
            first.map(|l| l + 1)
        );
    }
}

fn small() -> RunResults {
    synthetic_run(21, 5, 400, 1_000_000, 2)
}

#[test]
fn hlog_snapshot_and_round_trip() {
    let r = small();
    let text = write_hlog(&r);
    snapshot("run.hlog", &text);
    let log = read_hlog(&text, &TimeRange::default()).unwrap();
    assert_eq!(log.format_version.as_deref(), Some("1.3"));
    assert_eq!(log.start_time_s, Some(r.start_time_unix_s));
    // Warm-up intervals are left out, so the log's totals are the measured window's.
    let main = r.main.histograms.decode().unwrap();
    assert_eq!(log.stream(None).count(), 5);
    for (tag, h) in [
        (None, &main.response),
        (Some(TAG_SERVICE_TIME), &main.service),
        (Some(TAG_SEND_LAG), &main.send_lag),
    ] {
        let total = log.total(tag);
        assert_eq!(total.len(), h.len(), "{tag:?}");
        let a: Vec<_> = total
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<_> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b, "{tag:?}: every bucket survives the log");
    }
    // Relative range, Java semantics: intervals starting at 2.0 and 3.0 s.
    let part = read_hlog(&text, &TimeRange::relative(Some(2.0), Some(3.0))).unwrap();
    assert_eq!(
        part.stream(None)
            .map(|i| i.offset_start_s)
            .collect::<Vec<_>>(),
        vec![2.0, 3.0]
    );
    // Back into results: the same summaries as the run's.
    let back = results_from_hlog(&log, None, "run.hlog");
    assert_eq!(back.main.response_time, r.main.response_time);
    assert_eq!(back.main.service_time, r.main.service_time);
    assert_eq!(back.intervals.len(), 5);
}

#[test]
fn hgrm_snapshot_and_parse() {
    let r = small();
    let h = r.main.histograms.decode().unwrap().response;
    let text = write_hgrm(&h, 5, MS_RATIO);
    snapshot("response.hgrm", &text);
    let parsed = parse_hgrm(&text).unwrap();
    assert_eq!(parsed.total_count, Some(h.len()));
    assert_eq!(parsed.rows.last().unwrap().percentile, 1.0);
    assert_eq!(parsed.rows.last().unwrap().total_count, h.len());
    let max_ms = h.max() as f64 / 1e6;
    assert!((parsed.max.unwrap() - max_ms).abs() < 0.001);
}

#[test]
fn compare_snapshot() {
    let runs = vec![
        ("A".to_string(), synthetic_run(31, 5, 400, 1_000_000, 0)),
        ("B".to_string(), synthetic_run(32, 5, 400, 1_000_000, 0)),
        (
            "C, stalls".to_string(),
            synthetic_run(33, 5, 400, 1_500_000, 2),
        ),
    ];
    snapshot(
        "compare.txt",
        &compare_text(&runs, ComparisonMeasure::ResponseTime).unwrap(),
    );
}

#[test]
fn merge_snapshot() {
    let m = merge(&[
        synthetic_run(41, 3, 200, 1_000_000, 0),
        synthetic_run(42, 3, 200, 2_000_000, 0),
    ])
    .unwrap();
    snapshot("merged.json", &m.to_json_pretty());
    // Floats may move by an ulp through serde_json; the histograms and counts must not move at all.
    let back = RunResults::from_json(&m.to_json_pretty()).unwrap();
    assert_eq!(back.main.histograms, m.main.histograms);
    assert_eq!(back.main.requests, m.main.requests);
    assert_eq!(back.intervals.len(), m.intervals.len());
}

#[test]
fn html_snapshot() {
    let runs = vec![
        ("one".to_string(), synthetic_run(51, 4, 300, 1_000_000, 0)),
        (
            "two <b>".to_string(),
            synthetic_run(52, 4, 300, 1_200_000, 2),
        ),
    ];
    let options = HtmlOptions {
        title: Some("Snapshot & test".into()),
        slos: vec![Slo {
            label: "p99".into(),
            percentile: 99.0,
            threshold_ns: 4_000_000,
        }],
    };
    let page = write_html(&runs, &options).unwrap();
    assert!(page.contains("two &lt;b&gt;"), "labels are escaped");
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "no network resources"
    );
    snapshot("report.html", &strip_vendored(&page));
}
