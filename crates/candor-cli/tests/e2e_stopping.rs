//! End-to-end: runs that end before their planned duration, for a reason: `--precision` reached
//! (stop reason "precision", the usual drain) and `--abort-on-fail` (an objective that can no
//! longer pass: exit 3, the objective named, the books balanced); objectives on the schedule
//! itself (`rate>=95%`); and the flags' bad input refused in one line before any load.

mod common;

use common::{assert_balanced, candor, req, run_json, run_json_any, serial, Server};
use std::process::Output;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The verdict of objective `name` in the results' analysis.
fn slo<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["analysis"]["slo"]
        .as_array()
        .expect("slo verdicts")
        .iter()
        .find(|s| s["objective"] == name)
        .unwrap_or_else(|| panic!("no verdict for {name}"))
}

#[test]
fn precision_ends_the_measured_window_once_the_interval_is_tight() {
    let _g = serial();
    // A 1 ms service time puts every response time at 1 ms or a little more, so the 95% interval
    // of p50 is a few microseconds wide: ±5% holds as soon as the rule's minimum (3 measured
    // intervals, 200 samples) is met. The bound is 60 s; "precision" as the reason is the
    // assertion that it ended before it, whatever the machine's speed.
    let server = Server::start(&["--delay", "1ms"]);
    let (v, out) = run_json(&[
        "-R",
        "300",
        "-c",
        "8",
        "-d",
        "60s",
        "--warmup",
        "1s",
        "--precision",
        "p50=5%",
        &server.url,
    ]);
    assert_eq!(v["stop_reason"], "precision", "{}", text(&out));
    let stop = &v["stop"];
    let rows = stop["precision"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["percentile"], 50.0);
    assert_eq!(rows[0]["target"], 0.05);
    assert_eq!(rows[0]["reached"], true, "{stop}");
    assert!(rows[0]["half_width"].as_f64().unwrap() <= 0.05);
    assert!(rows[0]["ci_low_ns"].as_u64().unwrap() <= rows[0]["estimate_ns"].as_u64().unwrap());
    // Warm-up is not counted: at least three measured intervals.
    assert!(stop["intervals"].as_u64().unwrap() >= 3, "{stop}");
    let measured = v["duration_s"].as_f64().unwrap();
    assert!((3.0..60.0).contains(&measured), "{measured}");
    assert!(stop["at_s"].as_f64().unwrap() < 61.0);
    // The window ended by the schedule, not by a signal: nothing was cut off, and intended counts
    // only what was due in it (300/s over the measured window, plus one rounding per thread and
    // the 10 ms a worker may take to see the request, i.e. 3 more).
    assert_balanced(&v);
    let bound = (300.0 * measured).ceil() as u64 + 2 + 3;
    assert!(
        req(&v, "intended") <= bound,
        "{} > {bound}",
        req(&v, "intended")
    );
    assert_eq!(req(&v, "in_flight_at_end"), 0, "drained as usual");
    let t = text(&out);
    assert!(t.contains("stop reason: precision"), "{t}");
    assert!(t.contains("p50=±5%"), "{t}");
    assert!(out.status.success());
}

#[test]
fn a_run_without_early_ends_says_duration() {
    let _g = serial();
    let server = Server::start(&[]);
    let (v, _) = run_json(&["-R", "100", "-d", "1s", &server.url]);
    assert_eq!(v["stop_reason"], "duration");
    assert!(v.get("stop").is_none(), "no detail without --precision");
}

