//! Intended send times: the arrival process alone decides them, never the target's speed.
//!
//! A thread's schedule is an iterator of absolute nanosecond instants. Requests are sent in
//! schedule order; the backlog after a stall is simply the stretch of the schedule between the
//! next unsent entry and now, so nothing is ever skipped, thinned or re-anchored.

use candor_workload::profile::StageTable;
use candor_workload::replay::{Entry, ReplayStream};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::Arc;

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
#[derive(Debug)]
pub struct Schedule {
    start_ns: u64,
    kind: ArrivalKind,
    /// Nanoseconds between entries of the combined stream.
    period_ns: f64,
    /// Constant: this thread's position in the interleave and the stride.
    lane: u64,
    stride: u64,
    /// Index (within this thread's stream) of the entry `peek` returns.
    index: u64,
    /// Poisson: offset of the current entry from the start, and the generator.
    poisson_offset_ns: f64,
    rng: Xoshiro256PlusPlus,
    current_ns: u64,
    /// Entries this stream may produce (`u64::MAX`: unbounded); after that `peek` is `u64::MAX`.
    limit: u64,
    /// A load profile (`None`: one rate for ever), and the stage the cursor is in.
    stages: Option<Arc<StageTable>>,
    stage_cursor: usize,
    /// A replayed trace: the records themselves are the schedule.
    replay: Option<Box<ReplayCursor>>,
    /// Only the entries whose `seq` this keeps (the requests of one target of several), before
    /// `keep_until_ns`.
    keep: Option<SeqFilter>,
    keep_until_ns: u64,
}

/// Which entries of a stream one worker takes, by their `seq`: the requests of one target when a
/// request set names several (each target's workers take its entries of the same stream, so the
/// union over targets is the stream).
#[derive(Clone)]
pub struct SeqFilter(pub Arc<dyn Fn(u64) -> bool + Send + Sync>);

impl std::fmt::Debug for SeqFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeqFilter")
    }
}

/// The schedule's hold on a replayed trace: the stream of records and a copy of the request
/// of the entry last moved past (the one the engine just took), which stays valid until the next
/// `advance`.
#[derive(Debug)]
struct ReplayCursor {
    stream: ReplayStream,
    current: Option<Entry>,
    taken: Vec<u8>,
    taken_head: bool,
}

impl Schedule {
    /// `lane` is this stream's slot among `stride` interleaved streams (threads, or shards times threads).
    pub fn new(start_ns: u64, total_rate: f64, kind: ArrivalKind, lane: u64, stride: u64) -> Self {
        assert!(total_rate > 0.0);
        Self::build(start_ns, 1e9 / total_rate, kind, lane, stride, None)
    }

