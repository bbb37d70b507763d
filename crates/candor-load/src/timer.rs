//! A timerfd with absolute nanosecond deadlines, registered in the event loop so that one
//! `epoll_wait` wakes for either I/O or the next intended send time, precisely.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::RawFd;

pub struct Timer {
    fd: RawFd,
    armed_for: u64,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall; the fd is owned by this struct and closed on drop.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Timer { fd, armed_for: 0 })
    }

    pub fn register(&self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut SourceFd(&self.fd), token, Interest::READABLE)
    }

    /// Fires once at `deadline_ns` (CLOCK_MONOTONIC). Re-arming for the same deadline is free.
    pub fn arm(&mut self, deadline_ns: u64) {
        if self.armed_for == deadline_ns {
            return;
        }
        self.armed_for = deadline_ns;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                // A zero it_value would disarm the timer; deadlines are never at exactly 0 ns.
                tv_nsec: (deadline_ns % 1_000_000_000).max(1) as libc::c_long,
            },
        };
        // SAFETY: valid fd and itimerspec; errors cannot happen for a valid absolute time.
        unsafe {
            libc::timerfd_settime(
                self.fd,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Clears the expiry so that the next edge is reported.
    pub fn acknowledge(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a stack buffer from our own non-blocking fd.
        unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), 8) };
        self.armed_for = 0;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}
