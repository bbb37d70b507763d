//! The flags of a series of runs at several rates (`sweep`, `capacity`): `--rates`, and the
//! warm-up each step has.

use super::args::LoadArgs;
use super::config::load_config;
use super::error::{FlagError, Result};
use super::shape::open_rate;
use candor_core::units::DurationArg;
use candor_load::RunPlan;

/// Parses `1k,2k,5k` into rates per second.
pub fn parse_rates(text: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let p = part.trim();
        if p.is_empty() {
            return Err(FlagError::Invalid(format!("--rates '{text}': empty entry")));
        }
        // A bad entry is named with the whole list, as the user typed it.
        let rate = open_rate(p, "--rates").map_err(|e| match e {
            FlagError::Value { source, .. } => {
                FlagError::Invalid(format!("--rates '{text}': {source}"))
            }
            other => other,
        })?;
        out.push(rate);
    }
    Ok(out)
}

/// A sweep or capacity step's warm-up when `--warmup` is not given: long enough for connections
/// to open and a server's caches to fill before the step is measured.
pub const DEFAULT_STEP_WARMUP_NS: u64 = 1_000_000_000;

/// A step's warm-up: `--warmup` as given (`0s` is none), else `DEFAULT_STEP_WARMUP_NS`.
pub fn step_warmup_ns(given: Option<&DurationArg>) -> u64 {
    given.map_or(DEFAULT_STEP_WARMUP_NS, DurationArg::ns)
}

/// The configuration every step of a series starts from: the load flags at `first_rate`, with
/// a step's warm-up, and (LLM runs without --goodput) the goodput bounds `slo` sets, as `run`.
pub fn series_base(
    load: &LoadArgs,
    first_rate: f64,
    slo: &candor_analysis::SloSet,
) -> Result<RunPlan> {
    let mut base = load_config(load, Some(first_rate), None)?;
    base.warmup_ns = step_warmup_ns(load.warmup.as_ref());
    super::config::goodput_from_slo(&mut base, slo)?;
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::{parse_rates, step_warmup_ns, DEFAULT_STEP_WARMUP_NS};
    use candor_core::units::DurationArg;

    #[test]
    fn a_step_warms_up_for_a_second_unless_told_otherwise_even_none() {
        assert_eq!(step_warmup_ns(None), DEFAULT_STEP_WARMUP_NS);
        let none: DurationArg = "0s".parse().unwrap();
        assert_eq!(step_warmup_ns(Some(&none)), 0);
        let two: DurationArg = "2s".parse().unwrap();
        assert_eq!(step_warmup_ns(Some(&two)), 2_000_000_000);
    }

    #[test]
    fn a_bad_rate_is_named_with_the_whole_list() {
        assert_eq!(parse_rates("100, 2k").unwrap(), vec![100.0, 2000.0]);
        let e = format!("{}", parse_rates("100,x").unwrap_err());
        assert!(e.starts_with("--rates '100,x': invalid rate 'x'"), "{e}");
        assert!(format!("{}", parse_rates("1,,2").unwrap_err()).contains("empty entry"));
        let e = format!("{}", parse_rates("100,max").unwrap_err());
        assert!(e.contains("must be a rate, not 'max'"), "{e}");
    }
}
