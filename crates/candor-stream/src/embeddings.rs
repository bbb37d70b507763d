//! What an embeddings answer (`POST /v1/embeddings`, `--llm openai-embeddings`) holds, counted
//! as its bytes arrive: the objects of its top-level `data` array (one per input embedded), an
//! `error` at the top, and whether its brackets and strings make one JSON object. The vectors
//! themselves are never kept: an answer of a thousand 4,096-float vectors (tens of MB) costs
//! this scanner a few words of state (the connection's bounded [`AnswerBuffer`] keeps only the
//! end, where `usage` is).
//!
//! [`AnswerBuffer`]: super::answer::AnswerBuffer

/// Nesting followed exactly; an answer deeper than this is not judged as JSON (an embeddings
/// answer is three levels deep).
const MAX_DEPTH: u32 = 128;

/// The top-level keys the scanner cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopKey {
    Data,
    Error,
    Other,
}

/// A byte-at-a-time scanner of one answer's body (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbeddingScan {
    /// Open containers; bit `k` of `arrays` is set when level `k + 1` is an array.
    depth: u32,
    arrays: u128,
    in_string: bool,
    escape: bool,
    /// The top level has been opened (and, once `depth` is back to 0, closed).
    opened: bool,
    closed: bool,
    /// The first bytes of the string being read at depth 1 (a key or a value), and its length.
    key: [u8; 8],
    key_len: usize,
    /// The last top-level key read, waiting for its value.
    pending: Option<TopKey>,
    /// Whether the next non-blank byte at depth 1 starts a value (after `:`).
    value_next: bool,
    /// Depth of the open `data` array (0: not in it).
    data_depth: u32,
    /// What was seen.
    saw_data: bool,
    saw_error: bool,
    invalid: bool,
    /// Objects in the top-level `data` array.
    objects: u64,
}

/// What an embeddings answer's body came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingsRead {
    /// Not one JSON object by its brackets and strings.
    pub not_json: bool,
    /// A top-level `error` that is not `null`.
    pub error: bool,
    /// A top-level `data` array, and the objects in it.
    pub data: Option<u64>,
}

impl EmbeddingScan {
    pub fn clear(&mut self) {
        *self = EmbeddingScan::default();
    }

    /// The next bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.invalid {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 1 && !self.value_next && self.pending.is_none() {
                    self.pending = Some(match &self.key[..self.key_len] {
                        b"data" => TopKey::Data,
                        b"error" => TopKey::Error,
                        _ => TopKey::Other,
                    });
                } else if self.depth == 1 {
                    self.value_next = false;
                    self.pending = None;
                }
            } else if self.depth == 1 && self.key_len < self.key.len() {
                self.key[self.key_len] = b;
                self.key_len += 1;
            }
            return;
        }
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return;
        }
        if self.closed {
            self.invalid = true;
            return;
        }
        if !self.opened && b != b'{' {
            self.invalid = true;
            return;
        }
        if self.depth == 1 {
            if self.value_next {
                // The first byte of a top-level value: what the key it belongs to holds.
                match (self.pending, b) {
                    (Some(TopKey::Data), b'[') => {
                        self.saw_data = true;
                        self.data_depth = 2;
                    }
                    (Some(TopKey::Error), c) if c != b'n' => self.saw_error = true,
                    _ => {}
                }
                if b != b'"' && b != b'{' && b != b'[' {
                    // A scalar: the key is done with once it starts.
                    self.value_next = false;
                    self.pending = None;
                }
            } else if b == b':' {
                if self.pending.is_none() {
                    self.invalid = true;
                }
                self.value_next = true;
                return;
            } else if !matches!(b, b'"' | b',' | b'}') {
                // Between a key's end and its colon, or where a key should start.
                self.invalid = true;
                return;
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.key_len = 0;
            }
            b'{' | b'[' => {
                if self.depth == 2 && self.data_depth == 2 && b == b'{' {
                    self.objects += 1;
                }
                if self.depth >= MAX_DEPTH {
                    self.invalid = true;
                    return;
                }
                if b == b'[' {
                    self.arrays |= 1 << self.depth;
                } else {
                    self.arrays &= !(1 << self.depth);
                }
                self.depth += 1;
                self.opened = true;
                if self.depth == 2 {
                    self.value_next = false;
                    self.pending = None;
                }
            }
            b'}' | b']' => {
                let is_array = self.depth > 0 && self.arrays & (1 << (self.depth - 1)) != 0;
                if self.depth == 0 || is_array != (b == b']') {
                    self.invalid = true;
                    return;
                }
                if self.depth == self.data_depth {
                    self.data_depth = 0;
                }
                self.depth -= 1;
                if self.depth == 0 {
                    self.closed = true;
                }
            }
            b',' if self.depth == 1 => {
                self.value_next = false;
                self.pending = None;
            }
            _ => {}
        }
    }

    /// What the body came to, once it has ended.
    pub fn read(&self) -> EmbeddingsRead {
        EmbeddingsRead {
            not_json: self.invalid || !self.closed || self.in_string,
            error: self.saw_error,
            data: self.saw_data.then_some(self.objects),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&[u8]]) -> EmbeddingsRead {
        let mut s = EmbeddingScan::default();
        for p in pieces {
            s.feed(p);
        }
        s.read()
    }

    const ANSWER: &[u8] = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3]},{"object":"embedding","index":1,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}"#;

    #[test]
    fn the_data_objects_are_counted_whatever_the_reads() {
        let whole = scan(&[ANSWER]);
        assert_eq!(
            whole,
            EmbeddingsRead {
                not_json: false,
                error: false,
                data: Some(2)
            }
        );
        // One byte a read: the same.
        let bytes: Vec<&[u8]> = ANSWER.chunks(1).collect();
        assert_eq!(scan(&bytes), whole);
        // Keys and brackets inside strings, nested objects in an embedding, other arrays.
        let tricky = br#" {"note":"\"data\":[{}]","data":[{"e":[1,{"x":[{}]}],"s":"}]"}, {}],"other":[{},{}]}
"#;
        assert_eq!(scan(&[tricky]).data, Some(2));
        assert!(!scan(&[tricky]).not_json);
        assert_eq!(scan(&[br#"{"data":[]}"#]).data, Some(0));
    }

    #[test]
    fn what_is_no_embeddings_answer_is_seen() {
        assert!(scan(&[b"hello"]).not_json);
        assert!(scan(&[b"{\"data\":[{}]"]).not_json, "not closed");
        assert!(scan(&[b"{\"data\":[{}]} x"]).not_json, "trailing bytes");
        assert!(scan(&[b"{\"data\":[{]}}"]).not_json, "mismatched");
        assert!(scan(&[b"[{}]"]).not_json, "not an object");
        assert!(scan(&[b"{\"a\" 1}"]).not_json, "no colon");
        assert_eq!(scan(&[b"{\"data\":{}}"]).data, None, "data not an array");
        assert_eq!(scan(&[b"{\"object\":\"list\"}"]).data, None);
        let e = scan(&[br#"{"error":{"message":"x","code":400}}"#]);
        assert!(e.error && !e.not_json && e.data.is_none());
        assert!(!scan(&[br#"{"error":null,"data":[]}"#]).error);
        // Deeper than the scanner follows: not judged as JSON, never a panic.
        let deep = [&b"{\"data\":["[..], &[b'['; 200], &[b']'; 200], b"]}"].concat();
        assert!(scan(&[&deep]).not_json);
    }
}
