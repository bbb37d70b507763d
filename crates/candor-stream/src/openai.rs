//! What the events of an OpenAI-compatible streaming completion say (`classify`), and what they
//! add up to for one request (`LlmProgress`): the first token's instant, the gaps between
//! tokens, the output tokens (from `usage` when the server sends it, else the chunks that carried
//! content) and how the stream ended. Definitions as vLLM's benchmark gives them: TTFT is the
//! time to the first chunk with content, ITL each gap between consecutive content chunks, TPOT
//! `(last - first) / (tokens - 1)`. All instants are the caller's (ns on the monotonic clock):
//! TTFT from the intended send and from the actual send are both the caller's subtraction.
//! An event that is not JSON, JSON that is not a completion chunk, or a usage count that is not
//! a sane integer fails the request (as vLLM's `json.loads` would, but by name); what comes
//! after `[DONE]` is not part of the completion.

use super::json_key::value_of;

/// Deepest nesting read as JSON: serde_json's own recursion limit, so that what it would
/// refuse is refused here too (a completion chunk is six levels deep).
const MAX_DEPTH: u32 = 128;

/// Most output tokens one response can sanely report: 2^32 - 1, far beyond any model's
/// context; a larger `completion_tokens` is a broken server, not a count to add up.
pub const MAX_COMPLETION_TOKENS: u64 = u32::MAX as u64;

