//! `candor serve --llm`: an OpenAI-compatible streaming completion server whose timing is known
//! in advance (time to first token, gap between tokens, output length, stall windows, faults),
//! so that an LLM serving benchmark can be checked against the truth as HTTP runs are.
//!
//! Each connection has its own thread, which reads a request, then writes its answer at
//! absolute deadlines on the monotonic clock (`clock_nanosleep`): the head at once, token `k` at
//! `read + ttft + k * itl`. A write due inside a stall window goes out at the window's end, as
//! every answer of the HTTP server does, so the truth of a stalled stream is computed by
//! [`emission_times`] without I/O. A thread per connection (rather than the HTTP server's event
//! loop) keeps each stream's deadlines independent of the others': LLM runs keep tens of
//! streams open, not thousands, and every write waits on its own deadline.

use crate::llm_body::RequestBody;
use crate::Stall;
use candor_core::exact_sleep::sleep_until_absolute;
use candor_core::now_ns;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use thiserror::Error;

/// A word of the prompt is this many tokens (OpenAI's rule of thumb: a token is about three
/// quarters of a word): `prompt_tokens = ceil(words * 4 / 3)`.
pub const TOKENS_PER_WORD: (u64, u64) = (4, 3);

/// The most connections served at once by default; more are refused (closed at once), since
/// each holds a thread.
pub const MAX_CONNECTIONS: usize = 1024;

/// How long a connection may wait for a request's first byte by default (at its start and
/// between keep-alive requests), and a blocked write for the client to read; then it is closed,
/// so that silent connections cannot hold the [`MAX_CONNECTIONS`] places for ever.
pub const IDLE_TIMEOUT_NS: u64 = 60_000_000_000;

/// How long a request's head may take by default from its first byte to its end; then it is
/// answered `408` and the connection closed (a head sent a byte at a time). The body that
/// follows has the idle timeout between two reads (nginx's `client_body_timeout`) and a total
/// deadline from [`MIN_BODY_RATE`].
pub const HEAD_TIMEOUT_NS: u64 = 10_000_000_000;

/// The slowest a body may arrive on the whole, in bytes per second: its total deadline is the
/// head timeout plus its length at this rate, from the end of its head (as nginx's and Apache
/// `mod_reqtimeout`'s `MinRate`); a later body is answered `408` and the connection closed.
/// Without it a read deadline alone lets a client sending a byte every 59 s hold a place and
/// its thread for years. 64 KiB/s is generous on both sides: a debug build parsed four 16 MiB
/// bodies at once in about 15 s on a busy 2-core machine, over 1 MB/s each (its time counts,
/// since the deadline runs while the body is parsed), a client on a real network sends far
/// faster, and the worst case, a 16 MiB body, still gets 256 s plus the head timeout.
pub const MIN_BODY_RATE: u64 = 64 * 1024;

/// The largest request body read (a prompt file's longest line is far below it).
const MAX_BODY: usize = 16 << 20;

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;

/// How the streaming server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmConfig {
    pub listen: SocketAddr,
    /// From reading a request to its first token.
    pub ttft_ns: u64,
    /// Between consecutive tokens of one response.
    pub itl_ns: u64,
    /// Tokens per response; a request's smaller `max_tokens` (or `max_completion_tokens`)
    /// lowers it for that request.
    pub output_tokens: u32,
    /// Periodic global stall: no byte leaves during a window.
    pub stall: Option<Stall>,
    /// Deliberate failures on every `every`-th request.
    pub fault: Option<LlmFault>,
    /// The model name the answers carry.
    pub model: String,
    /// The most connections served at once ([`MAX_CONNECTIONS`] by default).
    pub max_connections: usize,
    /// See [`IDLE_TIMEOUT_NS`].
    pub idle_timeout_ns: u64,
    /// See [`HEAD_TIMEOUT_NS`].
    pub head_timeout_ns: u64,
}

impl LlmConfig {
    /// TTFT 100 ms, ITL 20 ms, 128 tokens, no stall, no fault.
    pub fn new(listen: SocketAddr) -> LlmConfig {
        LlmConfig {
            listen,
            ttft_ns: 100_000_000,
            itl_ns: 20_000_000,
            output_tokens: 128,
            stall: None,
            fault: None,
            model: "candor-truth".to_string(),
            max_connections: MAX_CONNECTIONS,
            idle_timeout_ns: IDLE_TIMEOUT_NS,
            head_timeout_ns: HEAD_TIMEOUT_NS,
        }
    }

