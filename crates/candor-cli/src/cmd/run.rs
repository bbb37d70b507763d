//! `candor run`: parse and validate the flags once, run the engine, print the report.

use crate::cmd::interrupt;
use crate::cmd::outputs::{report_failures, run_exports};
use anyhow::{Context, Result};
use candor_runner::flags::run_config;
pub use candor_runner::flags::RunArgs;
use candor_runner::script;
use candor_runner::{command_line, execute_watched, recorded_config, stderr_is_terminal};

pub fn main(args: RunArgs) -> Result<i32> {
    // From the first moment: a signal while the flags and files are read is one more phase.
    interrupt::install().context("installing the signal handlers")?;
    // Before the flags are made a configuration: --reflect contacts the server there.
    script::check_flags(&args)?;
    let mut config = {
        let _reading = interrupt::exit_on_stop("reading the run's inputs");
        run_config(&args)?
    };
    // A script is loaded, and its setup() and init() run, before any load: its errors first.
    let mut script = {
        let _reading = interrupt::exit_on_stop("loading the script");
        script::prepare(&args, &mut config)?
    };
    // Before any load, as every output: a bad path is a one-line error.
    let records = crate::cmd::outputs::open_records(&args, &mut config)?;
    let config = config;
    if let Some(n) = args.repeat {
        return crate::cmd::repeat::main(&args, &config, n, records);
    }
    let live = !args.quiet && stderr_is_terminal();
    let mut extras = candor_runner::extras::RunExtras::new(args.extras()?, &config)?;
    // Every output is opened before the load starts: a bad path costs a second, not the run.
    let mut exports = run_exports(&args)?;
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let push = candor_runner::push_view::start(&args.push, config.start_at_wall_ns, None)?;
    let outcome = extras.execute::<candor_runner::RunnerError>(
        &config,
        Box::new(|hook, watch| execute_watched(&config, live, hook, watch)),
    )?;
    let mut results = candor_runner::run_results(
        &outcome,
        &config,
        command_line(&config, &args.load.url),
        recorded_config(&config),
    );
    crate::cmd::outputs::finish_records(records, &mut results)?;
    let (verdict_text, code) = extras.finish(&outcome, &config, &mut results);
    let (script_text, script_error) = match &script {
        Some(s) => s.mark(&mut results),
        None => (String::new(), None),
    };
    let mut text = candor_report::text::render(&results);
    text.push_str(&script_text);
    if args.latency {
        text.push_str(&candor_report::text::spectrum(&results).context("decoding histograms")?);
    }
    text.push_str(&verdict_text);
    let interrupted = interrupt::received();
    if let (Some(sig), Some(after)) = (interrupted, outcome.interrupted_after_ns) {
        let when = match after {
            0 => "before the first intended send".to_string(),
            _ => format!("after {:.1} s", after as f64 / 1e9),
        };
        text.push_str(&format!(
            "\ninterrupted by {} {when}: partial results\n",
            interrupt::name(sig),
        ));
    }
    // With the JSON on stdout, the report goes to stderr.
    if exports.uses_stdout() {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    let written = report_failures(exports.write_all(&results));
    if let Some(l) = live_view {
        l.close();
    }
    if let Some(p) = push {
        p.close();
    }
    if let Some(s) = &mut script {
        // What the script prints (setup, done) follows candor's report, as wrk's follows wrk's.
        if let Err(e) = s.done(&results, exports.uses_stdout()) {
            eprintln!("candor: error: {e:#}");
            // A signal that stopped done() ends the process with its code, as any run.
            let interrupted = interrupt::received();
            return Ok(interrupted.map_or(1, interrupt::exit_code));
        }
    }
    if let Some(e) = script_error {
        eprintln!("candor: error: {e}");
        return Ok(1);
    }
    if !written {
        return Ok(1);
    }
    if let Some(sig) = interrupted {
        return Ok(interrupt::exit_code(sig));
    }
    // A load thread failed (a panic): the results so far are written, and the run is no pass.
    if results.stop_reason == Some(candor_core::results::StopReason::Failure) {
        for w in results
            .warnings
            .iter()
            .filter(|w| w.starts_with("load thread"))
        {
            eprintln!("candor: error: {w}");
        }
        return Ok(if code != 0 { code } else { 1 });
    }
    // Written and reported above; a run where nothing worked must not pass for a result.
    if let Some(diagnosis) = candor_report::text::no_success(&results.main.requests) {
        if code != 0 {
            // A failed SLO already set the exit code the verdict announced; keep it.
            eprintln!("candor: error: {diagnosis}");
            return Ok(code);
        }
        anyhow::bail!(diagnosis);
    }
    Ok(code)
}
