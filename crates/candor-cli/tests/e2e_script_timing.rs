//! What a script costs and how it paces, end to end: a slow request() shows as send lag with a
//! warning, requests are made ahead of their send (in batches, one per entry), delay() holds its
//! connection (longer than the run: to its end, told once), and the script's calls are counted.

mod common;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod script;
}

use common::{assert_balanced, candor, pct, req, run_json_any, serial, text, Server};
use std::process::Output;
use support::script::*;

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
