//! The hiccup scenario of docs/truth.md ("In-process hiccup"), shortened: 100,000 iterations/s, every
//! 10,000th iteration busy-waits 1 ms, 200,000 measured iterations (20 hiccups), correction on
//! and off. Truth: corrected, the j-th iteration after a hiccup takes ~(1 ms - j * 10 us), so 1%
//! of samples are affected; uncorrected, only the hiccup itself is slow.
//!
//! Tolerances. Lower bounds follow from the schedule alone and hold on any machine: an iteration
//! can catch up at most one 10 us slot, so the j-th one after a hiccup is at least 1 ms - j*10 us
//! late. Other processes on this shared 2-core machine (parallel builds) can only add delay, and
//! a time slice lost while catching up adds hundreds of late samples, so upper bounds are put on
//! medians over the 20 hiccups (a stall has to hit most hiccups to move them) and on the
//! uncorrected run, not on the corrected run's totals.

// Bounds read better as `lower <= x && x < upper` next to their justification.
#![allow(clippy::manual_range_contains)]

use candor_core::hist::value_at;
use candor_core::now_ns;
use candor_harness::{Harness, HarnessResults, Iteration, Phase};

const OFFSETS: [u64; 4] = [0, 50, 90, 150];

/// Runs the scenario; also returns, for each offset j in OFFSETS, the end-to-end time of the
/// j-th iteration after each measured hiccup.
fn run(correct: bool) -> (HarnessResults, Vec<Vec<u64>>) {
    let mut h = Harness::builder()
        .throughput(100_000)
        .warmup_iterations(20_000)
        .iterations(200_000)
        .runs(1)
        .account_for_coordinated_omission(correct)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    let mut count = 0u64;
    let mut at: Vec<Vec<u64>> = OFFSETS.iter().map(|_| Vec::with_capacity(20)).collect();
    let r = h.run(|ctx: &mut Iteration| {
        if count.is_multiple_of(10_000) {
            let until = now_ns() + 1_000_000;
            while now_ns() < until {
                std::hint::spin_loop();
            }
        }
        let j = count % 10_000;
        count += 1;
        let end = ctx.end_now();
        if ctx.phase() != Phase::Warmup {
            let from = if correct {
                ctx.intended_start_ns()
            } else {
                ctx.actual_start_ns()
            };
            if let Some(k) = OFFSETS.iter().position(|&o| o == j) {
                at[k].push(end - from);
            }
        }
    });
    (r, at)
}

fn median(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1e3
}

#[test]
fn hiccup_numbers_with_correction_on_and_off() {
    // The corrected run's shape can only be checked from above when this thread had a CPU: on a
    // machine overloaded by other work (load 9.5 on 2 cores was seen while developing), most
    // iterations start late whatever the harness does. Such an attempt still checks every lower
    // bound and the uncorrected run, then the scenario is tried again, up to 3 times.
    for attempt in 1..=3 {
        if check(attempt == 3) {
            return;
        }
        println!("attempt {attempt}: the machine was too busy to check the upper bounds; again");
    }
}

