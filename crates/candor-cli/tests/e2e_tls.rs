//! TLS servers that misbehave, against the real binary: a certificate chain over 64 KiB sent
//! to the connections made mid-run (a panic once lost the whole run), a KeyUpdate flood from a
//! server that never reads (the send buffer grew without end), a 60 KB chain on 400
//! connections (each kept its handshake buffers for the run). The servers are rustls servers
//! on 127.0.0.1 started here, on a thread per connection, ending with the test process.

mod common;
use common::*;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A certificate for "localhost" carrying `padding` bytes in an extension of no meaning (a
/// private OID, not critical: verifiers skip it), for chains of a chosen size.
fn padded(padding: usize) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let mut der = vec![
        0x04,
        0x83,
        (padding >> 16) as u8,
        (padding >> 8) as u8,
        padding as u8,
    ];
    der.resize(der.len() + padding, 0x5a);
    params
        .custom_extensions
        .push(rcgen::CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 55555, 1],
            der,
        ));
    let cert = params.self_signed(&key).unwrap();
    (
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Arc<rustls::ServerConfig> {
    Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap(),
    )
}

/// A chain of `parts` certificates of `padding` bytes each.
fn chain(parts: usize, padding: usize) -> Arc<rustls::ServerConfig> {
    let (leaf, key) = padded(padding);
    let mut chain = vec![leaf];
    chain.extend((1..parts).map(|_| padded(padding).0));
    config(chain, key)
}

/// Serves HTTP/1.1 over TLS: each connection with the configuration `pick` gives for the time
/// since this call; a connection accepted before `close_at` is closed by the server then.
/// `serve` may take over a connection after its handshake and first request.
fn serve(
    pick: impl Fn(Duration) -> Arc<rustls::ServerConfig> + Send + 'static,
    close_at: Option<Duration>,
    take_over: Option<fn(rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>)>,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let began = Instant::now();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let at = began.elapsed();
            let config = pick(at);
            if let (Some(close_at), Ok(s)) = (close_at, stream.try_clone()) {
                if at < close_at {
                    std::thread::spawn(move || {
                        std::thread::sleep(close_at - at);
                        let _ = s.shutdown(Shutdown::Both);
                    });
                }
            }
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if line == "\r\n" {
                        if let Some(take_over) = take_over {
                            return take_over(reader.into_inner());
                        }
                        let w = reader.get_mut();
                        if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                        let _ = w.flush();
                    }
                }
            });
        }
    });
    port
}

fn run_cmd(args: &[&str], json: &std::path::Path) -> Command {
    let mut cmd = candor();
    cmd.arg("run")
        .args(args)
        .args(["--quiet", "--json"])
        .arg(json);
    cmd
}

fn json_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-e2e-tls-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("out.json")
}

/// From 1.5 s on, the server closes its connections and every new one gets a 66 KB chain (over
/// the 64 KiB a TLS client accepts). The run must not be lost (it was: a panic in rustls, exit
/// 1, no JSON): the first 1.5 s are in the results, the handshakes after are TLS faults, the
/// books balance, and nothing panicked.
#[test]
fn a_chain_over_64_kib_mid_run_fails_handshakes_and_keeps_the_run() {
    let _g = serial();
    let (normal, big) = (chain(1, 0), chain(2, 33_000));
    let port = serve(
        move |at| {
            if at < Duration::from_millis(1500) {
                normal.clone()
            } else {
                big.clone()
            }
        },
        Some(Duration::from_millis(1500)),
        None,
    );
    let url = format!("https://localhost:{port}/");
    let json = json_path("chain");
    // Ends within -d + -T + 5 s; 30 s is the watchdog for a busy machine.
    let w = run_watched(
        run_cmd(
            &[
                "-k", "-R", "100", "-c", "2", "-t", "1", "-d", "3s", "-T", "2s", &url,
            ],
            &json,
        ),
        Duration::from_secs(30),
    );
    assert!(!w.killed);
    assert!(!w.stderr.contains("panicked"), "{}", w.stderr);
    let text = std::fs::read_to_string(&json).expect("the JSON is written");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_balanced(&v);
    assert!(req(&v, "completed") > 0, "{text}");
    assert!(req(&v, "failed") > 0, "{text}");
    let faults = v.to_string();
    assert!(faults.contains("TLS handshake failed"), "{faults}");
}

