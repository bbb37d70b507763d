//! HdrHistogram to Prometheus native (OpenTelemetry exponential) buckets, exactly (pure).
//!
//! Schema 7: bucket `i` holds the values in `(2^((i-1)/128), 2^(i/128)]` seconds, so neighbouring
//! bounds differ by a factor `2^(1/128) = 1.00543`. A quantile read from a bucket (Prometheus
//! interpolates inside it) is off by at most that width, 0.54%: the coarsest schema under 1%
//! (schema 6 is 1.09% wide). Schema 8, Prometheus's finest, halves it again at twice the
//! buckets; candor's HdrHistograms (3 significant digits, 0.1%) are finer than either.

use candor_core::Histo;

/// The schema candor pushes (see the module's comment for why 7).
pub const SCHEMA: i32 = 7;

/// A run of consecutive buckets: `offset` is the gap from the previous span's end (the first
/// span's: its first index), as both Prometheus and OTLP encode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: i32,
    pub length: u32,
}

/// A histogram on exponential buckets of [`SCHEMA`], in seconds, cumulative since its start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NativeHistogram {
    pub count: u64,
    pub sum_s: f64,
    /// Values of exactly 0 (a send lag of 0 ns): the zero bucket, threshold 0.
    pub zero_count: u64,
    /// Populated buckets in index order: `(index, count)`.
    pub buckets: Vec<(i32, u64)>,
}

/// The bucket of `ns` (> 0) at [`SCHEMA`]: the smallest `i` with `ns / 1e9 <= 2^(i / 2^SCHEMA)`.
pub fn bucket_index(ns: u64) -> i32 {
    let s = ns as f64 / 1e9;
    let scale = f64::from(1u32 << SCHEMA);
    let mut i = (s.log2() * scale).ceil() as i32;
    // log2 rounds; settle the bound exactly against the value it must hold.
    while upper_bound_s(i - 1) >= s {
        i -= 1;
    }
    while upper_bound_s(i) < s {
        i += 1;
    }
    i
}

/// The upper bound of bucket `i`, seconds.
pub fn upper_bound_s(i: i32) -> f64 {
    (f64::from(i) / f64::from(1u32 << SCHEMA)).exp2()
}

impl NativeHistogram {
    /// Every recorded value of `h` (ns) counted as its HdrHistogram bucket's highest equivalent,
    /// the value candor's own percentiles report, so a percentile candor reports lies in the
    /// bucket where Prometheus finds it.
    pub fn of(h: &Histo) -> NativeHistogram {
        let mut out = NativeHistogram::default();
        let mut sum_ns = 0u128;
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            let value = h.highest_equivalent(v.value_iterated_to());
            sum_ns += h.median_equivalent(value) as u128 * n as u128;
            out.count += n;
            if v.value_iterated_to() == 0 {
                out.zero_count += n;
                continue;
            }
            let i = bucket_index(value);
            match out.buckets.last_mut() {
                Some((last, c)) if *last == i => *c += n,
                _ => out.buckets.push((i, n)),
            }
        }
        out.sum_s = sum_ns as f64 / 1e9;
        out
    }

    /// The buckets as spans (gaps between runs of populated buckets).
    pub fn spans(&self) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        let mut end = 0i32;
        for &(i, _) in &self.buckets {
            match spans.last_mut() {
                Some(s) if i == end => s.length += 1,
                Some(_) => spans.push(Span {
                    offset: i - end,
                    length: 1,
                }),
                None => spans.push(Span {
                    offset: i,
                    length: 1,
                }),
            }
            end = i + 1;
        }
        spans
    }

    /// The counts as Prometheus's deltas: the first count, then each count minus the previous.
    pub fn deltas(&self) -> Vec<i64> {
        let mut prev = 0i64;
        self.buckets
            .iter()
            .map(|&(_, c)| {
                let d = c as i64 - prev;
                prev = c as i64;
                d
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    #[test]
    fn bucket_bounds_hold_their_values_inclusively() {
        // 1 s is exactly 2^0: the upper bound of bucket 0.
        assert_eq!(bucket_index(1_000_000_000), 0);
        assert_eq!(bucket_index(1_000_000_001), 1);
        assert_eq!(bucket_index(2_000_000_000), 128);
        assert_eq!(bucket_index(500_000_000), -128);
        for ns in [1u64, 999, 1_000, 123_456, 7_777_777, 3_600_000_000_000] {
            let i = bucket_index(ns);
            let s = ns as f64 / 1e9;
            assert!(upper_bound_s(i - 1) < s && s <= upper_bound_s(i), "{ns}");
        }
    }

    #[test]
    fn a_bucket_is_under_one_percent_wide() {
        let width = upper_bound_s(1) / upper_bound_s(0) - 1.0;
        assert!(width < 0.01 && width > 0.005, "{width}");
    }

    #[test]
    fn counts_spans_and_deltas_follow_the_histogram() {
        let mut h = new_histogram();
        h.record(0).unwrap();
        h.record_n(1_000_000_000, 3).unwrap(); // 1 s, bucket 1 (its HDR bucket's top is above 1 s)
        h.record(1_003_000_000).unwrap(); // same bucket as the top of 1 s
        h.record(2_100_000_000).unwrap(); // far away
        let n = NativeHistogram::of(&h);
        assert_eq!(n.count, 6);
        assert_eq!(n.zero_count, 1);
        let total: u64 = n.buckets.iter().map(|b| b.1).sum();
        assert_eq!(total + n.zero_count, n.count);
        assert_eq!(n.buckets.len(), 2, "{:?}", n.buckets);
        assert_eq!(n.buckets[0], (1, 4));
        let far = bucket_index(h.highest_equivalent(2_100_000_000));
        assert_eq!(n.buckets[1], (far, 1));
        assert_eq!(
            n.spans(),
            vec![
                Span {
                    offset: 1,
                    length: 1
                },
                Span {
                    offset: far - 2,
                    length: 1
                }
            ]
        );
        assert_eq!(n.deltas(), vec![4, -3]);
        assert!((n.sum_s - (3.0 + 1.003 + 2.1)).abs() < 0.01, "{}", n.sum_s);
    }

    #[test]
    fn a_quantile_read_from_the_buckets_is_within_the_bucket_of_candor_s() {
        // Prometheus's reading: the bucket holding rank q*count. candor's: value_at. They agree to
        // the bucket's width.
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 97_003).unwrap();
        }
        let n = NativeHistogram::of(&h);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let rank = (q * n.count as f64).ceil() as u64;
            let mut seen = 0;
            let bucket = n
                .buckets
                .iter()
                .find(|b| {
                    seen += b.1;
                    seen >= rank
                })
                .unwrap()
                .0;
            let candor = candor_core::hist::value_at(&h, q * 100.0) as f64 / 1e9;
            assert!(
                upper_bound_s(bucket - 1) < candor && candor <= upper_bound_s(bucket),
                "q {q}: {candor} not in bucket {bucket}"
            );
        }
    }
}
