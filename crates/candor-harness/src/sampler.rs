//! Recording from other threads: a [`Sampler`] handle per thread, and the [`Stamp`] that carries
//! an iteration's start times to wherever its end is observed.

use crate::phased::{PhasedSet, E2E, FIRST_PROBE, SERVICE};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Identifies a probe (a named extra histogram) registered with
/// [`HarnessBuilder::add_probe`](crate::HarnessBuilder::add_probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeId(pub(crate) usize);

impl ProbeId {
    pub(crate) fn slot(self) -> usize {
        FIRST_PROBE + self.0
    }
    /// Position of the probe in registration order (0 for the first).
    pub fn index(self) -> usize {
        self.0
    }
}

/// An iteration's start times, to send along with the work (in a message, a queue entry, a
/// socket payload) so that whichever thread sees the iteration end can time it from its
/// intended start. 16 bytes; see [`Stamp::to_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// When the schedule said the iteration should start (ns, monotonic clock).
    pub intended_ns: u64,
    /// When the harness actually started it (ns, monotonic clock).
    pub actual_ns: u64,
}

impl Stamp {
    /// Little-endian wire form: intended then actual.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.intended_ns.to_le_bytes());
        b[8..].copy_from_slice(&self.actual_ns.to_le_bytes());
        b
    }
    /// Inverse of [`Stamp::to_bytes`].
    pub fn from_bytes(b: [u8; 16]) -> Stamp {
        let mut i = [0u8; 8];
        let mut a = [0u8; 8];
        i.copy_from_slice(&b[..8]);
        a.copy_from_slice(&b[8..]);
        Stamp {
            intended_ns: u64::from_le_bytes(i),
            actual_ns: u64::from_le_bytes(a),
        }
    }
}

/// Records samples from a thread other than the benchmark's: end-to-end times of iterations
/// whose end is observed there, and probe samples.
///
/// Each handle owns its own pair of histogram buffers (see `phased.rs`): recording is plain
/// writes bracketed by two uncontended atomic increments (wait-free, no lock, no allocation),
/// and the harness collects the buffers at each run's end, exactly. A handle is `Send` (move it
/// to the thread that records) but not `Clone`: one writer per handle is what keeps recording
/// free of contention; ask [`Harness::sampler`](crate::Harness::sampler) for one per thread.
///
/// Samples are attributed to the run during which they are recorded. At a run's end the harness
/// waits (up to its timeout) until every iteration handed off with
/// [`Iteration::hand_off`](crate::Iteration::hand_off) has its end-to-end sample, so the ends
/// of a run's last iterations land in that run.
pub struct Sampler {
    pub(crate) set: Arc<PhasedSet>,
    e2e_recorded: u64,
}

impl Sampler {
    pub(crate) fn new(set: Arc<PhasedSet>) -> Self {
        Sampler {
            set,
            e2e_recorded: 0,
        }
    }

    /// Records one probe sample.
    #[inline]
    pub fn sample(&mut self, probe: ProbeId, duration_ns: u64) {
        // SAFETY: `&mut self` and the handle being neither Clone nor Sync make this the only
        // writer of its set.
        unsafe { self.set.write(|s| s.record(probe.slot(), duration_ns)) }
    }

    /// Records the end of the iteration started at `stamp`, observed at `end_ns`: end-to-end
    /// time from the intended start and service time from the actual start.
    #[inline]
    pub fn sample_end_to_end(&mut self, stamp: Stamp, end_ns: u64) {
        // SAFETY: as in `sample`.
        unsafe {
            self.set.write(|s| {
                s.record(E2E, end_ns.saturating_sub(stamp.intended_ns));
                s.record(SERVICE, end_ns.saturating_sub(stamp.actual_ns));
            })
        }
        self.e2e_recorded += 1;
        // Single writer: a plain store publishes the count (after the samples themselves).
        self.set
            .e2e_count
            .store(self.e2e_recorded, Ordering::Release);
    }

    /// [`Sampler::sample_end_to_end`] at the current monotonic time; returns that time.
    #[inline]
    pub fn end_to_end_now(&mut self, stamp: Stamp) -> u64 {
        let end = candor_core::now_ns();
        self.sample_end_to_end(stamp, end);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trips_through_bytes() {
        let s = Stamp {
            intended_ns: 0x0102_0304_0506_0708,
            actual_ns: u64::MAX - 5,
        };
        assert_eq!(Stamp::from_bytes(s.to_bytes()), s);
    }

    fn assert_send<T: Send>() {}

    #[test]
    fn sampler_is_send() {
        assert_send::<Sampler>();
    }
}