#[test]
fn abort_on_fail_stops_when_the_error_budget_is_spent() {
    let _g = serial();
    // Every 10th request is reset: 10% errors against errors<1%. Of at most 60,000 intended the
    // budget is 600 failures, spent after about 6 s; the run is planned for 60 s.
    let server = Server::start(&["--fault", "reset", "--fault-every", "10"]);
    let (v, out) = run_json_any(&[
        "-R",
        "1k",
        "-d",
        "60s",
        "--slo",
        "errors<1%",
        "--abort-on-fail",
        &server.url,
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert_eq!(v["stop_reason"], "abort", "{t}");
    assert_eq!(v["stop"]["objective"], "errors<1%");
    assert!(v["stop"]["detail"]
        .as_str()
        .unwrap()
        .contains("error budget is spent"));
    assert!(t.contains("ABORTED at"), "{t}");
    assert!(t.contains("objective errors<1% can no longer pass"), "{t}");
    assert!(v["warnings"][0].as_str().unwrap().starts_with("aborted at"));
    // The books balance, and intended counts only what was due before the abort: 1,000/s over
    // the measured window, plus a rounding per thread and up to 1 s for the workers to see the
    // request on a starved machine (they look every 10 ms).
    assert_balanced(&v);
    let measured = v["duration_s"].as_f64().unwrap();
    assert!(measured < 60.0, "{measured}");
    let bound = (1000.0 * (measured + 1.0)).ceil() as u64 + 2;
    assert!(
        req(&v, "intended") <= bound,
        "{} > {bound}",
        req(&v, "intended")
    );
    // Failures reached 1% of everything the full run could have intended.
    assert!(req(&v, "failed") * 100 >= 60_000, "{}", req(&v, "failed"));
    assert_eq!(slo(&v, "errors<1%")["pass"], false);
}

#[test]
fn the_rate_objective_is_judged_and_aborts_after_five_low_seconds() {
    let _g = serial();
    // Two connections and a 50 ms service time carry at most 40/s: far below 95% of 400/s.
    let slow = Server::start(&["--delay", "50ms"]);
    let (v, out) = run_json_any(&[
        "-R",
        "400",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "60s",
        "--slo",
        "rate>=95%",
        "--abort-on-fail",
        &slow.url,
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert_eq!(v["stop_reason"], "abort", "{t}");
    assert_eq!(v["stop"]["objective"], "rate>=95%");
    // Five consecutive seconds below it are the rule: never before the fifth second ends.
    assert!(v["stop"]["at_s"].as_f64().unwrap() >= 5.0, "{}", v["stop"]);
    assert!(v["stop"]["intervals"].as_u64().unwrap() >= 5);
    assert_balanced(&v);
    assert_eq!(slo(&v, "rate>=95%")["pass"], false);

    // A server that keeps up passes: completions over the window are the target rate.
    let fast = Server::start(&[]);
    let (v, out) = run_json(&[
        "-R",
        "200",
        "-d",
        "2s",
        "--slo",
        "rate>=95%,send_lag.max<10s",
        &fast.url,
    ]);
    let t = text(&out);
    assert_eq!(slo(&v, "rate>=95%")["pass"], true, "{t}");
    assert!(slo(&v, "rate>=95%")["measured"].as_f64().unwrap() >= 0.95);
    assert_eq!(slo(&v, "send_lag.max<10s")["pass"], true, "{t}");
    assert!(t.contains("rate = "), "{t}");
    assert!(t.contains("send lag = "), "{t}");
}

/// Runs `candor run ARGS` meant to fail before the load (against a port where nothing listens,
/// so a run that got as far as its load would fail differently): its one-line error.
fn refused(args: &[&str]) -> String {
    let out = candor()
        .args(["run", "-R", "100", "-d", "60s", "--quiet"])
        .args(args)
        .arg("http://127.0.0.1:9/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!out.status.success(), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !err.contains("connect"),
        "refused before reaching the target: {err}"
    );
    err
}

#[test]
fn bad_precision_and_objectives_are_one_line_errors_before_any_load() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["--precision", "p101=5%"],
            "percentile 101 is outside (0, 100)",
        ),
        (&["--precision", "p99=0%"], "more than 0%"),
        (&["--precision", "p99=5"], "is a percentage"),
        (&["--slo", "rate<95%"], "lower limit"),
        (&["--slo", "send_lag.p99<1"], "add a unit"),
        (&["--slo", "queue.p99<1ms"], "unknown measure"),
        (&["--slo", "send_lag.errors<1%"], "without a measure"),
        (
            &["--precision", "p99=5%", "--shard", "0/2"],
            "cannot be used with --shard",
        ),
    ];
    for (args, want) in cases {
        let err = refused(args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // --abort-on-fail watches objectives: without any it is refused by the flag parser.
    let out = candor()
        .args(["run", "--abort-on-fail", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--slo"));
    // -n promises exactly N requests: a run that may end early cannot keep that promise.
    let out = candor()
        .args([
            "run",
            "-n",
            "100",
            "--precision",
            "p99=5%",
            "http://127.0.0.1:9/",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}
