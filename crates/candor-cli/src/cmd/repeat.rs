//! `candor run --repeat N`: the same test N times, `--repeat-pause` apart, written as one results
//! file holding every run whole beside their union, and reported with the spread across runs.

use crate::cmd::interrupt;
use crate::cmd::run::{command_line, execute_watched, recorded_config, report_failures, RunArgs};
use anyhow::{Context, Result};
use candor_core::results::{Kind, RunResults, StopReason};
use candor_core::units::DurationArg;
use candor_load::RunPlan;

/// The pause between repeats when `--repeat-pause` is not given.
pub const DEFAULT_PAUSE_NS: u64 = 1_000_000_000;

/// The longest pause between repeats: runs hours apart no longer measure one machine state to
/// compare against another, and a pause of years is a typo, not a plan.
pub const MAX_PAUSE_NS: u64 = 3_600_000_000_000;

/// `--repeat-pause`, checked before any load is sent.
pub fn pause_ns(args: &RunArgs) -> Result<u64> {
    match &args.repeat_pause {
        None => Ok(DEFAULT_PAUSE_NS),
        Some(pause) => checked_pause(pause),
    }
}

fn checked_pause(pause: &DurationArg) -> Result<u64> {
    if pause.ns() > MAX_PAUSE_NS {
        anyhow::bail!(
            "--repeat-pause {:?}: at most 1h between repeats",
            pause.written()
        );
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

/// The union of `runs` as the results of one `candor run`, with every run kept in `repeats`.
pub fn union_of(runs: Vec<RunResults>, first: &RunResults) -> Result<RunResults> {
    let mut union = candor_report::exact_merge::merge_as_repeats(&runs)
        .context("combining the repeats into their union")?;
    // One test repeated: the union is a run of that test, not a merge of unrelated files.
    union.kind = Kind::Run;
    union.command_line = first.command_line.clone();
    union.config = first.config.clone();
    union.target = first.target.clone();
    Ok(union)
}

/// Why the series of repeats ended, as the union's `stop_reason`: a signal, whether it cut a
/// repeat short or came in a pause between two (the union then holds fewer repeats than asked);
/// otherwise the way the last repeat ended, since the series ends with it.
fn union_stop_reason(repeats: &[RunResults], interrupted: bool) -> Option<StopReason> {
    if interrupted {
        return Some(StopReason::Interrupt);
    }
    repeats.last().and_then(|r| r.stop_reason)
}

/// Runs `config` `n` times and reports, writes and judges the union as `candor run` does one run.
pub fn main(args: &RunArgs, config: &RunPlan, n: u32) -> Result<i32> {
    let pause_ns = pause_ns(args)?;
    let slo = candor_analysis::SloSet::parse_all(&args.slo)?;
    let live = !args.quiet && crate::cmd::run::stderr_is_terminal();
    let mut exports = crate::cmd::run::run_exports(args)?;
    let mut runs: Vec<RunResults> = Vec::new();
    for k in 0..n {
        if k > 0 && !pause(pause_ns) {
            break;
        }
        if !args.quiet {
            eprintln!("candor: repeat {} of {n}", k + 1);
        }
        let outcome = execute_watched(config, live, None, &mut |_, _| None)?;
        let mut r = candor_runner::run_results(
            &outcome,
            config,
            command_line(config, &args.load.url),
            recorded_config(config),
        );
        r.main.analysis = Some(candor_analysis::analyze(&r));
        runs.push(r);
        if interrupt::received().is_some() {
            break;
        }
    }
    let first = runs.first().cloned().context("no repeat ran")?;
    let done = runs.len();
    let labelled: Vec<(String, RunResults)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("repeat {}", i + 1), r.clone()))
        .collect();
    // Read once: the stop reason in the files and the text's last line must agree.
    let interrupted = interrupt::received();
    let mut union = union_of(runs, &first)?;
    union.stop_reason = union_stop_reason(&union.repeats, interrupted.is_some());
    let mut analysis = candor_analysis::analyze(&union);
    analysis.slo = slo.evaluate(&union);
    let verdicts = analysis.slo.clone();
    union.main.analysis = Some(analysis);
    slo.judge_stages(&mut union);

    let mut text = candor_report::text::render(&union);
    if args.latency {
        text.push_str(&candor_report::text::spectrum(&union).context("decoding histograms")?);
    }
    text.push_str(&format!(
        "\nacross {done} repeats (the report above is their union):\n"
    ));
    if done > 1 {
        text.push_str(&candor_report::comparison::compare_text(
            &labelled,
            candor_report::comparison::Measure::ResponseTime,
        )?);
    }
    let mut code = 0;
    if !verdicts.is_empty() {
        text.push('\n');
        text.push_str(&candor_analysis::slo::render(&verdicts));
        if candor_analysis::slo::all_pass(&verdicts) {
            text.push_str("SLO: all objectives met on the union of the repeats\n");
        } else {
            code = crate::cmd::EXIT_VERDICT_FAILED;
            text.push_str(&format!(
                "SLO: FAILED on the union of the repeats (exit code {code})\n"
            ));
        }
    }
    if let Some(sig) = interrupted {
        text.push_str(&format!(
            "\ninterrupted by {} after {done} of {n} repeats: partial results\n",
            interrupt::name(sig)
        ));
    }
    if exports.uses_stdout() {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if !report_failures(exports.write_all(&union)) {
        return Ok(1);
    }
    if let Some(sig) = interrupted {
        return Ok(interrupt::exit_code(sig));
    }
    if let Some(diagnosis) = candor_report::text::no_success(&union.main.requests) {
        if code != 0 {
            eprintln!("candor: error: {diagnosis}");
            return Ok(code);
        }
        anyhow::bail!(diagnosis);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_says_why_the_series_ended() {
        let run = |reason| {
            let mut r = candor_report::synthetic::synthetic_run(1, 2, 10, 1_000_000, 0);
            r.stop_reason = reason;
            r
        };
        let done = [
            run(Some(StopReason::Duration)),
            run(Some(StopReason::Duration)),
        ];
        assert_eq!(union_stop_reason(&done, false), Some(StopReason::Duration));
        // Interrupted in the pause after two whole repeats: still an interrupted series.
        assert_eq!(union_stop_reason(&done, true), Some(StopReason::Interrupt));
        let cut = [
            run(Some(StopReason::Duration)),
            run(Some(StopReason::Interrupt)),
        ];
        assert_eq!(union_stop_reason(&cut, true), Some(StopReason::Interrupt));
        let precise = [run(Some(StopReason::Precision))];
        assert_eq!(
            union_stop_reason(&precise, false),
            Some(StopReason::Precision)
        );
    }

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
