//! `candor run`: parse and validate the flags once, run the engine, print the report.

use anyhow::{Context, Result};
use candor_core::results::RunResults;
use candor_report::export::{ExportError, ExportManager};
use candor_report::hgrm::HgrmExporter;
use candor_report::hlog::HlogExporter;
use candor_report::json::JsonExporter;
pub use candor_runner::flags::*;
pub use candor_runner::{command_line, execute, execute_with, recorded_config, stderr_is_terminal};

/// [`candor_runner::execute_watched`] for commands that report with `anyhow`.
pub fn execute_watched(
    config: &candor_load::RunPlan,
    live: bool,
    on_start: Option<candor_runner::OnStart>,
    watch: &mut (dyn FnMut(
        &candor_load::IntervalReport,
        &mut String,
    ) -> Option<candor_core::results::StopReason>
              + Send),
) -> Result<candor_load::RunOutcome> {
    Ok(candor_runner::execute_watched(
        config, live, on_start, watch,
    )?)
}

pub fn main(args: RunArgs) -> Result<i32> {
    // From the first moment: a signal while the flags and files are read is one more phase.
    crate::cmd::interrupt::install().context("installing the signal handlers")?;
    // Before the flags are made a configuration: --reflect contacts the server there.
    crate::cmd::script::check_flags(&args)?;
    let mut config = {
        let _reading = crate::cmd::interrupt::exit_on_stop("reading the run's inputs");
        run_config(&args)?
    };
    // A script is loaded, and its setup() and init() run, before any load: its errors first.
    let mut script = {
        let _reading = crate::cmd::interrupt::exit_on_stop("loading the script");
        crate::cmd::script::prepare(&args, &mut config)?
    };
    let config = config;
    if let Some(n) = args.repeat {
        return crate::cmd::repeat::main(&args, &config, n);
    }
    let live = !args.quiet && stderr_is_terminal();
    let mut extras = candor_runner::extras::RunExtras::new(args.extras()?, &config)?;
    // Every output is opened before the load starts: a bad path costs a second, not the run.
    let mut exports = run_exports(&args)?;
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let outcome = extras.execute(
        &config,
        Box::new(|hook, watch| execute_watched(&config, live, hook, watch)),
    )?;
    let mut results = candor_runner::run_results(
        &outcome,
        &config,
        command_line(&config, &args.load.url),
        recorded_config(&config),
    );
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
    let interrupted = crate::cmd::interrupt::received();
    if let (Some(sig), Some(after)) = (interrupted, outcome.interrupted_after_ns) {
        let when = match after {
            0 => "before the first intended send".to_string(),
            _ => format!("after {:.1} s", after as f64 / 1e9),
        };
        text.push_str(&format!(
            "\ninterrupted by {} {when}: partial results\n",
            crate::cmd::interrupt::name(sig),
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
    if let Some(s) = &mut script {
        // What the script prints (setup, done) follows candor's report, as wrk's follows wrk's.
        if let Err(e) = s.done(&results, exports.uses_stdout()) {
            eprintln!("candor: error: {e:#}");
            // A signal that stopped done() ends the process with its code, as any run.
            let interrupted = crate::cmd::interrupt::received();
            return Ok(interrupted.map_or(1, crate::cmd::interrupt::exit_code));
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
        return Ok(crate::cmd::interrupt::exit_code(sig));
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

/// The `--json` (`-` for stdout), `--hlog` and `--hgrm` outputs asked for, opened now.
pub fn run_exports(args: &RunArgs) -> Result<ExportManager<'static, RunResults>> {
    let mut exports = ExportManager::default();
    exports
        .add("--json", args.json.as_deref(), JsonExporter)?
        .add("--hlog", args.hlog.as_deref(), HlogExporter)?
        .add("--hgrm", args.hgrm.as_deref(), HgrmExporter)?;
    exports.refuse_inputs(&load_inputs(&args.load))?;
    Ok(exports)
}

/// The files the load flags read (`--requests`, `--replay`, `--data`, `--body-file`,
/// `--payload-file`, `--ca`): no output may replace one of them.
pub fn load_inputs(load: &LoadArgs) -> Vec<&std::path::Path> {
    [
        &load.requests,
        &load.replay,
        &load.data,
        &load.body_file,
        &load.payload_file,
        &load.ca,
    ]
    .into_iter()
    .filter_map(|p| p.as_deref())
    .collect()
}

/// Prints each failed export as one line; true when there were none.
pub fn report_failures(failures: Vec<ExportError>) -> bool {
    for e in &failures {
        eprintln!("candor: error: {e} (the other outputs were written)");
    }
    failures.is_empty()
}
