//! gRPC `--requests` lines end to end: lines with their own `call` and `message` mixing methods
//! (rows, weights, metadata, a templated message escaped whole), `--check-status` by name on a
//! line's status, and a bad line refused in one line before any call.

mod common;
mod support {
    pub mod grpc;
}

use candor_grpc::test_server::TestServerOptions;
use common::*;
use support::grpc::*;

/// Writes `text` to a fresh file in a directory of its own (removed by the caller).
fn write_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The request lines of these tests: Echo weighted 2, Stream, Echo with a message templated
/// from the data file, and Echo with metadata that makes the server answer NOT_FOUND.
const LINES: [&str; 4] = [
    r#"{"name":"echo","call":"candor.bench.Bench/Echo","message":{"name":"plain","seq":1},"weight":2}"#,
    r#"{"name":"stream","call":"candor.bench.Bench/Stream","message":{"name":"s","count":2,"interval_us":1000},"weight":1}"#,
    r#"{"name":"templated","call":"candor.bench.Bench/Echo","message":"{\"name\":\"{{data:who}}\",\"seq\":{{seq}}}","weight":1}"#,
    r#"{"name":"missing","call":"candor.bench.Bench/Echo","headers":{"x-fail":"NOT_FOUND"},"weight":1}"#,
];

/// The data file of the templated line: a value with a quote, a backslash and a tab.
fn who_csv(dir: &std::path::Path) -> String {
    write_file(dir, "who.csv", "who\n\"say \"\"hi\"\" \\ \tthere\"\n")
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("candor-e2e-grpc-{tag}-{}", std::process::id()))
}

/// `--requests` lines with their own `call` and `message` mix methods in one run: per-method
/// `by_request` rows, weights, metadata per line, a templated message whose data value (a
/// quote, a backslash, a tab) is JSON-escaped into its string.
#[test]
fn request_lines_mix_methods_with_rows_weights_and_escaped_templates() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = temp_dir("mix");
    let data = who_csv(&dir);
    let lines = LINES;
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// A templated message's escaped data value reaches the server whole.
#[test]
fn a_templated_request_lines_escaped_value_reaches_the_server_whole() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = temp_dir("escaped");
    let data = who_csv(&dir);
    let lines = LINES;
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--check-status` by gRPC names accepts the status a request line's metadata commands.
#[test]
fn check_status_by_name_accepts_a_request_lines_status() {
    let _g = serial();
    let (url, _srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = temp_dir("check-status");
    let lines = LINES;
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad request line is refused in one line naming it, before any call.
#[test]
fn a_bad_request_line_is_one_line_before_any_call() {
    let _g = serial();
    let (url, srv) = server(TestServerOptions::default());
    let p = proto();
    let dir = temp_dir("bad-lines");
    let lines = LINES;
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
