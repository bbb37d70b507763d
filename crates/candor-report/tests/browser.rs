//! The HTML report renders in a real browser (headless Chromium): no script errors, every chart
//! painted, and a screenshot kept as a test artefact for people to look at.
//!
//! Chromium comes from scripts/install-test-deps.sh: the tests are ignored by a plain `cargo test`
//! and run by scripts/test.sh (`--include-ignored`), where a missing Chromium fails them.

use candor_report::html::{write_html, HtmlOptions, Slo};
use candor_report::synthetic::synthetic_run;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn artefact_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("candor-report-artefacts");
    std::fs::create_dir_all(&dir).expect("create artefact dir");
    dir
}

fn chromium() -> Option<PathBuf> {
    for c in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(c).exists() {
            return Some(PathBuf::from(c));
        }
    }
    None
}

/// Runs chromium with the flags a sandboxed CI needs, bounded by a timeout.
fn run_chromium(exe: &Path, extra: &[String], url: &str) -> (String, String) {
    let profile = tempdir();
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        // Virtual time lets the page's timers (the paint check) run before the dump.
        "--virtual-time-budget=8000",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    cmd.args(extra);
    cmd.arg(url);
    // Files, not pipes: the DOM dump is larger than a pipe buffer and nothing reads it meanwhile.
    let out_path = profile.join("stdout.txt");
    let err_path = profile.join("stderr.txt");
    cmd.stdout(std::fs::File::create(&out_path).expect("stdout file"));
    cmd.stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let mut child = cmd.spawn().expect("start chromium");
    // Generous: a cold Chromium start on a loaded 2-core CI machine takes a few seconds.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let stderr = std::fs::read(&err_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn tempdir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let p = std::env::temp_dir().join(format!("candor-chromium-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&p).expect("temp profile dir");
    p
}

/// The text of every legend value cell (`<td class="u-value">...</td>`) of the dumped DOM.
fn legend_values(dom: &str) -> Vec<String> {
    let key = "class=\"u-value\">";
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find(key) {
        rest = &rest[i + key.len()..];
        let end = rest.find('<').unwrap_or(rest.len());
        out.push(rest[..end].replace("&nbsp;", " "));
    }
    out
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = dom.find(&key)? + key.len();
    let end = dom[start..].find('"')? + start;
    Some(dom[start..end].to_string())
}

