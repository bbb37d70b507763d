//! A load thread's books: what it accumulated in each phase (warm-up, measured), and those a
//! workload adds: one per stage of a load profile (a request belongs to the stage of its intended
//! time) and one per request name. All are allocated before the run; booking into them is an
//! index and the same histogram records as the phase's.

use candor_core::hist::record_clamped;
use candor_core::results::FailureClass;
use candor_core::results::RequestCounts;
use candor_core::{new_histogram, Histo, Recorder};

/// What a worker accumulated in one phase (0 = warm-up, 1 = measured).
pub struct PhaseAcc {
    pub rec: Recorder,
    pub unfinished: Histo,
    pub counts: RequestCounts,
    /// Time from TCP connected to TLS handshake complete, per handshake (by completion time).
    pub tls_handshake: Histo,
    /// gRPC server streaming: time from a call's intended send to its first whole message.
    pub first_message: Histo,
    /// Conditions an engine saw that the report must name (the measured phase's are reported).
    pub warnings: Vec<String>,
    /// Per-stage and per-name books (the measured phase's only; `None` without them).
    pub workload: Option<Box<WorkloadBooks>>,
    /// What pacing did over the whole run (kept on the measured phase).
    pub pacing: candor_core::PaceStats,
    /// The earliest failed responses (kept on the measured phase).
    pub failures: crate::examples::FailureSamples,
    /// Connections that failed, by cause (`engine::backoff`).
    pub faults: crate::backoff::FaultTally,
    /// Responses by status code.
    pub codes: candor_core::results::CodeCounts,
    /// Streamed responses' events and tokens (runs with `--stream` or `--llm` only).
    pub stream: Option<Box<StreamAcc>>,
    /// Replies by the code their protocol reads beside the status (gRPC's `grpc-status`).
    pub reply_codes: candor_core::reply_codes::ReplyCodeCounts,
    /// Counts a protocol keeps of its own transport, by name (QUIC's packets sent and lost):
    /// a handful of names per protocol, each inserted once.
    pub protocol_counts: std::collections::BTreeMap<&'static str, u64>,
}

/// What the streamed responses of one phase came to: their events' timing and, in an LLM run,
/// their tokens, each measure from the intended send (and TTFT also from the actual send).
#[derive(Clone)]
pub struct StreamAcc {
    /// Intended send to the first event.
    pub first_event: Histo,
    /// Between consecutive events of one response.
    pub event_gap: Histo,
    /// Intended send to the first token (LLM).
    pub ttft: Histo,
    /// Actual send to the first token (LLM): what a client timing from its own send reports.
    pub ttft_service: Histo,
    /// Between consecutive content chunks (LLM).
    pub itl: Histo,
    /// (last token - first token) / (output tokens - 1) (LLM).
    pub tpot: Histo,
    /// Responses read as streams, and their events.
    pub responses: u64,
    pub events: u64,
    /// Stream failures by name, in the order of `LlmFailure::ALL`.
    pub failures: [u64; candor_stream::openai::LlmFailure::ALL.len()],
    /// LLM: output tokens, and how many responses' counts came from usage or counted chunks.
    pub output_tokens: u64,
    /// LLM: the input tokens the server's usage reported, and how many responses said them.
    pub input_tokens: u64,
    pub input_counted: u64,
    /// LLM embeddings: the inputs embedded by successful answers.
    pub inputs: u64,
    /// LLM: of the input tokens, those the server's prefix cache served
    /// (`usage.prompt_tokens_details.cached_tokens`), and how many responses said them.
    pub cached_tokens: u64,
    pub cached_counted: u64,
    pub tokens_from_usage: u64,
    pub tokens_from_chunks: u64,
    /// LLM: responses counted by the run's tokenizer, and (with usage too) the two compared.
    pub tokens_from_tokenizer: u64,
    pub tokenizer_check: candor_core::results::TokenizerCheck,
    pub clamped: u64,
    /// `--goodput`: completed requests that met every per-request objective, judged on their
    /// values from the intended send (`good`) and, as a client timing from its own send would
    /// judge them, from the actual send (`good_service`).
    pub good: u64,
    pub good_service: u64,
    /// Multi-turn runs: how the conversations ended. A phase's are booked by the intended send
    /// of the turn that decided them; an interval's by when they were decided (as its
    /// `completed`), so the intervals together hold the phases' exactly.
    pub conversations: candor_core::results::Conversations,
}

