//! End-to-end: `candor run ws://` and `wss://` against the WebSocket test server
//! (`candor_testkit::ws_server`, tokio-tungstenite) started in the test on a port it opened:
//! echo in order, JSON matching of reordered replies, fragments and pings, a server that closes
//! on command, TLS with a self-signed certificate, a stalling server against its truth
//! (docs/truth.md, "WebSocket stall"), and every run feature on `ws://`: stages, warm-up,
//! objectives, request lines, reports, the closed loop, `--precision`, `--live`, shards and
//! merge, and a reply that matches nothing (class `protocol`). Hostile servers are in
//! e2e_ws_hostile.rs.

mod common;
mod support {
    pub mod ws;
}

use candor_testkit::ws_server::{self, WsServerConfig};
use common::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use support::ws::*;

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
    // A request line is one message: the HTTP fields of a line are refused, naming it.
    let dir = temp_dir("lines");
    let lines = dir.join("lines.jsonl");
    std::fs::write(
        &lines,
        "{\"body\":\"m\"}\n{\"body\":\"m\",\"path\":\"/x\"}\n",
    )
    .unwrap();
    let out = candor()
        .args(["run", "-R", "10", "-d", "1s", "--requests"])
        .arg(&lines)
        .arg(&target)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.starts_with("candor: error:")
            && err.contains("line 2: \"path\" does not apply to ws:// and wss://")
            && err.lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
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

