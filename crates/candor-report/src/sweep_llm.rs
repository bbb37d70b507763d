//! What a sweep or capacity search of an LLM server (`--llm`) says per step beside response
//! time: goodput, TTFT from the intended send and from the actual send, TPOT, ITL and output
//! tokens per second, read from each step's results (nothing is measured here).

pub use candor_analysis::llm_step::LlmStep;
use candor_analysis::sweep_results::SweepResults;
use candor_core::table::{Column, TextTable};
use candor_core::units::{format_ns, format_rate};

/// Every step's LLM figures; empty when no step was an LLM run.
pub fn llm_steps(sweep: &SweepResults) -> Vec<LlmStep> {
    sweep
        .steps
        .iter()
        .filter_map(|s| LlmStep::of(s.offered_per_s, &s.results))
        .collect()
}

/// The table of LLM figures against offered load; empty when no step was an LLM run.
pub fn table(steps: &[LlmStep]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    // Embeddings have no tokens out: their steps are read by the inputs embedded per second.
    let embeddings = steps.iter().any(|s| s.inputs_per_s.is_some());
    let mut t = TextTable::new(vec![Column::right(10); 7]);
    t.row(&[
        "offered",
        "goodput",
        "TTFT p99",
        "(actual)",
        "TPOT p99",
        "ITL p99",
        if embeddings { "inputs/s" } else { "tokens/s" },
    ]);
    let ns = |v: Option<u64>| v.map_or("-".to_string(), |v| format_ns(v as f64));
    for s in steps {
        let rate = if embeddings {
            s.inputs_per_s
        } else {
            s.output_tokens_per_s
        };
        t.row(&[
            format_rate(s.offered_per_s),
            s.goodput.map_or("-".to_string(), |(g, _)| format_rate(g)),
            ns(s.ttft_p99_ns),
            ns(s.ttft_service_p99_ns),
            ns(s.tpot_p99_ns),
            ns(s.itl_p99_ns),
            rate.map_or("-".into(), |v| format!("{v:.1}")),
        ]);
    }
    let mut out = String::from("\nLLM measures against offered load:\n");
    out.push_str(&t.finish());
    if embeddings {
        out.push_str(
            "  (embeddings: no TTFT, TPOT or ITL; inputs/s: the inputs embedded per second of the \
             measured window; the latency is the response time above)\n",
        );
        return out;
    }
    out.push_str(
        "  (TTFT from each request's intended send; (actual) from its actual send, as a client that \
         times from its own send reports; goodput: requests/s that met every per-request objective, \
         - without --goodput or an --slo on ttft, tpot or e2el; output tokens per second of the \
         measured window)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::synthetic_run;
    use candor_analysis::sweep_results::SweepStep;
    use candor_core::phase_results::{Goodput, LlmTokens, StreamResults};
    use candor_core::results::{Kind, SCHEMA_VERSION};
    use candor_core::{new_histogram, Summary};

    fn llm_step(rate: f64, ttft_ms: u64) -> SweepStep {
        let mut r = synthetic_run(1, 2, 100, 1_000_000, 0);
        let mut h = new_histogram();
        h.record_n(ttft_ms * 1_000_000, 100).unwrap();
        r.main.ttft = Some(Summary::of(&h));
        r.main.stream = Some(StreamResults {
            responses: 100,
            events: 900,
            events_per_response: 9.0,
            failures: Default::default(),
            llm: Some(LlmTokens {
                output_tokens: 800,
                output_tokens_per_s: rate * 8.0,
                counted_from_usage: 100,
                counted_from_chunks: 0,
                ..Default::default()
            }),
            goodput: Some(Goodput::of("ttft<500ms".into(), 50, 100, 100, 10.0)),
        });
        SweepStep {
            offered_per_s: rate,
            results: r,
            slo: vec![],
            saturation: None,
        }
    }

    #[test]
    fn each_llm_step_has_its_figures_and_a_plain_sweep_has_none() {
        let mut sweep = SweepResults {
            schema_version: SCHEMA_VERSION,
            kind: Kind::Sweep,
            candor_version: "t".into(),
            target: "http://127.0.0.1:1/".into(),
            command_line: vec![],
            steps: vec![llm_step(10.0, 50), llm_step(20.0, 700)],
        };
        let steps = llm_steps(&sweep);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].ttft_p99_ns.map(|v| v / 1_000_000), Some(700));
        assert_eq!(steps[1].goodput, Some((5.0, 0.5)));
        assert_eq!(steps[0].output_tokens_per_s, Some(80.0));
        assert_eq!(steps[0].tpot_p99_ns, None);
        let text = table(&steps);
        assert!(text.contains("LLM measures against offered load"), "{text}");
        assert!(text.contains("   160.0"), "{text}");
        assert!(
            steps[0].suffix().contains("TPOT p99 -"),
            "{}",
            steps[0].suffix()
        );
        assert!(steps[0].suffix().ends_with("goodput 5.00/s (50.0%)"));
        for s in &mut sweep.steps {
            s.results.main.stream = None;
        }
        assert!(llm_steps(&sweep).is_empty());
        assert_eq!(table(&[]), "");
    }

    #[test]
    fn an_embeddings_sweep_is_read_by_its_inputs_per_second() {
        let mut step = llm_step(20.0, 50);
        let stream = step.results.main.stream.as_mut().unwrap();
        stream.llm = Some(LlmTokens {
            inputs: 160,
            inputs_per_s: 80.0,
            ..Default::default()
        });
        step.results.main.ttft = None;
        let steps = llm_steps(&SweepResults {
            schema_version: SCHEMA_VERSION,
            kind: Kind::Sweep,
            candor_version: "t".into(),
            target: "http://127.0.0.1:1/".into(),
            command_line: vec![],
            steps: vec![step],
        });
        assert_eq!(steps[0].inputs_per_s, Some(80.0));
        let text = table(&steps);
        assert!(
            text.contains("inputs/s") && !text.contains("tokens/s"),
            "{text}"
        );
        assert!(text.contains("      80.0"), "{text}");
        assert!(
            steps[0].suffix().contains(", 80.0 inputs/s"),
            "{}",
            steps[0].suffix()
        );
    }
}
