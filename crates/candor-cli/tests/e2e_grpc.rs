//! `candor run grpc://...` end to end: the real binary against the tonic test server
//! (`candor_grpc::test_server`, started in this process on a port it opened itself): unary and
//! server-streaming calls, the books, the `grpc` failure class and its counts by status name,
//! `--check-status` with gRPC names, a stalling server's known truth (docs/truth.md), TLS,
//! reflection, GOAWAY and dropped connections, and every bad input refused in one line before
//! any call is made.

mod common;

use candor_grpc::test_server::{Failure, Stall, TestServer, TestServerOptions};
use candor_grpc::Code;
use common::*;
use std::path::PathBuf;
use std::time::Duration;

const MS: f64 = 1e6;

fn proto() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
        .display()
        .to_string()
}

fn server(options: TestServerOptions) -> (String, TestServer) {
    let (addr, server) = TestServer::start(options).expect("test server");
    (format!("grpc://{addr}"), server)
}

fn echo_args<'a>(url: &'a str, proto: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        url,
        "--proto",
        proto,
        "--call",
        "candor.bench.Bench/Echo",
        "--body",
        r#"{"name":"e2e","seq":7}"#,
    ];
    args.extend_from_slice(more);
    args
}

/// A run's failures by class, including the classes newer than `assert_balanced`'s list.
fn grpc_failed(v: &serde_json::Value) -> u64 {
    v["requests"]["errors"]["grpc"].as_u64().unwrap_or(0)
}

/// `assert_balanced` with the `grpc` class counted among the failures.
fn assert_grpc_balanced(v: &serde_json::Value) {
    let r = &v["requests"];
    let e = &r["errors"];
    let classes: u64 = [
        "connect", "read", "write", "timeout", "parse", "status", "check", "template", "grpc",
    ]
    .iter()
    .map(|k| e[*k].as_u64().unwrap_or(0))
    .sum();
    assert_eq!(req(v, "failed"), classes, "failures by class: {r}");
    assert_eq!(
        req(v, "intended"),
        req(v, "completed") + req(v, "failed") + req(v, "in_flight_at_end"),
        "a request vanished from the accounting: {r}"
    );
}

#[test]
fn unary_calls_are_timed_and_booked_with_their_status_names() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let (v, out) = run_json(&echo_args(&url, &p, &["-R", "500", "-d", "2s", "-c", "2"]));
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 1000, "500/s for 2 s");
    assert_eq!(req(&v, "completed"), 1000);
    assert_eq!(
        v["grpc_status"]["OK"].as_u64(),
        Some(1000),
        "{}",
        v["grpc_status"]
    );
    assert_eq!(v["status_codes"]["200"].as_u64(), Some(1000));
    assert_eq!(v["config"]["protocol"], "grpc");
    assert_eq!(v["config"]["grpc_call"], "candor.bench.Bench/Echo");
    assert_eq!(v["config"]["method"], "POST");
    assert!(grpc_failed(&v) == 0);
    // The server saw every call (and nothing else: no probe call is made).
    assert_eq!(srv.calls(), 1000);
    assert!(pct(&v, "response_time", 50.0) < 50.0 * MS);
    assert!(out.status.success());
}

