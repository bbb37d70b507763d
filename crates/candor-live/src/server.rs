//! The HTTP side of the live view: one event-driven thread (mio) reads every client's request
//! head and writes the page, `/metrics` and error answers without blocking, each connection
//! bounded by a deadline and their number by [`MAX_CONNECTIONS`] (beyond it the oldest idle one
//! is dropped), so that hundreds of idle or slow clients cannot shut a real scraper out. Only
//! `/events` streams get a thread of their own (at most [`MAX_CLIENTS`]; more are answered 503).
//! A client that hangs, disconnects or sends garbage costs a slot for seconds at worst and never
//! touches the run.

use crate::hub::{Event, Hub};
use crate::protobuf::{negotiate, Exposition};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Event streams served at once (a thread each); more are answered 503.
pub const MAX_CLIENTS: usize = 8;
/// Connections being read or answered at once; a new one beyond this drops the oldest that
/// has not sent a whole request head yet (or, if none, the oldest).
pub const MAX_CONNECTIONS: usize = 512;
/// A request head larger than this is refused (the page, events and metrics need a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request head, and then to take the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle event streams get a comment this often, which also finds disconnected clients.
const KEEPALIVE: Duration = Duration::from_secs(10);
/// The longest the loop waits without looking at the stop flag and the deadlines.
const TICK: Duration = Duration::from_millis(250);
const LISTENER: Token = Token(usize::MAX);

/// Decrements the event-client count however the client's thread ends.
struct ClientSlot(Arc<Hub>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One connection of the loop: reading its head, then writing its answer.
struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    /// The answer, once the head is in; `sent` of it is written.
    out: Option<Vec<u8>>,
    sent: usize,
    /// Closed when this passes (reset when the answer starts).
    deadline: Instant,
    accepted: Instant,
}

enum Next {
    Keep,
    Close,
    /// An event stream: handed to a thread of its own.
    Stream,
}

pub(crate) fn accept_loop(listener: TcpListener, shared: Arc<Hub>) {
    let Ok(mut poll) = Poll::new() else {
        return;
    };
    if listener.set_nonblocking(true).is_err()
        || poll
            .registry()
            .register(
                &mut SourceFd(&listener.as_raw_fd()),
                LISTENER,
                Interest::READABLE,
            )
            .is_err()
    {
        return;
    }
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = Events::with_capacity(256);
    while !shared.stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let wait = conns
            .iter()
            .flatten()
            .map(|c| c.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(TICK)
            .min(TICK);
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != ErrorKind::Interrupted {
                return;
            }
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                accept_all(&listener, &poll, &mut conns, &shared);
                continue;
            }
            let k = ev.token().0;
            let Some(conn) = conns.get_mut(k).and_then(Option::as_mut) else {
                continue;
            };
            match drive(conn, &shared) {
                Next::Keep => {}
                Next::Close => drop_conn(&poll, &mut conns, k),
                Next::Stream => {
                    let c = conns[k].take().expect("present");
                    let _ = poll
                        .registry()
                        .deregister(&mut SourceFd(&c.stream.as_raw_fd()));
                    stream_events(c.stream, &shared);
                }
            }
        }
        let now = Instant::now();
        for k in 0..conns.len() {
            if conns[k].as_ref().is_some_and(|c| now >= c.deadline) {
                drop_conn(&poll, &mut conns, k);
            }
        }
    }
}

fn drop_conn(poll: &Poll, conns: &mut [Option<Conn>], k: usize) {
    if let Some(c) = conns[k].take() {
        let _ = poll
            .registry()
            .deregister(&mut SourceFd(&c.stream.as_raw_fd()));
    }
}

/// Takes every pending connection; at the limit, the oldest idle one makes room.
fn accept_all(listener: &TcpListener, poll: &Poll, conns: &mut Vec<Option<Conn>>, shared: &Hub) {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // Out of descriptors and the like: the next readiness tries again.
            Err(_) => return,
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let _ = stream.set_nodelay(true);
        let live = conns.iter().flatten().count();
        if live >= MAX_CONNECTIONS {
            let oldest = |idle_only: bool| {
                conns
                    .iter()
                    .enumerate()
                    .filter_map(|(k, c)| c.as_ref().map(|c| (k, c)))
                    .filter(|(_, c)| !idle_only || c.out.is_none())
                    .min_by_key(|(_, c)| c.accepted)
                    .map(|(k, _)| k)
            };
            if let Some(k) = oldest(true).or_else(|| oldest(false)) {
                drop_conn(poll, conns, k);
            }
        }
        let k = match conns.iter().position(Option::is_none) {
            Some(k) => k,
            None => {
                conns.push(None);
                conns.len() - 1
            }
        };
        if poll
            .registry()
            .register(
                &mut SourceFd(&stream.as_raw_fd()),
                Token(k),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            continue;
        }
        let now = Instant::now();
        conns[k] = Some(Conn {
            stream,
            head: Vec::new(),
            out: None,
            sent: 0,
            deadline: now + IO_TIMEOUT,
            accepted: now,
        });
        // What the client sent with its connect is read at its first readiness event.
    }
}

