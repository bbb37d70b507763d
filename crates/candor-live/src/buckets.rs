//! The classic bucket bounds of `/metrics` and a run's histogram on them (pure): log-linear
//! edges, so that PromQL's `histogram_quantile` over them is within 10% of the true value
//! wherever a latency falls, beside the native (exponential) buckets of the protobuf exposition.

use candor_core::Histo;
use candor_push::native::NativeHistogram;

/// Mantissas of the bounds within a decade, in tenths: steps of 0.1 from 1 to 2, 0.2 from 2 to
/// 5 and 0.5 from 5 to 10, so that each bound is at most 10% above the one below it (the widest
/// steps are 1 to 1.1, 2 to 2.2 and 5 to 5.5). 35 per decade.
const MANTISSAS: [u64; 35] = [
    10, 11, 12, 13, 14, 15, 16, 17, 18, 19, // 1.0 ..= 1.9
    20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, // 2.0 ..= 4.8
    50, 55, 60, 65, 70, 75, 80, 85, 90, 95, // 5.0 ..= 9.5
];

/// Decades covered by the log-linear bounds: from 1 us to 100 s.
const DECADES: usize = 8;

/// Upper bucket bounds in nanoseconds: log-linear from 1 us to 100 s (see `MANTISSAS`), then
/// 1 h (the histograms' own ceiling). Fixed for every run so that shards and runs add up bucket
/// by bucket. Above 100 s a quantile is only known to lie between 100 s and 1 h.
pub const BUCKET_BOUNDS_NS: [u64; DECADES * MANTISSAS.len() + 2] = {
    let mut b = [0u64; DECADES * MANTISSAS.len() + 2];
    let mut decade = 1_000u64;
    let mut i = 0;
    let mut d = 0;
    while d < DECADES {
        let mut m = 0;
        while m < MANTISSAS.len() {
            b[i] = MANTISSAS[m] * decade / 10;
            i += 1;
            m += 1;
        }
        decade *= 10;
        d += 1;
    }
    b[i] = decade;
    b[i + 1] = 3_600_000_000_000;
    b
};

/// The largest relative width of a bucket below 100 s: the bound on how far PromQL's linear
/// interpolation inside a bucket can land from any value in it.
pub const MAX_RELATIVE_WIDTH: f64 = 0.1;

/// A histogram on [`BUCKET_BOUNDS_NS`] (`cumulative[i]`: values at most bound `i`) and the same
/// values on native buckets (for the protobuf exposition).
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    pub cumulative: [u64; BUCKET_BOUNDS_NS.len()],
    pub count: u64,
    pub sum_ns: u128,
    pub native: NativeHistogram,
}

