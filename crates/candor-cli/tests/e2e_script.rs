//! `candor run -s script.lua` end to end: wrk's scripting API driven by the real binary against
//! local servers (the scripts are in `tests/scripts/`): pipelining, a login whose token later
//! requests carry, thread:get/set and the statistics objects in done(), response() failing
//! requests, names, thread:stop(), every bad-script case, and SIGINT ending an endless loop.

mod common;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;

use common::{assert_balanced, candor, pct, req, run_json_any, serial, Server};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name)
        .display()
        .to_string()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The token the login of `/login` answers with; `/api/...` wants it as a bearer token.
const TOKEN: &str = "t0k3n";

/// A server that records the head of every request and answers: `POST /login` with the token,
/// `/api/...` with 200 only when it carries the token (else 401 with `X-Why`), anything else 200.
/// Returns its URL and the heads it received; it serves until the test process ends.
fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    serve(false)
}

/// [`recording_server`]; with `hold_login`, the login is answered only once a request without
/// the token has been answered 401 on another connection (or after 10 s), so that a run with
/// several connections certainly sends some before the token is known.
fn serve(hold_login: bool) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    let refused = Arc::new((Mutex::new(false), Condvar::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            let refused = refused.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(head) = common::take_request_head(&mut buf) {
                        let answer = answer(&head);
                        let (flag, cond) = &*refused;
                        if answer.contains(" 401 ") {
                            *flag.lock().unwrap() = true;
                            cond.notify_all();
                        } else if hold_login && head.starts_with("POST /login") {
                            let held = flag.lock().unwrap();
                            let _ = cond
                                .wait_timeout_while(held, Duration::from_secs(10), |r| !*r)
                                .unwrap();
                        }
                        seen.lock().unwrap().push(head);
                        if stream.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, heads)
}

fn answer(head: &str) -> String {
    let line = head.lines().next().unwrap_or("");
    let (status, why, body) = if line.starts_with("POST /login ") {
        ("200 OK", "", format!("token={TOKEN}"))
    } else if line.contains(" /api/") {
        if head.contains(&format!("Authorization: Bearer {TOKEN}")) {
            ("200 OK", "", "ok".to_string())
        } else {
            ("401 Unauthorized", "X-Why: no-token\r\n", "no".to_string())
        }
    } else {
        ("200 OK", "", "ok".to_string())
    };
    format!(
        "HTTP/1.1 {status}\r\n{why}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn pipelined_requests_are_each_a_request_of_the_books() {
    let _s = serial();
    let (url, heads) = recording_server();
    let (v, out) = run_json_any(&[
        "-R",
        "600",
        "-n",
        "300",
        "-c",
        "2",
        "--pipeline",
        "3",
        "-t",
        "1",
        "-s",
        &script("pipeline.lua"),
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    // request() returned three requests a call: 300 entries are 100 calls, every request
    // answered and counted once, as wrk counts each response.
    assert_eq!(req(&v, "intended"), 300);
    assert_eq!(req(&v, "completed"), 300);
    assert!(
        text(&out).contains("100 request() and 0 response() calls"),
        "{}",
        text(&out)
    );
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 300);
    for i in 1..=3 {
        let path = format!("GET /p/{i} HTTP/1.1");
        assert_eq!(heads.iter().filter(|h| h.starts_with(&path)).count(), 100);
    }
}

#[test]
fn a_login_token_from_response_is_carried_by_later_requests_in_an_open_loop() {
    let _s = serial();
    let (url, heads) = recording_server();
    // One connection: the login is answered before the next request is made, so the script
    // always has its token when it needs it (the script decides what it sends meanwhile).
    let (v, out) = run_json_any(&[
        "-R",
        "500",
        "-n",
        "200",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("token.lua"),
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 200, "{}", text(&out));
    let heads = heads.lock().unwrap();
    assert_eq!(
        heads
            .iter()
            .filter(|h| h.starts_with("POST /login"))
            .count(),
        1
    );
    let with_token = format!("Authorization: Bearer {TOKEN}");
    assert_eq!(
        heads.iter().filter(|h| h.contains(&with_token)).count(),
        199
    );
    let rows = &v["by_request"];
    assert_eq!(rows["login"]["requests"]["completed"], 1, "{rows}");
    assert_eq!(rows["api"]["requests"]["completed"], 199, "{rows}");
}

#[test]
fn a_rejected_token_is_a_check_failure_with_the_scripts_reason() {
    let _s = serial();
    let (url, heads) = serve(true);
    // Several connections: requests made before the login's answer carry no token (the server
    // holds the login until it has refused one), the server answers 401, and the script's
    // wrk.fail gives its reason (401 is accepted by --check-status here, so the script judges).
    let (v, out) = run_json_any(&[
        "-R",
        "2000",
        "-n",
        "400",
        "-c",
        "8",
        "-t",
        "1",
        "--check-status",
        "200-499",
        "-s",
        &script("token.lua"),
        &url,
    ]);
    assert_balanced(&v);
    let check = v["requests"]["errors"]["check"].as_u64().unwrap();
    let refused = heads
        .lock()
        .unwrap()
        .iter()
        .filter(|h| h.starts_with("GET /api/") && !h.contains(TOKEN))
        .count();
    assert!(refused >= 1, "{}", text(&out));
    assert_eq!(check, refused as u64, "{}", text(&out));
    assert_eq!(req(&v, "completed") + check, 400);
    let examples = v["failure_examples"].as_array().unwrap();
    assert!(!examples.is_empty());
    for e in examples {
        assert_eq!(e["check"], "script", "{e}");
        assert_eq!(e["excerpt"], "status 401 from no-token", "{e}");
    }
}

#[test]
fn response_false_and_wrk_fail_are_check_failures_kept_with_their_reason() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "800",
        "-n",
        "400",
        "-c",
        "2",
        "-t",
        "1",
        "-s",
        &script("judge.lua"),
        &server.url,
    ]);
    assert_balanced(&v);
    // Every fourth response of 400 is rejected: 100, half by false and half by wrk.fail.
    assert_eq!(v["requests"]["errors"]["check"], 100, "{}", text(&out));
    assert_eq!(req(&v, "completed"), 300);
    let examples = v["failure_examples"].as_array().unwrap();
    assert!(!examples.is_empty());
    let reasons: Vec<&str> = examples
        .iter()
        .map(|e| e["excerpt"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&"response() returned false"),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"rejected response 8"), "{reasons:?}");
    // wrk.name labels the rows.
    let rows = &v["by_request"];
    assert_eq!(rows["odd"]["requests"]["intended"], 200, "{rows}");
    assert_eq!(rows["even"]["requests"]["intended"], 200, "{rows}");
}

