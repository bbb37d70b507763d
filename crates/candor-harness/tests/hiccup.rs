//! The hiccup scenario of notes/truth.md section 5, shortened: 100,000 iterations/s, every
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
    let (on, at_on) = run(true);
    let (off, at_off) = run(false);
    let (hon, hoff) = (on.runs()[0].end_to_end(), off.runs()[0].end_to_end());
    assert_eq!(hon.len(), 200_000);
    assert_eq!(hoff.len(), 200_000);
    let us = |h, p| value_at(h, p) as f64 / 1e3;
    let slow_on = hon.count_between(500_000, u64::MAX);
    let slow_off = hoff.count_between(500_000, u64::MAX);
    let diag = format!(
        "on: p50 {} p99 {} p99.9 {} p99.99 {} >=0.5ms {slow_on}; off: p99.9 {} max {} >=0.5ms {slow_off}; \
         medians after a hiccup at j={OFFSETS:?}: on {:?} off {:?}",
        us(hon, 50.0), us(hon, 99.0), us(hon, 99.9), us(hon, 99.99), us(hoff, 99.9), us(hoff, 100.0),
        at_on.iter().map(|v| median(v)).collect::<Vec<_>>(),
        at_off.iter().map(|v| median(v)).collect::<Vec<_>>(),
    );
    println!("{diag}");

    // The shape, hiccup by hiccup (medians over 20 hiccups, in us). Corrected: 1 ms, then
    // 1 ms - j*10 us (500 at j=50, 100 at j=90), drained by j=150. The upper bounds leave room for
    // the per-iteration cost while catching up (up to ~1 us in a debug build: +90 us at j=90) and
    // for stalls; a schedule that did not drain, or uncorrected timing, would miss them by far.
    assert_eq!(at_on[0].len(), 20, "{diag}");
    assert!(
        median(&at_on[0]) >= 1_000.0 && median(&at_on[0]) < 1_500.0,
        "{diag}"
    );
    assert!(
        median(&at_on[1]) >= 500.0 && median(&at_on[1]) < 700.0,
        "{diag}"
    );
    assert!(
        median(&at_on[2]) >= 100.0 && median(&at_on[2]) < 300.0,
        "{diag}"
    );
    assert!(median(&at_on[3]) < 20.0, "{diag}");
    // Uncorrected: the hiccup is 1 ms, and the iterations after it look normal.
    assert!(
        median(&at_off[0]) >= 1_000.0 && median(&at_off[0]) < 1_500.0,
        "{diag}"
    );
    for v in &at_off[1..] {
        assert!(median(v) < 20.0, "{diag}");
    }

    // Whole-run figures. Corrected: >= 50 samples >= 0.5 ms per hiccup, so >= 1,000; p99.9 (the
    // top 200) >= 0.8 ms since >= 400 samples are; p99.99 >= 0.99 ms. No upper bounds here: with
    // other builds running, this thread loses whole time slices (a 5 ms stall adds 500 late
    // samples; 30% of samples late was seen at load 5.4), and only more lateness can result.
    assert!(slow_on >= 20 * 50, "{diag}");
    assert!(us(hon, 99.9) >= 800.0, "{diag}");
    assert!(us(hon, 99.99) >= 990.0, "{diag}");
    // Uncorrected: the 20 hiccups, plus only the stalls that hit inside an iteration (~0.1 us
    // long), so few even on a loaded machine (22 at load 5.4).
    assert!(slow_off >= 20 && slow_off < 200, "{diag}");
    assert!(us(hoff, 99.9) < 500.0, "{diag}");
    assert!(us(hoff, 100.0) >= 1_000.0, "{diag}");
    assert!(slow_on >= 10 * slow_off, "{diag}");
}
