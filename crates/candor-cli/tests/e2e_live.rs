//! `candor run --live` end to end: the real binary against `candor serve`, with its live page,
//! event stream and metrics read over HTTP, scraped by a real Prometheus, and drawn by headless
//! Chromium.
//!
//! Prometheus (with promtool) and Chromium come from scripts/install-test-deps.sh. Their tests are
//! ignored by a plain `cargo test` and run by scripts/test.sh (`--include-ignored`), where a
//! missing tool fails them.

mod common;
#[path = "support/live.rs"]
mod live;

use common::{assert_balanced, candor, pct, serial, Server};
use live::{artefact_dir, body, http_get, temp_dir, Killed, LiveRun, Prometheus, PATIENCE};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The value of an unlabelled sample (or with the exact label text given) in an exposition.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in metrics"))
        .parse()
        .unwrap()
}

/// Reads the event stream until its closing event.
fn read_events(addr: SocketAddr) -> Vec<serde_json::Value> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
    let mut events = Vec::new();
    for line in BufReader::new(s).lines() {
        let line = line.expect("stream read");
        if let Some(json) = line.strip_prefix("data: ") {
            let v: serde_json::Value = serde_json::from_str(json).expect("event JSON");
            let done = v["done"] == true;
            events.push(v);
            if done {
                break;
            }
        }
    }
    events
}

#[test]
fn live_address_errors_come_before_any_load() {
    let _g = serial();
    // The target counts connections: a bad --live must not lead to a single one.
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    target.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", target.local_addr().unwrap());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    for (live, needle) in [
        (busy.as_str(), "cannot listen on"),
        ("nonsense", "invalid --live address"),
        ("127.0.0.1:70000", "invalid --live address"),
    ] {
        let out = candor()
            .args(["run", "-d", "1s", "--live", live, &url])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "--live {live} should fail");
        assert!(err.contains(needle), "--live {live}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty());
    }
    assert!(
        target.accept().is_err(),
        "the target saw a connection before the error"
    );
}

