//! Calendar dates of wall-clock instants for people and for other tools' file formats, all from
//! `humantime`'s RFC 3339 formatting (one calendar routine for every format).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Latest instant RFC 3339 formatting accepts (the end of year 9999).
const LAST_UNIX_MS: i64 = 253_402_300_799_999;

/// `SystemTime` of `unix_ms` when humantime can format it (1970 .. 9999), else `None`.
fn instant(unix_ms: i64) -> Option<SystemTime> {
    (0..=LAST_UNIX_MS)
        .contains(&unix_ms)
        .then(|| UNIX_EPOCH + Duration::from_millis(unix_ms as u64))
}

/// Milliseconds of `unix_s`, rounded; `None` for a non-finite value.
fn millis(unix_s: f64) -> Option<i64> {
    unix_s.is_finite().then(|| (unix_s * 1000.0).round() as i64)
}

/// RFC 3339, UTC, milliseconds: `2026-01-01T00:00:00.000Z`; instants before 1970 or after 9999
/// are written as the number of seconds.
pub fn rfc3339_millis(unix_s: f64) -> String {
    match millis(unix_s).and_then(instant) {
        Some(t) => humantime::format_rfc3339_millis(t).to_string(),
        None => format!("{unix_s}"),
    }
}

/// `2026-01-01 00:00:00 UTC` (whole seconds, truncated), for report pages.
pub fn utc_seconds(unix_s: f64) -> String {
    match millis(unix_s).and_then(instant) {
        Some(t) => {
            let iso = humantime::format_rfc3339_seconds(t).to_string();
            format!("{} UTC", iso.trim_end_matches('Z').replacen('T', " ", 1))
        }
        None => format!("{unix_s}"),
    }
}

/// Java's `Date.toString()` for a UTC instant, as HdrHistogram's log writer prints it:
/// `Sat Nov 21 23:19:55 UTC 2026`; instants humantime cannot format are written as milliseconds.
pub fn java_date_utc(unix_ms: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let Some(t) = instant(unix_ms) else {
        return format!("{unix_ms}");
    };
    // `YYYY-MM-DDTHH:MM:SSZ`: fixed positions.
    let iso = humantime::format_rfc3339_seconds(t).to_string();
    let month: usize = iso[5..7].parse().unwrap_or(1);
    // 1970-01-01 was a Thursday.
    let weekday = WEEKDAYS[unix_ms.div_euclid(86_400_000).rem_euclid(7) as usize];
    format!(
        "{weekday} {} {} {} UTC {}",
        MONTHS[month - 1],
        &iso[8..10],
        &iso[11..19],
        &iso[0..4]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_in_every_format() {
        assert_eq!(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            java_date_utc(1_441_812_279_474),
            "Wed Sep 09 15:24:39 UTC 2015"
        );
        // A leap day, a Tuesday.
        assert_eq!(
            java_date_utc(951_782_400_000),
            "Tue Feb 29 00:00:00 UTC 2000"
        );
        assert_eq!(rfc3339_millis(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(1_767_225_600.25), "2026-01-01T00:00:00.250Z");
        assert_eq!(utc_seconds(1_767_225_600.9), "2026-01-01 00:00:00 UTC");
    }

    #[test]
    fn instants_out_of_the_calendar_are_numbers_not_panics() {
        assert_eq!(rfc3339_millis(-1.0), "-1");
        assert_eq!(rfc3339_millis(f64::NAN), "NaN");
        assert_eq!(utc_seconds(1e15), "1000000000000000");
        assert_eq!(java_date_utc(-5), "-5");
        assert_eq!(java_date_utc(LAST_UNIX_MS + 1), "253402300800000");
    }
}