    /// Checks what [`start`] would refuse.
    pub fn validate(&self) -> Result<(), LlmError> {
        if self.output_tokens == 0 {
            return Err(LlmError::NoTokens);
        }
        if let Some(stall) = &self.stall {
            stall.validate().map_err(|_| LlmError::InvalidStall)?;
        }
        if let Some(fault) = &self.fault {
            if fault.every == 0 {
                return Err(LlmError::FaultEveryZero);
            }
        }
        if self.idle_timeout_ns == 0 || self.head_timeout_ns == 0 {
            return Err(LlmError::ZeroTimeout);
        }
        if self.max_connections == 0 {
            return Err(LlmError::NoConnections);
        }
        Ok(())
    }

    /// One line: TTFT, ITL, tokens, stall, fault.
    pub fn describe(&self) -> String {
        let ms = |ns: u64| candor_core::units::format_ns(ns as f64);
        let stall = match &self.stall {
            Some(s) => format!("{} every {}", ms(s.for_ns), ms(s.every_ns)),
            None => "none".to_string(),
        };
        let fault = match &self.fault {
            Some(f) if f.every == 1 => format!("{} on every request", f.kind),
            Some(f) => format!("{} on every {}th request", f.kind, f.every),
            None => "none".to_string(),
        };
        format!(
            "LLM streaming, ttft {}, itl {}, {} output tokens, stall {stall}, fault {fault}",
            ms(self.ttft_ns),
            ms(self.itl_ns),
            self.output_tokens
        )
    }
}

/// A deliberate failure on every `every`-th request (1 = all), counted across the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmFault {
    pub kind: LlmFaultKind,
    pub every: u64,
}

/// How a failing stream looks to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmFaultKind {
    /// `429 Too Many Requests` with an OpenAI error body, at once.
    RateLimit,
    /// Half the tokens, then `data: {"error": ...}` and the end of the stream.
    ErrorMidStream,
    /// Every token, then the end of the stream without `data: [DONE]`.
    NoDone,
    /// Half the tokens, then the connection is closed mid-stream.
    CloseMidStream,
}

impl LlmFaultKind {
    /// Every kind, in the order the command line lists them.
    pub const ALL: [LlmFaultKind; 4] = [
        LlmFaultKind::RateLimit,
        LlmFaultKind::ErrorMidStream,
        LlmFaultKind::NoDone,
        LlmFaultKind::CloseMidStream,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LlmFaultKind::RateLimit => "rate-limit",
            LlmFaultKind::ErrorMidStream => "error-mid-stream",
            LlmFaultKind::NoDone => "no-done",
            LlmFaultKind::CloseMidStream => "close-mid-stream",
        }
    }
}

impl fmt::Display for LlmFaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LlmFaultKind {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LlmFaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| LlmError::UnknownFault(s.to_string()))
    }
}

#[derive(Debug, Error)]
pub enum LlmError {
    #[error("--output-tokens must be at least 1")]
    NoTokens,
    #[error("invalid stall: need 0 < --stall-for < --stall-every")]
    InvalidStall,
    #[error("fault frequency must be at least 1 (1 = every request)")]
    FaultEveryZero,
    #[error("--idle-timeout and --head-timeout must be longer than zero")]
    ZeroTimeout,
    #[error("the server must take at least one connection")]
    NoConnections,
    #[error("unknown LLM fault '{0}': expected rate-limit, error-mid-stream, no-done or close-mid-stream")]
    UnknownFault(String),
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("cannot start the accept thread: {0}")]
    Thread(std::io::Error),
}

