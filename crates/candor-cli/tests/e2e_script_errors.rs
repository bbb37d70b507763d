//! A script that cannot run, end to end: every bad-script case and a failed `require` refused in
//! one line before any load, options and flags a script cannot honour or combine with, a runtime
//! error or a request error stopping the run with the books balanced, and SIGINT ending an
//! endless loop in request(), and line breaks in wrk.format's values refused before the wire.

mod common;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod script;
}

use common::{assert_balanced, candor, req, run_json_any, serial, text, Server};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::script::*;

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
