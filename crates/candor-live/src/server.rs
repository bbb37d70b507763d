//! The HTTP side of the live view: one thread accepting, one short-lived thread per client (a
//! handful at most), every socket bounded by timeouts so that a client that hangs, disconnects or
//! sends garbage costs a thread for seconds at worst and never touches the run.

use crate::{Event, Shared};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Concurrent clients served; more are answered 503 at once.
pub const MAX_CLIENTS: usize = 8;
/// A request head larger than this is refused (the page, events and metrics need a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request, or to take a write.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle event streams get a comment this often, which also finds disconnected clients.
const KEEPALIVE: Duration = Duration::from_secs(10);

/// Decrements the client count however the client's thread ends.
struct ClientSlot(Arc<Shared>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for conn in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = conn else {
            // Out of descriptors and the like: back off instead of spinning.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if shared.clients.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
            shared.clients.fetch_sub(1, Ordering::SeqCst);
            refuse(stream, &shared);
            continue;
        }
        let slot = ClientSlot(shared.clone());
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("candor-live-client".into())
            .spawn(move || {
                let _slot = slot;
                let _ = serve(stream, &s);
            });
        // The slot was moved into the closure; if the thread could not start, it was dropped
        // with it and the count is already restored.
        drop(spawned);
    }
}

const BUSY_BODY: &str = "too many live clients; try again shortly\n";

/// Answers 503 on a short-lived thread of its own (at most [`MAX_CLIENTS`] at once; beyond that
/// the connection is just closed). The request is read and discarded after the answer, because
/// closing a socket with unread input resets it and the client would never see the answer.
fn refuse(mut stream: TcpStream, shared: &Arc<Shared>) {
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("candor-live-busy".into())
        .spawn(move || {
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = stream.write_all(&response_head(
                Status::Busy,
                "text/plain; charset=utf-8",
                Some(BUSY_BODY.len()),
            ));
            let _ = stream.write_all(BUSY_BODY.as_bytes());
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let mut sink = [0u8; 1024];
            for _ in 0..16 {
                match stream.read(&mut sink) {
                    Ok(n) if n > 0 => continue,
                    _ => break,
                }
            }
            s.refusing.fetch_sub(1, Ordering::SeqCst);
        });
    if spawned.is_err() {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
    }
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
    Metrics,
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
        "/metrics" => Route::Metrics,
        "/events" => Route::Events,
        _ => return Err(Status::NotFound),
    };
    Ok((r, head_only))
}

/// Reads up to the end of the request head (or a full buffer, or a timeout).
fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut len = 0;
    while len < MAX_HEAD {
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            break;
        }
        len += n;
        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    buf.truncate(len);
    Ok(buf)
}

fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let _ = stream.set_nodelay(true);
    let head = read_head(&mut stream)?;
    if head.is_empty() {
        return Ok(());
    }
    let (r, head_only) = match route(&head) {
        Ok(r) => r,
        Err(status) => {
            let body = format!("{}\n", status.line());
            stream.write_all(&response_head(
                status,
                "text/plain; charset=utf-8",
                Some(body.len()),
            ))?;
            return stream.write_all(body.as_bytes());
        }
    };
    match r {
        Route::Page => {
            let body = shared.page.as_bytes();
            stream.write_all(&response_head(
                Status::Ok,
                "text/html; charset=utf-8",
                Some(body.len()),
            ))?;
            if !head_only {
                stream.write_all(body)?;
            }
            Ok(())
        }
        Route::Metrics => {
            let body = shared.lock().metrics.clone();
            stream.write_all(&response_head(
                Status::Ok,
                "text/plain; version=0.0.4; charset=utf-8",
                Some(body.len()),
            ))?;
            if !head_only {
                stream.write_all(body.as_bytes())?;
            }
            Ok(())
        }
        Route::Events => {
            stream.write_all(&response_head(Status::Ok, "text/event-stream", None))?;
            if head_only {
                return Ok(());
            }
            events(stream, shared)
        }
    }
}

/// One event in the stream's wire format.
pub(crate) fn sse_frame(seq: u64, json: &str) -> String {
    format!("id: {seq}\ndata: {json}\n\n")
}

/// Streams every kept event, then each new one as it comes, until the run's closing event has
/// been sent or the server stops.
fn events(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
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
            Ok((Route::Metrics, false))
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
