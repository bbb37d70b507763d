//! The settings `candor serve` is given, checked as its flags name them (the listen address,
//! a stall's period and length, a fault's period), and either server once started.

use crate::llm::LlmServer;
use crate::{ServerHandle, Stall};
use candor_core::units::format_ns;
use std::net::{SocketAddr, ToSocketAddrs};

/// A setting of `candor serve` that cannot work, in one line naming its flag.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("invalid --listen address '{text}' (expected IP:PORT)")]
    Listen {
        text: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--listen address '{0}' resolves to nothing")]
    ListenNowhere(String),
    #[error("--stall-every and --stall-for go together: give both or neither")]
    StallHalf,
    #[error("--stall-for must be longer than zero")]
    StallEmpty,
    #[error("--stall-for ({stall_for}) must be shorter than --stall-every ({every})")]
    StallTooLong { stall_for: String, every: String },
    #[error("--fault-every must be at least 1 (1 = every request)")]
    FaultEvery,
}

/// Accepts `IP:PORT` or `host:port` (resolved, first address wins).
pub fn parse_listen(text: &str) -> Result<SocketAddr, SettingsError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|source| SettingsError::Listen {
            text: text.to_string(),
            source,
        })?;
    addrs
        .next()
        .ok_or_else(|| SettingsError::ListenNowhere(text.to_string()))
}

/// `--stall-every` and `--stall-for` (in ns), checked: both or neither, a stall shorter than
/// its period and longer than zero.
pub fn stall(every_ns: Option<u64>, for_ns: Option<u64>) -> Result<Option<Stall>, SettingsError> {
    Ok(match (every_ns, for_ns) {
        (None, None) => None,
        (Some(every_ns), Some(for_ns)) => {
            if for_ns == 0 {
                return Err(SettingsError::StallEmpty);
            }
            if for_ns >= every_ns {
                return Err(SettingsError::StallTooLong {
                    stall_for: format_ns(for_ns as f64),
                    every: format_ns(every_ns as f64),
                });
            }
            Some(Stall { every_ns, for_ns })
        }
        _ => return Err(SettingsError::StallHalf),
    })
}

/// `--fault-every`: a fault on every Nth request, N at least 1.
pub fn fault_every(n: u64) -> Result<u64, SettingsError> {
    if n == 0 {
        return Err(SettingsError::FaultEvery);
    }
    Ok(n)
}

/// Either server, as `candor serve` runs it until a signal.
pub enum AnyServer {
    Http(ServerHandle),
    Llm(LlmServer),
}

impl AnyServer {
    pub fn local_addr(&self) -> SocketAddr {
        match self {
            AnyServer::Http(s) => s.local_addr(),
            AnyServer::Llm(s) => s.local_addr(),
        }
    }

    pub fn requests_served(&self) -> u64 {
        match self {
            AnyServer::Http(s) => s.requests_served(),
            AnyServer::Llm(s) => s.requests_served(),
        }
    }

    pub fn shutdown(self) {
        match self {
            AnyServer::Http(s) => s.shutdown(),
            AnyServer::Llm(s) => s.shutdown(),
        }
    }
}
