//! End-to-end tests of `candor run` against `candor serve`: truth on a stalling server, the
//! generator's own floor, the closed-loop lie, faults, timeouts and bad input.

mod common;
use common::*;

const MS: f64 = 1e6;

/// (a) A 0.5 s stall every 2 s, measured for 8 s (four whole periods). Over whole periods the
/// stalled intended times form exactly f = S/P = 0.25 of the window whatever the phase, each
/// waiting uniformly (0, S] (docs/truth.md, section 1): p90 = S(1 - 0.1/f) = 300 ms,
/// p99 = 480 ms, p99.9 = 498 ms, max = 500 ms; below p75 the value is the plain service time.
#[test]
fn stall_response_time_matches_the_analytic_truth() {
    let _g = serial();
    let server = Server::start(&["--stall-every", "2s", "--stall-for", "500ms"]);
    let (v, _) = run_json(&[
        "-R",
        "1000",
        "-c",
        "16",
        "-t",
        "2",
        "-d",
        "8s",
        "-T",
        "3s",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(
        req(&v, "intended"),
        8000,
        "constant 1000/s for 8 s is exactly 8000 intended sends"
    );
    assert_eq!(req(&v, "completed"), 8000);
    // Tolerance: 40 ms either way for scheduler noise on a shared machine, plus, above the truth
    // only, the drain: at the end of each stall the R*S = 500 requests due leave 16 at a time, one
    // round (about a service time) apart, so the request whose stall-only wait is w has
    // 1000/s * (500 ms - w) requests ahead of it: ⌈that / 16⌉ extra rounds.
    let tol = 40.0 * MS;
    let round = pct(&v, "service_time", 90.0);
    let drain = |truth: f64| (1000.0 * (500.0 * MS - truth) / 1e9 / 16.0).ceil() * round;
    for (p, truth) in [
        (90.0, 300.0 * MS),
        (99.0, 480.0 * MS),
        (99.9, 498.0 * MS),
        (100.0, 500.0 * MS),
    ] {
        let got = pct(&v, "response_time", p);
        eprintln!(
            "p{p:<6} truth {:>8.1} ms  measured {:>8.1} ms",
            truth / MS,
            got / MS
        );
        assert!(
            got >= truth - tol && got <= truth + tol + drain(truth),
            "response time p{p}: measured {:.1} ms, truth {:.1} ms, round {:.2} ms",
            got / MS,
            truth / MS,
            round / MS
        );
    }
    // Below the stalled fraction (p50 < 1 - f) the truth is the service time, tens of microseconds.
    assert!(
        pct(&v, "response_time", 50.0) < 5.0 * MS,
        "p50 {}",
        pct(&v, "response_time", 50.0)
    );
    // Service time stays small: only the <= 16 requests in flight as a stall begins (0.2%) see it.
    assert!(
        pct(&v, "service_time", 90.0) < 5.0 * MS,
        "service p90 {}",
        pct(&v, "service_time", 90.0)
    );
    let mean = v["response_time"]["mean_ns"].as_f64().unwrap();
    // Truth mean = f * S / 2 = 62.5 ms, plus the drain: the stalled quarter of the requests wait
    // on average 500 / 2 / 16 ≈ 16 rounds more.
    assert!(
        mean > 47.5 * MS && mean < 77.5 * MS + 0.25 * 16.0 * round,
        "mean {:.1} ms",
        mean / MS
    );
}

/// (b) Test the tester: against an instant server both measures are small and close together,
/// because sends leave on time (a nanosecond timer, and the pacer's spin where the machine's
/// wake-ups need it); wrk2's millisecond timers would put ~1 ms between them.
#[test]
fn instant_server_response_and_service_time_agree() {
    let _g = serial();
    let server = Server::start(&[]);
    let (v, _) = run_json(&["-R", "2k", "-c", "8", "-t", "1", "-d", "3s", &server.url]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 6000);
    // Judged on the best of the three one-second intervals: a millisecond timer shifts every
    // second, while a busy neighbour rarely spoils all three.
    let best = |m: &str| {
        v["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["completed"].as_u64().unwrap() > 0)
            .map(|i| i[m]["p50_ns"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min)
    };
    let resp = best("response_time");
    let serv = best("service_time");
    let lag = best("send_lag");
    // Loopback service time is tens of microseconds; 1 ms leaves room for a loaded CI machine.
    assert!(resp < 1.0 * MS, "response p50 {resp}");
    // The gap is the send lag: microseconds when pacing works. 100 us is 10x the expected value
    // and 10x below what a millisecond timer would produce.
    assert!(
        resp - serv < 100_000.0,
        "response p50 {resp} vs service p50 {serv}"
    );
    assert!(lag < 50_000.0, "send lag p50 {lag}");
}

/// (c) A closed loop on the stalling server reproduces the coordinated-omission lie: only the
/// few requests in flight when a stall starts see it, so p90 reads like a healthy server although
/// the truth (f = 0.25) is p90 = 300 ms.
#[test]
fn closed_loop_reproduces_the_coordinated_omission_lie() {
    let _g = serial();
    let server = Server::start(&["--stall-every", "2s", "--stall-for", "500ms"]);
    let (v, out) = run_json(&[
        "-R",
        "max",
        "-c",
        "10",
        "-t",
        "1",
        "-d",
        "4s",
        "-T",
        "3s",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["mode"], "closed-loop");
    let p90 = pct(&v, "response_time", 90.0);
    let max = pct(&v, "response_time", 100.0);
    assert!(
        p90 < 10.0 * MS,
        "closed-loop p90 {p90} should look healthy (that is the lie)"
    );
    assert!(max > 400.0 * MS, "closed loop still saw a stall: max {max}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("coordinated omission"),
        "the report must say so:\n{text}"
    );
}

#[test]
fn faults_are_counted_and_the_run_goes_on() {
    let _g = serial();
    for (kind, class) in [
        ("reset", "read"),
        ("close-mid-response", "read"),
        ("garbage", "parse"),
        ("close", "read"),
    ] {
        let server = Server::start(&["--fault", kind, "--fault-every", "10"]);
        let (v, _) = run_json(&["-R", "500", "-c", "4", "-t", "1", "-d", "2s", &server.url]);
        assert_balanced(&v);
        let intended = req(&v, "intended");
        let failed = v["requests"]["errors"][class].as_u64().unwrap();
        assert_eq!(intended, 1000, "{kind}");
        // Every 10th request misbehaves: ~100 failures of the expected class (loose: reconnects
        // shift which request is the 10th on the server side).
        assert!(
            (50..=200).contains(&failed),
            "{kind}: {failed} {class} errors of {intended}"
        );
        assert!(req(&v, "completed") >= 800, "{kind}: the rest completed");
    }
}

#[test]
fn timeouts_fail_the_request_and_record_its_age() {
    let _g = serial();
    let server = Server::start(&["--delay", "300ms"]);
    let (v, out) = run_json_any(&[
        "-R",
        "20",
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "2s",
        "-T",
        "100ms",
        &server.url,
    ]);
    assert_balanced(&v);
    // Nothing succeeded: results written, and a one-line diagnosis with a non-zero exit.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no request succeeded: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timeouts = v["requests"]["errors"]["timeout"].as_u64().unwrap();
    assert!(
        timeouts >= 30,
        "40 intended, each takes 300 ms > 100 ms timeout: {timeouts} timeouts"
    );
    assert_eq!(req(&v, "completed"), 0);
    // A timed-out request's response time is its age when it timed out: at least the timeout.
    assert!(pct(&v, "response_time", 50.0) >= 100.0 * MS);
}

#[test]
fn warmup_is_reported_separately() {
    let _g = serial();
    let server = Server::start(&[]);
    let (v, _) = run_json(&[
        "-R",
        "500",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "--warmup",
        "1s",
        &server.url,
    ]);
    assert_eq!(req(&v, "intended"), 500);
    assert_eq!(v["warmup"]["requests"]["intended"].as_u64().unwrap(), 500);
    assert!(v["intervals"].as_array().unwrap().len() >= 2);
    assert!(v["intervals"][0]["warmup"].as_bool().unwrap());
}

#[test]
fn json_contract_fields() {
    let _g = serial();
    let server = Server::start(&[]);
    let (v, _) = run_json(&[
        "-R",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "--arrival",
        "poisson",
        "--seed",
        "3",
        &server.url,
    ]);
    for m in ["response_time", "service_time", "send_lag"] {
        for k in [
            "count",
            "min_ns",
            "max_ns",
            "mean_ns",
            "stdev_ns",
            "percentiles",
        ] {
            assert!(v[m].get(k).is_some(), "{m}.{k} missing");
        }
        let ps: Vec<f64> = v[m]["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["percentile"].as_f64().unwrap())
            .collect();
        assert_eq!(ps, vec![50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0]);
    }
    for k in [
        "intended",
        "completed",
        "in_flight_at_end",
        "errors",
        "status",
    ] {
        assert!(v["requests"].get(k).is_some(), "requests.{k} missing");
    }
    assert!(v["rate"]["target_per_s"].as_f64().unwrap() == 200.0);
    assert!(v["rate"]["achieved_per_s"].as_f64().is_some());
    assert!(v["duration_s"].as_f64().is_some());
    assert!(v["candor_version"].as_str().is_some());
    assert_eq!(v["config"]["arrival"], "poisson");
    // Read back through the contract: the settings and the analysis come back typed.
    let typed = candor_core::results::RunResults::from_json(&v.to_string()).unwrap();
    let candor_core::recorded::RecordedConfig::Run(c) = &typed.config else {
        panic!("a run's settings read back typed: {:?}", typed.config)
    };
    assert_eq!(
        (c.arrival, c.seed, c.connections),
        (Some(candor_core::results::ArrivalName::Poisson), Some(3), 2)
    );
    let analysis = typed
        .main
        .analysis
        .as_ref()
        .expect("a run writes its analysis");
    assert!(!analysis.confidence.is_empty());
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        v,
        "read and written back unchanged"
    );
    // The pool, opened before the first send, and what pacing cost, each on its own.
    assert_eq!(v["pool"]["connections"], 2);
    assert_eq!(v["pool"]["ready"], 2);
    assert_eq!(v["pool"]["connect_time"]["count"], 2);
    assert_eq!(v["pacing"]["margin"], "adaptive");
    assert!(v["pacing"]["spin_share"].as_f64().is_some());
    assert!(
        v["config"]["spin_us"].is_null(),
        "no --spin: the pacer chooses"
    );
    // A Poisson count over 1 s at 200/s has sd ~14; 200 +- 70 is 5 sd.
    let n = req(&v, "intended") as i64;
    assert!((n - 200).abs() < 70, "poisson intended {n}");
}

fn assert_clean_error(args: &[&str], needle: &str) {
    let out = candor().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.to_lowercase().contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
    assert!(
        err.trim().lines().count() <= 3,
        "{args:?}: error should be short: {err}"
    );
}

#[test]
fn bad_input_gives_one_clear_line() {
    // Serial: its nine processes would otherwise run beside the timing tests of this file.
    let _g = serial();
    // A port nobody listens on: bind then drop to get a free one.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("http://127.0.0.1:{port}/");
    assert_clean_error(&["run", "not-a-url"], "invalid url");
    assert_clean_error(&["run", "ftp://127.0.0.1/"], "unsupported scheme");
    assert_clean_error(&["run", "http://no-such-host.invalid/"], "cannot resolve");
    assert_clean_error(&["run", "-d", "1s", &refused], "cannot connect");
    assert_clean_error(&["run", "-R", "0", &refused], "rate must be positive");
    assert_clean_error(&["run", "-R", "-5", &refused], "rate");
    assert_clean_error(
        &["run", "-c", "1", "-t", "2", &refused],
        "at least the number of threads",
    );
    assert_clean_error(&["run", "-d", "ten seconds", &refused], "invalid duration");
    assert_clean_error(
        &["run", "--body-file", "/no/such/file", &refused],
        "no such file",
    );
}
