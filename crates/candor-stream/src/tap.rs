//! One connection's view of its responses as streams (`--stream`, `--llm`): fed each body's
//! bytes with the instant of the read that brought them, it finds the events (server-sent
//! events, chunks or lines), times the first and the gaps between them, follows an
//! OpenAI-compatible stream's tokens (`openai::LlmProgress`), and hands the engine what each
//! response came to. Storage is fixed when the connection opens: nothing is allocated per event.

use super::count::Counter;
use super::line::LineSplitter;
use super::openai::{LlmFailure, LlmProgress, StreamEnd, TokenSource};
use super::sse::SseScanner;
use super::StreamKind;

/// Longest event (or line) kept whole; a longer one is still counted, its data cut.
pub const EVENT_CAPACITY: usize = 16 * 1024;

/// Gaps waiting for the engine: at most one per event of one read, and a read holds at most a
/// read buffer (64 KiB) of events of at least two bytes each.
const PENDING_GAPS: usize = 32 * 1024;

/// What the run asks of streamed responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamSettings {
    /// How bodies divide into events; `None`: only responses whose `Content-Type` says
    /// `text/event-stream` are read as server-sent events.
    pub kind: Option<StreamKind>,
    /// Events are an OpenAI-compatible completion stream (`--llm`): tokens, usage, `[DONE]`.
    pub llm: bool,
    /// LLM streams: the tokenizer that counts each content chunk's text (`--tokenizer`).
    pub counter: Option<Counter>,
    /// LLM: the answers are whole JSON bodies (`"stream": false`, `--no-stream`), not streams:
    /// their usage (and, with a tokenizer, their text) is read once each has ended.
    pub whole: bool,
    /// LLM whole answers are embeddings (`--llm openai-embeddings`), each of this many inputs:
    /// their `data` objects are counted as they arrive and must be as many.
    pub embeddings: Option<u32>,
}

/// One gap between consecutive events, and whether it is also an inter-token latency (both
/// events carried content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub ns: u64,
    pub token: bool,
}

/// What one streamed response came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOutcome {
    /// Events delivered (also when the stream failed).
    pub events: u64,
    /// When the first event arrived (none: no event came).
    pub first_event: Option<u64>,
    /// LLM streams: the first token's instant, tokens, time per output token. The output
    /// tokens are those of a stream that succeeded (a 2xx that ended with `[DONE]`, no failure),
    /// as vLLM's benchmark counts only successful requests' tokens; a failed one's are 0.
    pub first_token: Option<u64>,
    /// When the last event, and (LLM streams) the last token, arrived: the ends that
    /// `--records` writes per request.
    pub last_event: Option<u64>,
    pub last_token: Option<u64>,
    pub output_tokens: u64,
    pub tokens_from: Option<TokenSource>,
    /// The server's `usage.prompt_tokens` of a stream that succeeded (none: not said, or
    /// the stream failed).
    pub input_tokens: Option<u64>,
    /// Of them, the server's prefix cache served these (`usage.prompt_tokens_details.
    /// cached_tokens`; none: not said, or the stream failed).
    pub cached_tokens: Option<u64>,
    /// The tokenizer's count of a successful stream's output (`--tokenizer`), also when the
    /// server's usage gave the count (then the two are compared).
    pub counted_tokens: Option<u64>,
    pub tpot_ns: Option<u64>,
    /// Embeddings: the inputs a successful answer embedded (its `data` objects); 0 otherwise.
    pub inputs: u64,
    /// How it failed, if it did.
    pub failure: Option<LlmFailure>,
}

