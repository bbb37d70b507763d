//! `candor run grpc://...` end to end: the real binary against the tonic test server
//! (`candor_grpc::test_server`, started in this process on a port it opened itself): unary and
//! server-streaming calls, the books, the `grpc` failure class and its counts by status name,
//! `--check-status` with gRPC names, a stalling server's known truth (docs/truth.md), TLS,
//! reflection, GOAWAY and dropped connections, and every bad input refused in one line before
//! any call is made. Request lines are in e2e_grpc_requests.rs,
//! the run features (SLOs, reports, live view, shards) in e2e_grpc_run_features.rs.

mod common;
mod support {
    pub mod grpc;
}

use candor_grpc::test_server::{InjectedFailure, Stall, TestServer, TestServerOptions};
use candor_grpc::Code;
use common::*;
use std::time::Duration;
use support::grpc::*;

const MS: f64 = 1e6;

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
        failure: Some(InjectedFailure {
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