/// Stages, `--warmup`, `--slo`, `--requests` lines as messages, and every report (text, JSON,
/// HdrHistogram log, HTML) on one `ws://` run: 200/s for 1 s then a ramp 200..600/s over 1 s
/// is 200 + 400 = 600 measured messages, after 100 of warm-up at the first stage's rate.
#[test]
fn stages_warmup_slo_request_lines_and_every_report_on_websocket() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let dir = temp_dir("reports");
    let lines = dir.join("messages.jsonl");
    std::fs::write(
        &lines,
        "{\"body\":\"alpha\",\"name\":\"a\"}\n{\"body\":\"{\\\"op\\\":\\\"b\\\"}\",\"name\":\"b\"}\n",
    )
    .unwrap();
    let (json, hlog, html) = (dir.join("r.json"), dir.join("r.hlog"), dir.join("r.html"));
    let out = candor()
        .args(["run", "-R", "200:1s,200..600:1s", "--warmup", "500ms"])
        .args([
            "-c",
            "4",
            "-t",
            "2",
            "--slo",
            "p99<2s,errors<1%",
            "--requests",
        ])
        .arg(&lines)
        .arg("--hlog")
        .arg(&hlog)
        .arg("--json")
        .arg(&json)
        .arg(url(&server, "/feed"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let v = load(&json);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 600, "{}", v["requests"]);
    assert_eq!(req(&v, "completed"), 600, "{}", v["requests"]);
    assert_eq!(v["warmup"]["requests"]["intended"].as_u64(), Some(100));
    let stages = v["stages"].as_array().expect("stages");
    let per_stage: Vec<u64> = stages
        .iter()
        .map(|s| s["requests"]["intended"].as_u64().unwrap())
        .collect();
    assert_eq!(per_stage, [200, 400]);
    assert_eq!(v["config"]["protocol"], "ws");
    assert_eq!(v["config"]["ws_match"], "order");
    assert_eq!(v["config"]["ws_binary"], false);
    // The lines alternate (round-robin): each is its own row, and the server got each body.
    for name in ["a", "b"] {
        assert_eq!(
            v["by_request"][name]["requests"]["completed"].as_u64(),
            Some(300),
            "{}",
            v["by_request"]
        );
    }
    {
        let seen = server.counts().by_message.lock().unwrap();
        assert_eq!(seen.get("alpha"), Some(&350), "{seen:?}");
        assert_eq!(seen.get(r#"{"op":"b"}"#), Some(&350), "{seen:?}");
    }
    // The text report names the protocol and judges the objectives.
    assert!(text.contains("(WebSocket)"), "{text}");
    assert!(text.contains("PASS") && !text.contains("FAIL"), "{text}");
    // The interval log reads back as a report; the JSON renders as HTML.
    let h = std::fs::read_to_string(&hlog).unwrap();
    assert!(h.lines().filter(|l| !l.starts_with('#')).count() > 3, "{h}");
    let report = candor().arg("report").arg(&hlog).output().unwrap();
    assert!(report.status.success());
    assert!(String::from_utf8_lossy(&report.stdout).contains("p99"));
    let report = candor()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<html") && page.contains("ws://"),
        "an HTML report"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A closed loop of binary messages, ended by `--precision`: a 1 ms echo puts every response
/// time at 1 ms or a little more, so the 95% interval of p50 is within ±5% as soon as the
/// rule's minimum is met; 30 s is only the bound.
#[test]
fn a_closed_loop_of_binary_messages_ends_when_precise() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig {
        delay: Duration::from_millis(1),
        ..Default::default()
    })
    .unwrap();
    let (v, out) = run_json(&[
        "-R",
        "max",
        "-c",
        "2",
        "-d",
        "30s",
        "--precision",
        "p50=5%",
        "--ws-binary",
        "--body",
        "bytes",
        &url(&server, "/"),
    ]);
    assert_balanced(&v);
    assert_eq!(v["mode"], "closed-loop");
    assert_eq!(
        v["stop_reason"],
        "precision",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["stop"]["precision"][0]["reached"], true);
    assert!(v["duration_s"].as_f64().unwrap() < 30.0);
    assert_eq!(v["config"]["ws_binary"], true);
    let c = server.counts();
    let messages = c.messages.load(Ordering::Relaxed);
    assert!(req(&v, "completed") > 0);
    assert_eq!(
        c.binary.load(Ordering::Relaxed),
        messages,
        "every frame binary"
    );
    // A closed loop waits for each reply: what the server got is what was answered, plus at
    // most one in flight per connection when the window closed, plus the warm-up (none here).
    assert!(messages >= req(&v, "completed"));
}

/// `--live` during a `ws://` run: `/metrics` serves counts that grow while the run goes on,
/// and the last ones agree with the results.
#[test]
fn the_live_metrics_serve_numbers_during_a_websocket_run() {
    use std::io::{BufRead, BufReader, Read, Write};
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let mut child = candor()
        .args(["run", "--live", "127.0.0.1:0", "--live-linger", "1m"])
        .args(["-R", "300", "-d", "3s", "-c", "2", "--quiet", "--json", "-"])
        .arg(url(&server, "/"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("live view at http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap().to_string());
            }
        }
    });
    // The results come on stdout as the run ends, while the view lingers: read them as they
    // arrive (the process is killed only once they are whole).
    let mut stdout = child.stdout.take().unwrap();
    let (out_tx, out_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || out_tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let addr: std::net::SocketAddr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the live address")
        .parse()
        .unwrap();
    let metrics = || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.split_once("\r\n\r\n")
            .map(|x| x.1.to_string())
            .unwrap_or_default()
    };
    let sample = |m: &str, series: &str| -> f64 {
        m.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in {m}"))
            .parse()
            .unwrap()
    };
    // During the run (bounded: 30 s), the counts are there and some messages are done.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let during = loop {
        let m = metrics();
        let finished =
            m.contains("candor_run_finished") && sample(&m, "candor_run_finished") == 1.0;
        assert!(
            !finished,
            "the run ended before /metrics showed a completed message: {m}"
        );
        if m.contains("candor_requests_completed_total")
            && sample(&m, "candor_requests_completed_total") > 0.0
        {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "{m}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(sample(&during, "candor_requests_intended_total") > 0.0);
    // The run ends (the results come on stdout while the view lingers).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let last = loop {
        let m = metrics();
        if sample(&m, "candor_run_finished") == 1.0 {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "{m}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The JSON follows the end by milliseconds; 30 s is a bound on a busy machine, not a
    // measure.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    let v: serde_json::Value = loop {
        if let Ok(v) = serde_json::from_slice(&got) {
            break v;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match out_rx.recv_timeout(left) {
            Ok(chunk) => got.extend_from_slice(&chunk),
            Err(e) => panic!(
                "no whole results on stdout ({e}): {}",
                String::from_utf8_lossy(&got)
            ),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 900);
    for k in ["intended", "completed"] {
        assert_eq!(
            sample(&last, &format!("candor_requests_{k}_total")),
            req(&v, k) as f64
        );
    }
    assert!(sample(&during, "candor_requests_completed_total") < 900.0);
}

/// Two shards of one `ws://` schedule, started together, then `candor merge`: the merged
/// books balance and are the shards' sums, and the server got every message once.
#[test]
fn websocket_shards_merge_into_books_that_balance() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let dir = temp_dir("shards");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let start_at = format!("{:.3}", now + 3.0);
    let shards: Vec<_> = (0..2)
        .map(|i| {
            let (json, target, start_at) = (
                dir.join(format!("shard-{i}.json")),
                url(&server, "/"),
                start_at.clone(),
            );
            std::thread::spawn(move || {
                candor()
                    .args(["run", "--shard", &format!("{i}/2"), "--start-at", &start_at])
                    .args(["-R", "400", "-d", "2s", "-c", "2", "-t", "1", "--quiet"])
                    .args(["--body", "part"])
                    .arg("--json")
                    .arg(json)
                    .arg(target)
                    .output()
            })
        })
        .collect();
    let mut sums = [0u64; 3];
    for (i, s) in shards.into_iter().enumerate() {
        let out = s.join().unwrap().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = load(&dir.join(format!("shard-{i}.json")));
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 400, "half of 800");
        for (k, sum) in ["intended", "completed", "failed"].iter().zip(&mut sums) {
            *sum += req(&v, k);
        }
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
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("shard set complete and consistent"), "{log}");
    let m = load(&merged);
    assert_eq!(m["kind"], "merged");
    assert_balanced(&m);
    for (k, sum) in ["intended", "completed", "failed"].iter().zip(sums) {
        assert_eq!(req(&m, k), sum, "merged {k}");
    }
    assert_eq!(req(&m, "intended"), 800);
    assert_eq!(
        server.counts().messages.load(Ordering::Relaxed),
        req(&m, "completed")
    );
    assert!(m["config"]["shards"]["problems"]
        .as_array()
        .unwrap()
        .is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that answers each message first with one of its own, carrying no number: by
/// `json:id` that reply matches nothing, so the connection ends (close 1002), the message on
/// the wire fails in class `protocol` (never completed by the wrong reply) and the
/// connection reopens after its back-off.
#[test]
fn a_reply_that_matches_nothing_fails_in_class_protocol() {
    let _g = serial();
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let (v, out) = run_json_any(&[
        "-R",
        "50",
        "-d",
        "2s",
        "-c",
        "1",
        "--ws-match",
        "json:id",
        "--body",
        &format!("{{{}}}", ws_server::STRAY_COMMAND),
        &url(&server, "/"),
    ]);
    assert_balanced(&v);
    let e = &v["requests"]["errors"];
    let protocol = e["protocol"].as_u64().unwrap_or(0);
    assert_eq!(req(&v, "completed"), 0, "{}", v["requests"]);
    assert!(protocol > 0, "{}", v["requests"]);
    assert_eq!(e["parse"], 0);
    let faults = v["connection_faults"]["WebSocket reply matched no message sent"]
        .as_u64()
        .unwrap_or(0);
    // Each stray reply ended a connection that had at least one message on the wire.
    assert!(faults > 0 && faults <= protocol, "{faults} {protocol}");
    assert!(req(&v, "connections_opened") > 1, "{}", v["requests"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("panicked"), "{text}");
}
