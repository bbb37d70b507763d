//! HTTP/1.1 over TLS end to end against a rustls server on 127.0.0.1 that the test starts: the
//! load threads allocate nothing per request in steady state (TLS 1.3 and 1.2, open and closed
//! loop, and with bodies larger than a record each way), the server renewing its keys mid-run
//! costs no request, and a server's close_notify is the end of its connection (what was answered
//! completes, the next request reconnects).
//! HTTP/2 over TLS is covered by `tests/h2.rs`.

mod steady_state;

use candor_load::load_run::RunOptions;
use candor_load::{RunOutcome, RunPlan, Target};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

/// The marked-allocation count is one for the whole process: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Default)]
struct ServerOptions {
    /// Serve TLS 1.2 only (else TLS 1.3 only).
    tls12: bool,
    /// Renew the server's keys (a TLS 1.3 KeyUpdate asking for ours too) every this many
    /// responses on a connection.
    key_update_every: Option<u64>,
    /// After this many responses on a connection, send close_notify and close it.
    close_after: Option<u64>,
    /// Bytes of body in every response (0: the body is "ok").
    body_len: usize,
}

struct TlsServer {
    port: u16,
    ca: tempfile::NamedTempFile,
    key_updates: Arc<AtomicU64>,
}

/// Serves `200 ok` to every HTTP/1.1 request over TLS, a thread per connection, until the test
/// process ends.
fn serve(opts: ServerOptions) -> TlsServer {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let mut ca = tempfile::NamedTempFile::new().unwrap();
    ca.write_all(cert.cert.pem().as_bytes()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let version = if opts.tls12 {
        &rustls::version::TLS12
    } else {
        &rustls::version::TLS13
    };
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[version])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let key_updates = Arc::new(AtomicU64::new(0));
    let updates = key_updates.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            let updates = updates.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
                let mut answered = 0u64;
                let mut line = String::new();
                let mut request_body = 0usize;
                let response = if opts.body_len == 0 {
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()
                } else {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                        opts.body_len
                    )
                    .into_bytes();
                    r.resize(r.len() + opts.body_len, b'b');
                    r
                };
                loop {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        request_body = v.trim().parse().unwrap_or(0);
                    }
                    if line != "\r\n" {
                        continue;
                    }
                    let mut body = vec![0u8; request_body];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    request_body = 0;
                    answered += 1;
                    let w = reader.get_mut();
                    if opts
                        .key_update_every
                        .is_some_and(|n| answered.is_multiple_of(n))
                        && w.conn.refresh_traffic_keys().is_ok()
                    {
                        updates.fetch_add(1, Ordering::Relaxed);
                    }
                    if w.write_all(&response).is_err() || w.flush().is_err() {
                        return;
                    }
                    if opts.close_after == Some(answered) {
                        w.conn.send_close_notify();
                        let _ = w.flush();
                        return;
                    }
                }
            });
        }
    });
    TlsServer {
        port,
        ca,
        key_updates,
    }
}

fn config_for(server: &TlsServer) -> RunPlan {
    let target = Target::parse(&format!("https://localhost:{}/", server.port)).unwrap();
    let mut c = candor_load::RunPlan::new(target, Default::default()).unwrap();
    c.tls.ca_file = Some(server.ca.path().to_path_buf());
    c.connections = 8;
    c.threads = 2;
    c
}

/// [`steady_state::steady_state_allocations`], one test at a time (the count is process-wide).
fn steady_state_run(config: RunPlan) -> (u64, RunOutcome) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    steady_state::steady_state_allocations(config)
}

fn assert_no_allocations(opts: ServerOptions, what: &str) {
    let server = serve(opts);
    for rate in [Some(5000.0), None] {
        let mut c = config_for(&server);
        c.shape = rate.map_or(
            candor_load::LoadShape::ClosedLoop,
            candor_load::LoadShape::constant,
        );
        let (allocations, out) = steady_state_run(c);
        let m = &out.main.counts;
        assert_eq!(m.failed, 0, "{what}, rate {rate:?}: {m:?}");
        // 5000/s for 5 s; closed loop does far more on any machine that runs the other tests.
        assert!(m.completed >= 15_000, "{what}, rate {rate:?}: {m:?}");
        assert_eq!(
            allocations, 0,
            "{what}, rate {rate:?}: the load threads allocated {allocations} times in steady state"
        );
    }
}

