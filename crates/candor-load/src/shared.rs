//! What every load-thread implementation (HTTP/1.1 and raw TCP over mio, HTTP/2) shares with
//! the run orchestration: its setup, its per-phase totals, and the interval hand-off.

use crate::config::LoadConfig;
use crate::schedule::Schedule;
use candor_core::results::RequestCounts;
use candor_core::{new_histogram, Histo, Recorder};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Histograms and counts of one interval of one worker.
pub struct IntervalData {
    pub rec: Recorder,
    pub completed: u64,
    pub failed: u64,
}

impl Default for IntervalData {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalData {
    pub fn new() -> Self {
        IntervalData {
            rec: Recorder::new(),
            completed: 0,
            failed: 0,
        }
    }
    pub fn reset(&mut self) {
        self.rec.reset();
        self.completed = 0;
        self.failed = 0;
    }
}

pub struct IntervalMsg {
    pub index: u64,
    /// Set on the worker's last (possibly partial) interval: when the worker stopped.
    pub final_end_ns: Option<u64>,
    pub data: Box<IntervalData>,
}

/// What a worker accumulated in one phase (0 = warm-up, 1 = measured).
pub struct PhaseAcc {
    pub rec: Recorder,
    pub unfinished: Histo,
    pub counts: RequestCounts,
    /// Time from TCP connected to TLS handshake complete, per handshake (by completion time).
    pub tls_handshake: Histo,
}

impl Default for PhaseAcc {
    fn default() -> Self {
        Self::new()
    }
}

impl PhaseAcc {
    pub fn new() -> Self {
        PhaseAcc {
            rec: Recorder::new(),
            unfinished: new_histogram(),
            counts: RequestCounts::default(),
            tls_handshake: new_histogram(),
        }
    }
}

/// Everything one load thread needs. `schedule` is `None` in closed-loop mode; the thread must
/// flush an [`IntervalMsg`] at every `config.interval_ns` boundary from `start_ns` (taking fresh
/// boxes from `pool`) and a final one with `final_end_ns` set, and return its two phases
/// (0 = warm-up, 1 = measured, by intended time).
pub struct WorkerSetup {
    pub config: Arc<LoadConfig>,
    /// The prepared requests, chosen per request by `config.request_order`.
    pub requests: Arc<[Prepared]>,
    pub connections: usize,
    pub start_ns: u64,
    /// `None` in closed-loop mode.
    pub schedule: Option<Schedule>,
    pub to_collector: Sender<IntervalMsg>,
    pub pool: Receiver<Box<IntervalData>>,
    pub stop: Arc<AtomicBool>,
    pub on_start: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// One request, encoded once before the run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub bytes: Box<[u8]>,
    /// HEAD responses have no body whatever their headers say.
    pub head: bool,
}
