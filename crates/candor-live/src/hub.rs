//! What the live server's threads and the publisher share: the current run's state, the
//! events kept for late clients and the latest exposition. Kept apart from `lib.rs` so that the
//! server threads can reach it without depending on the publishing side.

use crate::state::LiveState;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex};

/// Events kept for clients that connect late: more than an hour of one-second intervals. Older
/// ones are dropped (a page opened later starts its charts from the oldest kept).
const KEPT_EVENTS: usize = 4096;

/// One event of the stream.
pub(crate) struct Event {
    pub(crate) seq: u64,
    pub(crate) json: Arc<str>,
    /// The last run's closing event: streams end after it.
    pub(crate) done: bool,
}

pub(crate) struct Inner {
    pub(crate) state: Option<LiveState>,
    pub(crate) events: VecDeque<Event>,
    pub(crate) next_seq: u64,
    pub(crate) metrics: Arc<str>,
    /// The same as `metrics` in the protobuf exposition (with native histograms).
    pub(crate) metrics_protobuf: Arc<[u8]>,
    /// Runs begun so far (a sweep has several).
    pub(crate) runs: u32,
}

/// What the server threads and the publisher share.
pub(crate) struct Hub {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) changed: Condvar,
    pub(crate) stop: AtomicBool,
    /// Event streams being served (a thread each).
    pub(crate) clients: AtomicUsize,
    pub(crate) page: String,
}

impl Hub {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panicking client thread must not take the run down with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn push(inner: &mut Inner, json: String, done: bool) {
    let seq = inner.next_seq;
    inner.next_seq += 1;
    inner.events.push_back(Event {
        seq,
        json: Arc::from(json),
        done,
    });
    while inner.events.len() > KEPT_EVENTS {
        inner.events.pop_front();
    }
}
