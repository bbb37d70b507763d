//! One phase of a harness session (the warm-up or a measured run) and its measurements.

use crate::alloc::AllocStats;
use crate::phased::{E2E, SERVICE};
use crate::sampler::ProbeId;
use candor_core::hist::Histo;

/// Which part of a harness session a piece of data comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Phase {
    /// Unpaced warm-up iterations (excluded from the results).
    Warmup,
    /// Measured run number `n`, from 1.
    Run(u32),
}

/// One phase's measurements.
#[derive(Debug, Clone)]
pub struct RunData {
    pub(crate) phase: Phase,
    pub(crate) start_ns: u64,
    pub(crate) duration_ns: u64,
    pub(crate) iterations: u64,
    pub(crate) scheduled_ns: u64,
    /// End to end, service, then probes.
    pub(crate) hists: Vec<Histo>,
    pub(crate) send_lag: Histo,
    /// The longest clock gap of each wait for the schedule that had one above the jitter
    /// threshold: the benchmark thread descheduled or interrupted while it waited.
    pub(crate) wait_stalls: Histo,
    /// Stalls forgiven (`forgive_wait_stalls`) and the start lag they would have added, ns.
    pub(crate) forgiven_stalls: (u64, u64),
    pub(crate) jitter: Option<Histo>,
    pub(crate) clamped: u64,
    pub(crate) misrouted: u64,
    pub(crate) handed_off: u64,
    pub(crate) missing_end_to_end: u64,
    pub(crate) late_samples: u64,
    /// `None` when [`CountingAllocator`](crate::CountingAllocator) is not installed.
    pub(crate) allocations: Option<AllocStats>,
}

impl RunData {
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Iterations started.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }
    /// From the first iteration's start to the last one's end (harness clock).
    pub fn duration_ns(&self) -> u64 {
        self.duration_ns
    }
    /// Start of the phase on the harness clock.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    /// End-to-end times, measured from each iteration's intended start.
    pub fn end_to_end(&self) -> &Histo {
        &self.hists[E2E]
    }
    /// Service times, measured from each iteration's actual start.
    pub fn service_time(&self) -> &Histo {
        &self.hists[SERVICE]
    }
    /// Actual start minus intended start, per iteration.
    pub fn send_lag(&self) -> &Histo {
        &self.send_lag
    }
    /// A probe's histogram.
    pub fn probe(&self, p: ProbeId) -> Option<&Histo> {
        self.hists.get(p.slot())
    }
    /// Stalls of the benchmark thread while it waited for an iteration's intended start (the
    /// longest clock gap of each such wait above the jitter threshold): the machine took the CPU.
    /// The iterations due meanwhile start late, and their end-to-end times include it.
    pub fn wait_stalls(&self) -> &Histo {
        &self.wait_stalls
    }
    /// With `forgive_wait_stalls`: how many stalls restarted the schedule, and the total start
    /// lag they left out of the end-to-end times (ns).
    pub fn forgiven_stalls(&self) -> (u64, u64) {
        self.forgiven_stalls
    }
    /// Clock gaps seen by the jitter monitor during this phase, if it ran.
    pub fn jitter(&self) -> Option<&Histo> {
        self.jitter.as_ref()
    }
    /// Iterations handed off to another thread whose end-to-end sample never arrived.
    pub fn missing_end_to_end(&self) -> u64 {
        self.missing_end_to_end
    }
    /// Values above one hour, recorded as one hour.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    /// What the measured code allocated on the benchmark thread, per iteration; `None` (not
    /// zero) when [`CountingAllocator`](crate::CountingAllocator) is not the global allocator.
    pub fn allocations(&self) -> Option<&AllocStats> {
        self.allocations.as_ref()
    }
    /// Throughput actually achieved: iterations per second of run time.
    pub fn achieved_per_s(&self) -> f64 {
        if self.duration_ns == 0 {
            0.0
        } else {
            self.iterations as f64 * 1e9 / self.duration_ns as f64
        }
    }
}
