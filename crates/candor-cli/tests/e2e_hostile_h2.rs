//! Hostile HTTP/2 servers, end to end: the real binary against raw-frame servers written here
//! (std::net and a thread per connection, frames by hand) that answer the preface with their
//! SETTINGS and then flood one kind of frame without pause, reading what candor sends or not:
//! PING, SETTINGS, WINDOW_UPDATE, empty DATA, RST_STREAM (CVE-2023-44487 style) and
//! CONTINUATION (CVE-2024-27316 style), over `--h2` and `grpc://`. Each run must end on time,
//! with its memory bounded, its books balanced and the flood booked as a connection fault of
//! its kind (candor ends each such connection with GOAWAY ENHANCE_YOUR_CALM). And raw-frame gRPC
//! servers whose replies lie about their framing yet end with `grpc-status: 0` (a prefix longer
//! than the message, the compressed flag without `grpc-encoding`, no `application/grpc`
//! content-type): each call is INTERNAL in class `grpc` with the reason in its failure example,
//! and a failing status keeps the server's `grpc-message`.

mod common;

use common::{assert_balanced, candor, run_watched, serial, Watched};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

/// The server's SETTINGS (empty): the connection opens.
const SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A server on a free loopback port: on every connection it reads the client preface, sends
/// its SETTINGS and `prelude`, then writes `unit` over and over until the connection breaks;
/// with `read` a second thread reads (and drops) all that candor sends. Runs until the test
/// process ends; returns the port.
fn flood_server(unit: Vec<u8>, prelude: Vec<u8>, read: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // 64 KiB of frames a write, whole frames only.
    let chunk = unit.repeat((64 * 1024 / unit.len()).max(1));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (chunk, prelude) = (chunk.clone(), prelude.clone());
            std::thread::spawn(move || serve(stream, &chunk, &prelude, read));
        }
    });
    port
}

