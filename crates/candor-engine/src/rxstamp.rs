//! The kernel's receive timestamp of what a TCP read returns, on the `now_ns` clock: lets an
//! open-loop thread read responses at its next send wake-up instead of waking for each of them,
//! and still record each response's completion at the instant its last bytes arrived.
//!
//! With `SO_TIMESTAMPING` (`SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE`) the kernel
//! stamps every received packet when the network stack takes it in (`netif_rx`, before TCP and
//! the socket see it), and a TCP `recvmsg` returns, in an `SCM_TIMESTAMPING` message, the stamp
//! of the last packet the read copied from (`tcp_recv_timestamp`; segments merged in the receive
//! queue keep the later stamp). With one request outstanding per connection, the last packet of
//! a read that completes a response is the one that carried its last bytes: the stamp is the
//! instant the response was complete. The stamp is `CLOCK_REALTIME`; [`ClockOffset`] maps it to
//! `CLOCK_MONOTONIC` with an offset measured between two monotonic reads.
//!
//! Written on `libc` by hand: it is one `recvmsg` with a fixed control buffer on the stack
//! (`nix`'s takes a `Vec`, and the `libc` crate lacks the Linux constants), and it is on the
//! hot path, which allocates nothing.

use std::io;
use std::os::fd::RawFd;

/// `SO_TIMESTAMPING` and its control message type (`SCM_TIMESTAMPING` = the same number) on
/// every Linux architecture candor builds for (asm-generic; x86 and arm use it too).
const SO_TIMESTAMPING: libc::c_int = 37;
const FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;

