//! Comparisons with confidence: the ratio candidate/baseline of a percentile with a 95%
//! confidence interval, and the verdict `faster`, `slower`, `same` or `not enough samples`.
//!
//! The interval comes from a block bootstrap over the runs' measured intervals: neighbouring
//! requests share stalls, queues and GC pauses, so single requests are not independent, but
//! whole intervals (a second or so) nearly are. Each resample draws as many intervals as the run
//! has, with replacement, from each run separately, merges their histograms, takes the
//! percentile of each and their ratio; the 2.5% and 97.5% points of the resampled ratios are the
//! interval (the percentile bootstrap). No distribution is assumed. With too few intervals for
//! that (fewer than [`MIN_BOOTSTRAP_INTERVALS`] in either run) each run's percentile gets an
//! order-statistic interval ([`crate::confidence`]) at level √0.95, so that both hold together
//! with probability at least 95%, and the ratio interval is the conservative
//! `low_candidate / high_baseline .. high_candidate / low_baseline`.

use crate::confidence::{rank_interval, samples_needed, value_at_rank};
use candor_core::Histo;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Fewer measured intervals than this in either run: order statistics instead of the bootstrap
/// (a bootstrap over a handful of blocks sees too few distinct resamples to have tails).
pub const MIN_BOOTSTRAP_INTERVALS: usize = 10;
/// Resamples of the bootstrap: the 2.5% point then rests on 50 resampled ratios.
pub const RESAMPLES: usize = 2_000;
/// The fixed seed, so the same files always give the same intervals and verdicts.
pub const SEED: u64 = 0x00ca_bd0e_5eed;
/// z of a two-sided interval at level √0.95 ≈ 97.47% (each tail 1.266%): two independent such
/// intervals hold together with probability 95%.
pub const Z_JOINT95: f64 = 2.236_476_6;
/// Most blocks a bootstrap draws from: longer runs have their consecutive intervals merged into
/// this many blocks of equal length (within one), which keeps a resample's cost bounded for an
/// hour-long run and only lengthens the blocks (longer blocks carry neighbouring correlation
/// better, not worse).
pub const MAX_BLOCKS: usize = 200;
/// Percentiles compared; 100 is the max.
pub const RATIO_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// What a row says about the candidate against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The whole interval lies below 1.
    #[serde(rename = "faster")]
    Faster,
    /// The whole interval lies above 1.
    #[serde(rename = "slower")]
    Slower,
    /// The interval contains 1.
    #[serde(rename = "same")]
    Same,
    /// A run has fewer samples than the percentile needs (about 100 beyond it), or is empty.
    #[serde(rename = "not enough samples")]
    NotEnoughSamples,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::NotEnoughSamples => "not enough samples",
        }
    }
}

/// How the interval of a comparison was derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Block bootstrap over the measured intervals.
    Bootstrap,
    /// Conservative ratio of per-run order-statistic bounds.
    OrderStatistics,
}

/// One percentile's ratio, interval and verdict (the JSON row of `candor compare --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioRow {
    /// 0..=100 (100 is the max).
    pub percentile: f64,
    /// candidate / baseline; `None` when the baseline's value is 0.
    pub ratio: Option<f64>,
    /// 95% interval; `None` where it is unbounded or not computed (the max has no interval).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
}

/// One run's samples of the compared measure: the whole measured window and its intervals.
pub struct RunSamples {
    pub total: Histo,
    /// Measured (not warm-up) intervals in time order, or consecutive groups of them (see
    /// [`Coalescer`]); empty ones may be included.
    pub intervals: Vec<Histo>,
    /// Measured intervals holding samples, before any grouping.
    pub measured: usize,
}

/// The comparison of one candidate with the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioComparison {
    pub method: Method,
    pub rows: Vec<RatioRow>,
}

/// A run's intervals as sparse (value index, count) lists over the run's distinct values, so a
/// resample merges by adding counts into one dense array.
struct Blocks {
    values: Vec<u64>,
    intervals: Vec<Vec<(u32, u64)>>,
}

impl Blocks {
    fn of(hs: &[Histo]) -> Blocks {
        let mut values: Vec<u64> = hs
            .iter()
            .flat_map(|h| {
                h.iter_recorded()
                    .map(|v| h.highest_equivalent(v.value_iterated_to()))
            })
            .collect();
        values.sort_unstable();
        values.dedup();
        let intervals = hs
            .iter()
            .map(|h| {
                h.iter_recorded()
                    .map(|v| {
                        let x = h.highest_equivalent(v.value_iterated_to());
                        let i = values.binary_search(&x).expect("value collected above");
                        (i as u32, v.count_at_value())
                    })
                    .collect()
            })
            .collect();
        Blocks { values, intervals }
    }
}

