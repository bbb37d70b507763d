//! What the gRPC tests share: the test proto, the tonic test server started in the process, the
//! arguments of an Echo call, the books with the `grpc` failure class, and a refused run's line.

#![allow(dead_code)]

use candor_grpc::test_server::{TestServer, TestServerOptions};
use std::path::PathBuf;

use crate::common::{candor, req};

pub fn proto() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
        .display()
        .to_string()
}

pub fn server(options: TestServerOptions) -> (String, TestServer) {
    let (addr, server) = TestServer::start(options).expect("test server");
    (format!("grpc://{addr}"), server)
}

pub fn echo_args<'a>(url: &'a str, proto: &'a str, more: &[&'a str]) -> Vec<&'a str> {
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
pub fn grpc_failed(v: &serde_json::Value) -> u64 {
    v["requests"]["errors"]["grpc"].as_u64().unwrap_or(0)
}

/// `assert_balanced` with the `grpc` class counted among the failures.
pub fn assert_grpc_balanced(v: &serde_json::Value) {
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

/// Runs `candor run ARGS` expecting a one-line error before any load.
pub fn refused(args: &[&str]) -> String {
    let out = candor().arg("run").args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} ran");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(err.starts_with("candor: error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}
