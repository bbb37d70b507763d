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

/// Where a TLS handshake stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Handshake {
    Done,
    /// Waiting for the server's next flight.
    Waiting,
    Failed,
}

/// The byte stream of one connection: plain TCP or TLS over it.
pub enum Sock {
    Plain(TcpStream),
    Tls(TcpStream, Box<rustls::ClientConnection>),
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
    match rustls::ClientConnection::new(tls.clone(), name) {
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
            // Plaintext is buffered by rustls (and encrypted into records); `flush` sends it.
            Sock::Tls(_, c) => c.writer().write(data),
        }
    }

    /// Sends buffered TLS records; `WouldBlock` means wait for writability.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Sock::Tls(s, c) = self {
            while c.wants_write() {
                c.write_tls(s)?;
            }
        }
        Ok(())
    }

    /// Like `Read::read` on the plaintext: `Ok(0)` is end of stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Plain(s) => s.read(buf),
            Sock::Tls(s, c) => loop {
                match c.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // Closed without close_notify: for a client that is simply the end.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
                if c.read_tls(s)? == 0 {
                    return Ok(0);
                }
                c.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            },
        }
    }

    /// Drives a TLS handshake as far as the socket allows.
    pub fn handshake(&mut self) -> Handshake {
        let Sock::Tls(stream, session) = self else {
            return Handshake::Done;
        };
        loop {
            if session.wants_write() {
                match session.write_tls(stream) {
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => return Handshake::Failed,
                }
            }
            if !session.is_handshaking() {
                return Handshake::Done;
            }
            match session.read_tls(stream) {
                Ok(0) => return Handshake::Failed,
                Ok(_) => {
                    if session.process_new_packets().is_err() {
                        // Flush the alert so the server learns why, then give up.
                        let _ = session.write_tls(stream);
                        return Handshake::Failed;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::Waiting,
                Err(_) => return Handshake::Failed,
            }
        }
    }
}