/// A connection's stream reader (see the module documentation).
#[derive(Debug, Clone)]
pub struct StreamTap {
    settings: StreamSettings,
    /// The kind of the current response (decided by its head), `None`: not a stream.
    active: Option<StreamKind>,
    /// The current response said `Content-Type: text/event-stream`.
    said_sse: bool,
    sse: SseScanner,
    lines: LineSplitter,
    /// The instant of the bytes being fed.
    now: u64,
    events: u64,
    first_event: Option<u64>,
    last_event: u64,
    llm: LlmProgress,
    /// A content chunk's text, decoded for the tokenizer (`--tokenizer` only; its storage is
    /// kept: at most an event's).
    text: String,
    /// A whole answer's body (`whole` settings only; no storage otherwise).
    answer: super::answer::AnswerBuffer,
    /// An embeddings answer's objects, counted as its body arrives.
    embedded: super::embeddings::EmbeddingScan,
    /// Whether the tokenizer counts the current answer (see [`CROSS_CHECK_EVERY`]).
    counting: bool,
    /// Whether this reader's previous answer carried the server's usage.
    usage_seen: bool,
    /// Answers begun on this reader.
    answers: u64,
    gaps: Vec<Gap>,
    outcome: Option<StreamOutcome>,
}

impl StreamTap {
    pub fn new(settings: StreamSettings) -> StreamTap {
        StreamTap::with_gaps(settings, PENDING_GAPS)
    }

    /// A reader whose gaps are taken after every frame of at most `frame` bytes (HTTP/2: a
    /// DATA frame), so that fewer need room: an event takes at least two bytes.
    pub fn for_frames(settings: StreamSettings, frame: usize) -> StreamTap {
        StreamTap::with_gaps(settings, (frame / 2).min(PENDING_GAPS))
    }

    fn with_gaps(settings: StreamSettings, gaps: usize) -> StreamTap {
        StreamTap {
            settings,
            active: None,
            said_sse: false,
            sse: SseScanner::with_capacity(EVENT_CAPACITY),
            lines: LineSplitter::with_capacity(EVENT_CAPACITY),
            now: 0,
            events: 0,
            first_event: None,
            last_event: 0,
            llm: LlmProgress::default(),
            text: String::with_capacity(if settings.counter.is_some() {
                EVENT_CAPACITY
            } else {
                0
            }),
            answer: super::answer::AnswerBuffer::with_capacity(if settings.whole {
                super::answer::ANSWER_CAPACITY
            } else {
                0
            }),
            embedded: Default::default(),
            gaps: Vec::with_capacity(gaps),
            outcome: None,
            counting: false,
            usage_seen: false,
            answers: 0,
        }
    }

    /// The bytes fed next arrived at `now`.
    #[inline]
    pub fn at(&mut self, now: u64) {
        self.now = now;
    }

    /// A response's head: `content_type` its `Content-Type` value, if it has one. A configured
    /// kind applies to every response; without one, only an event stream is read.
    pub fn head(&mut self, content_type: Option<&[u8]>) {
        self.head_said(content_type.and_then(StreamKind::from_content_type));
    }

    /// [`Self::head`] given the kind the response's `Content-Type` said, if it said one
    /// (HTTP/2 reads it while its header block is decoded).
    pub fn head_said(&mut self, said: Option<StreamKind>) {
        self.clear();
        self.said_sse = said == Some(StreamKind::Sse);
        self.counting = self.settings.counter.is_some()
            && (!self.usage_seen || self.answers.is_multiple_of(CROSS_CHECK_EVERY));
        self.answers += 1;
        if self.settings.llm && self.settings.whole {
            // A whole answer is no stream: its body is kept and read at its end.
            self.active = None;
            return;
        }
        self.active = match (self.settings.kind, said) {
            // A server that says it sends events is read as events whatever was asked.
            (_, Some(StreamKind::Sse)) => Some(StreamKind::Sse),
            (Some(kind), _) => Some(kind),
            (None, _) if self.settings.llm => Some(StreamKind::Sse),
            (None, said) => said.filter(|k| *k == StreamKind::Sse),
        };
        if self.settings.llm && self.counting {
            // Counted from zero: an answer without content has 0 tokens by the tokenizer too.
            self.llm.counted(0);
        }
    }

    /// Whether the current response is read as a stream.
    pub fn active(&self) -> bool {
        self.active.is_some()
    }

