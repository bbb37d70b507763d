//! HTTP/2 flow-control errors a server can commit (RFC 9113 §6.9): a WINDOW_UPDATE of 0, or one
//! that takes a window past 2^31-1, is an error of the stream it names (the client resets that
//! stream, with the right code, and fails its request, and the connection carries on) or, on
//! stream 0 or through SETTINGS_INITIAL_WINDOW_SIZE, of the connection (the client sends a
//! GOAWAY with the error's code, every request on the connection fails, and it reconnects).
//!
//! The server here is a script over a plain socket, since a well-behaved HTTP/2 library cannot
//! be made to send such frames: it answers every request with a bare `:status 200`, except the
//! first on each connection, which it answers with the WINDOW_UPDATE under test.

use candor_load::load_run::RunOptions;
use candor_load::Target;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

const MS: u64 = 1_000_000;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const WINDOW_UPDATE: u8 = 0x8;
const GOAWAY: u8 = 0x7;

/// What the script saw: connections accepted, the (stream, error code) of each RST_STREAM, and
/// the error code of each GOAWAY.
#[derive(Default)]
struct Seen {
    connections: u64,
    resets: Vec<(u32, u32)>,
    goaways: Vec<u32>,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Serves one connection: the first request is answered with `first_answer(stream)`, every
/// later one with `:status 200` (HPACK static index 8) ending the stream.
fn serve(mut sock: TcpStream, first_answer: fn(u32) -> Vec<u8>, seen: Arc<Mutex<Seen>>) {
    let mut preface = [0u8; 24];
    if sock.read_exact(&mut preface).is_err() {
        return;
    }
    let _ = sock.write_all(&frame(SETTINGS, 0, 0, &[]));
    let mut first = true;
    loop {
        let mut head = [0u8; 9];
        if sock.read_exact(&mut head).is_err() {
            return;
        }
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        if sock.read_exact(&mut payload).is_err() {
            return;
        }
        let reply = match kind {
            SETTINGS if flags & 0x1 == 0 => frame(SETTINGS, 0x1, 0, &[]),
            HEADERS if first => {
                first = false;
                first_answer(stream)
            }
            // END_STREAM | END_HEADERS, `:status 200`.
            HEADERS => frame(HEADERS, 0x5, stream, &[0x88]),
            RST_STREAM if payload.len() == 4 => {
                let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                seen.lock().unwrap().resets.push((stream, code));
                continue;
            }
            GOAWAY => {
                if let [_, _, _, _, a, b, c, d, ..] = payload[..] {
                    seen.lock()
                        .unwrap()
                        .goaways
                        .push(u32::from_be_bytes([a, b, c, d]));
                }
                return;
            }
            _ => continue,
        };
        if sock.write_all(&reply).is_err() {
            return;
        }
    }
}

/// Runs 50 requests at 500/s, one at a time on one connection, against the script.
fn run_against(first_answer: fn(u32) -> Vec<u8>) -> (candor_load::RunOutcome, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let accepting = seen.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            accepting.lock().unwrap().connections += 1;
            let seen = accepting.clone();
            std::thread::spawn(move || serve(sock, first_answer, seen));
        }
    });
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("http://{addr}/")).unwrap(),
        Default::default(),
    )
    .unwrap();
    c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
        streams: candor_load::config::DEFAULT_STREAMS,
        grpc: None,
    });
    c.threads = 1;
    c.connections = 1;
    c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
        streams: 1,
        grpc: None,
    });
    c.shape = candor_load::LoadShape::constant(500.0);
    c.duration_ns = 100 * MS;
    c.timeout_ns = 5_000 * MS;
    // The stream errors finish at once; the connection errors' back-off is cut by the drain.
    c.drain_ns = 1_000 * MS;
    c.validate().unwrap();
    let out = candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap();
    (out, seen)
}

fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// A stream error: that stream is reset with `code`, its request fails as a protocol error,
/// and the one connection carries every other request.
fn assert_stream_error(first_answer: fn(u32) -> Vec<u8>, code: u32) {
    let (out, seen) = run_against(first_answer);
    let m = &out.main.counts;
    assert_eq!(m.intended, 50, "{m:?}");
    assert_eq!((m.completed, m.failed), (49, 1), "{m:?}");
    assert_eq!(m.errors.parse, 1, "{m:?}");
    // The reset was written within a millisecond of the run's start; the script's thread
    // records it when it is next scheduled, which a busy machine may delay.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.lock().unwrap().resets.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.connections, 1);
    assert_eq!(seen.resets, vec![(1, code)]);
}

#[test]
fn a_zero_window_increment_on_a_stream_resets_that_stream_only() {
    assert_stream_error(|stream| window_update(stream, 0), 0x1);
}

#[test]
fn a_stream_window_past_the_maximum_resets_that_stream_only() {
    // 65,535 (the initial window) + 2^31-1 overflows.
    assert_stream_error(|stream| window_update(stream, 0x7fff_ffff), 0x3);
}

/// A connection error: the client says why in a GOAWAY (`code`), the request on the connection
/// fails, and the client opens a new one for the rest after its back-off (each new connection's
/// first request meets the same error, so the back-off grows and what it held back is unfinished).
fn assert_connection_error(first_answer: fn(u32) -> Vec<u8>, code: u32) {
    let (out, seen) = run_against(first_answer);
    let m = &out.main.counts;
    assert_eq!(m.intended, 50, "{m:?}");
    assert!(m.balanced(), "{m:?}");
    assert!(m.failed >= 1, "{m:?}");
    assert_eq!(m.errors.parse, m.failed, "{m:?}");
    // The GOAWAY was written when the error was read; the script's thread records it when it is
    // next scheduled, which a busy machine may delay.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !seen.lock().unwrap().goaways.contains(&code) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap();
    assert!(seen.connections >= 2, "{} connections", seen.connections);
    assert!(seen.resets.is_empty(), "{:?}", seen.resets);
    assert!(seen.goaways.contains(&code), "{:?}", seen.goaways);
}

#[test]
fn a_zero_window_increment_on_the_connection_is_a_connection_error() {
    assert_connection_error(|_| window_update(0, 0), 0x1);
}

/// A new SETTINGS_INITIAL_WINDOW_SIZE that takes an open stream's window past 2^31-1 (its window
/// was raised by 1 first) is an error of the connection (RFC 9113 §6.9.2).
#[test]
fn an_initial_window_size_pushing_a_stream_window_past_the_maximum_is_a_connection_error() {
    assert_connection_error(
        |stream| {
            let mut frames = window_update(stream, 1);
            // SETTINGS_INITIAL_WINDOW_SIZE (0x4) = 2^31-1.
            frames.extend(frame(SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]));
            frames
        },
        0x3,
    );
}

#[test]
fn a_connection_window_past_the_maximum_is_a_connection_error() {
    assert_connection_error(|_| window_update(0, 0x7fff_ffff), 0x3);
}
