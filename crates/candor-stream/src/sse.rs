//! Server-sent events (the `text/event-stream` format): lines of `field: value`, an event ended
//! by a blank line, its `data` lines joined by newlines; comments (`:`) and the other fields
//! (`event`, `id`, `retry`) are read past. An event is dispatched only when it has data, and an
//! unfinished event at the end of the stream is dropped, as the format says; a UTF-8 byte order
//! mark opening the stream is not part of its first line (the format strips it).

use super::line::LineSplitter;

/// The UTF-8 byte order mark.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
/// `bom_matched` once the stream's start is decided (a mark stripped, or none there).
const BOM_DECIDED: u8 = u8::MAX;

/// Finds the events in a response's body as it arrives.
#[derive(Debug, Clone)]
pub struct SseScanner {
    lines: LineSplitter,
    data: Box<[u8]>,
    len: usize,
    has_data: bool,
    /// The data outgrew `data`: the event is handed out cut.
    cut: bool,
    /// Bytes of a byte order mark seen at the stream's start so far (it may straddle reads),
    /// or [`BOM_DECIDED`].
    bom_matched: u8,
}

impl SseScanner {
    /// An event's data beyond `capacity` bytes is handed out cut to it (a line too).
    pub fn with_capacity(capacity: usize) -> SseScanner {
        SseScanner {
            lines: LineSplitter::with_capacity(capacity),
            data: vec![0; capacity].into_boxed_slice(),
            len: 0,
            has_data: false,
            cut: false,
            bom_matched: 0,
        }
    }

    /// Feeds the next body bytes; `event(data, cut)` is called for each event they complete.
    pub fn feed(&mut self, mut input: &[u8], mut event: impl FnMut(&[u8], bool)) {
        while self.bom_matched != BOM_DECIDED {
            let Some(&b) = input.first() else {
                return;
            };
            let k = usize::from(self.bom_matched);
            if b == BOM[k] {
                input = &input[1..];
                self.bom_matched = if k + 1 == BOM.len() {
                    BOM_DECIDED
                } else {
                    self.bom_matched + 1
                };
            } else {
                // Not a mark after all: the bytes taken for one are the stream's own.
                self.bom_matched = BOM_DECIDED;
                self.feed_lines(&BOM[..k], &mut event);
            }
        }
        self.feed_lines(input, event);
    }

    fn feed_lines(&mut self, input: &[u8], mut event: impl FnMut(&[u8], bool)) {
        let SseScanner {
            lines,
            data,
            len,
            has_data,
            cut,
            ..
        } = self;
        lines.feed(input, |line, line_cut| {
            if line.is_empty() {
                if *has_data {
                    // The last data line's newline is not part of the data.
                    let end = if *cut { *len } else { len.saturating_sub(1) };
                    event(&data[..end], *cut);
                }
                *len = 0;
                *has_data = false;
                *cut = false;
                return;
            }
            if line[0] == b':' {
                return;
            }
            let (field, value) = match memchr::memchr(b':', line) {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &b""[..]),
            };
            if field != b"data" {
                return;
            }
            *has_data = true;
            *cut |= line_cut;
            for part in [value, b"\n"] {
                let room = data.len() - *len;
                let n = part.len().min(room);
                data[*len..*len + n].copy_from_slice(&part[..n]);
                *len += n;
                *cut |= n < part.len();
            }
        });
    }

    /// Forgets a partial event (the response or the connection is gone).
    pub fn reset(&mut self) {
        self.lines.reset();
        self.len = 0;
        self.has_data = false;
        self.cut = false;
        self.bom_matched = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(capacity: usize, pieces: &[&[u8]]) -> Vec<(String, bool)> {
        let mut s = SseScanner::with_capacity(capacity);
        let mut out = Vec::new();
        for p in pieces {
            s.feed(p, |d, cut| {
                out.push((String::from_utf8_lossy(d).into_owned(), cut))
            });
        }
        out
    }

    fn whole(v: &[&str]) -> Vec<(String, bool)> {
        v.iter().map(|e| (e.to_string(), false)).collect()
    }

    #[test]
    fn one_event_per_blank_line_with_its_data_lines_joined() {
        let body = b"data: a\n\ndata: b\ndata: c\n\nevent: x\ndata:d\n\n";
        assert_eq!(events(64, &[body]), whole(&["a", "b\nc", "d"]));
    }

    #[test]
    fn comments_other_fields_and_events_without_data_dispatch_nothing() {
        let body = b": keep-alive\n\nevent: ping\nid: 7\nretry: 10\n\ndata: x\n\n";
        assert_eq!(events(64, &[body]), whole(&["x"]));
    }

    #[test]
    fn an_event_split_anywhere_across_reads_is_the_same_event() {
        let body = b"data: {\"a\": 1}\r\n\r\ndata: [DONE]\r\n\r\n";
        for cut in 1..body.len() {
            assert_eq!(
                events(64, &[&body[..cut], &body[cut..]]),
                whole(&["{\"a\": 1}", "[DONE]"]),
                "split at {cut}"
            );
        }
    }

    #[test]
    fn an_empty_data_field_is_an_event_and_a_field_without_colon_is_a_name() {
        assert_eq!(events(64, &[b"data\n\ndata:\n\n"]), whole(&["", ""]));
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_not_dispatched() {
        assert_eq!(events(64, &[b"data: a\n\ndata: b\n"]), whole(&["a"]));
    }

    #[test]
    fn a_byte_order_mark_opening_the_stream_is_stripped_wherever_the_reads_split_it() {
        let body = b"\xEF\xBB\xBFdata: a\n\ndata: b\n\n";
        for cut in 0..body.len() {
            assert_eq!(
                events(64, &[&body[..cut], &body[cut..]]),
                whole(&["a", "b"]),
                "split at {cut}"
            );
        }
        // Only at the start; and bytes that begin like a mark but are not one are kept.
        assert_eq!(
            events(64, &[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]),
            whole(&["a"])
        );
        let mut s = SseScanner::with_capacity(64);
        let mut out = Vec::new();
        s.feed(b"\xEFdata: x\n\n", |d, _| out.push(d.to_vec()));
        assert!(out.is_empty(), "\\xEFdata is a field of another name");
        s.reset();
        s.feed(b"\xEF\xBB\xBFdata: y\n\n", |d, _| out.push(d.to_vec()));
        assert_eq!(
            out,
            vec![b"y".to_vec()],
            "each response may open with a mark"
        );
    }

    #[test]
    fn data_beyond_the_capacity_is_handed_out_cut() {
        assert_eq!(
            events(4, &[b"data: abcdef\n\ndata: ok\n\n"]),
            vec![("abcd".to_string(), true), ("ok".to_string(), false)]
        );
    }
}