/// When each write of one streamed answer leaves, for a request read at `read_ns` by a server
/// started at `started_ns`: `[0]` the response head, then one instant per token (`tokens`
/// of them). Token `k` is due at `read + ttft + k * itl`; a write due inside a stall window
/// leaves at the window's end, and no write leaves before the one before it.
pub fn emission_times(
    config: &LlmConfig,
    started_ns: u64,
    read_ns: u64,
    tokens: u32,
    out: &mut Vec<u64>,
) {
    out.clear();
    let hold = |due: u64| match &config.stall {
        Some(s) => s.window_end_at(started_ns, due).unwrap_or(due),
        None => due,
    };
    let mut last = hold(read_ns);
    out.push(last);
    for k in 0..u64::from(tokens) {
        let due = read_ns + config.ttft_ns + k * config.itl_ns;
        last = hold(due).max(last);
        out.push(last);
    }
}

/// The prompt's token count by [`TOKENS_PER_WORD`], from its words: those of `prompt` for
/// completions, of the contents of `messages` for chat (see [`RequestBody::prompt_words`]).
pub fn prompt_tokens(words: u64) -> u64 {
    let (num, den) = TOKENS_PER_WORD;
    words.saturating_mul(num).div_ceil(den)
}

/// The words the server generates, in turn; each token is one of them plus a space.
const WORDS: [&str; 8] = [
    "candor", "measures", "from", "the", "intended", "send", "not", "after",
];

/// Which OpenAI endpoint a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Chat,
    Completions,
}

struct Shared {
    stop: AtomicBool,
    served: AtomicU64,
    fault_count: AtomicU64,
    id: AtomicU64,
    /// A second handle on every open connection, by number, so that shutdown can close them;
    /// each connection's thread removes its own.
    open: Mutex<HashMap<u64, TcpStream>>,
}

/// A running LLM server; dropping it shuts it down.
pub struct LlmServer {
    local_addr: SocketAddr,
    started_at_ns: u64,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl LlmServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `candor_core::now_ns()` when the server started; stall windows are relative to it.
    pub fn started_at_ns(&self) -> u64 {
        self.started_at_ns
    }

    /// Streams finished, faulted ones excluded.
    pub fn requests_served(&self) -> u64 {
        self.shared.served.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection and waits for the accept thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // The accept thread blocks in accept(): a connection of our own wakes it.
        let _ = TcpStream::connect(self.local_addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        if let Ok(open) = self.shared.open.lock() {
            for s in open.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds and starts accepting; the server takes connections when this returns.
pub fn start(config: LlmConfig) -> Result<LlmServer, LlmError> {
    config.validate()?;
    let bind = |error| LlmError::Bind {
        addr: config.listen,
        error,
    };
    let listener = TcpListener::bind(config.listen).map_err(bind)?;
    let local_addr = listener.local_addr().map_err(bind)?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        served: AtomicU64::new(0),
        fault_count: AtomicU64::new(0),
        id: AtomicU64::new(0),
        open: Mutex::new(HashMap::new()),
    });
    let started_at_ns = now_ns();
    let config = Arc::new(config);
    let accept = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("candor-llm-accept".into())
            .spawn(move || accept_loop(listener, config, shared, started_at_ns))
            .map_err(LlmError::Thread)?
    };
    Ok(LlmServer {
        local_addr,
        started_at_ns,
        shared,
        accept: Some(accept),
    })
}

fn accept_loop(
    listener: TcpListener,
    config: Arc<LlmConfig>,
    shared: Arc<Shared>,
    started_ns: u64,
) {
    let mut number = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors the backlog stays readable: pause rather than spin on it.
            std::thread::sleep(ACCEPT_RETRY);
            continue;
        };
        let Ok(copy) = stream.try_clone() else {
            continue;
        };
        {
            let Ok(mut open) = shared.open.lock() else {
                return;
            };
            if open.len() >= config.max_connections {
                continue; // dropped: closed at once
            }
            number += 1;
            open.insert(number, copy);
        }
        let _ = stream.set_nodelay(true);
        let (config, shared, id) = (config.clone(), shared.clone(), number);
        let forget = move |shared: &Shared| {
            if let Ok(mut open) = shared.open.lock() {
                open.remove(&id);
            }
        };
        let spawned = std::thread::Builder::new()
            .name("candor-llm-conn".into())
            .spawn({
                let shared = shared.clone();
                move || {
                    let _ = serve_connection(stream, &config, &shared, started_ns);
                    forget(&shared);
                }
            });
        if spawned.is_err() {
            forget(&shared);
        }
    }
}

