//! One phase's totals as the run's threads left them (`PhaseOutcome`), and how they become the
//! results' numbers: statuses, gRPC statuses by name, connection faults, and the streams'
//! measures, tokens and goodput.

use crate::config::LoadConfig;
use candor_core::results::{PhaseResults, RequestCounts};
use candor_core::{Histo, Recorder};

/// Totals of one phase.
pub struct PhaseOutcome {
    pub recorder: Recorder,
    pub unfinished: Histo,
    pub counts: RequestCounts,
    /// TLS handshake times of connections opened in this phase (empty without TLS).
    pub tls_handshake: Histo,
    /// gRPC server streaming: time to each call's first message (empty otherwise).
    pub first_message: Histo,
    pub duration_ns: u64,
    /// What the engine saw that the report must name (see `PhaseAcc::warnings`).
    pub warnings: Vec<String>,
    /// Per-stage and per-name books (measured phase), if the run had them.
    pub workload: Option<Box<crate::books::WorkloadBooks>>,
    /// The earliest failed responses (measured phase).
    pub failures: crate::examples::FailureSamples,
    /// Connections that failed, by cause.
    pub faults: crate::backoff::FaultTally,
    /// Responses by status code.
    pub codes: candor_core::results::CodeCounts,
    /// Streamed responses' events and tokens (`--stream`, `--llm`).
    pub stream: Option<Box<crate::books::StreamAcc>>,
    /// Replies by the code their protocol reads beside the status (gRPC's `grpc-status`).
    pub reply_codes: candor_core::reply_codes::ReplyCodeCounts,
    /// What the protocol counted of its own transport, by name (`PhaseAcc::protocol_counts`).
    pub protocol_counts: std::collections::BTreeMap<&'static str, u64>,
}

impl PhaseOutcome {
    pub fn results(&self, config: &LoadConfig) -> PhaseResults {
        let target = config.shard_rate_per_s();
        let mut r = PhaseResults::from_recorder(
            &self.recorder,
            &self.unfinished,
            self.counts,
            self.duration_ns as f64 / 1e9,
            target,
        );
        r.status_codes = self.codes.to_map();
        self.reply_codes.write_into(&mut r);
        r.connection_faults = self.faults.by_cause();
        r.protocol_counts = self
            .protocol_counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        if let Some(s) = &self.stream {
            stream_results(&mut r, s, self.duration_ns);
            if config.conversations.is_some() {
                r.conversations = Some(s.conversations);
            }
            if let (Some(slo), Some(sr)) = (&config.goodput, &mut r.stream) {
                sr.goodput = Some(candor_core::results::Goodput::of(
                    slo.to_string(),
                    s.good,
                    s.good_service,
                    r.requests.intended,
                    self.duration_ns as f64 / 1e9,
                ));
            }
        }
        r
    }
}

/// The streams' measures and counts in `r`: a measure only when it has samples, the LLM
/// tokens only when some response carried some or the run was an LLM run (`ttft` recorded).
fn stream_results(r: &mut PhaseResults, s: &crate::books::StreamAcc, duration_ns: u64) {
    use candor_core::Summary;
    let of = |h: &candor_core::Histo| (!h.is_empty()).then(|| Summary::of(h));
    r.first_event = of(&s.first_event);
    r.event_gap = of(&s.event_gap);
    r.ttft = of(&s.ttft);
    r.ttft_service = of(&s.ttft_service);
    r.itl = of(&s.itl);
    r.tpot = of(&s.tpot);
    let failures = candor_stream::openai::LlmFailure::ALL
        .iter()
        .zip(s.failures)
        .filter(|(_, n)| *n > 0)
        .map(|(f, n)| (f.name().to_string(), n))
        .collect();
    // Embeddings count no output tokens: their inputs and input tokens make it an LLM run's.
    let llm = s.counted_responses() > 0 || s.inputs > 0 || s.input_counted > 0;
    r.stream = Some(candor_core::results::StreamResults {
        responses: s.responses,
        events: s.events,
        events_per_response: if s.responses > 0 {
            s.events as f64 / s.responses as f64
        } else {
            0.0
        },
        failures,
        goodput: None,
        llm: llm.then(|| {
            let mut t = candor_core::results::LlmTokens {
                output_tokens: s.output_tokens,
                counted_from_usage: s.tokens_from_usage,
                counted_from_chunks: s.tokens_from_chunks,
                input_tokens: s.input_tokens,
                input_counted: s.input_counted,
                inputs: s.inputs,
                cached_tokens: s.cached_tokens,
                cached_counted: s.cached_counted,
                counted_by_tokenizer: s.tokens_from_tokenizer,
                tokenizer_check: (s.tokenizer_check.responses > 0).then_some(s.tokenizer_check),
                ..Default::default()
            };
            t.set_rates(duration_ns as f64 / 1e9);
            t
        }),
    });
}
