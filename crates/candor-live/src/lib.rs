//! candor's live view of a running load test: a small HTTP server on its own threads serving a
//! self-contained page (`/`), Server-Sent Events (`/events`, one JSON object per interval) and
//! the Prometheus exposition (`/metrics`: text, or protobuf with native histograms when the
//! scraper asks for it). It is fed from the interval reports the run's
//! collector already produces, so nothing is added to the load threads.

mod buckets;
pub mod exposition;
mod hub;
mod page;
pub mod protobuf;
mod server;
pub use server::{MAX_CLIENTS, MAX_CONNECTIONS};
pub mod state;

pub use buckets::{Buckets, MAX_RELATIVE_WIDTH};
pub use state::{LiveState, RunInfo};

use candor_load::load_run::RunOutcome;
use candor_load::IntervalReport;
use hub::{push, Hub, Inner};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Why the live server could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("invalid --live address '{0}': expected HOST:PORT, e.g. 127.0.0.1:9464")]
    Address(String),
    #[error("cannot listen on {addr} for --live: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot start the live server thread: {0}")]
    Thread(std::io::Error),
}

/// The running live server. Dropping it stops accepting; clients' threads end on their own.
pub struct LiveServer {
    shared: Arc<Hub>,
    addr: SocketAddr,
}

impl LiveServer {
    /// Binds `addr` (HOST:PORT; port 0 picks a free one) and starts serving on its own thread.
    pub fn bind(addr: &str) -> Result<LiveServer, LiveError> {
        let resolved: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|_| LiveError::Address(addr.to_string()))?
            .collect();
        let first = *resolved
            .first()
            .ok_or_else(|| LiveError::Address(addr.to_string()))?;
        let listener = std::net::TcpListener::bind(first).map_err(|source| LiveError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let bound = listener.local_addr().map_err(|source| LiveError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let shared = Arc::new(Hub {
            inner: Mutex::new(Inner {
                state: None,
                events: VecDeque::new(),
                next_seq: 0,
                metrics: Arc::from(""),
                metrics_protobuf: Arc::from(Vec::new()),
                runs: 0,
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            clients: AtomicUsize::new(0),
            page: page::html(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("candor-live".into())
            .spawn(move || server::accept_loop(listener, s))
            .map_err(LiveError::Thread)?;
        Ok(LiveServer {
            shared,
            addr: bound,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A run begins: the state (and so every counter) starts from zero.
    pub fn begin(&self, info: RunInfo) {
        let mut inner = self.shared.lock();
        inner.runs += 1;
        let state = LiveState::new(info, inner.runs);
        let (text, protobuf) = expositions(&state);
        inner.state = Some(state);
        inner.metrics = text;
        inner.metrics_protobuf = protobuf;
    }

    /// One interval of the current run (ignored before [`LiveServer::begin`]).
    pub fn interval(&self, report: &IntervalReport) {
        let mut inner = self.shared.lock();
        let Some(state) = inner.state.as_mut() else {
            return;
        };
        let event = state.interval(report).to_string();
        let (text, protobuf) = expositions(state);
        inner.metrics = text;
        inner.metrics_protobuf = protobuf;
        push(&mut inner, event, false);
        drop(inner);
        self.shared.changed.notify_all();
    }

    /// The run ended with `outcome`: the final numbers and the run's closing event. After the
    /// `last` run's, event streams end; otherwise they go on with the next run.
    pub fn finish(&self, outcome: &RunOutcome, stopped_early: bool, last: bool) {
        let mut inner = self.shared.lock();
        let Some(state) = inner.state.as_mut() else {
            return;
        };
        let event = state.finish(outcome, stopped_early, last).to_string();
        let (text, protobuf) = expositions(state);
        inner.metrics = text;
        inner.metrics_protobuf = protobuf;
        push(&mut inner, event, last);
        drop(inner);
        self.shared.changed.notify_all();
    }

    /// Keeps serving for `linger` (so that a scraper sees the final state), then stops.
    pub fn close_after(self, linger: Duration) {
        std::thread::sleep(linger);
    }
}

/// Both expositions of `state` now, rendered once per interval rather than per scrape.
fn expositions(state: &LiveState) -> (Arc<str>, Arc<[u8]>) {
    let snapshot = state.metrics();
    (
        Arc::from(exposition::render(&snapshot)),
        Arc::from(protobuf::render(&snapshot)),
    )
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        // Wake the blocking accept so that its thread sees the flag and ends.
        let wake = match self.addr {
            SocketAddr::V4(a) if a.ip().is_unspecified() => {
                SocketAddr::from(([127, 0, 0, 1], a.port()))
            }
            SocketAddr::V6(a) if a.ip().is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
            }
            a => a,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(500));
    }
}