/// The pause after a failed accept (out of descriptors, most likely).
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// How long a connection that is closed after an error answer goes on reading what the client
/// still sends: closing with unread input makes the kernel reset the connection, which can
/// destroy the answer before the client has read it.
const CLOSE_DRAIN_NS: u64 = 1_000_000_000;

/// The connection's socket as the request reader sees it: every read ends by a deadline, so
/// that neither waiting for a request nor reading one can last for ever.
struct Timed {
    stream: TcpStream,
    /// The deadline (monotonic ns) of every read until changed.
    deadline_ns: u64,
    /// Each read also ends this long after it began, when `Some`.
    per_read_ns: Option<u64>,
}

impl Timed {
    fn until(&mut self, deadline_ns: u64) {
        self.deadline_ns = deadline_ns;
        self.per_read_ns = None;
    }

    fn each_read_within_until(&mut self, ns: u64, deadline_ns: u64) {
        self.deadline_ns = deadline_ns;
        self.per_read_ns = Some(ns);
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let now = now_ns();
        let deadline = match self.per_read_ns {
            Some(ns) => self.deadline_ns.min(now.saturating_add(ns)),
            None => self.deadline_ns,
        };
        if now >= deadline {
            return Err(io::ErrorKind::TimedOut.into());
        }
        // SO_RCVTIMEO counts in microseconds and takes zero for "for ever": at least 1 us.
        let left = Duration::from_nanos((deadline - now).max(1_000));
        self.stream.set_read_timeout(Some(left))?;
        match self.stream.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}

/// What a request's head says: where it asked, its body's length, and whether the connection
/// stays open.
struct Head {
    path: String,
    length: usize,
    keep_alive: bool,
}

/// Waits up to the idle timeout for a request to begin (`None` at a clean end of stream or
/// when none did), then reads its head, which must end within the head timeout (`TimedOut`
/// when it does not).
fn read_head(reader: &mut BufReader<Timed>, config: &LlmConfig) -> io::Result<Option<Head>> {
    reader
        .get_mut()
        .until(now_ns().saturating_add(config.idle_timeout_ns));
    loop {
        match reader.fill_buf() {
            Ok([]) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    reader
        .get_mut()
        .until(now_ns().saturating_add(config.head_timeout_ns));
    let mut head = Vec::with_capacity(1024);
    loop {
        // Each read may take only what the head has left: a line without an end cannot grow it
        // past the limit.
        let room = (MAX_HEAD + 1).saturating_sub(head.len()) as u64;
        let n = (&mut *reader).take(room).read_until(b'\n', &mut head)?;
        if n == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        if head.ends_with(b"\r\n\r\n") || head == b"\r\n" {
            if head == b"\r\n" {
                head.clear(); // a stray blank line between requests
                continue;
            }
            break;
        }
        if head.len() > MAX_HEAD {
            return Err(io::ErrorKind::InvalidData.into());
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(io::ErrorKind::InvalidData.into()),
    }
    let mut length = 0usize;
    let mut keep_alive = req.version == Some(1);
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or(io::ErrorKind::InvalidData)?;
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            keep_alive = if v.contains("close") {
                false
            } else {
                keep_alive || v.contains("keep-alive")
            };
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(io::ErrorKind::InvalidData.into());
        }
    }
    if length > MAX_BODY {
        return Err(io::ErrorKind::InvalidData.into());
    }
    Ok(Some(Head {
        path: req.path.unwrap_or("/").to_string(),
        length,
        keep_alive,
    }))
}

/// A request body as read.
enum Body {
    Parsed(RequestBody),
    NotJson,
    /// Read past, unparsed (the request is refused for another reason).
    Skipped,
}

/// How long a body of `length` bytes may take in total: the head timeout plus its length at
/// [`MIN_BODY_RATE`].
fn body_allowance_ns(config: &LlmConfig, length: usize) -> u64 {
    let at_rate = (length as u128 * 1_000_000_000 / u128::from(MIN_BODY_RATE)) as u64;
    config.head_timeout_ns.saturating_add(at_rate)
}

/// Reads the `length` bytes of a body, each read within the idle timeout and all by the body's
/// total deadline ([`body_allowance_ns`] from now), parsing them (as they arrive: the body is
/// never held whole) when `parse`; an `Err` when the connection cannot go on (`TimedOut` when
/// either limit passed).
fn read_body(
    reader: &mut BufReader<Timed>,
    config: &LlmConfig,
    length: usize,
    parse: bool,
) -> io::Result<Body> {
    let deadline = now_ns().saturating_add(body_allowance_ns(config, length));
    reader
        .get_mut()
        .each_read_within_until(config.idle_timeout_ns, deadline);
    let mut rest = (&mut *reader).take(length as u64);
    let body = if parse {
        match RequestBody::read(&mut rest) {
            Ok(b) => Body::Parsed(b),
            Err(e) => match e.io_error_kind() {
                Some(kind) => return Err(kind.into()),
                None => Body::NotJson,
            },
        }
    } else {
        Body::Skipped
    };
    // What the parse did not need (after a syntax error, the rest of the body).
    io::copy(&mut rest, &mut io::sink())?;
    Ok(body)
}

/// Answers an error and closes: the answer first, then what the client still sends is read
/// for a while (see [`CLOSE_DRAIN_NS`]).
fn refuse(
    out: &mut TcpStream,
    reader: &mut BufReader<Timed>,
    started_ns: u64,
    config: &LlmConfig,
    status: u16,
    body: &str,
) -> io::Result<()> {
    respond_plain(out, started_ns, config, status, body, false)?;
    let _ = out.shutdown(Shutdown::Write);
    reader
        .get_mut()
        .until(now_ns().saturating_add(CLOSE_DRAIN_NS));
    let mut sink = [0u8; 4096];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

const MALFORMED: &str = "{\"error\":{\"message\":\"malformed request: candor serve --llm reads HTTP/1.1 with a head of at most 64 KiB and a Content-Length body of at most 16 MiB (no chunked bodies)\",\"type\":\"invalid_request_error\",\"code\":400}}";
const TOO_SLOW: &str = "{\"error\":{\"message\":\"the request did not arrive within the server's timeout\",\"type\":\"invalid_request_error\",\"code\":408}}";

fn serve_connection(
    stream: TcpStream,
    config: &LlmConfig,
    shared: &Shared,
    started_ns: u64,
) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    // A client that stops reading blocks a write: the idle timeout ends that too.
    out.set_write_timeout(Some(Duration::from_nanos(
        config.idle_timeout_ns.max(1_000),
    )))?;
    let mut reader = BufReader::new(Timed {
        stream,
        deadline_ns: now_ns().saturating_add(config.idle_timeout_ns),
        per_read_ns: None,
    });
    let mut times = Vec::new();
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let head = match read_head(&mut reader, config) {
            Ok(Some(h)) => h,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return refuse(&mut out, &mut reader, started_ns, config, 400, MALFORMED);
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return refuse(&mut out, &mut reader, started_ns, config, 408, TOO_SLOW);
            }
            Err(e) => return Err(e),
        };
        let keep = head.keep_alive;
        let endpoint = match head.path.split('?').next().unwrap_or("") {
            "/v1/chat/completions" => Some(Endpoint::Chat),
            "/v1/completions" => Some(Endpoint::Completions),
            _ => None,
        };
        let body = match read_body(&mut reader, config, head.length, endpoint.is_some()) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return refuse(&mut out, &mut reader, started_ns, config, 408, TOO_SLOW);
            }
            Err(e) => return Err(e),
        };
        let read_ns = now_ns();
        let (endpoint, request) = match (endpoint, body) {
            (Some(endpoint), Body::Parsed(request)) => (endpoint, request),
            (None, _) => {
                let body = "{\"error\":{\"message\":\"unknown endpoint: use /v1/chat/completions or /v1/completions\",\"type\":\"invalid_request_error\",\"code\":404}}";
                respond_plain(&mut out, started_ns, config, 404, body, keep)?;
                if keep {
                    continue;
                }
                return Ok(());
            }
            (Some(_), _) => {
                let body = "{\"error\":{\"message\":\"the body is not JSON\",\"type\":\"invalid_request_error\",\"code\":400}}";
                respond_plain(&mut out, started_ns, config, 400, body, keep)?;
                if keep {
                    continue;
                }
                return Ok(());
            }
        };
        let fault = config.fault.and_then(|f| {
            let n = shared.fault_count.fetch_add(1, Ordering::Relaxed) + 1;
            (n % f.every == 0).then_some(f.kind)
        });
        let id = shared.id.fetch_add(1, Ordering::Relaxed);
        let tokens = output_tokens(config, request.max_tokens);
        emission_times(config, started_ns, read_ns, tokens, &mut times);
        let answer = Answer {
            endpoint,
            id,
            model: &config.model,
            prompt_tokens: prompt_tokens(request.prompt_words),
            tokens,
            include_usage: request.include_usage,
        };
        let open = match (fault, request.stream) {
            (Some(LlmFaultKind::RateLimit), _) => {
                let body = "{\"error\":{\"message\":\"rate limited by candor serve --llm\",\"type\":\"rate_limit_error\",\"code\":429}}";
                respond_plain(&mut out, started_ns, config, 429, body, keep)?;
                keep
            }
            (_, true) => answer.stream(&mut out, &times, fault, keep)?,
            (_, false) => answer.whole(&mut out, &times, fault, keep)?,
        };
        if fault.is_none() {
            shared.served.fetch_add(1, Ordering::Relaxed);
        }
        if !open {
            return Ok(());
        }
    }
}

