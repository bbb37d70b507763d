//! Time as integer nanoseconds: a monotonic clock for measuring and a wall clock for labels.
//!
//! We read `CLOCK_MONOTONIC` directly rather than through `Instant` because pacing timers
//! (`clock_nanosleep`, timerfd) take absolute deadlines on that same clock, and a plain `u64`
//! of nanoseconds is what the histograms and the schedule arithmetic want.

/// Nanoseconds on `CLOCK_MONOTONIC` (an arbitrary origin, never goes backwards).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch on the real-time clock; only for labelling results.
pub fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Converts a monotonic instant to wall-clock nanoseconds, using one paired reading of both
/// clocks. Good to a few microseconds, which is plenty for timestamps in logs.
pub fn monotonic_to_wall_ns(mono_ns: u64) -> u64 {
    let wall = wall_clock_ns() as i128;
    let mono = now_ns() as i128;
    (wall - (mono - mono_ns as i128)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_advances() {
        let a = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now_ns();
        assert!(
            b >= a + 2_000_000,
            "slept 2 ms but clock moved {} ns",
            b - a
        );
    }

    #[test]
    fn wall_conversion_is_close_to_now() {
        // Every clock read involved happens between `a` and `b`, so however long this thread is
        // descheduled the conversion can be off by at most that span (plus 1 ms of slack for the
        // two clocks' different granularities).
        let a = now_ns();
        let w = monotonic_to_wall_ns(a);
        let wall = wall_clock_ns();
        let b = now_ns();
        let diff = (wall as i128 - w as i128).abs();
        assert!(
            diff <= (b - a) as i128 + 1_000_000,
            "conversion off by {diff} ns over a {} ns span",
            b - a
        );
    }
}
