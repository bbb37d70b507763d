//! What the server's threads share: the stop flag, the counters, the open connections.

use super::prefix::PrefixCache;
use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

/// What the accept thread, every connection's thread and the server's handle share.
pub(super) struct LlmState {
    pub(super) stop: AtomicBool,
    pub(super) served: AtomicU64,
    pub(super) fault_count: AtomicU64,
    pub(super) id: AtomicU64,
    /// A second handle on every open connection, by number, so that shutdown can close them;
    /// each connection's thread removes its own.
    pub(super) open: Mutex<HashMap<u64, TcpStream>>,
    /// The prefix cache (`--prefix-cache`), shared by every connection's thread: one lock per
    /// request's lookup and one per its insertion, on the truth server, not a client's path.
    pub(super) cache: Option<Mutex<PrefixCache>>,
}
