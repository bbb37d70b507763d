//! Servers that fail every connection the same way: an HTTP/2 server that answers the preface
//! with GOAWAY or announces an oversized frame, an HTTP/1.1 server that closes every connection
//! unanswered, a port that refuses. Each failure is counted in its class, the connection faults
//! are booked by cause, the books balance, and the connects stay within what the back-off
//! schedule (1 ms doubling to 1 s) allows in the run's time: never a silent reconnect storm
//! (before the back-off, such a server saw thousands of connections a second).
//!
//! The servers are scripts over plain sockets on 127.0.0.1, since a well-behaved library cannot
//! be made to misbehave this way.

use candor_load::engine::backoff::Backoff;
use candor_load::load_run::RunOptions;
use candor_load::{RunOutcome, RunPlan, Target};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const MS: u64 = 1_000_000;
const DURATION_NS: u64 = 1_000 * MS;
const DRAIN_NS: u64 = 1_000 * MS;
/// The pool opens, and the start is set, before the first intended send (50 ms after the run
/// began, plus 10 ms); a generous allowance for a busy machine on top.
const SLACK_NS: u64 = 500 * MS;
const GOAWAY: u8 = 0x7;

/// The most connects a connection may make in `window_ns` under the back-off: the first at
/// once, the k-th after the first k-1 waits.
fn most_connects(window_ns: u64) -> u64 {
    let (mut waited, mut k) = (0u64, 1u64);
    loop {
        let next = waited + Backoff::delay_ns(k as u32);
        if next > window_ns {
            return k;
        }
        waited = next;
        k += 1;
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Serves every connection with `serve` on its own thread; counts the connections accepted.
fn script(serve: fn(TcpStream)) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || serve(sock));
        }
    });
    (addr, accepted)
}

/// 1,000 requests a second for 1 s on one connection, then up to 1 s of drain.
fn run(addr: SocketAddr, http2: bool) -> RunOutcome {
    run_url(&format!("http://{addr}/"), http2)
}

fn run_url(url: &str, http2: bool) -> RunOutcome {
    let mut c = candor_load::RunPlan::new(Target::parse(url).unwrap(), Default::default()).unwrap();
    if http2 {
        c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
            streams: 1,
            grpc: None,
        });
    }
    c.threads = 1;
    c.connections = 1;
    c.shape = candor_load::LoadShape::constant(1000.0);
    c.duration_ns = DURATION_NS;
    c.drain_ns = DRAIN_NS;
    c.timeout_ns = 5_000 * MS;
    c.validate().unwrap();
    candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap()
}

/// The books of a run against a server that fails every connection with `cause`: what failed
/// is in `class` only, nothing vanished, and the faults are `cause`, at most as many as the
/// back-off allows in the run's time.
fn assert_counted_and_bounded(out: &RunOutcome, class: &str, cause: &str) -> u64 {
    let m = &out.main.counts;
    assert_eq!(m.intended, 1000, "{m:?}");
    assert!(m.balanced(), "{m:?}");
    assert_eq!(m.completed, 0, "{m:?}");
    assert!(m.failed >= 1, "{m:?}");
    let by_class: Vec<(&str, u64)> = m
        .errors
        .by_class()
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect();
    assert_eq!(by_class, vec![(class, m.failed)], "{m:?}");
    let faults = out.main.faults.by_cause();
    let n = faults.get(cause).copied().unwrap_or(0);
    assert_eq!(faults.len(), 1, "{faults:?}");
    let bound = most_connects(DURATION_NS + DRAIN_NS + SLACK_NS);
    assert!(
        n >= 2 && n <= bound,
        "{n} faults, at most {bound}: {faults:?}"
    );
    n
}

fn assert_connections_bounded(accepted: &AtomicU64, faults: u64) {
    let bound = most_connects(DURATION_NS + DRAIN_NS + SLACK_NS);
    let seen = accepted.load(Ordering::SeqCst);
    assert!(seen <= bound, "{seen} connections, at most {bound}");
    // Every connection accepted was failed and booked (the last may have been cut by the end).
    assert!(
        faults + 1 >= seen && faults <= seen,
        "{faults} faults, {seen} connections"
    );
}

#[test]
fn an_http2_goaway_after_the_preface_is_counted_by_its_code_and_backed_off() {
    let (addr, accepted) = script(|mut sock| {
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_ok() {
            // GOAWAY(last_stream_id = 0, PROTOCOL_ERROR), then close.
            let _ = sock.write_all(&frame(GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 1]));
        }
        let mut rest = [0u8; 1024];
        let _ = sock.read(&mut rest);
    });
    let out = run(addr, true);
    let n = assert_counted_and_bounded(
        &out,
        "parse",
        "server sent GOAWAY PROTOCOL_ERROR before any response",
    );
    assert_connections_bounded(&accepted, n);
    // The same after the server's SETTINGS, with another code.
    let (addr2, accepted2) = script(|mut sock| {
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_ok() {
            let mut frames = frame(0x4, 0, 0, &[]);
            // GOAWAY(last_stream_id = 0, REFUSED_STREAM).
            frames.extend(frame(GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 7]));
            let _ = sock.write_all(&frames);
        }
        let mut rest = [0u8; 1024];
        while matches!(sock.read(&mut rest), Ok(n) if n > 0) {}
    });
    let n = assert_counted_and_bounded(
        &run(addr2, true),
        "parse",
        "server sent GOAWAY REFUSED_STREAM before any response",
    );
    assert_connections_bounded(&accepted2, n);
    let results = candor_runner::run_results(
        &out,
        &run_config(addr, true),
        Vec::new(),
        serde_json::json!({}),
    );
    assert!(
        results.warnings.iter().any(|w| w.contains(
            "the most common cause: server sent GOAWAY PROTOCOL_ERROR before any response"
        )),
        "{:?}",
        results.warnings
    );
    assert!(
        !results
            .warnings
            .iter()
            .any(|w| w.contains("could not keep up")),
        "{:?}",
        results.warnings
    );
}

