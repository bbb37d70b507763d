//! A request as read from its connection: every read by a deadline, the head within the head
//! timeout, the body at the least rate, parsed as it arrives.

use super::body::RequestBody;
use super::config::{LlmConfig, MIN_BODY_RATE};
use super::prefix::BlockHashes;
use candor_core::now_ns;
use std::io::{self, BufRead, BufReader, Read};
use std::net::TcpStream;
use std::time::Duration;

/// The largest request body read (a prompt file's longest line is far below it).
pub(super) const MAX_BODY: usize = 16 << 20;

/// The largest request head read.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// The connection's socket as the request reader sees it: every read ends by a deadline, so
/// that neither waiting for a request nor reading one can last for ever.
pub(super) struct Timed {
    pub(super) stream: TcpStream,
    /// The deadline (monotonic ns) of every read until changed.
    pub(super) deadline_ns: u64,
    /// Each read also ends this long after it began, when `Some`.
    pub(super) per_read_ns: Option<u64>,
}

impl Timed {
    pub(super) fn until(&mut self, deadline_ns: u64) {
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
pub(super) struct Head {
    pub(super) path: String,
    pub(super) length: usize,
    pub(super) keep_alive: bool,
}

/// Waits up to the idle timeout for a request to begin (`None` at a clean end of stream or
/// when none did), then reads its head, which must end within the head timeout (`TimedOut`
/// when it does not).
pub(super) fn read_head(
    reader: &mut BufReader<Timed>,
    config: &LlmConfig,
) -> io::Result<Option<Head>> {
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
pub(super) enum Body {
    Parsed(RequestBody),
    NotJson,
    /// Read past, unparsed (the request is refused for another reason).
    Skipped,
}

/// How long a body of `length` bytes may take in total: the head timeout plus its length at
/// [`MIN_BODY_RATE`].
pub(super) fn body_allowance_ns(config: &LlmConfig, length: usize) -> u64 {
    let at_rate = (length as u128 * 1_000_000_000 / u128::from(MIN_BODY_RATE)) as u64;
    config.head_timeout_ns.saturating_add(at_rate)
}

/// Reads the `length` bytes of a body, each read within the idle timeout and all by the body's
/// total deadline ([`body_allowance_ns`] from now), parsing them (as they arrive: the body is
/// never held whole) when `parse`, the prompt's words fed to `blocks` when given; an `Err` when
/// the connection cannot go on (`TimedOut` when either limit passed).
pub(super) fn read_body(
    reader: &mut BufReader<Timed>,
    config: &LlmConfig,
    length: usize,
    parse: bool,
    blocks: Option<&mut BlockHashes>,
) -> io::Result<Body> {
    let deadline = now_ns().saturating_add(body_allowance_ns(config, length));
    reader
        .get_mut()
        .each_read_within_until(config.idle_timeout_ns, deadline);
    let mut rest = (&mut *reader).take(length as u64);
    let body = if parse {
        match RequestBody::read_hashing(&mut rest, blocks) {
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
