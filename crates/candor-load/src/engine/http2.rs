//! HTTP/2 beneath the engine core: the `h2` crate's framing on a single-threaded tokio runtime,
//! with microsecond pacing from a timerfd plus a final spin. Every decision is the core's, as
//! for the other protocols: which due request goes on which slot (a slot is a stream of a
//! connection, `--streams` per connection), whether a stream may open under the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS, timeouts (a stream that times out is reset and its
//! connection carries on), `generator_late`, stop, drain and the census.
//!
//! Every slot is a long-lived task that waits for the core to give it a request, opens a stream
//! for it and reads the response to its last byte. A scheduler task hands the core `now`,
//! wakes the slots it gave requests to, and runs the timeout scan. All of it runs on this
//! thread; state is shared through one `RefCell`, never borrowed across an await.

use crate::config::{LoadConfig, RequestSpec, Scheme};
use crate::engine::core::{Core, CoreConfig, HaltState, Plan as CorePlan, TimeoutScope};
use crate::engine::ledger::Ledger;
use crate::shared::{Failure, Halt, PhaseAcc, WorkerSetup};
use crate::workload::check::{BodyMatch, ResponseChecks};
use bytes::Bytes;
use candor_core::now_ns;
use candor_core::timerfd::TimerFd;
use candor_core::Wait;
use h2::client::{Connection, SendRequest};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use http::{HeaderMap, Method, Request, Uri};
use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// The scheduler never sleeps longer than this, so that a stop request is seen promptly.
const MAX_SLEEP_NS: u64 = 10_000_000;
/// Receive windows: large enough that a response body never waits for a WINDOW_UPDATE
/// round trip (h2's default of 64 KiB would make big bodies measure the window, not the server).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;

/// One request, built once: the head is cloned per send (h2 takes ownership), the body is a
/// reference-counted `Bytes` (cloning it copies nothing).
struct H2Request {
    head: Request<()>,
    body: Bytes,
}

/// Headers that HTTP/2 forbids (connection-specific); h2 rejects a request carrying them.
fn connection_specific(name: &str, value: &str) -> bool {
    matches!(
        name,
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    ) || (name == "te" && !value.eq_ignore_ascii_case("trailers"))
}

/// Builds the HTTP/2 form of the configured requests (the request set, or the single request),
/// in the same order as the HTTP/1.1 engine's prepared requests.
fn prepare(config: &LoadConfig) -> Result<Vec<H2Request>, String> {
    let scheme = match config.target.scheme {
        Scheme::Https => "https",
        _ => "http",
    };
    let single = [RequestSpec {
        method: config.method.clone(),
        path: config.target.path.clone(),
        headers: config.headers.clone(),
        body: config.body.clone(),
    }];
    let specs: &[RequestSpec] = if config.requests.is_empty() {
        &single
    } else {
        &config.requests
    };
    specs
        .iter()
        .map(|spec| build_request(scheme, &config.target.host_header, spec))
        .collect()
}

/// The HTTP/2 form of a request the core's maker filled (a template or a replayed record), which
/// it writes as HTTP/1.1 bytes: method, path, headers (`Host` becomes `:authority`) and body.
fn from_http1(scheme: &str, host: &str, bytes: &[u8]) -> Result<H2Request, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let body_at = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err("a filled request is not a valid HTTP/1.1 request".into()),
    };
    let spec = RequestSpec {
        method: parsed.method.unwrap_or("GET").to_string(),
        path: parsed.path.unwrap_or("/").to_string(),
        headers: parsed
            .headers
            .iter()
            .map(|h| format!("{}: {}", h.name, String::from_utf8_lossy(h.value)))
            .collect(),
        body: bytes[body_at..].to_vec(),
    };
    build_request(scheme, host, &spec)
}

