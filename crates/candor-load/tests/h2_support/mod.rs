//! A small HTTP/2 server for tests and benchmarks (tokio + the `h2` server API, loopback, port
//! 0): answers 200 "ok" after an optional fixed delay, can hold its first streams until enough
//! are open at once (so that tests of concurrency are exact, not timed), reset every n-th
//! stream, drop connections, speaks TLS with ALPN when given a configuration, counts how
//! many streams it serves at once, answers as an OpenAI-compatible event stream (`sse`: tokens
//! a fixed gap apart, optionally pausing mid-stream), and records every request as it arrived (method, path,
//! `x-` headers, body), so tests see what a client sent.

#![allow(dead_code)]

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::{Request, Response};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// The token `/login` answers with; `/api/...` wants it as `Authorization: Bearer TOKEN`.
pub const TOKEN: &str = "t0k3n";

#[derive(Clone)]
pub struct ServerOptions {
    /// Each response is sent this long after its request arrived.
    pub delay: Duration,
    /// Only the first this many streams (counted over the server's life) are delayed; 0 = all.
    pub delay_first: u64,
    /// The first streams are held, unanswered, until this many are open at once; then every
    /// stream is answered as usual. 0 = no hold. A client that cannot open this many streams
    /// at once never gets an answer to them, so a test of concurrency fails instead of passing
    /// by luck.
    pub hold_until_open: usize,
    /// Reset every n-th stream (INTERNAL_ERROR) instead of answering; 0 = never.
    pub reset_every: u64,
    /// Drop the connection (no GOAWAY) after accepting this many streams on it; 0 = never.
    pub close_after: u64,
    /// Shut the connection down gracefully (GOAWAY, then the last stream id it processed) after
    /// accepting this many streams on it, answering the streams below it; 0 = never.
    pub goaway_after: u64,
    /// TLS (with its ALPN list) instead of cleartext prior-knowledge HTTP/2.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS to announce (None = h2's default, unlimited).
    pub max_concurrent_streams: Option<u32>,
    /// Threads of the server's runtime.
    pub threads: usize,
    /// Answer as an OpenAI-compatible event stream instead of "ok".
    pub sse: Option<SseAnswer>,
}

/// A streamed answer: `tokens` chunks `gap` apart (the first after the response's delay), each
/// its own DATA frame, then `data: [DONE]`; after `pause_after` tokens (0: never) it waits
/// `pause` before the next.
#[derive(Clone, Copy, Debug)]
pub struct SseAnswer {
    pub tokens: usize,
    pub gap: Duration,
    pub pause_after: usize,
    pub pause: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            delay: Duration::ZERO,
            delay_first: 0,
            hold_until_open: 0,
            reset_every: 0,
            close_after: 0,
            goaway_after: 0,
            tls: None,
            max_concurrent_streams: None,
            threads: 1,
            sse: None,
        }
    }
}

#[derive(Default)]
pub struct Stats {
    /// Streams being handled right now, and the most at any moment.
    pub active: AtomicUsize,
    pub max_active: AtomicUsize,
    pub streams: AtomicU64,
    pub resets: AtomicU64,
    pub connections: AtomicU64,
    /// Connections dropped by `close_after`.
    pub dropped: AtomicU64,
    /// Connections shut down by `goaway_after`.
    pub goaways: AtomicU64,
    /// Every request as it arrived: "METHOD /path x-name=value... body=BODY".
    pub requests: std::sync::Mutex<Vec<String>>,
    /// `hold_until_open` was reached (once; never reset).
    released: std::sync::atomic::AtomicBool,
    release: tokio::sync::Notify,
}

