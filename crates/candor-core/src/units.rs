//! Parsing and printing of durations, rates and latencies, the way load-testing users write them.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum UnitError {
    #[error(
        "invalid duration '{0}': expected a number with a unit, like 500us, 20ms, 30s, 2m or 1h"
    )]
    Duration(String),
    #[error("invalid rate '{0}': expected a positive number of requests per second, like 500, 2k or 1.5M, or 'max'")]
    Rate(String),
    #[error("rate must be positive, got '{0}'")]
    NonPositiveRate(String),
    #[error("'{0}' has no unit: write {0}s, {0}ms or {0}us")]
    MissingUnit(String),
    /// A well-formed duration beyond [`MAX_DURATION_NS`]: its number and unit are right, so the
    /// message says what is wrong with it rather than ask for a unit it has.
    #[error("duration '{0}' is too long: the longest is about {years} years", years = max_duration_years())]
    TooLong(String),
}

/// Parses `500us`, `20ms`, `1.5s`, `2m`, `1h` into nanoseconds.
///
/// Every duration needs its unit: a bare `500` is refused rather than guessed, because wrk reads
/// it as seconds and a latency-minded reader as milliseconds, and a wrong guess is silent
/// (`-T 500` would wait eight minutes). Only a bare `0` is accepted, being the same in any unit.
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let err = || UnitError::Duration(text.to_string());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err());
    }
    let value: f64 = num.parse().map_err(|_| err())?;
    let scale = match unit.trim() {
        "" if value == 0.0 => 1.0,
        "" => return Err(UnitError::MissingUnit(t.to_string())),
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(err()),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > MAX_DURATION_NS as f64 {
        return Err(UnitError::TooLong(t.to_string()));
    }
    Ok(ns.round() as u64)
}

/// A duration given on the command line: its nanoseconds, parsed once where the flag is read (the
/// flag's type, so clap parses it), and the text as written, for messages that quote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationArg {
    ns: u64,
    written: Box<str>,
}

impl DurationArg {
    /// The duration in nanoseconds.
    pub fn ns(&self) -> u64 {
        self.ns
    }

    /// The text the duration was parsed from.
    pub fn written(&self) -> &str {
        &self.written
    }
}

impl std::str::FromStr for DurationArg {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<DurationArg, UnitError> {
        Ok(DurationArg {
            ns: parse_duration_ns(text)?,
            written: text.into(),
        })
    }
}

impl std::fmt::Display for DurationArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.written)
    }
}

/// The longest duration [`parse_duration_ns`] accepts (about 292 years): room to add instants
/// and durations in nanoseconds without overflow.
pub const MAX_DURATION_NS: u64 = u64::MAX / 2;

/// [`MAX_DURATION_NS`] in whole years of 365.25 days, for messages.
pub fn max_duration_years() -> u64 {
    (MAX_DURATION_NS as f64 / 1e9 / (365.25 * 86_400.0)) as u64
}

/// A request rate: requests per second, or `Max` for closed-loop operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    PerSecond(f64),
    Max,
}

/// Parses `2000`, `2k`, `1.5M`, or `max`.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("max") {
        return Ok(Rate::Max);
    }
    let err = || UnitError::Rate(text.to_string());
    let (num, scale) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') | Some('m') => (&t[..t.len() - 1], 1e6),
        Some(_) => (t, 1.0),
        None => return Err(err()),
    };
    let value: f64 = num.trim().parse().map_err(|_| err())?;
    let rate = value * scale;
    if !rate.is_finite() {
        return Err(err());
    }
    if rate <= 0.0 {
        return Err(UnitError::NonPositiveRate(text.to_string()));
    }
    Ok(Rate::PerSecond(rate))
}

