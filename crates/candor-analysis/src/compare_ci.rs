//! Comparisons with confidence: the ratio candidate/baseline of a percentile with a 95%
//! confidence interval, and its verdict with the rule that decided it ([`crate::repeats`]):
//! `faster` or `slower` only across repeated runs, `changed beyond noise` for one run a side with
//! a noise floor, `same`, `inconclusive` (an interval containing 1 too wide to say `same`), `not
//! enough samples` or `not enough runs`.
//!
//! This module gives the interval of one run against one run; [`compare_repeats`] the interval
//! across repeated runs, which is the only one that covers run-to-run variation.
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
use crate::repeats::{self, Direction, Policy, Rule};
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

/// What a row says about the candidate against the baseline; the [`Rule`] beside it says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Repeats on both sides: the whole interval lies below 1 and the ratio below the threshold.
    #[serde(rename = "faster")]
    Faster,
    /// Repeats on both sides: the whole interval lies above 1 and the ratio above the threshold.
    #[serde(rename = "slower")]
    Slower,
    /// The interval contains 1 and rules out a change beyond
    /// [`repeats::INCONCLUSIVE_FACTOR`] either way, or the ratio is within the threshold of 1.
    #[serde(rename = "same")]
    Same,
    /// The interval contains 1 but is too wide to rule out a large change either way
    /// ([`repeats::too_wide`]): neither `same` nor a change.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// One run a side: the interval widened by the noise floor excludes 1 and the ratio is beyond
    /// the threshold (which way is the ratio's).
    #[serde(rename = "changed beyond noise")]
    ChangedBeyondNoise,
    /// One run a side and no noise floor, where the interval of one run excludes 1.
    #[serde(rename = "not enough runs")]
    NotEnoughRuns,
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
            Verdict::Inconclusive => "inconclusive",
            Verdict::ChangedBeyondNoise => "changed beyond noise",
            Verdict::NotEnoughRuns => "not enough runs",
            Verdict::NotEnoughSamples => "not enough samples",
        }
    }

    /// Whether the candidate's percentile is higher than the baseline's by a margin the verdict
    /// stands behind (what `--fail-if-slower` fails on).
    pub fn is_slower(self, ratio: Option<f64>) -> bool {
        match self {
            Verdict::Slower => true,
            Verdict::ChangedBeyondNoise => ratio.is_some_and(|r| r > 1.0),
            _ => false,
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
    /// Repeats on both sides: Welch's t on the logarithms of per-run percentiles
    /// ([`crate::repeats`]).
    AcrossRuns,
}

/// One percentile's ratio, interval and verdict (the JSON row of `candor compare --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioRow {
    /// 0..=100 (100 is the max).
    pub percentile: f64,
    /// candidate / baseline (across runs: of the geometric means of per-run percentiles);
    /// `None` when the baseline's value is 0.
    pub ratio: Option<f64>,
    /// The 95% interval the verdict was read from (one run a side with a noise floor: widened by
    /// it); `None` where it is unbounded or not trusted (too few samples, the max).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
    /// The rule that decided the verdict.
    pub rule: Rule,
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

/// The verdict of a row with one run a side, from its within-run interval (see
/// [`repeats::decide_single`]); rows without enough samples or a ratio show no interval.
fn single_row(
    p: f64,
    ratio: Option<f64>,
    ci: (Option<f64>, Option<f64>),
    supported: bool,
    policy: Policy,
) -> RatioRow {
    let row = |ci_low, ci_high, verdict, rule| RatioRow {
        percentile: p,
        ratio,
        ci_low,
        ci_high,
        verdict,
        rule,
    };
    let Some(r) = ratio.filter(|_| supported) else {
        let rule = if supported {
            Rule::NoRatio
        } else {
            Rule::NotEnoughSamples
        };
        return row(None, None, Verdict::NotEnoughSamples, rule);
    };
    let (dir, rule, l, h) = repeats::decide_single(r, ci.0, ci.1, policy);
    let verdict = match dir {
        Direction::Changed => Verdict::ChangedBeyondNoise,
        Direction::Undecided => Verdict::NotEnoughRuns,
        Direction::Slower => Verdict::Slower,
        Direction::Faster => Verdict::Faster,
        Direction::Same => Verdict::Same,
        Direction::Inconclusive => Verdict::Inconclusive,
    };
    row(l, h, verdict, rule)
}

/// Compares runs repeated on both sides (at least 2 each, every histogram one run's measured
/// window) at each of `percentiles` (0..=100, ascending): the across-run interval of
/// [`repeats::across_runs`] and its verdict. A percentile some run has too few samples for, and
/// the max, read `not enough samples`.
pub fn compare_repeats(
    base: &[Histo],
    cand: &[Histo],
    percentiles: &[f64],
    threshold: f64,
) -> RatioComparison {
    let rows = percentiles
        .iter()
        .map(|&p| {
            let min_n = base.iter().chain(cand).map(|h| h.len()).min().unwrap_or(0);
            let per_run = |hs: &[Histo]| -> Vec<u64> {
                hs.iter()
                    .map(|h| candor_core::hist::value_at(h, p))
                    .collect()
            };
            let (bv, cv) = (per_run(base), per_run(cand));
            let supported = p < 100.0 && supported(p, min_n, min_n);
            let across = repeats::across_runs(&bv, &cv);
            let row = |ratio, ci_low, ci_high, verdict, rule| RatioRow {
                percentile: p,
                ratio,
                ci_low,
                ci_high,
                verdict,
                rule,
            };
            match across {
                _ if !supported => {
                    let ratio = across.map(|a| a.0);
                    row(
                        ratio,
                        None,
                        None,
                        Verdict::NotEnoughSamples,
                        Rule::NotEnoughSamples,
                    )
                }
                None => row(None, None, None, Verdict::NotEnoughSamples, Rule::NoRatio),
                Some((r, l, h)) => {
                    let (dir, rule) = repeats::decide_across(r, l, h, threshold);
                    let verdict = match dir {
                        Direction::Slower => Verdict::Slower,
                        Direction::Faster => Verdict::Faster,
                        Direction::Inconclusive => Verdict::Inconclusive,
                        _ => Verdict::Same,
                    };
                    row(Some(r), Some(l), Some(h), verdict, rule)
                }
            }
        })
        .collect();
    RatioComparison {
        method: Method::AcrossRuns,
        rows,
    }
}

/// Compares `cand` with `base`, one run each, at each of `percentiles` (0..=100, ascending):
/// the within-run interval, read by `policy` (one run a side cannot say `faster` or `slower`).
pub fn compare(
    base: &RunSamples,
    cand: &RunSamples,
    percentiles: &[f64],
    resamples: usize,
    seed: u64,
    policy: Policy,
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
        Method::OrderStatistics | Method::AcrossRuns => Vec::new(),
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
                    Method::OrderStatistics | Method::AcrossRuns => {
                        order_statistic_ratio_ci(&base.total, &cand.total, p)
                    }
                }
            };
            single_row(p, ratio, (ci_low, ci_high), supported(p, bn, cn), policy)
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

    /// No row's verdict contradicts the interval printed beside it.
    fn assert_consistent(c: &RatioComparison) {
        for r in &c.rows {
            let (l, h) = (r.ci_low.unwrap_or(0.0), r.ci_high.unwrap_or(f64::INFINITY));
            match r.rule {
                Rule::NotEnoughSamples | Rule::NoRatio => {
                    assert_eq!(r.verdict, Verdict::NotEnoughSamples, "{r:?}");
                    assert!(r.ci_low.is_none() && r.ci_high.is_none(), "{r:?}");
                }
                Rule::IntervalContainsOne | Rule::InsideNoise => {
                    assert_eq!(r.verdict, Verdict::Same, "{r:?}");
                    assert!(l <= 1.0 && 1.0 <= h, "{r:?}");
                    assert!(!repeats::too_wide(r.ci_low, r.ci_high), "{r:?}");
                }
                Rule::IntervalTooWide => {
                    assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
                    assert!(l <= 1.0 && 1.0 <= h, "{r:?}");
                    assert!(repeats::too_wide(r.ci_low, r.ci_high), "{r:?}");
                }
                Rule::BelowThreshold => {
                    assert_eq!(r.verdict, Verdict::Same, "{r:?}");
                    assert!(!(l <= 1.0 && 1.0 <= h), "{r:?}");
                }
                Rule::SignificantAboveThreshold | Rule::BeyondNoise | Rule::NoNoiseFloor => {
                    let ratio = r.ratio.unwrap();
                    assert!(l <= ratio && ratio <= h, "{r:?}");
                    assert!(if ratio > 1.0 { l > 1.0 } else { h < 1.0 }, "{r:?}");
                    let want = match (r.rule, ratio > 1.0) {
                        (Rule::SignificantAboveThreshold, true) => Verdict::Slower,
                        (Rule::SignificantAboveThreshold, false) => Verdict::Faster,
                        (Rule::BeyondNoise, _) => Verdict::ChangedBeyondNoise,
                        _ => Verdict::NotEnoughRuns,
                    };
                    assert_eq!(r.verdict, want, "{r:?}");
                }
            }
        }
    }

    #[test]
    fn an_interval_not_trusted_is_not_shown() {
        // Issue 22: a p99 ratio of 2.389 with CI 1.083..4.093 read "not enough samples" beside an
        // interval above 1. A row without the samples for its percentile shows no interval.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let a = run(&mut rng, 12, 500, 0);
        let b = run(&mut rng, 12, 500, 1_500_000);
        let noise = Policy {
            noise: Some(0.05),
            ..Policy::default()
        };
        for policy in [Policy::default(), noise] {
            let c = compare(&a, &b, &RATIO_PERCENTILES, RESAMPLES, SEED, policy);
            // 6,000 samples: p50 and p90 supported, p99 (10,000) and above not.
            assert_eq!(c.rows[2].verdict, Verdict::NotEnoughSamples);
            assert!(c.rows[2].ratio.unwrap() > 1.0);
            assert_consistent(&c);
        }
        assert_eq!(
            serde_json::to_value(Verdict::ChangedBeyondNoise).unwrap(),
            "changed beyond noise"
        );
        assert_eq!(
            serde_json::to_value(Rule::SignificantAboveThreshold).unwrap(),
            "significant_above_threshold"
        );
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
            let c = compare(&a, &b, &[50.0, 90.0], 1_000, t as u64, Policy::default());
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
    fn a_one_millisecond_shift_is_a_change_beyond_noise_either_way() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let a = run(&mut rng, 20, 1_000, 0);
        let b = run(&mut rng, 20, 1_000, 1_000_000);
        let noise = Policy {
            noise: Some(0.05),
            ..Policy::default()
        };
        let c = compare(&a, &b, &RATIO_PERCENTILES, RESAMPLES, SEED, noise);
        assert_eq!(c.method, Method::Bootstrap);
        assert_consistent(&c);
        let v: Vec<Verdict> = c.rows.iter().map(|r| r.verdict).collect();
        // 20,000 samples support p50, p90, p99 (10,000 needed) but not p99.9 nor the max.
        assert_eq!(
            v,
            [
                Verdict::ChangedBeyondNoise,
                Verdict::ChangedBeyondNoise,
                Verdict::ChangedBeyondNoise,
                Verdict::NotEnoughSamples,
                Verdict::NotEnoughSamples
            ]
        );
        // Without a noise floor one run a side cannot tell a change from run-to-run variation.
        let bare = compare(
            &a,
            &b,
            &RATIO_PERCENTILES,
            RESAMPLES,
            SEED,
            Policy::default(),
        );
        assert_consistent(&bare);
        assert!(bare.rows[..3]
            .iter()
            .all(|r| r.verdict == Verdict::NotEnoughRuns && r.rule == Rule::NoNoiseFloor));
        // p50 ≈ 0.88 ms -> 1.88 ms: ratio ≈ 2.1, inside its interval.
        let r = &c.rows[0];
        let ratio = r.ratio.unwrap();
        assert!((1.9..2.3).contains(&ratio), "{r:?}");
        assert!(
            r.ci_low.unwrap() <= ratio && ratio <= r.ci_high.unwrap(),
            "{r:?}"
        );
        assert_eq!(c.rows[4].ci_low, None);
        let back = compare(&b, &a, &[50.0, 90.0], RESAMPLES, SEED, noise);
        assert!(back
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::ChangedBeyondNoise
                && r.ratio.unwrap() < 1.0
                && !r.verdict.is_slower(r.ratio)));
        assert!(c.rows[0].verdict.is_slower(c.rows[0].ratio));
        // Same seed, same answer.
        assert_eq!(
            compare(&a, &b, &RATIO_PERCENTILES, RESAMPLES, SEED, noise),
            c
        );
    }

    #[test]
    fn few_intervals_fall_back_to_conservative_order_statistics() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let a = run(&mut rng, 5, 4_000, 0);
        let b = run(&mut rng, 5, 4_000, 1_000_000);
        let c = compare(&a, &b, &[50.0, 90.0], RESAMPLES, SEED, Policy::default());
        assert_eq!(c.method, Method::OrderStatistics);
        assert!(
            c.rows.iter().all(|r| r.verdict == Verdict::NotEnoughRuns),
            "{c:?}"
        );
        // The interval is exactly low_b/high_a .. high_b/low_a of the per-run bounds.
        let q = 0.5;
        let (al, ah) = order_bounds(&a.total, q, Z_JOINT95);
        let (bl, bh) = order_bounds(&b.total, q, Z_JOINT95);
        let r = &c.rows[0];
        assert_eq!(r.ci_low, Some(bl.unwrap() as f64 / ah.unwrap() as f64));
        assert_eq!(r.ci_high, Some(bh.unwrap() as f64 / al.unwrap() as f64));
        // The same run against itself: the interval straddles 1.
        let same = compare(&a, &a, &[50.0, 90.0], RESAMPLES, SEED, Policy::default());
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
        let c = compare(&empty, &a, &RATIO_PERCENTILES, 100, SEED, Policy::default());
        assert!(c
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::NotEnoughSamples && r.ratio.is_none()));
        // 120 samples: too few even for p50 (200 needed), but the ratio is still given.
        let c = compare(&a, &a, &[50.0], 100, SEED, Policy::default());
        assert_eq!(c.rows[0].verdict, Verdict::NotEnoughSamples);
        assert_eq!(c.rows[0].ratio, Some(1.0));
        assert!(supported(99.0, 10_000, 10_000) && !supported(99.0, 10_000, 9_999));
    }

    #[test]
    fn repeats_are_compared_across_runs() {
        // Three runs a side whose levels differ by a few percent from run to run (what a one-run
        // interval does not see), then a candidate 30% slower.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let side = |rng: &mut Xoshiro256PlusPlus, shifts: [u64; 3]| -> Vec<Histo> {
            shifts
                .iter()
                .map(|&s| run(rng, 4, 3_000, s).total)
                .collect()
        };
        let a = side(&mut rng, [0, 40_000, 20_000]);
        let a2 = side(&mut rng, [30_000, 0, 10_000]);
        let b = side(&mut rng, [300_000, 330_000, 280_000]);
        let same = compare_repeats(&a, &a2, &RATIO_PERCENTILES, repeats::DEFAULT_THRESHOLD);
        assert_eq!(same.method, Method::AcrossRuns);
        assert_consistent(&same);
        assert_eq!(same.rows[0].verdict, Verdict::Same, "{same:?}");
        let slow = compare_repeats(&a, &b, &RATIO_PERCENTILES, repeats::DEFAULT_THRESHOLD);
        assert_consistent(&slow);
        let v: Vec<Verdict> = slow.rows.iter().map(|r| r.verdict).collect();
        // 12,000 samples a run: p50, p90 and p99 supported, p99.9 and the max not.
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
        // The ratio is that of the geometric means of the per-run percentiles.
        let p50 = |hs: &[Histo]| -> f64 {
            let logs: f64 = hs
                .iter()
                .map(|h| (candor_core::hist::value_at(h, 50.0) as f64).ln())
                .sum();
            (logs / hs.len() as f64).exp()
        };
        let want = p50(&b) / p50(&a);
        assert!((slow.rows[0].ratio.unwrap() - want).abs() < 1e-9);
        let back = compare_repeats(&b, &a, &[50.0], repeats::DEFAULT_THRESHOLD);
        assert_eq!(back.rows[0].verdict, Verdict::Faster);
    }
}