#[test]
#[ignore = "needs Chromium: scripts/test.sh"]
fn report_renders_in_headless_chromium() {
    let exe = chromium().expect("chromium not found: run scripts/install-test-deps.sh");
    let mut runs = vec![
        (
            "baseline 2k/s".to_string(),
            synthetic_run(11, 30, 2000, 800_000, 0),
        ),
        (
            "patched 2k/s, stalls".to_string(),
            synthetic_run(12, 30, 2000, 1_100_000, 7),
        ),
    ];
    // The second run's window starts 100 s into its file (as a slice or a log can): its time axes
    // must start there, not at 0.
    for iv in &mut runs[1].1.intervals {
        iv.start_s += 100.0;
    }
    // The first run stopped on --precision: the page says so, with the interval reached.
    runs[0].1.stop_reason = Some(candor_core::results::StopReason::Precision);
    runs[0].1.stop = Some(candor_core::results::StopDetail {
        at_s: 31.0,
        intervals: 30,
        precision: vec![candor_core::results::PrecisionRow {
            percentile: 99.0,
            target: 0.05,
            samples: 60_000,
            estimate_ns: 1_000_000,
            ci_low_ns: Some(980_000),
            ci_high_ns: Some(1_030_000),
            half_width: Some(0.03),
            reached: true,
        }],
        objective: None,
        detail: "every --precision target was reached".into(),
    });
    let options = HtmlOptions {
        title: None,
        slos: vec![
            Slo {
                label: "interactive".into(),
                percentile: 99.0,
                threshold_ns: 5_000_000,
            },
            Slo {
                label: "tail".into(),
                percentile: 99.9,
                threshold_ns: 20_000_000,
            },
        ],
    };
    let page = write_html(&runs, &options).expect("report");
    let dir = artefact_dir();
    let html = dir.join("report.html");
    std::fs::write(&html, &page).expect("write report");
    let url = format!("file://{}", html.display());

    let (dom, log) = run_chromium(&exe, &["--dump-dom".to_string()], &url);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:#?}"
    );
    assert_eq!(
        attr(&dom, "data-js-error"),
        None,
        "script error recorded on the page"
    );
    let expected = attr(&dom, "data-charts-expected").expect("the page's chart check ran");
    let drawn = attr(&dom, "data-charts-drawn").expect("the page's chart check ran");
    // One spectrum plus two time charts per run.
    assert_eq!(expected, "5");
    assert_eq!(drawn, expected, "every chart painted");
    assert!(dom.contains("uplot"), "uPlot built its DOM");
    // The spectrum runs to each run's max (it used to stop at 99.99%, hiding it).
    assert_eq!(
        attr(&dom, "data-spectrum-reaches-max").as_deref(),
        Some("true"),
        "every response curve ends at its max inside the drawn x range"
    );
    // Over-time axes start at the window's start (the first interval's start), not at 0 or the
    // first point.
    assert_eq!(
        attr(&dom, "data-time-axes-start-at-window").as_deref(),
        Some("true")
    );
    // Legends read without hovering: the static DOM (no cursor) holds each series' p99 and max
    // and no placeholder.
    let legends = legend_values(&dom);
    assert!(!legends.is_empty(), "legends found");
    assert!(
        legends
            .iter()
            .all(|v| !v.trim().is_empty() && !v.contains('\u{2014}') && v != "--"),
        "no placeholder in a static legend: {legends:?}"
    );
    for (label, r) in &runs {
        let rec = r.main.histograms.decode().unwrap();
        let max = candor_core::units::format_ns(rec.response.max() as f64).replace("us", "\u{b5}s");
        assert!(
            legends
                .iter()
                .any(|v| v.starts_with("p99 ") && v.ends_with(&format!("max {max}"))),
            "{label}: legend shows its max {max}: {legends:?}"
        );
    }
    // Legend samples are lines as drawn: the dashed service curve's sample is dashed, the
    // response curve's solid (uPlot alone draws the same square for both).
    assert!(
        dom.contains("u-series line-sample"),
        "line series have line samples"
    );
    for style in ["px dashed", "px solid"] {
        assert!(dom.contains(style), "a legend marker drawn {style}");
    }
    // The stop reason and the precision reached are on the page, for the run that has them.
    assert_eq!(attr(&dom, "data-stop-reason").as_deref(), Some("precision"));
    assert!(dom.contains("<th>p99=±5%</th>"), "precision row shown");
    assert_eq!(dom.matches("data-stop-reason=").count(), 1);
    // The text report's sample-support caveats and both targets are on the page.
    assert!(dom.contains("not enough samples for"), "caveats shown");
    for (label, r) in &runs {
        assert!(
            dom.contains(&format!("<b>{label}</b>: {}", r.target)),
            "header names {label}'s target"
        );
    }

    let shot = dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &exe,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,4300".to_string(),
        ],
        &url,
    );
    let meta = std::fs::metadata(&shot).expect("screenshot written");
    assert!(
        meta.len() > 50_000,
        "screenshot is suspiciously small: {} bytes",
        meta.len()
    );
    eprintln!("report: {}\nscreenshot: {}", html.display(), shot.display());
}

