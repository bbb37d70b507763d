//! `candor sweep`: the same test at several offered rates (warm-up, then a pause between steps),
//! a table of response-time percentiles against offered load, and one JSON file of every step's
//! full results that `candor report` renders as a chart.

use anyhow::{bail, Context, Result};
use candor_analysis::slo::SloSet;
use candor_analysis::sweep_results::SweepResults;
use candor_core::results::SCHEMA_VERSION;
use candor_core::units::{format_ns, format_rate, DurationArg};
use candor_report::export::ExportManager;
use candor_report::json::JsonExporter;
use candor_runner::command_line;
use candor_runner::flags::{load_config, LoadArgs};
use candor_runner::rate_series::{self, engine_step};
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
        // A bad entry is named with the whole list, as the user typed it.
        let rate = candor_runner::flags::open_rate(p, "--rates").map_err(|e| match e {
            candor_runner::flags::FlagError::Value { source, .. } => {
                anyhow::anyhow!("--rates '{text}': {source}")
            }
            other => other.into(),
        })?;
        out.push(rate);
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
    let pause_ns = args.pause.ns();
    let mut base = load_config(&args.load, Some(rates[0]), None)?;
    base.warmup_ns = step_warmup_ns(&base);
    // Every step's rate is checked before the first one starts.
    for &rate in &rates {
        let mut c = base.clone();
        c.shape = base.shape.with_rate(rate);
        c.validate()?;
    }
    drop(reading);
    let mut exports = ExportManager::default();
    exports.add("--json", args.json.as_deref(), JsonExporter)?;
    exports.refuse_inputs(&crate::cmd::outputs::load_inputs(&args.load))?;
    if exports.uses_stdout() {
        crate::stdio::give_stdout_to_data();
    }
    let live = !args.quiet && candor_runner::stderr_is_terminal();
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
    let mut run_step = engine_step(live, std::env::args().collect());
    let steps = rate_series::sweep(&base, &rates, pause_ns, &slo, &mut run_step, &mut |step| {
        let m = &step.results.main;
        eprintln!(
            "  {:>9}: throughput {:>9}, response time p50 {} p99 {} max {}{}",
            format_rate(step.offered_per_s),
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
    })?;
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
    if let Some(failure) = exports.write_all(&sweep).into_iter().next() {
        return Err(failure.into());
    }
    if let Some(path) = &args.json {
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

#[cfg(test)]
mod tests {
    use super::parse_rates;

    #[test]
    fn a_bad_rate_is_named_with_the_whole_list() {
        assert_eq!(parse_rates("100, 2k").unwrap(), vec![100.0, 2000.0]);
        let e = format!("{:#}", parse_rates("100,x").unwrap_err());
        assert!(e.starts_with("--rates '100,x': invalid rate 'x'"), "{e}");
        assert!(format!("{:#}", parse_rates("1,,2").unwrap_err()).contains("empty entry"));
        let e = format!("{:#}", parse_rates("100,max").unwrap_err());
        assert!(e.contains("must be a rate, not 'max'"), "{e}");
    }
}