#[test]
fn failing_statuses_are_the_grpc_class_counted_by_name_and_check_status_accepts_names() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions {
        failure: Some(Failure {
            code: Code::Unavailable,
            every: 4,
        }),
        ..Default::default()
    });
    let p = proto();
    let (v, _) = run_json_any(&echo_args(&url, &p, &["-R", "400", "-d", "2s", "-c", "2"]));
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 800);
    // Every fourth call the server answered fails: a quarter, by the server's own count.
    assert_eq!(grpc_failed(&v), 200, "{}", v["requests"]);
    assert_eq!(req(&v, "completed"), 600);
    assert_eq!(v["grpc_status"]["UNAVAILABLE"].as_u64(), Some(200));
    assert_eq!(v["grpc_status"]["OK"].as_u64(), Some(600));
    // The failed calls were answered: their latencies are recorded with the rest.
    assert_eq!(v["response_time"]["count"].as_u64(), Some(800));
    assert_eq!(srv.calls(), 800);
    // The text report names the statuses and the class.
    let text = candor()
        .arg("run")
        .args(echo_args(&url, &p, &["-R", "200", "-d", "1s", "-c", "1"]))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("grpc:     OK ×150  UNAVAILABLE ×50"), "{t}");
    assert!(t.contains("grpc 50"), "{t}");
    // Accepted by name, they complete.
    let (v, out) = run_json(&echo_args(
        &url,
        &p,
        &[
            "-R",
            "200",
            "-d",
            "1s",
            "-c",
            "1",
            "--check-status",
            "OK,UNAVAILABLE",
        ],
    ));
    assert!(out.status.success());
    assert_eq!(req(&v, "completed"), 200);
    assert_eq!(grpc_failed(&v), 0);
    assert_eq!(v["grpc_status"]["UNAVAILABLE"].as_u64(), Some(50));
    assert_eq!(v["config"]["check_status"], "OK,UNAVAILABLE");
}

/// The prediction is written in docs/truth.md ("Periodic stall over gRPC") before this test.
#[test]
fn a_stalling_grpc_server_reads_its_known_truth() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions {
        threads: 2,
        stall: Some(Stall {
            every_ns: 5_000_000_000,
            for_ns: 1_000_000_000,
        }),
        ..Default::default()
    });
    let p = proto();
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &[
            "-R",
            "1000",
            "-c",
            "8",
            "--streams",
            "200",
            "-t",
            "2",
            "-d",
            "10s",
            "-T",
            "3s",
        ],
    ));
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 10_000, "1000/s for 10 s");
    assert_eq!(req(&v, "completed"), 10_000);
    // The cost per call of the burst at a stall's end, bounded by an unstalled call's service
    // time (a round trip, more than the server's share of a burst).
    let per_call = pct(&v, "service_time", 50.0);
    let tol = 40.0 * MS;
    let burst = 1000.0 * per_call;
    for (p, truth) in [
        (90.0, 500.0 * MS),
        (99.0, 950.0 * MS),
        (99.9, 995.0 * MS),
        (100.0, 1000.0 * MS),
    ] {
        let got = pct(&v, "response_time", p);
        eprintln!(
            "p{p:<6} truth {:>8.1} ms  measured {:>8.1} ms",
            truth / MS,
            got / MS
        );
        assert!(
            got >= truth - tol && got <= truth + tol + burst,
            "response time p{p}: measured {:.1} ms, truth {:.1} ms, per call {:.3} ms",
            got / MS,
            truth / MS,
            per_call / MS
        );
    }
    assert!(pct(&v, "response_time", 50.0) < 5.0 * MS);
    let mean = v["response_time"]["mean_ns"].as_f64().unwrap();
    eprintln!("mean truth 100.0 ms  measured {:.1} ms", mean / MS);
    assert!(
        mean > 100.0 * MS - tol && mean < 100.0 * MS + tol + burst,
        "mean {:.1} ms",
        mean / MS
    );
}

