//! Intended send times: the arrival process alone decides them, never the target's speed.
//!
//! A thread's schedule is an iterator of absolute nanosecond instants. Requests are sent in
//! schedule order; the backlog after a stall is simply the stretch of the schedule between the
//! next unsent entry and now, so nothing is ever skipped, thinned or re-anchored.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// How intended send times are spaced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalKind {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process), from a seeded generator.
    Poisson { seed: u64 },
}

/// The schedule of one thread: its share of a combined stream at `total_rate` per second.
///
/// With `threads` threads, a constant stream is interleaved: thread `i` takes entries
/// `i, i + threads, i + 2*threads, ...` of the single evenly spaced stream, so the union is exactly
/// the one-thread schedule. A Poisson stream is split into independent Poisson streams of
/// rate `total_rate / threads`, whose superposition is Poisson at `total_rate`.
#[derive(Debug, Clone)]
pub struct Schedule {
    start_ns: u64,
    kind: ArrivalKind,
    /// Nanoseconds between entries of the combined stream.
    period_ns: f64,
    /// Constant: this thread's position in the interleave and the stride.
    phase: u64,
    stride: u64,
    /// Index (within this thread's stream) of the entry `peek` returns.
    index: u64,
    /// Poisson: offset of the current entry from the start, and the generator.
    poisson_offset_ns: f64,
    rng: Xoshiro256PlusPlus,
    current_ns: u64,
    /// Entries this stream may produce (`u64::MAX`: unbounded); after that `peek` is `u64::MAX`.
    limit: u64,
}

impl Schedule {
    /// `phase` is this stream's slot among `stride` interleaved streams (threads, or shards times threads).
    pub fn new(start_ns: u64, total_rate: f64, kind: ArrivalKind, phase: u64, stride: u64) -> Self {
        assert!(total_rate > 0.0 && stride > 0 && phase < stride);
        let period_ns = 1e9 / total_rate;
        let seed = match kind {
            ArrivalKind::Poisson { seed } => seed,
            ArrivalKind::Constant => 0,
        };
        // Each stream gets its own generator: mixing the phase in with a large odd constant keeps
        // streams independent for any user seed (SplitMix-style seeding inside seed_from_u64).
        let rng =
            Xoshiro256PlusPlus::seed_from_u64(seed ^ phase.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut s = Schedule {
            start_ns,
            kind,
            period_ns,
            phase,
            stride,
            index: 0,
            poisson_offset_ns: 0.0,
            rng,
            current_ns: 0,
            limit: u64::MAX,
        };
        s.current_ns = s.compute_first();
        s
    }

    /// Ends the combined stream (all `stride` interleaved streams together) after `total`
    /// entries: this stream keeps the entries whose combined index is below `total`, so the
    /// union of the streams has exactly `total` entries whatever the float rounding of times.
    pub fn with_limit(mut self, total: u64) -> Self {
        // Slots phase, phase + stride, ... below total: ceil((total - phase) / stride).
        self.limit = total.saturating_sub(self.phase).div_ceil(self.stride);
        if self.limit == 0 {
            self.current_ns = u64::MAX;
        }
        self
    }

    fn compute_first(&mut self) -> u64 {
        match self.kind {
            ArrivalKind::Constant => self.constant_at(0),
            ArrivalKind::Poisson { .. } => {
                self.poisson_offset_ns = self.exponential_gap();
                self.start_ns + self.poisson_offset_ns as u64
            }
        }
    }

    fn constant_at(&self, index: u64) -> u64 {
        let slot = index * self.stride + self.phase;
        self.start_ns + (slot as f64 * self.period_ns) as u64
    }

    /// One exponential gap of this stream (mean `period * stride`).
    fn exponential_gap(&mut self) -> f64 {
        // 53 random bits -> u in (0, 1]; -ln(u) is Exp(1). u never reaches 0, so no infinity.
        let u = ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        -u.ln() * self.period_ns * self.stride as f64
    }

    /// The intended time of the next unsent entry.
    #[inline]
    pub fn peek(&self) -> u64 {
        self.current_ns
    }

    /// Moves past the current entry (it was sent or otherwise accounted for).
    #[inline]
    pub fn advance(&mut self) {
        self.index += 1;
        if self.index >= self.limit {
            self.current_ns = u64::MAX;
            return;
        }
        self.current_ns = match self.kind {
            ArrivalKind::Constant => self.constant_at(self.index),
            ArrivalKind::Poisson { .. } => {
                self.poisson_offset_ns += self.exponential_gap();
                self.start_ns + self.poisson_offset_ns as u64
            }
        };
    }

    /// The global sequence number of the entry `peek` returns: its index in the whole schedule
    /// (all `stride` interleaved streams: threads times shards), unique across them.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.index * self.stride + self.phase
    }

