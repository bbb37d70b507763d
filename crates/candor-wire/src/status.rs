//! Which HTTP statuses count as success (`--check-status`): parsed once before the run into a
//! bitset, so that the hot path decides with one lookup and no allocation.

use std::fmt;
use thiserror::Error;

/// Codes 0..640 fit in ten words; real statuses are three-digit codes 100..=599.
const WORDS: usize = 10;
const LOWEST: u16 = 100;
const HIGHEST: u16 = 599;

#[derive(Debug, Error, PartialEq)]
pub enum StatusSetError {
    #[error("the list is empty; expected codes or classes like 200,404 or 2xx,3xx")]
    Empty,
    #[error(
        "'{0}' is not a status code from 100 to 599 (404), a class (2xx) or a range (200-299)"
    )]
    Item(String),
    #[error("the range '{0}' runs backwards")]
    Backwards(String),
}

/// A set of acceptable HTTP statuses. A response whose status is outside it fails (class
/// `status`) although it was a real response.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StatusSet {
    bits: [u64; WORDS],
}

impl Default for StatusSet {
    /// Everything below 400: informational, success and redirection; client and server errors
    /// (4xx, 5xx) fail, as a CI verdict needs.
    fn default() -> Self {
        let mut s = StatusSet::empty();
        s.insert_range(LOWEST, 399);
        s
    }
}

impl StatusSet {
    fn empty() -> Self {
        StatusSet { bits: [0; WORDS] }
    }

    fn insert_range(&mut self, from: u16, to: u16) {
        for code in from..=to {
            self.bits[code as usize / 64] |= 1 << (code % 64);
        }
    }

    /// Parses a comma-separated list of codes (`404`), classes (`2xx`) and ranges (`200-299`).
    pub fn parse(text: &str) -> Result<StatusSet, StatusSetError> {
        let mut set = StatusSet::empty();
        let mut any = false;
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                continue;
            }
            any = true;
            let bad = || StatusSetError::Item(item.to_string());
            let lower = item.to_ascii_lowercase();
            let (from, to) = if let Some(class) = lower.strip_suffix("xx") {
                match class.parse::<u16>() {
                    Ok(c @ 1..=5) if class.len() == 1 => (c * 100, c * 100 + 99),
                    _ => return Err(bad()),
                }
            } else if let Some((a, b)) = item.split_once('-') {
                let (a, b) = (
                    code(a.trim()).ok_or_else(bad)?,
                    code(b.trim()).ok_or_else(bad)?,
                );
                if a > b {
                    return Err(StatusSetError::Backwards(item.to_string()));
                }
                (a, b)
            } else {
                let c = code(item).ok_or_else(bad)?;
                (c, c)
            };
            set.insert_range(from, to);
        }
        if any {
            Ok(set)
        } else {
            Err(StatusSetError::Empty)
        }
    }

    /// Whether a response with `status` succeeded. 0 means the protocol has no status (raw TCP),
    /// which is always acceptable; a code outside 100..=599 never is.
    #[inline]
    pub fn accepts(&self, status: u16) -> bool {
        if status == 0 {
            return true;
        }
        let i = status as usize;
        i < WORDS * 64 && self.bits[i / 64] & (1 << (i % 64)) != 0
    }
}

fn code(text: &str) -> Option<u16> {
    if text.len() != 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>()
        .ok()
        .filter(|c| (LOWEST..=HIGHEST).contains(c))
}

impl fmt::Display for StatusSet {
    /// The canonical list: whole classes as `2xx`, other runs as `a-b` or single codes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        let mut code = LOWEST;
        while code <= HIGHEST {
            if !self.accepts(code) {
                code += 1;
                continue;
            }
            if code.is_multiple_of(100) && (code..code + 100).all(|c| self.accepts(c)) {
                parts.push(format!("{}xx", code / 100));
                code += 100;
                continue;
            }
            let start = code;
            // A run stops at a class boundary so that a following whole class still reads `Nxx`.
            while code < HIGHEST && self.accepts(code + 1) && !(code + 1).is_multiple_of(100) {
                code += 1;
            }
            parts.push(if start == code {
                start.to_string()
            } else {
                format!("{start}-{code}")
            });
            code += 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_accepts_below_400_only() {
        let s = StatusSet::default();
        for ok in [0, 100, 200, 204, 301, 399] {
            assert!(s.accepts(ok), "{ok}");
        }
        for bad in [400, 404, 499, 500, 503, 599, 600, 999, u16::MAX] {
            assert!(!s.accepts(bad), "{bad}");
        }
        assert_eq!(s.to_string(), "1xx,2xx,3xx");
    }

    #[test]
    fn codes_classes_and_ranges() {
        let s = StatusSet::parse("200,404").unwrap();
        assert!(s.accepts(200) && s.accepts(404));
        assert!(!s.accepts(201) && !s.accepts(503) && !s.accepts(302));
        assert_eq!(s.to_string(), "200,404");

        let s = StatusSet::parse(" 2xx, 3XX ").unwrap();
        assert!(s.accepts(200) && s.accepts(299) && s.accepts(300) && s.accepts(399));
        assert!(!s.accepts(199) && !s.accepts(400));
        assert_eq!(s.to_string(), "2xx,3xx");

        let s = StatusSet::parse("200-204,5xx,599").unwrap();
        assert!(s.accepts(204) && !s.accepts(205) && s.accepts(500));
        assert_eq!(s.to_string(), "200-204,5xx");
        // Status 0 is raw TCP's "no status": always a success.
        assert!(StatusSet::parse("200").unwrap().accepts(0));
    }

    #[test]
    fn bad_lists_are_refused_with_the_item() {
        assert_eq!(StatusSet::parse(""), Err(StatusSetError::Empty));
        assert_eq!(StatusSet::parse(" , "), Err(StatusSetError::Empty));
        for bad in [
            "2x", "6xx", "0xx", "12xx", "abc", "99", "600", "2000", "20o", "200-", "-1",
        ] {
            assert_eq!(
                StatusSet::parse(&format!("200,{bad}")),
                Err(StatusSetError::Item(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            StatusSet::parse("299-200"),
            Err(StatusSetError::Backwards("299-200".into()))
        );
        let msg = StatusSet::parse("ok").unwrap_err().to_string();
        assert!(msg.contains("'ok'") && msg.contains("2xx"), "{msg}");
    }
}