/// The sweep page: drawn, styled like the run report, legends readable without hovering, and a
/// verdict for every step.
#[test]
#[ignore = "needs Chromium: scripts/test.sh"]
fn sweep_page_renders_with_verdicts_and_static_legends() {
    use candor_analysis::sweep_results::{SweepResults, SweepStep};
    use candor_core::results::SCHEMA_VERSION;
    let exe = chromium().expect("chromium not found: run scripts/install-test-deps.sh");
    let steps: Vec<SweepStep> = [(1000.0, 900_000), (2000.0, 1_200_000), (4000.0, 9_000_000)]
        .iter()
        .enumerate()
        .map(|(i, &(rate, base))| {
            let mut results = synthetic_run(20 + i as u64, 5, rate as u64, base, 0);
            results.main.rate.target_per_s = Some(rate);
            SweepStep {
                offered_per_s: rate,
                results,
                slo: vec![],
                saturation: None,
            }
        })
        .collect();
    let sweep = SweepResults {
        schema_version: SCHEMA_VERSION,
        kind: candor_core::results::Kind::Sweep,
        candor_version: "test".into(),
        target: "http://127.0.0.1:9/".into(),
        command_line: vec![],
        steps,
    };
    let page = candor_report::sweep_html::write_sweep_html(&sweep, None);
    let html = artefact_dir().join("sweep.html");
    std::fs::write(&html, &page).expect("write sweep page");
    let url = format!("file://{}", html.display());
    let (dom, _) = run_chromium(&exe, &["--dump-dom".to_string()], &url);
    assert_eq!(attr(&dom, "data-js-error"), None, "script error recorded");
    assert_eq!(attr(&dom, "data-charts-drawn").as_deref(), Some("2"));
    // The run report's look: its header and grid table.
    assert!(
        dom.contains("<div class=\"brand\">candor</div>"),
        "report header"
    );
    assert!(dom.contains("class=\"grid num\""), "report table style");
    let legends = legend_values(&dom);
    assert!(legends.len() >= 9, "both legends: {legends:?}");
    assert!(
        legends
            .iter()
            .all(|v| !v.trim().is_empty() && !v.contains('\u{2014}') && v != "--"),
        "no placeholder in a static legend: {legends:?}"
    );
    // One verdict per step, never blank: the last cell of each body row.
    let rows: Vec<&str> = dom
        .split("<tr><th>")
        .skip(1)
        .filter(|r| !r.starts_with("offered<"))
        .collect();
    assert_eq!(rows.len(), 3, "{dom}");
    for row in rows {
        let last = row.rsplit("<td>").next().unwrap();
        let verdict = &last[..last.find("</td>").unwrap()];
        assert!(!verdict.trim().is_empty(), "verdict filled: {row}");
    }
}

/// A run of a load profile with named requests: the stage boundaries and the target line are
/// drawn on the charts over time, the overlay of the names is painted, and a hostile name stays
/// text (no script error, no element made of it).
#[test]
#[ignore = "needs Chromium: scripts/test.sh"]
fn stages_and_names_render_in_headless_chromium() {
    let exe = chromium().expect("chromium not found: run scripts/install-test-deps.sh");
    let hostile = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">";
    let r = candor_report::synthetic::synthetic_workload_run(5, 800, &["home", hostile]);
    let page = write_html(&[("staged".to_string(), r)], &HtmlOptions::default()).expect("report");
    let html = artefact_dir().join("report-stages.html");
    std::fs::write(&html, &page).expect("write report");
    let url = format!("file://{}", html.display());
    let (dom, _) = run_chromium(&exe, &["--dump-dom".to_string()], &url);
    assert_eq!(
        attr(&dom, "data-js-error"),
        None,
        "script error recorded on the page"
    );
    assert_eq!(attr(&dom, "data-pwned"), None, "the hostile name ran");
    // The spectrum, latency and throughput over time, and the names' overlay.
    assert_eq!(attr(&dom, "data-charts-expected").as_deref(), Some("4"));
    assert_eq!(attr(&dom, "data-charts-drawn").as_deref(), Some("4"));
    // Two stages: three boundaries on each of the two charts over time.
    assert_eq!(attr(&dom, "data-stage-marks").as_deref(), Some("6"));
    // The warm-up and two stages: six corners of the target line.
    assert_eq!(attr(&dom, "data-target-corners").as_deref(), Some("6"));
    // Both names are in the overlay's legend, the hostile one as text.
    let legends = legend_values(&dom);
    assert_eq!(
        legends
            .iter()
            .filter(|v| v.starts_with("p99 ") && *v != "p99 \u{b7} max")
            .count(),
        2 + 2,
        "the spectrum's response and service curves and one curve per name: {legends:?}"
    );
    assert!(legends.iter().any(|v| v == "load profile"), "{legends:?}");
    assert!(
        dom.contains("&lt;img src=x"),
        "the hostile name shown as text"
    );
    let shot = artefact_dir().join("report-stages.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &exe,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,4300".to_string(),
        ],
        &url,
    );
    assert!(std::fs::metadata(&shot).expect("screenshot written").len() > 50_000);
}

