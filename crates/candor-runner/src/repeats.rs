//! `candor run --repeat N`: the same test N times, `--repeat-pause` apart, each run's results
//! analysed; a signal ends the series with the run it cut short, or in a pause. The union and
//! its report are candor-report's (`repeats.rs`).

use crate::{execute_watched, interrupt, recorded_config, run_results, RunnerError};
use candor_core::results::RunResults;
use candor_core::units::DurationArg;
use candor_load::RunPlan;

/// The pause between repeats when `--repeat-pause` is not given.
pub const DEFAULT_PAUSE_NS: u64 = 1_000_000_000;

/// The longest pause between repeats: runs hours apart no longer measure one machine state to
/// compare against another, and a pause of years is a typo, not a plan.
pub const MAX_PAUSE_NS: u64 = 3_600_000_000_000;

/// A `--repeat-pause` refused.
#[derive(Debug, thiserror::Error)]
#[error("--repeat-pause {written:?}: at most 1h between repeats")]
pub struct PauseTooLong {
    written: String,
}

/// `--repeat-pause`, checked before any load is sent.
pub fn pause_ns(pause: Option<&DurationArg>) -> Result<u64, PauseTooLong> {
    match pause {
        None => Ok(DEFAULT_PAUSE_NS),
        Some(pause) => checked_pause(pause),
    }
}

fn checked_pause(pause: &DurationArg) -> Result<u64, PauseTooLong> {
    if pause.ns() > MAX_PAUSE_NS {
        return Err(PauseTooLong {
            written: pause.written().to_string(),
        });
    }
    Ok(pause.ns())
}

/// Sleeps `ns`, waking early when a signal arrives; false when one did.
fn pause(ns: u64) -> bool {
    let end = candor_core::now_ns().saturating_add(ns);
    loop {
        if interrupt::received().is_some() {
            return false;
        }
        let now = candor_core::now_ns();
        if now >= end {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_nanos((end - now).min(20_000_000)));
    }
}

/// Runs `config` up to `n` times, `pause_ns` apart, each announced on stderr unless `quiet`,
/// and returns each run's analysed results (fewer than `n` when a signal ended the series).
pub fn run_repeats(
    config: &RunPlan,
    n: u32,
    pause_ns: u64,
    live: bool,
    quiet: bool,
    command_line: &[String],
) -> Result<Vec<RunResults>, RunnerError> {
    let mut runs: Vec<RunResults> = Vec::new();
    for k in 0..n {
        if k > 0 && !pause(pause_ns) {
            break;
        }
        if !quiet {
            eprintln!("candor: repeat {} of {n}", k + 1);
        }
        // `--records`: one file, each line naming its run.
        let mut this = config.clone();
        if let Some(sink) = &mut this.records {
            sink.run = k + 1;
        }
        let config = &this;
        let outcome = execute_watched(config, live, None, &mut |_, _| None)?;
        let mut r = run_results(
            &outcome,
            config,
            command_line.to_vec(),
            recorded_config(config),
        );
        r.main.analysis = Some(candor_analysis::analyze(&r));
        runs.push(r);
        if interrupt::received().is_some() {
            break;
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_longer_than_an_hour_is_refused() {
        let pause = |text: &str| checked_pause(&text.parse().unwrap());
        assert_eq!(pause("1s").unwrap(), 1_000_000_000);
        assert_eq!(pause("1h").unwrap(), MAX_PAUSE_NS);
        let e = pause("100000h").unwrap_err().to_string();
        assert_eq!(e, "--repeat-pause \"100000h\": at most 1h between repeats");
        assert!(pause("61m").is_err());
    }
}
