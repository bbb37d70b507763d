//! Without `CountingAllocator` installed (this test binary has the system allocator), the
//! results say that allocations were not counted, never zero, and a limit on them is refused at
//! build time because it could not be checked.

use candor_harness::{Harness, HarnessError, Iteration, ManualClock};

#[test]
fn reports_not_counted_instead_of_zero() {
    let clock = ManualClock::new(0);
    let mut h = Harness::builder()
        .warmup_iterations(0)
        .iterations(100)
        .runs(2)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    let r = h.run_with_clock(&clock, |_ctx: &mut Iteration| {
        clock.advance(10);
        std::hint::black_box(Box::new(std::hint::black_box(1u64)));
    });
    assert!(r.allocations().is_none());
    assert!(r.runs().iter().all(|run| run.allocations().is_none()));
    let text = r.text();
    assert!(text.contains("Allocations: not counted (install"), "{text}");
    assert!(!text.contains("mean 0"), "{text}");
    let a = &r.to_json_value()["allocations"];
    assert_eq!(a["counted"], false);
    assert!(a.get("per_iteration_mean").is_none(), "{a}");
}

#[test]
fn a_limit_without_the_allocator_is_a_build_error() {
    let e = Harness::builder()
        .max_allocations_per_iteration(0)
        .build()
        .err()
        .expect("refused");
    assert!(matches!(e, HarnessError::AllocationsNotCounted));
    assert!(e.to_string().contains("#[global_allocator]"), "{e}");
}