/// An LLM run's page: the stream spectra, TTFT, goodput and tokens/s over time draw beside the
/// usual charts, with no script error.
#[test]
#[ignore = "needs Chromium: scripts/test.sh"]
fn an_llm_runs_stream_charts_render_in_headless_chromium() {
    use candor_core::results::{Goodput, LlmTokens, NamedHistogram, StreamResults};
    use candor_core::stream_measures::{IntervalStream, StreamMeasure};
    let exe = chromium().expect("chromium not found: run scripts/install-test-deps.sh");
    let mut r = synthetic_run(13, 10, 100, 50_000_000, 3);
    // TTFT from the run's own response times, ITL a tenth of them: shapes, not a server's truth.
    let rec = r.main.histograms.decode().unwrap();
    let mut itl = candor_core::new_histogram();
    for v in rec.response.iter_recorded() {
        itl.record_n(v.value_iterated_to() / 10, v.count_at_value())
            .unwrap();
    }
    for (m, h) in [
        (StreamMeasure::Ttft, &rec.response),
        (StreamMeasure::TtftService, &rec.service),
        (StreamMeasure::Itl, &itl),
    ] {
        r.extra.push(NamedHistogram::of(m.name(), h));
        r.main
            .set_stream_summary(m, Some(candor_core::Summary::of(h)));
    }
    for iv in &mut r.intervals {
        let d = iv.histograms.decode().unwrap();
        iv.stream = Some(
            IntervalStream::of(
                iv.completed,
                iv.completed * 10,
                Some(iv.completed * 8),
                iv.length_s,
                [(StreamMeasure::Ttft, &d.response)],
            )
            .with_goodput(iv.completed * 9 / 10, iv.length_s),
        );
    }
    let n = r.main.requests.completed;
    r.main.stream = Some(StreamResults {
        responses: r.main.requests.completed,
        events: r.main.requests.completed * 10,
        events_per_response: 10.0,
        failures: Default::default(),
        llm: Some(LlmTokens {
            output_tokens: r.main.requests.completed * 8,
            output_tokens_per_s: 800.0,
            counted_from_usage: r.main.requests.completed,
            counted_from_chunks: 0,
            ..Default::default()
        }),
        goodput: Some(Goodput::of("ttft<1s".into(), n * 9 / 10, n, n, 10.0)),
    });
    let runs = vec![("llm".to_string(), r)];
    let page = write_html(&runs, &HtmlOptions::default()).expect("report");
    assert!(page.contains("id=\"stream-spectrum-0\"") && page.contains("id=\"tokens-0\""));
    let html = artefact_dir().join("report-llm.html");
    std::fs::write(&html, &page).expect("write report");
    let (dom, _) = run_chromium(
        &exe,
        &["--dump-dom".to_string()],
        &format!("file://{}", html.display()),
    );
    assert_eq!(
        attr(&dom, "data-js-error"),
        None,
        "script error on the page"
    );
    // The spectrum, two time charts, the stream spectra, TTFT over time, goodput over time and
    // tokens/s.
    assert_eq!(attr(&dom, "data-charts-expected").as_deref(), Some("7"));
    assert_eq!(
        attr(&dom, "data-charts-drawn"),
        attr(&dom, "data-charts-expected"),
        "every chart painted"
    );
    assert!(
        dom.contains("Stream measures by percentile"),
        "stream spectra drawn"
    );
    assert!(
        dom.contains("Output tokens per second per interval"),
        "tokens/s drawn"
    );
    assert!(
        dom.contains("TTFT per interval (from the intended send)"),
        "TTFT over time drawn"
    );
    assert!(
        dom.contains("Goodput per interval: responses/s that met every objective"),
        "goodput over time drawn"
    );
}
