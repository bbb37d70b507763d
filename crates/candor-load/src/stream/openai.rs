//! What the events of an OpenAI-compatible streaming completion say (`classify`), and what they
//! add up to for one request (`LlmProgress`): the first token's instant, the gaps between
//! tokens, the output tokens (from `usage` when the server sends it, else the chunks that carried
//! content) and how the stream ended. Definitions as vLLM's benchmark gives them: TTFT is the
//! time to the first chunk with content, ITL each gap between consecutive content chunks, TPOT
//! `(last - first) / (tokens - 1)`. All instants are the caller's (ns on the monotonic clock):
//! TTFT from the intended send and from the actual send are both the caller's subtraction.

use super::json_key::{leading_number, value_of};

/// What one event's data says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmChunk {
    /// It carries generated text (a non-empty `content` or `text`).
    pub content: bool,
    /// `usage.completion_tokens`, when the chunk carries usage.
    pub completion_tokens: Option<u64>,
    /// An `error` object: the server failed the request mid-stream.
    pub error: bool,
    /// `[DONE]`: the stream's proper end.
    pub done: bool,
}

/// Reads one event's data without parsing the JSON into values ([`super::json_key`]).
pub fn classify(data: &[u8]) -> LlmChunk {
    if data.trim_ascii() == b"[DONE]" {
        return LlmChunk {
            done: true,
            ..LlmChunk::default()
        };
    }
    let non_empty_string =
        |v: &[u8]| v.first() == Some(&b'"') && v.get(1).is_some_and(|&b| b != b'"');
    LlmChunk {
        content: value_of(data, b"\"content\"").is_some_and(non_empty_string)
            || value_of(data, b"\"text\"").is_some_and(non_empty_string),
        completion_tokens: value_of(data, b"\"completion_tokens\"").and_then(leading_number),
        error: value_of(data, b"\"error\"").is_some_and(|v| v.first() != Some(&b'n')),
        done: false,
    }
}

/// Where the output token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// The server's `usage.completion_tokens`.
    Usage,
    /// The chunks that carried content, counted (a server without usage).
    Chunks,
}

/// How a stream failed; each is its own failure name in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmFailure {
    /// `data: {"error": ...}` mid-stream.
    ErrorEvent,
    /// The response ended without `data: [DONE]`.
    NoDone,
    /// The connection closed (or the stream was reset) before the response ended.
    Cut,
    /// No event for longer than `--event-timeout`.
    EventTimeout,
    /// `429 Too Many Requests`.
    RateLimited,
}

impl LlmFailure {
    pub const ALL: [LlmFailure; 5] = [
        LlmFailure::ErrorEvent,
        LlmFailure::NoDone,
        LlmFailure::Cut,
        LlmFailure::EventTimeout,
        LlmFailure::RateLimited,
    ];

    /// Its place in [`Self::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name in the text report and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            LlmFailure::ErrorEvent => "stream_error",
            LlmFailure::NoDone => "no_done",
            LlmFailure::Cut => "stream_cut",
            LlmFailure::EventTimeout => "event_timeout",
            LlmFailure::RateLimited => "rate_limited",
        }
    }

    /// The failure a response's status alone means, before any event.
    pub fn for_status(status: u16) -> Option<LlmFailure> {
        (status == 429).then_some(LlmFailure::RateLimited)
    }
}

/// How the response's bytes stopped coming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ended as its framing says (last chunk, END_STREAM).
    Complete,
    /// The connection closed or the stream was reset first.
    Cut,
    /// No event came within `--event-timeout`.
    EventTimeout,
}

/// One request's stream, as its events arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmProgress {
    first_token: Option<u64>,
    last_token: u64,
    content_chunks: u64,
    usage_tokens: Option<u64>,
    done: bool,
    error: bool,
}

/// What one request's stream came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmOutcome {
    /// When the first content arrived (none: no token came).
    pub first_token: Option<u64>,
    /// When the last content arrived.
    pub last_token: Option<u64>,
    pub output_tokens: u64,
    pub tokens_from: TokenSource,
    /// `(last - first) / (tokens - 1)`, when there were at least two tokens.
    pub tpot_ns: Option<u64>,
    pub failure: Option<LlmFailure>,
}

impl LlmProgress {
    /// The event `data` arrived at `at`; `gap(ns)` is called with the time since the previous
    /// content chunk (the inter-token latency), for every content chunk after the first.
    pub fn event(&mut self, at: u64, data: &[u8], mut gap: impl FnMut(u64)) {
        let chunk = classify(data);
        if chunk.content {
            match self.first_token {
                None => self.first_token = Some(at),
                Some(_) => gap(at.saturating_sub(self.last_token)),
            }
            self.last_token = at;
            self.content_chunks += 1;
        }
        if let Some(n) = chunk.completion_tokens {
            self.usage_tokens = Some(n);
        }
        self.error |= chunk.error;
        self.done |= chunk.done;
    }