impl StreamAcc {
    pub fn new() -> Self {
        StreamAcc {
            first_event: new_histogram(),
            event_gap: new_histogram(),
            ttft: new_histogram(),
            ttft_service: new_histogram(),
            itl: new_histogram(),
            tpot: new_histogram(),
            responses: 0,
            events: 0,
            failures: [0; candor_stream::openai::LlmFailure::ALL.len()],
            output_tokens: 0,
            input_tokens: 0,
            input_counted: 0,
            inputs: 0,
            cached_tokens: 0,
            cached_counted: 0,
            tokens_from_usage: 0,
            tokens_from_chunks: 0,
            tokens_from_tokenizer: 0,
            tokenizer_check: Default::default(),
            clamped: 0,
            good: 0,
            good_service: 0,
            conversations: Default::default(),
        }
    }

    /// The histograms by their names in the results.
    pub fn measures(&self) -> [(&'static str, &Histo); 6] {
        [
            ("first_event", &self.first_event),
            ("event_gap", &self.event_gap),
            ("ttft", &self.ttft),
            ("ttft_service", &self.ttft_service),
            ("itl", &self.itl),
            ("tpot", &self.tpot),
        ]
    }

    /// Empties the books for the next interval, keeping their storage.
    pub fn reset(&mut self) {
        for h in [
            &mut self.first_event,
            &mut self.event_gap,
            &mut self.ttft,
            &mut self.ttft_service,
            &mut self.itl,
            &mut self.tpot,
        ] {
            h.reset();
        }
        self.responses = 0;
        self.events = 0;
        self.failures = [0; candor_stream::openai::LlmFailure::ALL.len()];
        self.output_tokens = 0;
        self.input_tokens = 0;
        self.input_counted = 0;
        self.inputs = 0;
        self.cached_tokens = 0;
        self.cached_counted = 0;
        self.tokens_from_usage = 0;
        self.tokens_from_chunks = 0;
        self.tokens_from_tokenizer = 0;
        self.tokenizer_check = Default::default();
        self.clamped = 0;
        // An interval's good responses (goodput over time) start again with its reuse.
        self.good = 0;
        self.good_service = 0;
        self.conversations = Default::default();
    }

    /// Whether the responses were an LLM run's (their tokens were counted).
    pub fn is_llm(&self) -> bool {
        self.counted_responses() > 0 || !self.ttft.is_empty()
    }

    /// Responses whose output tokens were counted, whichever way.
    pub fn counted_responses(&self) -> u64 {
        self.tokens_from_usage + self.tokens_from_chunks + self.tokens_from_tokenizer
    }

    /// Books the tokens of one streamed response: its output (and how they were counted), its
    /// input, and the tokenizer's count against the server's.
    pub fn book_tokens(&mut self, o: &candor_stream::tap::StreamOutcome) {
        use candor_stream::openai::TokenSource;
        match o.tokens_from {
            Some(TokenSource::Usage) => self.tokens_from_usage += 1,
            Some(TokenSource::Chunks) => self.tokens_from_chunks += 1,
            Some(TokenSource::Tokenizer) => self.tokens_from_tokenizer += 1,
            None => {}
        }
        self.output_tokens += o.output_tokens;
        self.inputs += o.inputs;
        if let Some(n) = o.input_tokens {
            self.input_tokens += n;
            self.input_counted += 1;
        }
        if let Some(n) = o.cached_tokens {
            self.cached_tokens += n;
            self.cached_counted += 1;
        }
        if let (Some(TokenSource::Usage), Some(counted)) = (o.tokens_from, o.counted_tokens) {
            let c = &mut self.tokenizer_check;
            c.responses += 1;
            c.usage_tokens += o.output_tokens;
            c.tokenizer_tokens += counted;
            c.disagreeing += candor_stream::count::disagree(o.output_tokens, counted) as u64;
        }
    }

    /// What these books say of one interval of `length_s` seconds; `llm` says whether the run
    /// counts output tokens (an interval without any response still reports zero tokens),
    /// `goodput` whether it judges goodput (then its good responses, zero included), `embeddings`
    /// whether its answers are embeddings (then the inputs they embedded, zero included).
    pub fn interval(
        &self,
        length_s: f64,
        llm: bool,
        goodput: bool,
        embeddings: bool,
    ) -> candor_core::stream_measures::IntervalStream {
        use candor_core::stream_measures::StreamMeasure as M;
        let s = candor_core::stream_measures::IntervalStream::of(
            self.responses,
            self.events,
            llm.then_some(self.output_tokens),
            length_s,
            [
                (M::FirstEvent, &self.first_event),
                (M::EventGap, &self.event_gap),
                (M::Ttft, &self.ttft),
                (M::TtftService, &self.ttft_service),
                (M::Itl, &self.itl),
                (M::Tpot, &self.tpot),
            ],
        )
        .with_input_tokens(self.input_tokens, length_s)
        .with_cached_tokens(self.cached_tokens, self.cached_counted);
        let s = if embeddings {
            s.with_inputs(self.inputs, length_s)
        } else {
            s
        };
        if goodput {
            s.with_goodput(self.good, length_s)
        } else {
            s
        }
    }

    pub fn add(&mut self, o: &StreamAcc) {
        for (a, b) in [
            (&mut self.first_event, &o.first_event),
            (&mut self.event_gap, &o.event_gap),
            (&mut self.ttft, &o.ttft),
            (&mut self.ttft_service, &o.ttft_service),
            (&mut self.itl, &o.itl),
            (&mut self.tpot, &o.tpot),
        ] {
            a.add(b).expect("same layout");
        }
        self.responses += o.responses;
        self.events += o.events;
        for (a, b) in self.failures.iter_mut().zip(o.failures) {
            *a += b;
        }
        self.output_tokens += o.output_tokens;
        self.input_tokens += o.input_tokens;
        self.input_counted += o.input_counted;
        self.inputs += o.inputs;
        self.cached_tokens += o.cached_tokens;
        self.cached_counted += o.cached_counted;
        self.tokens_from_usage += o.tokens_from_usage;
        self.tokens_from_chunks += o.tokens_from_chunks;
        self.tokens_from_tokenizer += o.tokens_from_tokenizer;
        self.tokenizer_check.add(&o.tokenizer_check);
        self.clamped += o.clamped;
        self.good += o.good;
        self.good_service += o.good_service;
        self.conversations.add(&o.conversations);
    }
}

impl Default for StreamAcc {
    fn default() -> Self {
        Self::new()
    }
}

impl Default for PhaseAcc {
    fn default() -> Self {
        Self::new()
    }
}

impl PhaseAcc {
    /// Adds another thread's books of the same phase to these (the run's total).
    pub fn merge(&mut self, mut from: PhaseAcc) {
        match (&mut self.workload, from.workload.take()) {
            (Some(books), Some(more)) => books.merge(&more),
            (slot @ None, more) => *slot = more,
            (Some(_), None) => {}
        }
        self.rec.add(&from.rec);
        self.unfinished.add(&from.unfinished).expect("same layout");
        self.counts.add(&from.counts);
        self.tls_handshake
            .add(&from.tls_handshake)
            .expect("same layout");
        self.first_message
            .add(&from.first_message)
            .expect("same layout");
        self.pacing.add(&from.pacing);
        self.failures.merge(&from.failures);
        self.faults.add(&from.faults);
        self.codes.add(&from.codes);
        match (&mut self.stream, &from.stream) {
            (Some(a), Some(b)) => a.add(b),
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
        self.reply_codes.merge(&from.reply_codes);
        for (name, n) in &from.protocol_counts {
            *self.protocol_counts.entry(name).or_default() += n;
        }
        for w in &from.warnings {
            if !self.warnings.contains(w) {
                self.warnings.push(w.clone());
            }
        }
    }

    pub fn new() -> Self {
        PhaseAcc {
            rec: Recorder::new(),
            unfinished: new_histogram(),
            counts: RequestCounts::default(),
            tls_handshake: new_histogram(),
            first_message: new_histogram(),
            warnings: Vec::new(),
            workload: None,
            pacing: candor_core::PaceStats::default(),
            failures: Default::default(),
            faults: Default::default(),
            codes: Default::default(),
            stream: None,
            reply_codes: Default::default(),
            protocol_counts: Default::default(),
        }
    }
}

/// Per-stage and per-name accumulators of one load thread (merged across threads at the end).
pub struct WorkloadBooks {
    /// Absolute start of each measured stage, and one more entry: the end of the last.
    stage_bounds: Box<[u64]>,
    pub stages: Vec<PhaseAcc>,
    /// Request index → name index.
    name_of: Box<[u32]>,
    pub names: Vec<PhaseAcc>,
}

impl WorkloadBooks {
    /// Books for a profile whose measured stages last `stage_ns` each from `measured_start_ns`
    /// (empty: no stages), and for `names` names with `name_of` mapping requests to them (empty:
    /// no per-name books).
    pub fn new(
        measured_start_ns: u64,
        stage_ns: &[u64],
        name_of: &[usize],
        names: usize,
    ) -> WorkloadBooks {
        let mut bounds = Vec::with_capacity(stage_ns.len() + 1);
        let mut t = measured_start_ns;
        bounds.push(t);
        for d in stage_ns {
            t += d;
            bounds.push(t);
        }
        WorkloadBooks {
            stages: (0..stage_ns.len()).map(|_| PhaseAcc::new()).collect(),
            stage_bounds: if stage_ns.is_empty() {
                Box::default()
            } else {
                bounds.into()
            },
            name_of: name_of.iter().map(|&n| n as u32).collect(),
            names: (0..names).map(|_| PhaseAcc::new()).collect(),
        }
    }

