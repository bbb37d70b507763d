//! A real gRPC server for tests and benchmarks, built from tonic: `candor.bench.Bench`
//! (`tests/proto/bench.proto`) on 127.0.0.1, answering after a fixed delay, holding every call
//! during periodic global stalls (candor-serve's `Stall`, so both servers have one truth), failing
//! with a status on command, dropping its connections on command, sending GOAWAY after a
//! connection age, with reflection and TLS optional.
//!
//! Per call, metadata commands override the settings: `x-fail: NOT_FOUND` answers that status,
//! `x-delay-ms: 20` delays that call, and `x-echo-timeout: 1` makes Echo answer
//! `grpc-timeout=VALUE`, the deadline the call was sent with, instead of the request's name.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

pub use candor_serve::Stall;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::{Connected, TcpConnectInfo};
use tonic::{Request, Response, Status, Streaming};

use crate::status::Code;

/// The code tonic generated from `bench.proto` (build.rs, protox, no protoc).
pub mod pb {
    tonic::include_proto!("candor.bench");
}

use pb::bench_server::{Bench, BenchServer};
use pb::{EchoReply, EchoRequest, StreamRequest};

/// Every `every`-th call (counting from the first, so `every: 1` is all of them) fails with
/// `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFailure {
    pub code: Code,
    pub every: u64,
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct TestServerOptions {
    /// Where to listen; tests use `127.0.0.1:0`.
    pub addr: SocketAddr,
    /// Tokio worker threads.
    pub threads: usize,
    /// Added to every call (before its first message for a stream).
    pub delay: Duration,
    /// Calls arriving inside a stall window wait for its end.
    pub stall: Option<Stall>,
    /// Calls failing with a status (replaceable while running: `TestServer::set_failure`).
    pub failure: Option<InjectedFailure>,
    /// Offer `grpc.reflection.v1` and `v1alpha`.
    pub reflection: bool,
    /// Serve TLS (ALPN h2) with a self-signed certificate for `localhost` and `127.0.0.1`.
    pub tls: bool,
    /// Send GOAWAY to each connection once it is this old (HTTP/2 graceful close).
    pub max_connection_age: Option<Duration>,
}

