//! The state the handle and every worker share, apart from both so that the workers need
//! nothing of the handle's side.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// State shared by the handle and all workers.
pub(crate) struct ServerState {
    pub(crate) stop: AtomicBool,
    /// Requests answered with a 200 (faulted requests excluded), one counter per worker so that
    /// workers never contend on a cache line.
    pub(crate) served: Vec<PaddedCounter>,
    /// Counts requests towards the fault frequency, across workers.
    pub(crate) fault_count: AtomicU64,
}

#[repr(align(128))]
#[derive(Default)]
pub(crate) struct PaddedCounter(pub(crate) AtomicU64);
