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
    }
}
