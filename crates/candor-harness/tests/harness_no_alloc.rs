//! Proves requirement 6: in steady state an iteration allocates nothing, on any thread. A counting
//! global allocator sees every allocation in the process; the benchmark reads the count at its
//! 2,000th iteration and at its last, in each run, while the harness paces, records the
//! end-to-end time and two probes, the jitter monitor spins on the other core and a second thread
//! records each iteration's end and a probe through a `Sampler`.
//! (`harness = false`: libtest's own threads would otherwise share the counter.)

use candor_harness::{Harness, Iteration, Phase, Stamp};
use std::sync::mpsc::sync_channel;

#[global_allocator]
static ALLOCATOR: candor_harness::CountingAllocator = candor_harness::CountingAllocator;

const ITERATIONS: u64 = 20_000;

fn main() {
    let mut b = Harness::builder()
        .throughput(20_000)
        .warmup_iterations(2_000)
        .iterations(ITERATIONS)
        .runs(2)
        .record_os_jitter(true)
        .print(false);
    let local_probe = b.add_probe("local");
    let remote_probe = b.add_probe("remote");
    let mut h = b.build().expect("valid settings");

    // Room for 3 s of lag, so that sends never block: a first blocking send would allocate the
    // channel's waiter list, which is the test's plumbing, not the harness.
    let (tx, rx) = sync_channel::<Stamp>(1 << 16);
    let mut sampler = h.sampler();
    let worker = std::thread::spawn(move || {
        while let Ok(stamp) = rx.recv() {
            let end = sampler.end_to_end_now(stamp);
            sampler.sample(remote_probe, end - stamp.actual_ns);
        }
    });

    let mut window_start = 0u64;
    let mut during_runs = Vec::with_capacity(4);
    let results = h.run(|ctx: &mut Iteration| {
        let t = ctx.now_ns();
        ctx.sample(local_probe, ctx.now_ns() - t);
        let stamp = ctx.hand_off();
        tx.send(stamp).expect("worker alive");
        if ctx.phase() != Phase::Warmup {
            if ctx.index() == 2_000 {
                window_start = candor_harness::CountingAllocator::total_calls();
            } else if ctx.index() == ITERATIONS - 1 {
                during_runs.push(candor_harness::CountingAllocator::total_calls() - window_start);
            }
        }
    });
    drop(tx);
    worker.join().expect("worker finished");

    for r in results.runs() {
        assert_eq!(r.end_to_end().len(), ITERATIONS, "every end arrived");
        assert_eq!(r.probe(remote_probe).map(|h| h.len()), Some(ITERATIONS));
        assert!(r.jitter().is_some());
    }
    assert_eq!(during_runs.len(), 2);
    println!(
        "allocations during iterations 2000..{} of each run: {:?}",
        ITERATIONS - 1,
        during_runs
    );
    assert!(
        during_runs.iter().all(|&n| n == 0),
        "steady-state iterations allocated: {during_runs:?}"
    );
    // The counter does work: building the results allocated.
    assert!(candor_harness::CountingAllocator::total_calls() > 0);
    println!("no_alloc: ok");
}