    /// The stream is over (`end` says how); the progress is reset for the next request.
    pub fn finish(&mut self, end: StreamEnd) -> LlmOutcome {
        let (output_tokens, tokens_from) = match self.usage_tokens {
            Some(n) => (n, TokenSource::Usage),
            None => (self.content_chunks, TokenSource::Chunks),
        };
        let tpot_ns = match (self.first_token, output_tokens) {
            (Some(first), n) if n >= 2 => Some((self.last_token - first) / (n - 1)),
            _ => None,
        };
        let failure = if self.error {
            Some(LlmFailure::ErrorEvent)
        } else {
            match end {
                StreamEnd::Cut => Some(LlmFailure::Cut),
                StreamEnd::EventTimeout => Some(LlmFailure::EventTimeout),
                StreamEnd::Complete if !self.done => Some(LlmFailure::NoDone),
                StreamEnd::Complete => None,
            }
        };
        let outcome = LlmOutcome {
            first_token: self.first_token,
            last_token: self.first_token.map(|_| self.last_token),
            output_tokens,
            tokens_from,
            tpot_ns,
            failure,
        };
        *self = LlmProgress::default();
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT_ROLE: &[u8] = br#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    const CHAT_TOKEN: &[u8] =
        br#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
    const COMPLETION_TOKEN: &[u8] = br#"{"id":"c","object":"text_completion","choices":[{"index":0,"text":" world","finish_reason":null}]}"#;
    const USAGE: &[u8] = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}"#;
    const ERROR: &[u8] = br#"{"error":{"message":"overloaded","type":"server_error","code":500}}"#;

    #[test]
    fn chunks_are_classified_by_their_keys() {
        assert!(!classify(CHAT_ROLE).content, "an empty content is no token");
        assert!(classify(CHAT_TOKEN).content);
        assert!(classify(COMPLETION_TOKEN).content);
        let usage = classify(USAGE);
        assert_eq!(usage.completion_tokens, Some(7));
        assert!(!usage.content);
        assert!(classify(ERROR).error);
        assert!(classify(b" [DONE] ").done);
        assert_eq!(
            classify(br#"{"choices":[{"delta":{"content":null}}]}"#),
            LlmChunk::default()
        );
    }

    #[test]
    fn key_names_inside_generated_text_are_not_keys() {
        let tricky = br#"{"choices":[{"delta":{"content":"say \"error\": now, \"usage\":{\"completion_tokens\":99}"}}]}"#;
        let c = classify(tricky);
        assert!(c.content);
        assert!(!c.error);
        assert_eq!(c.completion_tokens, None);
        // An explicit null error is no error (some servers send the key always).
        assert!(!classify(br#"{"error": null, "choices":[]}"#).error);
    }

    fn run(events: &[(u64, &[u8])], end: StreamEnd) -> (LlmOutcome, Vec<u64>) {
        let mut p = LlmProgress::default();
        let mut gaps = Vec::new();
        for (at, data) in events {
            p.event(*at, data, |g| gaps.push(g));
        }
        (p.finish(end), gaps)
    }

    #[test]
    fn first_token_gaps_and_tpot_follow_the_content_chunks_and_usage_wins_the_count() {
        let (o, gaps) = run(
            &[
                (100, CHAT_ROLE),
                (250, CHAT_TOKEN),
                (270, CHAT_TOKEN),
                (300, CHAT_TOKEN),
                (301, USAGE),
                (302, b"[DONE]"),
            ],
            StreamEnd::Complete,
        );
        assert_eq!(o.first_token, Some(250));
        assert_eq!(o.last_token, Some(300));
        assert_eq!(gaps, vec![20, 30]);
        assert_eq!((o.output_tokens, o.tokens_from), (7, TokenSource::Usage));
        // (300 - 250) / (7 - 1) = 8 (integer ns).
        assert_eq!(o.tpot_ns, Some(8));
        assert_eq!(o.failure, None);
    }

    #[test]
    fn without_usage_the_content_chunks_are_counted() {
        let (o, _) = run(
            &[(10, CHAT_TOKEN), (40, COMPLETION_TOKEN), (41, b"[DONE]")],
            StreamEnd::Complete,
        );
        assert_eq!((o.output_tokens, o.tokens_from), (2, TokenSource::Chunks));
        assert_eq!(o.tpot_ns, Some(30));
    }

    #[test]
    fn each_way_of_ending_badly_has_its_failure() {
        let tokens: &[(u64, &[u8])] = &[(10, CHAT_TOKEN), (20, CHAT_TOKEN)];
        assert_eq!(
            run(tokens, StreamEnd::Complete).0.failure,
            Some(LlmFailure::NoDone)
        );
        assert_eq!(run(tokens, StreamEnd::Cut).0.failure, Some(LlmFailure::Cut));
        assert_eq!(
            run(tokens, StreamEnd::EventTimeout).0.failure,
            Some(LlmFailure::EventTimeout)
        );
        let (o, _) = run(&[(10, CHAT_TOKEN), (20, ERROR)], StreamEnd::Complete);
        assert_eq!(o.failure, Some(LlmFailure::ErrorEvent));
        assert_eq!(o.output_tokens, 1, "the tokens delivered still count");
        assert_eq!(LlmFailure::for_status(429), Some(LlmFailure::RateLimited));
        assert_eq!(LlmFailure::for_status(500), None);
    }

    #[test]
    fn a_stream_without_tokens_has_no_first_token_and_finish_resets() {
        let mut p = LlmProgress::default();
        p.event(5, b"[DONE]", |_| {});
        let o = p.finish(StreamEnd::Complete);
        assert_eq!((o.first_token, o.tpot_ns, o.output_tokens), (None, None, 0));
        assert_eq!(o.failure, None);
        assert_eq!(p, LlmProgress::default());
    }
}
