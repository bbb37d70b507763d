//! `candor demo`: coordinated omission shown on one screen. A built-in server freezes
//! periodically; a wrk-style closed loop and candor's open loop measure it, next to the truth
//! predicted from the freeze windows alone.

use anyhow::{Context, Result};
use candor_core::units::DurationArg;
use candor_load::RunPlan;
use candor_runner::demo_runs::{demo, DemoPlan, DemoStep, Measurement};
use candor_runner::{demo_text, execute};
use clap::Args;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Length of each of the two measurements.
    #[arg(long, default_value = "15s", value_name = "DUR")]
    pub duration: DurationArg,
    /// The server freezes once per this period...
    #[arg(long, default_value = "5s", value_name = "DUR")]
    pub stall_every: DurationArg,
    /// ...for this long (every request waits until the freeze ends).
    #[arg(long, default_value = "1s", value_name = "DUR")]
    pub stall_for: DurationArg,
    /// Intended request rate of the open-loop measurement [default: 2k; with --llm, of both
    /// measurements: 20]
    #[arg(short = 'R', long)]
    pub rate: Option<String>,
    /// Show time to first token instead: a built-in OpenAI-compatible streaming server with a
    /// known TTFT stalls periodically, measured as the Python LLM benchmarks do (Poisson
    /// arrivals over 10 connections, timed from the actual send) and as candor does (timed from
    /// the intended send), beside the truth.
    #[arg(long)]
    pub llm: bool,
}

pub fn main(args: DemoArgs) -> Result<i32> {
    if args.llm {
        return crate::cmd::demo_llm::main(
            args.duration.ns(),
            args.stall_every.ns(),
            args.stall_for.ns(),
            args.rate.as_deref(),
        );
    }
    let duration_ns = args.duration.ns();
    let every_ns = args.stall_every.ns();
    let for_ns = args.stall_for.ns();
    let rate = candor_runner::flags::open_rate(args.rate.as_deref().unwrap_or("2k"), "--rate")?;
    let mut serve = candor_serve::ServeConfig::new("127.0.0.1:0".parse()?);
    serve.threads = 1;
    serve.stall = Some(candor_serve::Stall { every_ns, for_ns });
    let server = candor_serve::start(serve).context("starting the demo server")?;
    let url = format!("http://{}/", server.local_addr());
    let plan = DemoPlan {
        duration_ns,
        every_ns,
        for_ns,
        rate,
    };
    print!("{}", demo_text::intro(&url, &plan));
    let live = candor_runner::stderr_is_terminal();
    let mut run = |step: DemoStep, c: &RunPlan| -> Result<Measurement> {
        println!("{}", demo_text::step_line(step, &plan));
        let outcome = execute(c, live)?;
        crate::cmd::interrupt::check("the demo")?;
        Ok(Measurement {
            start_ns: outcome.start_ns,
            main: outcome.main_results(c),
        })
    };
    let measured = demo(&url, &plan, &mut run, &|from, to| {
        server.stall_windows_between(from, to)
    })?;
    server.shutdown();
    print!("{}", demo_text::results(&measured, &plan));
    Ok(0)
}