#[test]
fn https_requests_do_not_allocate_over_tls13() {
    assert_no_allocations(ServerOptions::default(), "TLS 1.3");
}

#[test]
fn https_requests_do_not_allocate_over_tls12() {
    assert_no_allocations(
        ServerOptions {
            tls12: true,
            ..Default::default()
        },
        "TLS 1.2",
    );
}

/// The server renews its keys every 50 responses on each connection and asks for ours: every
/// request still completes.
#[test]
fn key_updates_mid_run_cost_no_request() {
    let server = serve(ServerOptions {
        key_update_every: Some(50),
        ..Default::default()
    });
    let mut c = config_for(&server);
    c.shape = candor_load::LoadShape::constant(2000.0);
    c.duration_ns = 1_000_000_000;
    c.connections = 4;
    c.threads = 1;
    c.validate().unwrap();
    let out = candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap();
    let m = &out.main.counts;
    // A constant 2000/s schedule has 2000 entries in 1 s; +-2 for an entry on the window's
    // edge through float rounding.
    assert!(m.intended.abs_diff(2000) <= 2, "{m:?}");
    assert_eq!((m.completed, m.failed), (m.intended, 0), "{m:?}");
    // 2000 responses over 4 connections, one update every 50 on each.
    assert!(
        server.key_updates.load(Ordering::Relaxed) >= 30,
        "{} key updates",
        server.key_updates.load(Ordering::Relaxed)
    );
}

/// A server that says close_notify after each connection's third response: those responses
/// complete, and the next request on the connection reconnects (no failure: nothing was in
/// flight when the close came, one request per connection at a time).
#[test]
fn close_notify_ends_the_connection_and_the_next_request_reconnects() {
    let server = serve(ServerOptions {
        close_after: Some(3),
        ..Default::default()
    });
    let mut c = config_for(&server);
    c.shape = candor_load::LoadShape::constant(200.0);
    c.duration_ns = 500_000_000;
    c.connections = 2;
    c.threads = 1;
    c.validate().unwrap();
    let out = candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap();
    let m = &out.main.counts;
    assert!(m.intended.abs_diff(100) <= 2, "{m:?}");
    assert_eq!(
        m.completed + m.failed + m.in_flight_at_end,
        m.intended,
        "{m:?}"
    );
    // The close is understood: never a parse failure. A request can fail only by racing a
    // close (sent on the connection before its close_notify was read), at most one per closed
    // connection, and a connection closes only after three completed responses.
    assert_eq!(m.errors.parse, 0, "{m:?}");
    assert!(m.failed <= m.completed / 3 + 2, "{m:?}");
    assert!(m.completed > 0, "{m:?}");
}

/// Requests and responses larger than a record (a 20,000-byte body each way: two records out,
/// two in): the session's buffers grow on the first exchange of each connection, then nothing
/// is allocated per request, and every body arrives whole.
#[test]
fn requests_and_responses_over_several_records_do_not_allocate() {
    let server = serve(ServerOptions {
        body_len: 20_000,
        ..Default::default()
    });
    let mut c = config_for(&server);
    c.shape = candor_load::LoadShape::constant(2000.0);
    let lines = candor_load::requests::parse_request_lines(&format!(
        "{{\"method\": \"POST\", \"path\": \"/\", \"body\": \"{}\"}}",
        "q".repeat(20_000)
    ))
    .unwrap();
    c.requests = lines.iter().map(|l| l.spec.clone()).collect();
    c.workload.lines = lines;
    let (allocations, out) = steady_state_run(c);
    let m = &out.main.counts;
    assert_eq!(m.failed, 0, "{m:?}");
    // 2000/s for 5 s; every completed response carried its whole body.
    assert!(m.completed >= 5_000, "{m:?}");
    assert!(m.bytes_read >= m.completed * 20_000, "{m:?}");
    assert!(m.bytes_written >= m.completed * 20_000, "{m:?}");
    assert_eq!(
        allocations, 0,
        "the load threads allocated {allocations} times in steady state"
    );
}
