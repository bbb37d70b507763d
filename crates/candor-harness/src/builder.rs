//! The builder of a harness: settings one at a time, then validated once.

use crate::engine::Harness;
use crate::sampler::ProbeId;
use crate::settings::{Config, HarnessError};
use crate::summary::Variation;
use std::time::Duration;

// Here rather than beside `Harness`, so that the engine does not depend on its builder.
impl Harness {
    /// A builder with the defaults documented on [`Config`].
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
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
        if c.max_allocations_per_iteration.is_some()
            && !crate::alloc::CountingAllocator::is_installed()
        {
            return Err(HarnessError::AllocationsNotCounted);
        }
        Ok(Harness::new(self.cfg))
    }
}