impl Default for TestServerOptions {
    fn default() -> Self {
        TestServerOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            delay: Duration::ZERO,
            stall: None,
            failure: None,
            reflection: false,
            tls: false,
            max_connection_age: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum TestServerError {
    #[error("test server: cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("test server: {0}")]
    Setup(String),
}

struct TestServerState {
    started_ns: u64,
    delay: Duration,
    stall: Option<Stall>,
    failure: Mutex<Option<InjectedFailure>>,
    calls: AtomicU64,
    connections: AtomicU64,
    /// Cancelled to drop every open connection; replaced by a fresh one for later connections.
    drop_token: Mutex<CancellationToken>,
}

impl TestServerState {
    /// What every call goes through before it answers: the stall, the delay, a failure.
    async fn admit<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let number = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(stall) = self.stall {
            let now = candor_core::now_ns();
            if let Some(end) = stall.window_end_at(self.started_ns, now) {
                tokio::time::sleep(Duration::from_nanos(end - now)).await;
            }
        }
        let metadata = request.metadata();
        let delay = match metadata
            .get("x-delay-ms")
            .map(|v| v.to_str().map(str::parse::<u64>))
        {
            Some(Ok(Ok(ms))) => Duration::from_millis(ms),
            Some(_) => {
                return Err(Status::invalid_argument(
                    "x-delay-ms: expected milliseconds",
                ))
            }
            None => self.delay,
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let commanded = match metadata
            .get("x-fail")
            .map(|v| v.to_str().map(str::parse::<Code>))
        {
            Some(Ok(Ok(code))) => Some(code),
            Some(_) => return Err(Status::invalid_argument("x-fail: expected a status name")),
            None => None,
        };
        let configured = (*self.failure.lock().expect("not poisoned"))
            .filter(|f| f.every > 0 && number % f.every == 0)
            .map(|f| f.code);
        match commanded.or(configured) {
            Some(Code::Ok) | None => Ok(()),
            Some(code) => Err(Status::new(
                tonic::Code::from_i32(code.as_u32() as i32),
                format!("failed on command: {code}"),
            )),
        }
    }
}

struct BenchService {
    shared: Arc<TestServerState>,
}

type ReplyStream = Pin<Box<dyn Stream<Item = Result<EchoReply, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Bench for BenchService {
    async fn echo(&self, request: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        self.shared.admit(&request).await?;
        // `x-echo-timeout`: the reply names the `grpc-timeout` the call came with instead.
        let timeout = request.metadata().get("x-echo-timeout").map(|_| {
            let t = request.metadata().get("grpc-timeout");
            format!(
                "grpc-timeout={}",
                t.and_then(|v| v.to_str().ok()).unwrap_or("none")
            )
        });
        let request = request.into_inner();
        Ok(Response::new(EchoReply {
            message: timeout.unwrap_or(request.name),
            seq: request.seq,
            at: None,
        }))
    }

    type StreamStream = ReplyStream;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        self.shared.admit(&request).await?;
        let request = request.into_inner();
        let interval = Duration::from_micros(request.interval_us);
        let name = request.name;
        let replies = tokio_stream::iter(0..i64::from(request.count)).then(move |seq| {
            let message = name.clone();
            async move {
                if seq > 0 && !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                Ok(EchoReply {
                    message,
                    seq,
                    at: None,
                })
            }
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn collect(
        &self,
        request: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<EchoReply>, Status> {
        self.shared.admit(&request).await?;
        let mut requests = request.into_inner();
        let mut count = 0;
        while let Some(message) = requests.next().await {
            message?;
            count += 1;
        }
        Ok(Response::new(EchoReply {
            message: "collected".to_string(),
            seq: count,
            at: None,
        }))
    }

    type ChatStream = ReplyStream;

    async fn chat(
        &self,
        request: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<ReplyStream>, Status> {
        self.shared.admit(&request).await?;
        let replies = request.into_inner().map(|message| {
            message.map(|m| EchoReply {
                message: m.name,
                seq: m.seq,
                at: None,
            })
        });
        Ok(Response::new(Box::pin(replies)))
    }
}

/// A TCP connection the server can drop on command: once its token is cancelled, reads and
/// writes fail, hyper drops the connection and the socket closes.
struct Droppable {
    io: TcpStream,
    dropped: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Droppable {
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.dropped.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "dropped on command",
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl Connected for Droppable {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.io.connect_info()
    }
}

impl AsyncRead for Droppable {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Droppable {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// How long a shutdown waits for calls in flight before it drops their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// A running test server; dropping it shuts it down (GOAWAY to every connection).
pub struct TestServer {
    addr: SocketAddr,
    shared: Arc<TestServerState>,
    ca_pem: Option<String>,
    stop: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Binds, then serves on a thread of its own; returns once it accepts connections.
    pub fn start(options: TestServerOptions) -> Result<(SocketAddr, TestServer), TestServerError> {
        if let Some(stall) = options.stall {
            stall
                .validate()
                .map_err(|e| TestServerError::Setup(e.to_string()))?;
        }
        let listener =
            std::net::TcpListener::bind(options.addr).map_err(|source| TestServerError::Bind {
                addr: options.addr,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| TestServerError::Bind {
                addr: options.addr,
                source,
            })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| TestServerError::Setup(e.to_string()))?;
        let tls = if options.tls {
            let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
            let certified = rcgen::generate_simple_self_signed(names)
                .map_err(|e| TestServerError::Setup(format!("certificate: {e}")))?;
            Some((certified.cert.pem(), certified.key_pair.serialize_pem()))
        } else {
            None
        };
        let shared = Arc::new(TestServerState {
            started_ns: candor_core::now_ns(),
            delay: options.delay,
            stall: options.stall,
            failure: Mutex::new(options.failure),
            calls: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            drop_token: Mutex::new(CancellationToken::new()),
        });
        // One thread means one: a current-thread runtime polls the connections on the thread
        // that serves, where a one-worker multi-thread runtime would hand every call between
        // two threads (a futex wake-up each way) and make the server, not the client under
        // test, the bound of a benchmark.
        let mut runtime = if options.threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(options.threads);
            builder
        };
        let runtime = runtime
            .enable_all()
            .build()
            .map_err(|e| TestServerError::Setup(format!("runtime: {e}")))?;
        let mut builder = tonic::transport::Server::builder();
        if let Some((cert, key)) = &tls {
            builder = builder
                .tls_config(
                    tonic::transport::ServerTlsConfig::new()
                        .identity(tonic::transport::Identity::from_pem(cert, key)),
                )
                .map_err(|e| TestServerError::Setup(format!("TLS: {e}")))?;
        }
        if let Some(age) = options.max_connection_age {
            builder = builder.max_connection_age(age);
        }
        let service = BenchServer::new(BenchService {
            shared: shared.clone(),
        });
        let mut router = builder.add_service(service);
        if options.reflection {
            let v1 = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(crate::BENCH_DESCRIPTOR_SET)
                .build_v1()
                .map_err(|e| TestServerError::Setup(format!("reflection: {e}")))?;
            let v1alpha = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(crate::BENCH_DESCRIPTOR_SET)
                .build_v1alpha()
                .map_err(|e| TestServerError::Setup(format!("reflection: {e}")))?;
            router = router.add_service(v1).add_service(v1alpha);
        }
        let stop = CancellationToken::new();
        let serve_stop = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let accept_shared = shared.clone();
        let accept_shared_for_grace = shared.clone();
        let thread = std::thread::Builder::new()
            .name("grpc-test-server".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(
                        move |accepted| {
                            accepted.map(|io| {
                                let _ = io.set_nodelay(true);
                                accept_shared.connections.fetch_add(1, Ordering::Relaxed);
                                let token = accept_shared
                                    .drop_token
                                    .lock()
                                    .expect("not poisoned")
                                    .child_token();
                                Droppable {
                                    io,
                                    dropped: Box::pin(token.cancelled_owned()),
                                }
                            })
                        },
                    );
                    // A graceful shutdown waits for the calls in flight; a stalled or endless one
                    // is cut off after a grace period, so that shutting down never hangs.
                    let grace_stop = serve_stop.clone();
                    let grace_shared = accept_shared_for_grace;
                    tokio::spawn(async move {
                        grace_stop.cancelled().await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                        grace_shared
                            .drop_token
                            .lock()
                            .expect("not poisoned")
                            .cancel();
                    });
                    let _ = router
                        .serve_with_incoming_shutdown(incoming, serve_stop.cancelled_owned())
                        .await;
                });
            })
            .map_err(|e| TestServerError::Setup(format!("thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(TestServerError::Setup(e)),
            Err(_) => return Err(TestServerError::Setup("server thread ended".to_string())),
        }
        let server = TestServer {
            addr,
            shared,
            ca_pem: tls.map(|(cert, _)| cert),
            stop,
            thread: Some(thread),
        };
        Ok((addr, server))
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The self-signed certificate (PEM) a client must trust, with TLS on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// When the server started (`candor_core::now_ns`): its stall windows count from here.
    pub fn started_ns(&self) -> u64 {
        self.shared.started_ns
    }

    /// Calls received so far.
    pub fn calls(&self) -> u64 {
        self.shared.calls.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Replaces the failure setting for the calls that follow.
    pub fn set_failure(&self, failure: Option<InjectedFailure>) {
        *self.shared.failure.lock().expect("not poisoned") = failure;
    }

    /// Closes every open connection at once, without GOAWAY (calls in flight are cut off);
    /// the server keeps accepting new ones.
    pub fn drop_connections(&self) {
        let mut token = self.shared.drop_token.lock().expect("not poisoned");
        token.cancel();
        *token = CancellationToken::new();
    }

    /// Sends GOAWAY to every connection, lets calls in flight finish, and stops.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}
