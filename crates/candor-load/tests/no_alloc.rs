//! Proves that the load threads allocate nothing per request in steady state: a counting global
//! allocator counts allocations made on threads marked by the engine's worker start hook, and the
//! count must not move between two interval reports well inside a run of thousands of requests.

use candor_load::run::RunOptions;
use candor_load::{LoadConfig, Target};
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

fn steady_state_allocations(rate: Option<f64>) -> (u64, u64) {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config =
        LoadConfig::new(Target::parse(&format!("http://{}/", server.local_addr())).unwrap());
    config.rate = rate;
    config.connections = 8;
    config.threads = 2;
    config.duration_ns = 5_000_000_000;
    config.validate().unwrap();
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(candor_testkit::mark_this_thread)),
        ..Default::default()
    };
    // The window is defined by the run's own clock, not by sleeping beside it: from the report
    // of interval 1 (every worker has flushed two intervals: start-up is over) to that of
    // interval 3, so it spans two interval boundaries and thousands of requests, and ends before
    // the run's last interval and its end-of-run work.
    let (mut before, mut after) = (None, None);
    let outcome = candor_load::run(&config, options, &mut |report| match report.index {
        1 => before = Some(candor_testkit::marked_allocations()),
        3 => after = Some(candor_testkit::marked_allocations()),
        _ => {}
    })
    .unwrap();
    server.shutdown();
    let (before, after) = (before.expect("interval 1"), after.expect("interval 3"));
    (after - before, outcome.main.counts.completed)
}

#[test]
fn load_threads_do_not_allocate_per_request() {
    let (open_allocs, open_done) = steady_state_allocations(Some(5000.0));
    assert!(open_done >= 15_000, "open loop completed only {open_done}");
    assert_eq!(
        open_allocs, 0,
        "open-loop workers allocated {open_allocs} times in steady state"
    );
    let (closed_allocs, closed_done) = steady_state_allocations(None);
    assert!(
        closed_done >= 15_000,
        "closed loop completed only {closed_done}"
    );
    assert_eq!(
        closed_allocs, 0,
        "closed-loop workers allocated {closed_allocs} times in steady state"
    );
}