fn serve(mut s: TcpStream, chunk: &[u8], prelude: &[u8], read: bool) {
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).is_err() {
        return;
    }
    if s.write_all(&[&SETTINGS[..], prelude].concat()).is_err() {
        return;
    }
    if read {
        if let Ok(mut r) = s.try_clone() {
            std::thread::spawn(move || {
                let mut sink = [0u8; 64 * 1024];
                while matches!(r.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    }
    // Until candor closes the connection (the write then fails).
    while s.write_all(chunk).is_ok() {}
}

/// The run's length and drain, and how long it may take in all: the run, its drain, and 5 s
/// for the start (the preflight, the pool) and the end (the report) of a debug build on a
/// busy 2-core machine.
const RUN: &str = "2s";
const DRAIN: &str = "1s";
const LIMIT: Duration = Duration::from_secs(2 + 1 + 5);

/// Peak RSS bound: a flood-free run of these settings peaks near 20 MB; before the bounds,
/// a PING flood's acks piled up in the out buffer at hundreds of MB a second (438 MB in 5 s
/// against a slow scripted flooder, 1.5-2.5 GB in 3-6 s reported), so 150 MB holds any
/// bounded run and fails any unbounded one.
const MAX_RSS_KIB: u64 = 150 * 1024;

/// Runs candor with `args` and `--json`, watched; its output and the JSON.
fn run(args: &[&str]) -> (Watched, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!(
        "candor-floods-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.json");
    let mut cmd = candor();
    cmd.arg("run")
        .args(args)
        .args(["-d", RUN, "--drain", DRAIN, "-t", "1", "-c", "2"])
        .args(["--quiet", "--json"])
        .arg(&path);
    let w = run_watched(cmd, LIMIT);
    eprintln!(
        "{args:?}: peak RSS {} KiB, {:.2} s, killed {}",
        w.peak_rss_kib,
        w.elapsed.as_secs_f64(),
        w.killed
    );
    assert!(!w.killed, "still running after {LIMIT:?}: {}", w.stderr);
    assert!(w.status.code().is_some(), "ended by a signal: {}", w.stderr);
    assert!(!w.stderr.contains("panicked"), "{}", w.stderr);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no results written; stderr: {}", w.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    (w, serde_json::from_str(&text).unwrap())
}

/// What every flood must come to: on time (run_watched's limit), bounded memory, balanced
/// books, the flood booked as connection faults of its kind and nothing completed.
fn assert_flood_counted(w: &Watched, v: &serde_json::Value, frames: &str) {
    eprintln!(
        "{frames}: peak RSS {} KiB, {:.2} s",
        w.peak_rss_kib,
        w.elapsed.as_secs_f64()
    );
    assert!(
        w.peak_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB (bound {MAX_RSS_KIB} KiB)",
        w.peak_rss_kib
    );
    assert_balanced(v);
    let cause = format!(
        "server flooded the connection with {frames} (candor sent GOAWAY ENHANCE_YOUR_CALM)"
    );
    let faults = &v["connection_faults"];
    assert!(
        faults[&cause].as_u64().unwrap_or(0) > 0,
        "no '{cause}' in {faults}"
    );
    assert_eq!(v["requests"]["completed"].as_u64(), Some(0));
}

fn h2_flood(unit: Vec<u8>, prelude: Vec<u8>, read: bool, frames: &str) {
    let _g = serial();
    let port = flood_server(unit, prelude, read);
    let url = format!("http://127.0.0.1:{port}/");
    let (w, v) = run(&["--h2", "-R", "200", &url]);
    assert_flood_counted(&w, &v, frames);
}

fn ping() -> Vec<u8> {
    frame(6, 0, 0, b"12345678")
}

#[test]
fn a_ping_flood_that_reads_nothing_is_bounded_and_counted() {
    h2_flood(ping(), Vec::new(), false, "PING frames");
}

#[test]
fn a_ping_flood_that_reads_the_acks_is_bounded_and_counted() {
    h2_flood(ping(), Vec::new(), true, "PING frames");
}

#[test]
fn a_settings_flood_is_bounded_and_counted() {
    h2_flood(SETTINGS.to_vec(), Vec::new(), false, "SETTINGS frames");
}

#[test]
fn a_window_update_flood_is_bounded_and_counted() {
    h2_flood(
        frame(8, 0, 0, &1u32.to_be_bytes()),
        Vec::new(),
        true,
        "WINDOW_UPDATE frames",
    );
}

#[test]
fn an_empty_data_flood_is_bounded_and_counted() {
    h2_flood(
        frame(0, 0, 1, &[]),
        Vec::new(),
        true,
        "DATA frames that carry nothing",
    );
}

#[test]
fn an_rst_stream_flood_is_bounded_and_counted() {
    // CANCEL, again and again, for stream 1 (reset once, then no stream of candor's).
    h2_flood(
        frame(3, 0, 1, &8u32.to_be_bytes()),
        Vec::new(),
        true,
        "RST_STREAM frames",
    );
}

#[test]
fn a_continuation_flood_is_bounded_and_counted() {
    // A header block opened on stream 1 (`:status: 200`) that empty CONTINUATION frames never end.
    h2_flood(
        frame(9, 0, 1, &[]),
        frame(1, 0, 1, &[0x88]),
        true,
        "CONTINUATION frames",
    );
}

#[test]
fn a_ping_flood_of_a_grpc_server_is_bounded_and_counted() {
    let _g = serial();
    let port = flood_server(ping(), Vec::new(), false);
    let url = format!("grpc://127.0.0.1:{port}");
    let proto = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
        .display()
        .to_string();
    let (w, v) = run(&[
        &url,
        "--proto",
        &proto,
        "--call",
        "candor.bench.Bench/Echo",
        "--body",
        r#"{"name":"flood","seq":1}"#,
        "-R",
        "200",
    ]);
    assert_flood_counted(&w, &v, "PING frames");
}

/// An HPACK literal header field without indexing (new name).
fn literal(name: &str, value: &str) -> Vec<u8> {
    let mut b = vec![0x00, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.push(value.len() as u8);
    b.extend_from_slice(value.as_bytes());
    b
}

/// A gRPC server in raw frames: after the preface it sends its SETTINGS, then answers each
/// HEADERS frame candor opens a stream with: a head of `:status: 200` and `head` (HPACK
/// fields), one DATA frame `body`, and trailers `trailers`. Runs until the test process ends;
/// returns the port.
fn grpc_liar(head: Vec<u8>, body: Vec<u8>, trailers: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let (head, body, trailers) = (head.clone(), body.clone(), trailers.clone());
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if s.read_exact(&mut preface).is_err() || s.write_all(&SETTINGS).is_err() {
                    return;
                }
                let mut h = [0u8; 9];
                let mut payload = vec![0u8; 1 << 24];
                while s.read_exact(&mut h).is_ok() {
                    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    if s.read_exact(&mut payload[..len]).is_err() {
                        return;
                    }
                    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                    if h[3] != 1 {
                        continue;
                    }
                    let mut block = vec![0x88];
                    block.extend_from_slice(&head);
                    let reply = [
                        frame(1, 0x4, stream, &block),
                        frame(0, 0, stream, &body),
                        frame(1, 0x4 | 0x1, stream, &trailers),
                    ]
                    .concat();
                    if s.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Runs unary calls against `port` for a second; the JSON.
fn grpc_run(port: u16) -> serde_json::Value {
    let url = format!("grpc://127.0.0.1:{port}");
    let proto = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
        .display()
        .to_string();
    let (w, v) = run(&[
        &url,
        "--proto",
        &proto,
        "--call",
        "candor.bench.Bench/Echo",
        "--body",
        r#"{"name":"lie","seq":1}"#,
        "-R",
        "50",
    ]);
    assert!(w.peak_rss_kib < MAX_RSS_KIB, "{} KiB", w.peak_rss_kib);
    assert_balanced(&v);
    v
}

/// Every call failed INTERNAL in class `grpc`, its example saying `why`.
fn assert_internal(v: &serde_json::Value, why: &str) {
    let r = &v["requests"];
    assert_eq!(r["completed"].as_u64(), Some(0), "{r}");
    let failed = r["failed"].as_u64().unwrap();
    assert!(failed > 0, "{r}");
    assert_eq!(r["errors"]["grpc"].as_u64(), Some(failed), "{r}");
    assert_eq!(
        v["grpc_status"]["INTERNAL"].as_u64(),
        Some(failed),
        "{}",
        v["grpc_status"]
    );
    let examples = v["failure_examples"].as_array().expect("failure_examples");
    for e in examples {
        let excerpt = e["excerpt"].as_str().unwrap_or("");
        assert!(excerpt.contains(why), "{e}");
    }
}

fn grpc_type() -> Vec<u8> {
    literal("content-type", "application/grpc")
}

fn grpc_ok() -> Vec<u8> {
    literal("grpc-status", "0")
}

#[test]
fn a_grpc_reply_whose_prefix_claims_16_bytes_with_4_sent_is_internal() {
    let _g = serial();
    let port = grpc_liar(grpc_type(), vec![0, 0, 0, 0, 16, 1, 2, 3, 4], grpc_ok());
    let v = grpc_run(port);
    assert_internal(
        &v,
        "INTERNAL: gRPC response ended inside a message (12 bytes missing)",
    );
}

#[test]
fn a_grpc_reply_whose_prefix_claims_4_gib_with_4_sent_is_internal() {
    let _g = serial();
    let port = grpc_liar(
        grpc_type(),
        vec![0, 255, 255, 255, 255, 1, 2, 3, 4],
        grpc_ok(),
    );
    let v = grpc_run(port);
    assert_internal(
        &v,
        "INTERNAL: gRPC message of 4294967295 bytes exceeds the limit",
    );
}

#[test]
fn a_compressed_grpc_reply_without_grpc_encoding_is_internal() {
    let _g = serial();
    let port = grpc_liar(grpc_type(), vec![1, 0, 0, 0, 2, 8, 1], grpc_ok());
    let v = grpc_run(port);
    assert_internal(
        &v,
        "INTERNAL: a message flagged compressed without a grpc-encoding",
    );
}

#[test]
fn a_grpc_reply_without_the_grpc_content_type_is_internal() {
    let _g = serial();
    let port = grpc_liar(Vec::new(), vec![0, 0, 0, 0, 2, 8, 1], grpc_ok());
    let v = grpc_run(port);
    assert_internal(
        &v,
        "INTERNAL: the response's content-type is not application/grpc",
    );
}

#[test]
fn a_failing_grpc_status_keeps_the_servers_grpc_message_in_the_examples() {
    let _g = serial();
    let mut trailers = literal("grpc-status", "7");
    trailers.extend(literal("grpc-message", "no%20entry%20for%20you"));
    let port = grpc_liar(grpc_type(), vec![0, 0, 0, 0, 0], trailers);
    let v = grpc_run(port);
    let r = &v["requests"];
    let failed = r["failed"].as_u64().unwrap();
    assert!(failed > 0, "{r}");
    assert_eq!(v["grpc_status"]["PERMISSION_DENIED"].as_u64(), Some(failed));
    for e in v["failure_examples"].as_array().expect("failure_examples") {
        assert_eq!(
            e["excerpt"].as_str(),
            Some("PERMISSION_DENIED: no entry for you"),
            "{e}"
        );
    }
}
