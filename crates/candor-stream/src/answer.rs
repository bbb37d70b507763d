//! What a whole (non-streamed) OpenAI-compatible answer says (`"stream": false`): its
//! `usage` (output and input tokens), the generated text for a tokenizer, an `error` object,
//! and whether it is a completion at all. The answer is read once it has ended, from the
//! connection's bounded copy of its body ([`AnswerBuffer`]).

use super::json_key::value_of;
use super::openai::{is_json, LlmFailure, MAX_COMPLETION_TOKENS};

/// The most of one answer's body kept: OpenAI-compatible servers put `usage` after `choices`,
/// so a longer body keeps its end (the first half is dropped when it fills).
pub const ANSWER_CAPACITY: usize = 64 * 1024;

/// A connection's copy of the current answer's body, bounded by [`ANSWER_CAPACITY`]; its
/// storage is reserved once and kept.
#[derive(Debug, Clone, Default)]
pub struct AnswerBuffer {
    bytes: Vec<u8>,
    /// Bytes were dropped from the front: the body cannot be judged as JSON, nor its text
    /// counted.
    lost_front: bool,
}

impl AnswerBuffer {
    pub fn with_capacity(capacity: usize) -> AnswerBuffer {
        AnswerBuffer {
            bytes: Vec::with_capacity(capacity),
            lost_front: false,
        }
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.lost_front = false;
    }

    /// The next bytes of the body.
    pub fn feed(&mut self, mut piece: &[u8]) {
        if piece.len() > ANSWER_CAPACITY / 2 {
            self.lost_front = true;
            self.bytes.clear();
            piece = &piece[piece.len() - ANSWER_CAPACITY / 2..];
        }
        if self.bytes.len() + piece.len() > ANSWER_CAPACITY {
            self.lost_front = true;
            self.bytes.drain(..self.bytes.len() / 2);
            if self.bytes.len() + piece.len() > ANSWER_CAPACITY {
                self.bytes.clear();
            }
        }
        self.bytes.extend_from_slice(piece);
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn lost_front(&self) -> bool {
        self.lost_front
    }
}

/// What a whole answer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnswerRead {
    /// `usage.completion_tokens` and `usage.prompt_tokens`, when sane.
    pub completion_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, when sane.
    pub cached_tokens: Option<u64>,
    /// How the answer is no completion ([`LlmFailure::ErrorEvent`] for an `error` object,
    /// [`LlmFailure::NotJson`], [`LlmFailure::NotOpenai`], [`LlmFailure::BadUsage`]).
    pub failure: Option<LlmFailure>,
}

/// Reads a whole answer's body; `lost_front`: only its end was kept (it is not judged as JSON).
pub fn read_answer(body: &[u8], lost_front: bool) -> AnswerRead {
    let count = |v: &[u8]| {
        let n = super::json_key::leading_number(v)?;
        (n <= MAX_COMPLETION_TOKENS).then_some(n)
    };
    let usage = match value_of(body, b"\"completion_tokens\"") {
        None => Ok(None),
        Some(v) if v.starts_with(b"null") => Ok(None),
        Some(v) => count(v).map(Some).ok_or(LlmFailure::BadUsage),
    };
    let error = value_of(body, b"\"error\"").is_some_and(|v| v.first() != Some(&b'n'));
    let shaped = value_of(body, b"\"choices\"").is_some_and(|v| v.first() == Some(&b'['));
    let failure = if error {
        Some(LlmFailure::ErrorEvent)
    } else if !lost_front && !is_json(body) {
        Some(LlmFailure::NotJson)
    } else if !lost_front && !shaped {
        Some(LlmFailure::NotOpenai)
    } else {
        usage.err()
    };
    AnswerRead {
        completion_tokens: usage.ok().flatten(),
        prompt_tokens: value_of(body, b"\"prompt_tokens\"").and_then(count),
        cached_tokens: value_of(body, b"\"cached_tokens\"").and_then(count),
        failure,
    }
}

/// The generated text's JSON string in a whole answer: a chat answer's `message.content`, a
/// completion's `text`.
pub fn answer_text(body: &[u8]) -> Option<&[u8]> {
    value_of(body, b"\"content\"")
        .filter(|v| v.first() == Some(&b'"'))
        .or_else(|| value_of(body, b"\"text\"").filter(|v| v.first() == Some(&b'"')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &[u8] = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;

    #[test]
    fn a_whole_answer_gives_its_usage_and_text() {
        let r = read_answer(CHAT, false);
        assert_eq!(
            (r.completion_tokens, r.prompt_tokens, r.failure),
            (Some(2), Some(5), None)
        );
        assert_eq!(answer_text(CHAT), Some(&br#""hi there"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#[..]));
        let completion = br#"{"choices":[{"text":"abc"}]}"#;
        assert_eq!(read_answer(completion, false), AnswerRead::default());
        let cached = br#"{"choices":[{"text":"a"}],"usage":{"prompt_tokens":40,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":32}}}"#;
        let r = read_answer(cached, false);
        assert_eq!((r.prompt_tokens, r.cached_tokens), (Some(40), Some(32)));
        assert!(answer_text(completion).unwrap().starts_with(b"\"abc\""));
    }

    #[test]
    fn what_is_no_completion_is_named() {
        let f = |b: &[u8]| read_answer(b, false).failure;
        assert_eq!(f(b"hello"), Some(LlmFailure::NotJson));
        assert_eq!(f(br#"{"data":[]}"#), Some(LlmFailure::NotOpenai));
        assert_eq!(
            f(br#"{"error":{"message":"x"}}"#),
            Some(LlmFailure::ErrorEvent)
        );
        assert_eq!(
            f(br#"{"choices":[],"usage":{"completion_tokens":-1}}"#),
            Some(LlmFailure::BadUsage)
        );
        // Only its end kept: not judged as JSON, its usage still read.
        let tail = br#"..."usage":{"completion_tokens":9}}"#;
        assert_eq!(read_answer(tail, true).completion_tokens, Some(9));
        assert_eq!(read_answer(tail, true).failure, None);
    }

    #[test]
    fn the_buffer_keeps_the_end_of_a_long_body_within_its_capacity() {
        let mut b = AnswerBuffer::with_capacity(ANSWER_CAPACITY);
        b.feed(b"{\"choices\":[");
        assert!(!b.lost_front());
        for _ in 0..100 {
            b.feed(&[b' '; 4096]);
        }
        b.feed(br#"],"usage":{"completion_tokens":3}}"#);
        assert!(b.lost_front() && b.bytes().len() <= ANSWER_CAPACITY);
        assert_eq!(read_answer(b.bytes(), true).completion_tokens, Some(3));
        b.feed(&vec![b'x'; ANSWER_CAPACITY * 2]);
        assert!(b.bytes().len() <= ANSWER_CAPACITY);
        b.clear();
        assert!(!b.lost_front() && b.bytes().is_empty());
    }
}
