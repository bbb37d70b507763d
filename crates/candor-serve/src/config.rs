//! What the server can be told (service time, stalls, faults, body size) and why it refuses a
//! setting: the workers read it as much as `start` does, so it sits below both.

use candor_core::units::format_ns;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use thiserror::Error;

/// Everything the server can be told; build with [`ServeConfig::new`] and adjust fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Address to listen on; port 0 picks a free port (see
    /// [`ServerHandle::local_addr`](crate::ServerHandle::local_addr)).
    pub listen: SocketAddr,
    /// Worker threads, each with its own event loop (default 1).
    pub threads: usize,
    /// Fixed service time: each request is answered this long after it was read (0 = at once).
    pub delay_ns: u64,
    /// Periodic global stall.
    pub stall: Option<Stall>,
    /// Deliberate misbehaviour for tests.
    pub fault: Option<InjectedFault>,
    /// Response body size in bytes (default 2: `ok`).
    pub body_bytes: usize,
    /// Never sleep: each worker polls its sockets without blocking, a core at 100% each, so
    /// that a client's sends never pay for waking it (on loopback the sender's system call
    /// delivers the packet and wakes the receiver). For benchmarks of a client's limits.
    pub busy_poll: bool,
}

impl ServeConfig {
    /// One line of what this server does: threads, delay, stall, fault and body size.
    pub fn describe(&self) -> String {
        let config = self;
        let delay = if config.delay_ns == 0 {
            "none".to_string()
        } else {
            format_ns(config.delay_ns as f64)
        };
        let stall = match &config.stall {
            Some(s) => format!(
                "{} every {}",
                format_ns(s.for_ns as f64),
                format_ns(s.every_ns as f64)
            ),
            None => "none".to_string(),
        };
        let fault = match &config.fault {
            Some(f) if f.every == 1 => format!("{} on every request", f.kind),
            Some(f) => format!("{} on every {}th request", f.kind, f.every),
            None => "none".to_string(),
        };
        format!(
            "threads {}, delay {delay}, stall {stall}, fault {fault}, body {} bytes{}",
            config.threads,
            config.body_bytes,
            if config.busy_poll {
                ", busy-polling"
            } else {
                ""
            }
        )
    }

    /// One thread, no delay, no stall, no fault, a 2-byte body.
    pub fn new(listen: SocketAddr) -> Self {
        ServeConfig {
            listen,
            threads: 1,
            delay_ns: 0,
            stall: None,
            fault: None,
            body_bytes: 2,
            busy_poll: false,
        }
    }

    /// Checks the settings that [`start`](crate::start) would reject.
    pub fn validate(&self) -> Result<(), ServeError> {
        if self.threads == 0 {
            return Err(ServeError::NoThreads);
        }
        if let Some(stall) = &self.stall {
            stall.validate()?;
        }
        if let Some(fault) = &self.fault {
            if fault.every == 0 {
                return Err(ServeError::FaultEveryZero);
            }
        }
        // Far above any sensible test; keeps the prebuilt responses and buffers sane.
        if self.body_bytes > MAX_BODY_BYTES {
            return Err(ServeError::BodyTooLarge(self.body_bytes));
        }
        Ok(())
    }
}

/// The largest response body the server agrees to build (64 MiB).
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// A periodic global stall: normal for `every_ns - for_ns`, then stalled for `for_ns`, repeated.
/// Stall windows are `[k*every + (every - for), (k+1)*every)` after the server's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub every_ns: u64,
    pub for_ns: u64,
}

impl Stall {
    /// Requires `0 < for_ns < every_ns`.
    pub fn validate(&self) -> Result<(), ServeError> {
        if self.for_ns == 0 || self.for_ns >= self.every_ns {
            return Err(ServeError::InvalidStall {
                every_ns: self.every_ns,
                for_ns: self.for_ns,
            });
        }
        Ok(())
    }

    /// If `t_ns` (absolute) lies inside a stall window of a server started at `started_ns`,
    /// returns the window's (exclusive) end.
    #[inline]
    pub fn window_end_at(&self, started_ns: u64, t_ns: u64) -> Option<u64> {
        if t_ns < started_ns {
            return None;
        }
        let phase = (t_ns - started_ns) % self.every_ns;
        if phase >= self.every_ns - self.for_ns {
            Some(t_ns - phase + self.every_ns)
        } else {
            None
        }
    }

    /// Absolute `[start, end)` of every stall window overlapping `[from_ns, to_ns)`.
    pub fn windows_between(&self, started_ns: u64, from_ns: u64, to_ns: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if to_ns <= from_ns || to_ns <= started_ns {
            return out;
        }
        // Window k ends at started + (k+1)*every; the first that ends after `from` is k0.
        let mut k = from_ns.saturating_sub(started_ns) / self.every_ns;
        loop {
            let base = started_ns.saturating_add(k.saturating_mul(self.every_ns));
            let start = base.saturating_add(self.every_ns - self.for_ns);
            let end = base.saturating_add(self.every_ns);
            if start >= to_ns || end == u64::MAX {
                break;
            }
            if end > from_ns {
                out.push((start, end));
            }
            k += 1;
        }
        out
    }
}

/// Deliberate misbehaviour on every `every`-th request (1 = all), counted across the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFault {
    pub kind: FaultKind,
    pub every: u64,
}

/// What a faulty answer looks like to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Abort the connection with a TCP RST (close with `SO_LINGER` 0) instead of answering.
    Reset,
    /// Send the first half of the response, then close the connection normally.
    CloseMidResponse,
    /// Send bytes that are not HTTP, then close.
    Garbage,
    /// Close the connection normally without answering.
    Close,
}

impl FaultKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Reset => "reset",
            FaultKind::CloseMidResponse => "close-mid-response",
            FaultKind::Garbage => "garbage",
            FaultKind::Close => "close",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = ServeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "reset" => Ok(FaultKind::Reset),
            "close-mid-response" => Ok(FaultKind::CloseMidResponse),
            "garbage" => Ok(FaultKind::Garbage),
            "close" => Ok(FaultKind::Close),
            other => Err(ServeError::UnknownFault(other.to_string())),
        }
    }
}

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("the server needs at least one thread")]
    NoThreads,
    #[error("invalid stall: every={every_ns} ns, for={for_ns} ns; need 0 < for < every")]
    InvalidStall { every_ns: u64, for_ns: u64 },
    #[error("fault frequency must be at least 1 (1 = every request)")]
    FaultEveryZero,
    #[error("unknown fault '{0}': expected reset, close-mid-response, garbage or close")]
    UnknownFault(String),
    #[error("response body of {0} bytes is too large (at most {MAX_BODY_BYTES})")]
    BodyTooLarge(usize),
    // The io::Error is part of the message rather than a `source`, so that anyhow's `{:#}`
    // chain does not print it twice.
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("cannot set up the event loop: {0}")]
    EventLoop(std::io::Error),
}
