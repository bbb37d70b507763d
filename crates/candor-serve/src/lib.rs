//! candor's built-in HTTP/1.1 test server: answers keep-alive requests fast, optionally after a
//! fixed service time, with periodic global stalls (the wrk2 coordinated-omission example) or
//! with deliberate faults, so that tests, the demo, calibration and benchmarks have a target
//! whose true latency distribution is known in advance.
//!
//! ```no_run
//! use candor_serve::{start, ServeConfig, Stall};
//! let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap());
//! config.stall = Some(Stall { every_ns: 10_000_000_000, for_ns: 2_000_000_000 });
//! let server = start(config).expect("server starts");
//! println!("listening on {}", server.local_addr());
//! server.shutdown();
//! ```

pub mod llm;
/// The request body reader of `serve --llm`, at the path it has always had.
pub use llm::body as llm_body;

mod config;
mod response;
mod server_state;
pub mod settings;
mod worker;

pub use config::{FaultKind, InjectedFault, ServeConfig, ServeError, Stall, MAX_BODY_BYTES};
use server_state::{PaddedCounter, ServerState};

#[cfg(test)]
mod server_tests;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running server; dropping it shuts it down.
pub struct ServerHandle {
    local_addr: SocketAddr,
    started_at_ns: u64,
    stall: Option<Stall>,
    shared: Arc<ServerState>,
    wakers: Vec<Arc<mio::Waker>>,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `candor_core::now_ns()` when the server started; stall windows are relative to it.
    pub fn started_at_ns(&self) -> u64 {
        self.started_at_ns
    }

    /// Absolute `[start, end)` (ns, `candor_core::now_ns` clock) of the stall windows that
    /// overlap `[from_ns, to_ns)`; empty without a stall.
    pub fn stall_windows_between(&self, from_ns: u64, to_ns: u64) -> Vec<(u64, u64)> {
        match &self.stall {
            Some(stall) => stall.windows_between(self.started_at_ns, from_ns, to_ns),
            None => Vec::new(),
        }
    }

    /// Requests answered with a 200 so far (updated after each event-loop pass).
    pub fn requests_served(&self) -> u64 {
        self.shared
            .served
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }

    /// Stops all worker threads and closes the listener and every connection.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for waker in &self.wakers {
            // A failed wake can only mean the poll is gone, i.e. the worker already exited.
            let _ = waker.wake();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .field("started_at_ns", &self.started_at_ns)
            .finish_non_exhaustive()
    }
}

/// Binds the listener, starts the workers and returns at once; the server is accepting
/// connections when this returns.
pub fn start(config: ServeConfig) -> Result<ServerHandle, ServeError> {
    config.validate()?;
    let listener = worker::bind_listener(config.listen).map_err(|error| ServeError::Bind {
        addr: config.listen,
        error,
    })?;
    let local_addr = listener.local_addr().map_err(|error| ServeError::Bind {
        addr: config.listen,
        error,
    })?;
    let shared = Arc::new(ServerState {
        stop: AtomicBool::new(false),
        served: (0..config.threads)
            .map(|_| PaddedCounter::default())
            .collect(),
        fault_count: AtomicU64::new(0),
    });
    let started_at_ns = candor_core::now_ns();
    let settings = Arc::new(worker::Settings::new(&config, started_at_ns));
    let workers = worker::build_workers(listener, &settings, &shared, config.threads)
        .map_err(ServeError::EventLoop)?;
    let wakers = workers.iter().map(|w| w.waker()).collect();
    let mut threads = Vec::with_capacity(workers.len());
    for (i, w) in workers.into_iter().enumerate() {
        let spawned = std::thread::Builder::new()
            .name(format!("candor-serve-{i}"))
            .spawn(move || w.run());
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                // Stop the ones already running before reporting.
                let mut partial = ServerHandle {
                    local_addr,
                    started_at_ns,
                    stall: config.stall,
                    shared,
                    wakers,
                    threads,
                };
                partial.stop_and_join();
                return Err(ServeError::EventLoop(e));
            }
        }
    }
    Ok(ServerHandle {
        local_addr,
        started_at_ns,
        stall: config.stall,
        shared,
        wakers,
        threads,
    })
}

/// `docs/serve.md`, whose Rust blocks are compiled (and run, unless marked `no_run`) as doc-tests of
/// this crate: the documented code is code that compiles as written.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/serve.md")]
pub struct ServeGuide;
