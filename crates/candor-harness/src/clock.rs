//! The clock the harness paces and measures with: the real monotonic clock, or a manual one
//! for deterministic tests of the harness (and of benchmark logic) without real waiting.

use std::sync::atomic::{AtomicU64, Ordering};

/// A source of nanosecond time and a way to wait for an instant on it.
///
/// The harness is generic over this so that its scheduling and correction logic can be tested
/// exactly with [`ManualClock`]; benchmarks normally use the default [`MonotonicClock`].
pub trait Clock: Sync {
    /// The current time in nanoseconds.
    fn now_ns(&self) -> u64;
    /// Waits until `deadline_ns` and returns the time at wake-up (at or after the deadline).
    /// Returns at once (with the current time) if the deadline has passed.
    fn sleep_until(&self, deadline_ns: u64) -> u64;
    /// [`Clock::sleep_until`], also reporting the longest gap between two consecutive clock
    /// reads while it spun: time the waiting thread was descheduled or interrupted. The default
    /// reports no gap (nothing measured).
    fn wait_until(&self, deadline_ns: u64) -> Wake {
        Wake {
            at_ns: self.sleep_until(deadline_ns),
            longest_gap_ns: 0,
        }
    }
}

/// What a [`Clock::wait_until`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    /// The clock reading at wake-up (at or after the deadline).
    pub at_ns: u64,
    /// The longest gap between two consecutive clock reads of the final spin, ns.
    pub longest_gap_ns: u64,
}

/// `CLOCK_MONOTONIC` via candor-core: absolute nanosleep until 60 us before, then a spin.
#[derive(Debug, Default, Clone, Copy)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        candor_core::now_ns()
    }
    #[inline]
    fn sleep_until(&self, deadline_ns: u64) -> u64 {
        candor_core::precise_sleep_until(deadline_ns)
    }
    /// `precise_sleep_until`'s method (nanosleep to 60 us before, then spin), watching the
    /// spin: a preempted spinner sees the clock jump.
    #[inline]
    fn wait_until(&self, deadline_ns: u64) -> Wake {
        let mut now = candor_core::now_ns();
        if deadline_ns > now + candor_core::SPIN_MARGIN_NS {
            candor_core::exact_sleep::sleep_until_absolute(
                deadline_ns - candor_core::SPIN_MARGIN_NS,
            );
            now = candor_core::now_ns();
        }
        let mut longest_gap_ns = 0;
        while now < deadline_ns {
            std::hint::spin_loop();
            let t = candor_core::now_ns();
            longest_gap_ns = longest_gap_ns.max(t.saturating_sub(now));
            now = t;
        }
        Wake {
            at_ns: now,
            longest_gap_ns,
        }
    }
}

/// A clock that only moves when told to: `sleep_until` jumps to the deadline, and a fake
/// workload calls [`ManualClock::advance`] to "spend" time. Every number a run produces on it
/// is exact, which is what the correction tests need.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(start_ns),
        }
    }
    /// Moves the clock forward by `ns` and returns the new reading.
    pub fn advance(&self, ns: u64) -> u64 {
        self.now.fetch_add(ns, Ordering::SeqCst) + ns
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn sleep_until(&self, deadline_ns: u64) -> u64 {
        self.now
            .fetch_max(deadline_ns, Ordering::SeqCst)
            .max(deadline_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_jumps_forward_never_back() {
        let c = ManualClock::new(100);
        assert_eq!(
            c.sleep_until(50),
            100,
            "a past deadline returns the current time"
        );
        assert_eq!(c.sleep_until(250), 250);
        assert_eq!(c.advance(10), 260);
        assert_eq!(c.now_ns(), 260);
    }

    #[test]
    fn monotonic_clock_sleeps_to_the_deadline() {
        let c = MonotonicClock;
        let deadline = c.now_ns() + 200_000;
        assert!(c.sleep_until(deadline) >= deadline);
        let deadline = c.now_ns() + 200_000;
        let w = c.wait_until(deadline);
        assert!(w.at_ns >= deadline);
        // The spin covers at most the last 60 us plus however late the sleep woke.
        assert!(w.longest_gap_ns <= w.at_ns - (deadline - 60_000), "{w:?}");
        let past = c.wait_until(0);
        assert_eq!(past.longest_gap_ns, 0, "no spin for a past deadline");
    }
}