    fn clear(&mut self) {
        self.sse.reset();
        self.lines.reset();
        self.events = 0;
        self.first_event = None;
        self.last_event = 0;
        self.llm = LlmProgress::default();
        self.answer.clear();
        self.embedded.clear();
    }

    /// The next bytes of the current response's body.
    pub fn body(&mut self, bytes: &[u8]) {
        if self.settings.whole && self.settings.llm {
            if self.settings.embeddings.is_some() {
                self.embedded.feed(bytes);
            }
            self.answer.feed(bytes);
            return;
        }
        let Some(kind) = self.active else {
            return;
        };
        let StreamTap {
            sse,
            lines,
            now,
            events,
            first_event,
            last_event,
            llm,
            gaps,
            settings,
            text,
            counting,
            ..
        } = self;
        let now = *now;
        let mut event = |data: &[u8], cut: bool| {
            match first_event {
                None => *first_event = Some(now),
                Some(_) => push(
                    gaps,
                    Gap {
                        ns: now.saturating_sub(*last_event),
                        token: false,
                    },
                ),
            }
            *last_event = now;
            *events += 1;
            if settings.llm && llm.event(now, data, cut, |ns| push(gaps, Gap { ns, token: true })) {
                if let Some(counter) = settings.counter.filter(|_| *counting) {
                    llm.counted(count_content(counter, data, text));
                }
            }
        };
        match kind {
            StreamKind::Sse => sse.feed(bytes, event),
            StreamKind::Lines => lines.feed(bytes, |line, cut| {
                if !line.trim_ascii().is_empty() {
                    event(line, cut)
                }
            }),
            // Chunks are counted at their ends (`chunk_end`).
            StreamKind::Chunks => {}
        }
    }

    /// The end of one HTTP/1.1 chunk (or HTTP/2 DATA frame) of the current body: one event
    /// with `--stream chunks`.
    pub fn chunk_end(&mut self) {
        if self.active != Some(StreamKind::Chunks) {
            return;
        }
        let now = self.now;
        match self.first_event {
            None => self.first_event = Some(now),
            Some(_) => push(
                &mut self.gaps,
                Gap {
                    ns: now.saturating_sub(self.last_event),
                    token: false,
                },
            ),
        }
        self.last_event = now;
        self.events += 1;
    }

    /// The response ended (`end` says how): its outcome is kept for [`Self::take_outcome`].
    /// A status the LLM stream cannot have succeeded with (429) names its failure.
    pub fn end(&mut self, end: StreamEnd, status: u16) {
        if self.active.is_none() && !self.settings.llm {
            return;
        }
        if let (true, Some(n)) = (self.settings.llm, self.settings.embeddings) {
            self.outcome = Some(self.embeddings_outcome(n, end, status));
            self.clear();
            return;
        }
        if self.settings.llm && self.settings.whole {
            self.outcome = Some(self.whole_outcome(end, status));
            self.clear();
            return;
        }
        let streamed = self.active.is_some();
        let llm = self.settings.llm.then(|| self.llm.finish(end));
        self.usage_seen = llm.is_some_and(|o| o.tokens_from == TokenSource::Usage);
        let failure = match llm {
            Some(_) if status != 0 && LlmFailure::for_status(status).is_some() => {
                LlmFailure::for_status(status)
            }
            // Any other refusal is booked by its status alone.
            Some(_) if !(200..300).contains(&status) => None,
            // A body that never said it was an event stream and never ended as one is an
            // answer, not a stream: say so rather than that it stopped mid-way.
            Some(o)
                if !self.said_sse
                    && matches!(o.failure, Some(LlmFailure::NoDone) | Some(LlmFailure::Cut))
                    && self.events == 0 =>
            {
                Some(LlmFailure::NotEventStream)
            }
            Some(o) => o.failure,
            None => match end {
                StreamEnd::Cut if self.events > 0 => Some(LlmFailure::Cut),
                StreamEnd::EventTimeout => Some(LlmFailure::EventTimeout),
                StreamEnd::Timeout => Some(LlmFailure::Timeout),
                _ => None,
            },
        };
        let succeeded =
            failure.is_none() && end == StreamEnd::Complete && (200..300).contains(&status);
        self.outcome = Some(StreamOutcome {
            events: if streamed { self.events } else { 0 },
            first_event: self.first_event,
            first_token: llm.and_then(|o| o.first_token),
            last_event: self.first_event.map(|_| self.last_event),
            last_token: llm.and_then(|o| o.last_token),
            output_tokens: llm.filter(|_| succeeded).map_or(0, |o| o.output_tokens),
            tokens_from: llm.map(|o| o.tokens_from),
            input_tokens: llm.filter(|_| succeeded).and_then(|o| o.input_tokens),
            cached_tokens: llm.filter(|_| succeeded).and_then(|o| o.cached_tokens),
            counted_tokens: llm.filter(|_| succeeded).and_then(|o| o.counted_tokens),
            tpot_ns: llm.and_then(|o| o.tpot_ns),
            inputs: 0,
            failure,
        });
        self.clear();
        self.active = None;
    }

