//! HTTP/3 frames (RFC 9114 §7) as this client writes and reads them: QUIC variable-length
//! integers, a request's HEADERS and DATA, the control stream's SETTINGS, and a reader that
//! walks a stream's frames as its bytes arrive without keeping more than a frame header and a
//! field section (bounded: a peer that lies in a frame length or sends endless frames cannot
//! grow memory).

pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x00;
pub const PUSH_STREAM: u64 = 0x01;
pub const QPACK_ENCODER_STREAM: u64 = 0x02;
pub const QPACK_DECODER_STREAM: u64 = 0x03;

/// SETTINGS identifiers this client sends.
const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
const QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// The largest field section (response head or trailers) this client accepts, and says so in
/// SETTINGS_MAX_FIELD_SECTION_SIZE.
pub const MAX_FIELD_SECTION: usize = 64 * 1024;
/// The largest control-stream frame kept whole (SETTINGS, GOAWAY); others are skipped.
pub const MAX_CONTROL_FRAME: usize = 4 * 1024;

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// A variable-length integer at the front of `b`, and its length; `None` when `b` ends first.
pub fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = (first & 0x3f) as u64;
    for &x in &bytes[1..] {
        v = (v << 8) | x as u64;
    }
    Some((v, len))
}

/// A frame's type and length header.
pub fn put_frame_header(out: &mut Vec<u8>, kind: u64, len: usize) {
    put_varint(out, kind);
    put_varint(out, len as u64);
}

/// What this client opens its control stream with: the stream type, then SETTINGS saying its
/// dynamic table holds nothing and no stream may block on it.
pub fn put_control_preface(out: &mut Vec<u8>) {
    put_varint(out, CONTROL_STREAM);
    let mut body = Vec::with_capacity(16);
    for (id, v) in [
        (QPACK_MAX_TABLE_CAPACITY, 0),
        (QPACK_BLOCKED_STREAMS, 0),
        (MAX_FIELD_SECTION_SIZE, MAX_FIELD_SECTION as u64),
    ] {
        put_varint(&mut body, id);
        put_varint(&mut body, v);
    }
    put_frame_header(out, SETTINGS, body.len());
    out.extend_from_slice(&body);
}

/// A frame, or part of one, as [`FrameReader`] hands it over.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame of `kind` kept whole (its payload; HEADERS, or a control frame) has ended.
    Whole { kind: u64, payload: &'a [u8] },
    /// The next bytes of a DATA frame's payload, and whether they end it (`--stream chunks`
    /// reads a DATA frame as one chunk, as HTTP/2 does).
    Data(&'a [u8], bool),
}

/// Why a stream's frames cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A kept frame longer than its bound (H3_EXCESSIVE_LOAD).
    TooLarge,
    /// A frame header that is not a pair of integers that fit.
    Malformed,
}

/// Walks one stream's frames as its bytes arrive: DATA payloads are handed over as they come,
/// frames of the kinds `keep` says are kept whole up to `bound` bytes, any other frame is
/// skipped without keeping it. Memory: a frame header and at most `bound` bytes.
pub struct FrameReader {
    header: [u8; 16],
    header_len: usize,
    kind: u64,
    /// Payload bytes still to come of the current frame (`None`: between frames).
    left: Option<u64>,
    kept: Vec<u8>,
    bound: usize,
}

impl FrameReader {
    pub fn new(bound: usize) -> FrameReader {
        FrameReader {
            header: [0; 16],
            header_len: 0,
            kind: 0,
            left: None,
            kept: Vec::new(),
            bound,
        }
    }

    /// Forgets a partial frame (the stream is done with).
    pub fn reset(&mut self) {
        self.header_len = 0;
        self.left = None;
        self.kept.clear();
    }

    /// Whether the reader stands between frames (a stream may end here).
    pub fn between_frames(&self) -> bool {
        self.left.is_none() && self.header_len == 0
    }

    /// Feeds `input`, handing `each` every piece it completes; `keep(kind)` says which frames
    /// are kept whole. Stops at the first error of either.
    pub fn feed<E: From<FrameError>>(
        &mut self,
        mut input: &[u8],
        keep: impl Fn(u64) -> bool,
        mut each: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        while !input.is_empty() {
            let Some(left) = self.left else {
                let take = (self.header.len() - self.header_len).min(input.len());
                self.header[self.header_len..self.header_len + take]
                    .copy_from_slice(&input[..take]);
                let have = &self.header[..self.header_len + take];
                let Some((kind, a)) = get_varint(have) else {
                    self.header_len += take;
                    input = &input[take..];
                    continue;
                };
                let Some((len, b)) = get_varint(&have[a..]) else {
                    if self.header_len + take == self.header.len() {
                        return Err(FrameError::Malformed.into());
                    }
                    self.header_len += take;
                    input = &input[take..];
                    continue;
                };
                // Of the bytes just copied, those past the header belong to the payload.
                let used = a + b - self.header_len;
                input = &input[used..];
                self.header_len = 0;
                self.kind = kind;
                if keep(kind) && len > self.bound as u64 {
                    return Err(FrameError::TooLarge.into());
                }
                self.kept.clear();
                self.left = Some(len);
                if len == 0 {
                    self.end_frame(&keep, &mut each)?;
                }
                continue;
            };
            let take = (left.min(input.len() as u64)) as usize;
            let (now, rest) = input.split_at(take);
            input = rest;
            let left = left - take as u64;
            self.left = Some(left);
            if self.kind == DATA {
                each(Piece::Data(now, left == 0))?;
            } else if keep(self.kind) {
                self.kept.extend_from_slice(now);
            }
            if left == 0 {
                self.end_frame(&keep, &mut each)?;
            }
        }
        Ok(())
    }

