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
    }

    /// The next bytes of the current response's body.
    pub fn body(&mut self, bytes: &[u8]) {
        if self.settings.whole && self.settings.llm {
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
        let failure = if let Some(f) = LlmFailure::for_status(status) {
            Some(f)
        } else if !(200..300).contains(&status) {
            None
        } else {
            match end {
                StreamEnd::Cut => Some(LlmFailure::Cut),
                StreamEnd::Timeout | StreamEnd::EventTimeout => Some(LlmFailure::Timeout),
                StreamEnd::Unfinished => None,
                StreamEnd::Complete => read.failure,
            }
        };
        let succeeded =
            failure.is_none() && end == StreamEnd::Complete && (200..300).contains(&status);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tap(kind: Option<StreamKind>, llm: bool) -> StreamTap {
        StreamTap::new(StreamSettings {
            kind,
            llm,
            counter: None,
            whole: false,
        })
    }

    fn gaps(t: &mut StreamTap) -> Vec<(u64, bool)> {
        let mut v = Vec::new();
        t.drain_gaps(|g| v.push((g.ns, g.token)));
        v
    }

    #[test]
    fn sse_events_are_timed_by_the_read_that_completed_them() {
        let mut t = tap(None, false);
        t.head(Some(b"text/event-stream"));
        t.at(100);
        t.body(b"data: a\n\nda");
        t.at(150);
        t.body(b"ta: b\n\n: comment\n\n");
        t.at(190);
        t.body(b"data: c\n\n");
        assert_eq!(gaps(&mut t), vec![(50, false), (40, false)]);
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.events, o.first_event, o.failure), (3, Some(100), None));
        assert_eq!(t.take_outcome(), None);
    }

    #[test]
    fn without_a_kind_only_an_event_stream_is_read() {
        let mut t = tap(None, false);
        t.head(Some(b"application/json"));
        assert!(!t.active());
        t.body(b"data: a\n\n");
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome(), None);
    }

    #[test]
    fn lines_and_chunks_are_events_of_their_own() {
        let mut t = tap(Some(StreamKind::Lines), false);
        t.head(Some(b"application/json"));
        t.at(10);
        t.body(b"{\"a\":1}\n\n{\"b\"");
        t.at(25);
        t.body(b":2}\n");
        t.end(StreamEnd::Complete, 200);
        assert_eq!(gaps(&mut t), vec![(15, false)]);
        assert_eq!(t.take_outcome().unwrap().events, 2);
        let mut t = tap(Some(StreamKind::Chunks), false);
        t.head(None);
        for (at, piece) in [(5u64, &b"ab"[..]), (7, b"cd")] {
            t.at(at);
            t.body(piece);
            t.chunk_end();
        }
        t.end(StreamEnd::Complete, 200);
        assert_eq!(gaps(&mut t), vec![(2, false)]);
        assert_eq!(t.take_outcome().unwrap().first_event, Some(5));
    }

    #[test]
    fn a_stream_cut_after_events_fails_with_them_counted() {
        let mut t = tap(Some(StreamKind::Sse), false);
        t.head(None);
        t.at(3);
        t.body(b"data: x\n\n");
        t.end(StreamEnd::Cut, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.events, o.failure), (1, Some(LlmFailure::Cut)));
    }

    #[test]
    fn llm_streams_count_tokens_and_name_their_failures() {
        let mut t = tap(None, true);
        t.head(Some(b"text/event-stream"));
        t.at(100);
        t.body(b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
        t.at(200);
        t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
        t.at(230);
        t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n");
        t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
        assert_eq!(
            gaps(&mut t),
            vec![
                (100, false),
                (30, false),
                (30, true),
                (0, false),
                (0, false)
            ]
        );
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.first_token, o.output_tokens), (Some(200), 2));
        assert_eq!(
            (o.tokens_from, o.tpot_ns),
            (Some(TokenSource::Usage), Some(30))
        );
        assert_eq!((o.events, o.failure), (5, None));
        // A 429 is rate_limited; a stream without [DONE] is no_done.
        t.head(Some(b"application/json"));
        t.end(StreamEnd::Complete, 429);
        assert_eq!(
            t.take_outcome().unwrap().failure,
            Some(LlmFailure::RateLimited)
        );
        t.head(Some(b"text/event-stream"));
        t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome().unwrap().failure, Some(LlmFailure::NoDone));
    }

    const TOKEN: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    const USAGE_7: &[u8] = b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\n";

    #[test]
    fn the_cached_tokens_of_usage_are_read_for_a_stream_that_succeeded() {
        let mut t = tap(None, true);
        let mut run = |body: &[u8], end: StreamEnd| {
            t.head(Some(b"text/event-stream"));
            t.body(body);
            t.end(end, 200);
            let o = t.take_outcome().unwrap();
            (o.input_tokens, o.cached_tokens)
        };
        // As vLLM and OpenAI send them: inside prompt_tokens_details.
        let usage = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"total_tokens\":41,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n";
        let whole = [TOKEN, &usage[..], b"data: [DONE]\n\n"].concat();
        assert_eq!(run(&whole, StreamEnd::Complete), (Some(40), Some(32)));
        // vLLM without --enable-prompt-tokens-details sends null details: none said.
        let null = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"prompt_tokens_details\":null}}\n\n";
        let whole = [TOKEN, &null[..], b"data: [DONE]\n\n"].concat();
        assert_eq!(run(&whole, StreamEnd::Complete), (Some(40), None));
        // A failed stream's are not the run's.
        assert_eq!(
            run(&[TOKEN, &usage[..]].concat(), StreamEnd::Cut),
            (None, None)
        );
    }

    #[test]
    fn the_input_tokens_of_usage_are_read_for_a_stream_that_succeeded() {
        let mut t = tap(None, true);
        let usage = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1,\"total_tokens\":13}}\n\n";
        let mut run = |body: &[u8], end: StreamEnd| {
            t.head(Some(b"text/event-stream"));
            t.body(body);
            t.end(end, 200);
            let o = t.take_outcome().unwrap();
            (o.input_tokens, o.output_tokens)
        };
        let whole = [TOKEN, &usage[..], b"data: [DONE]\n\n"].concat();
        assert_eq!(run(&whole, StreamEnd::Complete), (Some(12), 1));
        // Cut before [DONE]: failed, neither count is the run's.
        assert_eq!(
            run(&[TOKEN, &usage[..]].concat(), StreamEnd::Cut),
            (None, 0)
        );
        // No usage: no input count (output from the chunks).
        assert_eq!(
            run(&[TOKEN, b"data: [DONE]\n\n"].concat(), StreamEnd::Complete),
            (None, 1)
        );
        // A nonsense prompt_tokens is ignored, not failed.
        let odd =
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-4,\"completion_tokens\":1}}\n\n";
        assert_eq!(
            run(
                &[TOKEN, &odd[..], b"data: [DONE]\n\n"].concat(),
                StreamEnd::Complete
            ),
            (None, 1)
        );
    }

    #[test]
    fn only_a_stream_that_succeeded_adds_output_tokens() {
        let mut t = tap(None, true);
        let mut run = |head: &[u8], body: &[u8], end: StreamEnd, status: u16| {
            t.head(Some(head));
            t.at(10);
            t.body(body);
            t.end(end, status);
            let o = t.take_outcome().unwrap();
            (o.output_tokens, o.failure, o.first_token)
        };
        let sse = &b"text/event-stream"[..];
        let whole = [TOKEN, USAGE_7, b"data: [DONE]\n\n"].concat();
        assert_eq!(
            run(sse, &whole, StreamEnd::Complete, 200),
            (7, None, Some(10))
        );
        // A 429 (or any refusal) with an event-stream body: failed, its tokens not output.
        assert_eq!(
            run(sse, &whole, StreamEnd::Complete, 429),
            (0, Some(LlmFailure::RateLimited), Some(10))
        );
        assert_eq!(
            run(sse, &whole, StreamEnd::Complete, 500),
            (0, None, Some(10))
        );
        // Failed streams keep their first token but add no tokens.
        let no_done = [TOKEN, USAGE_7].concat();
        assert_eq!(
            run(sse, &no_done, StreamEnd::Complete, 200),
            (0, Some(LlmFailure::NoDone), Some(10))
        );
        assert_eq!(
            run(sse, &no_done, StreamEnd::Timeout, 200),
            (0, Some(LlmFailure::Timeout), Some(10))
        );
        // Left unfinished by the run's end: no failure, and not a success either.
        assert_eq!(
            run(sse, &no_done, StreamEnd::Unfinished, 200),
            (0, None, Some(10))
        );
        let garbage = [TOKEN, b"data: not json\n\n", b"data: [DONE]\n\n"].concat();
        assert_eq!(
            run(sse, &garbage, StreamEnd::Complete, 200),
            (0, Some(LlmFailure::NotJson), Some(10))
        );
        // Tokens and usage after [DONE] are no part of the answer.
        let after = [TOKEN, b"data: [DONE]\n\n", USAGE_7, TOKEN].concat();
        assert_eq!(
            run(sse, &after, StreamEnd::Complete, 200),
            (1, None, Some(10))
        );
    }

    #[test]
    fn an_answer_that_is_not_an_event_stream_says_so() {
        let mut t = tap(None, true);
        t.head(Some(b"application/json"));
        t.body(b"{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}");
        t.end(StreamEnd::Complete, 200);
        assert_eq!(
            t.take_outcome().unwrap().failure,
            Some(LlmFailure::NotEventStream)
        );
        // Events without the header, and a proper end, are a stream all the same.
        t.head(None);
        t.body(&[TOKEN, b"data: [DONE]\n\n"].concat());
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome().unwrap().failure, None);
        // An event stream that stops early still stopped mid-way.
        t.head(Some(b"text/event-stream"));
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome().unwrap().failure, Some(LlmFailure::NoDone));
    }

    #[test]
    fn a_byte_order_mark_opening_an_llm_stream_loses_no_event() {
        let mut t = tap(None, true);
        t.head(Some(b"text/event-stream"));
        t.at(5);
        t.body(&[&b"\xEF\xBB\xBF"[..], TOKEN, b"data: [DONE]\n\n"].concat());
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.events, o.first_token, o.output_tokens), (2, Some(5), 1));
    }

    struct Chars;
    impl crate::count::TokenCounter for Chars {
        fn count_tokens(&self, text: &str) -> u64 {
            text.chars().count() as u64
        }
    }
    static CHARS: Chars = Chars;

    #[test]
    fn a_tokenizer_counts_each_content_chunks_text_and_usage_still_wins() {
        let mut t = StreamTap::new(StreamSettings {
            kind: None,
            llm: true,
            counter: Some(Counter(&CHARS)),
            whole: false,
        });
        let chunk = |text: &str| {
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
        };
        let answer = [chunk("H\\u00e9llo"), chunk(" w\\\"r"), chunk("ld")].concat();
        t.head(Some(b"text/event-stream"));
        t.body(answer.as_bytes());
        t.body(b"data: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        // "Héllo" 5 + " w\"r" 4 + "ld" 2, each chunk's text decoded from its JSON string.
        assert_eq!((o.output_tokens, o.counted_tokens), (11, Some(11)));
        assert_eq!(o.tokens_from, Some(TokenSource::Tokenizer));
        t.head(Some(b"text/event-stream"));
        t.body(answer.as_bytes());
        t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.output_tokens, o.counted_tokens), (3, Some(11)));
        assert_eq!(o.tokens_from, Some(TokenSource::Usage));
        // After an answer with usage the next is not counted (a check, sampled): without usage
        // of its own it falls back to its chunks; the one after it is counted again.
        t.head(Some(b"text/event-stream"));
        t.body(b"data: {\"choices\":[{\"text\":\"abc\"}]}\n\ndata: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.output_tokens, o.counted_tokens), (1, None));
        assert_eq!(o.tokens_from, Some(TokenSource::Chunks));
        // A completion chunk's `text`, and an answer without content: 0 by the tokenizer.
        t.head(Some(b"text/event-stream"));
        t.body(b"data: {\"choices\":[{\"text\":\"abc\"}]}\n\ndata: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome().unwrap().counted_tokens, Some(3));
        t.head(Some(b"text/event-stream"));
        t.body(b"data: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!(
            (o.output_tokens, o.tokens_from),
            (0, Some(TokenSource::Tokenizer))
        );
    }

    #[test]
    fn with_usage_the_tokenizer_checks_one_answer_in_cross_check_every() {
        let mut t = StreamTap::new(StreamSettings {
            kind: None,
            llm: true,
            counter: Some(Counter(&CHARS)),
            whole: false,
        });
        let mut counted = Vec::new();
        for i in 0..(2 * CROSS_CHECK_EVERY + 1) {
            t.head(Some(b"text/event-stream"));
            t.body(b"data: {\"choices\":[{\"text\":\"abcd\"}]}\n\n");
            t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n");
            t.body(b"data: [DONE]\n\n");
            t.end(StreamEnd::Complete, 200);
            let o = t.take_outcome().unwrap();
            assert_eq!(o.output_tokens, 1, "usage wins, counted or not");
            if o.counted_tokens.is_some() {
                assert_eq!(o.counted_tokens, Some(4));
                counted.push(i);
            }
        }
        assert_eq!(counted, [0, CROSS_CHECK_EVERY, 2 * CROSS_CHECK_EVERY]);
    }

    #[test]
    fn a_whole_answer_is_read_at_its_end_by_its_usage_or_its_text() {
        let settings = |counter| StreamSettings {
            kind: None,
            llm: true,
            counter,
            whole: true,
        };
        let answer = br#"{"choices":[{"message":{"role":"assistant","content":"h\u00e9llo"}}],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#;
        let mut t = StreamTap::new(settings(None));
        t.head(Some(b"application/json"));
        assert!(!t.active());
        t.body(&answer[..20]);
        t.body(&answer[20..]);
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!(
            (o.output_tokens, o.input_tokens, o.failure),
            (2, Some(4), None)
        );
        assert_eq!(
            (o.events, o.first_token, o.tokens_from),
            (0, None, Some(TokenSource::Usage))
        );
        // With a tokenizer the text is counted too ("héllo": 5 by the char counter).
        let mut t = StreamTap::new(settings(Some(Counter(&CHARS))));
        t.head(Some(b"application/json"));
        t.body(answer);
        t.end(StreamEnd::Complete, 200);
        assert_eq!(t.take_outcome().unwrap().counted_tokens, Some(5));
        t.head(Some(b"application/json"));
        t.body(br#"{"choices":[{"text":"abc"}]}"#);
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!(
            (o.output_tokens, o.tokens_from),
            (3, Some(TokenSource::Tokenizer))
        );
        // Failures: not JSON, an error object, cut, 429; none add tokens.
        for (body, end, status, failure) in [
            (
                &b"oops"[..],
                StreamEnd::Complete,
                200,
                Some(LlmFailure::NotJson),
            ),
            (
                br#"{"error":{"message":"x"}}"#,
                StreamEnd::Complete,
                200,
                Some(LlmFailure::ErrorEvent),
            ),
            (&answer[..30], StreamEnd::Cut, 200, Some(LlmFailure::Cut)),
            (
                &b""[..],
                StreamEnd::Complete,
                429,
                Some(LlmFailure::RateLimited),
            ),
            (&b"bad"[..], StreamEnd::Complete, 500, None),
        ] {
            t.head(Some(b"application/json"));
            t.body(body);
            t.end(end, status);
            let o = t.take_outcome().unwrap();
            assert_eq!((o.failure, o.output_tokens), (failure, 0), "{body:?}");
        }
    }
}