pub struct H2Server {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a server on a free loopback port.
pub fn start(opts: ServerOptions) -> H2Server {
    start_on("127.0.0.1:0", opts).expect("bind loopback")
}

/// Starts a server on `addr`.
pub fn start_on(addr: &str, opts: ServerOptions) -> std::io::Result<H2Server> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stats = Arc::new(Stats::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let st = stats.clone();
    let thread = std::thread::spawn(move || {
        let rt = if opts.threads > 1 {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(opts.threads)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .expect("server runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let accept = async {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = sock.set_nodelay(true);
                    st.connections.fetch_add(1, Ordering::Relaxed);
                    let (opts, st) = (opts.clone(), st.clone());
                    tokio::spawn(async move {
                        match &opts.tls {
                            None => serve_connection(sock, &opts, st).await,
                            Some(cfg) => {
                                let acceptor = tokio_rustls::TlsAcceptor::from(cfg.clone());
                                if let Ok(tls) = acceptor.accept(sock).await {
                                    serve_connection(tls, &opts, st).await
                                }
                            }
                        }
                    });
                }
            };
            tokio::select! {
                _ = accept => {}
                _ = stop_rx => {}
            }
        });
    });
    Ok(H2Server {
        addr,
        stats,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

async fn serve_connection<T>(io: T, opts: &ServerOptions, stats: Arc<Stats>)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    if let Some(n) = opts.max_concurrent_streams {
        builder.max_concurrent_streams(n);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let mut accepted = 0;
    while let Some(Ok((req, respond))) = conn.accept().await {
        accepted += 1;
        if accepted == opts.close_after {
            // Returning drops the connection with its socket: the client sees it break with
            // this stream (at least) sent and unanswered.
            stats.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if accepted == opts.goaway_after {
            stats.goaways.fetch_add(1, Ordering::SeqCst);
            conn.graceful_shutdown();
        }
        let n = stats.streams.fetch_add(1, Ordering::Relaxed) + 1;
        // checked_rem: None for 0, which means never.
        let reset = n.checked_rem(opts.reset_every) == Some(0);
        let delay = if opts.delay_first == 0 || n <= opts.delay_first {
            opts.delay
        } else {
            Duration::ZERO
        };
        let (hold, stats, sse) = (opts.hold_until_open, stats.clone(), opts.sse);
        tokio::spawn(async move { handle(req, respond, delay, hold, reset, sse, stats).await });
    }
}

/// Waits until `hold` streams have been open at once (at any moment since the server started).
async fn hold_until_open(hold: usize, open_now: usize, stats: &Stats) {
    if hold == 0 {
        return;
    }
    if open_now >= hold {
        stats.released.store(true, Ordering::SeqCst);
        stats.release.notify_waiters();
        return;
    }
    loop {
        let released = stats.release.notified();
        tokio::pin!(released);
        // Registered before the flag is read, so a release in between is not missed.
        released.as_mut().enable();
        if stats.released.load(Ordering::SeqCst) {
            return;
        }
        released.await;
    }
}

async fn handle(
    mut req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    delay: Duration,
    hold: usize,
    reset: bool,
    sse: Option<SseAnswer>,
    stats: Arc<Stats>,
) {
    let now = stats.active.fetch_add(1, Ordering::SeqCst) + 1;
    stats.max_active.fetch_max(now, Ordering::SeqCst);
    hold_until_open(hold, now, &stats).await;
    let mut seen = format!(
        "{} {}",
        req.method(),
        req.uri().path_and_query().map_or("", |p| p.as_str())
    );
    for (name, value) in req.headers() {
        if name.as_str().starts_with("x-") {
            seen.push_str(&format!(
                " {name}={}",
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
    }
    // A login flow for scripts (`-s`): `/login` answers a token, `/api/...` wants it back as
    // a bearer token (401 and `x-why` without it); every other path answers "ok".
    let path = req.uri().path().to_string();
    let bearer = req
        .headers()
        .get("authorization")
        .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
    let mut received = Vec::new();
    let body = req.body_mut();
    while let Some(Ok(chunk)) = body.data().await {
        received.extend_from_slice(&chunk);
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    if !received.is_empty() {
        seen.push_str(&format!(" body={}", String::from_utf8_lossy(&received)));
    }
    stats.requests.lock().unwrap().push(seen);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if reset {
        stats.resets.fetch_add(1, Ordering::Relaxed);
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
    } else if let Some(sse) = sse {
        let response = Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .body(())
            .expect("static response");
        if let Ok(mut stream) = respond.send_response(response, false) {
            for k in 0..sse.tokens {
                if k > 0 {
                    tokio::time::sleep(sse.gap).await;
                }
                if k > 0 && k == sse.pause_after {
                    tokio::time::sleep(sse.pause).await;
                }
                let chunk =
                    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"t{k}\"}}}}]}}\n\n");
                if stream.send_data(Bytes::from(chunk), false).is_err() {
                    break;
                }
            }
            let _ = stream.send_data(Bytes::from_static(b"data: [DONE]\n\n"), true);
        }
    } else {
        let (status, answer) = if path == "/login" {
            (200, format!("token={TOKEN}"))
        } else if path.starts_with("/api/") && !bearer {
            (401, "no".to_string())
        } else {
            (200, "ok".to_string())
        };
        let mut response = Response::builder()
            .status(status)
            .header("content-length", answer.len().to_string())
            .header("content-type", "text/plain");
        if status == 401 {
            response = response.header("x-why", "no-token");
        }
        let response = response.body(()).expect("static response");
        if let Ok(mut stream) = respond.send_response(response, false) {
            let _ = stream.send_data(Bytes::from(answer), true);
        }
    }
    stats.active.fetch_sub(1, Ordering::SeqCst);
}

/// A self-signed certificate for 127.0.0.1, its PEM written to a temporary file (for
/// `TlsOptions.ca_file`), and a server configuration offering `alpn`.
pub struct TestCert {
    pub ca_file: std::path::PathBuf,
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

impl TestCert {
    pub fn new(tag: &str) -> TestCert {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
            .expect("generate certificate");
        let ca_file =
            std::env::temp_dir().join(format!("candor-h2-test-{}-{tag}.pem", std::process::id()));
        Self::with_ca_file(ck, ca_file).expect("write CA file")
    }

    /// A self-signed certificate for `names` marked as a CA, as
    /// `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -addext subjectAltName=...`
    /// makes it (webpki alone refuses such a certificate as a server's own).
    pub fn ca_flagged(tag: &str, names: &[&str]) -> TestCert {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("names");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("candor test {tag}"));
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("self-sign");
        let ca_file =
            std::env::temp_dir().join(format!("candor-h2-test-{}-{tag}.pem", std::process::id()));
        Self::with_ca_file(
            rcgen::CertifiedKey {
                cert,
                key_pair: key,
            },
            ca_file,
        )
        .expect("write CA file")
    }

    /// Like [`TestCert::new`], writing the PEM to `path` (kept until the value is dropped).
    pub fn at(path: &std::path::Path) -> std::io::Result<TestCert> {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .map_err(std::io::Error::other)?;
        Self::with_ca_file(ck, path.to_path_buf())
    }

    fn with_ca_file(
        ck: rcgen::CertifiedKey,
        ca_file: std::path::PathBuf,
    ) -> std::io::Result<TestCert> {
        std::fs::write(&ca_file, ck.cert.pem())?;
        Ok(TestCert {
            ca_file,
            cert: ck.cert.der().clone(),
            key: ck.key_pair.serialize_der(),
        })
    }

    pub fn server_config(&self, alpn: &[&[u8]]) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key.clone().into());
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], key)
            .expect("server certificate");
        cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(cfg)
    }
}

impl Drop for TestCert {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ca_file);
    }
}