/// VmRSS of a live process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The RSS of a run of 400 connections once their handshakes are done (3 s into a 5 s run).
fn rss_after_handshakes(config: Arc<rustls::ServerConfig>, name: &str) -> u64 {
    let port = serve(move |_| config.clone(), None, None);
    let url = format!("https://localhost:{port}/");
    let json = json_path(name);
    let mut child = run_cmd(
        &["-k", "-R", "400", "-c", "400", "-t", "1", "-d", "5s", &url],
        &json,
    )
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let rss = rss_kib(child.id());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_balanced(&v);
    rss
}

/// 400 connections whose handshake brought a 60 KB chain give back the buffers grown for it.
/// Measured here (RSS 3 s into the run): 45 MB over the small certificate's run before (the
/// receive buffer grown to 128 KiB, kept), 23 MB after: what is left is the chain itself, which
/// rustls keeps for the connection's life (`KernelConnection`'s `peer_certificates`, 60 KB
/// each; its API cannot drop it). The bound, 34 MB over, sits halfway.
#[test]
fn a_60_kb_chain_leaves_no_handshake_buffers_behind() {
    let _g = serial();
    let small = rss_after_handshakes(chain(1, 0), "small");
    let large = rss_after_handshakes(chain(1, 60_000), "large");
    eprintln!("RSS after the handshakes: small certificate {small} KiB, 60 KB chain {large} KiB");
    assert!(large < small + 34 * 1024, "{large} KiB against {small} KiB");
}

/// After its first request, the server asks for a KeyUpdate again and again and never reads.
fn flood(mut s: rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) {
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        if s.conn.refresh_traffic_keys().is_err() {
            return;
        }
        while s.conn.wants_write() {
            if s.conn.write_tls(&mut s.sock).is_err() {
                return;
            }
        }
    }
}

/// A KeyUpdate flood on two connections: the answers must not pile up in memory (RSS grew by
/// ~5.5 MB a second in the issue, 23.5 to 97 MB in 16 s); past 32 without application data the
/// connection is a fault by that cause. Measured here, peak RSS over a run against a server
/// that behaves: +14 MB in these 6 s before (on a loaded machine), +0 after; the bound, 7 MB
/// over, sits halfway.
#[test]
fn a_key_update_flood_is_a_fault_and_memory_stays_bounded() {
    let _g = serial();
    let args = |url: &str| -> Vec<String> {
        [
            "-k", "-R", "10", "-c", "2", "-t", "1", "-d", "6s", "-T", "20s", url,
        ]
        .map(String::from)
        .to_vec()
    };
    let watched = |port: u16, name: &str| {
        let url = format!("https://localhost:{port}/");
        let a = args(&url);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let json = json_path(name);
        let w = run_watched(run_cmd(&a, &json), Duration::from_secs(60));
        assert!(!w.killed);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_balanced(&v);
        (w, v)
    };
    let calm = chain(1, 0);
    let (good, _) = watched(serve(move |_| calm.clone(), None, None), "calm");
    let noisy = chain(1, 0);
    let (w, v) = watched(serve(move |_| noisy.clone(), None, Some(flood)), "flood");
    eprintln!(
        "peak RSS: calm server {} KiB, KeyUpdate flood {} KiB",
        good.peak_rss_kib, w.peak_rss_kib
    );
    assert!(
        w.peak_rss_kib < good.peak_rss_kib + 7 * 1024,
        "{} KiB against {} KiB",
        w.peak_rss_kib,
        good.peak_rss_kib
    );
    let text = v.to_string();
    assert!(
        text.contains("more TLS KeyUpdates, warning alerts, empty records or HelloRequests"),
        "{text}"
    );
}
