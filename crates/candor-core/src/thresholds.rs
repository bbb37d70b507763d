//! The thresholds at which a report calls something wrong, each written once so that the text
//! report, the live view, shard reports, sweeps and capacity searches agree on the same words.

/// A run "fell behind" when it achieved less than this fraction of its target rate: below it the
/// target (or candor) could not keep up, and the response times include the queueing that caused.
pub const FELL_BEHIND_FRACTION: f64 = 0.95;

/// True when `achieved_per_s` fell behind `target_per_s` (see [`FELL_BEHIND_FRACTION`]).
pub fn fell_behind(achieved_per_s: f64, target_per_s: f64) -> bool {
    achieved_per_s < FELL_BEHIND_FRACTION * target_per_s
}

/// Send lag above this at p99 means requests commonly left late (1 ms).
pub const SEND_LAG_WARN_NS: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falling_behind_starts_just_below_95_percent() {
        assert!(!fell_behind(95.0, 100.0));
        assert!(fell_behind(94.9, 100.0));
        assert!(!fell_behind(120.0, 100.0));
    }
}