#[test]
fn closed_loop_stages_warmup_streaming_and_reflection() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions {
        reflection: true,
        ..Default::default()
    });
    let p = proto();
    // Closed loop: 16 calls in flight on one connection.
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &[
            "-R",
            "max",
            "-c",
            "1",
            "-t",
            "1",
            "--streams",
            "16",
            "-d",
            "1s",
        ],
    ));
    assert_grpc_balanced(&v);
    assert!(req(&v, "completed") > 100, "{}", v["requests"]);
    assert_eq!(req(&v, "failed"), 0);
    // Stages after a warm-up: the books per stage.
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &["-R", "100:1s,300:1s", "--warmup", "1s", "-c", "2"],
    ));
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 400);
    assert_eq!(req(&v, "completed"), 400);
    assert!(v["warmup"]["requests"]["completed"].as_u64().unwrap() > 0);
    // Descriptors over reflection instead of --proto.
    let (v, _) = run_json(&[
        &url,
        "--reflect",
        "--call",
        "candor.bench.Bench/Echo",
        "--body",
        r#"{"name":"r"}"#,
        "-R",
        "100",
        "-d",
        "1s",
    ]);
    assert_eq!(req(&v, "completed"), 100);
    // Server streaming: the call ends at its trailers, after its three messages 5 ms apart.
    let (v, _) = run_json(&[
        &url,
        "--proto",
        &p,
        "--call",
        "candor.bench.Bench/Stream",
        "--body",
        r#"{"name":"s","count":3,"interval_us":5000}"#,
        "-R",
        "50",
        "-d",
        "1s",
    ]);
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "completed"), 50);
    assert!(
        pct(&v, "response_time", 50.0) >= 10.0 * MS,
        "two 5 ms gaps at least"
    );
    // Its first message came before its end: the time to it is recorded beside the response time.
    let first = v["extra"]
        .as_array()
        .and_then(|e| e.iter().find(|h| h["name"] == "grpc_first_message"))
        .unwrap_or_else(|| panic!("no grpc_first_message in {}", v["extra"]));
    assert_eq!(first["summary"]["count"].as_u64(), Some(50));
    let first_max = first["summary"]["max_ns"].as_f64().unwrap();
    assert!(
        first_max < pct(&v, "response_time", 50.0),
        "first message {first_max} ns, before the 10 ms of the rest"
    );
    // A templated message: filled and encoded per call, each call its own.
    let (v, _) = run_json(&[
        &url,
        "--proto",
        &p,
        "--call",
        "candor.bench.Bench/Echo",
        "--body",
        r#"{"name":"user-{{seq}}","seq":{{seq}},"inner":{"n":{{random:1:9}}}}"#,
        "-R",
        "200",
        "-d",
        "1s",
    ]);
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "completed"), 200);
}

#[test]
fn grpcs_with_the_servers_ca_and_goaway_and_dropped_connections_are_counted() {
    let _g = serial();
    let (addr, srv) = TestServer::start(TestServerOptions {
        tls: true,
        ..Default::default()
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("candor-e2e-grpcs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, srv.ca_pem().unwrap()).unwrap();
    let url = format!("grpcs://{addr}");
    let p = proto();
    let ca_s = ca.display().to_string();
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &["-R", "200", "-d", "1s", "--ca", &ca_s],
    ));
    assert_eq!(req(&v, "completed"), 200);
    assert_eq!(v["config"]["protocol"], "grpc (TLS)");
    let (v, _) = run_json(&echo_args(&url, &p, &["-R", "200", "-d", "1s", "-k"]));
    assert_eq!(req(&v, "completed"), 200);
    let _ = std::fs::remove_dir_all(&dir);

    // GOAWAY every 300 ms of a connection's age: calls go on over new connections, and every
    // call is in the books whichever way it ended.
    let (url, _srv) = server(TestServerOptions {
        max_connection_age: Some(Duration::from_millis(300)),
        ..Default::default()
    });
    let (v, _) = run_json_any(&echo_args(&url, &p, &["-R", "500", "-d", "2s", "-c", "2"]));
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 1000);
    assert!(req(&v, "completed") > 500, "{}", v["requests"]);
    assert!(req(&v, "connections_opened") > 2, "{}", v["requests"]);

    // Connections dropped under calls held by a delay: those calls fail as `read`, the rest
    // complete over new connections.
    let (url, srv) = server(TestServerOptions {
        delay: Duration::from_millis(50),
        ..Default::default()
    });
    let url2 = url.clone();
    let run = std::thread::spawn(move || {
        let p = proto();
        run_json_any(&echo_args(&url2, &p, &["-R", "200", "-d", "2s", "-c", "2"])).0
    });
    std::thread::sleep(Duration::from_millis(1000));
    srv.drop_connections();
    let v = run.join().unwrap();
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 400);
    assert!(
        v["requests"]["errors"]["read"].as_u64().unwrap() > 0,
        "{}",
        v["requests"]
    );
    assert!(req(&v, "completed") > 300, "{}", v["requests"]);
    drop(url);
}

