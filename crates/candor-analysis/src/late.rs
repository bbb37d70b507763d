//! When the generator's own lateness deserves a warning: only when the late sends are numerous
//! enough to move a percentile the reports lead with, and then by how much.

use candor_core::units::format_count;

/// Late sends above this share of the intended requests trigger the warning.
///
/// Derivation: a send the generator made late adds its lateness to one request's response time,
/// so `k` late sends out of `n` can at worst become the `k` largest response times. The value at
/// percentile `p` has rank `ceil(n * p / 100)`; it can be one of the late ones only when
/// `k > n * (1 - p / 100)`. The headline percentiles candor reports and the SLOs people set go up
/// to p99.9, i.e. `1 - p/100 = 0.001`: with at most 0.1% of sends late, p99.9 and every lower
/// percentile are provably made of on-time sends, and only the few largest values (p99.99, max)
/// could hold late ones, which is what `generator_late` in the JSON records. One late send in a
/// healthy 500/s run (the case that used to warn) is far below it.
pub const GENERATOR_LATE_WARN_SHARE: f64 = 0.001;

/// What `late` late sends out of `intended` can do to the percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LateEffect {
    pub late: u64,
    pub intended: u64,
    /// `late / intended`, in percent.
    pub share_percent: f64,
    /// The lowest percentile that the late sends could have raised (`100 * (1 - late/intended)`):
    /// this one and every one above it.
    pub lowest_affected_percentile: f64,
}

/// The effect of the generator's late sends when it could change a reported percentile
/// (more than [`GENERATOR_LATE_WARN_SHARE`] of the intended requests), else `None`.
pub fn generator_late_effect(late: u64, intended: u64) -> Option<LateEffect> {
    if late == 0 || intended == 0 {
        return None;
    }
    // Exact: late / intended > 1/1000 (the constant's value) without rounding, in u128.
    let per_mille_den = (1.0 / GENERATOR_LATE_WARN_SHARE).round() as u128;
    if (late as u128) * per_mille_den <= intended as u128 {
        return None;
    }
    let share = late.min(intended) as f64 / intended as f64;
    Some(LateEffect {
        late,
        intended,
        share_percent: 100.0 * share,
        lowest_affected_percentile: 100.0 * (1.0 - share),
    })
}

/// `1 request`, `2 requests`: a count with its noun in the right number.
pub fn count_noun(n: u64, singular: &str, plural: &str) -> String {
    format!(
        "{} {}",
        format_count(n),
        if n == 1 { singular } else { plural }
    )
}

/// A percentile as a short label: `p98.8`, `p99.95`, `p0`.
pub fn percentile_label(p: f64) -> String {
    // Round down to 3 decimals so the label never claims a higher percentile than affected; the
    // small allowance keeps binary noise (97.49999999999999 for 97.5) from rounding a step down.
    let v = (p * 1000.0 + 1e-6).floor() / 1000.0;
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

impl LateEffect {
    /// The warning a run (or a shard of one) prints.
    pub fn warning(&self) -> String {
        format!(
            "the generator itself sent {} ({:.2}% of {}) more than 1ms late while a connection was free: \
             percentiles from {} up may include its lateness; candor was short of CPU, use more threads \
             or a lower rate",
            count_noun(self.late, "request", "requests"),
            self.share_percent,
            format_count(self.intended),
            percentile_label(self.lowest_affected_percentile),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_above_one_in_a_thousand() {
        // One late send at 500/s for 20 s (10,000 requests): no warning.
        assert_eq!(generator_late_effect(1, 10_000), None);
        assert_eq!(generator_late_effect(0, 10_000), None);
        assert_eq!(generator_late_effect(5, 0), None);
        // Exactly 0.1% cannot move p99.9: still no warning.
        assert_eq!(generator_late_effect(10, 10_000), None);
        // One more can.
        let e = generator_late_effect(11, 10_000).unwrap();
        assert_eq!(e.late, 11);
        assert!((e.share_percent - 0.11).abs() < 1e-12);
        assert!((e.lowest_affected_percentile - 99.89).abs() < 1e-9);
        // No overflow at the extremes.
        assert_eq!(generator_late_effect(u64::MAX / 1000, u64::MAX), None);
        assert!(generator_late_effect(u64::MAX, u64::MAX).is_some());
    }

    #[test]
    fn the_warning_says_how_much_with_correct_plurals() {
        let one = generator_late_effect(1, 100).unwrap().warning();
        assert!(
            one.starts_with("the generator itself sent 1 request (1.00% of 100)"),
            "{one}"
        );
        assert!(one.contains("percentiles from p99 up"), "{one}");
        let many = generator_late_effect(250, 10_000).unwrap().warning();
        assert!(
            many.starts_with("the generator itself sent 250 requests (2.50% of 10,000)"),
            "{many}"
        );
        assert!(many.contains("from p97.5 up"), "{many}");
    }

    #[test]
    fn labels_and_nouns() {
        assert_eq!(count_noun(1, "request", "requests"), "1 request");
        assert_eq!(count_noun(2, "request", "requests"), "2 requests");
        assert_eq!(count_noun(0, "request", "requests"), "0 requests");
        assert_eq!(count_noun(1500, "request", "requests"), "1,500 requests");
        assert_eq!(percentile_label(98.8), "p98.8");
        assert_eq!(percentile_label(99.0), "p99");
        assert_eq!(percentile_label(99.8999), "p99.899");
        assert_eq!(percentile_label(0.0), "p0");
    }
}
