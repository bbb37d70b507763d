//! The running server: binding, the accept thread (a thread per connection, up to the most
//! allowed), and shutdown.

use super::config::LlmConfig;
use super::connection::serve_connection;
use super::error::LlmError;
use super::prefix::PrefixCache;
use super::state::LlmState;
use candor_core::now_ns;
use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running LLM server; dropping it shuts it down.
pub struct LlmServer {
    pub(super) local_addr: SocketAddr,
    pub(super) started_at_ns: u64,
    pub(super) shared: Arc<LlmState>,
    pub(super) accept: Option<JoinHandle<()>>,
}

impl LlmServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `candor_core::now_ns()` when the server started; stall windows are relative to it.
    pub fn started_at_ns(&self) -> u64 {
        self.started_at_ns
    }

    /// Streams finished, faulted ones excluded.
    pub fn requests_served(&self) -> u64 {
        self.shared.served.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection and waits for the accept thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // The accept thread blocks in accept(): a connection of our own wakes it.
        let _ = TcpStream::connect(self.local_addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        if let Ok(open) = self.shared.open.lock() {
            for s in open.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds and starts accepting; the server takes connections when this returns.
pub fn start(config: LlmConfig) -> Result<LlmServer, LlmError> {
    config.validate()?;
    let bind = |error| LlmError::Bind {
        addr: config.listen,
        error,
    };
    let listener = TcpListener::bind(config.listen).map_err(bind)?;
    let local_addr = listener.local_addr().map_err(bind)?;
    let shared = Arc::new(LlmState {
        stop: AtomicBool::new(false),
        served: AtomicU64::new(0),
        fault_count: AtomicU64::new(0),
        id: AtomicU64::new(0),
        open: Mutex::new(HashMap::new()),
        cache: (config.prefix_cache_blocks > 0)
            .then(|| Mutex::new(PrefixCache::new(config.prefix_cache_blocks))),
    });
    let started_at_ns = now_ns();
    let config = Arc::new(config);
    let accept = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("candor-llm-accept".into())
            .spawn(move || accept_loop(listener, config, shared, started_at_ns))
            .map_err(LlmError::Thread)?
    };
    Ok(LlmServer {
        local_addr,
        started_at_ns,
        shared,
        accept: Some(accept),
    })
}

pub(super) fn accept_loop(
    listener: TcpListener,
    config: Arc<LlmConfig>,
    shared: Arc<LlmState>,
    started_ns: u64,
) {
    let mut number = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors the backlog stays readable: pause rather than spin on it.
            std::thread::sleep(ACCEPT_RETRY);
            continue;
        };
        let Ok(copy) = stream.try_clone() else {
            continue;
        };
        {
            let Ok(mut open) = shared.open.lock() else {
                return;
            };
            if open.len() >= config.max_connections {
                continue; // dropped: closed at once
            }
            number += 1;
            open.insert(number, copy);
        }
        let _ = stream.set_nodelay(true);
        let (config, shared, id) = (config.clone(), shared.clone(), number);
        let forget = move |shared: &LlmState| {
            if let Ok(mut open) = shared.open.lock() {
                open.remove(&id);
            }
        };
        let spawned = std::thread::Builder::new()
            .name("candor-llm-conn".into())
            .spawn({
                let shared = shared.clone();
                move || {
                    let _ = serve_connection(stream, &config, &shared, started_ns);
                    forget(&shared);
                }
            });
        if spawned.is_err() {
            forget(&shared);
        }
    }
}

/// The pause after a failed accept (out of descriptors, most likely).
pub(super) const ACCEPT_RETRY: Duration = Duration::from_millis(10);
