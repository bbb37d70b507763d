//! What lies beneath the core for the byte-stream protocols (HTTP/1.1 and raw TCP): the
//! connection's byte stream, plain or TLS over it (as wrk's `struct sock` carries both), and the
//! [`Framing`] trait that says where one response ends. A protocol over a byte stream is one
//! `Framing` implementation (`engine/http1.rs`, `engine/tcp.rs`); the driver
//! (`engine/mio_driver.rs`) connects, writes the prepared requests, feeds the bytes it reads to
//! the framing and reports completions and failures to the core.

use crate::http1::{ParseError, Progress};
use crate::shared::Prepared;
use mio::net::TcpStream;
use std::io::{self, Read, Write};

/// How responses are delimited on a byte stream.
pub trait Framing {
    /// Before the first byte of the response to `request` is fed.
    fn start(&mut self, request: &Prepared);
    /// Consumes what it can of `input` (`full`: the read buffer is full, so a head that does
    /// not fit in it never will).
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError>;
    /// The connection closed: the status of a response that the close completes, if any.
    fn finish_at_eof(&mut self) -> Option<u16>;
    /// Forgets a partial response (the connection is gone).
    fn reset(&mut self);
    /// Checks responses against `table` (one entry per request); protocols without response
    /// checks ignore it.
    fn set_checks(&mut self, _table: std::sync::Arc<[crate::workload::check::ResponseChecks]>) {}
    /// The response about to be fed answers prepared request `request`: its checks apply.
    fn select_checks(&mut self, _request: usize) {}
    /// The check the last completed response failed besides its status (`None`: passed, or
    /// the protocol has none).
    fn failed_check(&self) -> Option<crate::engine::examples::ContentCheck> {
        None
    }
    /// Keeps the body's first bytes of responses whose status request `i` does not accept
    /// (`accept[i]`) or that have checks, for the report's first failed responses; protocols
    /// without bodies ignore it.
    fn keep_excerpts(&mut self, _accept: std::sync::Arc<[crate::status::StatusSet]>) {}
    /// The first bytes of the last completed response's body, when kept.
    fn excerpt(&self) -> Option<&[u8]> {
        None
    }
}

pub use super::tls_session::Handshake;
use super::tls_session::TlsSession;

/// The byte stream of one connection: plain TCP or TLS over it (`tls_session.rs`: records in
/// buffers the session owns, so that requests over TLS allocate nothing).
pub enum Sock {
    Plain(TcpStream),
    Tls(TcpStream, Box<TlsSession>),
}

/// Where a non-blocking connect stands once its socket has turned writable.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ConnectState {
    InProgress,
    Connected,
    Failed,
}

/// Puts a TLS session for `host` over the connected plain socket in `slot`, for the handshake
/// to follow; false when no session can be made (the connect then counts as failed).
pub fn start_tls(
    slot: &mut Option<Sock>,
    tls: &std::sync::Arc<rustls::ClientConfig>,
    host: &str,
) -> bool {
    let Ok(name) = crate::tls::server_name(host) else {
        return false;
    };
    let Some(Sock::Plain(stream)) = slot.take() else {
        return false;
    };
    match TlsSession::new(tls.clone(), name) {
        Ok(session) => {
            *slot = Some(Sock::Tls(stream, Box::new(session)));
            true
        }
        Err(_) => {
            *slot = Some(Sock::Plain(stream));
            false
        }
    }
}

impl Sock {
    /// Where this socket's non-blocking connect stands; once connected, Nagle is turned off.
    pub fn connect_state(&mut self) -> ConnectState {
        let stream = self.socket();
        match stream.take_error() {
            Ok(None) => {}
            _ => return ConnectState::Failed,
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return ConnectState::InProgress,
            Err(_) => return ConnectState::Failed,
        }
        let _ = stream.set_nodelay(true);
        ConnectState::Connected
    }

    pub fn socket(&mut self) -> &mut TcpStream {
        match self {
            Sock::Plain(s) | Sock::Tls(s, _) => s,
        }
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Plain(s) => s.write(data),
            // Sealed into the session's buffer; `flush` sends it.
            Sock::Tls(s, t) => t.write(s, data),
        }
    }

    /// Sends sealed TLS records; `WouldBlock` means wait for writability.
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Sock::Plain(_) => Ok(()),
            Sock::Tls(s, t) => t.flush(s),
        }
    }

    /// Like `Read::read` on the plaintext: `Ok(0)` is end of stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Plain(s) => s.read(buf),
            Sock::Tls(s, t) => t.read(s, buf),
        }
    }

    /// The protocol the server chose by ALPN (TLS, once the handshake is done).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            Sock::Plain(_) => None,
            Sock::Tls(_, t) => t.alpn_protocol(),
        }
    }

    /// Drives a TLS handshake as far as the socket allows.
    pub fn handshake(&mut self) -> Handshake {
        match self {
            Sock::Plain(_) => Handshake::Done,
            Sock::Tls(s, t) => t.handshake(s),
        }
    }
}