/// Asks the kernel to stamp what `fd` receives.
pub fn enable(fd: RawFd) -> io::Result<()> {
    let flags = FLAGS as libc::c_int;
    // SAFETY: a valid descriptor and a c_int option value of the stated size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_TIMESTAMPING,
            (&flags as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Room for one `SCM_TIMESTAMPING` message (three timespecs) with its header, aligned for it.
#[repr(C, align(8))]
struct Control([u8; 128]);

/// Reads into `buf` like `recv`; also returns the realtime stamp (ns) of the last packet the
/// read copied from, when the kernel gave one.
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut control = Control([0; 128]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs); the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    // SAFETY: `msg` points at a live iovec over `buf` and a live control buffer, both as long
    // as stated.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // `msg_controllen`; a timestamping message carries at least one timespec.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == SO_TIMESTAMPING {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                // ts[0] is the software stamp; all zero means none was taken.
                if ns != 0 {
                    stamp = Some(ns);
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_REALTIME - CLOCK_MONOTONIC`, as measured at one instant. The two clocks run at the
/// same (NTP-disciplined) rate, so the offset changes only when the wall clock is stepped; the
/// driver re-measures it every [`ClockOffset::REFRESH_NS`], and clamps what it converts to the
/// span between the request's send and the read, so a step can never place a response outside it.
#[derive(Clone, Copy, Debug)]
pub struct ClockOffset {
    offset_ns: i128,
    /// Half the width of the monotonic bracket the realtime read sat in: the offset's error.
    pub error_ns: u64,
}

impl ClockOffset {
    pub const REFRESH_NS: u64 = 100_000_000;

    /// The offset now: the narrowest of three monotonic brackets around a realtime read.
    pub fn measure() -> ClockOffset {
        let mut best: Option<ClockOffset> = None;
        for _ in 0..3 {
            let before = clock(libc::CLOCK_MONOTONIC);
            let real = clock(libc::CLOCK_REALTIME);
            let after = clock(libc::CLOCK_MONOTONIC);
            let mid = i128::from(before) + (i128::from(after) - i128::from(before)) / 2;
            let candidate = ClockOffset {
                offset_ns: i128::from(real) - mid,
                error_ns: (after - before).div_ceil(2),
            };
            if best.is_none_or(|b| candidate.error_ns < b.error_ns) {
                best = Some(candidate);
            }
        }
        best.expect("three tries")
    }

    /// The monotonic instant of the realtime instant `real_ns`.
    pub fn monotonic(&self, real_ns: u64) -> u64 {
        (i128::from(real_ns) - self.offset_ns).max(0) as u64
    }

    /// The arrival of a packet stamped `real_ns` that answers a request sent at `sent_ns` and
    /// was read at `read_ns`: its monotonic instant, kept within those two (only a step of the
    /// wall clock since the offset was measured could place it outside them).
    pub fn arrival(&self, real_ns: u64, sent_ns: u64, read_ns: u64) -> u64 {
        self.monotonic(real_ns).clamp(sent_ns.min(read_ns), read_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::now_ns;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// A connected pair whose client end is stamped, once the kernel stamps: it starts to only
    /// shortly after the first socket on the machine asks (the switch is deferred work), which is
    /// why the driver waits for a stamp before it lets responses wait (`stamps_seen`).
    fn stamped_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        enable(client.as_raw_fd()).unwrap();
        let mut buf = [0u8; 16];
        for _ in 0..1000 {
            server.write_all(b"x").unwrap();
            wait_readable(client.as_raw_fd());
            if recv(client.as_raw_fd(), &mut buf).unwrap().1.is_some() {
                return (client, server);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("the kernel never stamped a received packet");
    }

    fn wait_readable(fd: RawFd) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        while unsafe { libc::poll(&mut p, 1, 10_000) } <= 0 {}
    }

    #[test]
    fn arrivals_map_by_the_offset_and_stay_between_send_and_read() {
        let offset = ClockOffset {
            offset_ns: 1_000_000,
            error_ns: 0,
        };
        assert_eq!(offset.monotonic(1_500_000), 500_000);
        assert_eq!(offset.arrival(1_500_000, 400_000, 600_000), 500_000);
        // A wall clock stepped back or forward since the offset was measured.
        assert_eq!(offset.arrival(1_300_000, 400_000, 600_000), 400_000);
        assert_eq!(offset.arrival(1_700_000, 400_000, 600_000), 600_000);
        // Nothing sent (a stray answer): up to the read.
        assert_eq!(offset.arrival(1_500_000, 0, 600_000), 500_000);
    }

    /// The exactness the driver relies on: data read 20 ms after it arrived is stamped with its
    /// arrival. Bounds, all without assuming anything about the machine's speed: the stamp was
    /// taken after the peer's write began (`written_from`) and before the data read ready
    /// (`ready_at`), each up to the offset's measured error; the read came 20 ms after that.
    #[test]
    fn a_late_read_returns_the_arrival_instant() {
        let (client, mut server) = stamped_pair();
        let mut buf = [0u8; 256];
        for round in 0..3 {
            let offset = ClockOffset::measure();
            let written_from = now_ns();
            server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
            wait_readable(client.as_raw_fd());
            let ready_at = now_ns();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let read_at = now_ns();
            let (n, stamp) = recv(client.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(n, 19);
            let arrived = offset.monotonic(stamp.expect("a stamp"));
            let e = offset.error_ns;
            assert!(
                arrived + e >= written_from && arrived <= ready_at + e,
                "round {round}: stamp {arrived} outside [{written_from}, {ready_at}] +- {e}"
            );
            assert!(read_at - arrived >= 20_000_000 - e);
        }
    }

    /// Of two writes 20 ms apart read at once, the stamp is the second's: a response that
    /// arrives in pieces is complete when its last piece arrived.
    #[test]
    fn a_read_of_two_packets_returns_the_later_arrival() {
        let (client, mut server) = stamped_pair();
        server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        wait_readable(client.as_raw_fd());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let offset = ClockOffset::measure();
        let second_from = now_ns();
        server.write_all(b"\r\n").unwrap();
        let mut buf = [0u8; 256];
        let mut got = 0;
        let mut last = None;
        while got < 19 {
            wait_readable(client.as_raw_fd());
            let (n, stamp) = recv(client.as_raw_fd(), &mut buf).unwrap();
            got += n;
            last = stamp;
        }
        let arrived = offset.monotonic(last.expect("a stamp"));
        assert!(arrived + offset.error_ns >= second_from);
    }
}