    fn end_frame<E>(
        &mut self,
        keep: &impl Fn(u64) -> bool,
        each: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.left = None;
        if self.kind != DATA && keep(self.kind) {
            return each(Piece::Whole {
                kind: self.kind,
                payload: &self.kept,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(r: &mut FrameReader, input: &[u8]) -> Result<Vec<String>, FrameError> {
        let mut got = Vec::new();
        r.feed(
            input,
            |k| k != DATA && k != 0x21,
            |p| {
                got.push(match p {
                    Piece::Whole { kind, payload } => format!("{kind}:{payload:?}"),
                    Piece::Data(d, ends) => format!("data:{d:?}{}", if ends { "." } else { "" }),
                });
                Ok::<(), FrameError>(())
            },
        )?;
        Ok(got)
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [
            0u64,
            63,
            64,
            16383,
            16384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(get_varint(&out), Some((v, out.len())));
            assert_eq!(get_varint(&out[..out.len() - 1]), None);
        }
    }

    #[test]
    fn frames_split_anywhere_read_the_same_and_unknown_frames_are_skipped() {
        let mut bytes = Vec::new();
        put_frame_header(&mut bytes, HEADERS, 3);
        bytes.extend_from_slice(&[1, 2, 3]);
        put_frame_header(&mut bytes, 0x21, 4);
        bytes.extend_from_slice(&[9; 4]);
        put_frame_header(&mut bytes, DATA, 2);
        bytes.extend_from_slice(&[7, 8]);
        let whole = pieces(&mut FrameReader::new(64), &bytes).unwrap();
        assert_eq!(whole, ["1:[1, 2, 3]", "data:[7, 8]."]);
        for cut in 0..bytes.len() {
            let mut r = FrameReader::new(64);
            let mut got = pieces(&mut r, &bytes[..cut]).unwrap();
            got.extend(pieces(&mut r, &bytes[cut..]).unwrap());
            let data: Vec<u8> = got
                .iter()
                .filter_map(|p| p.strip_prefix("data:"))
                .flat_map(|d| {
                    d.trim_matches(['[', ']', '.'])
                        .split(", ")
                        .map(|x| x.parse::<u8>().unwrap())
                })
                .collect();
            assert_eq!(got[0], "1:[1, 2, 3]", "cut at {cut}");
            assert_eq!(data, [7, 8], "cut at {cut}");
            // Only the DATA frame's last bytes say that they end it.
            let ends: Vec<bool> = got
                .iter()
                .filter(|p| p.starts_with("data:"))
                .map(|p| p.ends_with('.'))
                .collect();
            assert_eq!(ends.last(), Some(&true), "cut at {cut}");
            assert!(ends[..ends.len() - 1].iter().all(|e| !e), "cut at {cut}");
            assert!(r.between_frames());
        }
    }

    #[test]
    fn a_kept_frame_over_its_bound_is_refused_before_any_byte_is_kept() {
        let mut bytes = Vec::new();
        put_frame_header(&mut bytes, HEADERS, 1 << 40);
        assert_eq!(
            pieces(&mut FrameReader::new(64), &bytes),
            Err(FrameError::TooLarge)
        );
        // An endless unknown frame is skipped without growing anything.
        let mut r = FrameReader::new(64);
        let mut bytes = Vec::new();
        put_frame_header(&mut bytes, 0x21, 1 << 40);
        assert!(pieces(&mut r, &bytes).unwrap().is_empty());
        for _ in 0..1000 {
            assert!(pieces(&mut r, &[0u8; 1024]).unwrap().is_empty());
        }
        assert!(r.kept.capacity() == 0);
    }

    #[test]
    fn the_control_preface_says_a_zero_dynamic_table() {
        let mut out = Vec::new();
        put_control_preface(&mut out);
        assert_eq!(out[0], 0);
        assert_eq!(out[1], SETTINGS as u8);
        assert_eq!(&out[3..7], &[1, 0, 7, 0]);
    }
}