/// Returns false when the machine was too busy for the upper bounds (and `last` is false).
fn check(last: bool) -> bool {
    let (on, at_on) = run(true);
    let (off, at_off) = run(false);
    let (hon, hoff) = (on.runs()[0].end_to_end(), off.runs()[0].end_to_end());
    assert_eq!(hon.len(), 200_000);
    assert_eq!(hoff.len(), 200_000);
    let us = |h, p| value_at(h, p) as f64 / 1e3;
    let slow_on = hon.count_between(500_000, u64::MAX);
    let slow_off = hoff.count_between(500_000, u64::MAX);
    let lag_p50 = us(on.runs()[0].send_lag(), 50.0);
    let diag = format!(
        "on: p50 {} p99 {} p99.9 {} p99.99 {} >=0.5ms {slow_on} start-lag p50 {lag_p50}; \
         off: p99.9 {} max {} >=0.5ms {slow_off}; \
         medians after a hiccup at j={OFFSETS:?}: on {:?} off {:?}",
        us(hon, 50.0),
        us(hon, 99.0),
        us(hon, 99.9),
        us(hon, 99.99),
        us(hoff, 99.9),
        us(hoff, 100.0),
        at_on.iter().map(|v| median(v)).collect::<Vec<_>>(),
        at_off.iter().map(|v| median(v)).collect::<Vec<_>>(),
    );
    println!("{diag}");

    // Lower bounds, hiccup by hiccup (medians over the 20 hiccups, us): corrected, the j-th
    // iteration after a hiccup is at least 1 ms - j*10 us late on any machine.
    assert_eq!(at_on[0].len(), 20, "{diag}");
    assert!(median(&at_on[0]) >= 1_000.0, "{diag}");
    assert!(median(&at_on[1]) >= 500.0, "{diag}");
    assert!(median(&at_on[2]) >= 100.0, "{diag}");
    // Whole run, corrected: >= 50 samples >= 0.5 ms per hiccup, so >= 1,000; p99.9 (the top 200)
    // >= 0.8 ms since >= 400 samples are; p99.99 >= 0.99 ms.
    assert!(slow_on >= 20 * 50, "{diag}");
    assert!(us(hon, 99.9) >= 800.0, "{diag}");
    assert!(us(hon, 99.99) >= 990.0, "{diag}");
    // Uncorrected, timed from the actual start: the hiccup is 1 ms and the iterations after it
    // look normal; only the 20 hiccups are slow, plus any stall that hits inside an iteration
    // (~0.1 us long), so few even on a loaded machine (25 at load 9.5). The bug these guard
    // against, correction leaking into the uncorrected run, makes >= 51 samples >= 0.5 ms per
    // hiccup (>= 1,020 in all, as for `slow_on`), so the bound is 1,000 slow samples, and the
    // top 1,000 samples (p99.5) stay under 0.5 ms.
    assert!(median(&at_off[0]) >= 1_000.0, "{diag}");
    for v in &at_off[1..] {
        assert!(median(v) < 20.0, "{diag}");
    }
    assert!(slow_off >= 20 && slow_off < 1_000, "{diag}");
    assert!(us(hoff, 99.5) < 500.0, "{diag}");
    assert!(us(hoff, 100.0) >= 1_000.0, "{diag}");
    assert!(slow_on > slow_off, "{diag}");

    // Upper bounds, corrected, when the thread had a CPU (median start lag under 20 us; ~0.03 us
    // when idle). Idle, the schedule catches up at 10 us less the iteration's cost per iteration:
    // ~1 ms, ~510 us at j=50, ~120 us at j=90 and drained (~0.06 us) by j=150 on the machine
    // this was written on. A machine with a slower iteration or short stalls after the hiccup
    // drains later (CI once read 121 us at j=90 and a median of 33 us at j=150), so the bounds
    // leave room for that, and are set against the bugs they guard: a schedule that does not
    // catch up reads ~1 ms at every j (and a median of ~1 ms over the run), one that catches up
    // at half speed reads ~750 us at j=50 and ~250 us at j=150.
    if lag_p50 >= 20.0 {
        if !last {
            return false;
        }
        println!("the machine stayed too busy; upper bounds not checked");
        return true;
    }
    // The hiccup spins until its end, so uncorrected it reads 1 ms plus however long the
    // thread was off the CPU as the end passed: checked only when the thread had a CPU.
    let upper = [
        (median(&at_off[0]), 1_500.0),
        (median(&at_on[0]), 1_500.0),
        (median(&at_on[1]), 700.0),
        (median(&at_on[2]), 300.0),
        (median(&at_on[3]), 200.0),
        (us(hon, 50.0), 20.0),
    ];
    let within = upper.iter().all(|&(v, bound)| v < bound);
    if !within && !last {
        // A stall that hit most hiccups of this attempt; the lower bounds above held.
        return false;
    }
    for (v, bound) in upper {
        assert!(v < bound, "{v} >= {bound}: {diag}");
    }
    true
}
