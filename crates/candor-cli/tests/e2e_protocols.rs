//! End-to-end tests of the protocol modes of `candor run`: HTTP/1.1 pipelining, request sets,
//! raw TCP framing, and HTTPS (with a certificate generated here), each against a small server
//! on a loopback port the test opened itself.

mod common;
use common::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

const MS: f64 = 1e6;

/// With a 5 ms service time, 2 connections carry at most 400 requests/s one at a time, but 1,600/s
/// with 4 pipelined requests each (the built-in server answers pipelined requests in order, each
/// 5 ms after it was read). At 1,000/s only the pipelined run keeps up.
#[test]
fn pipelining_multiplies_what_a_connection_carries() {
    let _g = serial();
    let server = Server::start(&["--delay", "5ms"]);
    let (piped, _) = run_json(&[
        "-R",
        "1000",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "2s",
        "--pipeline",
        "4",
        &server.url,
    ]);
    assert_balanced(&piped);
    assert_eq!(req(&piped, "completed"), 2000);
    let p50 = pct(&piped, "response_time", 50.0);
    // Service time 5 ms plus queueing behind at most 3 others on the connection.
    assert!((5.0 * MS..25.0 * MS).contains(&p50), "pipelined p50 {p50}");
    assert_eq!(piped["config"]["pipeline"], 4);

    let (single, _) = run_json(&[
        "-R",
        "1000",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "2s",
        "-T",
        "10s",
        "--drain",
        "0s",
        &server.url,
    ]);
    assert_balanced(&single);
    // Capacity 400/s < 1000/s: the backlog grows and response time with it; nothing vanishes.
    assert!(
        req(&single, "completed") < 1000,
        "completed {}",
        req(&single, "completed")
    );
    assert!(req(&single, "in_flight_at_end") > 1000);
    assert!(pct(&single, "response_time", 99.0) > 500.0 * MS);
}

/// A minimal HTTP/1.1 server counting requests by request line.
fn counting_http_server() -> (String, Arc<Mutex<HashMap<String, u64>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let counts = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counts = counts.clone();
            std::thread::spawn(move || serve_counting(stream, counts));
        }
    });
    (url, seen)
}

fn serve_counting(stream: TcpStream, counts: Arc<Mutex<HashMap<String, u64>>>) {
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        *counts
            .lock()
            .unwrap()
            .entry(line.trim().to_string())
            .or_insert(0) += 1;
        if out
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
    }
}

#[test]
fn request_sets_are_sent_round_robin() {
    let _g = serial();
    let (url, seen) = counting_http_server();
    let dir = std::env::temp_dir().join(format!("candor-set-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let set = dir.join("set.jsonl");
    std::fs::write(
        &set,
        "# three requests\n{\"path\": \"/a\"}\n{\"method\": \"POST\", \"path\": \"/b\", \"body\": \"xyz\"}\n{\"path\": \"/c?q=1\", \"headers\": {\"X-T\": \"1\"}}\n",
    )
    .unwrap();
    let (v, _) = run_json(&[
        "-R",
        "300",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "--requests",
        set.to_str().unwrap(),
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 300);
    let seen = seen.lock().unwrap().clone();
    for line in ["GET /a HTTP/1.1", "POST /b HTTP/1.1", "GET /c?q=1 HTTP/1.1"] {
        assert_eq!(seen.get(line).copied(), Some(100), "{line}: {seen:?}");
    }
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"path\": \"/a\"}\n{oops\n").unwrap();
    let out = candor()
        .args(["run", "--requests", bad.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An echo server: whatever arrives goes straight back.
fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = stream;
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("tcp://{addr}")
}

#[test]
fn raw_tcp_with_each_framing() {
    let _g = serial();
    let url = echo_server();
    for framing in [
        vec!["--payload", "PING\\r\\n", "--expect-delimiter", "\\r\\n"],
        vec![
            "--payload",
            "hex:00 05 68 65 6c 6c 6f",
            "--length-prefix",
            "u16be",
        ],
        vec!["--payload", "0123456789", "--expect-bytes", "10"],
    ] {
        let mut args = vec!["-R", "500", "-c", "2", "-t", "1", "-d", "1s"];
        args.extend(framing.iter().copied());
        args.push(&url);
        let (v, _) = run_json(&args);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 500, "{framing:?}");
        assert_eq!(req(&v, "failed"), 0, "{framing:?}");
        assert_eq!(v["config"]["protocol"], "tcp");
        assert!(pct(&v, "response_time", 50.0) < 5.0 * MS);
    }
    let out = candor().args(["run", "-d", "1s", &url]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a response framing"));
}

/// A TLS HTTP/1.1 server with a certificate for "localhost" generated here; returns its URL and
/// the PEM of the certificate.
fn tls_server() -> (String, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
    );
    let port = serve_tls_ok(config);
    (format!("https://localhost:{port}/"), pem)
}

#[test]
fn https_verifies_certificates_and_times_handshakes() {
    let _g = serial();
    let (url, pem) = tls_server();
    let dir = std::env::temp_dir().join(format!("candor-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, pem).unwrap();

    let (v, _) = run_json(&[
        "-R",
        "400",
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "1s",
        "--ca",
        ca.to_str().unwrap(),
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 400);
    assert_eq!(v["config"]["protocol"], "http/1.1 (TLS)");
    let hs = v["extra"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "tls_handshake")
        .expect("handshake histogram");
    assert_eq!(
        hs["summary"]["count"].as_u64().unwrap(),
        4,
        "one handshake per connection"
    );

    let (v, _) = run_json(&[
        "-R",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        "--insecure",
        &url,
    ]);
    assert_eq!(req(&v, "completed"), 100);

    // Verification is on by default: a self-signed certificate is refused with a clear line.
    let out = candor().args(["run", "-d", "1s", &url]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("TLS handshake") && !err.contains("panicked"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
