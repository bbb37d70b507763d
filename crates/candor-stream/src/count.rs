//! Output tokens counted by the run's own tokenizer (`--tokenizer`) from the text the stream
//! delivered: each content chunk's text is decoded from its JSON string into a buffer of the
//! connection (bounded by the event buffer, so a long answer is never kept whole) and counted
//! as it comes. The tokenizer itself lives above this crate; it is seen through
//! [`TokenCounter`]. When the server's `usage` says a count too, the two are compared
//! ([`disagree`]).

use std::fmt;

/// Something that counts the tokens of a text (a tokenizer). Unwind-safe by reference, as the
/// run's settings that carry it are (a run is made under `catch_unwind` by its callers).
pub trait TokenCounter: Send + Sync + std::panic::RefUnwindSafe {
    fn count_tokens(&self, text: &str) -> u64;
}

/// The run's tokenizer, as the stream settings carry it: a reference that lives as long as the
/// process (the tokenizer is loaded once per run and leaked), so that the settings stay `Copy`
/// and every connection's reader shares the one tokenizer without a reference count.
#[derive(Clone, Copy)]
pub struct Counter(pub &'static dyn TokenCounter);

impl Counter {
    pub fn count(&self, text: &str) -> u64 {
        self.0.count_tokens(text)
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Counter")
    }
}

/// Two settings are the same when they use the same tokenizer.
impl PartialEq for Counter {
    fn eq(&self, other: &Counter) -> bool {
        std::ptr::addr_eq(self.0, other.0)
    }
}

impl Eq for Counter {}

/// How far apart (as a share of the server's count) the tokenizer's count may be from the
/// server's `usage.completion_tokens` before the run warns: 5%.
pub const DISAGREE_SHARE: f64 = 0.05;

/// Whether the tokenizer's count `counted` differs from the server's `usage` by more than
/// [`DISAGREE_SHARE`] of the server's count (any difference when the server said 0).
pub fn disagree(usage: u64, counted: u64) -> bool {
    usage.abs_diff(counted) as f64 > DISAGREE_SHARE * usage as f64
}

/// Decodes the JSON string that `value` starts with (its opening quote first) into `out`
/// (cleared first); false when `value` is no string or its end is missing (a cut event:
/// what was decoded is kept). Written by hand rather than with serde_json because it runs on
/// every content chunk and must not allocate: `out` keeps its storage between events.
pub fn json_string_into(value: &[u8], out: &mut String) -> bool {
    out.clear();
    let Some(body) = value.strip_prefix(b"\"") else {
        return false;
    };
    let mut at = 0;
    let mut plain = 0;
    // Pushes the raw UTF-8 run `body[plain..at]` (no escapes in it).
    let flush = |out: &mut String, from: usize, to: usize| {
        out.push_str(&String::from_utf8_lossy(&body[from..to]));
    };
    while at < body.len() {
        match body[at] {
            b'"' => {
                flush(out, plain, at);
                return true;
            }
            b'\\' => {
                flush(out, plain, at);
                let (c, used) = match body.get(at + 1) {
                    Some(b'n') => ('\n', 2),
                    Some(b't') => ('\t', 2),
                    Some(b'r') => ('\r', 2),
                    Some(b'b') => ('\u{8}', 2),
                    Some(b'f') => ('\u{c}', 2),
                    Some(b'u') => match unicode_escape(&body[at..]) {
                        Some(decoded) => decoded,
                        None => return false,
                    },
                    Some(&b) if b == b'"' || b == b'\\' || b == b'/' => (b as char, 2),
                    _ => return false,
                };
                out.push(c);
                at += used;
                plain = at;
            }
            _ => at += 1,
        }
    }
    flush(out, plain, at);
    false
}

/// `\uXXXX` (or a surrogate pair `\uD83D\uDE00`) at the start of `s`: the character and the
/// bytes used; a lone surrogate is U+FFFD, as a lenient decoder reads it.
fn unicode_escape(s: &[u8]) -> Option<(char, usize)> {
    let hex = |s: &[u8]| -> Option<u32> {
        let h = std::str::from_utf8(s.get(2..6)?).ok()?;
        u32::from_str_radix(h, 16).ok()
    };
    let hi = hex(s)?;
    if (0xD800..0xDC00).contains(&hi) && s.get(6) == Some(&b'\\') && s.get(7) == Some(&b'u') {
        if let Some(lo) = hex(&s[6..]).filter(|lo| (0xDC00..0xE000).contains(lo)) {
            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return Some((char::from_u32(c).unwrap_or('\u{FFFD}'), 12));
        }
    }
    Some((char::from_u32(hi).unwrap_or('\u{FFFD}'), 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(v: &[u8]) -> (bool, String) {
        let mut s = String::new();
        let whole = json_string_into(v, &mut s);
        (whole, s)
    }

    #[test]
    fn json_strings_are_decoded_with_their_escapes() {
        assert_eq!(decode(br#""Hello","x":1"#), (true, "Hello".into()));
        assert_eq!(
            decode(br#""a\"b\\c\/d\ne\tf""#),
            (true, "a\"b\\c/d\ne\tf".into())
        );
        assert_eq!(
            decode(br#""caf\u00e9 \ud83d\ude00""#),
            (true, "café 😀".into())
        );
        assert_eq!(
            decode("\"naïve 日本\"".as_bytes()),
            (true, "naïve 日本".into())
        );
        assert_eq!(decode(br#""\ud83d x""#), (true, "\u{FFFD} x".into()));
    }

    #[test]
    fn what_is_no_whole_string_says_so() {
        assert_eq!(decode(b"null"), (false, String::new()));
        assert_eq!(
            decode(br#""cut in the mid"#),
            (false, "cut in the mid".into())
        );
        assert!(!decode(br#""bad \q escape""#).0);
        assert!(!decode(br#""\u12""#).0);
    }

    #[test]
    fn counts_disagree_past_five_percent_of_the_servers() {
        assert!(!disagree(100, 105));
        assert!(!disagree(100, 95));
        assert!(disagree(100, 106));
        assert!(disagree(100, 94));
        assert!(!disagree(0, 0));
        assert!(disagree(0, 1));
    }

    struct Chars;
    impl TokenCounter for Chars {
        fn count_tokens(&self, text: &str) -> u64 {
            text.chars().count() as u64
        }
    }
    static CHARS: Chars = Chars;

    #[test]
    fn counters_are_the_same_when_they_are_the_same_tokenizer() {
        assert_eq!(Counter(&CHARS), Counter(&CHARS));
        assert_eq!(Counter(&CHARS).count("héllo"), 5);
    }
}
