//! What every load-thread implementation (HTTP/1.1 and raw TCP over mio, HTTP/2) shares with
//! the run orchestration: its setup, its per-phase totals, and the interval hand-off.

use crate::config::LoadConfig;
use crate::schedule::Schedule;
use candor_core::hist::record_clamped;
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
    /// How the worker's phase counts (0 = warm-up, 1 = measured) grew during this interval; taken
    /// once per interval at the flush, so the per-request path is unchanged.
    pub counts: [RequestCounts; 2],
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
        }
    }
    pub fn reset(&mut self) {
        self.rec.reset();
        self.completed = 0;
        self.failed = 0;
        self.counts = [RequestCounts::default(); 2];
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

/// Why a request failed; every failed request is counted in exactly one class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Failure {
    Connect,
    Read,
    Write,
    Timeout,
    Parse,
}

/// A load thread's books: the two phases' recorders and counts, the current interval, and the
/// hand-off of finished intervals to the collector. Every engine records through it, so the
/// accounting rules (phase by intended time, timeouts record their age, the never-sent backlog
/// counted entry by entry) are written once.
pub struct Ledger {
    pub phases: [PhaseAcc; 2],
    interval: Box<IntervalData>,
    interval_index: u64,
    /// The next interval boundary (absolute ns); engines wake for it.
    pub next_boundary_ns: u64,
    interval_ns: u64,
    pub warmup_end_ns: u64,
    has_warmup: bool,
    to_collector: Sender<IntervalMsg>,
    pool: Receiver<Box<IntervalData>>,
    /// The phase counts as of the previous flush (the base of the next interval's growth).
    flushed_counts: [RequestCounts; 2],
}

/// `now - before`, field by field: what a worker's counts grew by between two flushes.
pub fn counts_growth(now: &RequestCounts, before: &RequestCounts) -> RequestCounts {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let (e, f) = (&now.errors, &before.errors);
    let (s, t) = (&now.status, &before.status);
    RequestCounts {
        intended: d(now.intended, before.intended),
        completed: d(now.completed, before.completed),
        failed: d(now.failed, before.failed),
        in_flight_at_end: d(now.in_flight_at_end, before.in_flight_at_end),
        sent_unanswered: d(now.sent_unanswered, before.sent_unanswered),
        queued_unsent: d(now.queued_unsent, before.queued_unsent),
        errors: candor_core::results::ErrorCounts {
            connect: d(e.connect, f.connect),
            read: d(e.read, f.read),
            write: d(e.write, f.write),
            timeout: d(e.timeout, f.timeout),
            parse: d(e.parse, f.parse),
        },
        status: candor_core::results::StatusCounts {
            s1xx: d(s.s1xx, t.s1xx),
            s2xx: d(s.s2xx, t.s2xx),
            s3xx: d(s.s3xx, t.s3xx),
            s4xx: d(s.s4xx, t.s4xx),
            s5xx: d(s.s5xx, t.s5xx),
        },
        bytes_written: d(now.bytes_written, before.bytes_written),
        bytes_read: d(now.bytes_read, before.bytes_read),
        clamped_values: d(now.clamped_values, before.clamped_values),
        generator_late: d(now.generator_late, before.generator_late),
    }
}

/// A send this much after its intended time, on a slot that had been free since before that
/// time, is the generator's own lateness (a spin-paced loop is normally within microseconds).
pub const GENERATOR_LATE_NS: u64 = 1_000_000;

impl Ledger {
    pub fn new(setup: &WorkerSetup) -> Ledger {
        let cfg = &setup.config;
        Ledger {
            phases: [PhaseAcc::new(), PhaseAcc::new()],
            interval: setup
                .pool
                .try_recv()
                .unwrap_or_else(|_| Box::new(IntervalData::new())),
            interval_index: 0,
            next_boundary_ns: setup.start_ns + cfg.interval_ns,
            interval_ns: cfg.interval_ns,
            warmup_end_ns: setup.start_ns + cfg.warmup_ns,
            has_warmup: cfg.warmup_ns > 0,
            to_collector: setup.to_collector.clone(),
            pool: setup.pool.clone(),
            flushed_counts: [RequestCounts::default(); 2],
        }
    }

    /// 0 = warm-up, 1 = measured, decided by the request's intended time.
    #[inline]
    pub fn phase_of(&self, intended: u64) -> usize {
        (intended >= self.warmup_end_ns) as usize
    }

