//! `candor run -s script.lua` end to end: wrk's scripting API driven by the real binary against
//! local servers (the scripts are in `tests/scripts/`): pipelining, a login whose token later
//! requests carry, thread:get/set and the statistics objects in done(), response() failing
//! requests, names, thread:stop(), HTTPS and HTTP/2, and a thread's own address. Scripts that
//! cannot run are in e2e_script_errors.rs, their cost and pacing in e2e_script_timing.rs.

mod common;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod script;
}

use common::{assert_balanced, candor, req, run_json_any, serial, text, Server};
use std::sync::Arc;
use support::script::*;

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