    fn build(
        start_ns: u64,
        period_ns: f64,
        kind: ArrivalKind,
        lane: u64,
        stride: u64,
        stages: Option<Arc<StageTable>>,
    ) -> Self {
        assert!(stride > 0 && lane < stride);
        let seed = match kind {
            ArrivalKind::Poisson { seed } => seed,
            ArrivalKind::Constant => 0,
        };
        // Each stream gets its own generator: mixing the lane in with a large odd constant keeps
        // streams independent for any user seed (SplitMix-style seeding inside seed_from_u64).
        let rng =
            Xoshiro256PlusPlus::seed_from_u64(seed ^ lane.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let limit = match (&stages, kind) {
            (Some(t), ArrivalKind::Constant) => {
                t.total_count().saturating_sub(lane).div_ceil(stride)
            }
            _ => u64::MAX,
        };
        let mut s = Schedule {
            start_ns,
            kind,
            period_ns,
            lane,
            stride,
            index: 0,
            poisson_offset_ns: 0.0,
            rng,
            current_ns: 0,
            limit,
            stages,
            stage_cursor: 0,
            replay: None,
            keep: None,
            keep_until_ns: u64::MAX,
        };
        s.current_ns = if s.limit == 0 {
            u64::MAX
        } else {
            s.compute_first()
        };
        s
    }

    /// The schedule of one stream of a load profile: the combined stream follows `stages` from
    /// `start_ns` and ends with the profile. Constant arrivals put the combined stream's k-th
    /// entry where the integral of the rate reaches k (per stage, see [`StageTable`]), and the
    /// streams interleave by combined index as with one rate, so every stage's count splits
    /// evenly. Poisson arrivals rescale each stream's unit-rate Poisson process (gaps of mean
    /// `stride` in the integral) by the inverse integral.
    pub fn staged(
        start_ns: u64,
        stages: Arc<StageTable>,
        kind: ArrivalKind,
        lane: u64,
        stride: u64,
    ) -> Self {
        // A period of one second per unit: Poisson offsets then count the integral in 1e-9
        // requests, which `poisson_at` rescales to time.
        Self::build(start_ns, 1e9, kind, lane, stride, Some(stages))
    }

    /// The schedule of a replayed trace: each record of `stream` at `start_ns` plus its offset,
    /// its `seq` the record's index in the trace. `max_request_bytes` bounds a record's
    /// encoded request (the copy of the taken one is sized once, here).
    pub fn replayed(start_ns: u64, mut stream: ReplayStream, max_request_bytes: usize) -> Self {
        let mut s = Self::build(start_ns, 1e9, ArrivalKind::Constant, 0, 1, None);
        let current = stream.peek().map(|(e, _)| e);
        s.current_ns = current.map_or(u64::MAX, |e| start_ns + e.offset_ns);
        s.replay = Some(Box::new(ReplayCursor {
            stream,
            current,
            taken: Vec::with_capacity(max_request_bytes),
            taken_head: false,
        }));
        s
    }

    /// Replay: the encoded request of the entry last moved past by [`Schedule::advance`], and
    /// whether it is a HEAD request (`None` without a trace).
    pub fn taken_request(&self) -> Option<(&[u8], bool)> {
        self.replay
            .as_ref()
            .map(|r| (r.taken.as_slice(), r.taken_head))
    }

    /// Ends the combined stream (all `stride` interleaved streams together) after `total`
    /// entries: this stream keeps the entries whose combined index is below `total`, so the
    /// union of the streams has exactly `total` entries whatever the float rounding of times.
    pub fn with_limit(mut self, total: u64) -> Self {
        // Slots lane, lane + stride, ... below total: ceil((total - lane) / stride).
        self.limit = self
            .limit
            .min(total.saturating_sub(self.lane).div_ceil(self.stride));
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
                self.poisson_at()
            }
        }
    }

    fn constant_at(&mut self, index: u64) -> u64 {
        let slot = index * self.stride + self.lane;
        match &self.stages {
            None => self.start_ns + (slot as f64 * self.period_ns) as u64,
            Some(t) => self.start_ns + t.constant_offset(slot, &mut self.stage_cursor),
        }
    }

    /// The instant of the current Poisson entry. With stages, `poisson_offset_ns` holds the
    /// integral of the rate (in requests) rather than nanoseconds, since the period is 1.
    fn poisson_at(&mut self) -> u64 {
        match &self.stages {
            None => self.start_ns + self.poisson_offset_ns as u64,
            Some(t) => {
                match t.rescaled_offset(self.poisson_offset_ns / 1e9, &mut self.stage_cursor) {
                    Some(offset) => self.start_ns + offset,
                    None => {
                        self.limit = self.index;
                        u64::MAX
                    }
                }
            }
        }
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

    /// How many of the upcoming entries (from the one [`Schedule::peek`] returns) are due
    /// before `until_ns`, counting at most `max`. Exact for one rate, stages and Poisson
    /// arrivals (the stream is run ahead and put back, its generator included, so that the
    /// entries counted are the ones it will produce); a replayed trace or a filtered stream
    /// counts the next entry alone.
    pub fn due_before(&mut self, until_ns: u64, max: usize) -> usize {
        if max == 0 || self.current_ns >= until_ns {
            return 0;
        }
        if self.replay.is_some() || self.keep.is_some() {
            return 1;
        }
        let saved = (
            self.index,
            self.poisson_offset_ns,
            self.rng.clone(),
            self.current_ns,
            self.limit,
            self.stage_cursor,
        );
        let mut due = 1;
        while due < max {
            self.advance_one();
            if self.current_ns >= until_ns {
                break;
            }
            due += 1;
        }
        (
            self.index,
            self.poisson_offset_ns,
            self.rng,
            self.current_ns,
            self.limit,
            self.stage_cursor,
        ) = saved;
        due
    }

    /// Keeps only the entries whose `seq` `keep` accepts (not for a replayed trace), up to
    /// `end_ns`: a stream of one rate has no end of its own, and one whose entries are all for
    /// other targets must not be searched for ever (past `end_ns` entries are never sent).
    pub fn filtered(mut self, keep: SeqFilter, end_ns: u64) -> Self {
        self.keep = Some(keep);
        self.keep_until_ns = end_ns;
        self.skip_unkept();
        self
    }

    fn skip_unkept(&mut self) {
        let Some(keep) = self.keep.take() else {
            return;
        };
        while self.current_ns < self.keep_until_ns && !(keep.0)(self.seq()) {
            self.advance_one();
        }
        self.keep = Some(keep);
    }

    /// Moves past the current entry (it was sent or otherwise accounted for).
    #[inline]
    pub fn advance(&mut self) {
        self.advance_one();
        if self.keep.is_some() {
            self.skip_unkept();
        }
    }

    #[inline]
    fn advance_one(&mut self) {
        if let Some(r) = &mut self.replay {
            self.index += 1;
            if let Some((entry, bytes)) = r.stream.peek() {
                r.taken.clear();
                r.taken.extend_from_slice(bytes);
                r.taken_head = entry.head_only;
                r.stream.advance();
            }
            r.current = r.stream.peek().map(|(e, _)| e);
            self.current_ns = r.current.map_or(u64::MAX, |e| self.start_ns + e.offset_ns);
            return;
        }
        self.index += 1;
        if self.index >= self.limit {
            self.current_ns = u64::MAX;
            return;
        }
        self.current_ns = match self.kind {
            ArrivalKind::Constant => self.constant_at(self.index),
            ArrivalKind::Poisson { .. } => {
                self.poisson_offset_ns += self.exponential_gap();
                self.poisson_at()
            }
        };
    }

    /// The global sequence number of the entry `peek` returns: its index in the whole schedule
    /// (all `stride` interleaved streams: threads times shards; a replayed record's index in the
    /// trace), unique across them.
    #[inline]
    pub fn seq(&self) -> u64 {
        match &self.replay {
            Some(r) => r.current.map_or(u64::MAX, |e| e.seq),
            None => self.index * self.stride + self.lane,
        }
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

    /// Every entry's instant, asking `due_before` before each: the schedule it leaves behind.
    fn take_asking(s: &mut Schedule, until: u64, asks: &mut Vec<usize>) -> Vec<u64> {
        let mut v = Vec::new();
        while s.peek() < until {
            asks.push(s.due_before(s.peek().saturating_add(3_500_000), 8));
            v.push(s.peek());
            s.advance();
        }
        v
    }

    #[test]
    fn due_before_counts_the_entries_to_come_and_leaves_the_schedule_as_it_was() {
        // 1000/s from 0: entries at 0, 1, 2, 3 ms ... are due before 3.5 ms; at most `max`.
        let mut s = Schedule::new(0, 1000.0, ArrivalKind::Constant, 0, 1);
        assert_eq!(s.due_before(3_500_000, 10), 4);
        assert_eq!(s.due_before(3_500_000, 2), 2);
        assert_eq!(s.due_before(0, 10), 0);
        assert_eq!(s.due_before(3_500_000, 0), 0);
        // A limit ends the count as it ends the stream.
        let mut limited = Schedule::new(0, 1000.0, ArrivalKind::Constant, 0, 1).with_limit(2);
        assert_eq!(limited.due_before(u64::MAX, 10), 2);
        // Asked before every entry, the schedule produces the same instants as one never asked,
        // for one rate, Poisson arrivals (their generator run ahead and put back) and stages.
        let table = Arc::new(StageTable::new(
            &candor_workload::profile::Profile::parse("500:1s,500..5000:1s").unwrap(),
        ));
        type Make = Box<dyn Fn() -> Schedule>;
        let makes: [(&str, Make); 4] = [
            (
                "constant",
                Box::new(|| Schedule::new(0, 2000.0, ArrivalKind::Constant, 1, 3)),
            ),
            (
                "poisson",
                Box::new(|| Schedule::new(0, 2000.0, ArrivalKind::Poisson { seed: 7 }, 0, 2)),
            ),
            (
                "staged constant",
                Box::new({
                    let table = table.clone();
                    move || Schedule::staged(0, table.clone(), ArrivalKind::Constant, 0, 1)
                }),
            ),
            (
                "staged poisson",
                Box::new(move || {
                    Schedule::staged(0, table.clone(), ArrivalKind::Poisson { seed: 3 }, 0, 1)
                }),
            ),
        ];
        for (kind, make) in makes {
            // Beyond the window asked in, so that the last counts see what comes after it.
            let plain = take(&mut make(), 2_100_000_000);
            let mut asks = Vec::new();
            let asked = take_asking(&mut make(), 2_000_000_000, &mut asks);
            assert_eq!(asked, plain[..asked.len()], "{kind}");
            // Each count is the entries from that one on within 3.5 ms, as they came.
            for (i, &n) in asks.iter().enumerate() {
                let within = plain[i..]
                    .iter()
                    .take_while(|&&t| t < plain[i] + 3_500_000)
                    .take(8)
                    .count();
                assert_eq!(n, within, "{kind}, entry {i}");
            }
        }
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

    fn staged_streams(text: &str, kind: ArrivalKind, stride: u64) -> Vec<Vec<u64>> {
        let table = Arc::new(StageTable::new(
            &candor_workload::profile::Profile::parse(text).unwrap(),
        ));
        (0..stride)
            .map(|i| {
                take(
                    &mut Schedule::staged(0, table.clone(), kind, i, stride),
                    u64::MAX,
                )
            })
            .collect()
    }

    #[test]
    fn staged_constant_sends_each_stage_count_exactly_and_interleaves() {
        // 500/s for 2 s, 500..5000 over 2 s, 5000 for 1 s: 1000 + 5500 + 5000 sends.
        let text = "500:2s,500..5000:2s,5000:1s";
        let one = staged_streams(text, ArrivalKind::Constant, 1).remove(0);
        let per_stage = |times: &[u64]| {
            let mut c = [0u64; 3];
            for &t in times {
                c[if t < 2_000_000_000 {
                    0
                } else if t < 4_000_000_000 {
                    1
                } else {
                    2
                }] += 1;
            }
            c
        };
        assert_eq!(per_stage(&one), [1000, 5500, 5000]);
        assert!(one.windows(2).all(|w| w[0] < w[1]));
        // Hold: every 2 ms; the ramp starts at 2 s; the last hold every 200 µs, ending before 5 s.
        assert_eq!(&one[..3], &[0, 2_000_000, 4_000_000]);
        assert_eq!(one[1000], 2_000_000_000);
        assert_eq!(one[6500], 4_000_000_000);
        assert_eq!(one[6501] - one[6500], 200_000);
        assert_eq!(*one.last().unwrap(), 5_000_000_000 - 200_000);
        // Ramp 500..5000 over 2 s: integral 500τ + 1125τ², which is 1625 at τ = 1 s, so the
        // ramp's send k = 1625 is at 3 s exactly.
        assert_eq!(one[1000 + 1625], 3_000_000_000);
        // Three threads (or shards × threads) together are the one-stream schedule, and each
        // carries a third of every stage.
        let streams = staged_streams(text, ArrivalKind::Constant, 3);
        for s in &streams {
            let c = per_stage(s);
            assert!(
                (333..=334).contains(&c[0]) && (1833..=1834).contains(&c[1]),
                "{c:?}"
            );
        }
        let mut union: Vec<u64> = streams.concat();
        union.sort_unstable();
        assert_eq!(union, one);
    }

    #[test]
    fn staged_constant_with_a_limit_keeps_the_smaller_count() {
        let table = Arc::new(StageTable::new(
            &candor_workload::profile::Profile::parse("10:1s").unwrap(),
        ));
        let mut s = Schedule::staged(5, table, ArrivalKind::Constant, 0, 1).with_limit(4);
        assert_eq!(
            take(&mut s, u64::MAX),
            vec![5, 100_000_005, 200_000_005, 300_000_005]
        );
        assert_eq!(s.consumed(), 4);
    }

    #[test]
    fn staged_poisson_follows_the_profile_and_is_seeded() {
        // 1000/s for 10 s then a ramp 1000..9000 over 10 s: 10,000 and 50,000 expected arrivals.
        let text = "1k:10s,1k..9k:10s";
        let kind = ArrivalKind::Poisson { seed: 3 };
        let a = staged_streams(text, kind, 2);
        assert_eq!(a, staged_streams(text, kind, 2), "same seed, same schedule");
        let all: Vec<u64> = a.concat();
        let first = all.iter().filter(|&&t| t < 10_000_000_000).count() as f64;
        let second = all.len() as f64 - first;
        // Poisson counts: sd √10⁴ = 100 and √(5·10⁴) ≈ 224; 5 sd is a bound a correct
        // generator does not cross in practice (p ≈ 6e-7).
        assert!((first - 10_000.0).abs() < 500.0, "{first}");
        assert!((second - 50_000.0).abs() < 1120.0, "{second}");
        // The ramp's last second (rate 8.2k..9k) holds about 8,600 (sd ≈ 93).
        let last = all.iter().filter(|&&t| t >= 19_000_000_000).count() as f64;
        assert!((last - 8_600.0).abs() < 465.0, "{last}");
        assert!(all.iter().all(|&t| t < 20_000_000_000));
    }

    #[test]
    fn filtered_streams_of_one_stream_are_that_stream() {
        for kind in [ArrivalKind::Constant, ArrivalKind::Poisson { seed: 3 }] {
            let all: Vec<(u64, u64)> = {
                let mut s = Schedule::new(0, 1000.0, kind, 1, 2);
                (0..300)
                    .map(|_| {
                        let e = (s.peek(), s.seq());
                        s.advance();
                        e
                    })
                    .collect()
            };
            let end = all.last().unwrap().0 + 1;
            let mut union = Vec::new();
            for r in 0..3u64 {
                let keep = SeqFilter(Arc::new(move |seq| seq % 3 == r));
                let mut s = Schedule::new(0, 1000.0, kind, 1, 2).filtered(keep, end);
                while s.peek() < end {
                    assert_eq!(s.seq() % 3, r);
                    union.push((s.peek(), s.seq()));
                    s.advance();
                }
            }
            union.sort_unstable();
            assert_eq!(union, all, "{kind:?}");
            // A filter that keeps nothing ends at the bound instead of searching for ever.
            let none = SeqFilter(Arc::new(|_| false));
            let s = Schedule::new(0, 1000.0, kind, 0, 1).filtered(none, 5_000_000_000);
            assert!(s.peek() >= 5_000_000_000);
        }
    }

    #[test]
    fn a_replayed_schedule_yields_each_record_and_its_request() {
        let dir = std::env::temp_dir().join(format!("candor-replay-s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let mut text = String::new();
        for i in 0..2500u64 {
            let method = if i % 2 == 0 { "GET" } else { "HEAD" };
            text.push_str(&format!(
                "{{\"at\": {}, \"method\": \"{method}\", \"path\": \"/{i}\"}}\n",
                i as f64 / 1000.0
            ));
        }
        std::fs::write(&path, text).unwrap();
        let plan = candor_workload::replay::ReplayPlan::scan(&path, 1.0, false).unwrap();
        assert_eq!(
            plan.max_request_bytes,
            "HEAD /2499 HTTP/1.1\r\nHost: \r\n\r\n".len()
                + candor_wire::request_form::USER_AGENT_LINE.len()
        );
        let stream = plan.stream("h", 1, 2).unwrap();
        let mut s = Schedule::replayed(10, stream, plan.max_request_bytes + 1);
        let mut n = 0;
        while s.peek() != u64::MAX {
            let (t, seq) = (s.peek(), s.seq());
            assert_eq!(seq, 2 * n + 1);
            assert_eq!(t, 10 + seq * 1_000_000);
            s.advance();
            let (bytes, head) = s.taken_request().unwrap();
            assert_eq!(
                bytes,
                format!(
                    "HEAD /{seq} HTTP/1.1\r\nHost: h\r\n{}\r\n",
                    candor_wire::request_form::USER_AGENT_LINE
                )
                .as_bytes()
            );
            assert!(head);
            n += 1;
        }
        assert_eq!((n, s.consumed()), (1250, 1250));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