/// The values at ascending quantiles `qs` (0..1) of dense `counts` over `values`: the smallest
/// value with at least max(1, ⌈q·n⌉) samples at or below it, as HdrHistogram reads percentiles.
/// `None` for no samples.
fn quantiles(counts: &[u64], values: &[u64], qs: &[f64], out: &mut Vec<Option<u64>>) {
    out.clear();
    let n: u64 = counts.iter().sum();
    if n == 0 {
        out.extend(qs.iter().map(|_| None));
        return;
    }
    let mut seen = 0u64;
    let mut i = 0usize;
    for &q in qs {
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        while seen + counts[i] < rank {
            seen += counts[i];
            i += 1;
        }
        out.push(Some(values[i]));
    }
}

/// A uniform index below `k` (Lemire's multiply-shift; the bias is below k / 2^64).
fn pick(rng: &mut Xoshiro256PlusPlus, k: usize) -> usize {
    ((rng.next_u64() as u128 * k as u128) >> 64) as usize
}

/// One bootstrap resample of `b`: the merged counts of `k` intervals drawn with replacement.
fn resample(b: &Blocks, rng: &mut Xoshiro256PlusPlus, counts: &mut [u64]) {
    counts.iter_mut().for_each(|c| *c = 0);
    let k = b.intervals.len();
    for _ in 0..k {
        for &(i, c) in &b.intervals[pick(rng, k)] {
            counts[i as usize] += c;
        }
    }
}

