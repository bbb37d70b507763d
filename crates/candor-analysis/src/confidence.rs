//! How far a measured percentile can be trusted: the distribution-free confidence interval from
//! order statistics, and the rule of thumb for how many samples a percentile needs.
//!
//! For `n` independent samples the number below the true `q`-quantile is Binomial(n, q), so the
//! sorted samples at ranks `n·q ± z·sqrt(n·q·(1−q))` bracket the true quantile with probability
//! about 95% for z = 1.96 (normal approximation of the binomial). Nothing about the shape of
//! the distribution is assumed. Samples of latency are not strictly independent (a stall slows
//! many neighbours at once), so the interval is a lower bound on the real uncertainty.

use candor_core::units::{format_count, format_ns};
use candor_core::Histo;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Samples needed for percentile `q` (0..1) by the usual rule: about 100 samples beyond it, i.e.
/// `100 / (1 − q)` (p99: 10,000; p99.9: 100,000). `u64::MAX` for the max (q >= 1).
pub fn samples_needed(q: f64) -> u64 {
    if q >= 1.0 {
        return u64::MAX;
    }
    (100.0 / (1.0 - q.max(0.0)) - 1e-6).ceil() as u64
}

/// The lowest percentile the reports show (p50): a count too small for it supports none of them.
pub const LOWEST_REPORTED_PERCENTILE: f64 = 50.0;

/// The highest percentile (0..100) that `n` samples support by [`samples_needed`]; `None` below
/// [`LOWEST_REPORTED_PERCENTILE`] (200 samples), where the rule would name percentiles such as
/// p0 that no report shows.
pub fn highest_supported_percentile(n: u64) -> Option<f64> {
    if n < samples_needed(LOWEST_REPORTED_PERCENTILE / 100.0) {
        return None;
    }
    Some(100.0 * (1.0 - 100.0 / n as f64))
}

/// How far `n` samples reach, for "N samples ...": "support percentiles up to p99" or why none.
pub fn support_phrase(n: u64) -> String {
    match highest_supported_percentile(n) {
        Some(p) => format!(
            "support percentiles up to p{}",
            crate::omission::trim_pct((p * 100.0).floor() / 100.0)
        ),
        None => format!(
            "are too few for any reported percentile by the ~100/(1-q) rule (p{} needs {})",
            LOWEST_REPORTED_PERCENTILE,
            samples_needed(LOWEST_REPORTED_PERCENTILE / 100.0)
        ),
    }
}

/// 1-based ranks `(lower, upper)` of the order statistics bracketing quantile `q` of `n` samples;
/// `upper` is `None` when the interval reaches beyond the largest sample (the data cannot bound
/// the quantile from above).
pub fn rank_interval(n: u64, q: f64, z: f64) -> Option<(u64, Option<u64>)> {
    if n == 0 || !(0.0..1.0).contains(&q) {
        return None;
    }
    let nf = n as f64;
    let centre = nf * q;
    let half = z * (nf * q * (1.0 - q)).sqrt();
    let lower = ((centre - half).floor()).max(1.0) as u64;
    let upper = (centre + half).ceil() + 1.0;
    let upper = (upper <= nf).then_some(upper as u64);
    Some((lower.min(n), upper))
}

/// The recorded value of 1-based `rank` in sorted order, read from the histogram (the highest
/// value equivalent to its bucket, as HdrHistogram reports percentiles).
pub fn value_at_rank(h: &Histo, rank: u64) -> Option<u64> {
    if rank == 0 || rank > h.len() {
        return None;
    }
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return Some(h.highest_equivalent(v.value_iterated_to()));
        }
    }
    None
}

pub use candor_core::analysis::PercentileConfidence;

/// Confidence of each percentile in `percentiles` (0..=100) of histogram `h`.
pub fn percentile_confidence(h: &Histo, percentiles: &[f64]) -> Vec<PercentileConfidence> {
    let n = h.len();
    percentiles
        .iter()
        .map(|&p| {
            let value_ns = candor_core::hist::value_at(h, p);
            if p >= 100.0 {
                // The true maximum is at least the largest sample; nothing bounds it from above.
                return PercentileConfidence {
                    percentile: p,
                    value_ns,
                    lower_ns: (n > 0).then_some(value_ns),
                    upper_ns: None,
                    samples: n,
                    samples_needed: u64::MAX,
                    supported: false,
                };
            }
            let q = p / 100.0;
            let (lower_ns, upper_ns) = match rank_interval(n, q, Z95) {
                Some((lo, hi)) => (value_at_rank(h, lo), hi.and_then(|r| value_at_rank(h, r))),
                None => (None, None),
            };
            let need = samples_needed(q);
            PercentileConfidence {
                percentile: p,
                value_ns,
                lower_ns,
                upper_ns,
                samples: n,
                samples_needed: need,
                supported: n >= need,
            }
        })
        .collect()
}