    /// How many entries have been consumed so far.
    pub fn consumed(&self) -> u64 {
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(s: &mut Schedule, until: u64) -> Vec<u64> {
        let mut v = Vec::new();
        while s.peek() < until {
            v.push(s.peek());
            s.advance();
        }
        v
    }

    #[test]
    fn constant_threads_interleave_into_the_single_stream() {
        let start = 1_000_000_000;
        let end = start + 1_000_000_000;
        let mut single = Schedule::new(start, 2000.0, ArrivalKind::Constant, 0, 1);
        let one = take(&mut single, end);
        assert_eq!(one.len(), 2000);
        let mut union: Vec<u64> = (0..3)
            .flat_map(|i| {
                take(
                    &mut Schedule::new(start, 2000.0, ArrivalKind::Constant, i, 3),
                    end,
                )
            })
            .collect();
        union.sort_unstable();
        assert_eq!(
            union, one,
            "three interleaved threads must equal the one-thread schedule"
        );
        assert_eq!(one[1] - one[0], 500_000);
    }

    #[test]
    fn a_limit_gives_exactly_that_many_entries_across_streams() {
        // 1e9/3 per second: a period of 3.33 ns, so times round and collide; the count must not care.
        for (total, streams) in [(10u64, 3u64), (7, 1), (2, 4), (1000, 7), (0, 2)] {
            let rate = 1e9 / 3.0;
            let end = (total as f64 * 1e9 / rate).ceil() as u64;
            let all: usize = (0..streams)
                .map(|i| {
                    let mut s =
                        Schedule::new(0, rate, ArrivalKind::Constant, i, streams).with_limit(total);
                    // Everything before the window end (and nothing after the limit).
                    let v = take(&mut s, end + 1_000_000);
                    assert!(v.iter().all(|&t| t < end.max(1)), "{v:?} beyond {end}");
                    v.len()
                })
                .sum();
            assert_eq!(all as u64, total, "{streams} streams");
        }
    }

    #[test]
    fn poisson_has_the_requested_rate_and_exponential_gaps() {
        let mut s = Schedule::new(0, 10_000.0, ArrivalKind::Poisson { seed: 7 }, 0, 1);
        let times = take(&mut s, 10_000_000_000);
        // 100,000 expected arrivals; the count of a Poisson process has sd sqrt(1e5) ~ 316,
        // so 1% (~3 sd) is a tolerance that a correct generator essentially never exceeds.
        let n = times.len() as f64;
        assert!((n - 100_000.0).abs() < 1000.0, "count {n}");
        // Exponential gaps: the fraction of gaps above the mean is e^-1 ~ 0.368.
        let above = times.windows(2).filter(|w| w[1] - w[0] > 100_000).count() as f64 / n;
        assert!(
            (above - (-1.0f64).exp()).abs() < 0.01,
            "fraction above mean {above}"
        );
    }

    #[test]
    fn poisson_is_reproducible_by_seed_and_streams_differ() {
        let a = take(
            &mut Schedule::new(0, 1000.0, ArrivalKind::Poisson { seed: 1 }, 0, 2),
            1_000_000_000,
        );
        let b = take(
            &mut Schedule::new(0, 1000.0, ArrivalKind::Poisson { seed: 1 }, 0, 2),
            1_000_000_000,
        );
        let c = take(
            &mut Schedule::new(0, 1000.0, ArrivalKind::Poisson { seed: 1 }, 1, 2),
            1_000_000_000,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Each of two streams carries half the rate: 500 expected in 1 s (sd ~22).
        assert!((a.len() as i64 - 500).abs() < 110, "{}", a.len());
    }
}