/// The `p`-th (0..1) point of sorted `v` by the nearest-rank rule.
fn point(v: &[f64], p: f64) -> f64 {
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Adds `n` histograms, pushed in time order, into at most `max` consecutive groups whose sizes
/// differ by at most one, holding only the groups (a day of one-second intervals never sits in
/// memory at once).
pub struct Coalescer {
    n: usize,
    max: usize,
    seen: usize,
    groups: Vec<Histo>,
}

impl Coalescer {
    pub fn new(n: usize, max: usize) -> Coalescer {
        Coalescer {
            n,
            max: max.max(1),
            seen: 0,
            groups: Vec::new(),
        }
    }

    pub fn push(&mut self, h: Histo) {
        // Histogram i goes to group ⌊i·max/n⌋ (i itself when n ≤ max).
        let g = if self.n <= self.max {
            self.seen
        } else {
            self.seen * self.max / self.n
        };
        self.seen += 1;
        match self.groups.get_mut(g) {
            Some(group) => group
                .add(&h)
                .expect("histograms of one run share their range"),
            None => self.groups.push(h),
        }
    }

    pub fn finish(self) -> Vec<Histo> {
        self.groups
    }
}

/// `hs` merged by a [`Coalescer`] into at most `max` consecutive groups.
pub fn coalesce(hs: Vec<Histo>, max: usize) -> Vec<Histo> {
    let mut c = Coalescer::new(hs.len(), max);
    hs.into_iter().for_each(|h| c.push(h));
    c.finish()
}

/// Percentile-bootstrap intervals of candidate/baseline at each of `ps` (0..100, below 100,
/// ascending), from `resamples` resamples seeded with `seed`. `None` where a resample had no
/// samples or a zero baseline in more than 2.5% of resamples (the interval would be undefined).
pub fn bootstrap_ratio_ci(
    base: &[Histo],
    cand: &[Histo],
    ps: &[f64],
    resamples: usize,
    seed: u64,
) -> Vec<Option<(f64, f64)>> {
    let (bb, cb) = (Blocks::of(base), Blocks::of(cand));
    let qs: Vec<f64> = ps.iter().map(|p| p / 100.0).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut bc = vec![0u64; bb.values.len()];
    let mut cc = vec![0u64; cb.values.len()];
    let (mut bq, mut cq) = (Vec::new(), Vec::new());
    let mut ratios: Vec<Vec<f64>> = qs.iter().map(|_| Vec::with_capacity(resamples)).collect();
    let mut undefined = vec![0usize; qs.len()];
    for _ in 0..resamples {
        resample(&bb, &mut rng, &mut bc);
        resample(&cb, &mut rng, &mut cc);
        quantiles(&bc, &bb.values, &qs, &mut bq);
        quantiles(&cc, &cb.values, &qs, &mut cq);
        for j in 0..qs.len() {
            match (bq[j], cq[j]) {
                (Some(b), Some(c)) if b > 0 => ratios[j].push(c as f64 / b as f64),
                _ => undefined[j] += 1,
            }
        }
    }
    ratios
        .into_iter()
        .zip(undefined)
        .map(|(mut r, bad)| {
            if r.is_empty() || bad * 40 > resamples {
                return None;
            }
            r.sort_by(|a, b| a.total_cmp(b));
            Some((point(&r, 0.025), point(&r, 0.975)))
        })
        .collect()
}

/// Order-statistic bounds of quantile `q` of `h` at normal score `z`: `(low, high)`, `high`
/// `None` when the samples cannot bound it from above.
fn order_bounds(h: &Histo, q: f64, z: f64) -> (Option<u64>, Option<u64>) {
    match rank_interval(h.len(), q, z) {
        Some((lo, hi)) => (value_at_rank(h, lo), hi.and_then(|r| value_at_rank(h, r))),
        None => (None, None),
    }
}

/// The conservative ratio interval from per-run order-statistic bounds at level √0.95 each.
pub fn order_statistic_ratio_ci(base: &Histo, cand: &Histo, p: f64) -> (Option<f64>, Option<f64>) {
    let q = p / 100.0;
    let (bl, bh) = order_bounds(base, q, Z_JOINT95);
    let (cl, ch) = order_bounds(cand, q, Z_JOINT95);
    let low = match (cl, bh) {
        (Some(c), Some(b)) if b > 0 => Some(c as f64 / b as f64),
        _ => None,
    };
    let high = match (ch, bl) {
        (Some(c), Some(b)) if b > 0 => Some(c as f64 / b as f64),
        _ => None,
    };
    (low, high)
}

/// The verdict of an interval (`None` ends are unbounded: 0 below, infinity above).
pub fn verdict_of(ci_low: Option<f64>, ci_high: Option<f64>) -> Verdict {
    if ci_low.is_some_and(|l| l > 1.0) {
        Verdict::Slower
    } else if ci_high.is_some_and(|h| h < 1.0) {
        Verdict::Faster
    } else {
        Verdict::Same
    }
}

/// Whether both runs have the samples percentile `p` needs (about 100 beyond it; never for the
/// max).
pub fn supported(p: f64, base_n: u64, cand_n: u64) -> bool {
    let need = samples_needed(p / 100.0);
    base_n >= need && cand_n >= need
}

/// Measured intervals that hold samples: the blocks a bootstrap can draw.
pub fn usable_intervals(r: &RunSamples) -> usize {
    r.measured
}

/// Compares `cand` with `base` at each of `percentiles` (0..=100, ascending).
pub fn compare(
    base: &RunSamples,
    cand: &RunSamples,
    percentiles: &[f64],
    resamples: usize,
    seed: u64,
) -> RatioComparison {
    let method = if usable_intervals(base).min(usable_intervals(cand)) >= MIN_BOOTSTRAP_INTERVALS {
        Method::Bootstrap
    } else {
        Method::OrderStatistics
    };
    let inner: Vec<f64> = percentiles.iter().copied().filter(|&p| p < 100.0).collect();
    let boot = match method {
        Method::Bootstrap => {
            let nonempty = |r: &RunSamples| -> Vec<Histo> {
                let hs = r
                    .intervals
                    .iter()
                    .filter(|h| !h.is_empty())
                    .cloned()
                    .collect();
                coalesce(hs, MAX_BLOCKS)
            };
            bootstrap_ratio_ci(&nonempty(base), &nonempty(cand), &inner, resamples, seed)
        }
        Method::OrderStatistics => Vec::new(),
    };
    let (bn, cn) = (base.total.len(), cand.total.len());
    let rows = percentiles
        .iter()
        .map(|&p| {
            let (bv, cv) = (
                candor_core::hist::value_at(&base.total, p),
                candor_core::hist::value_at(&cand.total, p),
            );
            let ratio = (bn > 0 && cn > 0 && bv > 0).then(|| cv as f64 / bv as f64);
            let (ci_low, ci_high) = if p >= 100.0 || bn == 0 || cn == 0 {
                (None, None)
            } else {
                match method {
                    Method::Bootstrap => {
                        let j = inner.iter().position(|&x| x == p).expect("inner holds p");
                        boot[j].map_or((None, None), |(l, h)| (Some(l), Some(h)))
                    }
                    Method::OrderStatistics => {
                        order_statistic_ratio_ci(&base.total, &cand.total, p)
                    }
                }
            };
            let verdict = if !supported(p, bn, cn) || ratio.is_none() {
                Verdict::NotEnoughSamples
            } else {
                verdict_of(ci_low, ci_high)
            };
            RatioRow {
                percentile: p,
                ratio,
                ci_low,
                ci_high,
                verdict,
            }
        })
        .collect();
    RatioComparison { method, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    /// A run of `intervals` intervals of `per` samples each: 0.6 ms plus an exponential with
    /// mean 0.4 ms (so p50 ≈ 0.88 ms, p90 ≈ 1.52 ms), plus `shift_ns`.
    fn run(
        rng: &mut Xoshiro256PlusPlus,
        intervals: usize,
        per: usize,
        shift_ns: u64,
    ) -> RunSamples {
        let mut total = new_histogram();
        let mut ivs = Vec::new();
        for _ in 0..intervals {
            let mut h = new_histogram();
            for _ in 0..per {
                let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                let v = 600_000.0 - 400_000.0 * u.ln();
                h.record(v as u64 + shift_ns).unwrap();
            }
            total.add(&h).unwrap();
            ivs.push(h);
        }
        RunSamples {
            total,
            measured: ivs.len(),
            intervals: ivs,
        }
    }

    #[test]
    fn quantiles_follow_the_hdr_rank_rule() {
        let values = [10, 20, 30, 40];
        let counts = [1, 1, 1, 1];
        let mut out = Vec::new();
        quantiles(&counts, &values, &[0.0, 0.25, 0.5, 0.51, 0.99], &mut out);
        assert_eq!(out, [Some(10), Some(10), Some(20), Some(30), Some(40)]);
        quantiles(&[0, 0, 0, 0], &values, &[0.5], &mut out);
        assert_eq!(out, [None]);
        // Agrees with candor_core::hist::value_at on a real histogram.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let r = run(&mut rng, 3, 1000, 0);
        let b = Blocks::of(&r.intervals);
        let mut counts = vec![0u64; b.values.len()];
        for iv in &b.intervals {
            for &(i, c) in iv {
                counts[i as usize] += c;
            }
        }
        quantiles(&counts, &b.values, &[0.5, 0.9, 0.99], &mut out);
        for (j, p) in [50.0, 90.0, 99.0].into_iter().enumerate() {
            assert_eq!(
                out[j],
                Some(candor_core::hist::value_at(&r.total, p)),
                "p{p}"
            );
        }
    }

    #[test]
    fn long_runs_are_coalesced_into_at_most_max_blocks_in_order() {
        let hs: Vec<Histo> = (1..=7u64)
            .map(|v| {
                let mut h = new_histogram();
                h.record(v).unwrap();
                h
            })
            .collect();
        let c = coalesce(hs.clone(), 3);
        // 7 into 3: groups {1,2,3}, {4,5}, {6,7} by i*3/7 = 0,0,0,1,1,2,2.
        let got: Vec<(u64, u64, u64)> = c.iter().map(|h| (h.len(), h.min(), h.max())).collect();
        assert_eq!(got, [(3, 1, 3), (2, 4, 5), (2, 6, 7)]);
        assert_eq!(coalesce(hs, 10).len(), 7);
    }

    #[test]
    fn verdicts_read_the_interval() {
        assert_eq!(verdict_of(Some(1.02), Some(1.12)), Verdict::Slower);
        assert_eq!(verdict_of(Some(0.9), Some(0.98)), Verdict::Faster);
        assert_eq!(verdict_of(Some(0.97), Some(1.03)), Verdict::Same);
        assert_eq!(verdict_of(None, None), Verdict::Same);
        assert_eq!(verdict_of(None, Some(0.5)), Verdict::Faster);
        assert_eq!(
            serde_json::to_value(Verdict::NotEnoughSamples).unwrap(),
            "not enough samples"
        );
    }

    #[test]
    fn same_distribution_reads_same_at_p50_and_p90_at_most_about_5_percent_of_the_time() {
        // 200 seeded trials of two independent runs from one distribution (30 intervals of 400
        // samples). A 95% interval excludes 1 in 5% of trials: Binomial(200, 0.05) has mean 10
        // and sd 3.1; 20 false alarms per row is 3.2 sd above the mean (P < 0.3% for a correct
        // interval), while an interval that ignored the bootstrap and read any difference as a
        // change would alarm in nearly every trial. Seeded, so deterministic anyway.
        let trials = 200;
        let mut alarms = [0usize; 2];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        for t in 0..trials {
            let a = run(&mut rng, 30, 400, 0);
            let b = run(&mut rng, 30, 400, 0);
            let c = compare(&a, &b, &[50.0, 90.0], 1_000, t as u64);
            assert_eq!(c.method, Method::Bootstrap);
            for (j, row) in c.rows.iter().enumerate() {
                assert_ne!(row.verdict, Verdict::NotEnoughSamples);
                if row.verdict != Verdict::Same {
                    alarms[j] += 1;
                }
            }
        }
        assert!(
            alarms[0] <= 20 && alarms[1] <= 20,
            "false alarms {alarms:?} of {trials}"
        );
    }

    #[test]
    fn a_one_millisecond_shift_reads_slower_and_the_reverse_faster() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let a = run(&mut rng, 20, 1_000, 0);
        let b = run(&mut rng, 20, 1_000, 1_000_000);
        let c = compare(&a, &b, &RATIO_PERCENTILES, RESAMPLES, SEED);
        assert_eq!(c.method, Method::Bootstrap);
        let v: Vec<Verdict> = c.rows.iter().map(|r| r.verdict).collect();
        // 20,000 samples support p50, p90, p99 (10,000 needed) but not p99.9 nor the max.
        assert_eq!(
            v,
            [
                Verdict::Slower,
                Verdict::Slower,
                Verdict::Slower,
                Verdict::NotEnoughSamples,
                Verdict::NotEnoughSamples
            ]
        );
        // p50 ≈ 0.88 ms -> 1.88 ms: ratio ≈ 2.1, inside its interval.
        let r = &c.rows[0];
        let ratio = r.ratio.unwrap();
        assert!((1.9..2.3).contains(&ratio), "{r:?}");
        assert!(
            r.ci_low.unwrap() <= ratio && ratio <= r.ci_high.unwrap(),
            "{r:?}"
        );
        assert_eq!(c.rows[4].ci_low, None);
        let back = compare(&b, &a, &[50.0, 90.0], RESAMPLES, SEED);
        assert!(back.rows.iter().all(|r| r.verdict == Verdict::Faster));
        // Same seed, same answer.
        assert_eq!(compare(&a, &b, &RATIO_PERCENTILES, RESAMPLES, SEED), c);
    }

    #[test]
    fn few_intervals_fall_back_to_conservative_order_statistics() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let a = run(&mut rng, 5, 4_000, 0);
        let b = run(&mut rng, 5, 4_000, 1_000_000);
        let c = compare(&a, &b, &[50.0, 90.0], RESAMPLES, SEED);
        assert_eq!(c.method, Method::OrderStatistics);
        assert!(c.rows.iter().all(|r| r.verdict == Verdict::Slower), "{c:?}");
        // The interval is exactly low_b/high_a .. high_b/low_a of the per-run bounds.
        let q = 0.5;
        let (al, ah) = order_bounds(&a.total, q, Z_JOINT95);
        let (bl, bh) = order_bounds(&b.total, q, Z_JOINT95);
        let r = &c.rows[0];
        assert_eq!(r.ci_low, Some(bl.unwrap() as f64 / ah.unwrap() as f64));
        assert_eq!(r.ci_high, Some(bh.unwrap() as f64 / al.unwrap() as f64));
        // The same run against itself: the interval straddles 1.
        let same = compare(&a, &a, &[50.0, 90.0], RESAMPLES, SEED);
        assert!(
            same.rows.iter().all(|r| r.verdict == Verdict::Same),
            "{same:?}"
        );
    }

    #[test]
    fn empty_or_small_runs_do_not_support_percentiles() {
        let empty = RunSamples {
            total: new_histogram(),
            intervals: vec![],
            measured: 0,
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let a = run(&mut rng, 12, 10, 0);
        let c = compare(&empty, &a, &RATIO_PERCENTILES, 100, SEED);
        assert!(c
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::NotEnoughSamples && r.ratio.is_none()));
        // 120 samples: too few even for p50 (200 needed), but the ratio is still given.
        let c = compare(&a, &a, &[50.0], 100, SEED);
        assert_eq!(c.rows[0].verdict, Verdict::NotEnoughSamples);
        assert_eq!(c.rows[0].ratio, Some(1.0));
        assert!(supported(99.0, 10_000, 10_000) && !supported(99.0, 10_000, 9_999));
    }
}
