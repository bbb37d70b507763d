//! The flags of a series of runs at several rates (`sweep`, `capacity`): `--rates`, and the
//! warm-up each step has.

use super::args::LoadArgs;
use super::config::load_config;
use super::error::{FlagError, Result};
use super::shape::open_rate;
use candor_load::{LoadConfig, RunPlan};

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

/// Sweep and capacity steps use a 1 s warm-up unless --warmup (parsed into `config`) says
/// otherwise.
pub fn step_warmup_ns(config: &LoadConfig) -> u64 {
    match config.warmup_ns {
        0 => 1_000_000_000,
        w => w,
    }
}

/// The configuration every step of a series starts from: the load flags at `first_rate`, with
/// a step's warm-up, and (LLM runs without --goodput) the goodput bounds `slo` sets, as `run`.
pub fn series_base(
    load: &LoadArgs,
    first_rate: f64,
    slo: &candor_analysis::SloSet,
) -> Result<RunPlan> {
    let mut base = load_config(load, Some(first_rate), None)?;
    base.warmup_ns = step_warmup_ns(&base);
    super::config::goodput_from_slo(&mut base, slo)?;
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::parse_rates;

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
