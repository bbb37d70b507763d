//! Proves that the load threads allocate nothing per request in steady state: a counting global
//! allocator counts allocations made on threads marked by the engine's worker start hook, and the
//! count must not move between two instants well inside a run of thousands of requests.

use candor_load::run::RunOptions;
use candor_load::{LoadConfig, Target};
use std::sync::Arc;
use std::time::Duration;

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
    config.duration_ns = 4_000_000_000;
    config.validate().unwrap();
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(candor_testkit::mark_this_thread)),
        ..Default::default()
    };
    let runner =
        std::thread::spawn(move || candor_load::run(&config, options, &mut |_| {}).unwrap());
    // Start-up (connects, buffers, the first intervals) is over well before 1.5 s; the window
    // 1.5 s .. 3.5 s spans two interval boundaries and thousands of requests.
    std::thread::sleep(Duration::from_millis(1500));
    let before = candor_testkit::marked_allocations();
    std::thread::sleep(Duration::from_millis(2000));
    let after = candor_testkit::marked_allocations();
    let outcome = runner.join().unwrap();
    server.shutdown();
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
