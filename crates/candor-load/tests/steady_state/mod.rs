//! The allocations the load threads make in a run's steady state, for the zero-allocation tests
//! (each test binary installs `candor_testkit::CountingAllocator` as its global allocator).

use candor_load::load_run::RunOptions;
use candor_load::{RunOutcome, RunPlan};
use std::sync::Arc;

/// The marked (load-thread) allocations between the reports of intervals 1 and 3 of a 5 s run
/// of `config`, and the run's outcome.
///
/// The window is defined by the run's own clock, not by sleeping beside it: from the report of
/// interval 1 (every worker has flushed two intervals: start-up, the pool and its handshakes
/// are over) to that of interval 3, so it spans two interval boundaries and thousands of
/// requests, and ends before the run's last interval and its end-of-run work.
pub fn steady_state_allocations(mut config: RunPlan) -> (u64, RunOutcome) {
    config.duration_ns = 5_000_000_000;
    config.validate().unwrap();
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(candor_testkit::mark_this_thread)),
        ..Default::default()
    };
    let (mut before, mut after) = (None, None);
    let outcome = candor_load::run(&config, options, &mut |report| match report.index {
        1 => before = Some(candor_testkit::marked_allocations()),
        3 => after = Some(candor_testkit::marked_allocations()),
        _ => {}
    })
    .unwrap();
    let (before, after) = (before.expect("interval 1"), after.expect("interval 3"));
    (after - before, outcome)
}