    /// Moves the stages to a measured window starting at `measured_start_ns` (the start is set
    /// only once every connection pool is ready, after the books were made).
    pub fn begin_at(&mut self, measured_start_ns: u64) {
        if let Some(&first) = self.stage_bounds.first() {
            for b in self.stage_bounds.iter_mut() {
                *b = measured_start_ns + (*b - first);
            }
        }
    }

    /// The stage of a request intended at `intended` (`None` before the first measured stage,
    /// in the warm-up, or without stages). Requests intended after the end count in the last.
    #[inline]
    pub fn stage_of(&self, intended: u64) -> Option<usize> {
        if self.stages.is_empty() || intended < self.stage_bounds[0] {
            return None;
        }
        let i = self.stage_bounds.partition_point(|&b| b <= intended);
        Some((i - 1).min(self.stages.len() - 1))
    }

    #[inline]
    fn name(&mut self, request: u32) -> Option<&mut PhaseAcc> {
        let n = *self.name_of.get(request as usize)? as usize;
        self.names.get_mut(n)
    }

    /// The accumulators a request of `request` intended at `intended` is booked in (besides
    /// its phase): its stage and its name, each if any; `measured` says whether it belongs to
    /// the measured phase (names keep only the measured phase, like the top level).
    #[inline]
    pub fn each(
        &mut self,
        intended: u64,
        request: Option<u32>,
        measured: bool,
        mut f: impl FnMut(&mut PhaseAcc),
    ) {
        if let Some(s) = self.stage_of(intended) {
            f(&mut self.stages[s]);
        }
        if let (Some(r), true) = (request, measured) {
            if let Some(acc) = self.name(r) {
                f(acc);
            }
        }
    }