fn build_request(scheme: &str, host: &str, spec: &RequestSpec) -> Result<H2Request, String> {
    let method = Method::from_bytes(spec.method.as_bytes())
        .map_err(|_| format!("invalid HTTP method '{}'", spec.method))?;
    let mut authority = host.to_string();
    let mut headers = HeaderMap::new();
    for line in &spec.headers {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("invalid header '{line}': expected 'Name: value'"))?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "host" {
            // HTTP/2 carries the host as the :authority pseudo-header.
            authority = value.to_string();
            continue;
        }
        if connection_specific(&name, value) {
            continue;
        }
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name in '{line}'"))?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| format!("invalid header value in '{line}'"))?;
        headers.append(n, v);
    }
    let sends_length = !spec.body.is_empty() || method == Method::POST || method == Method::PUT;
    if sends_length && !headers.contains_key(CONTENT_LENGTH) {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(spec.body.len()));
    }
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(spec.path.as_str())
        .build()
        .map_err(|e| {
            format!(
                "invalid request URI {scheme}://{authority}{}: {e}",
                spec.path
            )
        })?;
    let mut head = Request::new(());
    *head.method_mut() = method;
    *head.uri_mut() = uri;
    *head.version_mut() = http::Version::HTTP_2;
    *head.headers_mut() = headers;
    Ok(H2Request {
        head,
        body: Bytes::from(spec.body.clone()),
    })
}

/// Maps an h2 error onto candor's failure classes.
fn classify(e: &h2::Error) -> Failure {
    if e.is_io() || e.is_remote() {
        // The connection broke, or the server reset the stream or went away.
        Failure::Read
    } else if e.is_library() {
        // h2 found the server's frames malformed.
        Failure::Parse
    } else if e.is_go_away() || e.is_reset() {
        Failure::Read
    } else {
        // h2 refused the request before anything was sent.
        Failure::Write
    }
}

/// Bytes of the HTTP/2 stream (frames, above TLS), by phase of the moment they moved.
struct ByteCounts {
    warmup_end_ns: u64,
    read: [Cell<u64>; 2],
    written: [Cell<u64>; 2],
}

impl ByteCounts {
    fn add(&self, which: &[Cell<u64>; 2], n: usize) {
        let c = &which[(now_ns() >= self.warmup_end_ns) as usize];
        c.set(c.get() + n as u64);
    }
}

enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// The connection's byte stream as h2 sees it, counting what passes.
struct Io {
    inner: Transport,
    counts: Rc<ByteCounts>,
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = match &mut this.inner {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = r {
            this.counts
                .add(&this.counts.read, buf.filled().len() - before);
        }
        r
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = match &mut this.inner {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        if let Poll::Ready(Ok(n)) = r {
            this.counts.add(&this.counts.written, n);
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = match &mut this.inner {
            Transport::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        };
        if let Poll::Ready(Ok(n)) = r {
            this.counts.add(&this.counts.written, n);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        match &self.inner {
            Transport::Plain(s) => s.is_write_vectored(),
            Transport::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Link {
    Down,
    Connecting,
    Up,
}

struct Conn {
    link: Link,
    sender: Option<SendRequest<Bytes>>,
    /// Bumped by every successful connect: tells a slot whether its cached handle is current.
    epoch: u64,
    /// Connect attempts started, and the number of the last one that failed (with its class),
    /// so that requests that waited on an attempt fail with it instead of starting another.
    attempts: u64,
    failed_attempt: u64,
    last_failure: Failure,
    /// Slots waiting because the connection's streams reached the server's limit.
    stream_waiters: usize,
}

struct State {
    core: Core,
    conns: Vec<Conn>,
    /// The scheduler is asleep with no free slot: a freed slot must wake it.
    scheduler_wants_slot: bool,
    /// A condition that makes the run meaningless (the server does not speak HTTP/2).
    fatal: Option<String>,
    /// A request waited for a stream on a connection whose server allowed none
    /// (SETTINGS_MAX_CONCURRENT_STREAMS = 0): the pre-run check passed, so the server changed
    /// its limit during the run, and the report must say why requests were never sent.
    saw_zero_stream_limit: bool,
}

struct Engine {
    config: Arc<LoadConfig>,
    requests: Vec<H2Request>,
    /// Per request: the response checks besides the status (`None`: there are none).
    checks: Option<Arc<[ResponseChecks]>>,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    /// Bounds a connect attempt (TCP, TLS, the HTTP/2 preface); requests on the wire are timed
    /// out by the core's scan.
    timeout: Duration,
    bytes: Rc<ByteCounts>,
    st: RefCell<State>,
    /// Wakes the scheduler (a slot became free while it slept with none).
    wake_scheduler: Notify,
    /// Per slot: the core gave it a request.
    go: Box<[Notify]>,
    /// Per slot: the core timed its request out (and booked it); drop the stream.
    cancel: Box<[Notify]>,
    /// Per connection: it came up, failed to, went down, or a stream of it closed.
    conn_changed: Box<[Notify]>,
    /// What the scheduler's pacing did, once it has ended.
    pacing: std::cell::Cell<candor_core::PaceStats>,
}

type Handle = Option<(u64, SendRequest<Bytes>)>;

/// What the scheduler does next.
enum Plan {
    Fatal(String),
    Done,
    /// Requests were handed to slots: let them run first.
    Dispatched,
    Wait {
        send_at: u64,
        wake: u64,
    },
}

impl Engine {
    /// Makes sure connection `c` is up (connecting it, or waiting for the attempt under way) and
    /// that `cached` holds a current handle to it.
    async fn connected(self: &Rc<Self>, c: usize, cached: &mut Handle) -> Result<(), Failure> {
        {
            // The common case, without registering for changes.
            let st = self.st.borrow();
            let conn = &st.conns[c];
            if conn.link == Link::Up && matches!(cached, Some((e, _)) if *e == conn.epoch) {
                return Ok(());
            }
        }
        let mut waited_on: Option<u64> = None;
        loop {
            let notified = self.conn_changed[c].notified();
            tokio::pin!(notified);
            // Registered before the state is read, so a change in between is not missed.
            notified.as_mut().enable();
            let attempt = {
                let mut st = self.st.borrow_mut();
                let conn = &mut st.conns[c];
                match conn.link {
                    Link::Up => {
                        if !matches!(cached, Some((e, _)) if *e == conn.epoch) {
                            match &conn.sender {
                                Some(s) => *cached = Some((conn.epoch, s.clone())),
                                None => return Err(Failure::Connect),
                            }
                        }
                        return Ok(());
                    }
                    Link::Connecting => {
                        waited_on = Some(conn.attempts);
                        None
                    }
                    Link::Down => {
                        if waited_on.is_some_and(|a| a == conn.failed_attempt) {
                            return Err(conn.last_failure);
                        }
                        conn.link = Link::Connecting;
                        conn.attempts += 1;
                        let attempt = conn.attempts;
                        st.core.connecting(c, now_ns());
                        Some(attempt)
                    }
                }
            };
            if let Some(attempt) = attempt {
                return self.connect_and_publish(c, attempt, cached).await;
            }
            notified.await;
        }
    }

    async fn connect_and_publish(
        self: &Rc<Self>,
        c: usize,
        attempt: u64,
        cached: &mut Handle,
    ) -> Result<(), Failure> {
        let result = match tokio::time::timeout(self.timeout, self.connect()).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        };
        let out = {
            let mut st = self.st.borrow_mut();
            let conn = &mut st.conns[c];
            match result {
                Ok((sender, connection)) => {
                    conn.epoch += 1;
                    conn.link = Link::Up;
                    conn.sender = Some(sender.clone());
                    let epoch = conn.epoch;
                    *cached = Some((epoch, sender));
                    st.core.new_stream_connection(c);
                    let engine = self.clone();
                    tokio::task::spawn_local(async move {
                        // Drives the connection until it closes or fails; its streams see
                        // the error themselves, then the connection is marked down.
                        let _ = connection.await;
                        engine.connection_lost(c, epoch);
                    });
                    Ok(())
                }
                Err(f) => {
                    conn.link = Link::Down;
                    conn.failed_attempt = attempt;
                    conn.last_failure = f;
                    Err(f)
                }
            }
        };
        self.conn_changed[c].notify_waiters();
        out
    }

    fn connection_lost(&self, c: usize, epoch: u64) {
        {
            let mut st = self.st.borrow_mut();
            let conn = &mut st.conns[c];
            if conn.epoch != epoch || conn.link != Link::Up {
                return;
            }
            conn.link = Link::Down;
            conn.sender = None;
        }
        self.conn_changed[c].notify_waiters();
    }

    /// TCP connect, TLS with ALPN when https, and the HTTP/2 preface.
    async fn connect(&self) -> Result<(SendRequest<Bytes>, Connection<Io, Bytes>), Failure> {
        let tcp = TcpStream::connect(self.config.target.addr)
            .await
            .map_err(|_| Failure::Connect)?;
        let _ = tcp.set_nodelay(true);
        self.st.borrow_mut().core.connected(now_ns());
        let inner = match &self.tls {
            None => Transport::Plain(tcp),
            Some((connector, name)) => {
                let t0 = now_ns();
                let tls = match connector.connect(name.clone(), tcp).await {
                    Ok(tls) => tls,
                    Err(e) => {
                        let refused_h2 = e
                            .get_ref()
                            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                            .is_some_and(|r| {
                                *r == rustls::Error::AlertReceived(
                                    rustls::AlertDescription::NoApplicationProtocol,
                                )
                            });
                        if refused_h2 {
                            self.not_h2("refused it (no_application_protocol alert)");
                        }
                        return Err(Failure::Connect);
                    }
                };
                let t1 = now_ns();
                let mut st = self.st.borrow_mut();
                // By completion time; the connections opened before the first send belong to
                // the warm-up if there is one, else to the measured phase (not to a phase that
                // is never reported).
                st.core.tls_handshake(t1 - t0, t1);
                let alpn = tls.get_ref().1.alpn_protocol();
                if alpn != Some(b"h2".as_slice()) {
                    let got = alpn.map_or("chose no protocol".into(), |p| {
                        format!("chose '{}'", String::from_utf8_lossy(p))
                    });
                    drop(st);
                    self.not_h2(&got);
                    return Err(Failure::Connect);
                }
                Transport::Tls(Box::new(tls))
            }
        };
        let io = Io {
            inner,
            counts: self.bytes.clone(),
        };
        h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| classify(&e).min_connect())
    }

    /// The server will not speak HTTP/2 over TLS: the run is meaningless, end it with this.
    fn not_h2(&self, server_did: &str) {
        let mut st = self.st.borrow_mut();
        if st.fatal.is_none() {
            st.fatal = Some(format!(
                "{} does not speak HTTP/2 over TLS: candor offered 'h2' by ALPN and the server {server_did}; \
                 drop --h2 to test it with HTTP/1.1",
                self.config.target.url
            ));
        }
    }

    /// One exchange on slot `id`: wait for the connection, open a stream, read the response to
    /// its last byte; the core books the outcome.
    async fn exchange(self: &Rc<Self>, id: usize, cached: &mut Handle) {
        let (c, request, filled) = {
            let st = self.st.borrow();
            let filled = st.core.slot_request(id).map(|(bytes, _)| {
                from_http1(self.scheme(), &self.config.target.host_header, bytes)
            });
            (
                st.core.conn_of(id),
                st.core.exchange(id).request as usize,
                filled,
            )
        };
        let filled = match filled {
            Some(Ok(r)) => Some(r),
            Some(Err(_)) => return self.fail(id, Failure::Write),
            None => None,
        };
        let req = filled.as_ref().unwrap_or(&self.requests[request]);
        let mut reconnected = false;
        let (response, body_tx) = loop {
            if let Err(f) = self.connected(c, cached).await {
                return self.fail(id, f);
            }
            let Some((epoch, sender)) = cached.as_mut() else {
                return self.fail(id, Failure::Connect);
            };
            let epoch = *epoch;
            if !self.take_stream(id, c, epoch, sender).await {
                // The connection went down while this request waited for a stream.
                continue;
            }
            let ready = std::future::poll_fn(|cx| sender.poll_ready(cx)).await;
            let sent = now_ns();
            let opened =
                ready.and_then(|()| sender.send_request(req.head.clone(), req.body.is_empty()));
            match opened {
                Ok(pair) => {
                    self.st.borrow_mut().core.sent(id, sent);
                    break pair;
                }
                // The connection died before this request could be sent (GOAWAY, reset): the
                // request was never on the wire, so connecting again is no retry.
                Err(_) if !reconnected => {
                    reconnected = true;
                    *cached = None;
                    self.st.borrow_mut().core.close_stream(id);
                    self.stream_closed(c);
                    self.connection_lost(c, epoch);
                }
                Err(e) => return self.fail(id, classify(&e)),
            }
        };
        let outcome = tokio::select! {
            biased;
            // The core's timeout scan booked it: dropping the stream resets it (RST_STREAM
            // CANCEL); the connection carries on.
            _ = self.cancel[id].notified() => return,
            outcome = self.await_response(request, &req.body, response, body_tx) => outcome,
        };
        let now = now_ns();
        match outcome {
            Ok((status, checks_ok)) => {
                self.st
                    .borrow_mut()
                    .core
                    .complete_checked(id, status, checks_ok, now);
                self.stream_closed(c);
            }
            Err(e) => self.fail(id, classify(&e)),
        }
    }

    /// Slot `id`'s request failed now.
    fn fail(&self, id: usize, kind: Failure) {
        let c = {
            let mut st = self.st.borrow_mut();
            st.core.fail(id, kind, now_ns());
            st.core.conn_of(id)
        };
        self.stream_closed(c);
    }

    /// Sends the body if any, then reads the response to its last byte; the status and whether
    /// the response passed request `request`'s checks.
    async fn await_response(
        &self,
        request: usize,
        body: &Bytes,
        response: h2::client::ResponseFuture,
        body_tx: h2::SendStream<Bytes>,
    ) -> Result<(u16, bool), h2::Error> {
        if !body.is_empty() {
            let mut body_tx = body_tx;
            body_tx.send_data(body.clone(), true)?;
        }
        let response = response.await?;
        let status = response.status().as_u16();
        let checks = self.checks.as_ref().map(|t| &t[request]);
        let mut headers_ok = true;
        if let Some(checks) = checks {
            headers_ok = checks.headers.iter().all(|check| {
                response
                    .headers()
                    .iter()
                    .any(|(n, v)| check.matches(n.as_str().as_bytes(), v.as_bytes()))
            });
        }
        let needle = checks.and_then(|c| c.body.as_ref());
        let mut matched = BodyMatch::default();
        let mut body = response.into_body();
        while let Some(chunk) = body.data().await {
            let chunk = chunk?;
            if let Some(needle) = needle {
                matched.feed(needle, &chunk);
            }
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok((status, headers_ok && (needle.is_none() || matched.found())))
    }

    fn scheme(&self) -> &'static str {
        match self.config.target.scheme {
            Scheme::Https => "https",
            _ => "http",
        }
    }

    /// Waits until the core lets slot `id` open a stream on connection `c` (at `epoch`) under
    /// the server's SETTINGS_MAX_CONCURRENT_STREAMS. Returns false if the connection changed
    /// meanwhile. Without this, `h2` would queue the stream inside the client, and the wait
    /// would land in service time instead of send lag.
    async fn take_stream(
        &self,
        id: usize,
        c: usize,
        epoch: u64,
        sender: &SendRequest<Bytes>,
    ) -> bool {
        {
            // The common case, without registering for changes.
            let mut st = self.st.borrow_mut();
            if st.conns[c].epoch == epoch
                && st.conns[c].link == Link::Up
                && st.core.open_stream(id, sender.current_max_send_streams())
            {
                return true;
            }
        }
        loop {
            let notified = self.conn_changed[c].notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.st.borrow_mut();
                if st.conns[c].epoch != epoch || st.conns[c].link != Link::Up {
                    return false;
                }
                let limit = sender.current_max_send_streams();
                if st.core.open_stream(id, limit) {
                    return true;
                }
                st.conns[c].stream_waiters += 1;
                if limit == 0 {
                    st.saw_zero_stream_limit = true;
                }
            }
            notified.await;
            self.st.borrow_mut().conns[c].stream_waiters -= 1;
        }
    }

    /// A stream of connection `c` closed: a slot waiting for one may take it.
    fn stream_closed(&self, c: usize) {
        if self.st.borrow().conns[c].stream_waiters > 0 {
            self.conn_changed[c].notify_waiters();
        }
    }

    async fn slot_task(self: Rc<Self>, id: usize) {
        let mut cached: Handle = None;
        loop {
            self.go[id].notified().await;
            self.exchange(id, &mut cached).await;
            // At once, not at the scheduler's next round: the backlog, or the closed loop's
            // next request, goes on the slot that just freed (or one ahead of it in the FIFO).
            self.dispatch_due(now_ns());
        }
    }

    /// Wakes the slots the core gives the requests due at `now`; returns whether it gave any.
    fn dispatch_due(&self, now: u64) -> bool {
        let mut st = self.st.borrow_mut();
        let mut any = false;
        while let Some(due) = st.core.next_due(now) {
            self.go[due.slot].notify_one();
            any = true;
        }
        if st.scheduler_wants_slot && st.core.has_free_slot() {
            st.scheduler_wants_slot = false;
            drop(st);
            self.wake_scheduler.notify_one();
        }
        any
    }

    /// One round of the scheduler at `now`: early ends, interval flushes, the timeout scan,
    /// dispatch, the end of the run, and else when to wake next.
    fn plan(&self, now: u64, stop: &Halt) -> Plan {
        {
            let mut st = self.st.borrow_mut();
            if let Some(msg) = st.fatal.take() {
                return Plan::Fatal(msg);
            }
            let halt = HaltState {
                aborting: stop.aborting(),
                requested_at: stop.end.requested().map(|(_, at)| at),
            };
            st.core.halt(now, halt);
            st.core.flush_due(now);
            // Before the dispatch, so that a busy scheduler still scans (the scan itself runs
            // once per 10 ms) and the slots it frees take the due requests at once.
            let mut expired = false;
            st.core.scan_timeouts(now, |slot| {
                self.cancel[slot].notify_one();
                expired = true;
            });
            if expired {
                // The timed-out streams are closed: wake whoever waits for one (waking only
                // marks the tasks runnable; they run after this borrow ends).
                for (c, conn) in st.conns.iter().enumerate() {
                    if conn.stream_waiters > 0 {
                        self.conn_changed[c].notify_waiters();
                    }
                }
            }
        }
        if self.dispatch_due(now) {
            return Plan::Dispatched;
        }
        let mut st = self.st.borrow_mut();
        match st.core.plan(now) {
            CorePlan::Done => Plan::Done,
            CorePlan::Wait { send_at, wake } => {
                st.scheduler_wants_slot = !st.core.has_free_slot();
                Plan::Wait {
                    send_at,
                    wake: wake.min(now + MAX_SLEEP_NS),
                }
            }
        }
    }

    async fn scheduler(self: Rc<Self>, stop: Halt) -> Result<(), String> {
        let timerfd = TimerFd::new().map_err(|e| format!("timerfd: {e}"))?;
        // SAFETY: the TimerFd owns its descriptor and keeps it open, unreplaced, for as long as
        // the AsyncFd that registers it lives.
        let timer = unsafe { AsyncFd::register(timerfd) }.map_err(|e| format!("timerfd: {e}"))?;
        let mut pacer = candor_core::Pacer::new(match self.config.spin_ns {
            Some(spin_ns) => candor_core::Pacing::Fixed { spin_ns },
            None => candor_core::Pacing::Adaptive,
        });
        loop {
            let now = now_ns();
            let (send_at, wake) = match self.plan(now, &stop) {
                Plan::Fatal(msg) => return Err(msg),
                Plan::Done => break,
                Plan::Dispatched => {
                    // Let the slots send before anything else: arming the timer first costs
                    // ~10 us of send lag on a virtual machine. Yield, and plan the sleep after.
                    tokio::task::yield_now().await;
                    continue;
                }
                Plan::Wait { send_at, wake } => (send_at, wake),
            };
            let mut until = wake;
            let mut spin = wake <= now;
            if send_at != u64::MAX {
                match pacer.wait(now, send_at) {
                    Wait::Spin => spin = true,
                    Wait::Sleep { until_ns } => until = until.min(until_ns),
                }
            }
            if spin {
                // The last stretch before a send: yield instead of sleeping, so that the
                // reactor is polled (responses keep being read and timed) between clock reads.
                tokio::task::yield_now().await;
                continue;
            }
            timer.get_ref().arm(until);
            tokio::select! {
                biased;
                _ = self.wake_scheduler.notified() => {}
                r = timer.readable() => {
                    if let Ok(mut guard) = r {
                        // The timer's lateness teaches the pacer this machine's wake-ups.
                        pacer.woke(until, now_ns());
                        guard.get_inner().acknowledge();
                        guard.clear_ready();
                    }
                }
            }
        }
        self.pacing.set(pacer.stats());
        Ok(())
    }

    /// Accounts for everything still outstanding, then hands back the totals.
    fn finish(&self, stop: &Halt) -> [PhaseAcc; 2] {
        let now = now_ns();
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let ledger = st.core.ledger_mut();
        for (i, p) in ledger.phases.iter_mut().enumerate() {
            p.counts.bytes_read += self.bytes.read[i].get();
            p.counts.bytes_written += self.bytes.written[i].get();
        }
        if st.saw_zero_stream_limit {
            ledger.phases[1].warnings.push(
                "the server allowed no HTTP/2 streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0) during the run: \
                 requests that waited for a stream then could not be sent (counted as failed or never sent)"
                    .into(),
            );
        }
        let mut phases = st.core.finish(now, &now_ns, &|| stop.aborting());
        phases[1].pacing = self.pacing.get();
        phases
    }
}

impl Failure {
    /// A failure while setting a connection up is a connect failure, whatever broke.
    fn min_connect(self) -> Failure {
        match self {
            Failure::Timeout => Failure::Timeout,
            _ => Failure::Connect,
        }
    }
}

/// Runs one HTTP/2 load thread to the end of the schedule plus the drain and returns its two
/// phases (0 = warm-up, 1 = measured).
pub(crate) fn run_worker(setup: WorkerSetup) -> Result<[PhaseAcc; 2], String> {
    candor_core::set_fine_timer_slack();
    let config = setup.config.clone();
    let stop = Halt {
        signal: setup.stop.clone(),
        end: setup.end.clone(),
    };
    let requests = prepare(&config)?;
    let tls = match config.target.scheme {
        Scheme::Https => {
            let client =
                crate::tls::client_config(&config.tls, &[b"h2"]).map_err(|e| e.to_string())?;
            let name = crate::tls::server_name(&config.target.host).map_err(|e| e.to_string())?;
            Some((TlsConnector::from(client), name))
        }
        Scheme::Http => None,
        Scheme::Tcp => return Err("HTTP/2 needs an http:// or https:// target".into()),
    };
    let streams = config.streams.max(1);
    let slot_count = setup.connections * streams;
    let warmup_end_ns = setup.start_ns + config.warmup_ns;
    let conns = (0..setup.connections)
        .map(|_| Conn {
            link: Link::Down,
            sender: None,
            epoch: 0,
            attempts: 0,
            failed_attempt: 0,
            last_failure: Failure::Connect,
            stream_waiters: 0,
        })
        .collect();
    let cfg = CoreConfig::for_thread(&setup, streams, TimeoutScope::Stream, requests.len());
    let ledger = Ledger::new(&setup);
    let mut core = Core::new(cfg, setup.schedule, ledger);
    // The workload as over HTTP/1.1: the maker chooses each request by its `seq` (weights) and
    // fills templated or replayed ones into its slot's buffer; checks apply per request.
    let compiled = crate::workload::compile_requests(&config).map_err(|e| e.to_string())?;
    let checks = crate::workload::has_checks(&config)
        .then(|| Arc::<[ResponseChecks]>::from(compiled.checks.clone()));
    if crate::workload::needs_maker(&config, &compiled) {
        let w = &config.workload;
        let fills = compiled.templated || w.replay.is_some();
        let extra = w
            .replay
            .as_ref()
            .map_or(0, |p| p.max_request_bytes + config.target.host_header.len());
        let maker = crate::workload::runtime::RequestMaker::new(
            Arc::new(compiled),
            w.data.clone(),
            w.data_order,
            w.seed,
            core.slot_count(),
            extra,
        );
        core = core.with_maker(maker, fills);
    }
    let state = State {
        core,
        conns,
        scheduler_wants_slot: false,
        fatal: None,
        saw_zero_stream_limit: false,
    };
    let engine = Rc::new(Engine {
        timeout: Duration::from_nanos(config.timeout_ns),
        bytes: Rc::new(ByteCounts {
            warmup_end_ns,
            read: [Cell::new(0), Cell::new(0)],
            written: [Cell::new(0), Cell::new(0)],
        }),
        st: RefCell::new(state),
        wake_scheduler: Notify::new(),
        go: (0..slot_count).map(|_| Notify::new()).collect(),
        cancel: (0..slot_count).map(|_| Notify::new()).collect(),
        conn_changed: (0..setup.connections).map(|_| Notify::new()).collect(),
        requests,
        checks,
        tls,
        config,
        pacing: std::cell::Cell::new(candor_core::PaceStats::default()),
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the HTTP/2 runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&rt, {
        let engine = engine.clone();
        let stop = stop.clone();
        async move {
            for id in 0..slot_count {
                tokio::task::spawn_local(engine.clone().slot_task(id));
            }
            // Connect everything before the first intended send, as the HTTP/1.1 engine does.
            for c in 0..engine.conn_changed.len() {
                let e = engine.clone();
                tokio::task::spawn_local(async move {
                    let mut handle: Handle = None;
                    let _ = e.connected(c, &mut handle).await;
                });
            }
            engine.clone().scheduler(stop).await
        }
    });
    let phases = engine.finish(&stop);
    {
        // Tasks own sockets registered with this runtime's reactor: drop them inside it.
        let _guard = rt.enter();
        drop(local);
    }
    drop(rt);
    outcome.map(|()| phases)
}