/// Runs `candor run ARGS` expecting a one-line error before any load.
fn refused(args: &[&str]) -> String {
    let out = candor().arg("run").args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} ran");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(err.starts_with("candor: error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn bad_input_is_one_line_before_any_call() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = std::env::temp_dir().join(format!("candor-e2e-grpc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let broken = dir.join("broken.proto");
    std::fs::write(
        &broken,
        "syntax = \"proto3\";\nmessage A {\n  int32 x = 1\n}\n",
    )
    .unwrap();
    let broken = broken.display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![&url, "--proto", &broken, "--call", "a.B/C"],
            "broken.proto:4:1",
        ),
        (
            vec![&url, "--proto", &p, "--call", "candor.Bench/Echo"],
            "no service `candor.Bench`; the descriptors hold: candor.bench.Bench",
        ),
        (
            vec![&url, "--proto", &p, "--call", "candor.bench.Bench/Ech"],
            "has no method `Ech`; it has: Echo, Stream, Collect, Chat",
        ),
        (
            vec![
                &url,
                "--proto",
                &p,
                "--call",
                "candor.bench.Bench/Echo",
                "--body",
                r#"{"nmae":"x"}"#,
            ],
            "unrecognized field name 'nmae'",
        ),
        (
            vec![
                &url,
                "--proto",
                &p,
                "--call",
                "candor.bench.Bench/Echo",
                "--body",
                r#"{"inner":{"n":"x"}}"#,
            ],
            "field `inner.n`",
        ),
        (
            vec![&url, "--proto", &p, "--call", "candor.bench.Bench/Collect"],
            "client-streaming calls are not supported yet",
        ),
        (
            vec![&url, "--reflect", "--call", "candor.bench.Bench/Echo"],
            "does not offer gRPC reflection",
        ),
        (
            vec![&url, "--call", "candor.bench.Bench/Echo"],
            "--proto FILE.proto",
        ),
        (vec![&url, "--proto", &p], "needs the method to call: --call"),
        (
            echo_args(&url, &p, &["-H", "content-type: text/plain"]),
            "is set by candor",
        ),
        (
            echo_args(&url, &p, &["--check-status", "OK,NOPE"]),
            "--check-status",
        ),
        (
            vec!["http://127.0.0.1:9/", "--call", "a.B/C"],
            "--call applies to grpc:// and grpcs:// targets",
        ),
        (vec!["grpc://127.0.0.1"], "grpc:// needs a port"),
        (
            vec![
                &url,
                "--proto",
                &p,
                "--call",
                "candor.bench.Bench/Echo",
                "--body",
                r#"{"seq":"{{seq}}x"}"#,
            ],
            "--body: request 0 filled as {\"seq\":\"0x\"}: JSON for candor.bench.EchoRequest: field `seq`",
        ),
    ];
    for (args, want) in cases {
        let err = refused(&args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert_eq!(srv.calls(), 0, "no call before the input is checked");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `text` to a fresh file in a directory of its own (removed by the caller).
fn write_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `--requests` lines with their own `call` and `message` mix methods in one run: per-method
/// `by_request` rows, weights, metadata per line, a templated message whose data value (a
/// quote, a backslash, a tab) is JSON-escaped into its string and reaches the server whole.
#[test]
fn request_lines_mix_methods_with_rows_weights_and_escaped_templates() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = std::env::temp_dir().join(format!("candor-e2e-grpc-mix-{}", std::process::id()));
    let data = write_file(&dir, "who.csv", "who\n\"say \"\"hi\"\" \\ \tthere\"\n");
    let lines = [
        r#"{"name":"echo","call":"candor.bench.Bench/Echo","message":{"name":"plain","seq":1},"weight":2}"#,
        r#"{"name":"stream","call":"candor.bench.Bench/Stream","message":{"name":"s","count":2,"interval_us":1000},"weight":1}"#,
        r#"{"name":"templated","call":"candor.bench.Bench/Echo","message":"{\"name\":\"{{data:who}}\",\"seq\":{{seq}}}","weight":1}"#,
        r#"{"name":"missing","call":"candor.bench.Bench/Echo","headers":{"x-fail":"NOT_FOUND"},"weight":1}"#,
    ];
    let requests = write_file(&dir, "calls.jsonl", &lines.join("\n"));
    let args = [
        url.as_str(),
        "--proto",
        &p,
        "--requests",
        &requests,
        "--data",
        &data,
        "--body",
        r#"{"name":"default"}"#,
        "-R",
        "500",
        "-d",
        "2s",
        "-c",
        "2",
    ];
    let (v, out) = run_json_any(&args);
    assert_grpc_balanced(&v);
    assert_eq!(req(&v, "intended"), 1000);
    // NOT_FOUND is outside --check-status (OK): that line's calls are the grpc failures.
    let by = &v["by_request"];
    let row = |name: &str, k: &str| by[name]["requests"][k].as_u64().unwrap_or(0);
    let intended: u64 = ["echo", "stream", "templated", "missing"]
        .iter()
        .map(|n| row(n, "intended"))
        .sum();
    assert_eq!(intended, 1000, "{by}");
    for name in ["echo", "stream", "templated"] {
        assert_eq!(
            row(name, "completed"),
            row(name, "intended"),
            "{name}: {by}"
        );
        assert_eq!(row(name, "failed"), 0, "{name}: {by}");
    }
    assert_eq!(row("missing", "completed"), 0, "{by}");
    assert_eq!(
        by["missing"]["requests"]["errors"]["grpc"].as_u64(),
        Some(row("missing", "intended"))
    );
    assert_eq!(grpc_failed(&v), row("missing", "intended"));
    // Each row counts its calls by status name.
    assert_eq!(
        by["missing"]["grpc_status"]["NOT_FOUND"].as_u64(),
        Some(row("missing", "intended")),
        "{by}"
    );
    assert_eq!(
        by["echo"]["grpc_status"]["OK"].as_u64(),
        Some(row("echo", "completed"))
    );
    assert!(by["echo"]["grpc_status"]["NOT_FOUND"].is_null());
    assert_eq!(
        v["grpc_status"]["NOT_FOUND"].as_u64(),
        Some(row("missing", "intended"))
    );
    // Weights 2:1:1:1 over 1000 calls: echo takes about 400 (binomial sd ~15).
    let echo = row("echo", "intended") as f64;
    assert!((300.0..=500.0).contains(&echo), "echo {echo} of 1000");
    for name in ["stream", "templated", "missing"] {
        let n = row(name, "intended") as f64;
        assert!((130.0..=270.0).contains(&n), "{name} {n} of 1000");
    }
    // The streaming line alone has a time to its first message.
    let first = v["extra"]
        .as_array()
        .and_then(|e| e.iter().find(|h| h["name"] == "grpc_first_message"))
        .unwrap_or_else(|| panic!("no grpc_first_message in {}", v["extra"]));
    assert_eq!(
        first["summary"]["count"].as_u64(),
        Some(row("stream", "completed"))
    );
    assert_eq!(
        v["config"]["grpc_call"],
        "candor.bench.Bench/Echo, candor.bench.Bench/Stream"
    );
    assert_eq!(srv.calls(), 1000);
    assert!(out.status.success(), "some calls failed, not all");

    // The escaped value reaches the server whole: Echo answers the name it decoded, and the
    // body check finds it in every templated reply.
    let only = write_file(&dir, "one.jsonl", lines[2]);
    let (v, out) = run_json(&[
        &url,
        "--proto",
        &p,
        "--requests",
        &only,
        "--data",
        &data,
        "--check-body",
        "say \"hi\" \\ \tthere",
        "-R",
        "100",
        "-d",
        "1s",
    ]);
    assert!(out.status.success());
    assert_eq!(req(&v, "completed"), 100, "{}", v["requests"]);
    assert_eq!(v["requests"]["errors"]["template"].as_u64(), Some(0));

    // `--check-status` by gRPC names accepts the commanded NOT_FOUND.
    let missing = write_file(&dir, "missing.jsonl", lines[3]);
    let (v, out) = run_json(&[
        &url,
        "--proto",
        &p,
        "--call",
        "candor.bench.Bench/Echo",
        "--requests",
        &missing,
        "--check-status",
        "OK,NOT_FOUND",
        "-R",
        "100",
        "-d",
        "1s",
    ]);
    assert!(out.status.success());
    assert_eq!(req(&v, "completed"), 100);
    assert_eq!(v["grpc_status"]["NOT_FOUND"].as_u64(), Some(100));

    // A bad line is one line before any call, naming the line.
    let calls_before = srv.calls();
    let bad = |name: &str, text: &str| write_file(&dir, name, text);
    let cases = [
        (
            bad(
                "b1.jsonl",
                &format!("{}\n{}", lines[0], r#"{"call":"candor.bench.Bench/Nope"}"#),
            ),
            "--requests line 2: ",
            "has no method `Nope`; it has: Echo, Stream, Collect, Chat",
        ),
        (
            bad(
                "b2.jsonl",
                r#"{"call":"candor.bench.Bench/Echo","message":{"nmae":"x"}}"#,
            ),
            "--requests line 1 \"message\": ",
            "unrecognized field name 'nmae'",
        ),
        (
            bad("b3.jsonl", r#"{"path":"/x"}"#),
            "--requests line 1: ",
            "names its method with \"call\"",
        ),
        (
            bad(
                "b4.jsonl",
                r#"{"call":"candor.bench.Bench/Echo","message":"{\"seq\":\"{{seq}}x\"}"}"#,
            ),
            "--requests line 1 \"message\": request 0 filled as",
            "field `seq`",
        ),
        (
            bad("b5.jsonl", r#"{"call":"candor.bench.Bench/Collect"}"#),
            "--requests line 1",
            "client-streaming calls are not supported yet",
        ),
    ];
    for (file, at, why) in &cases {
        let err = refused(&[&url, "--proto", &p, "--requests", file]);
        assert!(err.contains(at) && err.contains(why), "{file}: {err}");
    }
    let err = refused(&["http://127.0.0.1:9/", "--requests", &cases[1].0]);
    assert!(
        err.contains("\"call\" and \"message\" apply to grpc:// and grpcs:// targets"),
        "{err}"
    );
    assert_eq!(
        srv.calls(),
        calls_before,
        "no call before the lines are checked"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The run features over gRPC in one server's life: `--slo` and `--precision` judged on the
/// calls, `--live`'s `/metrics` counting calls by status name during the run, the HTML and
/// `.hlog` reports, `-T` sent as `grpc-timeout`, and two `--shard`s merged by `candor merge`
/// with balanced books and their status counts summed.
#[test]
fn slo_precision_live_reports_timeout_and_shards_merged() {
    use std::io::{BufRead, BufReader, Read, Write};
    let _g = serial();
    let (url, srv) = server(TestServerOptions {
        failure: Some(Failure {
            code: Code::Unavailable,
            every: 10,
        }),
        ..Default::default()
    });
    let p = proto();
    let dir = std::env::temp_dir().join(format!("candor-e2e-grpc-feat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json").display().to_string();
    let hlog = dir.join("r.hlog").display().to_string();
    let html = dir.join("r.html").display().to_string();
    // Every tenth call fails UNAVAILABLE: 10% errors, so errors<20% holds and errors<5% fails.
    let out = candor()
        .arg("run")
        .args(echo_args(
            &url,
            &p,
            &[
                "-R",
                "400",
                "-d",
                "2s",
                "-c",
                "2",
                "--slo",
                "p99<1s,errors<20%",
                "--quiet",
                "--json",
                &json,
                "--hlog",
                &hlog,
            ],
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_grpc_balanced(&v);
    assert_eq!(grpc_failed(&v), 80, "{}", v["requests"]);
    let slo = v["analysis"]["slo"].as_array().expect("slo verdicts");
    assert!(slo.iter().all(|s| s["pass"] == true), "{slo:?}");
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert!(
        log.contains("#[StartTime:") && log.lines().count() > 3,
        "{log}"
    );
    // The reports of the results file: text and HTML name the statuses.
    let out = candor().args(["report", &json]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("grpc:     OK ×720  UNAVAILABLE ×80"),
        "{text}"
    );
    let out = candor()
        .args(["report", &json, "-o", &html])
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("UNAVAILABLE ×80"),
        "the HTML names the statuses"
    );
    let (v, out) = run_json_any(&echo_args(
        &url,
        &p,
        &["-R", "200", "-d", "1s", "--slo", "errors<5%"],
    ));
    assert_eq!(out.status.code(), Some(3), "a missed SLO exits 3");
    assert_eq!(v["analysis"]["slo"][0]["pass"], false);

    // --precision ends the window once p50 is known to ±10%.
    srv.set_failure(None);
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &[
            "-R",
            "300",
            "-c",
            "4",
            "-d",
            "60s",
            "--precision",
            "p50=10%",
        ],
    ));
    assert_eq!(v["stop_reason"], "precision", "{}", v["stop"]);
    assert!(v["duration_s"].as_f64().unwrap() < 60.0);
    assert_grpc_balanced(&v);

    // -T is the call's deadline on the wire: Echo answers the grpc-timeout it was sent with.
    let (v, _) = run_json(&echo_args(
        &url,
        &p,
        &[
            "-R",
            "50",
            "-d",
            "1s",
            "-T",
            "2s",
            "-H",
            "x-echo-timeout: 1",
            "--check-body",
            "grpc-timeout=2000000u",
        ],
    ));
    assert_eq!(req(&v, "completed"), 50, "{}", v["requests"]);

    // --live: /metrics counts the calls by status name while the run goes on.
    srv.set_failure(Some(Failure {
        code: Code::NotFound,
        every: 2,
    }));
    let mut child = candor()
        .arg("run")
        .args(echo_args(&url, &p, &["-R", "200", "-d", "4s", "--quiet"]))
        .args(["--live", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no live address");
        if let Some(rest) = line.split("live view at http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    std::thread::sleep(Duration::from_millis(2500));
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut metrics = String::new();
    s.read_to_string(&mut metrics).unwrap();
    let sample = |series: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
    };
    let ok = sample("candor_grpc_calls_total{grpc_status=\"OK\"}");
    let not_found = sample("candor_grpc_calls_total{grpc_status=\"NOT_FOUND\"}");
    assert!(ok > 0.0 && not_found > 0.0, "{metrics}");
    assert!(
        (ok - not_found).abs() <= 2.0,
        "every other call fails: {ok} {not_found}"
    );
    assert_eq!(sample("candor_run_finished"), 0.0, "read during the run");
    let status = child.wait().unwrap();
    assert!(status.success(), "the run ended by itself: {status}");

    // Two shards merged: the books balance and the status counts add up.
    srv.set_failure(Some(Failure {
        code: Code::Unavailable,
        every: 5,
    }));
    let start_at = format!(
        "{:.3}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            + 3.0
    );
    let shards: Vec<_> = (0..2)
        .map(|i| {
            candor()
                .arg("run")
                .args(echo_args(
                    &url,
                    &p,
                    &["-R", "400", "-d", "2s", "-c", "2", "--quiet"],
                ))
                .args([
                    "--shard",
                    &format!("{i}/2"),
                    "--start-at",
                    &start_at,
                    "--json",
                ])
                .arg(dir.join(format!("shard-{i}.json")))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut parts = Vec::new();
    for (i, child) in shards.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.code().is_some(),
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(dir.join(format!("shard-{i}.json"))).unwrap();
        let s: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_grpc_balanced(&s);
        assert_eq!(req(&s, "intended"), 400, "shard {i}: half of 800");
        parts.push(s);
    }
    let merged = dir.join("merged.json");
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(dir.join("shard-1.json"))
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m["kind"], "merged");
    assert_grpc_balanced(&m);
    assert_eq!(req(&m, "intended"), 800);
    for status in ["OK", "UNAVAILABLE"] {
        let sum: u64 = parts
            .iter()
            .map(|s| s["grpc_status"][status].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(m["grpc_status"][status].as_u64(), Some(sum), "{status}");
    }
    assert_eq!(m["grpc_status"]["UNAVAILABLE"].as_u64(), Some(160));
    assert_eq!(grpc_failed(&m), 160);
    let _ = std::fs::remove_dir_all(&dir);
}
