//! A connection carried in datagrams: a UDP socket connected to the target, for a protocol
//! that brings its own reliability, ordering and security (QUIC). The driver treats it as it
//! treats a byte stream, with two differences that are the datagrams' own: a read returns one
//! datagram whole, and the connection's out buffer holds whole datagrams, each behind a 2-byte
//! big-endian length ([`begin`], [`end`]), so that a write sends whole datagrams and a write the
//! socket refuses (`WouldBlock`) keeps them whole for later. A write sends a run of datagrams of
//! one size (the last may be shorter) in one `sendmsg` with UDP generic segmentation offload
//! ([`batch_len`]), where the kernel takes it, through quinn-udp, the maintained crate that
//! probes for it and turns it off where the kernel refuses it.

use mio::net::UdpSocket;
use quinn_udp::{Transmit, UdpSockRef, UdpSocketState};
use std::io;
use std::net::SocketAddr;

/// The most bytes one GSO send carries: under UDP's 65,535 with room for the headers.
const BATCH_BYTES: usize = 60_000;

/// A connected UDP socket and what sends batches on it.
pub struct Datagrams {
    pub socket: UdpSocket,
    peer: SocketAddr,
    /// `None` where quinn-udp could not set the socket up: one datagram per send.
    gso: Option<UdpSocketState>,
    /// A batch's datagrams side by side, as GSO takes them (its capacity is kept).
    batch: Vec<u8>,
}

/// The length in front of each datagram in an out buffer.
pub const LENGTH_BYTES: usize = 2;

/// Opens a non-blocking UDP socket connected to `addr` (so the kernel drops datagrams from
/// anyone else, and an ICMP refusal comes back as `ConnectionRefused` on the next read or write).
pub fn connect(addr: SocketAddr) -> io::Result<Datagrams> {
    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local)?;
    socket.connect(addr)?;
    let gso = UdpSocketState::new(UdpSockRef::from(&socket)).ok();
    if gso.is_some() {
        no_gro(&socket);
    }
    Ok(Datagrams {
        socket,
        peer: addr,
        gso,
        batch: Vec::new(),
    })
}