/// Reads what the client sent and writes what it is owed, as far as the socket allows.
fn drive(c: &mut Conn, shared: &Hub) -> Next {
    if c.out.is_none() {
        let mut buf = [0u8; 2048];
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => return Next::Close,
                Ok(n) => {
                    let room = MAX_HEAD.saturating_sub(c.head.len());
                    c.head.extend_from_slice(&buf[..n.min(room)]);
                    if c.head.windows(4).any(|w| w == b"\r\n\r\n") || c.head.len() >= MAX_HEAD {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Keep,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Next::Close,
            }
        }
        match answer(&c.head, shared) {
            Some(out) => {
                c.out = Some(out);
                c.deadline = Instant::now() + IO_TIMEOUT;
            }
            None => return Next::Stream,
        }
    }
    let out = c.out.as_ref().expect("set above");
    while c.sent < out.len() {
        match c.stream.write(&out[c.sent..]) {
            Ok(0) => return Next::Close,
            Ok(n) => c.sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Keep,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Next::Close,
        }
    }
    // Closing a socket with unread input resets it, and the client might lose the answer:
    // whatever else it sent is read away first.
    let _ = c.stream.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 1024];
    while matches!(c.stream.read(&mut sink), Ok(n) if n > 0) {}
    Next::Close
}

const BUSY_BODY: &str = "too many live clients; try again shortly\n";

/// The whole answer to request head `head`, or `None` for an event stream (served by a thread).
fn answer(head: &[u8], shared: &Hub) -> Option<Vec<u8>> {
    let plain = |status: Status, body: &str| {
        let mut out = response_head(status, "text/plain; charset=utf-8", Some(body.len()));
        out.extend_from_slice(body.as_bytes());
        out
    };
    let (r, head_only) = match route(head) {
        Ok(r) => r,
        Err(status) => return Some(plain(status, &format!("{}\n", status.line()))),
    };
    let (content_type, body): (&str, Vec<u8>) = match r {
        Route::Page => ("text/html; charset=utf-8", shared.page.as_bytes().to_vec()),
        Route::Metrics(Exposition::Text) => (
            "text/plain; version=0.0.4; charset=utf-8",
            shared.lock().metrics.as_bytes().to_vec(),
        ),
        Route::Metrics(Exposition::Protobuf) => (
            crate::protobuf::CONTENT_TYPE,
            shared.lock().metrics_protobuf.to_vec(),
        ),
        Route::Events if head_only => {
            return Some(response_head(Status::Ok, "text/event-stream", None))
        }
        Route::Events => {
            if shared.clients.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
                shared.clients.fetch_sub(1, Ordering::SeqCst);
                return Some(plain(Status::Busy, BUSY_BODY));
            }
            return None;
        }
    };
    let mut out = response_head(Status::Ok, content_type, Some(body.len()));
    if !head_only {
        out.extend_from_slice(&body);
    }
    Some(out)
}

/// Serves an event stream on a thread of its own (its client slot was taken by [`answer`]).
fn stream_events(stream: TcpStream, shared: &Arc<Hub>) {
    let slot = ClientSlot(shared.clone());
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("candor-live-events".into())
        .spawn(move || {
            let _slot = slot;
            let mut stream = stream;
            if stream.set_nonblocking(false).is_err()
                || stream.set_write_timeout(Some(IO_TIMEOUT)).is_err()
            {
                return;
            }
            if stream
                .write_all(&response_head(Status::Ok, "text/event-stream", None))
                .is_ok()
            {
                let _ = events(stream, &s);
            }
        });
    // The slot was moved into the closure; if the thread could not start, it was dropped with
    // it and the count is already restored.
    drop(spawned);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    HeadTooLarge,
    Busy,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::HeadTooLarge => "431 Request Header Fields Too Large",
            Status::Busy => "503 Service Unavailable",
        }
    }
}

pub(crate) fn response_head(status: Status, content_type: &str, length: Option<usize>) -> Vec<u8> {
    let mut h = format!(
        "HTTP/1.1 {}\r\nContent-Type: {content_type}\r\nCache-Control: no-store\r\nConnection: close\r\n",
        status.line()
    );
    if let Some(n) = length {
        h.push_str(&format!("Content-Length: {n}\r\n"));
    }
    if status == Status::Busy {
        h.push_str("Retry-After: 5\r\n");
    }
    if status == Status::MethodNotAllowed {
        h.push_str("Allow: GET, HEAD\r\n");
    }
    h.push_str("\r\n");
    h.into_bytes()
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Page,
    /// In the exposition the scraper's `Accept` header asks for.
    Metrics(Exposition),
    Events,
}

