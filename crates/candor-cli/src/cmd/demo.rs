//! `candor demo`: coordinated omission shown on one screen. A built-in server freezes
//! periodically; a wrk-style closed loop and candor's open loop measure it, next to the truth
//! predicted from the freeze windows alone.

use anyhow::{Context, Result};
use candor_core::results::PhaseResults;
use candor_core::units::{format_count, format_ns, format_rate, DurationArg};
use candor_core::Summary;
use candor_load::LoadConfig;
use candor_runner::demo_runs::{demo, DemoPlan, DemoStep, Measurement};
use candor_runner::execute;
use candor_truth::{StallTruth, TRUTH_ROWS};
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
    let secs = duration_ns as f64 / 1e9;

    println!("candor demo: what coordinated omission hides\n");
    println!(
        "A built-in server at {url} answers at once, except that every {} it freezes for {}\n\
         ({:.0}% of the time), like the Go server in the wrk2 example. We measure it twice.\n",
        format_ns(every_ns as f64),
        format_ns(for_ns as f64),
        100.0 * for_ns as f64 / every_ns as f64
    );

    let live = candor_runner::stderr_is_terminal();
    let plan = DemoPlan {
        duration_ns,
        every_ns,
        for_ns,
        rate,
    };
    let mut run = |step: DemoStep, c: &LoadConfig| -> Result<Measurement> {
        match step {
            DemoStep::ClosedLoop => println!("1/2  wrk-style closed loop for {secs:.0}s: 10 connections, each sends its next request when the last answer arrives..."),
            DemoStep::OpenLoop => println!(
                "2/2  candor open loop for {secs:.0}s: {} on a fixed schedule over 16 connections, each request timed from when it was due...",
                format_rate(rate)
            ),
        }
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
    let (closed_phase, open_res, truth) = (&measured.closed, &measured.open, &measured.truth);

    println!();
    println!(
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "", "truth", "wrk-style", "candor", "candor"
    );
    println!(
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "", "(predicted)", "closed loop", "response time", "service time"
    );
    for (label, statistic) in TRUTH_ROWS {
        let cell = |s: &Summary| match statistic {
            // The summary's p100, as the demo has always shown it.
            candor_truth::Statistic::Max => format_ns(s.at(100.0).unwrap_or(0) as f64),
            _ => format_ns(statistic.of(s)),
        };
        println!(
            "  {:<8} {:>12} {:>18} {:>20} {:>16}",
            label,
            format_ns(truth.predicted(statistic)),
            cell(&closed_phase.response_time),
            cell(&open_res.response_time),
            cell(&open_res.service_time)
        );
    }
    let closed_n = closed_phase.requests.completed;
    println!(
        "  {:<8} {:>12} {:>18} {:>20} {:>16}",
        "requests",
        "",
        format_count(closed_n),
        format_count(open_res.requests.completed),
        ""
    );
    println!();
    explain(closed_phase, open_res, truth, for_ns, every_ns);
    Ok(0)
}

fn explain(
    closed: &PhaseResults,
    open: &PhaseResults,
    truth: &StallTruth,
    for_ns: u64,
    every_ns: u64,
) {
    let stalled_pct = 100.0 * truth.stalled_fraction();
    let p90_truth = truth.percentile(90.0) as f64;
    let p90_closed = closed.response_time.at(90.0).unwrap_or(0) as f64;
    let p90_open = open.response_time.at(90.0).unwrap_or(0) as f64;
    let p90_service = open.service_time.at(90.0).unwrap_or(0) as f64;
    println!("What you are looking at:");
    println!(
        "- The truth column needs no measurement: {stalled_pct:.0}% of the moments a user could send a request fall in a freeze, and such a\n  request waits for the rest of it (0 to {}). So p90 must be about {}.",
        format_ns(for_ns as f64),
        format_ns(p90_truth)
    );
    println!(
        "- The closed loop says p90 = {}. During each freeze its 10 connections each had one request stuck, and it simply\n  stopped sending: it recorded ~10 slow samples per freeze and hundreds of thousands of fast ones in between.\n  The user population it stands for would have sent requests during the freeze too. That is coordinated omission.",
        format_ns(p90_closed)
    );
    println!(
        "- candor kept sending on schedule ({} completed, achieved {}), timing each request from when it was due:\n  response time p90 = {}, close to the truth. Its service time (from the actual write, what wrk reports)\n  is p90 = {}: the server was fast whenever it was running; the users still waited.",
        format_count(open.requests.completed),
        format_rate(open.rate.achieved_per_s),
        format_ns(p90_open),
        format_ns(p90_service)
    );
    println!(
        "- Try it on your own service: candor run -R <rate> -c <conns> -d 30s <url>. Stalls here: every {}, for {}.",
        format_ns(every_ns as f64),
        format_ns(for_ns as f64)
    );
}
