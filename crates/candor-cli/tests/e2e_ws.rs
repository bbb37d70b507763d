//! End-to-end: `candor run ws://` and `wss://` against the WebSocket test server
//! (`candor_testkit::ws_server`, tokio-tungstenite) started in the test on a port it opened:
//! echo in order, JSON matching of reordered replies, fragments and pings, a server that closes
//! on command, TLS with a self-signed certificate, and a stalling server against its truth
//! (docs/truth.md, "WebSocket stall").

mod common;

use candor_testkit::ws_server::{self, WsServerConfig};
use common::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

const MS: f64 = 1e6;

fn url(server: &ws_server::WsServer, path: &str) -> String {
    format!("ws://{}{path}", server.addr())
}

#[test]
fn messages_are_echoed_in_order_with_the_upgrade_counted_as_connect() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let (v, _) = run_json(&[
        "-R",
        "500",
        "-d",
        "2s",
        "-c",
        "4",
        "-t",
        "2",
        "--body",
        "hello",
        "-H",
        "X-Probe: 7",
        &url(&server, "/chat?room=1"),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 1000);
    assert_eq!(req(&v, "completed"), 1000, "{}", v["requests"]);
    assert_eq!(v["config"]["protocol"], "ws");
    assert_eq!(v["pool"]["ready"], 4, "{}", v["pool"]);
    let c = server.counts();
    assert_eq!(c.messages.load(Ordering::Relaxed), 1000);
    // Four upgrades (the pre-run reachability check connects without one).
    let headers = c.upgrade_headers.lock().unwrap();
    assert_eq!(headers.len(), 4);
    assert!(headers
        .iter()
        .all(|h| h.contains(&("x-probe".to_string(), "7".to_string()))));
    assert!(
        pct(&v, "response_time", 50.0) < 20.0 * MS,
        "{}",
        v["response_time"]
    );
}

#[test]
fn json_matching_pairs_reordered_fragmented_replies_and_pings_are_answered() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig {
        reorder_pairs: true,
        fragment: true,
        ping_every: Some(Duration::from_millis(50)),
        delay: Duration::from_millis(20),
        ..Default::default()
    })
    .unwrap();
    let (v, _) = run_json(&[
        "-R",
        "400",
        "-d",
        "2s",
        "-c",
        "2",
        "--body",
        r#"{"op":"get"}"#,
        "--ws-match",
        "json:id",
        &url(&server, "/"),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 800);
    // A reply pinned on the wrong message would be seen as one matching nothing (a protocol
    // error closing the connection): every one is matched, none fails.
    assert_eq!(req(&v, "completed"), 800, "{}", v["requests"]);
    let faults = &v["connection_faults"];
    assert!(
        faults.is_null() || faults == &serde_json::json!({}),
        "{faults}"
    );
    // Every reply waits 20 ms; a reply held for its pair waits for the next message too.
    let p50 = pct(&v, "response_time", 50.0);
    assert!(p50 >= 20.0 * MS, "p50 {p50}");
    assert!(
        server.counts().pongs.load(Ordering::Relaxed) > 0,
        "the server's pings were answered"
    );
}

#[test]
fn a_close_from_the_server_fails_what_was_on_the_wire_and_reopens() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let (v, _) = run_json_any(&[
        "-R",
        "100",
        "-d",
        "2s",
        "-c",
        "2",
        "--body",
        r#"{"cmd":"close"}"#,
        &url(&server, "/"),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 200);
    assert_eq!(req(&v, "completed"), 0);
    assert_eq!(v["requests"]["errors"]["read"], 200, "{}", v["requests"]);
    let closes = v["connection_faults"]["server closed the WebSocket (close frame)"]
        .as_u64()
        .unwrap_or(0);
    assert!(closes > 2, "{}", v["connection_faults"]);
    assert!(
        req(&v, "connections_opened") > 2,
        "reopened after each close: {}",
        v["requests"]
    );
}

#[test]
fn wss_with_a_self_signed_certificate_needs_ca_or_insecure() {
    let _g = serial();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
    );
    let server = ws_server::start(WsServerConfig {
        tls: Some(tls),
        ..Default::default()
    })
    .unwrap();
    let target = format!("wss://localhost:{}/", server.addr().port());
    let dir = std::env::temp_dir().join(format!("candor-wss-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    for trust in [vec!["--ca", ca.to_str().unwrap()], vec!["-k"]] {
        let mut args = vec!["-R", "200", "-d", "1s", "-c", "2", "--body", "m"];
        args.extend(trust);
        args.push(&target);
        let (v, _) = run_json(&args);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 200, "{}", v["requests"]);
        assert_eq!(v["config"]["protocol"], "ws (TLS)");
    }
    // Without either, the certificate is refused before any load is sent.
    let out = candor()
        .args(["run", "-R", "10", "-d", "1s", "--body", "m", &target])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("candor: error:"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_websocket_flags_are_refused_before_any_load() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let target = url(&server, "/");
    for (args, says) in [
        (vec!["--h2"], "--h2 applies to http://"),
        (vec!["--ws-match", "xml:id"], "invalid --ws-match"),
        (
            vec!["--ws-match", "json:id", "--body", "[1]"],
            "needs a JSON object message",
        ),
        (
            vec!["--ws-match", "json:id", "--body", r#"{"id":1}"#],
            "already has a field 'id'",
        ),
        (vec!["-m", "POST"], "-m/--method does not apply"),
    ] {
        let out = candor()
            .args(["run", "-R", "10", "-d", "1s"])
            .args(&args)
            .arg(&target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.starts_with("candor: error:") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    assert_eq!(server.counts().messages.load(Ordering::Relaxed), 0);
    let out = candor()
        .args([
            "run",
            "-R",
            "10",
            "-d",
            "1s",
            "--ws-binary",
            "http://127.0.0.1:9/",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to ws:// and wss://"));
}

/// docs/truth.md, "WebSocket stall": the prediction was written there before this test ran.
#[test]
fn a_stalling_websocket_server_reads_its_known_truth() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig {
        stall: Some((Duration::from_secs(5), Duration::from_secs(1))),
        ..Default::default()
    })
    .unwrap();
    let (v, _) = run_json(&[
        "-R",
        "1000",
        "-d",
        "5s",
        "-c",
        "4",
        "-t",
        "2",
        "--streams",
        "400",
        "-T",
        "3s",
        "--body",
        "tick",
        &url(&server, "/"),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 5000);
    assert_eq!(req(&v, "completed"), 5000, "{}", v["requests"]);
    // 50 ms either way: scheduler noise on a shared machine and the burst of ~1,000 echoes the
    // server writes when a window ends.
    let tol = 50.0 * MS;
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
            (got - truth).abs() <= tol,
            "response time p{p}: measured {:.1} ms, truth {:.1} ms",
            got / MS,
            truth / MS
        );
    }
    for p in [50.0, 75.0] {
        let got = pct(&v, "response_time", p);
        assert!(got < 5.0 * MS, "p{p} {:.2} ms", got / MS);
    }
    let mean = v["response_time"]["mean_ns"].as_f64().unwrap();
    eprintln!("mean truth 100.0 ms  measured {:.1} ms", mean / MS);
    assert!(
        (mean - 100.0 * MS).abs() <= 15.0 * MS,
        "mean {:.1} ms",
        mean / MS
    );
}
