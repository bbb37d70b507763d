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
//! The test, on the percentile curve plotted against the number of nines (log10 of 1/(1−q)):
//! the samples at or above 10% of the maximum are at most 1% of all, the maximum is at least
//! [`MIN_RISE`] times the median, and the curve climbs from 10% to 90% of the maximum within
//! [`MAX_RISE_DECADES`] of a decade. An honest measurement of a stall of length S has waits
//! uniform on (0, S], so that climb takes log10(9) = 0.95 of a decade however rare the stall is;
//! a closed loop puts its few stalled samples all near S, a vertical step. With the expected
//! interval between samples, those slow samples must also stand for at least
//! [`MIN_MISSING_RATIO`] times more requests than were recorded (HdrHistogram's correction
//! would add `v/interval − 1` samples for each). A legitimately bimodal distribution (a rare,
//! fixed slow path) can trip this too, so the verdict speaks of a signature, not a proof.

use candor_core::units::{format_count, format_ns};
use candor_core::Histo;

/// The maximum must be at least this many times the median.
pub const MIN_RISE: f64 = 10.0;
/// Largest share of samples at or above 10% of the maximum.
pub const MAX_TAIL_SHARE: f64 = 0.01;
/// Widest climb from 10% to 90% of the maximum, in decades of 1/(1−q).
pub const MAX_RISE_DECADES: f64 = 0.25;
/// Implied missing samples per recorded slow sample.
pub const MIN_MISSING_RATIO: f64 = 10.0;

pub use candor_core::analysis::CoSignature;

/// Looks for the signature in `h`. `expected_interval_ns` is the intended time between samples
/// of one sender; when unknown, the median is used (a closed loop sends again as soon as it
/// gets an answer, so its interval is about the typical latency).
pub fn detect(h: &Histo, expected_interval_ns: Option<u64>) -> Option<CoSignature> {
    let n = h.len();
    if n < 100 {
        return None;
    }
    let median = candor_core::hist::value_at(h, 50.0).max(1);
    let interval = expected_interval_ns.filter(|&i| i > 0).unwrap_or(median);
    let max = h.max();
    if (max as f64) < MIN_RISE * median as f64 {
        return None;
    }
    let values: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| {
            (
                h.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .collect();
    let at_least = |floor: f64| -> u64 {
        values
            .iter()
            .filter(|v| v.0 as f64 >= floor)
            .map(|v| v.1)
            .sum()
    };
    let tail10 = at_least(0.1 * max as f64);
    let tail90 = at_least(0.9 * max as f64).max(1);
    if tail10 == 0 || tail10 as f64 > MAX_TAIL_SHARE * n as f64 {
        return None;
    }
    let decades = (tail10 as f64 / tail90 as f64).log10();
    if decades > MAX_RISE_DECADES {
        return None;
    }
    let implied: f64 = values
        .iter()
        .filter(|v| v.0 as f64 >= 0.1 * max as f64)
        .map(|&(v, c)| c as f64 * ((v as f64 / interval as f64) - 1.0).max(0.0))
        .sum();
    if implied < MIN_MISSING_RATIO * tail10 as f64 {
        return None;
    }
    let below_ns = values
        .iter()
        .rev()
        .find(|v| (v.0 as f64) < 0.1 * max as f64)
        .map_or(0, |v| v.0);
    let above_ns = values
        .iter()
        .find(|v| v.0 as f64 >= 0.1 * max as f64)
        .map_or(max, |v| v.0);
    let at_percentile = 100.0 * (n - tail10) as f64 / n as f64;
    let verdict = format!(
        "coordinated-omission signature: the percentile curve rises near-vertically at p{}: its top {} of {} \
         samples lie between {} and the max {} (median {}), climbing from 10% to 90% of the max within {decades:.2} \
         of a decade (an honest measurement of a stall takes 0.95). Had requests kept being sent every {} while \
         those were slow, about {} more samples would lie in that range, so percentiles above p{} are likely far \
         too low; `candor correct --expected-interval {}` gives an estimate, measuring open-loop (-R RATE) the answer",
        trim_pct(at_percentile),
        format_count(tail10),
        format_count(n),
        format_ns(above_ns as f64),
        format_ns(max as f64),
        format_ns(median as f64),
        format_ns(interval as f64),
        format_count(implied.round() as u64),
        trim_pct(at_percentile),
        compact_duration(interval),
    );
    Some(CoSignature {
        below_ns,
        above_ns,
        at_percentile,
        tail_samples: tail10,
        samples: n,
        rise_decades: decades,
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
        // The freezes [1.5 s, 2 s), [3.5 s, 4 s), ...: each request waits until its freeze ends.
        let stalls: Vec<(u64, u64)> = (0..4)
            .map(|k| (k * 2_000 * MS + 1_500 * MS, (k + 1) * 2_000 * MS))
            .collect();
        let mut h = new_histogram();
        for i in 0..8_000u64 {
            let t = i * MS;
            let wait = stalls
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
    fn a_noisy_closed_loop_still_shows_it() {
        // As measured on a busy machine (candor run -R max -c 4 against a 300 ms stall every
        // second): hiccups of 3-60 ms between the body and the stalled samples.
        let mut h = new_histogram();
        h.record_n(20_000, 400_000).unwrap();
        for v in [3u64, 4, 5, 5, 14, 25, 31, 62] {
            h.record_n(v * MS, 5).unwrap();
        }
        for c in 0..22u64 {
            h.record(288 * MS + c * MS).unwrap();
        }
        let s = detect(&h, Some(50_000)).expect("signature");
        assert!(s.rise_decades < 0.2, "{}", s.rise_decades);
    }

    #[test]
    fn rare_honest_stall_is_not_vertical() {
        // A 10 ms stall every 10 s measured open-loop at 10 kHz: 0.1% of samples, uniform waits.
        let mut h = new_histogram();
        h.record_n(50_000, 999_000).unwrap();
        for i in 0..1_000u64 {
            h.record(50_000 + i * 10_000).unwrap();
        }
        assert!(detect(&h, None).is_none());
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
