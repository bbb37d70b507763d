//! `candor sweep`: the same test at several offered rates (warm-up, then a pause between steps),
//! a table of response-time percentiles against offered load, and one JSON file of every step's
//! full results that `candor report` renders as a chart.

use crate::cmd::run::{command_line, execute, load_config, recorded_config, LoadArgs};
use anyhow::{bail, Context, Result};
use candor_analysis::slo::SloSet;
use candor_analysis::sweep::{SweepResults, SweepStep};
use candor_core::results::{RunResults, SCHEMA_VERSION};
use candor_core::units::{format_ns, format_rate, parse_duration_ns};
use candor_report::export::Destination as Output;
use clap::Args;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Offered rates, comma-separated (k and M suffixes), run in the order given.
    #[arg(long, value_name = "LIST", required = true)]
    pub rates: String,
    /// Idle time between steps, so that one step's backlog does not spill into the next.
    #[arg(long, default_value = "2s", value_name = "DUR")]
    pub pause: String,
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
    pub live_view: crate::cmd::live::LiveArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Parses `1k,2k,5k` into rates per second.
pub fn parse_rates(text: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let p = part.trim();
        if p.is_empty() {
            bail!("--rates '{text}': empty entry");
        }
        out.push(candor_runner::flags::open_rate(p, "--rates")?);
    }
    Ok(out)
}

/// Sweep and capacity steps use a 1 s warm-up unless --warmup (parsed into `config`) says
/// otherwise.
pub fn step_warmup_ns(config: &candor_load::LoadConfig) -> u64 {
    match config.warmup_ns {
        0 => 1_000_000_000,
        w => w,
    }
}

pub fn main(args: SweepArgs) -> Result<i32> {
    crate::cmd::interrupt::install().context("installing the signal handlers")?;
    // Until the first step starts, a signal ends the process: there is nothing to write yet.
    let reading = crate::cmd::interrupt::exit_on_stop("reading the inputs");
    let rates = parse_rates(&args.rates)?;
    let slo = SloSet::parse_all(&args.slo)?;
    let pause_ns = parse_duration_ns(&args.pause).context("--pause")?;
    let mut base = load_config(&args.load, Some(rates[0]), None)?;
    base.warmup_ns = step_warmup_ns(&base);
    // Every step's rate is checked before the first one starts.
    for &rate in &rates {
        let mut c = base.clone();
        c.shape = base.shape.with_rate(rate);
        c.validate()?;
    }
    drop(reading);
    let mut json_out = Output::open_opt("--json", args.json.as_deref())?;
    crate::stdio::give_stdout_to(json_out.as_ref());
    if let Some(out) = &json_out {
        out.refuse_inputs(&crate::cmd::run::load_inputs(&args.load))?;
    }
    let live = !args.quiet && crate::cmd::run::stderr_is_terminal();
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let each = (base.warmup_ns + base.duration_ns) as f64 / 1e9;
    eprintln!(
        "candor sweep: {} steps of {} warm-up + {} at {} ({:.0}s with pauses)",
        rates.len(),
        format_ns(base.warmup_ns as f64),
        format_ns(base.duration_ns as f64),
        base.target.url,
        rates.len() as f64 * (each + pause_ns as f64 / 1e9)
    );
    let mut steps = Vec::with_capacity(rates.len());
    for (i, &rate) in rates.iter().enumerate() {
        // The pause between steps ends at a signal too: the interrupted step is the last.
        if crate::cmd::interrupt::received().is_some()
            || (i > 0 && !crate::cmd::interrupt::sleep(pause_ns))
        {
            break;
        }
        let mut c = base.clone();
        c.shape = base.shape.with_rate(rate);
        c.validate()?;
        crate::cmd::live::more_runs_follow(i + 1 < rates.len());
        let outcome = execute(&c, live).with_context(|| format!("step {}", format_rate(rate)))?;
        let results = outcome.to_results(&c, std::env::args().collect(), recorded_config(&c));
        let step = make_step(rate, results, &slo);
        let m = &step.results.main;
        eprintln!(
            "  {:>9}: throughput {:>9}, response time p50 {} p99 {} max {}{}",
            format_rate(rate),
            format_rate(
                candor_analysis::saturation::throughput(&step.results)
                    .unwrap_or(m.rate.achieved_per_s)
            ),
            format_ns(m.response_time.at(50.0).unwrap_or(0) as f64),
            format_ns(m.response_time.at(99.0).unwrap_or(0) as f64),
            format_ns(m.response_time.max_ns as f64),
            if step.saturation.is_some() {
                "  SATURATED"
            } else {
                ""
            }
        );
        steps.push(step);
    }
    let sweep = SweepResults {
        schema_version: SCHEMA_VERSION,
        kind: candor_core::results::Kind::Sweep,
        candor_version: env!("CARGO_PKG_VERSION").into(),
        target: base.target.url.clone(),
        command_line: command_line(&base, &args.load.url),
        steps,
    };
    println!(
        "candor sweep of {}: response time against offered load\n",
        sweep.target
    );
    print!("{}", sweep.table());
    for s in &sweep.steps {
        if let Some(v) = &s.saturation {
            println!("  at {}: {v}", format_rate(s.offered_per_s));
        }
    }
    if let Some(out) = json_out.as_mut() {
        out.export(&candor_report::json::JsonExporter, &sweep)?;
        let path = out.path.display();
        eprintln!("wrote {path} (candor report {path} -o sweep.html for the chart)");
    }
    if let Some(l) = live_view {
        l.close();
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
    let missed: Vec<String> = sweep
        .steps
        .iter()
        .filter(|s| s.slo.iter().any(|v| !v.pass))
        .map(|s| format_rate(s.offered_per_s))
        .collect();
    if !missed.is_empty() {
        println!(
            "  SLO missed at {} (expected of a sweep's top steps; the exit code stays 0: \
             `candor capacity --slo ...` answers whether a rate meets them)",
            missed.join(", ")
        );
    }
    Ok(0)
}

/// The results of one step with its analysis, SLO verdicts and saturation verdict.
pub fn make_step(rate: f64, mut results: RunResults, slo: &SloSet) -> SweepStep {
    let mut analysis = candor_analysis::analyze(&results);
    let verdicts = slo.evaluate(&results);
    analysis.slo = verdicts.clone();
    let saturation = analysis.saturation.as_ref().map(|s| s.verdict.clone());
    results.main.analysis = Some(analysis);
    SweepStep {
        offered_per_s: rate,
        results,
        slo: verdicts,
        saturation,
    }
}