/// Formats nanoseconds with an automatically chosen unit and about four significant figures.
pub fn format_ns(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else if ns < 120e9 {
        (ns / 1e9, "s")
    } else {
        (ns / 60e9, "m")
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    if unit == "ns" {
        return format!("{}ns", ns.round() as u64);
    }
    format!("{value:.decimals$}{unit}")
}

/// Formats a count with thousands separators: 1234567 -> "1,234,567".
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Formats a rate like `2.00k/s`.
pub fn format_rate(per_s: f64) -> String {
    if per_s >= 1e12 {
        // Beyond any real rate (a typo such as -R 1e300): digits by the hundred help nobody.
        format!("{per_s:.3e}/s")
    } else if per_s >= 1e6 {
        format!("{:.2}M/s", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.2}k/s", per_s / 1e3)
    } else if per_s > 0.0 && per_s < 0.05 {
        // Three significant figures: 0.000001/s must not read as 0.0/s.
        let decimals = (2.0 - per_s.log10().floor()) as usize;
        format!("{per_s:.decimals$}/s")
    } else {
        format!("{per_s:.1}/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_rates_read_in_a_few_characters() {
        assert_eq!(format_rate(1e300), "1.000e300/s");
        assert_eq!(format_rate(2.5e12), "2.500e12/s");
        assert_eq!(format_rate(5e11), "500000.00M/s");
    }

    #[test]
    fn a_duration_flag_keeps_its_nanoseconds_and_its_text() {
        let d: DurationArg = "1.5s".parse().unwrap();
        assert_eq!(
            (d.ns(), d.written(), d.to_string().as_str()),
            (1_500_000_000, "1.5s", "1.5s")
        );
        assert_eq!(
            "30".parse::<DurationArg>(),
            Err(UnitError::MissingUnit("30".into()))
        );
    }

    #[test]
    fn a_duration_too_long_says_so_not_that_it_lacks_a_unit() {
        let e = parse_duration_ns("999999999h").unwrap_err();
        assert_eq!(e, UnitError::TooLong("999999999h".into()));
        assert_eq!(
            e.to_string(),
            "duration '999999999h' is too long: the longest is about 292 years"
        );
        assert_eq!(
            parse_duration_ns("1e999s"),
            Err(UnitError::Duration("1e999s".into()))
        );
        assert_eq!(
            parse_duration_ns("2562047h"),
            Ok(2_562_047 * 3_600_000_000_000)
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("20ms"), Ok(20_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(
            parse_duration_ns("30"),
            Err(UnitError::MissingUnit("30".into()))
        );
        assert_eq!(
            UnitError::MissingUnit("500".into()).to_string(),
            "'500' has no unit: write 500s, 500ms or 500us"
        );
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("0.0"), Ok(0));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("1h"), Ok(3_600_000_000_000));
        for bad in ["", "s", "abc", "10 parsecs", "-5s", "1e999s", "1.2.3s"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("2k"), Ok(Rate::PerSecond(2000.0)));
        assert_eq!(parse_rate("1.5M"), Ok(Rate::PerSecond(1_500_000.0)));
        assert_eq!(parse_rate("250"), Ok(Rate::PerSecond(250.0)));
        assert_eq!(parse_rate("max"), Ok(Rate::Max));
        assert!(matches!(
            parse_rate("0"),
            Err(UnitError::NonPositiveRate(_))
        ));
        assert!(matches!(
            parse_rate("-5"),
            Err(UnitError::NonPositiveRate(_))
        ));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_ns(850.0), "850ns");
        assert_eq!(format_rate(0.000001), "0.00000100/s");
        assert_eq!(format_rate(0.0123), "0.0123/s");
        assert_eq!(format_rate(0.0), "0.0/s");
        assert_eq!(format_rate(2.5), "2.5/s");
        assert_eq!(format_ns(12_345.0), "12.35us");
        assert_eq!(format_ns(1_990_000_000.0), "1.990s");
        assert_eq!(format_ns(250_000_000.0), "250.0ms");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_count(12), "12");
        assert_eq!(format_rate(2000.0), "2.00k/s");
    }
}
