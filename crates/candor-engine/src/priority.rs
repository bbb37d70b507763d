//! Background scheduling priority for the threads that keep the books beside the load threads.
//!
//! On Linux a thread of policy `SCHED_IDLE` has the scheduler's lowest weight (about 0.3% of a
//! core against each busy ordinary thread) and its wake-up never preempts an ordinary thread:
//! the collector that merges and encodes each interval's histograms (about a millisecond of CPU
//! a second) then runs in the load threads' sleeps instead of delaying their sends. Elsewhere,
//! and where the policy is refused, the thread keeps its priority; nothing else depends on it.

/// Whether the calling thread now runs at background priority.
pub fn lower_to_background() -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` with pid 0 changes only the calling thread's policy and
        // reads `param`, which lives for the call.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether the calling thread runs at background priority.
pub fn is_background() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sched_getscheduler` with pid 0 only reads the calling thread's policy.
        unsafe { libc::sched_getscheduler(0) == libc::SCHED_IDLE }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn a_thread_lowered_runs_at_background_priority_and_others_do_not() {
        // Lowering a thread's own priority needs no privilege.
        let lowered = std::thread::spawn(|| (lower_to_background(), is_background()))
            .join()
            .unwrap();
        assert_eq!(lowered, (true, true));
        assert!(!std::thread::spawn(is_background).join().unwrap());
    }
}