/// "p99.9 (1,000 samples; ~100,000 needed)" style notes, for text reports.
pub fn describe(c: &PercentileConfidence) -> String {
    let range = match (c.lower_ns, c.upper_ns) {
        (Some(lo), Some(hi)) => format!("{} .. {}", format_ns(lo as f64), format_ns(hi as f64)),
        (Some(lo), None) => format!("{} .. (beyond the data)", format_ns(lo as f64)),
        _ => "—".to_string(),
    };
    let support = if c.percentile >= 100.0 {
        "the true max is at least this".to_string()
    } else if c.supported {
        "enough samples".to_string()
    } else {
        format!(
            "not enough samples ({} of ~{})",
            format_count(c.samples),
            format_count(c.samples_needed)
        )
    };
    format!("{range}  {support}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    #[test]
    fn samples_needed_follows_the_rule_of_thumb() {
        assert_eq!(samples_needed(0.5), 200);
        assert_eq!(samples_needed(0.9), 1_000);
        assert_eq!(samples_needed(0.99), 10_000);
        assert_eq!(samples_needed(0.999), 100_000);
        assert_eq!(samples_needed(0.9999), 1_000_000);
        assert_eq!(samples_needed(1.0), u64::MAX);
        let top = highest_supported_percentile(10_000).unwrap();
        assert!((top - 99.0).abs() < 1e-9);
        assert_eq!(highest_supported_percentile(99), None);
        // 100 samples reach "p0" by the bare rule: no report shows that, so none is claimed.
        for n in [100, 150, 199] {
            assert_eq!(highest_supported_percentile(n), None, "{n}");
            let phrase = support_phrase(n);
            assert!(!phrase.contains("up to p"), "{n}: {phrase}");
            assert!(phrase.contains("p50 needs 200"), "{n}: {phrase}");
        }
        assert_eq!(highest_supported_percentile(200), Some(50.0));
        assert_eq!(support_phrase(200), "support percentiles up to p50");
        assert_eq!(support_phrase(10_000), "support percentiles up to p99");
        assert_eq!(support_phrase(1_500), "support percentiles up to p93.33");
    }

    #[test]
    fn rank_interval_matches_the_binomial() {
        // n = 10,000, q = 0.99: n q = 9,900, sd = sqrt(99) = 9.95, z sd = 19.5 -> 9880 .. 9921.
        let (lo, hi) = rank_interval(10_000, 0.99, Z95).unwrap();
        assert_eq!(lo, 9_880);
        assert_eq!(hi, Some(9_921));
        // Too few samples for p99.99: the interval runs past the largest sample.
        let (_, hi) = rank_interval(1_000, 0.9999, Z95).unwrap();
        assert_eq!(hi, None);
        assert_eq!(rank_interval(0, 0.5, Z95), None);
    }

    #[test]
    fn the_interval_covers_the_true_quantile_about_95_percent_of_the_time() {
        // Uniform samples on 1..=1,000,000 ns from a fixed LCG: the true p90 is 900,000 ns.
        let mut state = 12345u64;
        let mut covered = 0;
        let trials = 200;
        for _ in 0..trials {
            let mut h = new_histogram();
            for _ in 0..2_000 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                h.record(1 + (state >> 33) % 1_000_000).unwrap();
            }
            let c = &percentile_confidence(&h, &[90.0])[0];
            let (lo, hi) = (c.lower_ns.unwrap(), c.upper_ns.unwrap());
            // Histogram buckets are 0.1% wide; allow that much around the true quantile.
            if lo as f64 <= 900_000.0 * 1.001 && hi as f64 >= 900_000.0 * 0.999 {
                covered += 1;
            }
        }
        // Binomial(200, 0.95): 95% of the time between 184 and 196; 180 leaves room for the
        // normal approximation and the bucket rounding, and fails a broken interval (a ±1-rank
        // interval covers in ~5% of trials).
        assert!(covered >= 180, "covered {covered} of {trials}");
    }

    #[test]
    fn value_at_rank_reads_sorted_order() {
        let mut h = new_histogram();
        for v in [5u64, 1, 3, 3, 9] {
            h.record(v).unwrap();
        }
        let got: Vec<u64> = (1..=5).map(|r| value_at_rank(&h, r).unwrap()).collect();
        assert_eq!(got, [1, 3, 3, 5, 9]);
        assert_eq!(value_at_rank(&h, 6), None);
        assert_eq!(value_at_rank(&h, 0), None);
    }

    #[test]
    fn support_is_marked_not_hidden() {
        let mut h = new_histogram();
        for v in 1..=5_000u64 {
            h.record(v * 100).unwrap();
        }
        let c = percentile_confidence(&h, &[50.0, 99.0, 100.0]);
        assert!(c[0].supported);
        assert!(!c[1].supported);
        assert!(c[1].value_ns > 0, "the value is still reported");
        assert!(describe(&c[1]).contains("not enough samples"));
        assert!(c[0].lower_ns.unwrap() <= c[0].value_ns && c[0].value_ns <= c[0].upper_ns.unwrap());
        assert_eq!(c[2].upper_ns, None);
    }
}
