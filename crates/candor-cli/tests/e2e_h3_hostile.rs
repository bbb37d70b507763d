//! `candor run --h3` against a hostile HTTP/3 peer of our own, where real servers cannot be made
//! to misbehave: quinn-proto's server side on a loopback UDP socket, completing the QUIC
//! handshake and then, on every request stream, resetting it (RESET_STREAM
//! H3_REQUEST_REJECTED), closing the connection with an HTTP/3 code (H3_INTERNAL_ERROR), or
//! sending a HEADERS frame that claims a terabyte. Each reads in the books by its cause and
//! code, and every request is accounted for.

mod common;

use bytes::BytesMut;
use common::{candor, serial, text};
use quinn_proto::{Dir, EndpointConfig, Event, ServerConfig, StreamEvent, VarInt};
use std::collections::HashMap;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
enum Misdeed {
    ResetStreams,
    CloseConnection,
    HugeHeaders,
}

/// The peer's certificate (PEM, for `--ca`) and its server configuration, ALPN `h3`.
fn server_config() -> (String, ServerConfig) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let pem = made.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = 0;
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    (pem, ServerConfig::with_crypto(Arc::new(crypto)))
}

/// Runs the hostile peer on a loopback UDP port until `stop`; returns its port and CA.
fn hostile(misdeed: Misdeed, stop: Arc<AtomicBool>) -> (u16, String, std::thread::JoinHandle<()>) {
    let (pem, config) = server_config();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    socket
        .set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let handle = std::thread::spawn(move || {
        let mut endpoint = quinn_proto::Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(config)),
            false,
            None,
        );
        let mut conns = HashMap::new();
        let mut buf = vec![0u8; 65536];
        let mut out = Vec::new();
        // Bounded: the test's run is seconds; the peer stops with it or after a minute.
        let until = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            let now = Instant::now();
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                out.clear();
                let data = BytesMut::from(&buf[..n]);
                match endpoint.handle(now, from, None, None, data, &mut out) {
                    Some(quinn_proto::DatagramEvent::NewConnection(incoming)) => {
                        out.clear();
                        if let Ok((ch, conn)) = endpoint.accept(incoming, now, &mut out, None) {
                            conns.insert(ch, (conn, from));
                        }
                    }
                    Some(quinn_proto::DatagramEvent::ConnectionEvent(ch, ev)) => {
                        if let Some((c, _)) = conns.get_mut(&ch) {
                            c.handle_event(ev);
                        }
                    }
                    Some(quinn_proto::DatagramEvent::Response(t)) => {
                        let _ = socket.send_to(&out[..t.size], from);
                    }
                    None => {}
                }
            }
            let now = Instant::now();
            for (ch, (conn, to)) in conns.iter_mut() {
                if conn.poll_timeout().is_some_and(|t| t <= now) {
                    conn.handle_timeout(now);
                }
                while let Some(ev) = conn.poll() {
                    if let Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) = ev {
                        while let Some(id) = conn.streams().accept(Dir::Bi) {
                            misbehave(misdeed, conn, id, now);
                        }
                    }
                }
                while let Some(ev) = conn.poll_endpoint_events() {
                    if let Some(back) = endpoint.handle_event(*ch, ev) {
                        conn.handle_event(back);
                    }
                }
                loop {
                    out.clear();
                    let Some(t) = conn.poll_transmit(now, 1, &mut out) else {
                        break;
                    };
                    let _ = socket.send_to(&out[..t.size], *to);
                }
            }
        }
    });
    (port, pem, handle)
}

fn misbehave(
    m: Misdeed,
    conn: &mut quinn_proto::Connection,
    id: quinn_proto::StreamId,
    now: Instant,
) {
    match m {
        Misdeed::ResetStreams => {
            let _ = conn.send_stream(id).reset(VarInt::from_u32(0x10b));
        }
        Misdeed::CloseConnection => conn.close(now, VarInt::from_u32(0x102), bytes::Bytes::new()),
        Misdeed::HugeHeaders => {
            // HEADERS (0x01) with an 8-byte length of 2^40.
            let mut frame = vec![0x01, 0xc0, 0, 0, 0x01, 0, 0, 0, 0];
            frame.extend_from_slice(&[0; 64]);
            let _ = conn.send_stream(id).write(&frame);
        }
    }
}

/// Runs candor against the peer; the results.
fn run_against(m: Misdeed, name: &str) -> (serde_json::Value, String) {
    let stop = Arc::new(AtomicBool::new(false));
    let (port, pem, peer) = hostile(m, stop.clone());
    let dir = std::env::temp_dir().join(format!("candor-h3-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, json) = (dir.join("ca.pem"), dir.join("r.json"));
    std::fs::write(&ca, pem).unwrap();
    let out = candor()
        .args([
            "run",
            "--h3",
            "-R",
            "100",
            "-c",
            "1",
            "--streams",
            "4",
            "-d",
            "1s",
            "--ca",
        ])
        .arg(&ca)
        .arg("--json")
        .arg(&json)
        .arg(format!("https://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    peer.join().unwrap();
    let t = text(&out);
    assert!(!t.contains("panicked"), "{t}");
    let body = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {t}"));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let r = &v["requests"];
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(n("intended"), 100, "{t}");
    assert_eq!(
        n("intended"),
        n("completed") + n("failed") + n("in_flight_at_end"),
        "{r}"
    );
    (v, t)
}

#[test]
fn every_request_stream_reset_fails_as_read_and_is_counted_by_its_code() {
    let _g = serial();
    let (v, t) = run_against(Misdeed::ResetStreams, "reset");
    let failed = v["requests"]["failed"].as_u64().unwrap();
    assert_eq!(failed, 100, "{t}");
    assert_eq!(v["requests"]["errors"]["read"].as_u64(), Some(100), "{t}");
    let resets = &v["connection_faults"]["server reset a request stream: H3_REQUEST_REJECTED"];
    assert_eq!(resets.as_u64(), Some(100), "{}", v["connection_faults"]);
}

#[test]
fn a_connection_closed_with_an_h3_code_is_booked_by_that_code() {
    let _g = serial();
    let (v, _) = run_against(Misdeed::CloseConnection, "close");
    assert_eq!(v["requests"]["completed"].as_u64(), Some(0));
    let closed = &v["connection_faults"]["server closed the HTTP/3 connection: H3_INTERNAL_ERROR"];
    assert!(
        closed.as_u64().unwrap_or(0) > 0,
        "{}",
        v["connection_faults"]
    );
}

#[test]
fn a_headers_frame_that_claims_a_terabyte_closes_the_connection_without_growing_memory() {
    let _g = serial();
    let (v, _) = run_against(Misdeed::HugeHeaders, "huge");
    assert_eq!(v["requests"]["completed"].as_u64(), Some(0));
    let broke = "server's frames broke HTTP/3 (candor closed with H3_EXCESSIVE_LOAD)";
    let n = v["connection_faults"][broke].as_u64();
    assert!(n.unwrap_or(0) > 0, "{}", v["connection_faults"]);
}
