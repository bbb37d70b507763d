//! Hostile HTTP/2 servers, end to end: the real binary against raw-frame servers written here
//! (std::net and a thread per connection, frames by hand) that answer the preface with their
//! SETTINGS and then flood one kind of frame without pause, reading what candor sends or not:
//! PING, SETTINGS, WINDOW_UPDATE, empty DATA, RST_STREAM (CVE-2023-44487 style) and
//! CONTINUATION (CVE-2024-27316 style), over `--h2` and `grpc://`. Each run must end on time,
//! with its memory bounded, its books balanced and the flood booked as a connection fault of
//! its kind (candor ends each such connection with GOAWAY ENHANCE_YOUR_CALM).

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
