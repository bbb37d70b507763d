//! A timerfd with absolute `CLOCK_MONOTONIC` deadlines (the [`crate::now_ns`] clock): the
//! nanosecond-precise alarm that event loops register beside their sockets, where mio's poll
//! timeout and tokio's timer wheel only have millisecond resolution.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub struct TimerFd {
    fd: OwnedFd,
    /// The deadline currently armed (0 = none), so re-arming for the same instant is free.
    armed_for: Cell<u64>,
}

impl TimerFd {
    /// A non-blocking, close-on-exec timerfd.
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the returned descriptor is checked before being owned.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TimerFd {
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed_for: Cell::new(0),
        })
    }

    /// Fires once at `deadline_ns` (at once if it has passed); the descriptor then reads ready.
    pub fn arm(&self, deadline_ns: u64) {
        // An all-zero it_value would disarm the timer instead of firing it.
        let deadline_ns = deadline_ns.max(1);
        if self.armed_for.get() == deadline_ns {
            return;
        }
        self.armed_for.set(deadline_ns);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid descriptor and itimerspec; the old-value pointer may be null. An absolute
        // time on a valid timerfd cannot make this fail.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Notes that the timer fired, without the `read` that [`TimerFd::acknowledge`] costs: in an
    /// edge-triggered epoll set every expiry is a new event of its own (the kernel wakes the
    /// descriptor's waiters at each one), and the next [`TimerFd::arm`] resets the expiry count,
    /// so the count left unread changes nothing. Level-triggered waiters need `acknowledge`.
    pub fn fired(&self) {
        self.armed_for.set(0);
    }

    /// Consumes the expiry so the descriptor stops reading ready (edge-triggered loops need it).
    pub fn acknowledge(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid buffer; EAGAIN (nothing expired) is fine.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        self.armed_for.set(0);
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::now_ns;

    #[test]
    fn fires_at_the_absolute_deadline() {
        let t = TimerFd::new().unwrap();
        let deadline = now_ns() + 2_000_000;
        t.arm(deadline);
        let mut pfd = libc::pollfd {
            fd: t.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a 1 s timeout bounds the test.
        let n = unsafe { libc::poll(&mut pfd, 1, 1000) };
        assert_eq!(n, 1, "the timer must fire within 1 s");
        assert!(now_ns() >= deadline, "never early");
        t.acknowledge();
        // SAFETY: as above, without waiting.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0, "acknowledged");
    }

    /// Waits up to 1 s on an edge-triggered epoll set holding `t`; the number of events.
    fn wait_edge(ep: &OwnedFd) -> i32 {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: valid epoll descriptor and one event slot.
        unsafe { libc::epoll_wait(ep.as_raw_fd(), &mut ev, 1, 1000) }
    }

    #[test]
    fn edge_triggered_expiries_need_no_read() {
        let t = TimerFd::new().unwrap();
        // SAFETY: plain syscalls on descriptors owned here; the event struct is valid.
        let ep = unsafe { OwnedFd::from_raw_fd(libc::epoll_create1(libc::EPOLL_CLOEXEC)) };
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: 1,
        };
        // SAFETY: as above.
        let rc =
            unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, t.as_raw_fd(), &mut ev) };
        assert_eq!(rc, 0);
        for round in 0..3 {
            let deadline = now_ns() + 1_000_000;
            t.arm(deadline);
            assert_eq!(
                wait_edge(&ep),
                1,
                "expiry {round} is an event although none was read"
            );
            assert!(now_ns() >= deadline);
            t.fired();
        }
        // Nothing armed, nothing pending: no further event (a 1 ms bounded wait).
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::epoll_wait(ep.as_raw_fd(), &mut ev, 1, 1) },
            0
        );
    }
}
