//! How a run's owner asks its load threads to end the measured window early, for a reason other
//! than a signal, and when it asked.

use crate::now_ns;
use crate::results::StopReason;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// An end of the measured window asked for by the run's owner for a reason other than a signal:
/// `--precision` reached (the schedule ends, outstanding requests drain as usual) or an objective
/// that can no longer pass (the schedule ends and nothing more is awaited, as on an interrupt).
/// Workers end their schedules at the instant of the request, so that intended counts only what
/// was due before it.
#[derive(Debug, Default)]
pub struct EarlyEnd {
    /// 0: none; else 1 + the index in [`EarlyEnd::REASONS`].
    reason: AtomicU8,
    at_ns: AtomicU64,
}

impl EarlyEnd {
    const REASONS: [StopReason; 3] = [
        StopReason::Precision,
        StopReason::Abort,
        StopReason::Failure,
    ];

    /// Asks the workers to end the schedule now (monotonic `now_ns()`); the first request wins.
    /// `Duration` and `Interrupt` are not requests (they end the run by themselves) and are ignored.
    pub fn request(&self, reason: StopReason) {
        let Some(i) = Self::REASONS.iter().position(|&r| r == reason) else {
            return;
        };
        let now = now_ns();
        if self
            .reason
            .compare_exchange(0, i as u8 + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.at_ns.store(now, Ordering::Release);
        }
    }

    /// The reason and the monotonic instant of the request, once made.
    pub fn requested(&self) -> Option<(StopReason, u64)> {
        match self.reason.load(Ordering::Acquire) {
            0 => None,
            i => {
                // The instant is stored just after the reason; wait out that window.
                let mut at = self.at_ns.load(Ordering::Acquire);
                while at == 0 {
                    std::hint::spin_loop();
                    at = self.at_ns.load(Ordering::Acquire);
                }
                Some((Self::REASONS[i as usize - 1], at))
            }
        }
    }

    /// True once an abort (or a thread's failure) was requested: nothing more is awaited.
    pub fn aborting(&self) -> bool {
        matches!(self.reason.load(Ordering::Relaxed), 2 | 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_early_end_wins_and_only_an_abort_skips_the_drain() {
        let end = EarlyEnd::default();
        assert_eq!(end.requested(), None);
        // Duration and Interrupt end a run by themselves: not requests.
        end.request(StopReason::Duration);
        end.request(StopReason::Interrupt);
        assert_eq!(end.requested(), None);
        let before = now_ns();
        end.request(StopReason::Precision);
        let (reason, at) = end.requested().unwrap();
        assert_eq!(reason, StopReason::Precision);
        assert!(at >= before);
        assert!(!end.aborting(), "precision drains");
        end.request(StopReason::Abort);
        assert_eq!(
            end.requested(),
            Some((StopReason::Precision, at)),
            "first wins"
        );
        let abort = EarlyEnd::default();
        abort.request(StopReason::Abort);
        assert!(abort.aborting());
    }
}
