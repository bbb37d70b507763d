//! Response checks beyond the status: `--check-body TEXT` (the body contains TEXT) and
//! `--check-header 'Name: value'`. Bodies are streamed and never stored, so the body check is a
//! matcher with bounded state (the length of the text) fed each read as it arrives; it matches
//! across read boundaries.
//!
//! Written by hand because the matcher must be resumable between reads with state fixed in size
//! before the run: the maintained substring searchers (`memchr::memmem`, `aho-corasick`'s stream
//! search) search whole slices or own an `io::Read`, and carrying a tail of the previous read
//! into the next search would copy bytes per read.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum CheckError {
    #[error("--check-body must not be empty")]
    EmptyBody,
    #[error("invalid --check-header '{0}': expected 'Name: value'")]
    Header(String),
}

/// "The body contains this text", compiled once: the Knuth–Morris–Pratt failure table of the
/// text, so that each body byte is examined a bounded number of times and the state between
/// reads is one index.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyNeedle {
    needle: Box<[u8]>,
    /// `fail[i]`: length of the longest proper border of `needle[..=i]`.
    fail: Box<[usize]>,
}

impl BodyNeedle {
    pub fn new(text: &[u8]) -> Result<BodyNeedle, CheckError> {
        if text.is_empty() {
            return Err(CheckError::EmptyBody);
        }
        let mut fail = vec![0usize; text.len()];
        let mut k = 0;
        for i in 1..text.len() {
            while k > 0 && text[i] != text[k] {
                k = fail[k - 1];
            }
            if text[i] == text[k] {
                k += 1;
            }
            fail[i] = k;
        }
        Ok(BodyNeedle {
            needle: text.into(),
            fail: fail.into(),
        })
    }

    pub fn text(&self) -> &[u8] {
        &self.needle
    }
}

/// The progress of one response's body through a [`BodyNeedle`]: reset per response, fed every
/// read of the body. Holds no buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BodyMatch {
    /// Bytes of the needle matched so far at the end of the input seen.
    matched: usize,
    found: bool,
}

impl BodyMatch {
    /// Starts a new body.
    pub fn reset(&mut self) {
        *self = BodyMatch::default();
    }

    /// Feeds the next bytes of the body.
    pub fn feed(&mut self, needle: &BodyNeedle, bytes: &[u8]) {
        if self.found {
            return;
        }
        let n = &needle.needle;
        let mut k = self.matched;
        for &b in bytes {
            while k > 0 && b != n[k] {
                k = needle.fail[k - 1];
            }
            if b == n[k] {
                k += 1;
                if k == n.len() {
                    self.found = true;
                    return;
                }
            }
        }
        self.matched = k;
    }

    /// Whether the text has been seen.
    pub fn found(&self) -> bool {
        self.found
    }
}

/// `--check-header 'Name: value'`: the response carries a header `Name` (any case) whose value,
/// trimmed, equals `value` exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderCheck {
    pub name: String,
    pub value: Vec<u8>,
}

impl HeaderCheck {
    pub fn parse(text: &str) -> Result<HeaderCheck, CheckError> {
        match text.split_once(':') {
            Some((name, value))
                if !name.trim().is_empty()
                    && !name.trim().contains(' ')
                    && !value.trim().is_empty() =>
            {
                Ok(HeaderCheck {
                    name: name.trim().to_string(),
                    value: value.trim().as_bytes().to_vec(),
                })
            }
            _ => Err(CheckError::Header(text.into())),
        }
    }

    /// Whether the parsed response headers satisfy the check.
    pub fn passes(&self, headers: &[httparse::Header<'_>]) -> bool {
        headers
            .iter()
            .any(|h| self.matches(h.name.as_bytes(), h.value))
    }

    /// Whether one response header (name, value) satisfies the check (HTTP/2 hands headers
    /// one at a time, from its header block).
    #[inline]
    pub fn matches(&self, name: &[u8], value: &[u8]) -> bool {
        name.eq_ignore_ascii_case(self.name.as_bytes())
            && value.trim_ascii() == self.value.as_slice()
    }
}

/// The checks a response must pass besides its status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseChecks {
    pub body: Option<BodyNeedle>,
    pub headers: Vec<HeaderCheck>,
}

impl ResponseChecks {
    pub fn is_empty(&self) -> bool {
        self.body.is_none() && self.headers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains_in_pieces(needle: &str, pieces: &[&str]) -> bool {
        let n = BodyNeedle::new(needle.as_bytes()).unwrap();
        let mut m = BodyMatch::default();
        for p in pieces {
            m.feed(&n, p.as_bytes());
        }
        m.found()
    }

    #[test]
    fn a_match_straddling_two_reads_is_found() {
        assert!(contains_in_pieces(
            "\"ok\":true",
            &["{\"id\":1,\"o", "k\":true}"]
        ));
        assert!(contains_in_pieces(
            "\"ok\":true",
            &["{\"ok\"", ":", "true}"]
        ));
        // One byte per read.
        let body = "xx\"ok\":truexx";
        let bytes: Vec<String> = body.chars().map(String::from).collect();
        let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert!(contains_in_pieces("\"ok\":true", &refs));
        assert!(!contains_in_pieces("\"ok\":true", &["{\"ok\":tru", "E}"]));
    }

    #[test]
    fn partial_matches_fall_back_correctly() {
        // The classic case for a failure table: "aab" in "aaab" split after "aa".
        assert!(contains_in_pieces("aab", &["aa", "ab"]));
        assert!(contains_in_pieces("abab", &["aba", "bab"]));
        assert!(!contains_in_pieces("abab", &["aba", "a", "ba"]));
        assert!(contains_in_pieces("abab", &["aba", "a", "bab"]));
        // A new body starts from nothing.
        let n = BodyNeedle::new(b"ok").unwrap();
        let mut m = BodyMatch::default();
        m.feed(&n, b"o");
        m.reset();
        m.feed(&n, b"k");
        assert!(!m.found());
    }

    #[test]
    fn header_checks_parse_and_compare() {
        let c = HeaderCheck::parse("Content-Type: application/json").unwrap();
        let headers = [httparse::Header {
            name: "content-type",
            value: b" application/json ",
        }];
        assert!(c.passes(&headers));
        let other = [httparse::Header {
            name: "Content-Type",
            value: b"text/plain",
        }];
        assert!(!c.passes(&other));
        assert!(!c.passes(&[]));
        for bad in ["NoColon", ": v", "Na me: v", "X:"] {
            assert_eq!(
                HeaderCheck::parse(bad).unwrap_err().to_string(),
                format!("invalid --check-header '{bad}': expected 'Name: value'")
            );
        }
        assert_eq!(BodyNeedle::new(b"").unwrap_err(), CheckError::EmptyBody);
    }
}
