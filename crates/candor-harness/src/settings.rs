//! The harness settings, their documented defaults, and the builder that validates them.

use crate::harness::Harness;
use crate::sampler::ProbeId;
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

/// Everything that shapes a harness run. Build one with [`Harness::builder`].
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

/// Builder for [`Harness`]; every setting has the default documented on [`Config`].
///
/// ```
/// use candor_harness::Harness;
/// let mut builder = Harness::builder()
///     .name("example")
///     .throughput(50_000)
///     .warmup_iterations(1_000)
///     .iterations(5_000)
///     .runs(2)
///     .record_os_jitter(false)
///     .print(false);
/// let parse = builder.add_probe("parse");
/// let mut harness = builder.build().unwrap();
/// let results = harness.run(move |ctx: &mut candor_harness::Iteration| {
///     let t = candor_core::now_ns();
///     let n: u64 = std::hint::black_box("12345").parse().unwrap_or(0);
///     std::hint::black_box(n);
///     ctx.sample(parse, candor_core::now_ns() - t);
/// });
/// assert_eq!(results.runs().len(), 2);
/// assert_eq!(results.runs()[0].end_to_end().len(), 5_000);
/// ```
#[derive(Debug, Clone, Default)]
pub struct HarnessBuilder {
    cfg: Config,
}

impl HarnessBuilder {
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.cfg.name = name.into();
        self
    }
    /// Target iterations per second.
    pub fn throughput(mut self, per_s: u64) -> Self {
        self.cfg.throughput_per_s = per_s as f64;
        self
    }
    /// Target iterations per second, fractional rates allowed.
    pub fn throughput_f64(mut self, per_s: f64) -> Self {
        self.cfg.throughput_per_s = per_s;
        self
    }
    pub fn warmup_iterations(mut self, n: u64) -> Self {
        self.cfg.warmup_iterations = n;
        self
    }
    pub fn iterations(mut self, n: u64) -> Self {
        self.cfg.iterations = n;
        self
    }
    pub fn runs(mut self, n: u32) -> Self {
        self.cfg.runs = n;
        self
    }
    pub fn account_for_coordinated_omission(mut self, on: bool) -> Self {
        self.cfg.account_for_coordinated_omission = on;
        self
    }
    pub fn record_os_jitter(mut self, on: bool) -> Self {
        self.cfg.record_os_jitter = on;
        self
    }
    pub fn jitter_threshold_ns(mut self, ns: u64) -> Self {
        self.cfg.jitter_threshold_ns = ns;
        self
    }
    pub fn pause_after_warmup(mut self, d: Duration) -> Self {
        self.cfg.pause_after_warmup = d;
        self
    }
    pub fn end_to_end_timeout(mut self, d: Duration) -> Self {
        self.cfg.end_to_end_timeout = d;
        self
    }
    pub fn print(mut self, on: bool) -> Self {
        self.cfg.print = on;
        self
    }
    pub fn variation(mut self, v: Variation) -> Self {
        self.cfg.variation = v;
        self
    }

    /// Turns the allocation count into a check: an iteration of a measured run whose code makes
    /// more than `n` allocator calls fails the results (`0`: "this path allocates nothing").
    /// [`build`](Self::build) fails if [`CountingAllocator`](crate::CountingAllocator) is not
    /// the global allocator, since the check could not be made.
    pub fn max_allocations_per_iteration(mut self, n: u64) -> Self {
        self.cfg.max_allocations_per_iteration = Some(n);
        self
    }

    /// See [`Config::forgive_wait_stalls`]: JLBH's accounting of machine stalls that hit the wait.
    pub fn forgive_wait_stalls(mut self, on: bool) -> Self {
        self.cfg.forgive_wait_stalls = on;
        self
    }

    /// Registers a probe: a named histogram for a stage of an iteration (JLBH `addProbe`).
    /// Record into it with [`Iteration::sample`](crate::Iteration::sample) or
    /// [`Sampler::sample`](crate::Sampler::sample). Probe samples are durations the benchmark
    /// measured itself; unlike end-to-end samples they are not corrected for coordinated omission.
    pub fn add_probe(&mut self, name: impl Into<String>) -> ProbeId {
        self.cfg.probes.push(name.into());
        ProbeId(self.cfg.probes.len() - 1)
    }

    /// The settings so far.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Validates the settings.
    pub fn build(self) -> Result<Harness, HarnessError> {
        let c = &self.cfg;
        if !(c.throughput_per_s.is_finite() && c.throughput_per_s > 0.0) {
            return Err(HarnessError::Throughput(c.throughput_per_s));
        }
        if c.iterations == 0 {
            return Err(HarnessError::NoIterations);
        }
        if c.runs == 0 {
            return Err(HarnessError::NoRuns);
        }
        if c.jitter_threshold_ns == 0 {
            return Err(HarnessError::JitterThreshold);
        }
        for (i, p) in c.probes.iter().enumerate() {
            let reserved = ["end to end", "os jitter"].contains(&p.to_lowercase().as_str());
            if p.trim().is_empty() || reserved || c.probes[..i].contains(p) {
                return Err(HarnessError::ProbeName(p.clone()));
            }
        }
        if c.max_allocations_per_iteration.is_some() && !crate::CountingAllocator::is_installed() {
            return Err(HarnessError::AllocationsNotCounted);
        }
        Ok(Harness::new(self.cfg))
    }
}
