//! `candor capacity`: the highest rate whose response time meets the SLOs with every request
//! served, found by bracketing then bisecting, with confirmation runs at the answer.

use crate::cmd::outputs::load_inputs;
use anyhow::{Context, Result};
use candor_analysis::capacity_search::SearchSettings;
use candor_analysis::slo::SloSet;
use candor_core::units::{format_rate, DurationArg};
use candor_report::capacity_report;
use candor_report::export::ExportManager;
use candor_report::json::JsonExporter;
use candor_runner::flags::{open_rate, series_base, LoadArgs};
use candor_runner::push_view::{self, RunSeries};
use candor_runner::rate_series::{self, engine_step};
use candor_runner::step_records;
use clap::Args;

#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// The objectives a rate must meet, e.g. 'p99<10ms,p99.9<50ms' (response time; see run --slo),
    /// or with --llm 'ttft.p99<500ms,goodput>=90%' (a goodput share is also the error budget).
    /// The exit code is the verdict: 0 when a rate in [--min, --max] meets them (the capacity is
    /// printed), 3 when even --min misses them or the search did not settle (unlike `sweep`,
    /// which exits 0 whatever its steps' verdicts).
    #[arg(long, value_name = "SLO", required = true)]
    pub slo: Vec<String>,
    /// Lowest rate to try (the search starts here and doubles).
    #[arg(long, default_value = "100", value_name = "RATE")]
    pub min: String,
    /// Highest rate to try.
    #[arg(long, default_value = "100k", value_name = "RATE")]
    pub max: String,
    /// Stop bisecting when the bracket is this narrow (percent of the rate).
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub tolerance: f64,
    /// Extra runs at the answer that must pass too.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub confirm: u32,
    /// At most this many measurements.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_steps: u32,
    /// Idle time between steps, so that one step's backlog does not spill into the next.
    #[arg(long, default_value = "1s", value_name = "DUR")]
    pub pause: DurationArg,
    /// Write the search (every step's verdict and evidence) as JSON; an interrupted search
    /// writes the steps judged before the signal (outcome "interrupted").
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// No progress on stderr (the plan and one line per step); the report is unchanged.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub records: candor_runner::step_records::StepRecordsArgs,
    #[command(flatten)]
    pub live_view: crate::cmd::live::LiveArgs,
    #[command(flatten)]
    pub push: push_view::PushArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

pub fn main(args: CapacityArgs) -> Result<i32> {
    crate::cmd::interrupt::install().context("installing the signal handlers")?;
    // Until the first step starts, a signal ends the process: there is nothing to write yet.
    let reading = crate::cmd::interrupt::exit_on_stop("reading the inputs");
    let slo = SloSet::parse_all(&args.slo)?;
    let settings = SearchSettings {
        min: open_rate(&args.min, "--min")?,
        max: open_rate(&args.max, "--max")?,
        tolerance: args.tolerance / 100.0,
        confirmations: args.confirm,
        max_steps: args.max_steps,
        growth: 2.0,
    };
    settings.validate()?;
    let pause_ns = args.pause.ns();
    let base = series_base(&args.load, settings.min, &slo)?;
    for rate in [settings.min, settings.max] {
        let mut c = base.clone();
        c.shape = base.shape.with_rate(rate);
        c.validate()
            .with_context(|| format!("at {}", format_rate(rate)))?;
    }
    drop(reading);
    let mut exports = ExportManager::default();
    exports.add("--json", args.json.as_deref(), JsonExporter)?;
    exports.refuse_inputs(&load_inputs(&args.load))?;
    step_records::check(&args.records, &load_inputs(&args.load), settings.min)?;
    if exports.uses_stdout() {
        crate::stdio::give_stdout_to_data();
    }
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let push = push_view::start(&args.push, base.start_at_wall_ns, Some(RunSeries::Step))?;
    // The search decides as it goes whether another step follows: the event stream goes on
    // until the live server closes.
    crate::cmd::live::more_runs_follow(true);
    let progress = !args.quiet;
    if progress {
        eprintln!(
            "{}",
            capacity_report::plan_line(
                &base.target.url,
                &settings,
                base.warmup_ns,
                base.duration_ns,
                &slo
            )
        );
    }
    let mut run_step = step_records::with_records(&args.records, engine_step(false, vec![]));
    let found = rate_series::capacity(
        &base,
        settings,
        &slo,
        pause_ns,
        &mut run_step,
        &mut |rate, purpose, trial| {
            if progress {
                eprintln!("{}", capacity_report::step_line(rate, purpose, trial));
            }
        },
    )?;
    let (text, code) = capacity_report::render(&base.target.url, &settings, &found);
    print!("{text}");
    if let Some(failure) = exports.write_all(&found).into_iter().next() {
        return Err(failure.into());
    }
    if let Some(l) = live_view {
        l.close();
    }
    if let Some(p) = push {
        p.close();
    }
    if let Some(sig) = crate::cmd::interrupt::received() {
        println!(
            "\ninterrupted by {}: the step it cut short was dropped and the search ended",
            crate::cmd::interrupt::name(sig)
        );
        return Ok(crate::cmd::interrupt::exit_code(sig));
    }
    Ok(code)
}
