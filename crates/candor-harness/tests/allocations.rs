//! Allocation counting through the real engine, exactly: with `CountingAllocator` installed, a
//! benchmark that allocates a known number of times on known iterations must be reported with
//! exactly those numbers, per run and merged, in the values, the text and the JSON; and
//! `max_allocations_per_iteration` must name the first offending iteration.

use candor_harness::{
    AllocationFailure, CountingAllocator, Harness, HarnessResults, Iteration, ManualClock,
};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

const ITERATIONS: u64 = 700;
const EVERY: u64 = 7;
const K: u64 = 3;

/// K boxed 24-byte allocations on every iteration whose index is 3 mod 7 (both runs and the
/// warm-up), nothing otherwise; `end_now` and a probe sample on every iteration.
fn run(limit: Option<u64>) -> HarnessResults {
    let clock = ManualClock::new(1_000);
    let mut b = Harness::builder()
        .name("alloc test")
        .throughput(100_000)
        .warmup_iterations(50)
        .iterations(ITERATIONS)
        .runs(2)
        .record_os_jitter(false)
        .print(false);
    if let Some(l) = limit {
        b = b.max_allocations_per_iteration(l);
    }
    let probe = b.add_probe("p");
    let mut h = b.build().expect("allocator installed");
    h.run_with_clock(&clock, |ctx: &mut Iteration| {
        clock.advance(1_000);
        if ctx.index() % EVERY == 3 {
            for _ in 0..K {
                // black_box: without it the optimiser may remove a malloc/free pair.
                std::hint::black_box(Box::new(std::hint::black_box([0u8; 24])));
            }
        }
        ctx.sample(probe, 5);
        ctx.end_now();
    })
}

#[test]
fn counts_exactly_what_the_measured_code_allocates() {
    let r = run(None);
    // Indices 3, 10, ..., 696 of 700: 100 allocating iterations per run.
    for run in r.runs() {
        let a = run.allocations().expect("counted");
        assert_eq!(a.iterations, ITERATIONS);
        assert_eq!(a.iterations_allocating, 100);
        assert_eq!(a.calls, 100 * K);
        assert_eq!(a.reallocations, 0);
        assert_eq!(a.bytes, 100 * K * 24);
        assert_eq!(a.max_per_iteration, K);
        assert_eq!(a.first_over_limit, None);
    }
    let m = r.allocations().expect("counted");
    assert_eq!(m.iterations, 2 * ITERATIONS);
    assert_eq!(m.calls, 2 * 100 * K);
    assert_eq!(m.per_iteration_mean(), 600.0 / 1400.0);
    assert_eq!(m.bytes_per_iteration_mean(), 600.0 * 24.0 / 1400.0);
    assert_eq!(m.allocating_share(), 200.0 / 1400.0);
    assert!(r.passed(), "no limit, no failure");
    let text = r.text();
    assert!(
        text.contains("max 3, bytes mean 10.286, 100 of 700 iterations allocated (14.29%)"),
        "{text}"
    );
    assert!(!text.contains("PASS") && !text.contains("FAIL"), "{text}");
}

#[test]
fn the_harness_own_work_is_not_counted() {
    let clock = ManualClock::new(0);
    let mut b = Harness::builder()
        .throughput(100_000)
        .warmup_iterations(10)
        .iterations(5_000)
        .runs(2)
        .record_os_jitter(false)
        .print(false);
    let probe = b.add_probe("p");
    let mut h = b.build().unwrap();
    let r = h.run_with_clock(&clock, |ctx: &mut Iteration| {
        clock.advance(3_000);
        ctx.sample(probe, 7);
    });
    let m = r.allocations().expect("counted");
    assert_eq!(m.iterations, 10_000);
    assert_eq!(m.calls, 0);
    assert_eq!(m.bytes, 0);
    assert_eq!(m.max_per_iteration, 0);
}

#[test]
fn max_allocations_fails_naming_the_first_offending_iteration() {
    let r = run(Some(K - 1));
    assert!(!r.passed());
    assert_eq!(
        r.failure(),
        Some(&AllocationFailure {
            run: 1,
            iteration: 3,
            allocations: K,
            limit: K - 1
        })
    );
    let text = r.text();
    assert!(
        text.contains(
            "FAIL: run 1, iteration 3: 3 allocations, above max_allocations_per_iteration 2"
        ),
        "{text}"
    );
    let json = r.to_json_value();
    assert_eq!(json["allocations"]["limit"], 2);
    assert_eq!(json["allocations"]["failure"]["run"], 1);
    assert_eq!(json["allocations"]["failure"]["iteration"], 3);
    assert_eq!(json["allocations"]["failure"]["allocations"], 3);
}

#[test]
fn max_allocations_passes_at_the_limit() {
    let r = run(Some(K));
    assert!(r.passed());
    assert_eq!(r.failure(), None);
    assert!(
        r.text()
            .contains("PASS: no iteration made more than 3 allocations"),
        "{}",
        r.text()
    );
    assert_eq!(
        r.to_json_value()["allocations"]["failure"],
        serde_json::Value::Null
    );
}

#[test]
fn json_has_the_allocations_object_merged_and_per_run() {
    let r = run(None);
    let path = std::env::temp_dir().join(format!("candor-alloc-{}.json", std::process::id()));
    r.write_json(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let a = &v["allocations"];
    assert_eq!(a["counted"], true);
    assert_eq!(a["iterations"], 1_400);
    assert_eq!(a["per_iteration_mean"], 600.0 / 1400.0);
    assert_eq!(a["per_iteration_max"], 3);
    assert_eq!(a["bytes_per_iteration_mean"], 600.0 * 24.0 / 1400.0);
    assert_eq!(a["iterations_allocating"], 200.0 / 1400.0);
    assert_eq!(a["iterations_allocating_count"], 200);
    assert_eq!(a["limit"], serde_json::Value::Null);
    let runs = a["runs"].as_array().expect("per run");
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["iterations"], 700);
        assert_eq!(run["per_iteration_max"], 3);
        assert_eq!(run["iterations_allocating_count"], 100);
    }
    // Still candor results JSON: the reader ignores the added object.
    let back = candor_core::results::RunResults::from_json(&text).unwrap();
    assert_eq!(back.main.response_time.count, 1_400);
}