/// The decision for one request head: a route (and whether only the head is wanted), or an
/// error status. Pure, so every case is tested without sockets.
pub(crate) fn route(head: &[u8]) -> Result<(Route, bool), Status> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(if head.len() >= MAX_HEAD {
                Status::HeadTooLarge
            } else {
                Status::BadRequest
            })
        }
        Err(httparse::Error::TooManyHeaders) => return Err(Status::HeadTooLarge),
        Err(_) => return Err(Status::BadRequest),
    }
    let head_only = match req.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => return Err(Status::MethodNotAllowed),
    };
    let path = req.path.unwrap_or("");
    let path = path.split(['?', '#']).next().unwrap_or("");
    let r = match path {
        "/" | "/index.html" => Route::Page,
        "/metrics" => Route::Metrics(negotiate(
            req.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("accept"))
                .and_then(|h| std::str::from_utf8(h.value).ok()),
        )),
        "/events" => Route::Events,
        _ => return Err(Status::NotFound),
    };
    Ok((r, head_only))
}

/// One event in the stream's wire format.
pub(crate) fn sse_frame(seq: u64, json: &str) -> String {
    format!("id: {seq}\ndata: {json}\n\n")
}

/// Streams every kept event, then each new one as it comes, until the run's closing event has
/// been sent or the server stops.
fn events(mut stream: TcpStream, shared: &Hub) -> std::io::Result<()> {
    // Reconnect soon after a dropped connection; the page then receives the kept events again.
    stream.write_all(b"retry: 2000\n\n")?;
    let mut next = 0u64;
    loop {
        let mut batch: Vec<(u64, Arc<str>, bool)> = Vec::new();
        {
            let mut inner = shared.lock();
            loop {
                batch.extend(
                    inner
                        .events
                        .iter()
                        .filter(|e: &&Event| e.seq >= next)
                        .map(|e| (e.seq, e.json.clone(), e.done)),
                );
                if !batch.is_empty() || shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let (guard, timeout) = shared
                    .changed
                    .wait_timeout(inner, KEEPALIVE)
                    .unwrap_or_else(|e| e.into_inner());
                inner = guard;
                if timeout.timed_out() {
                    break;
                }
            }
        }
        if batch.is_empty() {
            if shared.stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            stream.write_all(b": keepalive\n\n")?;
            continue;
        }
        let mut out = String::new();
        let mut done = false;
        for (seq, json, is_done) in &batch {
            out.push_str(&sse_frame(*seq, json));
            next = seq + 1;
            done |= *is_done;
        }
        stream.write_all(out.as_bytes())?;
        if done {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_refusals() {
        assert_eq!(
            route(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Ok((Route::Page, false))
        );
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\n\r\n"),
            Ok((Route::Metrics(Exposition::Text), false))
        );
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nACCEPT: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n"),
            Ok((Route::Metrics(Exposition::Protobuf), false))
        );
        assert_eq!(
            route(b"HEAD /events?x=1 HTTP/1.0\r\n\r\n"),
            Ok((Route::Events, true))
        );
        assert_eq!(route(b"GET /nope HTTP/1.1\r\n\r\n"), Err(Status::NotFound));
        assert_eq!(
            route(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Err(Status::MethodNotAllowed)
        );
        assert_eq!(route(b"\x00\x01garbage\r\n\r\n"), Err(Status::BadRequest));
        assert_eq!(route(b"GET / HTTP/1.1\r\n"), Err(Status::BadRequest));
        let big = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &[b'a'; MAX_HEAD]].concat();
        assert_eq!(route(&big), Err(Status::HeadTooLarge));
    }

    #[test]
    fn sse_frames_are_one_data_line_each() {
        let f = sse_frame(7, r#"{"done":true}"#);
        assert_eq!(f, "id: 7\ndata: {\"done\":true}\n\n");
        // serde_json never emits a raw newline, so a whole event is one data line.
        let json = serde_json::json!({"s": "a\nb"}).to_string();
        assert_eq!(sse_frame(0, &json).matches('\n').count(), 3);
    }

    #[test]
    fn busy_answer_is_a_complete_503() {
        let h = String::from_utf8(response_head(Status::Busy, "text/plain", Some(3))).unwrap();
        assert!(h.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(h.contains("Retry-After: 5\r\n"));
        assert!(h.ends_with("Content-Length: 3\r\nRetry-After: 5\r\n\r\n"));
    }
}