    /// Calls `f` with the books of request `request`'s name, if any.
    #[inline]
    pub fn each_name(&mut self, request: u32, f: impl FnOnce(&mut PhaseAcc)) {
        if let Some(acc) = self.name(request) {
            f(acc);
        }
    }

    /// Adds another thread's books.
    pub fn merge(&mut self, other: &WorkloadBooks) {
        for (into, from) in self
            .stages
            .iter_mut()
            .zip(&other.stages)
            .chain(self.names.iter_mut().zip(&other.names))
        {
            into.rec.add(&from.rec);
            into.unfinished.add(&from.unfinished).expect("same layout");
            into.counts.add(&from.counts);
            into.reply_codes.merge(&from.reply_codes);
        }
    }
}

/// Books a completed response (`failed`: `None` completed; otherwise the class it failed in,
/// `status`, `check` or `grpc`) into one accumulator, as the ledger books its phase.
#[inline]
pub fn book_response(
    acc: &mut PhaseAcc,
    (response, service, lag): (u64, u64, u64),
    status: u16,
    failed: Option<FailureClass>,
) {
    acc.rec.record(response, service, lag);
    let c = &mut acc.counts;
    if status != 0 {
        c.status.count(status);
    }
    match failed {
        None => c.completed += 1,
        Some(class) => {
            c.failed += 1;
            *c.errors.get_mut(class) += 1;
        }
    }
}

/// Books a request still outstanding at the end.
#[inline]
pub fn book_unfinished(acc: &mut PhaseAcc, age: u64, sent: bool) {
    let c = &mut acc.counts;
    c.in_flight_at_end += 1;
    if sent {
        c.sent_unanswered += 1;
    } else {
        c.queued_unsent += 1;
    }
    record_clamped(&mut acc.unfinished, age);
}

/// Counts one more intended request.
#[inline]
pub fn book_intended(counts: &mut RequestCounts, late: bool) {
    counts.intended += 1;
    if late {
        counts.generator_late += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_intervals_streams_start_from_no_good_responses() {
        let mut s = StreamAcc {
            good: 3,
            good_service: 2,
            ..Default::default()
        };
        assert_eq!(s.interval(1.0, true, true, false).good, Some(3));
        s.reset();
        assert_eq!((s.good, s.good_service), (0, 0));
        assert_eq!(s.interval(1.0, true, true, false).good_per_s, Some(0.0));
        assert_eq!(s.interval(1.0, true, false, false).good, None);
    }

    #[test]
    fn an_embeddings_interval_counts_its_inputs_zero_included() {
        let mut s = StreamAcc {
            inputs: 12,
            ..Default::default()
        };
        let i = s.interval(2.0, true, false, true);
        assert_eq!((i.inputs, i.inputs_per_s), (Some(12), Some(6.0)));
        s.reset();
        let i = s.interval(2.0, true, false, true);
        assert_eq!((i.inputs, i.inputs_per_s), (Some(0), Some(0.0)));
        assert_eq!(s.interval(2.0, true, false, false).inputs, None);
    }

    #[test]
    fn stages_move_with_the_start() {
        let mut b = WorkloadBooks::new(1_000, &[100, 50], &[], 0);
        b.begin_at(5_000);
        assert_eq!(b.stage_of(4_999), None);
        assert_eq!(b.stage_of(5_000), Some(0));
        assert_eq!(b.stage_of(5_100), Some(1));
        assert_eq!(b.stage_of(5_149), Some(1));
    }

    #[test]
    fn a_request_belongs_to_the_stage_of_its_intended_time() {
        let b = WorkloadBooks::new(1_000, &[100, 50, 10], &[], 0);
        assert_eq!(b.stage_of(999), None);
        assert_eq!(b.stage_of(1_000), Some(0));
        assert_eq!(b.stage_of(1_099), Some(0));
        assert_eq!(b.stage_of(1_100), Some(1));
        assert_eq!(b.stage_of(1_159), Some(2));
        assert_eq!(b.stage_of(5_000), Some(2));
        let none = WorkloadBooks::new(1_000, &[], &[0, 1, 0], 2);
        assert_eq!(none.stage_of(1_500), None);
    }

    #[test]
    fn names_and_stages_both_book_and_merge() {
        let mut a = WorkloadBooks::new(0, &[10, 10], &[0, 1, 0], 2);
        let mut seen = 0;
        a.each(15, Some(2), true, |acc| {
            book_intended(&mut acc.counts, false);
            book_response(acc, (5, 4, 1), 200, None);
            seen += 1;
        });
        assert_eq!(seen, 2, "its stage and its name");
        a.each(3, Some(1), false, |acc| {
            book_intended(&mut acc.counts, false);
            book_response(acc, (5, 4, 1), 200, Some(FailureClass::Check));
        });
        let mut b = WorkloadBooks::new(0, &[10, 10], &[0, 1, 0], 2);
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.stages[1].counts.completed, 2);
        assert_eq!(b.stages[0].counts.errors.check, 2);
        assert_eq!(b.names[0].counts.completed, 2);
        // A warm-up request is in no name's books.
        assert_eq!(b.names[1].counts.intended, 0);
        assert!(b.stages[0].counts.balanced() && b.names[0].counts.balanced());
    }
}