/// The request's output length: the server's, or a smaller `max_tokens`.
fn output_tokens(config: &LlmConfig, asked: Option<u64>) -> u32 {
    match asked {
        Some(n) if n >= 1 => config.output_tokens.min(n.min(u64::from(u32::MAX)) as u32),
        _ => config.output_tokens,
    }
}

/// A plain (not streamed) answer with a JSON or text body, held by a stall like any write.
fn respond_plain(
    out: &mut TcpStream,
    started_ns: u64,
    config: &LlmConfig,
    status: u16,
    body: &str,
    keep: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if keep { "" } else { "Connection: close\r\n" }
    );
    let now = now_ns();
    if let Some(end) = config.stall.and_then(|s| s.window_end_at(started_ns, now)) {
        sleep_until_absolute(end);
    }
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())
}

/// What one answer says, whatever its timing.
struct Answer<'a> {
    endpoint: Endpoint,
    id: u64,
    model: &'a str,
    prompt_tokens: u64,
    tokens: u32,
    include_usage: bool,
}

impl Answer<'_> {
    fn usage(&self) -> String {
        format!(
            "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{}}}",
            self.prompt_tokens,
            self.tokens,
            self.prompt_tokens + u64::from(self.tokens)
        )
    }

    /// The JSON of the chunk that carries token `k`.
    fn chunk(&self, k: u32) -> String {
        let word = WORDS[k as usize % WORDS.len()];
        let finish = if k + 1 == self.tokens {
            "\"length\""
        } else {
            "null"
        };
        match self.endpoint {
            Endpoint::Chat => {
                let role = if k == 0 { "\"role\":\"assistant\"," } else { "" };
                format!(
                    "{{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{{role}\"content\":\"{word} \"}},\"finish_reason\":{finish}}}]}}",
                    self.id, self.model
                )
            }
            Endpoint::Completions => format!(
                "{{\"id\":\"cmpl-{}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":\"{word} \",\"finish_reason\":{finish}}}]}}",
                self.id, self.model
            ),
        }
    }

    /// Streams the answer as server-sent events in HTTP/1.1 chunks, each write at its instant
    /// of `times`; whether the connection stays open.
    fn stream(
        &self,
        out: &mut TcpStream,
        times: &[u64],
        fault: Option<LlmFaultKind>,
        keep: bool,
    ) -> io::Result<bool> {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n{}\r\n",
            if keep { "" } else { "Connection: close\r\n" }
        );
        sleep_until_absolute(times[0]);
        out.write_all(head.as_bytes())?;
        let cut = match fault {
            Some(LlmFaultKind::ErrorMidStream | LlmFaultKind::CloseMidStream) => self.tokens / 2,
            _ => self.tokens,
        };
        let mut event = String::new();
        for k in 0..cut {
            event.clear();
            let _ = write!(event, "data: {}\n\n", self.chunk(k));
            sleep_until_absolute(times[1 + k as usize]);
            write_chunk(out, &event)?;
        }
        match fault {
            Some(LlmFaultKind::CloseMidStream) => {
                let _ = out.shutdown(Shutdown::Both);
                return Ok(false);
            }
            Some(LlmFaultKind::ErrorMidStream) => {
                write_chunk(
                    out,
                    "data: {\"error\":{\"message\":\"generation failed (candor serve --llm fault)\",\"type\":\"server_error\",\"code\":500}}\n\n",
                )?;
            }
            _ => {
                if self.include_usage {
                    event.clear();
                    let object = match self.endpoint {
                        Endpoint::Chat => "chat.completion.chunk",
                        Endpoint::Completions => "text_completion",
                    };
                    let _ = write!(
                        event,
                        "data: {{\"id\":\"x-{}\",\"object\":\"{object}\",\"created\":0,\"model\":\"{}\",\"choices\":[],\"usage\":{}}}\n\n",
                        self.id,
                        self.model,
                        self.usage()
                    );
                    write_chunk(out, &event)?;
                }
                if fault != Some(LlmFaultKind::NoDone) {
                    write_chunk(out, "data: [DONE]\n\n")?;
                }
            }
        }
        out.write_all(b"0\r\n\r\n")?;
        Ok(keep)
    }

    /// The whole answer in one JSON body, written at the last token's instant.
    fn whole(
        &self,
        out: &mut TcpStream,
        times: &[u64],
        fault: Option<LlmFaultKind>,
        keep: bool,
    ) -> io::Result<bool> {
        let text: String = (0..self.tokens)
            .map(|k| format!("{} ", WORDS[k as usize % WORDS.len()]))
            .collect();
        let body = match self.endpoint {
            Endpoint::Chat => format!(
                "{{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":\"length\"}}],\"usage\":{}}}",
                self.id,
                self.model,
                self.usage()
            ),
            Endpoint::Completions => format!(
                "{{\"id\":\"cmpl-{}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":\"length\"}}],\"usage\":{}}}",
                self.id,
                self.model,
                self.usage()
            ),
        };
        sleep_until_absolute(*times.last().unwrap_or(&0));
        if matches!(
            fault,
            Some(LlmFaultKind::CloseMidStream | LlmFaultKind::ErrorMidStream)
        ) {
            // Without a stream there is no middle: the server fails the request as a whole.
            let err = "{\"error\":{\"message\":\"generation failed (candor serve --llm fault)\",\"type\":\"server_error\",\"code\":500}}";
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
                err.len(),
                if keep { "" } else { "Connection: close\r\n" }
            );
            out.write_all(head.as_bytes())?;
            out.write_all(err.as_bytes())?;
            return Ok(keep);
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
            body.len(),
            if keep { "" } else { "Connection: close\r\n" }
        );
        out.write_all(head.as_bytes())?;
        out.write_all(body.as_bytes())?;
        Ok(keep)
    }
}

