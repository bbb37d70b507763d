//! A connection carried in datagrams: a UDP socket connected to the target, for a protocol
//! that brings its own reliability, ordering and security (QUIC). The driver treats it as it
//! treats a byte stream, with two differences that are the datagrams' own: a read returns one
//! datagram whole, and the connection's out buffer holds whole datagrams, each behind a 2-byte
//! big-endian length ([`begin`], [`end`]), so that one write sends one datagram and a write the
//! socket refuses (`WouldBlock`) keeps it whole for later.

use mio::net::UdpSocket;
use std::io;
use std::net::SocketAddr;

/// The length in front of each datagram in an out buffer.
pub const LENGTH_BYTES: usize = 2;

/// Opens a non-blocking UDP socket connected to `addr` (so the kernel drops datagrams from
/// anyone else, and an ICMP refusal comes back as `ConnectionRefused` on the next read or write).
pub fn connect(addr: SocketAddr) -> io::Result<UdpSocket> {
    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local)?;
    socket.connect(addr)?;
    Ok(socket)
}

/// Starts a datagram at the end of `out`: its length's place; the datagram's bytes follow, then
/// [`end`] (or [`cancel`] when none came).
#[inline]
pub fn begin(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; LENGTH_BYTES]);
    at
}

/// Ends the datagram [`begin`] started at `at`: everything after its length is the datagram.
/// A datagram over 65,535 bytes cannot be one (UDP's own limit): it is dropped, false.
#[inline]
pub fn end(out: &mut Vec<u8>, at: usize) -> bool {
    let len = out.len() - at - LENGTH_BYTES;
    match u16::try_from(len) {
        Ok(n) => {
            out[at..at + LENGTH_BYTES].copy_from_slice(&n.to_be_bytes());
            true
        }
        Err(_) => {
            out.truncate(at);
            false
        }
    }
}

/// Forgets the datagram [`begin`] started at `at`.
#[inline]
pub fn cancel(out: &mut Vec<u8>, at: usize) {
    out.truncate(at);
}

/// Sends the first datagram of `pending` (an out buffer's unsent part); the bytes it took, its
/// length included, so that the driver's write loop moves on to the next.
pub fn send_next(socket: &UdpSocket, pending: &[u8]) -> io::Result<usize> {
    let len = match pending {
        [a, b, ..] => u16::from_be_bytes([*a, *b]) as usize,
        _ => return Err(io::Error::from(io::ErrorKind::InvalidData)),
    };
    let Some(datagram) = pending.get(LENGTH_BYTES..LENGTH_BYTES + len) else {
        return Err(io::Error::from(io::ErrorKind::InvalidData));
    };
    socket.send(datagram)?;
    Ok(LENGTH_BYTES + len)
}

/// Reads one datagram into `buf`. An empty datagram is no end of stream (there is none on
/// UDP): it is skipped, so that `Ok(0)` never comes from here.
pub fn recv_one(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match socket.recv(buf)? {
            0 if !buf.is_empty() => continue,
            n => return Ok(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_buffer_holds_whole_datagrams_sent_one_per_write() {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let socket = connect(peer.local_addr().unwrap()).unwrap();
        let mut out = Vec::new();
        for d in [&b"first"[..], b"second datagram"] {
            let at = begin(&mut out);
            out.extend_from_slice(d);
            assert!(end(&mut out, at));
        }
        let at = begin(&mut out);
        cancel(&mut out, at);
        assert_eq!(out.len(), 2 * LENGTH_BYTES + 5 + 15);
        let first = send_next(&socket, &out).unwrap();
        assert_eq!(first, LENGTH_BYTES + 5);
        assert_eq!(
            send_next(&socket, &out[first..]).unwrap(),
            LENGTH_BYTES + 15
        );
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 64];
        let n = peer.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"first");
        let n = peer.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"second datagram");
    }

    #[test]
    fn a_datagram_too_long_for_udp_is_dropped_and_a_torn_buffer_refused() {
        let mut out = vec![9u8];
        let at = begin(&mut out);
        out.resize(at + LENGTH_BYTES + 70_000, 0);
        assert!(!end(&mut out, at));
        assert_eq!(out, [9u8]);
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let socket = connect(peer.local_addr().unwrap()).unwrap();
        assert!(send_next(&socket, &[0, 5, 1]).is_err());
        assert!(send_next(&socket, &[0]).is_err());
    }
}
