//! What the load threads share with the run orchestration: their setup, their per-phase totals,
//! the interval hand-off, the early-end requests, the failure classes, and why a thread failed.

pub use crate::books::PhaseAcc;
use crate::config::LoadConfig;
use crate::schedule::Schedule;
pub use candor_core::early_end::EarlyEnd;
use candor_core::results::RequestCounts;
use candor_core::Recorder;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why a load thread ended without its phases; the run reports it as `a load thread failed: …`.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The thread's poll, timer or pool could not be set up.
    #[error(transparent)]
    Setup(#[from] std::io::Error),
    /// The run was stopped while the pools were still opening.
    #[error("{}", crate::pool::NO_START)]
    NoStart,
    /// The thread's schedule (a replay trace's, say) could not be opened at the start.
    #[error("opening the schedule: {0}")]
    Schedule(std::io::Error),
    /// The protocol's own reasons (HTTP/2: the server does not speak it, a request has no
    /// HTTP/2 form), in the protocol's words.
    #[error(transparent)]
    Protocol(Box<dyn std::error::Error + Send + Sync>),
    /// The thread panicked (the panic's message went to stderr).
    #[error("panicked")]
    Panicked,
    /// The thread panicked, with this message.
    #[error("panicked: {0}")]
    PanickedWith(String),
}

/// A panic's message, as `panic!` was given it.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The warning that names a load thread's failure in the results.
pub fn thread_failure_warning(thread: &str, message: &str) -> String {
    format!(
        "load thread '{thread}' failed (panicked: {message}); the run was ended there and these \
         results cover what was measured until then"
    )
}

/// Histograms and counts of one interval of one worker.
pub struct IntervalData {
    pub rec: Recorder,
    pub completed: u64,
    pub failed: u64,
    /// How the worker's phase counts (0 = warm-up, 1 = measured) grew during this interval; taken
    /// once per interval at the flush, so the per-request path is unchanged.
    pub counts: [RequestCounts; 2],
    /// Responses of this interval by status code, per phase (0 = warm-up, 1 = measured).
    pub codes: [candor_core::results::CodeCounts; 2],
    /// gRPC calls of this interval by `grpc-status`, per phase.
    pub reply_codes: [candor_core::reply_codes::ReplyCodeCounts; 2],
    /// The streamed responses that ended in this interval, both phases together as the
    /// histograms in `rec` (runs with `--stream` or `--llm` only).
    pub stream: Option<Box<crate::books::StreamAcc>>,
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
            counts: [RequestCounts::default(); 2],
            codes: Default::default(),
            reply_codes: Default::default(),
            stream: None,
        }
    }

    /// An interval's books for a run that reads responses as streams (`streams`) or not.
    pub fn for_streams(streams: bool) -> Self {
        IntervalData {
            stream: streams.then(Box::default),
            ..Self::new()
        }
    }
    pub fn reset(&mut self) {
        self.rec.reset();
        self.completed = 0;
        self.failed = 0;
        self.counts = [RequestCounts::default(); 2];
        for c in &mut self.codes {
            c.reset();
        }
        self.reply_codes = Default::default();
        if let Some(s) = &mut self.stream {
            s.reset();
        }
    }
}

pub struct IntervalMsg {
    pub index: u64,
    /// Set on the worker's last (possibly partial) interval: when the worker stopped.
    pub final_end_ns: Option<u64>,
    pub data: Box<IntervalData>,
}

/// Everything one load thread needs. `schedule` is `None` in closed-loop mode; the thread must
/// flush an [`IntervalMsg`] at every `config.interval_ns` boundary from `start_ns` (taking fresh
/// boxes from `pool`) and a final one with `final_end_ns` set, and return its two phases
/// (0 = warm-up, 1 = measured, by intended time).
pub struct WorkerSetup {
    pub config: Arc<LoadConfig>,
    /// The prepared requests, chosen per request by `config.request_order`.
    pub requests: Arc<[Prepared]>,
    /// The run's requests compiled once before its threads start (HTTP requests only): their
    /// templates, names, weights, statuses and checks, for every thread of a target to share.
    pub compiled: Option<Arc<candor_workload::CompiledRequests>>,
    /// What the protocol's requests are, and how many a connection carries at once.
    pub requests_are: crate::seam::carrying::RequestKind,
    pub slots: crate::seam::carrying::Slots,
    pub connections: usize,
    pub start_ns: u64,
    /// `None` in closed-loop mode.
    pub schedule: Option<Schedule>,
    pub to_collector: Sender<IntervalMsg>,
    pub pool: Receiver<Box<IntervalData>>,
    pub stop: Arc<AtomicBool>,
    /// An early end asked for by the run's owner (see [`EarlyEnd`]).
    pub end: Arc<EarlyEnd>,
    pub on_start: Option<Arc<dyn Fn() + Send + Sync>>,
    /// This thread's place among all streams of the schedule (shards times threads): its k-th
    /// entry is entry `k * seq_stride + seq_lane` of the whole schedule (also in closed loop).
    pub seq_lane: u64,
    pub seq_stride: u64,
}

/// Both ways a run ends early, as the engines poll them.
#[derive(Clone)]
pub struct Halt {
    /// A signal: stop at once.
    pub signal: Arc<AtomicBool>,
    pub end: Arc<EarlyEnd>,
}

impl Halt {
    /// Stop at once: no more sends and no drain.
    pub fn aborting(&self) -> bool {
        self.signal.load(Ordering::Relaxed) || self.end.aborting()
    }
}

/// One request, encoded once before the run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub bytes: Box<[u8]>,
    /// HEAD responses have no body whatever their headers say.
    pub head: bool,
}

/// Why a request failed; every failed request is counted in exactly one class (the one
/// failure-class type of the engine, the results and the reports).
pub use candor_core::results::FailureClass;

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::StopReason;

    #[test]
    fn a_halt_aborts_on_a_signal_or_an_abort_and_not_on_a_precision_end() {
        let halt = |signal: bool, reason: Option<StopReason>| {
            let end = EarlyEnd::default();
            if let Some(r) = reason {
                end.request(r);
            }
            Halt {
                signal: Arc::new(AtomicBool::new(signal)),
                end: Arc::new(end),
            }
            .aborting()
        };
        assert!(halt(true, None));
        assert!(halt(false, Some(StopReason::Abort)));
        assert!(!halt(false, Some(StopReason::Precision)));
        assert!(!halt(false, None));
    }
}