/// One HTTP/1.1 chunk holding `data`.
fn write_chunk(out: &mut TcpStream, data: &str) -> io::Result<()> {
    let mut framed = Vec::with_capacity(data.len() + 16);
    let _ = write!(framed, "{:x}\r\n", data.len());
    framed.extend_from_slice(data.as_bytes());
    framed.extend_from_slice(b"\r\n");
    out.write_all(&framed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn config() -> LlmConfig {
        let mut c = LlmConfig::new("127.0.0.1:0".parse().unwrap());
        c.ttft_ns = 100 * MS;
        c.itl_ns = 20 * MS;
        c.output_tokens = 4;
        c
    }

    #[test]
    fn a_body_may_take_the_head_timeout_plus_its_length_at_the_minimum_rate() {
        let c = config();
        assert_eq!(body_allowance_ns(&c, 0), HEAD_TIMEOUT_NS);
        // The largest body: 16 MiB at 64 KiB/s is 256 s.
        assert_eq!(
            body_allowance_ns(&c, MAX_BODY),
            HEAD_TIMEOUT_NS + 256_000_000_000
        );
        assert_eq!(
            body_allowance_ns(&c, 64 * 1024 + 1),
            HEAD_TIMEOUT_NS + 1_000_015_258
        );
    }

    #[test]
    fn without_a_stall_tokens_are_due_at_ttft_then_every_itl() {
        let mut t = Vec::new();
        emission_times(&config(), 0, 1_000 * MS, 4, &mut t);
        assert_eq!(
            t,
            vec![1_000 * MS, 1_100 * MS, 1_120 * MS, 1_140 * MS, 1_160 * MS]
        );
    }

    #[test]
    fn a_stall_holds_every_write_due_inside_it_to_its_end() {
        let mut c = config();
        // Stalled during [4 s, 5 s) of every 5 s.
        c.stall = Some(Stall {
            every_ns: 5_000 * MS,
            for_ns: 1_000 * MS,
        });
        let mut t = Vec::new();
        // Read at 3.95 s: the head leaves at once, the first token (due 4.05 s) at 5 s, and the
        // tokens due at 4.07, 4.09 and 4.11 s all at 5 s too.
        emission_times(&c, 0, 3_950 * MS, 4, &mut t);
        assert_eq!(
            t,
            vec![3_950 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS]
        );
        // Read at 4.5 s (inside the stall): everything waits for 5 s, the last token is due
        // after it (4.5 + 0.1 + 3 * 0.02 = 4.66 s: still inside, so 5 s).
        emission_times(&c, 0, 4_500 * MS, 4, &mut t);
        assert_eq!(t, vec![5_000 * MS; 5]);
        // Read at 4.85 s: tokens due at 4.95, 4.97, 4.99 s are held; 5.01 s is not.
        emission_times(&c, 0, 4_850 * MS, 4, &mut t);
        assert_eq!(
            t,
            vec![5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_010 * MS]
        );
    }

    fn words(json: &str) -> u64 {
        RequestBody::read(json.as_bytes()).unwrap().prompt_words
    }

    #[test]
    fn prompt_tokens_follow_the_stated_rule() {
        let chat = r#"{"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "one two three four"}
        ]}"#;
        // 6 words -> ceil(6 * 4 / 3) = 8 tokens.
        assert_eq!(prompt_tokens(words(chat)), 8);
        // 5 words -> ceil(20 / 3) = 7.
        assert_eq!(prompt_tokens(words(r#"{"prompt": "a b c d e"}"#)), 7);
        assert_eq!(prompt_tokens(words("{}")), 0);
    }

    #[test]
    fn a_smaller_max_tokens_lowers_the_output_and_a_larger_one_does_not_raise_it() {
        let c = config();
        let asked = |json: &str| RequestBody::read(json.as_bytes()).unwrap().max_tokens;
        assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 2}"#)), 2);
        assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 99}"#)), 4);
        assert_eq!(
            output_tokens(&c, asked(r#"{"max_completion_tokens": 3}"#)),
            3
        );
        assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 0}"#)), 4);
        assert_eq!(output_tokens(&c, asked("{}")), 4);
    }

    #[test]
    fn fault_names_round_trip_and_unknown_ones_are_refused() {
        for k in LlmFaultKind::ALL {
            assert_eq!(k.name().parse::<LlmFaultKind>().unwrap(), k);
        }
        let err = "slow".parse::<LlmFaultKind>().unwrap_err().to_string();
        assert!(err.contains("unknown LLM fault 'slow'"), "{err}");
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut c = config();
        c.output_tokens = 0;
        assert!(matches!(c.validate(), Err(LlmError::NoTokens)));
        let mut c = config();
        c.stall = Some(Stall {
            every_ns: 10,
            for_ns: 10,
        });
        assert!(matches!(c.validate(), Err(LlmError::InvalidStall)));
        let mut c = config();
        c.fault = Some(LlmFault {
            kind: LlmFaultKind::NoDone,
            every: 0,
        });
        assert!(matches!(c.validate(), Err(LlmError::FaultEveryZero)));
        let mut c = config();
        c.idle_timeout_ns = 0;
        assert!(matches!(c.validate(), Err(LlmError::ZeroTimeout)));
        let mut c = config();
        c.head_timeout_ns = 0;
        assert!(matches!(c.validate(), Err(LlmError::ZeroTimeout)));
        let mut c = config();
        c.max_connections = 0;
        assert!(matches!(c.validate(), Err(LlmError::NoConnections)));
    }
}
