//! Raw TCP responses: framing by a fixed byte count, a delimiter, or a big-endian length
//! prefix, parsed incrementally like the HTTP/1.1 parser (same `Progress` contract).

use crate::http1::{ParseError, Progress};

/// How a raw TCP response is delimited.
#[derive(Debug, Clone, PartialEq)]
pub enum Framing {
    /// Exactly this many bytes.
    ExpectBytes(usize),
    /// Up to and including this byte string.
    Delimiter(Vec<u8>),
    /// A big-endian length prefix of `width` bytes (1, 2, 4 or 8) followed by that many bytes.
    LengthPrefix { width: usize },
}

#[derive(Debug, Clone)]
pub struct TcpFramer {
    framing: Framing,
    /// Bytes of the current response still expected (fixed count or after the length prefix).
    remaining: Option<u64>,
    /// Delimiter search resumes here (bytes before it were already scanned).
    scanned: usize,
}

impl TcpFramer {
    pub fn new(framing: Framing) -> Self {
        TcpFramer {
            framing,
            remaining: None,
            scanned: 0,
        }
    }

    pub fn reset(&mut self) {
        self.remaining = None;
        self.scanned = 0;
    }

    pub fn at_start(&self) -> bool {
        self.remaining.is_none() && self.scanned == 0
    }

    pub fn feed(&mut self, input: &[u8], buffer_full: bool) -> Result<Progress, ParseError> {
        match &self.framing {
            Framing::ExpectBytes(n) => {
                let remaining = *self.remaining.get_or_insert(*n as u64);
                Ok(self.take_body(input, 0, remaining))
            }
            Framing::LengthPrefix { width } => {
                let width = *width;
                let (pos, remaining) = match self.remaining {
                    Some(r) => (0, r),
                    None => {
                        if input.len() < width {
                            return Ok(Progress::NeedMore { consumed: 0 });
                        }
                        let len = input[..width]
                            .iter()
                            .fold(0u64, |acc, &b| (acc << 8) | b as u64);
                        (width, len)
                    }
                };
                Ok(self.take_body(input, pos, remaining))
            }
            Framing::Delimiter(d) => {
                let from = self.scanned.saturating_sub(d.len() - 1);
                match input[from..]
                    .windows(d.len())
                    .position(|w| w == d.as_slice())
                {
                    Some(i) => {
                        let consumed = from + i + d.len();
                        self.remaining = None;
                        self.scanned = 0;
                        Ok(Progress::Done {
                            consumed,
                            status: 0,
                            close: false,
                        })
                    }
                    None if buffer_full => Err(ParseError::HeadTooLarge),
                    None => {
                        self.scanned = input.len();
                        Ok(Progress::NeedMore { consumed: 0 })
                    }
                }
            }
        }
    }

    fn take_body(&mut self, input: &[u8], pos: usize, remaining: u64) -> Progress {
        let available = (input.len() - pos) as u64;
        let take = available.min(remaining);
        let consumed = pos + take as usize;
        if take == remaining {
            self.reset();
            Progress::Done {
                consumed,
                status: 0,
                close: false,
            }
        } else {
            self.remaining = Some(remaining - take);
            Progress::NeedMore { consumed }
        }
    }
}

/// Parses a payload given as text, or as hex when prefixed with `hex:` (spaces allowed).
pub fn parse_payload(text: &str) -> Result<Vec<u8>, String> {
    match text.strip_prefix("hex:") {
        Some(hex) => {
            let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
            if !digits.len().is_multiple_of(2) {
                return Err(format!("odd number of hex digits in '{text}'"));
            }
            digits
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|s| u8::from_str_radix(s, 16).ok())
                        .ok_or_else(|| format!("invalid hex in '{text}'"))
                })
                .collect()
        }
        None => Ok(unescape(text)),
    }
}

/// Text payloads may use `\r`, `\n`, `\t`, `\\` and `\0` escapes (as in `PING\r\n`).
pub fn unescape(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('r') => out.push(b'\r'),
                Some('n') => out.push(b'\n'),
                Some('t') => out.push(b'\t'),
                Some('0') => out.push(0),
                Some('\\') => out.push(b'\\'),
                Some(other) => {
                    out.push(b'\\');
                    let mut b = [0; 4];
                    out.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
                }
                None => out.push(b'\\'),
            }
        } else {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_pieces(f: &mut TcpFramer, bytes: &[u8], step: usize) -> usize {
        let mut buf = Vec::new();
        let mut done = 0;
        for piece in bytes.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match f.feed(&buf, false).unwrap() {
                    Progress::NeedMore { consumed } => {
                        buf.drain(..consumed);
                        break;
                    }
                    Progress::Done { consumed, .. } => {
                        buf.drain(..consumed);
                        done += 1;
                        if buf.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        done
    }

    #[test]
    fn fixed_count() {
        for step in [1, 3, 100] {
            let mut f = TcpFramer::new(Framing::ExpectBytes(4));
            assert_eq!(feed_pieces(&mut f, b"pongpongpong", step), 3);
        }
    }

    #[test]
    fn delimiter_split_anywhere() {
        for step in [1, 2, 5, 100] {
            let mut f = TcpFramer::new(Framing::Delimiter(b"\r\n".to_vec()));
            assert_eq!(
                feed_pieces(&mut f, b"+PONG\r\n+PONG\r\n$3\r\n", step),
                3,
                "step {step}"
            );
        }
    }

    #[test]
    fn length_prefix() {
        let mut msg = vec![0, 5];
        msg.extend_from_slice(b"hello");
        msg.extend_from_slice(&[0, 0]);
        for step in [1, 3, 100] {
            let mut f = TcpFramer::new(Framing::LengthPrefix { width: 2 });
            assert_eq!(feed_pieces(&mut f, &msg, step), 2, "step {step}");
        }
    }

    #[test]
    fn a_complete_frame_leaves_what_follows_it_unconsumed() {
        // The worker sees the leftover: with nothing else outstanding it is a protocol error,
        // never the answer to the next request.
        for (framing, two) in [
            (Framing::ExpectBytes(7), &b"+PONG\r\n+PONG\r\n"[..]),
            (Framing::Delimiter(b"\r\n".to_vec()), b"+PONG\r\n+PONG\r\n"),
            (Framing::LengthPrefix { width: 1 }, b"\x02ok\x02ok"),
        ] {
            let mut f = TcpFramer::new(framing.clone());
            match f.feed(two, false).unwrap() {
                Progress::Done { consumed, .. } => {
                    assert_eq!(consumed, two.len() / 2, "{framing:?}")
                }
                other => panic!("{framing:?}: {other:?}"),
            }
            assert!(f.at_start(), "{framing:?}");
        }
    }

    #[test]
    fn payloads() {
        assert_eq!(parse_payload("PING\\r\\n").unwrap(), b"PING\r\n");
        assert_eq!(parse_payload("hex:00 01 ff").unwrap(), vec![0, 1, 255]);
        assert!(parse_payload("hex:0").is_err());
        assert!(parse_payload("hex:zz").is_err());
    }

    #[test]
    fn delimiter_overflow_is_an_error() {
        let mut f = TcpFramer::new(Framing::Delimiter(b"\n".to_vec()));
        assert!(f.feed(b"no newline here", true).is_err());
    }
}
