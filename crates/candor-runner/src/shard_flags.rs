//! The flags that place one process's share of a sharded run: `--shard I/N` and `--start-at`
//! (when the shards' common schedule starts), each parsed and checked once.

use crate::flags::error::{FlagError, Result};

/// Parses `I/N`.
pub fn parse_shard(text: &str) -> Result<(u32, u32)> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => Err(FlagError::Invalid(format!(
            "invalid --shard '{text}': expected I/N with 0 <= I < N, e.g. 0/4"
        ))),
    }
}

/// How far ahead a `--start-at` may lie without `--start-at-far`.
pub const START_AT_HORIZON_NS: u64 = 86_400_000_000_000;

/// Refuses a `--start-at` (`text`, at wall-clock `at_ns`) more than a day after `now_ns` unless
/// `far` allows it: such an instant is far more often a typo than a plan.
pub fn check_start_ahead(text: &str, at_ns: u64, now_ns: u64, far: bool) -> Result<()> {
    if !far && at_ns > now_ns.saturating_add(START_AT_HORIZON_NS) {
        return Err(FlagError::Invalid(format!(
            "--start-at '{text}' is {:.1} days ahead: the run would wait until then; \
             add --start-at-far if that is meant",
            (at_ns - now_ns) as f64 / 86_400e9
        )));
    }
    Ok(())
}

/// Parses an RFC 3339 timestamp or Unix epoch seconds into wall-clock nanoseconds.
pub fn parse_start_at(text: &str) -> Result<u64> {
    if let Ok(secs) = text.trim().parse::<f64>() {
        // Nanoseconds since 1970 in a u64 reach the year 2554.
        if secs.is_finite() && secs > 0.0 && secs * 1e9 < u64::MAX as f64 {
            return Ok((secs * 1e9) as u64);
        }
        return Err(FlagError::Invalid(format!(
            "invalid --start-at '{text}': epoch seconds must be a positive finite instant before the year 2554"
        )));
    }
    let t = humantime::parse_rfc3339_weak(text.trim()).map_err(|_| {
        FlagError::Invalid(format!(
            "invalid --start-at '{text}': expected RFC 3339 (2026-11-21T23:00:00Z) or epoch seconds"
        ))
    })?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
        .ok_or_else(|| {
            FlagError::Invalid(format!(
                "invalid --start-at '{text}': the instant must lie between 1970 and the year 2554"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_instants_outside_what_a_u64_of_nanoseconds_holds_are_refused() {
        for bad in [
            "1e300",
            "inf",
            "NaN",
            "-5",
            "0",
            "9999-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_start_at("1.5").unwrap(), 1_500_000_000);
        assert_eq!(
            parse_start_at("2026-11-22T00:00:00Z").unwrap(),
            1_795_305_600_000_000_000
        );
        let now = 1_795_000_000_000_000_000;
        let day = START_AT_HORIZON_NS;
        assert!(check_start_ahead("x", now + day, now, false).is_ok());
        assert!(check_start_ahead("x", now + day + 1, now, false).is_err());
        assert!(check_start_ahead("x", now + 400 * day, now, true).is_ok());
        assert!(check_start_ahead("x", now - day, now, false).is_ok());
    }
}
