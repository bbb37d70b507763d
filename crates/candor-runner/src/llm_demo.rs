//! The two measurements of `candor demo --llm`: an OpenAI-compatible streaming server with a
//! known time to first token that stalls periodically (`candor serve --llm`), measured as the
//! Python LLM benchmarks do (Poisson arrivals over a few connections, each request timed from its
//! actual send) and as candor does (on schedule, over enough connections, each request timed from
//! its intended send), next to the truth of docs/truth.md ("LLM time to first token under a
//! stall"). How one measurement is run is the caller's (the real engine in the binary, scripted
//! numbers in tests).

use crate::demo_runs::Measurement;
use candor_core::results::PhaseResults;
use candor_load::schedule::ArrivalKind;
use candor_load::{LoadConfigError, LoadShape, RunPlan, Target};
use candor_truth::StallTruth;

/// Connections of the benchmark-style measurement: what `bench/llm_asyncio.py` and the Python
/// benchmarks' default pools hold.
pub const BENCHMARK_CONNECTIONS: usize = 10;

/// Distinct synthetic prompts sent round robin.
const PROMPTS: usize = 16;

/// What the LLM demo measures: each measurement's length, the server's truth and stalls, the rate.
#[derive(Debug, Clone, Copy)]
pub struct LlmDemoPlan {
    pub duration_ns: u64,
    /// The server stalls once per this period...
    pub every_ns: u64,
    /// ...for this long.
    pub for_ns: u64,
    /// Intended requests per second of both measurements.
    pub rate: f64,
    /// The server's time to first token and inter-token latency outside stalls.
    pub ttft_ns: u64,
    pub itl_ns: u64,
    /// Tokens per response.
    pub output_tokens: u32,
}

impl LlmDemoPlan {
    /// One response's length outside stalls.
    fn stream_ns(&self) -> u64 {
        self.ttft_ns + self.itl_ns * u64::from(self.output_tokens.saturating_sub(1))
    }

    /// Connections enough that no request waits for one: the streams a stall holds (every
    /// request intended during it and a stream's length before it) and those running, twice.
    pub fn enough_connections(&self) -> usize {
        let held_s = (self.for_ns + 2 * self.stream_ns()) as f64 / 1e9;
        ((2.0 * self.rate * held_s).ceil() as usize).clamp(16, 1024)
    }
}

/// Which of the two measurements is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmDemoStep {
    /// Poisson arrivals over [`BENCHMARK_CONNECTIONS`] connections; its `ttft_service` (from the
    /// actual send) is what such a benchmark reports.
    Benchmark,
    /// Constant arrivals over [`LlmDemoPlan::enough_connections`]; its `ttft` runs from the
    /// intended send.
    Candor,
}

/// The demo's numbers, for its table.
pub struct LlmDemoMeasured {
    pub benchmark: PhaseResults,
    pub candor: PhaseResults,
    /// The truth over candor's measured window: `TTFT(t) = T + W(t + T)`.
    pub truth: StallTruth,
}

/// An LLM run's configuration against `url`: synthetic chat prompts asking for the plan's
/// output tokens, streamed, at the plan's rate with `arrival` over `connections`.
pub fn llm_config(
    url: &str,
    plan: &LlmDemoPlan,
    arrival: ArrivalKind,
    connections: usize,
) -> Result<RunPlan, LoadConfigError> {
    let mut c = RunPlan::new(Target::parse(url)?, Default::default())?;
    c.shape = LoadShape::Rate {
        per_s: plan.rate,
        arrival,
    };
    c.connections = connections;
    c.threads = 1;
    c.duration_ns = plan.duration_ns;
    // A stall holds a stream for its length: the timeout outlasts it, and the drain lets the
    // streams that a stall held at the end finish.
    c.timeout_ns = (plan.for_ns * 3).max(2_000_000_000) + plan.stream_ns();
    c.drain_ns = c.timeout_ns;
    c.use_synthetic_chat(16, u64::from(plan.output_tokens), PROMPTS)
        .map_err(|e| LoadConfigError::Invalid(e.to_string()))?;
    c.validate()?;
    Ok(c)
}

