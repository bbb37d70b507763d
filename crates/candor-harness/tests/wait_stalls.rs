//! Stalls of the benchmark thread while it waits for the schedule (a clock jump inside the
//! wait) are recorded per run, reported as a warning when longer than one interval, and written
//! to the JSON; exact, on a clock that reports chosen gaps.

use candor_harness::{Clock, Harness, Iteration, ManualClock, Wake};
use std::sync::atomic::{AtomicU64, Ordering};

/// The manual clock, whose every 100th wait reports a 50 us gap and every other one a 500 ns
/// gap (below the 1 us threshold).
struct StallingClock {
    inner: ManualClock,
    waits: AtomicU64,
}

impl Clock for StallingClock {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn sleep_until(&self, deadline_ns: u64) -> u64 {
        self.inner.sleep_until(deadline_ns)
    }
    fn wait_until(&self, deadline_ns: u64) -> Wake {
        let n = self.waits.fetch_add(1, Ordering::SeqCst);
        Wake {
            at_ns: self.inner.sleep_until(deadline_ns),
            longest_gap_ns: if n % 100 == 99 { 50_000 } else { 500 },
        }
    }
}

#[test]
fn stalls_while_waiting_are_counted_and_explained() {
    let clock = StallingClock {
        inner: ManualClock::new(0),
        waits: AtomicU64::new(0),
    };
    let mut h = Harness::builder()
        .throughput(100_000)
        .warmup_iterations(0)
        .iterations(1_000)
        .runs(2)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    let r = h.run_with_clock(&clock, |_ctx: &mut Iteration| {
        clock.inner.advance(1_000);
    });
    for run in r.runs() {
        assert_eq!(run.wait_stalls().len(), 10);
        assert_eq!(run.wait_stalls().count_between(49_000, 51_000), 10);
    }
    assert_eq!(r.merged_wait_stalls().len(), 20);
    let w: Vec<&String> = r
        .warnings()
        .iter()
        .filter(|w| w.contains("descheduled 10 times while waiting"))
        .collect();
    assert_eq!(w.len(), 2, "{:?}", r.warnings());
    assert!(
        r.text().contains("Stalls while waiting (10)"),
        "{}",
        r.text()
    );
    let json = r.to_run_results();
    let stalls = json
        .extra
        .iter()
        .find(|e| e.name == "wait_stalls")
        .expect("in extra");
    assert_eq!(stalls.summary.count, 20);
}

/// The manual clock, whose wait for iteration 100 of each run is stalled by 55 us: the clock
/// jumps 55 us past the deadline, with a gap of that size.
struct JumpingClock {
    inner: ManualClock,
    waits: AtomicU64,
}

impl Clock for JumpingClock {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn sleep_until(&self, deadline_ns: u64) -> u64 {
        self.inner.sleep_until(deadline_ns)
    }
    fn wait_until(&self, deadline_ns: u64) -> Wake {
        let n = self.waits.fetch_add(1, Ordering::SeqCst);
        let at = self.inner.sleep_until(deadline_ns);
        if n % 1_000 == 100 {
            Wake {
                at_ns: self.inner.advance(55_000),
                longest_gap_ns: 55_000,
            }
        } else {
            Wake {
                at_ns: at,
                longest_gap_ns: 0,
            }
        }
    }
}

fn jumping(forgive: bool) -> candor_harness::HarnessResults {
    let clock = JumpingClock {
        inner: ManualClock::new(0),
        waits: AtomicU64::new(0),
    };
    let mut h = Harness::builder()
        .throughput(100_000)
        .warmup_iterations(0)
        .iterations(1_000)
        .runs(2)
        .record_os_jitter(false)
        .forgive_wait_stalls(forgive)
        .print(false)
        .build()
        .unwrap();
    h.run_with_clock(&clock, |_ctx: &mut Iteration| {
        clock.inner.advance(1_000);
    })
}

#[test]
fn a_stall_while_waiting_counts_unless_forgiven() {
    // Kept (the default): the stalled iteration ends 56 us after its intended start, and the 6
    // behind it (due 10 us apart, each taking 1 us, so catching up 9 us each) end 47, 38, 29,
    // 20, 11 and 2 us after theirs; every other iteration takes its 1 us.
    let kept = jumping(false);
    for run in kept.runs() {
        // (HdrHistogram buckets are 32 ns wide at 56 us.)
        assert_eq!(run.end_to_end().count_between(55_970, 56_030), 1);
        assert_eq!(run.end_to_end().count_between(1_001, u64::MAX), 7);
        assert_eq!(run.end_to_end().count_between(1_990, 2_010), 1);
        assert_eq!(run.forgiven_stalls(), (0, 0));
    }
    // Forgiven (JLBH's accounting): the schedule restarts at the wake-up, nothing is late.
    let forgiven = jumping(true);
    for run in forgiven.runs() {
        assert_eq!(run.end_to_end().count_between(1_001, u64::MAX), 0);
        assert_eq!(run.forgiven_stalls(), (1, 55_000));
        assert_eq!(run.wait_stalls().len(), 1);
    }
    assert!(
        forgiven
            .warnings()
            .iter()
            .any(|w| w.contains("1 stalls of the benchmark thread while waiting were forgiven")),
        "{:?}",
        forgiven.warnings()
    );
}

#[test]
fn short_gaps_are_not_stalls() {
    let clock = ManualClock::new(0);
    let mut h = Harness::builder()
        .warmup_iterations(0)
        .iterations(500)
        .runs(1)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    // The manual clock's default `wait_until` reports no gap.
    let r = h.run_with_clock(&clock, |_ctx: &mut Iteration| {
        clock.advance(10);
    });
    assert!(r.runs()[0].wait_stalls().is_empty());
    assert!(!r.text().contains("Stalls while waiting"));
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
}
