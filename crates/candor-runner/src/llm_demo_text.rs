//! What `candor demo --llm` says: the plan, each measurement as it starts, and the table of the
//! TTFT truth beside the benchmark-style sender's and candor's, explained.

use crate::llm_demo::{LlmDemoMeasured, LlmDemoPlan, LlmDemoStep, BENCHMARK_CONNECTIONS};
use candor_core::results::PhaseResults;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use candor_truth::{StallTruth, TRUTH_ROWS};
use std::fmt::Write as _;

/// The opening: what the demo's LLM server at `url` does, and that its TTFT is measured twice.
pub fn intro(url: &str, plan: &LlmDemoPlan) -> String {
    let (every_ns, for_ns) = (plan.every_ns, plan.for_ns);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "candor demo --llm: what LLM serving benchmarks that time from the actual send hide\n"
    );
    let _ = writeln!(
        out,
        "A built-in OpenAI-compatible server at {url} streams {} tokens per answer, the first {} after\n\
         it reads the request and one every {} after that, except that every {} it stalls for {}\n\
         ({:.0}% of the time). We measure its time to first token (TTFT) twice.\n",
        plan.output_tokens,
        format_ns(plan.ttft_ns as f64),
        format_ns(plan.itl_ns as f64),
        format_ns(every_ns as f64),
        format_ns(for_ns as f64),
        100.0 * for_ns as f64 / every_ns as f64
    );
    out
}

/// The line that announces measurement `step`, made over `connections`.
pub fn step_line(step: LlmDemoStep, plan: &LlmDemoPlan, connections: usize) -> String {
    let (secs, rate) = (plan.duration_ns as f64 / 1e9, plan.rate);
    match step {
        LlmDemoStep::Benchmark => format!(
                "1/2  a benchmark-style sender: Poisson arrivals at {} over {BENCHMARK_CONNECTIONS} connections for {secs:.0}s, each\n     request timed from when it was actually sent, as vLLM's benchmark, genai-perf and guidellm time them (the\n     cap of {BENCHMARK_CONNECTIONS} in flight is this demo's assumption: vLLM's client has none unless --max-concurrency is given)...",
                format_rate(rate)
            ),
        LlmDemoStep::Candor => format!(
                "2/2  candor for {secs:.0}s: {} on a fixed schedule over {} connections, each request timed from when it was due...",
                format_rate(rate),
                connections
            ),
    }
}

/// The table of the TTFT truth, the benchmark-style sender's and candor's, and what it shows.
pub fn results(measured: &LlmDemoMeasured, plan: &LlmDemoPlan) -> String {
    let for_ns = plan.for_ns;
    let mut out = String::new();
    let (bench, ours, truth) = (&measured.benchmark, &measured.candor, &measured.truth);

    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<8} {:>12} {:>22} {:>18} {:>18}",
        "TTFT", "truth", "benchmark-style", "candor", "candor"
    );
    let _ = writeln!(
        out,
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
        let _ = writeln!(
            out,
            "  {:<8} {:>12} {:>22} {:>18} {:>18}",
            label,
            format_ns(truth.predicted(statistic)),
            cell(b),
            cell(o),
            cell(os)
        );
    }
    let _ = writeln!(
        out,
        "  {:<8} {:>12} {:>22} {:>18} {:>18}",
        "requests",
        "",
        format_count(bench.requests.completed),
        format_count(ours.requests.completed),
        ""
    );
    let _ = writeln!(out);
    explain(&mut out, bench, ours, truth, for_ns);
    out
}

fn explain(
    out: &mut String,
    bench: &PhaseResults,
    ours: &PhaseResults,
    truth: &StallTruth,
    for_ns: u64,
) {
    let at = |s: &Option<Summary>, p: f64| s.as_ref().and_then(|s| s.at(p)).unwrap_or(0) as f64;
    let stalled_pct = 100.0 * truth.stalled_fraction();
    let _ = writeln!(out, "What you are looking at:");
    let _ = writeln!(
        out,
        "- The truth column needs no measurement: {stalled_pct:.0}% of first tokens fall due in a stall and wait for the rest of\n  it (0 to {}), so TTFT p90 must be about {}.",
        format_ns(for_ns as f64),
        format_ns(truth.percentile(90.0) as f64)
    );
    let _ = writeln!(
        out,
        "- The benchmark-style sender says p90 = {}. During each stall its {BENCHMARK_CONNECTIONS} connections each held one stuck\n  stream and the requests due meanwhile waited in the client, unsent and untimed: the queue is not counted.",
        format_ns(at(&bench.ttft_service, 90.0))
    );
    let _ = writeln!(
        out,
        "- candor timed every request from when it was due: TTFT p90 = {}, close to the truth ({} of its streams\n  completed). It had connections enough to send each request when due, so its TTFT from the actual send\n  reads the same (p90 = {}): what hid the stall above was the benchmark's own queue, not its clock.",
        format_ns(at(&ours.ttft, 90.0)),
        format_count(ours.requests.completed),
        format_ns(at(&ours.ttft_service, 90.0))
    );
    let _ = writeln!(
        out,
        "- Try it on your own server: candor run --llm openai --model NAME --output-tokens 128 -R <rate> -c <conns> -d 60s -T 30s <url>\n  (-T bounds the wait for the first token, --stream-timeout the whole answer: 60s unless given)."
    );
}
