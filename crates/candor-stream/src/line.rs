//! Lines of a body that arrives in pieces, split without allocating: a line wholly inside one
//! read is handed out where it lies; only a line cut by a read's end is copied, into a buffer
//! fixed when the connection opens (a longer line is handed out cut, and says so).

/// Splits bytes into lines ended by LF, CRLF or CR (server-sent events allow all three).
#[derive(Debug, Clone)]
pub struct LineSplitter {
    partial: Box<[u8]>,
    len: usize,
    /// The partial line outgrew `partial`: what is handed out is its start.
    cut: bool,
    /// The last byte fed was a CR: an LF that comes first in the next read ends nothing.
    after_cr: bool,
}

impl LineSplitter {
    /// Lines longer than `capacity` bytes that straddle a read are handed out cut to it.
    pub fn with_capacity(capacity: usize) -> LineSplitter {
        LineSplitter {
            partial: vec![0; capacity].into_boxed_slice(),
            len: 0,
            cut: false,
            after_cr: false,
        }
    }

    /// Feeds the next bytes; `line(text, cut)` is called for each line they complete, without
    /// its ending.
    pub fn feed(&mut self, mut input: &[u8], mut line: impl FnMut(&[u8], bool)) {
        if self.after_cr && input.first() == Some(&b'\n') {
            input = &input[1..];
        }
        self.after_cr = false;
        while let Some(i) = memchr::memchr2(b'\n', b'\r', input) {
            if self.len == 0 && !self.cut {
                line(&input[..i], false);
            } else {
                self.keep(&input[..i]);
                line(&self.partial[..self.len], self.cut);
                self.len = 0;
                self.cut = false;
            }
            let ended_by_cr = input[i] == b'\r';
            input = &input[i + 1..];
            if ended_by_cr {
                match input.first() {
                    Some(b'\n') => input = &input[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.keep(input);
    }

    /// The stream ended: an unterminated last line is handed out.
    pub fn finish(&mut self, mut line: impl FnMut(&[u8], bool)) {
        if self.len > 0 || self.cut {
            line(&self.partial[..self.len], self.cut);
        }
        self.reset();
    }

    /// Forgets a partial line (the response or the connection is gone).
    pub fn reset(&mut self) {
        self.len = 0;
        self.cut = false;
        self.after_cr = false;
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.partial.len() - self.len;
        let n = bytes.len().min(room);
        self.partial[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
        self.cut |= n < bytes.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pieces` in turn and returns every line (as text) with its cut flag.
    fn split(capacity: usize, pieces: &[&[u8]], finish: bool) -> Vec<(String, bool)> {
        let mut s = LineSplitter::with_capacity(capacity);
        let mut out = Vec::new();
        for p in pieces {
            s.feed(p, |l, cut| {
                out.push((String::from_utf8_lossy(l).into_owned(), cut))
            });
        }
        if finish {
            s.finish(|l, cut| out.push((String::from_utf8_lossy(l).into_owned(), cut)));
        }
        out
    }

    fn lines(v: &[&str]) -> Vec<(String, bool)> {
        v.iter().map(|l| (l.to_string(), false)).collect()
    }

    #[test]
    fn every_line_ending_ends_a_line_once() {
        assert_eq!(
            split(64, &[b"a\nb\r\nc\rd\n\n"], false),
            lines(&["a", "b", "c", "d", ""])
        );
    }

    #[test]
    fn a_crlf_split_between_reads_is_one_ending() {
        assert_eq!(
            split(64, &[b"a\r", b"\nb\r", b"\r\n"], false),
            lines(&["a", "b", ""])
        );
    }

    #[test]
    fn a_line_cut_by_reads_is_joined() {
        assert_eq!(
            split(64, &[b"da", b"ta: x", b"y\nz"], true),
            lines(&["data: xy", "z"])
        );
    }

    #[test]
    fn a_straddling_line_longer_than_the_buffer_is_handed_out_cut_and_the_next_is_whole() {
        let got = split(4, &[b"abcdef", b"gh\nij\n"], false);
        assert_eq!(
            got,
            vec![("abcd".to_string(), true), ("ij".to_string(), false)]
        );
    }

    #[test]
    fn finishing_without_a_partial_line_hands_out_nothing() {
        assert_eq!(split(8, &[b"a\n"], true), lines(&["a"]));
    }
}