    /// A request left the schedule at `now` on a slot free since `free_since`.
    #[inline]
    pub fn intend(&mut self, intended: u64, now: u64, free_since: u64) {
        let phase = self.phase_of(intended);
        let counts = &mut self.phases[phase].counts;
        counts.intended += 1;
        if now > intended + GENERATOR_LATE_NS && free_since <= intended {
            counts.generator_late += 1;
        }
    }

    /// A full response arrived at `now`; `status` 0 means the protocol has none (raw TCP).
    #[inline]
    pub fn complete(&mut self, intended: u64, sent: u64, now: u64, status: u16) {
        let response = now.saturating_sub(intended);
        let service = now.saturating_sub(sent);
        let lag = sent.saturating_sub(intended);
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.rec.record(response, service, lag);
        p.counts.completed += 1;
        if status != 0 {
            p.counts.status.count(status);
        }
        self.interval.rec.record(response, service, lag);
        self.interval.completed += 1;
    }

    /// A request failed at `now`. Timeouts also record their latency so far: a request that
    /// never came back is at least that slow, and must not look fast by its absence.
    pub fn fail(&mut self, kind: Failure, intended: u64, sent: Option<u64>, now: u64) {
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.counts.failed += 1;
        let e = &mut p.counts.errors;
        match kind {
            Failure::Connect => e.connect += 1,
            Failure::Read => e.read += 1,
            Failure::Write => e.write += 1,
            Failure::Timeout => e.timeout += 1,
            Failure::Parse => e.parse += 1,
        }
        if kind == Failure::Timeout {
            let response = now.saturating_sub(intended);
            p.counts.clamped_values += record_clamped(&mut p.rec.response, response) as u64;
            record_clamped(&mut self.interval.rec.response, response);
            if let Some(sent) = sent {
                let service = now.saturating_sub(sent);
                p.counts.clamped_values += record_clamped(&mut p.rec.service, service) as u64;
                record_clamped(&mut self.interval.rec.service, service);
            }
        }
        self.interval.failed += 1;
    }

    /// A TLS handshake took `ns` and ended at `now`: handshakes before the end of the warm-up
    /// belong to it if there is one; otherwise (pre-connects included) to the measured phase,
    /// never to a phase that is not reported.
    pub fn tls_handshake(&mut self, ns: u64, now: u64) {
        let phase = usize::from(now >= self.warmup_end_ns || !self.has_warmup);
        record_clamped(&mut self.phases[phase].tls_handshake, ns);
    }

    /// Hands every interval that ended by `now` to the collector.
    pub fn flush_due(&mut self, now: u64) {
        while now >= self.next_boundary_ns {
            self.flush(None);
        }
    }

    fn flush(&mut self, final_end_ns: Option<u64>) {
        // A recycled box from the collector; a new one only if the collector fell behind.
        let fresh = self
            .pool
            .try_recv()
            .unwrap_or_else(|_| Box::new(IntervalData::new()));
        let mut data = std::mem::replace(&mut self.interval, fresh);
        for (i, p) in self.phases.iter().enumerate() {
            data.counts[i] = counts_growth(&p.counts, &self.flushed_counts[i]);
            self.flushed_counts[i] = p.counts;
        }
        // The collector drains continuously; a blocking send only waits if it is seconds behind.
        let _ = self.to_collector.send(IntervalMsg {
            index: self.interval_index,
            final_end_ns,
            data,
        });
        self.interval_index += 1;
        self.next_boundary_ns += self.interval_ns;
    }

    /// A request still outstanding when the run ended: written (`sent`) or still queued.
    pub fn unfinished(&mut self, intended: u64, sent: bool, now: u64) {
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.counts.in_flight_at_end += 1;
        if sent {
            p.counts.sent_unanswered += 1;
        } else {
            p.counts.queued_unsent += 1;
        }
        record_clamped(&mut p.unfinished, now.saturating_sub(intended));
    }

    /// Closes the books: the due but never sent rest of the schedule (counted entry by entry, no
    /// formula, so the count is exactly what the schedule generated), the clamped counts, and the
    /// final partial interval. Returns the two phases.
    pub fn finish(
        &mut self,
        schedule: Option<&mut Schedule>,
        schedule_end_ns: u64,
        now: u64,
    ) -> [PhaseAcc; 2] {
        if let Some(s) = schedule {
            while s.peek() < schedule_end_ns {
                let t = s.peek();
                self.phases[self.phase_of(t)].counts.intended += 1;
                self.unfinished(t, false, now);
                s.advance();
            }
        }
        for p in &mut self.phases {
            p.counts.clamped_values += p.rec.clamped;
        }
        self.flush(Some(now));
        std::mem::take(&mut self.phases)
    }
}
