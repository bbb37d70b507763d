//! HdrHistogram's after-the-fact correction for coordinated omission
//! (`copyCorrectedForCoordinatedOmission`): every recorded value `v` larger than the expected
//! interval `i` between samples also records `v − i, v − 2i, ...` down to `i`, standing for the
//! requests a schedule would have sent while that slow one was outstanding. It is an estimate for
//! data taken without a schedule; measuring from the intended send time is exact.

use candor_core::{new_histogram, Histo};

/// More added samples than this means the interval is far too small for the data.
pub const MAX_ADDED: u64 = 200_000_000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CorrectError {
    #[error("the expected interval must be positive")]
    ZeroInterval,
    #[error("an expected interval of {interval_ns} ns would add about {added} samples for these values (more than {max}); use a larger interval")]
    TooMany {
        interval_ns: u64,
        added: u64,
        max: u64,
    },
}

/// Samples the correction would add to `h`, computed without doing it.
pub fn added_samples(h: &Histo, interval_ns: u64) -> u64 {
    if interval_ns == 0 {
        return u64::MAX;
    }
    h.iter_recorded()
        .map(|v| {
            let value = v.value_iterated_to();
            let per = if value > interval_ns {
                (value - interval_ns) / interval_ns
            } else {
                0
            };
            per.saturating_mul(v.count_at_value())
        })
        .fold(0u64, u64::saturating_add)
}

/// A corrected copy of `h` (`h` is not changed). Java iterates the recorded values and calls
/// `recordValueWithCountAndExpectedInterval(valueIteratedTo, count, interval)` for each; so do we.
pub fn copy_corrected(h: &Histo, interval_ns: u64) -> Result<Histo, CorrectError> {
    if interval_ns == 0 {
        return Err(CorrectError::ZeroInterval);
    }
    let added = added_samples(h, interval_ns);
    if added > MAX_ADDED {
        return Err(CorrectError::TooMany {
            interval_ns,
            added,
            max: MAX_ADDED,
        });
    }
    let mut out = new_histogram();
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let count = v.count_at_value();
        out.saturating_record_n(value.max(1), count);
        if value <= interval_ns {
            continue;
        }
        let mut missing = value - interval_ns;
        while missing >= interval_ns {
            out.saturating_record_n(missing, count);
            missing -= interval_ns;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::hist::value_at;

    #[test]
    fn follows_record_value_with_expected_interval() {
        // One 100 ms sample, interval 10 ms: 100, 90, ..., 10 ms (10 samples).
        let mut h = new_histogram();
        h.record(100_000_000).unwrap();
        let c = copy_corrected(&h, 10_000_000).unwrap();
        assert_eq!(c.len(), 10);
        assert_eq!(added_samples(&h, 10_000_000), 9);
        assert!((c.min() as f64 - 10e6).abs() / 10e6 < 0.001, "{}", c.min());
        // Values at or below the interval are copied unchanged.
        let mut small = new_histogram();
        small.record_n(5_000, 7).unwrap();
        assert_eq!(copy_corrected(&small, 10_000).unwrap(), small);
    }

    #[test]
    fn jlbh_hiccup_example_from_the_notes() {
        // 100,000 iterations/s, 1 ms hiccup every 10,000: corrected p99.9 ~ 0.9 ms, p99.99 ~ 1 ms,
        // while the raw p99.9 stays at the normal 0.5 us (docs/truth.md, "In-process hiccup").
        let mut h = new_histogram();
        for i in 0..1_000_000u64 {
            h.record(if i % 10_000 == 9_999 { 1_000_000 } else { 500 })
                .unwrap();
        }
        assert_eq!(value_at(&h, 99.9), 500);
        let c = copy_corrected(&h, 10_000).unwrap();
        let p999 = value_at(&c, 99.9) as f64;
        assert!((p999 - 0.9e6).abs() < 0.02e6, "{p999}");
        assert!(value_at(&c, 99.99) as f64 > 0.98e6);
        assert_eq!(c.len(), 1_000_000 + 100 * 99);
    }

    #[test]
    fn refuses_absurd_intervals() {
        let mut h = new_histogram();
        h.record(3_600_000_000_000).unwrap();
        assert!(matches!(
            copy_corrected(&h, 1),
            Err(CorrectError::TooMany { .. })
        ));
        assert_eq!(copy_corrected(&h, 0), Err(CorrectError::ZeroInterval));
    }
}