    /// What a whole answer came to: its tokens from its usage (else, with a tokenizer, its
    /// text counted), its failure as a stream's would be named; no events, no first token.
    fn whole_outcome(&mut self, end: StreamEnd, status: u16) -> StreamOutcome {
        use super::answer::{answer_text, read_answer};
        let body = self.answer.bytes();
        let read = read_answer(body, self.answer.lost_front());
        let (failure, succeeded) = whole_answer_failure(end, status, || read.failure);
        // A whole answer's usage is known before its text is counted: one without it is
        // always counted; one with it, as often as a stream's.
        let counting = read.completion_tokens.is_none()
            || self
                .answers
                .saturating_sub(1)
                .is_multiple_of(CROSS_CHECK_EVERY);
        let counted = match (self.settings.counter, self.answer.lost_front()) {
            (Some(counter), false) if counting => Some(answer_text(body).map_or(0, |v| {
                super::count::json_string_into(v, &mut self.text);
                counter.count(&self.text)
            })),
            _ => None,
        };
        let (output, from) = match (read.completion_tokens, counted) {
            (Some(n), _) => (n, Some(TokenSource::Usage)),
            (None, Some(n)) => (n, Some(TokenSource::Tokenizer)),
            (None, None) => (0, None),
        };
        StreamOutcome {
            events: 0,
            first_event: None,
            first_token: None,
            last_event: None,
            last_token: None,
            output_tokens: if succeeded { output } else { 0 },
            tokens_from: from,
            input_tokens: read.prompt_tokens.filter(|_| succeeded),
            cached_tokens: read.cached_tokens.filter(|_| succeeded),
            counted_tokens: counted.filter(|_| succeeded),
            tpot_ns: None,
            inputs: 0,
            failure,
        }
    }

    /// What an embeddings answer came to: its `data` objects against the inputs sent, its
    /// input tokens from its usage; a failure named as a whole answer's would be.
    fn embeddings_outcome(&mut self, expected: u32, end: StreamEnd, status: u16) -> StreamOutcome {
        use super::answer::read_answer;
        let read = self.embedded.read();
        let tail = read_answer(self.answer.bytes(), self.answer.lost_front());
        let (failure, succeeded) = whole_answer_failure(end, status, || {
            if read.error {
                Some(LlmFailure::ErrorEvent)
            } else if read.not_json {
                Some(LlmFailure::NotJson)
            } else {
                match read.data {
                    None => Some(LlmFailure::NotOpenai),
                    Some(n) if n != u64::from(expected) => Some(LlmFailure::EmbeddingCount),
                    Some(_) => None,
                }
            }
        });
        StreamOutcome {
            events: 0,
            first_event: None,
            first_token: None,
            last_event: None,
            last_token: None,
            output_tokens: 0,
            tokens_from: None,
            input_tokens: tail.prompt_tokens.filter(|_| succeeded),
            cached_tokens: tail.cached_tokens.filter(|_| succeeded),
            counted_tokens: None,
            tpot_ns: None,
            inputs: if succeeded { u64::from(expected) } else { 0 },
            failure,
        }
    }