/// Runs the benchmark-style measurement, then candor's, against the server at `url`;
/// `stalls_between(from, to)` names the server's stalls in a window.
pub fn llm_demo<E: From<LoadConfigError>>(
    url: &str,
    plan: &LlmDemoPlan,
    run: &mut dyn FnMut(LlmDemoStep, &RunPlan) -> Result<Measurement, E>,
    stalls_between: &dyn Fn(u64, u64) -> Vec<(u64, u64)>,
) -> Result<LlmDemoMeasured, E> {
    if plan.output_tokens == 0 {
        return Err(
            LoadConfigError::Invalid("the demo needs at least one output token".into()).into(),
        );
    }
    let bench = llm_config(
        url,
        plan,
        ArrivalKind::Poisson { seed: 1 },
        BENCHMARK_CONNECTIONS,
    )?;
    let bench_run = run(LlmDemoStep::Benchmark, &bench)?;
    let ours = llm_config(url, plan, ArrivalKind::Constant, plan.enough_connections())?;
    let ours_run = run(LlmDemoStep::Candor, &ours)?;
    // A request intended at t is read at t; its first token is due at t + T and waits out a
    // stall it falls in: the truth is the stall truth of the instants t + T, plus T.
    let from = ours_run.start_ns + ours.warmup_ns + plan.ttft_ns;
    let to = from + ours.duration_ns;
    let mut truth = StallTruth::periodic(0, 1, 0, from, to, plan.ttft_ns);
    truth.stalls = stalls_between(from, to);
    Ok(LlmDemoMeasured {
        benchmark: bench_run.main,
        candor: ours_run.main,
        truth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::RequestCounts;
    use candor_core::{new_histogram, Recorder};

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    fn plan() -> LlmDemoPlan {
        LlmDemoPlan {
            duration_ns: 10 * S,
            every_ns: 5 * S,
            for_ns: S,
            rate: 20.0,
            ttft_ns: 50 * MS,
            itl_ns: 5 * MS,
            output_tokens: 16,
        }
    }

    fn phase() -> PhaseResults {
        PhaseResults::from_recorder(
            &Recorder::new(),
            &new_histogram(),
            RequestCounts::default(),
            1.0,
            None,
        )
    }

    #[test]
    fn the_benchmark_style_run_comes_first_on_few_connections_and_the_truth_is_shifted_by_ttft() {
        let p = plan();
        let mut asked = Vec::new();
        let mut run = |step: LlmDemoStep, c: &RunPlan| -> Result<Measurement, LoadConfigError> {
            asked.push((step, c.shape.rate_per_s(), c.connections, c.stream.llm));
            assert_eq!(c.method, "POST");
            assert_eq!(c.requests[0].path, "/v1/chat/completions");
            Ok(Measurement {
                start_ns: 100 * S,
                main: phase(),
            })
        };
        let windows = |from: u64, to: u64| vec![(from + S, from + 2 * S), (to - S, to)];
        let m = llm_demo("http://127.0.0.1:9/", &p, &mut run, &windows).expect("the demo");
        // 20/s x (1 s stall + 2 x 125 ms streams) x 2 = 50 connections.
        assert_eq!(p.enough_connections(), 50);
        assert_eq!(
            asked,
            [
                (LlmDemoStep::Benchmark, Some(20.0), 10, true),
                (LlmDemoStep::Candor, Some(20.0), 50, true)
            ]
        );
        assert_eq!(
            (m.truth.from_ns, m.truth.to_ns),
            (100 * S + 50 * MS, 110 * S + 50 * MS)
        );
        assert_eq!(m.truth.base_ns, 50 * MS);
        // Two of ten seconds stalled: a fifth of the first tokens wait, up to a second.
        assert!((m.truth.stalled_fraction() - 0.2).abs() < 1e-9);
        assert_eq!(m.truth.percentile(50.0), 50 * MS);
        assert_eq!(m.truth.max(), S + 50 * MS);
    }

    #[test]
    fn no_output_tokens_is_refused_before_any_run() {
        let mut p = plan();
        p.output_tokens = 0;
        let mut runs = 0;
        let mut run = |_: LlmDemoStep, _: &RunPlan| -> Result<Measurement, LoadConfigError> {
            runs += 1;
            Ok(Measurement {
                start_ns: 0,
                main: phase(),
            })
        };
        let e = llm_demo("http://127.0.0.1:9/", &p, &mut run, &|_, _| Vec::new())
            .err()
            .expect("refused");
        assert!(e.to_string().contains("output token"), "{e}");
        assert_eq!(runs, 0);
    }
}
