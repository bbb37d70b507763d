//! `candor demo --llm`: coordinated omission in LLM serving benchmarks on one screen. A built-in
//! OpenAI-compatible streaming server with a known time to first token stalls periodically; a
//! sender built as the Python LLM benchmarks are (Poisson arrivals over 10 connections, each
//! request timed from its actual send) and candor (on schedule, timed from the intended send)
//! measure it, next to the truth predicted from the server's settings and stall windows alone.

use anyhow::{Context, Result};
use candor_load::RunPlan;
use candor_runner::demo_runs::Measurement;
use candor_runner::llm_demo::{llm_demo, LlmDemoPlan, LlmDemoStep};
use candor_runner::{execute, llm_demo_text};

/// The server's time to first token, inter-token latency and tokens per response.
const TTFT_NS: u64 = 50_000_000;
const ITL_NS: u64 = 5_000_000;
const OUTPUT_TOKENS: u32 = 16;

/// The LLM demo of `duration_ns` per measurement, the server stalling `for_ns` every
/// `every_ns`, at `rate` (`-R` as given; 20 when not).
pub fn main(duration_ns: u64, every_ns: u64, for_ns: u64, rate: Option<&str>) -> Result<i32> {
    let rate = candor_runner::flags::open_rate(rate.unwrap_or("20"), "--rate")?;
    let stall = candor_serve::Stall { every_ns, for_ns };
    let mut serve = candor_serve::llm::LlmConfig::new("127.0.0.1:0".parse()?);
    serve.ttft_ns = TTFT_NS;
    serve.itl_ns = ITL_NS;
    serve.output_tokens = OUTPUT_TOKENS;
    serve.stall = Some(stall);
    let server = candor_serve::llm::start(serve).context("starting the demo's LLM server")?;
    let url = format!("http://{}/", server.local_addr());
    let started = server.started_at_ns();
    let plan = LlmDemoPlan {
        duration_ns,
        every_ns,
        for_ns,
        rate,
        ttft_ns: TTFT_NS,
        itl_ns: ITL_NS,
        output_tokens: OUTPUT_TOKENS,
    };

    print!("{}", llm_demo_text::intro(&url, &plan));
    let live = candor_runner::stderr_is_terminal();
    let mut run = |step: LlmDemoStep, c: &RunPlan| -> Result<Measurement> {
        println!("{}", llm_demo_text::step_line(step, &plan, c.connections));
        let outcome = execute(c, live)?;
        crate::cmd::interrupt::check("the demo")?;
        Ok(Measurement {
            start_ns: outcome.start_ns,
            main: outcome.main_results(c),
        })
    };
    let measured = llm_demo(&url, &plan, &mut run, &|from, to| {
        stall.windows_between(started, from, to)
    })?;
    server.shutdown();
    print!("{}", llm_demo_text::results(&measured, &plan));
    Ok(0)
}
