//! The load shape the flags ask for: `-R` (one rate, `max`, or stages), `-n`, `--arrival` and
//! `--replay`, and the measured window each shape sets.

use super::args::{ArrivalArg, LoadArgs, RunArgs};
use super::error::{flag, FlagError, Result};
use candor_core::units::{parse_rate, Rate};
use candor_load::schedule::ArrivalKind;
use candor_load::workload::profile::{is_profile, Profile};
use candor_load::workload::replay::ReplayPlan;
use candor_load::{LoadConfigError, LoadShape};

/// The load shape `-R`, `-n` and `--replay` ask for.
pub(super) fn run_shape(args: &RunArgs) -> Result<LoadShape> {
    if let Some(path) = &args.load.replay {
        if args.count.is_some() {
            return Err(FlagError::Invalid(
                "-n does not combine with --replay".to_string(),
            ));
        }
        let plan = ReplayPlan::scan(path, args.load.speed, args.load.lenient)?;
        let window_ns = replay_window_ns(&args.load, &plan)?;
        return Ok(LoadShape::replay(plan, window_ns)?);
    }
    if !is_profile(&args.rate) {
        return Ok(
            LoadShape::of_rate(rate_flag(&args.rate)?, arrival(&args.load), args.count)
                .map_err(LoadConfigError::from)?,
        );
    }
    let profile = Profile::parse(&args.rate)?;
    if args.count.is_some() {
        return Err(FlagError::Invalid(
            "-n does not combine with -R stages: the stages set how many requests are sent"
                .to_string(),
        ));
    }
    if let Some(d) = &args.load.duration {
        if d.ns() != profile.duration_ns() {
            return Err(FlagError::Invalid(format!(
                "-d {d} disagrees with the -R stages, which last {}; leave -d out or make it their sum",
                candor_core::units::format_ns(profile.duration_ns() as f64)
            )));
        }
    }
    Ok(LoadShape::Stages {
        profile,
        arrival: arrival(&args.load),
    })
}

/// `--replay`'s window: the trace, or less when `-d` cuts it short.
fn replay_window_ns(a: &LoadArgs, plan: &ReplayPlan) -> Result<u64> {
    let trace_ns = plan.duration_ns();
    Ok(a.duration_ns().map_or(trace_ns, |d| d.min(trace_ns)))
}

/// Parses `-R`: a rate per second, or `None` for a closed loop (`max`).
pub fn rate_flag(text: &str) -> Result<Option<f64>> {
    Ok(match flag(parse_rate(text), "-R/--rate")? {
        Rate::PerSecond(r) => Some(r),
        Rate::Max => None,
    })
}

/// Parses a rate flag that must offer a load (a sweep's or a capacity search's rates, the
/// demo's): a rate per second; `max` (a closed loop) is refused.
pub fn open_rate(text: &str, name: &'static str) -> Result<f64> {
    match flag(parse_rate(text), name)? {
        Rate::PerSecond(r) => Ok(r),
        Rate::Max => Err(FlagError::Invalid(format!(
            "{name} must be a rate, not 'max' (a closed loop offers no load of its own)"
        ))),
    }
}

/// The window of `-n N` at `rate`: long enough to hold all N intended sends (the schedule itself
/// stops after exactly N, see `Schedule::with_limit`).
pub fn count_window_ns(count: u64, rate: f64) -> u64 {
    (count as f64 * 1e9 / rate).ceil().max(1.0) as u64
}

/// `--arrival` (with `--seed`).
pub(super) fn arrival(a: &LoadArgs) -> ArrivalKind {
    match a.arrival {
        ArrivalArg::Constant => ArrivalKind::Constant,
        ArrivalArg::Poisson => ArrivalKind::Poisson { seed: a.seed },
    }
}

/// The measured window of `shape`: its own when it has one (`-n` at its rate, the stages, a
/// trace), else `-d`, else `default_ns`.
pub(super) fn window_ns(a: &LoadArgs, shape: &LoadShape, default_ns: u64) -> Result<u64> {
    Ok(match shape {
        LoadShape::ClosedLoop | LoadShape::Rate { .. } => a.duration_ns().unwrap_or(default_ns),
        LoadShape::Count { per_s, count } => {
            let (n, r) = (*count, *per_s);
            let window = n as f64 * 1e9 / r;
            if window.is_nan() || window > candor_core::units::MAX_DURATION_NS as f64 {
                return Err(FlagError::Invalid(format!(
                    "-n {n} at {} would last {:.3e} s, longer than the longest window -d accepts ({:.0} years): \
                     the run could never finish; lower -n or raise -R",
                    candor_core::units::format_rate(r),
                    window / 1e9,
                    candor_core::units::MAX_DURATION_NS as f64 / 1e9 / (365.25 * 86_400.0)
                )));
            }
            count_window_ns(n, r)
        }
        LoadShape::Stages { profile, .. } => profile.duration_ns(),
        LoadShape::Replay { plan, .. } => replay_window_ns(a, plan)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_that_must_offer_a_load_refuse_max() {
        assert_eq!(open_rate("2k", "--min").unwrap(), 2000.0);
        assert_eq!(
            open_rate("max", "--min").unwrap_err().to_string(),
            "--min must be a rate, not 'max' (a closed loop offers no load of its own)"
        );
        assert!(open_rate("fast", "--rates").is_err());
    }
}
