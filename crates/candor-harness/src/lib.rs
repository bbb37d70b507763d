//! candor-harness: latency benchmarks of code in context, the JLBH way: iterations paced at a
//! target throughput and measured from their intended start (coordinated-omission correction),
//! warm-up and several runs with a summary across them, probes, samplers for other threads, and
//! a platform jitter monitor. Results come back as values and as candor's results JSON.
//!
//! ```no_run
//! use candor_harness::{Harness, Iteration};
//! let mut harness = Harness::builder().throughput(100_000).iterations(1_000_000).build()?;
//! let results = harness.run(|_ctx: &mut Iteration| {
//!     std::hint::black_box((0..100u64).sum::<u64>());
//! });
//! results.write_json("harness.json")?;
//! # Ok::<(), candor_harness::HarnessError>(())
//! ```
//!
//! See docs/harness.md for the design and measured examples.

mod alloc;
mod builder;
mod clock;
mod engine;
mod jitter;
mod phased;
mod results;
mod run_data;
mod sampler;
mod settings;
pub mod summary;
mod tables;
mod text;

pub use alloc::{AllocCounts, AllocStats, AllocationFailure, CountingAllocator};
pub use builder::HarnessBuilder;
/// The ratio rows of the summaries' comparisons with run 1, as `candor compare` gives them.
pub use candor_analysis::compare_ci::{Method, RatioComparison, RatioRow, Verdict};
pub use candor_analysis::repeats::{Rule, DEFAULT_THRESHOLD};
/// The monotonic clock the harness times with (CLOCK_MONOTONIC, ns), for timing a probe's stretch
/// of code: re-exported so that a benchmark needs no other crate than this one.
pub use candor_core::now_ns;
pub use clock::{Clock, ManualClock, MonotonicClock, Wake};
pub use engine::{Benchmark, Harness, Iteration};
pub use results::HarnessResults;
pub use run_data::{Phase, RunData};
pub use sampler::{ProbeId, Sampler, Stamp};
pub use settings::{Config, HarnessError};
pub use summary::Variation;
pub use tables::{ratio_cell, RunComparison, SummaryRow, SummaryTable};
pub use text::{comparison_text, histogram_line, run_text, warmup_text};

// The unit tests read real allocation counts (alloc.rs, engine.rs); per-thread counters keep
// libtest's parallel tests out of each other's numbers.
#[cfg(test)]
#[global_allocator]
static TEST_ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// `docs/harness.md`, whose Rust blocks are compiled (and run, unless marked `no_run`) as doc-tests of
/// this crate: the documented code is code that compiles as written.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/harness.md")]
pub struct HarnessGuide;
