//! The run features over gRPC end to end: `--slo` and `--precision` judged on the calls, the
//! HTML and `.hlog` reports naming statuses, `-T` sent as `grpc-timeout`, `--live`'s `/metrics`
//! counting calls by status name, and `--shard`s merged by `candor merge`.

mod common;
mod support {
    pub mod grpc;
}

use candor_grpc::test_server::{InjectedFailure, TestServerOptions};
use candor_grpc::Code;
use common::*;
use std::time::Duration;
use support::grpc::*;

/// `--slo` judged on the calls (every tenth fails UNAVAILABLE), the `.hlog` written, and the text
/// and HTML reports of the results file naming the statuses.
#[test]
fn slo_and_reports_name_the_grpc_statuses() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions {
        failure: Some(InjectedFailure {
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--precision` judged on the calls ends the window once p50 is known.
#[test]
fn precision_ends_a_grpc_run_once_its_p50_is_known() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
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
}

/// `-T` is sent as `grpc-timeout`.
#[test]
fn dash_t_is_sent_as_the_grpc_timeout() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions::default());
    let p = proto();
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
}

/// `--live`'s `/metrics` counts the calls by status name during the run.
#[test]
fn live_metrics_count_grpc_calls_by_status_name_during_the_run() {
    use std::io::{BufRead, BufReader, Read, Write};
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    // --live: /metrics counts the calls by status name while the run goes on.
    srv.set_failure(Some(InjectedFailure {
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
}

/// Two `--shard`s merged by `candor merge`: balanced books and their status counts summed.
#[test]
fn grpc_shards_merge_into_balanced_books_with_status_counts_summed() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = std::env::temp_dir().join(format!("candor-e2e-grpc-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two shards merged: the books balance and the status counts add up.
    srv.set_failure(Some(InjectedFailure {
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
    let _ = std::fs::remove_dir_all(&dir);
}
