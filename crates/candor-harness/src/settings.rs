//! The harness settings, their documented defaults, and the errors of building or using a
//! harness (the builder that validates the settings is `builder.rs`).

use crate::summary::Variation;
use serde::Serialize;
use std::time::Duration;

/// Errors building or using a harness.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("throughput must be a positive, finite number of iterations per second (got {0})")]
    Throughput(f64),
    #[error("iterations per run must be at least 1")]
    NoIterations,
    #[error("runs must be at least 1")]
    NoRuns,
    #[error("jitter threshold must be at least 1 ns")]
    JitterThreshold,
    #[error("probe name {0:?} is empty or already used")]
    ProbeName(String),
    #[error("could not start the jitter monitor thread: {0}")]
    JitterThread(std::io::Error),
    #[error(
        "max_allocations_per_iteration is set but allocations cannot be counted: install \
         candor_harness::CountingAllocator as the #[global_allocator]"
    )]
    AllocationsNotCounted,
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Everything that shapes a harness run. Build one with [`Harness::builder`](crate::Harness::builder).
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Label for reports and JSON (`target`). Default `"benchmark"`.
    pub name: String,
    /// Target iterations per second. Default 10,000 (JLBH's default).
    pub throughput_per_s: f64,
    /// Iterations run before the measured runs, back to back (not paced) as JLBH does, and
    /// reported separately. Default 10,000.
    pub warmup_iterations: u64,
    /// Iterations per measured run. Default 100,000.
    pub iterations: u64,
    /// Measured runs. Default 3.
    pub runs: u32,
    /// True (the default): a fixed schedule, and end-to-end times from each intended start.
    /// False (JLBH's `accountForCoordinatedOmission(false)`, to show what coordinated omission
    /// hides): end-to-end times from the actual start, and an iteration found already late
    /// restarts the schedule from now, so the waits caused by slow iterations are forgotten.
    pub account_for_coordinated_omission: bool,
    /// Run the platform jitter monitor thread. Default true. It spins on a core for the whole
    /// benchmark, so turn it off when the benchmark needs every core.
    pub record_os_jitter: bool,
    /// Clock gaps above this are recorded by the jitter monitor. Default 1,000 ns.
    pub jitter_threshold_ns: u64,
    /// Sleep after the warm-up (e.g. to let JIT-like caches or a server settle). Default 0.
    #[serde(serialize_with = "ser_duration_ns")]
    pub pause_after_warmup: Duration,
    /// How long a run waits at its end for end-to-end samples still to come from other threads
    /// (see [`Sampler`](crate::Sampler)). Default 10 s.
    #[serde(serialize_with = "ser_duration_ns")]
    pub end_to_end_timeout: Duration,
    /// Print each run's lines and the summary to stdout as JLBH does. Default true.
    pub print: bool,
    /// Formula of the "% Variation" column. Default [`Variation::Jlbh`].
    pub variation: Variation,
    /// Names of the probes, in registration order.
    pub probes: Vec<String>,
    /// Most allocator calls (allocations + reallocations) the measured code may make in one
    /// iteration of a run; more makes the results fail ([`HarnessResults::failure`]). Needs
    /// [`CountingAllocator`] installed. Default none (counted, if installed, but not checked).
    ///
    /// [`HarnessResults::failure`]: crate::HarnessResults::failure
    /// [`CountingAllocator`]: crate::CountingAllocator
    pub max_allocations_per_iteration: Option<u64>,
    /// False (the default): a stall of the benchmark thread while it waits for an iteration's
    /// start (the machine took the CPU) delays that iteration and the ones due during it, and
    /// end-to-end times include it, as a request arriving then would have waited. True: JLBH's
    /// accounting, for comparisons with it: after such a stall (a clock gap above
    /// `jitter_threshold_ns` in the wait) the schedule restarts from the wake-up, so the stall
    /// is left out (counted in [`RunData::forgiven_stalls`](crate::RunData::forgiven_stalls)
    /// and a warning). Only with correction on.
    pub forgive_wait_stalls: bool,
}

fn ser_duration_ns<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_nanos().min(u64::MAX as u128) as u64)
}

impl Default for Config {
    fn default() -> Self {
        Config {
            name: "benchmark".into(),
            throughput_per_s: 10_000.0,
            warmup_iterations: 10_000,
            iterations: 100_000,
            runs: 3,
            account_for_coordinated_omission: true,
            record_os_jitter: true,
            jitter_threshold_ns: 1_000,
            pause_after_warmup: Duration::ZERO,
            end_to_end_timeout: Duration::from_secs(10),
            print: true,
            variation: Variation::Jlbh,
            probes: Vec::new(),
            max_allocations_per_iteration: None,
            forgive_wait_stalls: false,
        }
    }
}

impl Config {
    /// Nanoseconds between intended starts.
    pub fn interval_ns(&self) -> f64 {
        1e9 / self.throughput_per_s
    }
}
