//! `candor run --repeat N`: the same test N times (candor-runner's `repeats`), written as one
//! results file holding every run whole beside their union, and reported with the spread across
//! runs (candor-report's `repeats`).

use crate::cmd::interrupt;
use crate::cmd::outputs::{report_failures, run_exports};
use anyhow::Result;
use candor_load::RunPlan;
use candor_report::repeats::{self, Repeats};
use candor_runner::flags::RunArgs;
use candor_runner::push_view::{self, RunSeries};
use candor_runner::repeats::{pause_ns, run_repeats};
use candor_runner::{command_line, stderr_is_terminal};

/// Runs `config` `n` times and reports, writes and judges the union as `candor run` does one run.
pub fn main(
    args: &RunArgs,
    config: &RunPlan,
    n: u32,
    records: Option<candor_load::records::RecordWriter>,
) -> Result<i32> {
    let pause_ns = pause_ns(args.repeat_pause.as_ref())?;
    let slo = candor_analysis::SloSet::parse_all(&args.slo)?;
    let live = !args.quiet && stderr_is_terminal();
    let mut exports = run_exports(args)?;
    let command_line = command_line(config, &args.load.url);
    let push = push_view::start(&args.push, config.start_at_wall_ns, Some(RunSeries::Repeat))?;
    let runs = run_repeats(config, n, pause_ns, live, args.quiet, &command_line)?;
    // Read once: the stop reason in the files and the text's last line must agree.
    let interrupted = interrupt::received();
    let repeats = Repeats {
        runs,
        asked: n,
        interrupted: interrupted.map(interrupt::name),
    };
    let report = repeats::report(repeats, &slo, args.latency, crate::cmd::EXIT_VERDICT_FAILED)?;
    let (mut union, code) = (report.union, report.code);
    crate::cmd::outputs::finish_records(records, &mut union)?;
    if exports.uses_stdout() {
        eprint!("{}", report.text);
    } else {
        print!("{}", report.text);
    }
    let written = report_failures(exports.write_all(&union));
    if let Some(p) = push {
        p.close();
    }
    if !written {
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