/// What one event's data says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmChunk {
    /// It carries generated text (a non-empty `content` or `text`).
    pub content: bool,
    /// `usage.completion_tokens`, when the chunk carries a sane one.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens` (the input tokens), when the chunk carries a sane one; one that is
    /// not is ignored, not failed: the answer's measures do not depend on it.
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens` (the input tokens the server's prefix cache
    /// served), when sane; ignored as `prompt_tokens` is.
    pub cached_tokens: Option<u64>,
    /// An `error` object: the server failed the request mid-stream.
    pub error: bool,
    /// `[DONE]`: the stream's proper end.
    pub done: bool,
    /// What makes the event no completion chunk ([`LlmFailure::NotJson`],
    /// [`LlmFailure::NotOpenai`], [`LlmFailure::BadUsage`]).
    pub malformed: Option<LlmFailure>,
}

/// Reads one event's data without parsing the JSON into values ([`super::json_key`]). `cut`:
/// the data was cut to the event buffer, so only its keys are looked for (its end is missing,
/// and it cannot be judged as JSON).
pub fn classify(data: &[u8], cut: bool) -> LlmChunk {
    if data.trim_ascii() == b"[DONE]" {
        return LlmChunk {
            done: true,
            ..LlmChunk::default()
        };
    }
    let non_empty_string =
        |v: &[u8]| v.first() == Some(&b'"') && v.get(1).is_some_and(|&b| b != b'"');
    let usage = match value_of(data, b"\"completion_tokens\"") {
        None => Ok(None),
        Some(v) if v.starts_with(b"null") => Ok(None),
        Some(v) => token_count(v).map(Some).ok_or(LlmFailure::BadUsage),
    };
    let error = value_of(data, b"\"error\"").is_some_and(|v| v.first() != Some(&b'n'));
    let malformed = if cut {
        usage.err()
    } else if !is_json(data) {
        Some(LlmFailure::NotJson)
    } else if !openai_shape(data) {
        Some(LlmFailure::NotOpenai)
    } else {
        usage.err()
    };
    let prompt_tokens = value_of(data, b"\"prompt_tokens\"").and_then(token_count);
    LlmChunk {
        content: value_of(data, b"\"content\"").is_some_and(non_empty_string)
            || value_of(data, b"\"text\"").is_some_and(non_empty_string),
        completion_tokens: usage.ok().flatten(),
        prompt_tokens,
        // Only a usage chunk says it: the token chunks are not searched a second time.
        cached_tokens: prompt_tokens
            .and_then(|_| value_of(data, b"\"cached_tokens\"").and_then(token_count)),
        error,
        done: false,
        malformed,
    }
}

/// A `completion_tokens` value that is a whole JSON number, a non-negative integer, and at most
/// [`MAX_COMPLETION_TOKENS`]: `1e300`, `7.5`, `-1`, `"7"` are none.
fn token_count(value: &[u8]) -> Option<u64> {
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    let ends = value
        .get(digits)
        .is_none_or(|&b| b.is_ascii_whitespace() || matches!(b, b',' | b'}' | b']'));
    if digits == 0 || digits > 10 || !ends {
        return None;
    }
    let n = value[..digits]
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    (n <= MAX_COMPLETION_TOKENS).then_some(n)
}

/// A completion chunk (or an error) is a JSON object with `choices` (an array), `usage` (an
/// object) or `error` among its keys.
fn openai_shape(data: &[u8]) -> bool {
    if data.trim_ascii_start().first() != Some(&b'{') {
        return false;
    }
    value_of(data, b"\"choices\"").is_some_and(|v| v.first() == Some(&b'['))
        || value_of(data, b"\"usage\"").is_some_and(|v| v.first() == Some(&b'{'))
        || value_of(data, b"\"error\"").is_some()
}

/// Whether `data` is one JSON value (whitespace around it allowed), checked without building it.
pub fn is_json(data: &[u8]) -> bool {
    let mut at = 0;
    value(data, &mut at, 0) && skip_ws(data, at) == data.len()
}

fn skip_ws(d: &[u8], mut at: usize) -> usize {
    while d
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

fn value(d: &[u8], at: &mut usize, depth: u32) -> bool {
    *at = skip_ws(d, *at);
    match d.get(*at) {
        Some(b'{') => {
            if depth >= MAX_DEPTH {
                return false;
            }
            *at = skip_ws(d, *at + 1);
            if d.get(*at) == Some(&b'}') {
                *at += 1;
                return true;
            }
            loop {
                *at = skip_ws(d, *at);
                if !string(d, at) {
                    return false;
                }
                *at = skip_ws(d, *at);
                if d.get(*at) != Some(&b':') {
                    return false;
                }
                *at += 1;
                if !value(d, at, depth + 1) {
                    return false;
                }
                *at = skip_ws(d, *at);
                match d.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b'}') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b'[') => {
            if depth >= MAX_DEPTH {
                return false;
            }
            *at = skip_ws(d, *at + 1);
            if d.get(*at) == Some(&b']') {
                *at += 1;
                return true;
            }
            loop {
                if !value(d, at, depth + 1) {
                    return false;
                }
                *at = skip_ws(d, *at);
                match d.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b']') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b'"') => string(d, at),
        Some(b't') => literal(d, at, b"true"),
        Some(b'f') => literal(d, at, b"false"),
        Some(b'n') => literal(d, at, b"null"),
        Some(b'-' | b'0'..=b'9') => number(d, at),
        _ => false,
    }
}

fn literal(d: &[u8], at: &mut usize, word: &[u8]) -> bool {
    let ok = d[*at..].starts_with(word);
    *at += word.len();
    ok
}

fn string(d: &[u8], at: &mut usize) -> bool {
    if d.get(*at) != Some(&b'"') {
        return false;
    }
    *at += 1;
    loop {
        match d.get(*at) {
            None => return false,
            Some(b'"') => {
                *at += 1;
                return true;
            }
            Some(b'\\') => match d.get(*at + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => *at += 2,
                Some(b'u') => {
                    let hex = d.get(*at + 2..*at + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return false;
                    }
                    *at += 6;
                }
                _ => return false,
            },
            Some(&b) if b < 0x20 => return false,
            Some(_) => *at += 1,
        }
    }
}

fn number(d: &[u8], at: &mut usize) -> bool {
    let digits = |at: &mut usize| {
        let start = *at;
        while d.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at - start
    };
    if d.get(*at) == Some(&b'-') {
        *at += 1;
    }
    match d.get(*at) {
        Some(b'0') => *at += 1,
        Some(b'1'..=b'9') => {
            digits(at);
        }
        _ => return false,
    }
    if d.get(*at) == Some(&b'.') {
        *at += 1;
        if digits(at) == 0 {
            return false;
        }
    }
    if matches!(d.get(*at), Some(b'e' | b'E')) {
        *at += 1;
        if matches!(d.get(*at), Some(b'+' | b'-')) {
            *at += 1;
        }
        if digits(at) == 0 {
            return false;
        }
    }
    true
}

/// Where the output token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// The server's `usage.completion_tokens`.
    Usage,
    /// The chunks that carried content, counted (a server without usage).
    Chunks,
    /// The run's tokenizer (`--tokenizer`), over each content chunk's text (a server
    /// without usage).
    Tokenizer,
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
    /// An event's data is not JSON (`data: hello`).
    NotJson,
    /// An event is JSON but no completion chunk: an object with `choices`, `usage` or `error`.
    NotOpenai,
    /// `usage.completion_tokens` is not a non-negative integer of at most
    /// [`MAX_COMPLETION_TOKENS`] (`1e300`, `-3`, `7.5`, `"7"`).
    BadUsage,
    /// The response did not say `Content-Type: text/event-stream` and did not end with
    /// `[DONE]`: an answer, not a stream (e.g. a JSON body of a server that ignored
    /// `"stream": true`).
    NotEventStream,
    /// `--timeout` ran out while the stream was coming (the request fails in class `timeout`;
    /// what the stream had delivered is counted).
    Timeout,
    /// An embeddings answer's `data` held another number of embeddings than the inputs sent.
    EmbeddingCount,
}

impl LlmFailure {
    pub const ALL: [LlmFailure; 11] = [
        LlmFailure::ErrorEvent,
        LlmFailure::NoDone,
        LlmFailure::Cut,
        LlmFailure::EventTimeout,
        LlmFailure::RateLimited,
        LlmFailure::NotJson,
        LlmFailure::NotOpenai,
        LlmFailure::BadUsage,
        LlmFailure::NotEventStream,
        LlmFailure::Timeout,
        LlmFailure::EmbeddingCount,
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
            LlmFailure::NotJson => "not_json",
            LlmFailure::NotOpenai => "not_openai",
            LlmFailure::BadUsage => "bad_usage",
            LlmFailure::NotEventStream => "not_event_stream",
            LlmFailure::Timeout => "timeout",
            LlmFailure::EmbeddingCount => "embedding_count",
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
    /// The request's `--timeout` ran out first.
    Timeout,
    /// The run ended first: the request is unfinished, not failed.
    Unfinished,
}

/// One request's stream, as its events arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LlmProgress {
    first_token: Option<u64>,
    last_token: u64,
    content_chunks: u64,
    usage_tokens: Option<u64>,
    usage_prompt: Option<u64>,
    usage_cached: Option<u64>,
    /// The tokenizer's count of the content so far (`--tokenizer`), when one counts.
    counted: Option<u64>,
    done: bool,
    error: bool,
    /// The first event that was no completion chunk, and why.
    malformed: Option<LlmFailure>,
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
    /// The server's `usage.prompt_tokens`, if it sent one.
    pub input_tokens: Option<u64>,
    /// The server's `usage.prompt_tokens_details.cached_tokens`, if it sent one.
    pub cached_tokens: Option<u64>,
    /// The tokenizer's count of the output (`--tokenizer`), also when usage gave the count.
    pub counted_tokens: Option<u64>,
    /// `(last - first) / (tokens - 1)`, when there were at least two tokens.
    pub tpot_ns: Option<u64>,
    pub failure: Option<LlmFailure>,
}

impl LlmProgress {
    /// The event `data` arrived at `at` (`cut`: cut to the event buffer); `gap(ns)` is called
    /// with the time since the previous content chunk (the inter-token latency), for every
    /// content chunk after the first. Events after `[DONE]` are no part of the completion:
    /// their tokens, usage and errors are not read. Returns whether the event was a content
    /// chunk of the completion (its text is then the tokenizer's to count: [`Self::counted`]).
    pub fn event(&mut self, at: u64, data: &[u8], cut: bool, mut gap: impl FnMut(u64)) -> bool {
        if self.done {
            return false;
        }
        let chunk = classify(data, cut);
        if self.malformed.is_none() {
            self.malformed = chunk.malformed;
        }
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
        if let Some(n) = chunk.prompt_tokens {
            self.usage_prompt = Some(n);
        }
        if let Some(n) = chunk.cached_tokens {
            self.usage_cached = Some(n);
        }
        self.error |= chunk.error;
        self.done |= chunk.done;
        chunk.content
    }

    /// The tokenizer counted `n` tokens in a content chunk's text.
    pub fn counted(&mut self, n: u64) {
        self.counted = Some(self.counted.unwrap_or(0).saturating_add(n));
    }

    /// The stream is over (`end` says how); the progress is reset for the next request.
    pub fn finish(&mut self, end: StreamEnd) -> LlmOutcome {
        let (output_tokens, tokens_from) = match (self.usage_tokens, self.counted) {
            (Some(n), _) => (n, TokenSource::Usage),
            (None, Some(n)) => (n, TokenSource::Tokenizer),
            (None, None) => (self.content_chunks, TokenSource::Chunks),
        };
        let tpot_ns = match (self.first_token, output_tokens) {
            (Some(first), n) if n >= 2 => Some((self.last_token - first) / (n - 1)),
            _ => None,
        };
        let failure = if self.error {
            Some(LlmFailure::ErrorEvent)
        } else if self.malformed.is_some() {
            self.malformed
        } else {
            match end {
                StreamEnd::Cut => Some(LlmFailure::Cut),
                StreamEnd::EventTimeout => Some(LlmFailure::EventTimeout),
                StreamEnd::Timeout => Some(LlmFailure::Timeout),
                StreamEnd::Unfinished => None,
                StreamEnd::Complete if !self.done => Some(LlmFailure::NoDone),
                StreamEnd::Complete => None,
            }
        };
        let outcome = LlmOutcome {
            first_token: self.first_token,
            last_token: self.first_token.map(|_| self.last_token),
            output_tokens,
            tokens_from,
            input_tokens: self.usage_prompt,
            cached_tokens: self.usage_cached,
            counted_tokens: self.counted,
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
        assert!(
            !classify(CHAT_ROLE, false).content,
            "an empty content is no token"
        );
        assert!(classify(CHAT_TOKEN, false).content);
        assert!(classify(COMPLETION_TOKEN, false).content);
        let usage = classify(USAGE, false);
        assert_eq!(usage.completion_tokens, Some(7));
        assert_eq!(usage.prompt_tokens, Some(12));
        assert!(!usage.content);
        assert!(classify(ERROR, false).error);
        assert!(classify(b" [DONE] ", false).done);
        assert_eq!(
            classify(br#"{"choices":[{"delta":{"content":null}}]}"#, false),
            LlmChunk::default()
        );
    }

    #[test]
    fn key_names_inside_generated_text_are_not_keys() {
        let tricky = br#"{"choices":[{"delta":{"content":"say \"error\": now, \"usage\":{\"completion_tokens\":99}"}}]}"#;
        let c = classify(tricky, false);
        assert!(c.content);
        assert!(!c.error);
        assert_eq!(c.completion_tokens, None);
        // An explicit null error is no error (some servers send the key always).
        assert!(!classify(br#"{"error": null, "choices":[]}"#, false).error);
    }

    fn run(events: &[(u64, &[u8])], end: StreamEnd) -> (LlmOutcome, Vec<u64>) {
        let mut p = LlmProgress::default();
        let mut gaps = Vec::new();
        for (at, data) in events {
            p.event(*at, data, false, |g| gaps.push(g));
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
        p.event(5, b"[DONE]", false, |_| {});
        let o = p.finish(StreamEnd::Complete);
        assert_eq!((o.first_token, o.tpot_ns, o.output_tokens), (None, None, 0));
        assert_eq!(o.failure, None);
        assert_eq!(p, LlmProgress::default());
    }

    #[test]
    fn json_is_told_from_text_exactly() {
        for ok in [
            &br#"{"a":[1,-2.5e+3,true,false,null,"x\"\u00e9\n"],"b":{}}"#[..],
            b" {} ",
            b"[]",
            b"0",
            b"\"s\"",
        ] {
            assert!(is_json(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b"hello"[..],
            b"",
            b"{",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{a:1}",
            b"[1 2]",
            b"01",
            b"1.",
            b"-",
            b"1e",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"a\nb\"",
            b"{} {}",
            b"tru",
            b"{\"a\":1}}",
        ] {
            assert!(!is_json(bad), "{}", String::from_utf8_lossy(bad));
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(is_json(deep(MAX_DEPTH as usize).as_bytes()));
        assert!(!is_json(deep(MAX_DEPTH as usize + 1).as_bytes()));
    }

    #[test]
    fn events_that_are_no_completion_chunk_are_named() {
        assert_eq!(
            classify(b"hello world", false).malformed,
            Some(LlmFailure::NotJson)
        );
        assert_eq!(
            classify(br#"{"choices":[{"delta":{"content":"a"}}]"#, false).malformed,
            Some(LlmFailure::NotJson)
        );
        for not_openai in [
            &br#"{"message":"hi"}"#[..],
            br#"{"choices":"a"}"#,
            br#"[{"choices":[]}]"#,
            b"42",
        ] {
            assert_eq!(
                classify(not_openai, false).malformed,
                Some(LlmFailure::NotOpenai),
                "{}",
                String::from_utf8_lossy(not_openai)
            );
        }
        for fine in [CHAT_ROLE, CHAT_TOKEN, COMPLETION_TOKEN, USAGE, ERROR] {
            assert_eq!(classify(fine, false).malformed, None);
        }
        // vLLM sends `"usage": null` on every chunk before the last.
        let null_usage = br#"{"choices":[{"delta":{"content":"a"}}],"usage":null}"#;
        assert_eq!(classify(null_usage, false).malformed, None);
        // An event cut to the buffer is not judged as JSON: its end is missing.
        let cut = br#"{"choices":[{"delta":{"content":"aaaa"#;
        let c = classify(cut, true);
        assert_eq!((c.malformed, c.content), (None, true));
    }

    #[test]
    fn usage_counts_are_whole_sane_integers_or_the_request_fails() {
        let usage = |v: &str| {
            let data = format!(r#"{{"choices":[],"usage":{{"completion_tokens":{v}}}}}"#);
            let c = classify(data.as_bytes(), false);
            (c.completion_tokens, c.malformed)
        };
        assert_eq!(usage("7"), (Some(7), None));
        assert_eq!(usage(" 0 "), (Some(0), None));
        assert_eq!(usage("4294967295"), (Some(MAX_COMPLETION_TOKENS), None));
        assert_eq!(usage("null"), (None, None));
        for bad in [
            "1e300",
            "7.5",
            "-3",
            "\"7\"",
            "4294967296",
            "99999999999999999999",
            "true",
        ] {
            assert_eq!(usage(bad), (None, Some(LlmFailure::BadUsage)), "{bad}");
        }
    }

    #[test]
    fn a_malformed_event_fails_the_stream_by_its_name_even_after_done() {
        let (o, _) = run(
            &[(10, CHAT_TOKEN), (20, b"oops"), (30, b"[DONE]")],
            StreamEnd::Complete,
        );
        assert_eq!(o.failure, Some(LlmFailure::NotJson));
        let (o, _) = run(
            &[(10, br#"{"object":"x"}"#), (30, b"[DONE]")],
            StreamEnd::Complete,
        );
        assert_eq!(o.failure, Some(LlmFailure::NotOpenai));
        let (o, _) = run(
            &[
                (10, br#"{"choices":[],"usage":{"completion_tokens":1e300}}"#),
                (30, b"[DONE]"),
            ],
            StreamEnd::Complete,
        );
        assert_eq!(o.failure, Some(LlmFailure::BadUsage));
        assert_eq!(
            o.tokens_from,
            TokenSource::Chunks,
            "a bad count is not used"
        );
        assert_eq!(
            run(&[(10, CHAT_TOKEN)], StreamEnd::Timeout).0.failure,
            Some(LlmFailure::Timeout)
        );
    }

    #[test]
    fn nothing_after_done_is_read() {
        let (o, gaps) = run(
            &[
                (10, CHAT_TOKEN),
                (20, CHAT_TOKEN),
                (30, b"[DONE]"),
                (40, CHAT_TOKEN),
                (50, USAGE),
                (60, ERROR),
                (70, b"garbage"),
            ],
            StreamEnd::Complete,
        );
        assert_eq!(gaps, vec![10]);
        assert_eq!((o.output_tokens, o.tokens_from), (2, TokenSource::Chunks));
        assert_eq!((o.last_token, o.failure), (Some(20), None));
    }
}