    /// The response that just ended failed a check of its own (`--check-body`,
    /// `--check-header`, a script's `response()`), decided after its stream was: it is no
    /// success, so its tokens are not output (its other measures stand).
    pub fn forfeit_tokens(&mut self) {
        if let Some(o) = &mut self.outcome {
            o.output_tokens = 0;
            o.input_tokens = None;
            o.cached_tokens = None;
            o.counted_tokens = None;
        }
    }

    /// The instant of the current response's latest event, once one came (the wait for the
    /// next runs from it: `--event-timeout`).
    #[inline]
    pub fn latest_event(&self) -> Option<u64> {
        (self.active.is_some() && self.events > 0).then_some(self.last_event)
    }

    /// The failure of the response that just ended, if its stream failed (for its verdict).
    pub fn failure(&self) -> Option<LlmFailure> {
        self.outcome.and_then(|o| o.failure)
    }

    /// Gaps found since the last call, oldest first.
    pub fn drain_gaps(&mut self, mut f: impl FnMut(Gap)) {
        for g in self.gaps.drain(..) {
            f(g);
        }
    }

    /// What the response that ended last came to (once).
    pub fn take_outcome(&mut self) -> Option<StreamOutcome> {
        self.outcome.take()
    }

    /// Forgets the current response (the connection is gone).
    pub fn reset(&mut self) {
        self.clear();
        self.active = None;
        self.gaps.clear();
        self.outcome = None;
    }
}

/// With the server's usage, the tokenizer only checks it: once a reader has seen usage it
/// counts one answer in this many (the first of each reader always), as the check is of the
/// server's tokenizer against ours, the same for every answer, and counting every content chunk
/// would cost more CPU than the rest of an LLM request (bench/llm_tokenizer_cpu.py). An answer
/// without usage is always counted: the next one after it is too.
pub const CROSS_CHECK_EVERY: u64 = 16;

/// The tokens of a content chunk's text (`content` of a chat chunk, `text` of a completion
/// chunk), decoded into `text` and counted by `counter`.
fn count_content(counter: Counter, data: &[u8], text: &mut String) -> u64 {
    use super::json_key::value_of;
    let value = value_of(data, b"\"content\"")
        .filter(|v| v.first() == Some(&b'"'))
        .or_else(|| value_of(data, b"\"text\""));
    match value {
        Some(v) => {
            super::count::json_string_into(v, text);
            counter.count(text)
        }
        None => 0,
    }
}

/// Keeps a gap; a full buffer (more events in one read than it was sized for) drops none: it
/// grows, which only a read of tens of thousands of events could make happen.
#[inline]
fn push(gaps: &mut Vec<Gap>, g: Gap) {
    gaps.push(g);
}

/// How an answer read whole (`--no-stream`, embeddings) failed, and whether it succeeded: a
/// failing status by its own name, a cut or a timeout as a stream's would be, and a complete
/// 2xx answer as `judged` says of its body.
fn whole_answer_failure(
    end: StreamEnd,
    status: u16,
    judged: impl FnOnce() -> Option<LlmFailure>,
) -> (Option<LlmFailure>, bool) {
    let ok_status = (200..300).contains(&status);
    let failure = if let Some(f) = LlmFailure::for_status(status) {
        Some(f)
    } else if !ok_status {
        None
    } else {
        match end {
            StreamEnd::Cut => Some(LlmFailure::Cut),
            StreamEnd::Timeout | StreamEnd::EventTimeout => Some(LlmFailure::Timeout),
            StreamEnd::Unfinished => None,
            StreamEnd::Complete => judged(),
        }
    };
    let succeeded = failure.is_none() && end == StreamEnd::Complete && ok_status;
    (failure, succeeded)
}

#[cfg(test)]
#[path = "tap_tests.rs"]
mod tests;
