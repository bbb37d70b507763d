//! Settings of a load run, parsed and validated once before anything starts.

use crate::schedule::ArrivalKind;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LoadConfigError {
    #[error("invalid URL '{0}': {1}")]
    Url(String, String),
    #[error("unsupported scheme '{0}' in '{1}': candor run speaks http:// for now")]
    Scheme(String, String),
    #[error("cannot resolve host '{0}': {1}")]
    Resolve(String, String),
    #[error("cannot connect to {0}: {1} (is the server running?)")]
    Connect(SocketAddr, String),
    #[error("{0}")]
    Invalid(String),
}

/// Where requests go.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub addr: SocketAddr,
    /// Value of the Host header.
    pub host_header: String,
    /// Path and query, at least "/".
    pub path: String,
}

impl Target {
    /// Parses and resolves an `http://` URL.
    pub fn parse(text: &str) -> Result<Target, LoadConfigError> {
        let url =
            url::Url::parse(text).map_err(|e| LoadConfigError::Url(text.into(), e.to_string()))?;
        if url.scheme() != "http" {
            return Err(LoadConfigError::Scheme(url.scheme().into(), text.into()));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| LoadConfigError::Url(text.into(), "no host".into()))?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let lookup_host = host.trim_start_matches('[').trim_end_matches(']');
        let addr = (lookup_host, port)
            .to_socket_addrs()
            .map_err(|e| LoadConfigError::Resolve(host.clone(), e.to_string()))?
            .next()
            .ok_or_else(|| LoadConfigError::Resolve(host.clone(), "no addresses".into()))?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        let mut path = url.path().to_string();
        if path.is_empty() {
            path.push('/');
        }
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(Target {
            url: text.to_string(),
            addr,
            host_header,
            path,
        })
    }

    /// One blocking connection attempt, so that a wrong port fails before the run, not during it.
    pub fn check_reachable(&self, timeout: Duration) -> Result<(), LoadConfigError> {
        TcpStream::connect_timeout(&self.addr, timeout)
            .map(drop)
            .map_err(|e| LoadConfigError::Connect(self.addr, e.to_string()))
    }
}

/// The arrival process (re-exported for users of the engine).
pub type Arrival = ArrivalKind;

/// Everything the engine needs, validated.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    /// Total intended requests per second; `None` = closed loop (send on each response).
    pub rate: Option<f64>,
    pub connections: usize,
    pub threads: usize,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    /// A request with no complete response this long after its actual send fails as a timeout.
    pub timeout_ns: u64,
    /// After the last intended send, how long to wait for outstanding requests.
    pub drain_ns: u64,
    pub arrival: Arrival,
    /// Length of the interval histograms.
    pub interval_ns: u64,
    pub method: String,
    /// Extra headers as "Name: value".
    pub headers: Vec<String>,
    pub body: Vec<u8>,
    /// Spin on the clock for this long before each send instead of sleeping.
    pub spin_ns: u64,
    /// This process is shard `shard_index` of `shard_count` of one schedule at the total `rate`.
    pub shard_index: u32,
    pub shard_count: u32,
    /// Wall-clock instant (ns since the Unix epoch) of the first intended send, shared by shards.
    pub start_at_wall_ns: Option<u64>,
}

impl LoadConfig {
    /// A configuration with wrk2-like defaults for `target`.
    pub fn new(target: Target) -> Self {
        LoadConfig {
            target,
            rate: Some(1000.0),
            connections: 16,
            threads: 2,
            duration_ns: 10_000_000_000,
            warmup_ns: 0,
            timeout_ns: 2_000_000_000,
            drain_ns: 2_000_000_000,
            arrival: ArrivalKind::Constant,
            interval_ns: 1_000_000_000,
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            spin_ns: candor_core::SPIN_MARGIN_NS,
            shard_index: 0,
            shard_count: 1,
            start_at_wall_ns: None,
        }
    }

    /// Checks the settings against each other; run this before starting anything.
    pub fn validate(&self) -> Result<(), LoadConfigError> {
        let bad = |m: String| Err(LoadConfigError::Invalid(m));
        if self.threads == 0 {
            return bad("threads must be at least 1".into());
        }
        if self.connections < self.threads {
            return bad(format!(
                "connections ({}) must be at least the number of threads ({}): every thread needs a connection",
                self.connections, self.threads
            ));
        }
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                return bad(format!("rate must be positive, got {r}"));
            }
        }
        if self.shard_count == 0 || self.shard_index >= self.shard_count {
            return bad(format!(
                "invalid shard {}/{}: expected I/N with 0 <= I < N",
                self.shard_index, self.shard_count
            ));
        }
        if self.duration_ns == 0 {
            return bad("duration must be positive".into());
        }
        if self.timeout_ns == 0 {
            return bad("timeout must be positive".into());
        }
        if self.interval_ns < 1_000_000 {
            return bad("interval must be at least 1ms".into());
        }
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return bad(format!("invalid HTTP method '{}'", self.method));
        }
        for h in &self.headers {
            match h.split_once(':') {
                Some((name, _)) if !name.trim().is_empty() && !name.contains(' ') => {}
                _ => return bad(format!("invalid header '{h}': expected 'Name: value'")),
            }
            if h.contains('\r') || h.contains('\n') {
                return bad(format!(
                    "invalid header '{}': line breaks are not allowed",
                    h.escape_debug()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        let t = Target::parse("http://127.0.0.1").unwrap();
        assert_eq!(t.path, "/");
        assert_eq!(t.addr.port(), 80);
    }

    #[test]
    fn rejects_bad_urls_clearly() {
        assert!(matches!(
            Target::parse("not a url"),
            Err(LoadConfigError::Url(..))
        ));
        assert!(matches!(
            Target::parse("ftp://127.0.0.1/"),
            Err(LoadConfigError::Scheme(..))
        ));
        assert!(matches!(
            Target::parse("http://no-such-host.invalid/"),
            Err(LoadConfigError::Resolve(..))
        ));
    }

    #[test]
    fn validation() {
        let t = Target::parse("http://127.0.0.1:1/").unwrap();
        let mut c = LoadConfig::new(t);
        assert!(c.validate().is_ok());
        c.connections = 1;
        c.threads = 2;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("at least the number of threads"));
        c.connections = 4;
        c.rate = Some(0.0);
        assert!(c.validate().is_err());
        c.rate = None;
        c.headers = vec!["NoColon".into()];
        assert!(c.validate().is_err());
    }
}