#[test]
fn live_run_streams_events_and_metrics_that_match_the_results() {
    let _g = serial();
    let server = Server::start(&[]);
    // The linger keeps the server up while the test reads the final state; the test stops
    // the process itself.
    let run = LiveRun::start(&[
        "-R",
        "400",
        "-d",
        "4s",
        "-c",
        "4",
        "--quiet",
        "--json",
        "-",
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let a = run.addr;
    // Clients that misbehave during the run: garbage, a silent one, one that leaves mid-stream.
    let mut garbage = TcpStream::connect(a).unwrap();
    garbage
        .write_all(b"\x16\x03\x01\x02\x00 not http\r\n\r\n")
        .unwrap();
    let _silent = TcpStream::connect(a).unwrap();
    {
        let mut leaver = TcpStream::connect(a).unwrap();
        leaver.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
    }
    let page = http_get(a, "/");
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{}", &page[..60]);
    assert!(page.contains("uPlot") && page.contains("EventSource"));

    let events = read_events(a);
    let (last, intervals) = events.split_last().unwrap();
    assert_eq!(last["done"], true);
    assert!(intervals.len() >= 3, "{} intervals", intervals.len());
    for w in intervals.windows(2) {
        assert!(w[0]["elapsed_s"].as_f64() < w[1]["elapsed_s"].as_f64());
        assert!(w[0]["requests"]["completed"].as_u64() <= w[1]["requests"]["completed"].as_u64());
    }
    for e in intervals {
        assert_eq!(e["done"], false);
        assert_eq!(e["target_per_s"], 400.0);
        assert!(e["achieved_per_s"].as_f64().unwrap() >= 0.0);
        assert!(e["response_time"]["p99_ns"].is_u64());
        assert!(e["service_time"]["max_ns"].is_u64());
        assert!(e["send_lag"]["count"].is_u64());
    }
    let metrics = http_get(a, "/metrics");
    assert!(metrics.contains("Content-Type: text/plain; version=0.0.4"));
    let metrics = body(&metrics);
    assert_eq!(sample(metrics, "candor_run_finished"), 1.0);

    let results = run.stdout_json();
    let main = &results;
    assert_balanced(main);
    let r = &main["requests"];
    for k in ["intended", "completed", "failed"] {
        assert_eq!(last["requests"][k], r[k], "final event {k}");
    }
    assert_eq!(last["requests"]["in_flight"], r["in_flight_at_end"]);
    assert_eq!(
        sample(metrics, "candor_requests_completed_total"),
        r["completed"].as_f64().unwrap()
    );
    assert_eq!(
        sample(metrics, "candor_requests_intended_total"),
        r["intended"].as_f64().unwrap()
    );
    // No warm-up: the histograms of the intervals hold exactly the measured requests.
    assert_eq!(
        sample(metrics, "candor_response_time_seconds_count"),
        main["response_time"]["count"].as_f64().unwrap()
    );
    assert_eq!(
        last["summary"]["response_time"]["p99_ns"].as_f64().unwrap(),
        pct(main, "response_time", 99.0)
    );
}

/// A run whose every response fails its body check: the failures are in `/metrics` (class
/// `check`, so intended = completed + failed + in flight there), in the events and the page's
/// data, the responses are counted by status code there and in the results, and the achieved
/// rate counts the answered responses.
#[test]
fn check_failures_and_status_codes_reach_the_live_view() {
    let _g = serial();
    let server = Server::start(&[]);
    let run = LiveRun::start(&[
        "-R",
        "200",
        "-d",
        "2s",
        "-c",
        "2",
        "--quiet",
        "--json",
        "-",
        "--check-body",
        "no such text",
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let a = run.addr;
    let events = read_events(a);
    let last = events.last().unwrap();
    let results = run.stdout_json();
    assert_balanced(&results);
    let r = &results["requests"];
    let checks = r["errors"]["check"].as_u64().unwrap();
    assert_eq!(
        checks,
        r["intended"].as_u64().unwrap(),
        "every one failed its check"
    );
    assert_eq!(results["status_codes"]["200"].as_u64(), Some(checks));
    assert_eq!(last["failures"]["check"].as_u64(), Some(checks));
    assert_eq!(last["status_codes"]["200"].as_u64(), Some(checks));
    let achieved = last["achieved_per_s"].as_f64().unwrap();
    assert!(
        (achieved - results["rate"]["achieved_per_s"].as_f64().unwrap()).abs() < 1e-6,
        "{achieved}"
    );
    assert!(achieved > 0.0);
    let metrics = http_get(a, "/metrics");
    let metrics = body(&metrics);
    assert_eq!(
        sample(metrics, "candor_requests_failed_total{class=\"check\"}"),
        checks as f64
    );
    let failed: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("candor_requests_failed_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(
        sample(metrics, "candor_requests_intended_total"),
        sample(metrics, "candor_requests_completed_total")
            + failed
            + sample(metrics, "candor_requests_in_flight")
    );
    assert_eq!(
        sample(metrics, "candor_responses_total{code=\"200\"}"),
        checks as f64
    );
}

/// A `--live` run against a stalling server (1 s every 5 s: a known, wide distribution) scraped
/// every second by a real Prometheus (`native`: with native histograms, so over the protobuf
/// exposition), until Prometheus holds the final state; returns Prometheus, candor's results and
/// the run (the live server lingers until it is dropped).
fn scraped_stalling_run(tag: &str, native: bool) -> (Prometheus, serde_json::Value, LiveRun) {
    let server = Server::start(&["--stall-every", "5s", "--stall-for", "1s"]);
    let dir = temp_dir(tag);
    let json = dir.join("results.json");
    let run = LiveRun::start(&[
        "-R",
        "200",
        "-d",
        "10s",
        "-c",
        "50",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let prom = Prometheus::start(run.addr, native);
    // The results file appears when the run is over (the server lingers on).
    let deadline = Instant::now() + PATIENCE;
    let results: serde_json::Value = loop {
        if let Some(v) = std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
        {
            break v;
        }
        assert!(Instant::now() < deadline, "no results file");
        std::thread::sleep(Duration::from_millis(200));
    };
    let completed = results["requests"]["completed"].as_f64().unwrap();
    // Scrapes every second; wait (bounded) until Prometheus holds the final state.
    let deadline = Instant::now() + PATIENCE;
    loop {
        if prom.query("candor_run_finished") == Some(1.0)
            && prom.query("candor_requests_completed_total") == Some(completed)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw the final state: finished {:?}, completed {:?} of {completed}",
            prom.query("candor_run_finished"),
            prom.query("candor_requests_completed_total")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = std::fs::remove_dir_all(&dir);
    (prom, results, run)
}

/// Prometheus's `histogram_quantile` of `series` at 0.9 and 0.99 against candor's percentiles:
/// each within `bound` (relative), written to the artefacts as `artefact`.
fn quantiles_agree(
    prom: &Prometheus,
    results: &serde_json::Value,
    series: &str,
    bound: f64,
    artefact: &str,
) {
    let mut report = String::new();
    let mut worst = 0.0f64;
    for q in [0.9, 0.99] {
        let theirs = prom
            .query(&format!("histogram_quantile({q}, {series})"))
            .unwrap_or_else(|| panic!("no quantile of {series}"));
        let ours = pct(results, "response_time", q * 100.0) / 1e9;
        assert!(ours > 0.1, "the stalls make a wide distribution: {ours}");
        let err = (theirs - ours).abs() / ours;
        worst = worst.max(err);
        report += &format!(
            "q {q}: Prometheus histogram_quantile({q}, {series}) = {theirs:.6} s, candor {ours:.6} s, {:.3}%\n",
            err * 100.0
        );
    }
    eprint!("{report}");
    let _ = std::fs::write(artefact_dir().join(artefact), &report);
    assert!(worst <= bound, "{report}");
}

/// Classic buckets (text exposition): Prometheus interpolates inside the log-linear bucket where
/// the quantile falls, and candor's percentile is counted in that same bucket (both use the
/// HdrHistogram bucket's highest equivalent), so the two agree to the bucket's width: 10%.
#[test]
#[ignore = "needs Prometheus: scripts/test.sh"]
fn prometheus_scrapes_the_run_and_agrees_with_candor() {
    let _g = serial();
    let (prom, results, run) = scraped_stalling_run("live-prom", false);
    let count_prom = prom
        .query("candor_response_time_seconds_count")
        .expect("count");
    assert_eq!(
        count_prom,
        results["response_time"]["count"].as_f64().unwrap()
    );
    let bound = candor_live::MAX_RELATIVE_WIDTH;
    quantiles_agree(
        &prom,
        &results,
        "candor_response_time_seconds_bucket",
        bound,
        "prometheus.txt",
    );
    quantiles_agree(
        &prom,
        &results,
        "sum by (le) (candor_response_time_seconds_bucket)",
        bound,
        "prometheus-merged.txt",
    );
    let _ = std::fs::write(
        artefact_dir().join("metrics.txt"),
        body(&http_get(run.addr, "/metrics")),
    );
}

/// Native histograms: a Prometheus with `--enable-feature=native-histograms` asks for the
/// protobuf exposition and reads the schema-7 buckets (0.54% wide): within 2% of candor.
#[test]
#[ignore = "needs Prometheus: scripts/test.sh"]
fn prometheus_reads_the_native_histograms_of_the_protobuf_exposition() {
    let _g = serial();
    let (prom, results, _run) = scraped_stalling_run("live-prom-native", true);
    // Native: one series without _bucket; its count is the results'.
    let count = prom
        .query("histogram_count(candor_response_time_seconds)")
        .expect("a native histogram in Prometheus");
    assert_eq!(count, results["response_time"]["count"].as_f64().unwrap());
    quantiles_agree(
        &prom,
        &results,
        "candor_response_time_seconds",
        0.02,
        "prometheus-native.txt",
    );
}

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Runs headless Chromium on `url` with `extra` flags, bounded; returns stdout and stderr.
fn run_chromium(exe: &Path, extra: &[String], url: &str) -> (String, String) {
    let profile = temp_dir("chromium");
    let out_path = profile.join("stdout.txt");
    let err_path = profile.join("stderr.txt");
    let mut child = Killed(
        Command::new(exe)
            .args([
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
            ])
            .arg(format!(
                "--user-data-dir={}",
                profile.join("profile").display()
            ))
            .args(extra)
            .arg(url)
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("start chromium"),
    );
    let deadline = Instant::now() + PATIENCE;
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "chromium did not finish in time");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_dir_all(&profile);
    (out, err)
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = dom.find(&key)? + key.len();
    let end = dom[start..].find('"')? + start;
    Some(dom[start..end].to_string())
}

/// Elapsed seconds of the run's latest interval, and whether the run has ended, from its metrics
/// (before the run has begun, the exposition is empty: no time, not ended).
fn progress(addr: SocketAddr) -> (f64, bool) {
    let r = http_get(addr, "/metrics");
    let m = body(&r);
    if !m.contains("candor_run_elapsed_seconds ") {
        return (0.0, false);
    }
    (
        sample(m, "candor_run_elapsed_seconds"),
        sample(m, "candor_run_finished") == 1.0,
    )
}

#[test]
#[ignore = "needs Chromium: scripts/test.sh"]
fn live_page_draws_and_updates_in_headless_chromium() {
    let exe = chromium().expect("chromium not found: run scripts/install-test-deps.sh");
    let _g = serial();
    let server = Server::start(&["--delay", "1ms"]);
    let run = LiveRun::start(&[
        "-R",
        "300",
        "-d",
        "15s",
        "-c",
        "8",
        "--quiet",
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let url = format!("http://{}/", run.addr);
    // Mid-run: once a few intervals exist, a screenshot for people to look at.
    let deadline = Instant::now() + PATIENCE;
    while progress(run.addr).0 < 3.0 {
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(200));
    }
    let shot = artefact_dir().join("live-page.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &exe,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,1300".to_string(),
        ],
        &url,
    );
    let size = std::fs::metadata(&shot).expect("screenshot written").len();
    assert!(size > 50_000, "screenshot suspiciously small: {size} bytes");

    // The DOM once the page has followed the stream to its end. Virtual time waits for the open
    // event stream, so the dump comes after the closing event.
    let (before, ended_before) = progress(run.addr);
    let (dom, log) = run_chromium(
        &exe,
        &[
            "--dump-dom".to_string(),
            "--virtual-time-budget=10000".to_string(),
        ],
        &url,
    );
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
        "script error on the page"
    );
    assert_eq!(
        attr(&dom, "data-done").as_deref(),
        Some("1"),
        "the page saw the end"
    );
    let events: u32 = attr(&dom, "data-events").unwrap().parse().unwrap();
    let redraws: u32 = attr(&dom, "data-redraws").unwrap().parse().unwrap();
    assert!(events >= 4, "{events} events");
    assert_eq!(redraws, events, "every event redrew the charts");
    assert_eq!(attr(&dom, "data-charts-expected").as_deref(), Some("5"));
    assert_eq!(
        attr(&dom, "data-charts-drawn"),
        attr(&dom, "data-charts-expected"),
        "every chart painted"
    );
    // Intervals that did not exist when the page was opened reached it: it updated live. (Only
    // checkable if the run was still going then; a very slow machine may have taken the whole
    // run to produce the screenshot.)
    let last: f64 = attr(&dom, "data-last-elapsed").unwrap().parse().unwrap();
    if ended_before {
        eprintln!("the run had ended before the page was opened: live updates not checked");
    } else {
        assert!(
            last > before,
            "last interval {last} s, page opened at {before} s"
        );
    }
    assert!(dom.contains("Run finished"), "the page says the run ended");
    eprintln!("live page screenshot: {}", shot.display());
}

#[test]
fn sweep_streams_every_step_then_ends() {
    let _g = serial();
    let server = Server::start(&[]);
    let mut child = Killed(
        candor()
            .args([
                "sweep",
                "--rates",
                "200,300",
                "-d",
                "1s",
                "--warmup",
                "500ms",
                "--pause",
                "200ms",
                "-c",
                "4",
                "--quiet",
                "--live",
                "127.0.0.1:0",
                "--live-linger",
                "5m",
                &server.url,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let mut line = String::new();
    let mut r = BufReader::new(stderr);
    let addr: SocketAddr = loop {
        line.clear();
        assert!(
            r.read_line(&mut line).unwrap() > 0,
            "no live address printed"
        );
        if let Some(rest) = line.split("live view at http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    // Drain stderr so the process never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
    // The stream ends after the last step's closing event, not after the first step's.
    let events = read_events_to_end(addr);
    let done: Vec<&serde_json::Value> = events.iter().filter(|e| e["done"] == true).collect();
    assert_eq!(done.len(), 2, "one closing event per step");
    assert_eq!(done[0]["run"], 1);
    assert_eq!(done[0]["last"], false);
    assert_eq!(done[1]["run"], 2);
    assert_eq!(done[1]["last"], true);
    let first_of_run2 = events.iter().position(|e| e["run"] == 2).unwrap();
    assert!(events[..first_of_run2].iter().all(|e| e["run"] == 1));
    assert_eq!(events[first_of_run2]["target_per_s"], 300.0);
    assert_eq!(events.last().unwrap()["last"], true);
}

/// Reads the event stream until the server ends it.
fn read_events_to_end(addr: SocketAddr) -> Vec<serde_json::Value> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
    BufReader::new(s)
        .lines()
        .map(|l| l.expect("stream read"))
        .filter_map(|l| Some(serde_json::from_str(l.strip_prefix("data: ")?).expect("event JSON")))
        .collect()
}

#[test]
fn ctrl_c_ends_a_long_linger() {
    let _g = serial();
    let server = Server::start(&[]);
    let mut run = LiveRun::start(&[
        "-R",
        "100",
        "-d",
        "1s",
        "--quiet",
        "--json",
        "-",
        "--live-linger",
        "1h",
        &server.url,
    ]);
    // Once the results are out, the process lingers; SIGINT must end it (an hour otherwise).
    let results = run.stdout_json();
    assert_eq!(results["kind"], "run");
    let pid = run._child.0.id() as i32;
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(s) = run._child.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still lingering after Ctrl-C");
        // Repeated: the results are printed a moment before the linger starts listening.
        // SAFETY: kill only sends a signal to our own (not yet reaped) child process.
        unsafe { libc::kill(pid, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(status.success(), "{status}");
}

/// An LLM run's live view: each interval's event carries its streams (TTFT percentiles, output
/// tokens and tokens/s), and `/metrics` the stream measures' histograms and the output tokens,
/// equal to the results' at the end.
#[test]
fn an_llm_runs_stream_measures_and_tokens_reach_the_live_view() {
    let _g = serial();
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "10ms",
        "--itl",
        "2ms",
        "--output-tokens",
        "4",
    ]);
    let run = LiveRun::start(&[
        "--llm",
        "openai",
        "--prompt-tokens",
        "8",
        "--output-tokens",
        "4",
        "-R",
        "50",
        "-d",
        "2s",
        "-c",
        "8",
        "--quiet",
        "--json",
        "-",
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let a = run.addr;
    let events = read_events(a);
    let (_, intervals) = events.split_last().unwrap();
    let results = run.stdout_json();
    assert_balanced(&results);
    let tokens = results["stream"]["llm"]["output_tokens"].as_u64().unwrap();
    assert_eq!(tokens, 400, "100 responses of 4 tokens");
    let streamed: Vec<_> = intervals
        .iter()
        .filter(|e| !e["stream"].is_null())
        .collect();
    assert!(!streamed.is_empty(), "interval events carry their streams");
    let in_events: u64 = streamed
        .iter()
        .map(|e| e["stream"]["output_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert!(in_events <= tokens && in_events > 0, "{in_events}");
    assert!(streamed
        .iter()
        .any(|e| e["stream"]["ttft"]["p99_ns"].as_u64().unwrap_or(0) >= 10_000_000));
    assert!(streamed
        .iter()
        .all(|e| e["stream"]["output_tokens_per_s"].as_f64().is_some()));
    let metrics = http_get(a, "/metrics");
    let metrics = body(&metrics);
    assert_eq!(sample(metrics, "candor_output_tokens_total"), tokens as f64);
    assert_eq!(
        sample(metrics, "candor_ttft_seconds_count"),
        results["ttft"]["count"].as_f64().unwrap()
    );
    assert_eq!(
        sample(metrics, "candor_itl_seconds_count"),
        results["itl"]["count"].as_f64().unwrap()
    );
    assert!(metrics.contains("# TYPE candor_tpot_seconds histogram"));
    // No goodput bounds: no good counter (its absence is not "none good").
    assert!(!metrics.contains("candor_good_requests_total"), "{metrics}");
    assert_eq!(
        sample(metrics, "candor_stream_events_total"),
        results["stream"]["events"].as_f64().unwrap()
    );
}

/// A run with `--goodput`: `/metrics` carries `candor_good_requests_total`, scraped while the
/// run goes: it never falls, and at the end it is the results' good count (and the sum of the
/// intervals' goodput over time, no warm-up).
#[test]
fn goodput_is_a_rising_counter_in_the_live_metrics() {
    let _g = serial();
    let server = Server::start(&["--llm", "--ttft", "5ms", "--output-tokens", "4"]);
    let run = LiveRun::start(&[
        "--llm",
        "openai",
        "--output-tokens",
        "4",
        "--goodput",
        "ttft<5s",
        "-R",
        "40",
        "-d",
        "2s",
        "-c",
        "8",
        "--quiet",
        "--json",
        "-",
        "--live-linger",
        "5m",
        &server.url,
    ]);
    let a = run.addr;
    let good = |m: &str| {
        m.contains("candor_good_requests_total ")
            .then(|| sample(m, "candor_good_requests_total"))
    };
    let (mut seen, start) = (Vec::new(), Instant::now());
    let last = loop {
        let r = http_get(a, "/metrics");
        let m = body(&r);
        let finished =
            m.contains("candor_run_finished ") && sample(m, "candor_run_finished") == 1.0;
        seen.extend(good(m));
        if finished {
            break good(m).expect("a goodput run's final metrics carry the good counter");
        }
        assert!(start.elapsed() < PATIENCE, "the run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    let results = run.stdout_json();
    assert_balanced(&results);
    let final_good = results["stream"]["goodput"]["good"].as_f64().unwrap();
    assert!(final_good > 0.0, "{results}");
    assert_eq!(last, final_good);
    let over_time: u64 = results["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["stream"]["good"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(over_time as f64, final_good);
}