#[test]
fn done_reads_thread_state_and_both_index_forms_of_the_statistics() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let out = candor()
        .args(["run", "-q", "-R", "max", "-d", "1s", "-c", "2", "-t", "2"])
        .args(["-s", &script("threads.lua"), "--json"])
        .arg(&json)
        .arg(&server.url)
        .args(["--", "first"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_balanced(&v);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // done()'s output follows candor's report.
    let report_end = stdout.find("requests:").expect("candor's report first");
    let done_at = stdout.find("thread 1 made").expect("done() printed");
    assert!(report_end < done_at, "{stdout}");
    assert!(stdout.contains("(arg first, tag a1)"), "{stdout}");
    assert!(stdout.contains("(arg first, tag a2)"), "{stdout}");
    let number = |prefix: &str| -> Vec<u64> {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in {stdout}"));
        line[prefix.len()..]
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    let total = number("total made ")[0];
    // Every request() call made one request; the run's books count each of them.
    assert_eq!(total, req(&v, "intended"));
    assert_eq!(number("summary requests ")[0], req(&v, "completed"));
    let dur = number("duration_us ")[0];
    assert!((900_000..=1_100_000).contains(&dur), "{dur}");
    // s(1) is the lowest recorded value and how often; s[#s] the top percentile, the max.
    let s1 = number("s(1) ");
    let top = number("s[#] ");
    let p = number("p50 ");
    assert!(s1[1] >= 1 && s1[0] == p[1], "s(1) {s1:?} min {p:?}");
    assert_eq!(top[0], top[1], "s[#s] is the max: {top:?}");
    // Microseconds: the median candor reports (ns), within the histograms' precision.
    let p50_ns = common::pct(&v, "response_time", 50.0);
    let p50_us = p[0] as f64;
    assert!(
        (p50_us * 1e3 - p50_ns).abs() <= p50_ns * 0.01 + 1e3,
        "{p50_us} us vs {p50_ns} ns"
    );
}

#[test]
fn thread_stop_ends_the_run_with_results_written() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "500",
        "-d",
        "20s",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("stop.lua"),
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    assert!(req(&v, "intended") >= 50 && req(&v, "intended") < 5000);
    assert!(v["stop"]["detail"]
        .as_str()
        .unwrap()
        .contains("thread:stop()"));
}

/// A run whose script cannot start: one line on stderr naming file and line, exit 1, and not a
/// request reached the server.
fn refused(name: &str, rate: &str, expected: &str) {
    let (url, heads) = recording_server();
    let out = candor()
        .args(["run", "-q", "-R", rate, "-d", "1s", "-c", "1", "-s"])
        .arg(script(name))
        .arg(&url)
        .args(["--", "arg1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("candor: error: "), "{err}");
    assert!(err.contains(expected), "{err}");
    assert!(out.stdout.is_empty());
    assert!(heads.lock().unwrap().is_empty());
}

#[test]
fn bad_scripts_are_one_line_before_any_load() {
    let _s = serial();
    refused(
        "bad_syntax.lua",
        "100",
        "bad_syntax.lua:3: unexpected symbol near 'end'",
    );
    refused(
        "bad_init.lua",
        "100",
        "bad_init.lua:2: cannot start: arg1 (in init())",
    );
    refused(
        "bad_setup.lua",
        "100",
        "bad_setup.lua:4: attempt to index local 't' (a nil value) (in setup())",
    );
    refused(
        "with_delay.lua",
        "100",
        "defines delay(), which an open loop",
    );
    refused("missing.lua", "100", "cannot read script");
}

/// A run whose script fails part way: the error on stderr, exit 1, results written and marked.
fn fails_during(name: &str, expected: &str) -> serde_json::Value {
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "200",
        "-d",
        "20s",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script(name),
        &server.url,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("candor: error: ") && l.contains(expected)),
        "{err}"
    );
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    assert!(v["stop"]["detail"].as_str().unwrap().contains(expected));
    // Stopped at once: far fewer than the 4000 planned.
    assert!(req(&v, "intended") < 400, "{}", v["requests"]);
    v
}

#[test]
fn a_runtime_error_stops_the_run_with_its_location_and_the_books_balanced() {
    let _s = serial();
    let v = fails_during(
        "bad_request.lua",
        "bad_request.lua:5: request 20 went wrong (in request())",
    );
    // The 20th entry could not be made: it failed before a byte was written.
    assert_eq!(req(&v, "intended"), 20);
    assert_eq!(v["requests"]["errors"]["template"], 1);
    fails_during("bad_return.lua", "request() returned table, not a string");
    let v = fails_during(
        "bad_response.lua",
        "bad_response.lua:5: attempt to index field 'missing' (a nil value) (in response())",
    );
    assert_eq!(v["requests"]["errors"]["check"], 1);
}

fn wait_for_handlers(child: &Child) {
    let path = format!("/proc/{}/status", child.id());
    let want = (1u64 << (libc::SIGINT - 1)) | (1u64 << (libc::SIGTERM - 1));
    let t0 = Instant::now();
    loop {
        let status = std::fs::read_to_string(&path).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0);
        if caught & want == want {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no handlers");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigint_ends_an_endless_loop_in_request() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let mut child = candor()
        .args(["run", "-q", "-R", "100", "-d", "60s", "-c", "1", "-t", "1"])
        .args(["-s", &script("endless.lua"), "--json"])
        .arg(&json)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the endless request() was not interrupted");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_balanced(&v);
    // The one entry stuck in request() was never made: the signal stopped the call, no fault
    // of the request, so it ends unsent (not failed as `template`), as the rest do.
    assert_eq!(req(&v, "completed"), 0);
    assert_eq!(req(&v, "failed"), 0, "{}", v["requests"]);
    assert!(req(&v, "queued_unsent") >= 1, "{}", v["requests"]);
}

#[test]
fn options_that_a_script_cannot_honour_are_refused() {
    let _s = serial();
    let server = Server::start(&[]);
    // Refused before anything is sent: the WebSocket URL names a port nothing listens on.
    for (extra, url, expected) in [
        (
            vec!["--repeat", "2"],
            server.url.as_str(),
            "--repeat does not combine with -s: the script's state would carry",
        ),
        (
            vec![],
            "ws://127.0.0.1:9/",
            "-s (a wrk script) makes HTTP requests; it does not apply to ws://",
        ),
    ] {
        let out = candor()
            .args(["run", "-q", "-R", "100", "-d", "1s"])
            .args(&extra)
            .args(["-s", &script("judge.lua")])
            .arg(url)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{extra:?}: {err}");
    }
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "candor-e2e-script-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_script_runs_over_https_with_pipelining() {
    let _s = serial();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
    );
    let port = common::serve_tls_ok(config);
    let url = format!("https://localhost:{port}/");
    let (v, out) = run_json_any(&[
        "-R",
        "600",
        "-n",
        "300",
        "-c",
        "2",
        "--pipeline",
        "3",
        "-t",
        "1",
        "-k",
        "-s",
        &script("judge.lua"),
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 300, "{}", text(&out));
    // Every fourth response rejected by the script (its one thread counts them all).
    assert_eq!(v["requests"]["errors"]["check"], 75, "{}", text(&out));
    assert_eq!(req(&v, "completed"), 225);
}

#[test]
fn delay_holds_each_connection_between_requests_in_a_closed_loop() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "max",
        "-d",
        "1s",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("think_time.lua"),
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    // One connection that waits 10 ms after every response sends at most once per 10 ms of
    // the 1 s window (a closed loop without the wait sends thousands).
    let sent = req(&v, "intended");
    assert!((1..=101).contains(&sent), "{sent}");
}

/// Over HTTP/2 (`--h2`, prior knowledge): each `request()` string is parsed into the request's
/// method, path, headers and body; `response()` sees each stream's status, headers and body.
#[test]
fn a_script_makes_and_judges_requests_over_http2() {
    let _s = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}/", server.addr);
    let (v, out) = run_json_any(&[
        "--h2",
        "-R",
        "400",
        "-n",
        "200",
        "-c",
        "2",
        "--streams",
        "4",
        "-t",
        "1",
        "-s",
        &script("h2_check.lua"),
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 200, "{}", text(&out));
    assert_eq!(v["requests"]["errors"]["check"], 0, "{}", text(&out));
    let mut seen = server.stats.requests.lock().unwrap().clone();
    seen.sort_by_key(|l| {
        l.split(['/', ' '])
            .nth(3)
            .and_then(|n| n.parse::<u64>().ok())
    });
    let expected: Vec<String> = (1..=200)
        .map(|n| format!("POST /h2/{n} x-n={n} body=n={n}"))
        .collect();
    assert_eq!(seen, expected);

    // The same script judges a failing answer by its status: the login flow's 401s.
    let (v, out) = run_json_any(&[
        "--h2",
        "-R",
        "500",
        "-n",
        "200",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("token.lua"),
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    // One login, then every request carries its token (the server answers 401 without it).
    assert_eq!(req(&v, "completed"), 200, "{}", text(&out));
    let rows = &v["by_request"];
    assert_eq!(rows["login"]["requests"]["completed"], 1, "{rows}");
    assert_eq!(rows["api"]["requests"]["completed"], 199, "{rows}");
}

/// Over HTTP/2 a `response()` that rejects counts a `check` failure, as over HTTP/1.1.
#[test]
fn a_script_rejects_http2_responses_as_check_failures() {
    let _s = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}/", server.addr);
    let (v, out) = run_json_any(&[
        "--h2",
        "-R",
        "400",
        "-n",
        "200",
        "-c",
        "1",
        "--streams",
        "8",
        "-t",
        "1",
        "-s",
        &script("judge.lua"),
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 200, "{}", text(&out));
    assert_eq!(v["requests"]["errors"]["check"], 50, "{}", text(&out));
    assert_eq!(req(&v, "completed"), 150);
}

/// `thread.addr` set in `setup()` redirects that thread's connections: of two threads, the
/// second sends its share of the schedule (every other entry) to the other server.
#[test]
fn thread_addr_set_in_setup_redirects_that_threads_connections() {
    let _s = serial();
    let (url, heads_a) = recording_server();
    let (other, heads_b) = recording_server();
    let port = other
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let out = candor()
        .env("CANDOR_TEST_OTHER_PORT", &port)
        .args([
            "run", "-q", "--json", "-", "-R", "400", "-n", "200", "-c", "2", "-t", "2",
        ])
        .args(["-s", &script("redirect.lua"), &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 200, "{}", text(&out));
    // The pre-run probe of the target may add a request to the first server's.
    let a = heads_a.lock().unwrap().len();
    assert!((100..=101).contains(&a), "{a}");
    assert_eq!(heads_b.lock().unwrap().len(), 100);
}

/// A script that takes 80 µs per `request()` cannot keep 20k/s on one thread: the schedule's
/// lateness is in the send lag and the results warn (docs/truth.md, "A slow script in an open
/// loop").
#[test]
fn an_80us_script_at_20k_shows_as_send_lag_and_a_warning() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let out = candor()
        .args([
            "run", "-q", "-R", "20k", "-n", "20000", "-c", "16", "-t", "1", "--json",
        ])
        .arg(&json)
        .args(["-s", &script("slow.lua"), &server.url, "--", "80"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 20000);
    let lag = pct(&v, "send_lag", 99.0);
    assert!(lag > 100e6, "send lag p99 {lag} ns");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("in Lua per intended request")
            && warnings
                .contains("the script, not the target, limits how closely the schedule is kept"),
        "{warnings}"
    );
}

/// `candor run -R RATE -n N -c CONNS -t THREADS --json` with `slow.lua` taking `busy_us` per
/// `request()`: its output, and its results after checking that they balance.
fn run_slow(
    rate: &str,
    n: &str,
    conns: &str,
    threads: &str,
    busy_us: &str,
) -> (Output, serde_json::Value) {
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let out = candor()
        .args([
            "run", "-R", rate, "-n", n, "-c", conns, "-t", threads, "--json",
        ])
        .arg(&json)
        .args(["-s", &script("slow.lua"), &server.url, "--", busy_us])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_balanced(&v);
    (out, v)
}

/// At 20,000/s a thread makes its `request()` calls ahead in batches (the entries due within the
/// next millisecond): still one call per entry of the schedule, none past its end.
#[test]
fn requests_made_ahead_in_batches_are_one_per_entry() {
    let _s = serial();
    let (out, v) = run_slow("20000", "3001", "4", "2", "0");
    assert_eq!(req(&v, "completed"), 3001);
    assert!(
        text(&out).contains("(3001 request() and 0 response() calls"),
        "{}",
        text(&out)
    );
}

/// A script without `response()` has its `request()` made ahead of the send when there is
/// time: a 3 ms call every 10 ms is not in the send lag (docs/truth.md).
#[test]
fn a_slow_request_is_made_ahead_of_its_send() {
    let _s = serial();
    let (out, v) = run_slow("100", "50", "1", "1", "3000");
    assert_eq!(req(&v, "completed"), 50);
    let lag = pct(&v, "send_lag", 50.0);
    assert!(
        lag < 1.5e6,
        "send lag p50 {lag} ns: request() was not made ahead"
    );
    // One call per entry: none made for an entry past the schedule's end.
    assert!(
        text(&out).contains("(50 request() and 0 response() calls"),
        "{}",
        text(&out)
    );
}

/// wrk's statistics objects answer a field they do not have with its name: a done() written
/// for wrk that reads one (`requests.total`) reports after a complete run, exit 0.
#[test]
fn done_reading_a_field_wrk_does_not_have_reports_as_under_wrk() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "100",
        "-n",
        "20",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("stats_unknown.lua"),
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    assert!(text(&out).contains("total: total p50: "), "{}", text(&out));
}

/// A request() error in a closed loop stops the run at once: the free connections make no
/// more calls after it (before, each asked request() again in the same pass and sent).
#[test]
fn a_request_error_stops_a_closed_loop_at_once() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "max",
        "-d",
        "20s",
        "-c",
        "4",
        "-t",
        "1",
        "-s",
        &script("bad_request.lua"),
        &server.url,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    // The 20th call failed: 20 entries, the last unsent, and no 21st call.
    assert_eq!(req(&v, "intended"), 20, "{}", v["requests"]);
    assert_eq!(v["requests"]["errors"]["template"], 1);
    assert!(
        text(&out).contains("(20 request() and 0 response() calls"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_failed_require_and_a_missing_script_say_why_once_on_one_line() {
    let _s = serial();
    refused(
        "require_socket.lua",
        "100",
        "require_socket.lua:2: module 'socket' not found: ",
    );
    refused("require_socket.lua", "100", "C modules");
    // The OS's words once, not again from the error's source.
    let out = candor()
        .args(["run", "-q", "-R", "100", "-d", "1s", "-s"])
        .arg(script("missing.lua"))
        .arg("http://127.0.0.1:9/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
}

/// Line breaks in what wrk.format is given would reach the wire as headers (or requests) the
/// script never wrote; candor refuses them where wrk sends them.
#[test]
fn line_breaks_in_format_values_never_reach_the_wire() {
    let _s = serial();
    // Top level: the request built after init() is refused before any load.
    refused(
        "top_level_lf.lua",
        "100",
        "the value of header 'X-A' given to 'format' holds a line break",
    );
    // In request(): the first call fails, the run stops, and the server saw nothing.
    let (url, heads) = recording_server();
    let (v, out) = run_json_any(&[
        "-R",
        "100",
        "-d",
        "5s",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("header_crlf.lua"),
        &url,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_balanced(&v);
    assert!(
        text(&out).contains(
            "candor: error: the value of header 'X-A' given to 'format' holds a line break"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(v["requests"]["errors"]["template"], 1);
    assert!(heads.lock().unwrap().is_empty(), "{:?}", heads.lock());
}

/// -s with --llm names --llm; with --reflect it is refused before the server is asked for
/// its descriptors (a listener that counts connections sees none).
#[test]
fn flags_a_script_cannot_combine_with_are_named_before_any_contact() {
    let _s = serial();
    let server = Server::start(&[]);
    let out = candor()
        .args([
            "run", "-q", "-R", "100", "-d", "1s", "--llm", "openai", "-s",
        ])
        .arg(script("judge.lua"))
        .arg(&server.url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("does not combine with --llm"), "{err}");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("grpc://{}", listener.local_addr().unwrap());
    let out = candor()
        .args(["run", "-q", "-R", "100", "-d", "1s", "--reflect"])
        .args(["--call", "pkg.Svc/Method", "-s"])
        .arg(script("judge.lua"))
        .arg(&url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("does not apply to gRPC calls"), "{err}");
    // The process has exited: a connection it made would be waiting in the backlog.
    assert!(
        listener.accept().is_err(),
        "the server was contacted: {err}"
    );
}

/// A delay() longer than the whole run (`math.huge`) holds its connection to the run's end, as
/// wrk's wait does, and is told once (it held the connection for ~u64::MAX ns, silently).
#[test]
fn a_delay_longer_than_the_run_holds_to_its_end_and_is_told_once() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "max",
        "-d",
        "1s",
        "-c",
        "2",
        "-t",
        "1",
        "-s",
        &script("huge_delay.lua"),
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    // One request per connection: after its response each waits past the run's end.
    assert_eq!(req(&v, "intended"), 2, "{}", v["requests"]);
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("delay() returned"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "delay() returned inf (2 of its 2 calls asked to wait longer than the whole run"
        ) && warnings[0].contains("held its connection until the run's end"),
        "{warnings:?}"
    );
}

/// A script without request() makes no request() calls, and delay()'s calls are named as
/// such; a delay() that returns a negative number or NaN waits 0 ms and is told once.
#[test]
fn the_scripts_calls_are_counted_by_function_and_an_odd_delay_is_told_once() {
    let _s = serial();
    let server = Server::start(&[]);
    let (v, out) = run_json_any(&[
        "-R",
        "max",
        "-d",
        "1s",
        "-c",
        "1",
        "-t",
        "1",
        "-s",
        &script("odd_delay.lua"),
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    let all = text(&out);
    assert!(!all.contains(" request() and"), "{all}");
    assert!(
        all.contains("no request(): the request wrk.format() built"),
        "{all}"
    );
    assert!(all.contains(" delay() calls"), "{all}");
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("delay() returned"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("delay() returned -5 (")
            && warnings[0].contains("taken as no wait"),
        "{warnings:?}"
    );
}