impl Buckets {
    /// Counts every recorded value of `h` under the first bound at or above it. A value stands
    /// for its HdrHistogram bucket's highest equivalent, as candor's percentiles do, so a
    /// percentile candor reports lies in the bucket where Prometheus finds it.
    pub fn of(h: &Histo) -> Buckets {
        let mut per = [0u64; BUCKET_BOUNDS_NS.len()];
        let mut sum_ns = 0u128;
        let mut above = 0u64;
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            sum_ns += h.median_equivalent(value) as u128 * n as u128;
            match BUCKET_BOUNDS_NS.partition_point(|&b| b < value) {
                i if i < per.len() => per[i] += n,
                _ => above += n,
            }
        }
        let mut cumulative = per;
        for i in 1..cumulative.len() {
            cumulative[i] += cumulative[i - 1];
        }
        Buckets {
            cumulative,
            count: cumulative[cumulative.len() - 1] + above,
            sum_ns,
            native: NativeHistogram::of(h),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    /// PromQL's `histogram_quantile`: the bucket where rank `q * count` falls, then linear
    /// interpolation between its bounds (from 0 in the first bucket), as Prometheus does.
    fn promql_quantile(b: &Buckets, q: f64) -> f64 {
        let rank = q * b.count as f64;
        let i = b.cumulative.iter().position(|&c| c as f64 >= rank).unwrap();
        let (lo, below) = match i {
            0 => (0.0, 0.0),
            _ => (BUCKET_BOUNDS_NS[i - 1] as f64, b.cumulative[i - 1] as f64),
        };
        let hi = BUCKET_BOUNDS_NS[i] as f64;
        let inside = (b.cumulative[i] as f64 - below).max(1.0);
        (lo + (hi - lo) * (rank - below) / inside) / 1e9
    }

    #[test]
    fn bounds_are_log_linear_from_a_microsecond_to_100_s_then_an_hour() {
        assert_eq!(BUCKET_BOUNDS_NS.len(), 282);
        assert_eq!(BUCKET_BOUNDS_NS[0], 1_000);
        assert_eq!(BUCKET_BOUNDS_NS[1], 1_100);
        assert_eq!(BUCKET_BOUNDS_NS[10], 2_000);
        assert_eq!(BUCKET_BOUNDS_NS[11], 2_200);
        assert_eq!(BUCKET_BOUNDS_NS[35], 10_000);
        assert!(BUCKET_BOUNDS_NS.contains(&100_000_000)); // 100 ms, a TTFT
        assert!(BUCKET_BOUNDS_NS.contains(&20_000_000)); // 20 ms, an ITL
        assert_eq!(BUCKET_BOUNDS_NS[280], 100_000_000_000);
        assert_eq!(
            BUCKET_BOUNDS_NS[281],
            candor_core::hist::HIGHEST_TRACKABLE_NS
        );
        assert!(BUCKET_BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_bucket_below_100_s_is_at_most_10_percent_wide() {
        let widest = BUCKET_BOUNDS_NS[..281]
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / w[0] as f64)
            .fold(0.0, f64::max);
        assert!(
            (widest - MAX_RELATIVE_WIDTH).abs() < 1e-12,
            "widest step {widest}"
        );
    }

    #[test]
    fn promql_quantiles_are_within_10_percent_at_llm_timings_and_at_a_stall() {
        // Point masses just above a bound are the worst case: the whole bucket is interpolated
        // over while every value sits at its bottom. TTFT ~101 ms, ITL ~20.8 ms, a 1 s stall.
        for truth_ns in [
            101_000_000u64,
            20_800_000,
            1_000_000_000,
            268_000_000,
            7_777,
        ] {
            let mut h = new_histogram();
            h.record_n(truth_ns, 1000).unwrap();
            let b = Buckets::of(&h);
            for q in [0.5, 0.9, 0.99] {
                let got = promql_quantile(&b, q);
                let truth = candor_core::hist::value_at(&h, q * 100.0) as f64 / 1e9;
                let err = (got - truth).abs() / truth;
                assert!(
                    err <= MAX_RELATIVE_WIDTH + 1e-9,
                    "{truth_ns} ns q {q}: {got} vs {truth}"
                );
            }
        }
        // A spread distribution (1 ms .. 1 s): every quantile within the bound too.
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000).unwrap();
        }
        let b = Buckets::of(&h);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let got = promql_quantile(&b, q);
            let truth = candor_core::hist::value_at(&h, q * 100.0) as f64 / 1e9;
            assert!((got - truth).abs() / truth <= MAX_RELATIVE_WIDTH, "q {q}");
        }
    }

    #[test]
    fn buckets_are_cumulative_and_inclusive_of_their_bound() {
        let mut h = new_histogram();
        for v in [500u64, 1_000, 1_001, 1_500_000, 1_999_000, 7_000_000_000] {
            h.record(v).unwrap();
        }
        let b = Buckets::of(&h);
        assert_eq!(b.count, 6);
        assert_eq!(b.native.count, 6);
        assert_eq!(b.cumulative[0], 2, "500 ns and exactly 1 us are <= 1 us");
        assert_eq!(b.cumulative[1], 3, "1001 ns is <= 1.1 us");
        let at = |ns: u64| BUCKET_BOUNDS_NS.iter().position(|&x| x == ns).unwrap();
        assert_eq!(b.cumulative[at(1_500_000) - 1], 3);
        assert_eq!(
            b.cumulative[at(1_500_000)],
            3,
            "1.5 ms's HDR bucket tops it"
        );
        assert_eq!(b.cumulative[at(1_600_000)], 4);
        assert_eq!(b.cumulative[at(2_000_000)], 5, "1.999 ms is <= 2 ms");
        assert_eq!(b.cumulative[at(6_500_000_000)], 5);
        assert_eq!(b.cumulative[at(7_000_000_000)], 5, "above 7 s exactly");
        assert_eq!(b.cumulative[at(7_500_000_000)], 6, "7 s is <= 7.5 s");
        let expect_sum = 500.0 + 1_000.0 + 1_001.0 + 1.5e6 + 1.999e6 + 7e9;
        assert!(((b.sum_ns as f64) - expect_sum).abs() / expect_sum < 1e-3);
    }

    #[test]
    fn a_value_counts_as_its_hdr_bucket_s_highest_equivalent() {
        // Exactly 2 ms shares an HdrHistogram bucket (512 ns wide there) with values above 2 ms;
        // it is counted where candor's own percentiles would put it: above the 2 ms bound.
        let mut h = new_histogram();
        h.record(2_000_000).unwrap();
        let b = Buckets::of(&h);
        let two_ms = BUCKET_BOUNDS_NS
            .iter()
            .position(|&x| x == 2_000_000)
            .unwrap();
        assert_eq!(b.cumulative[two_ms], 0);
        assert_eq!(b.cumulative[two_ms + 1], 1);
        assert!(candor_core::hist::value_at(&h, 99.0) > 2_000_000);
    }
}
