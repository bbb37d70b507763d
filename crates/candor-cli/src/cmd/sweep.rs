//! `candor sweep`: the same test at several offered rates (warm-up, then a pause between steps),
//! a table of response-time percentiles against offered load, and one JSON file of every step's
//! full results that `candor report` renders as a chart.

use crate::cmd::outputs::load_inputs;
use anyhow::{Context, Result};
use candor_analysis::slo::SloSet;
use candor_analysis::sweep_results::SweepResults;
use candor_core::results::SCHEMA_VERSION;
use candor_core::units::{format_ns, DurationArg};
use candor_report::export::ExportManager;
use candor_report::json::JsonExporter;
use candor_report::sweep_text;
use candor_runner::command_line;
use candor_runner::flags::{parse_rates, series_base, LoadArgs};
use candor_runner::push_view::{self, RunSeries};
use candor_runner::rate_series::{self, engine_step};
use candor_runner::step_records;
use clap::Args;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Offered rates, comma-separated (k and M suffixes), run in the order given.
    #[arg(long, value_name = "LIST", required = true)]
    pub rates: String,
    /// Idle time between steps, so that one step's backlog does not spill into the next.
    #[arg(long, default_value = "2s", value_name = "DUR")]
    pub pause: DurationArg,
    /// Objectives checked at every step (same syntax as `candor run --slo`), shown in the verdict
    /// column. A sweep exits 0 once it has run, whatever the verdicts: its top steps are meant to
    /// go past capacity and miss them. For an exit code that says whether the target meets the
    /// SLOs, use `candor capacity` (exit 3 when even --min misses them).
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// Write every step's results as one JSON file (`candor report FILE` shows a chart with -o).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// No live progress line.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub records: candor_runner::step_records::StepRecordsArgs,
    #[command(flatten)]
    pub live_view: crate::cmd::live::LiveArgs,
    #[command(flatten)]
    pub push: candor_runner::push_view::PushArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

pub fn main(args: SweepArgs) -> Result<i32> {
    crate::cmd::interrupt::install().context("installing the signal handlers")?;
    // Until the first step starts, a signal ends the process: there is nothing to write yet.
    let reading = crate::cmd::interrupt::exit_on_stop("reading the inputs");
    let rates = parse_rates(&args.rates)?;
    let slo = SloSet::parse_all(&args.slo)?;
    let pause_ns = args.pause.ns();
    let base = series_base(&args.load, rates[0], &slo)?;
    // Every step's rate is checked before the first one starts.
    for &rate in &rates {
        let mut c = base.clone();
        c.shape = base.shape.with_rate(rate);
        c.validate()?;
    }
    drop(reading);
    let mut exports = ExportManager::default();
    exports.add("--json", args.json.as_deref(), JsonExporter)?;
    exports.refuse_inputs(&load_inputs(&args.load))?;
    step_records::check(&args.records, &load_inputs(&args.load), rates[0])?;
    if exports.uses_stdout() {
        crate::stdio::give_stdout_to_data();
    }
    let live = !args.quiet && candor_runner::stderr_is_terminal();
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let push = push_view::start(&args.push, base.start_at_wall_ns, Some(RunSeries::Step))?;
    let each = (base.warmup_ns + base.duration_ns) as f64 / 1e9;
    eprintln!(
        "candor sweep: {} steps of {} warm-up + {} at {} ({:.0}s with pauses)",
        rates.len(),
        format_ns(base.warmup_ns as f64),
        format_ns(base.duration_ns as f64),
        base.target.url,
        rates.len() as f64 * (each + pause_ns as f64 / 1e9)
    );
    let mut run_step =
        step_records::with_records(&args.records, engine_step(live, std::env::args().collect()));
    let steps = rate_series::sweep(&base, &rates, pause_ns, &slo, &mut run_step, &mut |step| {
        eprintln!("{}", sweep_text::step_line(step));
    })?;
    let sweep = SweepResults {
        schema_version: SCHEMA_VERSION,
        kind: candor_core::results::Kind::Sweep,
        candor_version: env!("CARGO_PKG_VERSION").into(),
        target: base.target.url.clone(),
        command_line: command_line(&base, &args.load.url),
        steps,
    };
    print!("{}", sweep_text::render(&sweep));
    if let Some(failure) = exports.write_all(&sweep).into_iter().next() {
        return Err(failure.into());
    }
    if let Some(path) = &args.json {
        eprintln!("wrote {path} (candor report {path} -o sweep.html for the chart)");
    }
    if let Some(l) = live_view {
        l.close();
    }
    if let Some(p) = push {
        p.close();
    }
    if let Some(sig) = crate::cmd::interrupt::received() {
        println!(
            "\ninterrupted by {} during step {} of {}: that step was cut short and the rest not run",
            crate::cmd::interrupt::name(sig),
            sweep.steps.len(),
            rates.len()
        );
        return Ok(crate::cmd::interrupt::exit_code(sig));
    }
    if let Some(line) = sweep_text::missed_line(&sweep) {
        println!("{line}");
    }
    Ok(0)
}
