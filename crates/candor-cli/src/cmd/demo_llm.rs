//! `candor demo --llm`: coordinated omission in LLM serving benchmarks on one screen. A built-in
//! OpenAI-compatible streaming server with a known time to first token stalls periodically; a
//! sender built as the Python LLM benchmarks are (Poisson arrivals over 10 connections, each
//! request timed from its actual send) and candor (on schedule, timed from the intended send)
//! measure it, next to the truth predicted from the server's settings and stall windows alone.

use anyhow::{Context, Result};
use candor_core::results::PhaseResults;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use candor_load::LoadConfig;
use candor_runner::demo_runs::Measurement;
use candor_runner::execute;
use candor_runner::llm_demo::{llm_demo, LlmDemoPlan, LlmDemoStep, BENCHMARK_CONNECTIONS};
use candor_truth::{StallTruth, TRUTH_ROWS};

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
    let secs = duration_ns as f64 / 1e9;
    let plan = LlmDemoPlan {
        duration_ns,
        every_ns,
        for_ns,
        rate,
        ttft_ns: TTFT_NS,
        itl_ns: ITL_NS,
        output_tokens: OUTPUT_TOKENS,
    };

    println!(
        "candor demo --llm: what LLM serving benchmarks that time from the actual send hide\n"
    );
    println!(
        "A built-in OpenAI-compatible server at {url} streams {OUTPUT_TOKENS} tokens per answer, the first {} after\n\
         it reads the request and one every {} after that, except that every {} it stalls for {}\n\
         ({:.0}% of the time). We measure its time to first token (TTFT) twice.\n",
        format_ns(TTFT_NS as f64),
        format_ns(ITL_NS as f64),
        format_ns(every_ns as f64),
        format_ns(for_ns as f64),
        100.0 * for_ns as f64 / every_ns as f64
    );
    let live = candor_runner::stderr_is_terminal();
    let mut run = |step: LlmDemoStep, c: &LoadConfig| -> Result<Measurement> {
        match step {
            LlmDemoStep::Benchmark => println!(
                "1/2  as vLLM's benchmark, genai-perf and guidellm send: Poisson arrivals at {} over {BENCHMARK_CONNECTIONS} connections\n     for {secs:.0}s, each request timed from when it was actually sent...",
                format_rate(rate)
            ),
            LlmDemoStep::Candor => println!(
                "2/2  candor for {secs:.0}s: {} on a fixed schedule over {} connections, each request timed from when it was due...",
                format_rate(rate),
                c.connections
            ),
        }
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
    let (bench, ours, truth) = (&measured.benchmark, &measured.candor, &measured.truth);

    println!();
    println!(
        "  {:<8} {:>12} {:>22} {:>18} {:>18}",
        "TTFT", "truth", "benchmark-style", "candor", "candor"
    );
    println!(
        "  {:<8} {:>12} {:>22} {:>18} {:>18}",
        "", "(predicted)", "(from actual send)", "(from intended)", "(from actual send)"
    );
    let empty = Summary::of(&candor_core::new_histogram());
    let (b, o, os) = (
        bench.ttft_service.as_ref().unwrap_or(&empty),
        ours.ttft.as_ref().unwrap_or(&empty),
        ours.ttft_service.as_ref().unwrap_or(&empty),
    );
    for (label, statistic) in TRUTH_ROWS {
        let cell = |s: &Summary| {
            if s.count == 0 {
                "\u{2014}".to_string()
            } else {
                format_ns(statistic.of(s))
            }
        };
        println!(
            "  {:<8} {:>12} {:>22} {:>18} {:>18}",
            label,
            format_ns(truth.predicted(statistic)),
            cell(b),
            cell(o),
            cell(os)
        );
    }
    println!(
        "  {:<8} {:>12} {:>22} {:>18} {:>18}",
        "requests",
        "",
        format_count(bench.requests.completed),
        format_count(ours.requests.completed),
        ""
    );
    println!();
    explain(bench, ours, truth, for_ns);
    Ok(0)
}

fn explain(bench: &PhaseResults, ours: &PhaseResults, truth: &StallTruth, for_ns: u64) {
    let at = |s: &Option<Summary>, p: f64| s.as_ref().and_then(|s| s.at(p)).unwrap_or(0) as f64;
    let stalled_pct = 100.0 * truth.stalled_fraction();
    println!("What you are looking at:");
    println!(
        "- The truth column needs no measurement: {stalled_pct:.0}% of first tokens fall due in a stall and wait for the rest of\n  it (0 to {}), so TTFT p90 must be about {}.",
        format_ns(for_ns as f64),
        format_ns(truth.percentile(90.0) as f64)
    );
    println!(
        "- The benchmark-style sender says p90 = {}. During each stall its {BENCHMARK_CONNECTIONS} connections each held one stuck\n  stream and the requests due meanwhile waited in the client, unsent and untimed: the queue is not counted.",
        format_ns(at(&bench.ttft_service, 90.0))
    );
    println!(
        "- candor timed every request from when it was due: TTFT p90 = {}, close to the truth ({} of its streams\n  completed). It had connections enough to send each request when due, so its TTFT from the actual send\n  reads the same (p90 = {}): what hid the stall above was the benchmark's own queue, not its clock.",
        format_ns(at(&ours.ttft, 90.0)),
        format_count(ours.requests.completed),
        format_ns(at(&ours.ttft_service, 90.0))
    );
    println!(
        "- Try it on your own server: candor run --llm openai --model NAME -R <rate> -c <conns> -d 60s <url>."
    );
}