/// quinn-udp turns receive offload (UDP_GRO) on, under which the kernel may hand several
/// datagrams to one read; a read here returns one datagram, so it is turned off again.
#[cfg(target_os = "linux")]
fn no_gro(socket: &UdpSocket) {
    use std::os::fd::AsRawFd;
    // linux/udp.h; the libc crate names it for some Linux targets only.
    const UDP_GRO: libc::c_int = 104;
    let off: libc::c_int = 0;
    // SAFETY: a valid descriptor, and a pointer to an int of the length given.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            UDP_GRO,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn no_gro(_: &UdpSocket) {}

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

/// The first datagram of `pending` (an out buffer's unsent part), length included.
fn first(pending: &[u8]) -> io::Result<(&[u8], usize)> {
    let len = match pending {
        [a, b, ..] => u16::from_be_bytes([*a, *b]) as usize,
        _ => return Err(io::Error::from(io::ErrorKind::InvalidData)),
    };
    match pending.get(LENGTH_BYTES..LENGTH_BYTES + len) {
        Some(datagram) => Ok((datagram, LENGTH_BYTES + len)),
        None => Err(io::Error::from(io::ErrorKind::InvalidData)),
    }
}

/// How many of `pending`'s first datagrams go in one GSO send of at most `max` segments: a run
/// of one size, the last of it possibly shorter (the kernel cuts the batch at the first one's
/// size), within `BATCH_BYTES`; and the bytes they take in `pending`, lengths included.
pub fn batch_len(pending: &[u8], max: usize) -> io::Result<(usize, usize)> {
    let (head, mut taken) = first(pending)?;
    let size = head.len();
    let (mut count, mut bytes) = (1, size);
    while count < max && size > 0 {
        let Ok((next, took)) = first(&pending[taken..]) else {
            break;
        };
        if next.is_empty() || next.len() > size || bytes + next.len() > BATCH_BYTES {
            break;
        }
        count += 1;
        bytes += next.len();
        taken += took;
        if next.len() < size {
            break;
        }
    }
    Ok((count, taken))
}

impl Datagrams {
    /// Sends the first datagrams of `pending` (an out buffer's unsent part), as many as one
    /// send carries; the bytes they took, lengths included, so that the driver's write loop
    /// moves on to the next.
    pub fn send_next(&mut self, pending: &[u8]) -> io::Result<usize> {
        let max = self
            .gso
            .as_ref()
            .map_or(1, UdpSocketState::max_gso_segments);
        let (count, taken) = batch_len(pending, max)?;
        let (head, head_took) = first(pending)?;
        let Some(gso) = self.gso.as_ref().filter(|_| count > 1) else {
            return sent(self.socket.send(head), head_took);
        };
        self.batch.clear();
        let mut rest = &pending[..taken];
        while let Ok((d, took)) = first(rest) {
            self.batch.extend_from_slice(d);
            rest = &rest[took..];
        }
        let transmit = Transmit {
            destination: self.peer,
            ecn: None,
            contents: &self.batch,
            segment_size: Some(head.len()),
            src_ip: None,
        };
        match gso.try_send(UdpSockRef::from(&self.socket), &transmit) {
            Ok(()) => Ok(taken),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(e),
            // A kernel or device that refuses GSO (quinn-udp now sends one at a time): this
            // batch goes one datagram per send too.
            Err(_) => sent(self.socket.send(head), head_took),
        }
    }

    /// Reads one datagram into `buf`. An empty datagram is no end of stream (there is none on
    /// UDP): it is skipped, so that `Ok(0)` never comes from here.
    pub fn recv_one(&self, buf: &mut [u8]) -> io::Result<usize> {
        recv_one(&self.socket, buf)
    }
}

/// What a send of one datagram that takes `took` bytes of the out buffer came to: one too long
/// for the path (the socket forbids fragments; quinn-proto's path MTU probes can be) is gone,
/// as if lost on the way, which QUIC's loss detection expects of a probe.
fn sent(result: io::Result<usize>, took: usize) -> io::Result<usize> {
    match result {
        Ok(_) => Ok(took),
        Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => Ok(took),
        Err(e) => Err(e),
    }
}

fn recv_one(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<usize> {
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

    fn framed(datagrams: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for d in datagrams {
            let at = begin(&mut out);
            out.extend_from_slice(d);
            assert!(end(&mut out, at));
        }
        out
    }

    fn peer_and_socket() -> (std::net::UdpSocket, Datagrams) {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let socket = connect(peer.local_addr().unwrap()).unwrap();
        (peer, socket)
    }

    #[test]
    fn an_out_buffer_holds_whole_datagrams_sent_one_per_write() {
        let (peer, mut socket) = peer_and_socket();
        let mut out = framed(&[b"first", b"second datagram"]);
        let at = begin(&mut out);
        cancel(&mut out, at);
        assert_eq!(out.len(), 2 * LENGTH_BYTES + 5 + 15);
        // Two sizes, the second longer: never one batch.
        let first = socket.send_next(&out).unwrap();
        assert_eq!(first, LENGTH_BYTES + 5);
        assert_eq!(socket.send_next(&out[first..]).unwrap(), LENGTH_BYTES + 15);
        let mut buf = [0u8; 64];
        let n = peer.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"first");
        let n = peer.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"second datagram");
    }

    #[test]
    fn a_batch_is_a_run_of_one_size_its_last_possibly_shorter() {
        let out = framed(&[b"aaaa", b"bbbb", b"cccc", b"dd", b"eeee"]);
        let each = LENGTH_BYTES + 4;
        assert_eq!(
            batch_len(&out, 10).unwrap(),
            (4, 3 * each + LENGTH_BYTES + 2)
        );
        assert_eq!(batch_len(&out, 2).unwrap(), (2, 2 * each));
        assert_eq!(batch_len(&out, 1).unwrap(), (1, each));
        let longer = framed(&[b"aa", b"bbbb"]);
        assert_eq!(batch_len(&longer, 10).unwrap(), (1, LENGTH_BYTES + 2));
        let empty_next = framed(&[b"aa", b""]);
        assert_eq!(batch_len(&empty_next, 10).unwrap(), (1, LENGTH_BYTES + 2));
        // A run bounded by the bytes one send may carry.
        let big = vec![7u8; 1200];
        let many: Vec<&[u8]> = (0..64).map(|_| &big[..]).collect();
        let out = framed(&many);
        assert_eq!(
            batch_len(&out, 64).unwrap().0,
            BATCH_BYTES / 1200,
            "60,000 bytes of 1,200-byte datagrams"
        );
        // A torn tail ends the run; a torn head is refused.
        let mut torn = framed(&[b"aa"]);
        torn.extend_from_slice(&[0, 9, 1]);
        assert_eq!(batch_len(&torn, 10).unwrap(), (1, LENGTH_BYTES + 2));
        assert!(batch_len(&[0, 5, 1], 10).is_err());
    }

    /// However the kernel sends a batch (GSO where it takes it, one by one where not), the
    /// peer reads the same datagrams, whole and in order, and the write took exactly the batch.
    #[test]
    fn a_batch_arrives_as_its_datagrams_whole_and_in_order() {
        let (peer, mut socket) = peer_and_socket();
        let out = framed(&[b"one.", b"two.", b"thr.", b"fo", b"five"]);
        let mut at = 0;
        let mut writes = 0;
        while at < out.len() {
            at += socket.send_next(&out[at..]).unwrap();
            writes += 1;
        }
        assert_eq!(at, out.len());
        let max = socket
            .gso
            .as_ref()
            .map_or(1, UdpSocketState::max_gso_segments);
        assert_eq!(writes, if max >= 4 { 2 } else { 5 }, "GSO segments: {max}");
        let mut buf = [0u8; 64];
        for want in [&b"one."[..], b"two.", b"thr.", b"fo", b"five"] {
            let n = peer.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], want);
        }
    }

    /// quinn-udp turns receive offload on; were it left on, a batch sent over loopback would
    /// come to one read whole.
    #[test]
    fn a_read_returns_one_datagram_though_the_peer_sent_a_batch() {
        let b_std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = connect(b_std.local_addr().unwrap()).unwrap();
        let a_addr: SocketAddr = (
            std::net::Ipv4Addr::LOCALHOST,
            a.socket.local_addr().unwrap().port(),
        )
            .into();
        b_std.connect(a_addr).unwrap();
        b_std.set_nonblocking(true).unwrap();
        let socket = UdpSocket::from_std(b_std);
        let gso = UdpSocketState::new(UdpSockRef::from(&socket)).ok();
        let mut b = Datagrams {
            socket,
            peer: a_addr,
            gso,
            batch: Vec::new(),
        };
        let sent = [&b"abcd"[..], b"efgh", b"ij"];
        let out = framed(&sent);
        let mut at = 0;
        while at < out.len() {
            at += b.send_next(&out[at..]).unwrap();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while got.len() < sent.len() && std::time::Instant::now() < deadline {
            match a.recv_one(&mut buf) {
                Ok(n) => got.push(buf[..n].to_vec()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, sent.map(<[u8]>::to_vec));
    }

    #[test]
    fn a_datagram_too_long_for_udp_is_dropped_and_a_torn_buffer_refused() {
        let mut out = vec![9u8];
        let at = begin(&mut out);
        out.resize(at + LENGTH_BYTES + 70_000, 0);
        assert!(!end(&mut out, at));
        assert_eq!(out, [9u8]);
        let (_peer, mut socket) = peer_and_socket();
        assert!(socket.send_next(&[0, 5, 1]).is_err());
        assert!(socket.send_next(&[0]).is_err());
    }
}
