//! A timerfd with absolute `CLOCK_MONOTONIC` deadlines, pollable by mio: the event loop's
//! nanosecond-precise alarm (mio's own poll timeout only has millisecond resolution, which
//! would add up to a millisecond to every delayed answer).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub(crate) struct Timer {
    fd: OwnedFd,
}

impl Timer {
    pub(crate) fn new() -> io::Result<Timer> {
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
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires once at `deadline_ns` on the `candor_core::now_ns` clock (at once if it has passed).
    pub(crate) fn arm_at(&self, deadline_ns: u64) -> io::Result<()> {
        // An all-zero it_value would disarm the timer instead of firing it.
        let deadline_ns = deadline_ns.max(1);
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
        // SAFETY: valid descriptor and itimerspec; the old-value pointer may be null.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consumes the expiry count so the descriptor stops being readable.
    pub(crate) fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid buffer; EAGAIN (nothing expired) is fine.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }
}