fn run_config(addr: SocketAddr, http2: bool) -> RunPlan {
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("http://{addr}/")).unwrap(),
        Default::default(),
    )
    .unwrap();
    if http2 {
        c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
            streams: candor_load::config::DEFAULT_STREAMS,
            grpc: None,
        });
    }
    c.shape = candor_load::LoadShape::constant(1000.0);
    c.duration_ns = DURATION_NS;
    c
}

#[test]
fn an_http2_server_announcing_an_oversized_frame_is_a_protocol_error_backed_off() {
    let (addr, accepted) = script(|mut sock| {
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_ok() {
            // A SETTINGS frame header announcing 1 MiB, far past the 16 KiB candor allows.
            let _ = sock.write_all(&[0x10, 0, 0, 0x4, 0, 0, 0, 0, 0]);
        }
        let mut rest = [0u8; 1024];
        while matches!(sock.read(&mut rest), Ok(n) if n > 0) {}
    });
    let out = run(addr, true);
    let n = assert_counted_and_bounded(
        &out,
        "parse",
        "server's frames broke HTTP/2 (candor sent GOAWAY FRAME_SIZE_ERROR)",
    );
    assert_connections_bounded(&accepted, n);
}

#[test]
fn an_http1_server_that_closes_every_connection_unanswered_is_backed_off() {
    let (addr, accepted) = script(|mut sock| {
        // Reads the request, then closes without an answer.
        let mut buf = [0u8; 4096];
        let _ = sock.read(&mut buf);
    });
    let out = run(addr, false);
    let n = assert_counted_and_bounded(
        &out,
        "read",
        "closed or reset by the server before the full response",
    );
    assert_connections_bounded(&accepted, n);
}

#[test]
fn a_port_that_refuses_is_retried_on_the_back_off_schedule() {
    // A port that was just free: connects to it are refused.
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let out = run(addr, false);
    assert_counted_and_bounded(&out, "connect", "connect refused or failed");
}

#[test]
fn a_server_that_breaks_every_tls_handshake_is_backed_off() {
    let (addr, accepted) = script(|mut sock| {
        // Answers the ClientHello with plain text: no TLS record.
        let mut hello = [0u8; 4096];
        if sock.read(&mut hello).is_ok() {
            let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let out = run_url(&format!("https://{addr}/"), false);
    let n = assert_counted_and_bounded(&out, "connect", "TLS handshake failed");
    assert_connections_bounded(&accepted, n);
}

/// A TLS server that completes every handshake and answers the first request with a record
/// that does not decrypt: the fault is booked as that, in words naming TLS (it was "response
/// broke the protocol"), and backed off as any other.
#[test]
fn a_tls_record_that_does_not_decrypt_is_booked_by_its_cause_and_backed_off() {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ServerConfig>> = std::sync::OnceLock::new();
    // Made once, before the server serves (its connections are served by a plain `fn`).
    CONFIG.get_or_init(|| {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
        Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
        )
    });
    let (addr, accepted) = script(|mut sock| {
        let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let mut tls = rustls::ServerConnection::new(CONFIG.get().unwrap().clone()).unwrap();
        while tls.is_handshaking() {
            if tls.complete_io(&mut sock).is_err() {
                return;
            }
        }
        // The request (and the client's Finished) arrive; the answer is 32 bytes of noise in
        // an application-data record.
        let mut stream = rustls::StreamOwned::new(tls, sock);
        let mut request = [0u8; 4096];
        if stream.read(&mut request).is_err() {
            return;
        }
        let mut noise = vec![23, 3, 3, 0, 32];
        noise.extend((0..32u8).map(|i| i.wrapping_mul(37)));
        let _ = stream.sock.write_all(&noise);
        let _ = stream.sock.read(&mut request);
    });
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("https://{addr}/")).unwrap(),
        Default::default(),
    )
    .unwrap();
    c.tls.insecure = true;
    c.threads = 1;
    c.connections = 1;
    c.shape = candor_load::LoadShape::constant(1000.0);
    c.duration_ns = DURATION_NS;
    c.drain_ns = DRAIN_NS;
    c.timeout_ns = 5_000 * MS;
    c.validate().unwrap();
    let out = candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap();
    let n = assert_counted_and_bounded(
        &out,
        "parse",
        "a TLS record from the server failed to decrypt",
    );
    assert_connections_bounded(&accepted, n);
}
