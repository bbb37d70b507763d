//! Waiting until an exact instant: sleep on a nanosecond timer, then spin the last stretch.
//!
//! Millisecond event-loop timers wake 0.5-1 ms late on these machines; an absolute
//! `clock_nanosleep` with 1 ns timer slack wakes ~20 us late (p50), and spinning on the clock
//! for the final [`SPIN_MARGIN_NS`] brings that to well under a microsecond (measured on the
//! project's 2-vCPU machines: the wake-up lateness table in docs/design.md, "The event loop").

use crate::clock::now_ns;

/// How long before a deadline we stop sleeping and start spinning on the clock.
pub const SPIN_MARGIN_NS: u64 = 60_000;

/// Asks the kernel to fire this thread's timers without the default 50 us slack.
/// Harmless if it fails (the spin margin covers the slack); returns whether it worked.
pub fn set_fine_timer_slack() -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and only affects the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) == 0 }
}

/// Sleeps (absolute `clock_nanosleep` on `CLOCK_MONOTONIC`) until `SPIN_MARGIN_NS` before
/// `deadline_ns`, then spins until the deadline. Returns the clock reading at wake-up, which is
/// at or after the deadline.
pub fn precise_sleep_until(deadline_ns: u64) -> u64 {
    let mut now = now_ns();
    if deadline_ns > now + SPIN_MARGIN_NS {
        sleep_until_absolute(deadline_ns - SPIN_MARGIN_NS);
        now = now_ns();
    }
    while now < deadline_ns {
        std::hint::spin_loop();
        now = now_ns();
    }
    now
}

/// Absolute sleep on the monotonic clock; retried after signals.
pub fn sleep_until_absolute(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null for TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_at_or_after_the_deadline_and_not_much_later() {
        set_fine_timer_slack();
        let mut late = Vec::new();
        for _ in 0..200 {
            let deadline = now_ns() + 300_000;
            let woke = precise_sleep_until(deadline);
            assert!(woke >= deadline);
            late.push(woke - deadline);
        }
        late.sort_unstable();
        // An undisturbed wake-up is late by one clock read in the final spin (well under 1 us);
        // a plain nanosleep without the spin is never less than a few us late. A busy machine
        // can deschedule any single wake-up, so only the best of 200 is checked: it fails only
        // if all 200 were disturbed.
        assert!(late[0] < 2_000, "best lateness of 200: {} ns", late[0]);
    }
}
