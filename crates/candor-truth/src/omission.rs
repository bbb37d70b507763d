//! The signature of coordinated omission in a latency distribution recorded without a schedule
//! (a closed loop, or another tool's log), and what it looks like.
//!
//! When a closed loop meets a stall, each connection records one slow sample and then simply
//! stops sending until the stall ends; the thousands of requests a user population would have
//! sent meanwhile are never recorded. The percentile curve therefore runs flat at the normal
//! service time and then rises near-vertically to the stall length, carried by a handful of
//! samples. An honest (schedule-driven) measurement of the same stall has a gradual rise instead:
//! every instant of the stall contributes a sample, with waits spread over (0, stall].
//!
//! The test: in the top 10% of the distribution, adjacent recorded values jump by at least
//! [`MIN_JUMP`]x, the samples above the jump are at most 1% of all, and, with the expected
//! interval between samples, those slow samples stand for at least [`MIN_MISSING_RATIO`] times
//! more requests than were recorded (HdrHistogram's correction would add `v/interval − 1`
//! samples for each). A distribution that is legitimately bimodal can trip this too, so the
//! verdict speaks of a signature, not a proof.

use candor_core::units::{format_count, format_ns};
use candor_core::Histo;
use serde::{Deserialize, Serialize};

/// Smallest jump between adjacent recorded values that counts as near-vertical.
pub const MIN_JUMP: f64 = 10.0;
/// Largest share of samples above the jump.
pub const MAX_TAIL_SHARE: f64 = 0.01;
/// Implied missing samples per recorded slow sample.
pub const MIN_MISSING_RATIO: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoSignature {
    /// Largest value below the jump, and smallest above it, ns.
    pub below_ns: u64,
    pub above_ns: u64,
    /// Percentile (0..100) at which the curve jumps.
    pub at_percentile: f64,
    /// Samples above the jump.
    pub tail_samples: u64,
    pub samples: u64,
    /// Samples a schedule-driven measurement would have recorded in the jump's range, estimated
    /// with the expected interval (HdrHistogram's correction).
    pub implied_missing: f64,
    pub expected_interval_ns: u64,
    pub verdict: String,
}

/// Looks for the signature in `h`. `expected_interval_ns` is the intended time between samples
/// of one sender; when unknown, the median is used (a closed loop sends again as soon as it
/// gets an answer, so its interval is about the typical latency).
pub fn detect(h: &Histo, expected_interval_ns: Option<u64>) -> Option<CoSignature> {
    let n = h.len();
    if n < 100 {
        return None;
    }
    let interval = expected_interval_ns
        .filter(|&i| i > 0)
        .unwrap_or_else(|| candor_core::hist::value_at(h, 50.0).max(1));
    let values: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| {
            (
                h.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .collect();
    let mut below = 0u64;
    let mut best: Option<(usize, f64)> = None;
    for i in 0..values.len().saturating_sub(1) {
        below += values[i].1;
        let tail = n - below;
        if (below as f64) < 0.9 * n as f64 || tail as f64 > MAX_TAIL_SHARE * n as f64 {
            continue;
        }
        let jump = values[i + 1].0 as f64 / values[i].0.max(1) as f64;
        if jump >= MIN_JUMP && best.is_none_or(|(_, j)| jump > j) {
            best = Some((i, jump));
        }
    }
    let (i, jump) = best?;
    let below_count: u64 = values[..=i].iter().map(|v| v.1).sum();
    let tail = n - below_count;
    let implied: f64 = values[i + 1..]
        .iter()
        .map(|&(v, c)| c as f64 * ((v as f64 / interval as f64) - 1.0).max(0.0))
        .sum();
    if implied < MIN_MISSING_RATIO * tail as f64 {
        return None;
    }
    let (below_ns, above_ns) = (values[i].0, values[i + 1].0);
    let at_percentile = 100.0 * below_count as f64 / n as f64;
    let verdict = format!(
        "coordinated-omission signature: the percentile curve jumps {jump:.0}x, from {} at p{} to {}, carried by \
         only {} of {} samples; had requests kept being sent every {} while those were slow, about {} more \
         samples would lie in that range. Percentiles above p{} are likely far too low; try \
         `candor correct --expected-interval {}` for an estimate, or measure open-loop (-R RATE)",
        format_ns(below_ns as f64),
        trim_pct(at_percentile),
        format_ns(above_ns as f64),
        format_count(tail),
        format_count(n),
        format_ns(interval as f64),
        format_count(implied.round() as u64),
        trim_pct(at_percentile),
        compact_duration(interval),
    );
    Some(CoSignature {
        below_ns,
        above_ns,
        at_percentile,
        tail_samples: tail,
        samples: n,
        implied_missing: implied,
        expected_interval_ns: interval,
        verdict,
    })
}

/// A percentile printed with as many decimals as it needs (99.99, not 99.990000).
pub fn trim_pct(p: f64) -> String {
    let s = format!("{p:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A duration as a flag value (`50us`, `2ms`), rounded to the unit.
pub fn compact_duration(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{}ms", (ns as f64 / 1e6).round())
    } else if ns >= 10_000 {
        format!("{}us", (ns as f64 / 1e3).round())
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;
    use candor_core::truth::StallTruth;

    const MS: u64 = 1_000_000;

    /// What a closed loop of 10 connections records against a server that answers in 50 us and
    /// freezes for 500 ms every 2 s, over 8 s: ~10 slow samples per freeze.
    fn closed_loop_stall() -> Histo {
        let mut h = new_histogram();
        h.record_n(50_000, 400_000).unwrap();
        for k in 0..4 {
            for c in 0..10u64 {
                h.record(500 * MS - c * 40_000 - k).unwrap();
            }
        }
        h
    }

    /// What an open-loop measurement of the same stall records: the truth, sampled at 1 kHz.
    fn open_loop_stall() -> Histo {
        let truth = StallTruth::periodic(0, 2_000 * MS, 500 * MS, 0, 8_000 * MS, 50_000);
        let mut h = new_histogram();
        for i in 0..8_000u64 {
            let t = i * MS;
            let wait = truth
                .stalls
                .iter()
                .find(|&&(s, e)| t >= s && t < e)
                .map_or(0, |&(_, e)| e - t);
            h.record(50_000 + wait).unwrap();
        }
        h
    }

    #[test]
    fn closed_loop_stall_shows_the_signature() {
        let s = detect(&closed_loop_stall(), None).expect("signature");
        assert_eq!(s.tail_samples, 40);
        assert!(s.above_ns > 400 * MS && s.below_ns < 100_000, "{s:?}");
        assert!(s.at_percentile > 99.98, "{}", s.at_percentile);
        assert!(s.implied_missing > 100_000.0, "{}", s.implied_missing);
        assert!(
            s.verdict
                .contains("candor correct --expected-interval 50us"),
            "{}",
            s.verdict
        );
    }

    #[test]
    fn honest_measurement_of_the_same_stall_does_not() {
        assert!(detect(&open_loop_stall(), None).is_none());
        // Nor does a smooth unimodal distribution.
        let mut h = new_histogram();
        for v in 1..=100_000u64 {
            h.record(1_000 + v * 10).unwrap();
        }
        assert!(detect(&h, None).is_none());
    }

    #[test]
    fn a_long_expected_interval_explains_the_slow_samples() {
        // If one sample per second was intended, 500 ms outliers imply no missing samples.
        assert!(detect(&closed_loop_stall(), Some(1_000 * MS)).is_none());
    }
}
