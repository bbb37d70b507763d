//! Coordinated-omission correction on and off, on a manual clock so every number is exact: a
//! fake workload "takes" 100 ns per iteration and 50 us on every 100th (index 7 mod 100), at
//! 1,000,000 iterations/s. The expected samples come from an independent simulation below.

use candor_core::hist::{new_histogram, Histo};
use candor_harness::{Clock, Harness, HarnessResults, Iteration, ManualClock};

const INTERVAL: u64 = 1_000;
const NORMAL: u64 = 100;
const OVERRUN: u64 = 50_000;
const ITERATIONS: u64 = 2_000;

fn work(i: u64) -> u64 {
    if i % 100 == 7 {
        OVERRUN
    } else {
        NORMAL
    }
}

fn run(correct: bool, clock: &ManualClock) -> HarnessResults {
    let mut h = Harness::builder()
        .throughput(1_000_000)
        .warmup_iterations(10)
        .iterations(ITERATIONS)
        .runs(2)
        .account_for_coordinated_omission(correct)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    h.run_with_clock(clock, |ctx: &mut Iteration| {
        clock.advance(work(ctx.index()));
    })
}

/// (end to end, start lag) of one run starting at `t0`, as the harness should compute them.
fn simulate(correct: bool, t0: u64) -> (Histo, Histo, u64) {
    let (mut e2e, mut lag) = (new_histogram(), new_histogram());
    let (mut now, mut base, mut base_i) = (t0, t0, 0u64);
    for i in 0..ITERATIONS {
        let mut intended = base + (i - base_i) * INTERVAL;
        if !correct && now > intended {
            base = now;
            base_i = i;
            intended = now;
        }
        let actual = now.max(intended);
        let end = actual + work(i);
        let from = if correct { intended } else { actual };
        e2e.record(end - from).unwrap();
        lag.record((actual - intended).max(1)).unwrap();
        now = end;
    }
    (e2e, lag, now - t0)
}

#[test]
fn corrected_run_counts_the_queueing_behind_each_overrun() {
    let clock = ManualClock::new(1_000_000_000);
    let r = run(true, &clock);
    for run in r.runs() {
        let (e2e, lag, duration) = simulate(true, run.start_ns());
        assert_eq!(run.end_to_end(), &e2e, "end to end differs from the model");
        assert_eq!(run.send_lag(), &lag);
        assert_eq!(run.duration_ns(), duration);
        // An overrun of 50 us at 1 us spacing delays the next iterations, catching up 0.9 us each:
        // the 50 us sample and about 55 late ones per overrun, 20 overruns per run.
        let late = run.end_to_end().count_between(1_001, u64::MAX);
        assert!((20 * 50..=20 * 60).contains(&late), "{late} late samples");
        // Each overrun itself starts on time (the previous backlog has drained), so it reads 50 us.
        assert_eq!(run.end_to_end().count_between(OVERRUN, OVERRUN), 20);
        // The service time (from the actual start) is the work alone.
        assert_eq!(run.service_time().count_between(OVERRUN, OVERRUN), 20);
        assert_eq!(
            run.service_time().count_between(NORMAL, NORMAL),
            ITERATIONS - 20
        );
    }
    // The schedule is fixed: the run takes its scheduled length plus the last iteration's work.
    assert_eq!(
        r.runs()[0].duration_ns(),
        (ITERATIONS - 1) * INTERVAL + NORMAL
    );
}

#[test]
fn uncorrected_run_sees_only_the_overrunning_iterations() {
    let clock = ManualClock::new(1_000_000_000);
    let r = run(false, &clock);
    for run in r.runs() {
        let (e2e, _lag, duration) = simulate(false, run.start_ns());
        assert_eq!(run.end_to_end(), &e2e);
        assert_eq!(run.duration_ns(), duration);
        // Exactly the 20 overruns are slow; every other sample is the 100 ns of work.
        assert_eq!(run.end_to_end().count_between(1_001, u64::MAX), 20);
        assert_eq!(
            run.end_to_end().count_between(NORMAL, NORMAL),
            ITERATIONS - 20
        );
        // Each overrun pushes the schedule back by its excess: 20 * (50 us - 1 us) longer.
        assert_eq!(
            run.duration_ns(),
            (ITERATIONS - 1) * INTERVAL + NORMAL + 20 * (OVERRUN - INTERVAL)
        );
    }
}

#[test]
fn intended_starts_follow_the_schedule_exactly() {
    let clock = ManualClock::new(5_000);
    let mut h = Harness::builder()
        .throughput(300_000) // 3333.33 ns: fractional spacing must not drift
        .warmup_iterations(0)
        .iterations(30_000)
        .runs(1)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    let mut starts = Vec::with_capacity(30_000);
    let r = h.run_with_clock(&clock, |ctx: &mut Iteration| {
        starts.push(ctx.intended_start_ns());
        assert!(ctx.actual_start_ns() >= ctx.intended_start_ns());
    });
    let t0 = r.runs()[0].start_ns();
    for (i, s) in starts.iter().enumerate() {
        let expected = t0 + (i as f64 * 1e9 / 300_000.0) as u64;
        assert_eq!(*s, expected, "iteration {i}");
    }
    // 30,000 iterations at 300k/s end 0.1 s (less one spacing) after the first.
    assert_eq!(*starts.last().unwrap() - t0, 99_996_666);
    assert_eq!(clock.now_ns() - t0, 99_996_666);
}
