//! What lies beneath every protocol: the connection's byte stream, plain or TLS over it (as
//! wrk's `struct sock` carries both), or a connected datagram socket (`datagram.rs`, for a
//! protocol that brings its own reliability and security). `tls.rs` makes the client
//! configuration (and the blocking handshake of the probe); `tls_session.rs` runs rustls's
//! handshake, then keeps the records in the session's own buffers, protected by `tls_record.rs`.

pub mod datagram;
pub mod tls;
pub mod tls_record;
pub mod tls_session;

use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
pub use tls_session::Handshake;
use tls_session::TlsSession;

/// The byte stream of one connection: plain TCP or TLS over it (`tls_session.rs`: records in
/// buffers the session owns, so that requests over TLS allocate nothing).
pub enum Sock {
    Plain(TcpStream),
    Tls(TcpStream, Box<TlsSession>),
    /// A UDP socket connected to the target: each write sends the out buffer's next datagram, or a
    /// run of equal-sized ones in one GSO send (`datagram.rs`), each read returns one.
    Datagram(datagram::Datagrams),
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
    let Ok(name) = crate::transport::tls::server_name(host) else {
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
        let stream = match self {
            Sock::Plain(s) | Sock::Tls(s, _) => s,
            // A datagram socket has no connect to wait for.
            Sock::Datagram(_) => return ConnectState::Connected,
        };
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

    /// The socket, as the poll registers it.
    pub fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Sock::Plain(s) | Sock::Tls(s, _) => s,
            Sock::Datagram(s) => &mut s.socket,
        }
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Plain(s) => s.write(data),
            // Sealed into the session's buffer; `flush` sends it.
            Sock::Tls(s, t) => t.write(s, data),
            Sock::Datagram(s) => s.send_next(data),
        }
    }

    /// Writes `data` as far as the socket takes it at once, and flushes: for what is said last
    /// on a connection being given up, so nothing waits for the rest (or reports its failure).
    pub fn write_now(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match self.write(data) {
                Ok(n) if n > 0 => data = &data[n..],
                _ => break,
            }
        }
        let _ = self.flush();
    }

    /// Sends sealed TLS records; `WouldBlock` means wait for writability.
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Sock::Plain(_) | Sock::Datagram(_) => Ok(()),
            Sock::Tls(s, t) => t.flush(s),
        }
    }

    /// Like `Read::read` on the plaintext: `Ok(0)` is end of stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Plain(s) => s.read(buf),
            Sock::Tls(s, t) => t.read(s, buf),
            Sock::Datagram(s) => s.recv_one(buf),
        }
    }

    /// The protocol the server chose by ALPN (TLS, once the handshake is done).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            Sock::Plain(_) | Sock::Datagram(_) => None,
            Sock::Tls(_, t) => t.alpn_protocol(),
        }
    }

    /// Drives a TLS handshake as far as the socket allows.
    pub fn handshake(&mut self) -> Handshake {
        match self {
            Sock::Plain(_) | Sock::Datagram(_) => Handshake::Done,
            Sock::Tls(s, t) => t.handshake(s),
        }
    }
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Sock::Plain(s) | Sock::Tls(s, _) => s.as_raw_fd(),
            Sock::Datagram(s) => s.socket.as_raw_fd(),
        }
    }
}
