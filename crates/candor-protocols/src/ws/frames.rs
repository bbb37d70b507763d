//! WebSocket frames (RFC 6455 section 5), both ways, without allocating: the client's frames,
//! always masked with a key the caller draws per frame, written into a buffer sized before the
//! run; the server's frames decoded as they arrive in reads cut anywhere, reassembling
//! fragmented messages (the first bytes of each kept for matching), answering nothing itself:
//! pings, pongs and closes are handed to the caller, as are the protocol errors that close
//! the connection. Text messages are checked to be UTF-8 as they arrive, across fragments and
//! cuts (RFC 6455 section 8.1: a client that meets invalid UTF-8 fails the connection, with
//! close code 1007), though only their first bytes are kept.

use thiserror::Error;

/// A frame's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    Continuation = 0x0,
    Text = 0x1,
    Binary = 0x2,
    Close = 0x8,
    Ping = 0x9,
    Pong = 0xA,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    fn is_control(self) -> bool {
        (self as u8) & 0x8 != 0
    }
}

/// The most a control frame may carry.
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// Bytes a client frame of `payload_len` takes on the wire (header, mask key, payload).
pub fn client_frame_len(payload_len: usize) -> usize {
    let length_bytes = match payload_len {
        0..=125 => 0,
        126..=65535 => 2,
        _ => 8,
    };
    2 + length_bytes + 4 + payload_len
}

/// Appends one final client frame of `payload`, masked with `mask`, to `out` (which allocates
/// nothing when it has [`client_frame_len`] bytes of room).
pub fn write_client_frame(out: &mut Vec<u8>, opcode: Opcode, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | opcode as u8);
    let len = payload.len();
    match len {
        0..=125 => out.push(0x80 | len as u8),
        126..=65535 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    for (i, b) in out[start..].iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// A close code the server may send (RFC 6455 section 7.4; 1004-1006 and 1015 are never sent).
pub fn close_code_is_valid(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// What the server's frames said, as they complete.
#[derive(Debug, PartialEq, Eq)]
pub enum WsEvent<'a> {
    /// A whole message (its last fragment arrived): its first bytes and its length.
    Message {
        binary: bool,
        prefix: &'a [u8],
        len: u64,
    },
    /// A ping: the caller answers with a pong carrying `payload`.
    Ping(&'a [u8]),
    Pong,
    /// The server closes (its code, when it gave one).
    Close(Option<u16>),
}

/// A frame the client must not accept; the connection is failed (class `protocol`).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FrameError {
    #[error("the server masked a frame")]
    MaskedByServer,
    #[error("a frame sets reserved bits no extension was agreed for")]
    ReservedBits,
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("a control frame carries more than 125 bytes")]
    ControlTooLong,
    #[error("a control frame is fragmented")]
    ControlFragmented,
    #[error("a continuation frame without a message to continue")]
    UnexpectedContinuation,
    #[error("a new message began before the last one ended")]
    InterleavedMessage,
    #[error("a frame's length is not in its shortest form, or over 2^63")]
    BadLength,
    #[error("a close frame with a one-byte payload")]
    CloseTooShort,
    #[error("close code {0} may not be sent")]
    BadCloseCode(u16),
    #[error("a message over {0} bytes")]
    MessageTooLarge(u64),
    #[error("a text message (or a close reason) is not valid UTF-8")]
    InvalidUtf8,
}

/// UTF-8 checked in pieces cut anywhere: the bytes of a character cut at a piece's end (at
/// most 3) are carried into the next piece. Allocates nothing.
#[derive(Debug, Default, Clone, Copy)]
struct Utf8Check {
    carry: [u8; 4],
    carry_len: usize,
}

impl Utf8Check {
    /// Checks the next piece of the text; `Err` as soon as it cannot be UTF-8 whatever follows.
    fn feed(&mut self, mut piece: &[u8]) -> Result<(), FrameError> {
        // A character cut at the last piece's end is finished first, a byte at a time.
        while self.carry_len > 0 {
            let Some((&b, rest)) = piece.split_first() else {
                return Ok(());
            };
            piece = rest;
            self.carry[self.carry_len] = b;
            self.carry_len += 1;
            match std::str::from_utf8(&self.carry[..self.carry_len]) {
                Ok(_) => self.carry_len = 0,
                Err(e) if e.error_len().is_some() => return Err(FrameError::InvalidUtf8),
                // Still a prefix of a character (a carry never reaches 4 without deciding).
                Err(_) => {}
            }
        }
        match std::str::from_utf8(piece) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_some() => Err(FrameError::InvalidUtf8),
            Err(e) => {
                let tail = &piece[e.valid_up_to()..];
                self.carry[..tail.len()].copy_from_slice(tail);
                self.carry_len = tail.len();
                Ok(())
            }
        }
    }

    /// The text ended: a character left cut is invalid. Ready for the next text.
    fn end(&mut self) -> Result<(), FrameError> {
        let cut = self.carry_len > 0;
        self.carry_len = 0;
        if cut {
            return Err(FrameError::InvalidUtf8);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    opcode: Opcode,
    fin: bool,
    remaining: u64,
}

/// Decodes the server's frames as their bytes arrive.
#[derive(Debug)]
pub struct FrameDecoder {
    head: [u8; 10],
    head_len: usize,
    /// The frame whose payload is arriving, once its header is read.
    frame: Option<Frame>,
    /// The data message in progress (its kind and bytes so far), across fragments.
    message: Option<(bool, u64)>,
    prefix: Box<[u8]>,
    prefix_len: usize,
    control: [u8; MAX_CONTROL_PAYLOAD],
    control_len: usize,
    max_message: u64,
    /// The text message in progress, checked as it arrives.
    utf8: Utf8Check,
}

impl FrameDecoder {
    /// Keeps the first `prefix_capacity` bytes of each message; a message over `max_message`
    /// bytes is a protocol error.
    pub fn new(prefix_capacity: usize, max_message: u64) -> FrameDecoder {
        FrameDecoder {
            head: [0; 10],
            head_len: 0,
            frame: None,
            message: None,
            prefix: vec![0; prefix_capacity].into_boxed_slice(),
            prefix_len: 0,
            control: [0; MAX_CONTROL_PAYLOAD],
            control_len: 0,
            max_message,
            utf8: Utf8Check::default(),
        }
    }

    /// Forgets everything partial (the connection is gone).
    pub fn reset(&mut self) {
        self.head_len = 0;
        self.frame = None;
        self.message = None;
        self.prefix_len = 0;
        self.control_len = 0;
        self.utf8 = Utf8Check::default();
    }

    /// Decodes all of `input`, calling `on` for each event it completes. After an error the
    /// connection must be closed (and the decoder reset).
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on: impl FnMut(WsEvent<'_>),
    ) -> Result<(), FrameError> {
        while !input.is_empty() || matches!(self.frame, Some(f) if f.remaining == 0) {
            let Some(mut frame) = self.frame else {
                let taken = self.read_header(input)?;
                input = &input[taken..];
                continue;
            };
            let n = (frame.remaining.min(input.len() as u64)) as usize;
            let (payload, rest) = input.split_at(n);
            input = rest;
            frame.remaining -= n as u64;
            if frame.opcode.is_control() {
                self.control[self.control_len..self.control_len + n].copy_from_slice(payload);
                self.control_len += n;
            } else {
                let room = self.prefix.len() - self.prefix_len;
                let keep = n.min(room);
                self.prefix[self.prefix_len..self.prefix_len + keep]
                    .copy_from_slice(&payload[..keep]);
                self.prefix_len += keep;
                if let Some((binary, len)) = &mut self.message {
                    *len += n as u64;
                    if !*binary {
                        self.utf8.feed(payload)?;
                    }
                }
            }
            self.frame = Some(frame);
            if frame.remaining == 0 {
                self.frame = None;
                self.complete(frame, &mut on)?;
            }
        }
        Ok(())
    }

    /// Takes header bytes from `input` (as many as the header needs); once the header is whole,
    /// checks it and starts its frame. Returns the bytes taken.
    fn read_header(&mut self, input: &[u8]) -> Result<usize, FrameError> {
        let mut taken = 0;
        let need = |head: &[u8], have: usize| -> usize {
            if have < 2 {
                return 2;
            }
            2 + match head[1] & 0x7F {
                126 => 2,
                127 => 8,
                _ => 0,
            }
        };
        while self.head_len < need(&self.head, self.head_len) {
            let Some(&b) = input.get(taken) else {
                return Ok(taken);
            };
            self.head[self.head_len] = b;
            self.head_len += 1;
            taken += 1;
        }
        let (b0, b1) = (self.head[0], self.head[1]);
        self.head_len = 0;
        if b1 & 0x80 != 0 {
            return Err(FrameError::MaskedByServer);
        }
        if b0 & 0x70 != 0 {
            return Err(FrameError::ReservedBits);
        }
        let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(FrameError::UnknownOpcode(b0 & 0x0F))?;
        let fin = b0 & 0x80 != 0;
        let len = match b1 & 0x7F {
            126 => {
                let n = u64::from(u16::from_be_bytes([self.head[2], self.head[3]]));
                if n < 126 {
                    return Err(FrameError::BadLength);
                }
                n
            }
            127 => {
                let mut b = [0; 8];
                b.copy_from_slice(&self.head[2..10]);
                let n = u64::from_be_bytes(b);
                if n >> 63 != 0 || n <= 65535 {
                    return Err(FrameError::BadLength);
                }
                n
            }
            n => u64::from(n),
        };
        if opcode.is_control() {
            if !fin {
                return Err(FrameError::ControlFragmented);
            }
            if len > MAX_CONTROL_PAYLOAD as u64 {
                return Err(FrameError::ControlTooLong);
            }
            self.control_len = 0;
        } else {
            match (opcode, self.message) {
                (Opcode::Continuation, None) => return Err(FrameError::UnexpectedContinuation),
                (Opcode::Continuation, Some(_)) => {}
                (_, Some(_)) => return Err(FrameError::InterleavedMessage),
                (kind, None) => {
                    self.message = Some((kind == Opcode::Binary, 0));
                    self.prefix_len = 0;
                }
            }
            let so_far = self.message.map_or(0, |(_, l)| l);
            if so_far.saturating_add(len) > self.max_message {
                return Err(FrameError::MessageTooLarge(self.max_message));
            }
        }
        self.frame = Some(Frame {
            opcode,
            fin,
            remaining: len,
        });
        Ok(taken)
    }

    /// A frame's payload is all in.
    fn complete(
        &mut self,
        frame: Frame,
        on: &mut impl FnMut(WsEvent<'_>),
    ) -> Result<(), FrameError> {
        match frame.opcode {
            Opcode::Ping => on(WsEvent::Ping(&self.control[..self.control_len])),
            Opcode::Pong => on(WsEvent::Pong),
            Opcode::Close => {
                let code = match self.control_len {
                    0 => None,
                    1 => return Err(FrameError::CloseTooShort),
                    _ => {
                        let code = u16::from_be_bytes([self.control[0], self.control[1]]);
                        if !close_code_is_valid(code) {
                            return Err(FrameError::BadCloseCode(code));
                        }
                        // Its reason, if any, is UTF-8 (RFC 6455 section 5.5.1).
                        if std::str::from_utf8(&self.control[2..self.control_len]).is_err() {
                            return Err(FrameError::InvalidUtf8);
                        }
                        Some(code)
                    }
                };
                on(WsEvent::Close(code));
            }
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                if frame.fin {
                    let (binary, len) = self.message.take().expect("a data frame has a message");
                    if !binary {
                        self.utf8.end()?;
                    }
                    on(WsEvent::Message {
                        binary,
                        prefix: &self.prefix[..self.prefix_len],
                        len,
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame (unmasked) as raw bytes.
    fn server_frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![first];
        match payload.len() {
            n @ 0..=125 => out.push(n as u8),
            n @ 126..=65535 => {
                out.push(126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        out
    }

    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Message(bool, Vec<u8>, u64),
        Ping(Vec<u8>),
        Pong,
        Close(Option<u16>),
    }

    fn decode_in_pieces(bytes: &[u8], piece: usize) -> Result<Vec<Seen>, FrameError> {
        let mut d = FrameDecoder::new(8, 1 << 20);
        let mut seen = Vec::new();
        for p in bytes.chunks(piece.max(1)) {
            d.feed(p, |e| {
                seen.push(match e {
                    WsEvent::Message {
                        binary,
                        prefix,
                        len,
                    } => Seen::Message(binary, prefix.to_vec(), len),
                    WsEvent::Ping(p) => Seen::Ping(p.to_vec()),
                    WsEvent::Pong => Seen::Pong,
                    WsEvent::Close(c) => Seen::Close(c),
                })
            })?;
        }
        Ok(seen)
    }

    #[test]
    fn client_frames_are_masked_and_their_lengths_take_the_shortest_form() {
        for len in [0usize, 5, 125, 126, 65535, 65536] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::with_capacity(client_frame_len(len));
            let cap = out.capacity();
            write_client_frame(&mut out, Opcode::Binary, &payload, [1, 2, 3, 4]);
            assert_eq!(out.len(), client_frame_len(len));
            assert_eq!(out.capacity(), cap, "no growth when the room was made");
            assert_eq!(out[0], 0x82);
            assert_eq!(out[1] & 0x80, 0x80, "masked");
            let header = client_frame_len(len) - len - 4;
            assert_eq!(&out[header..header + 4], &[1, 2, 3, 4]);
            let unmasked: Vec<u8> = out[header + 4..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ [1, 2, 3, 4][i % 4])
                .collect();
            assert_eq!(unmasked, payload);
        }
    }

    #[test]
    fn messages_fragments_and_control_frames_decode_across_any_cut() {
        let mut bytes = server_frame(0x81, b"hello");
        bytes.extend(server_frame(0x02, b"ab")); // binary, not final
        bytes.extend(server_frame(0x89, b"p1")); // a ping between fragments
        bytes.extend(server_frame(0x00, b"cdefghij")); // continuation
        bytes.extend(server_frame(0x80, b"k")); // final continuation
        bytes.extend(server_frame(0x8A, b""));
        bytes.extend(server_frame(0x81, &[b'x'; 300])); // a 16-bit length
        bytes.extend(server_frame(0x88, &1000u16.to_be_bytes()));
        let want = vec![
            Seen::Message(false, b"hello".to_vec(), 5),
            Seen::Ping(b"p1".to_vec()),
            Seen::Message(true, b"abcdefgh".to_vec(), 11),
            Seen::Pong,
            Seen::Message(false, b"xxxxxxxx".to_vec(), 300),
            Seen::Close(Some(1000)),
        ];
        for piece in [1, 2, 3, 7, bytes.len()] {
            assert_eq!(
                decode_in_pieces(&bytes, piece).unwrap(),
                want,
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn an_empty_message_and_a_close_without_code() {
        let mut bytes = server_frame(0x81, b"");
        bytes.extend(server_frame(0x88, b""));
        assert_eq!(
            decode_in_pieces(&bytes, 1).unwrap(),
            vec![Seen::Message(false, vec![], 0), Seen::Close(None)]
        );
    }

    #[test]
    fn every_rule_a_server_can_break_is_an_error() {
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (
                vec![0x81, 0x81, 0, 0, 0, 0, b'a'],
                FrameError::MaskedByServer,
            ),
            (server_frame(0xC1, b"a"), FrameError::ReservedBits),
            (server_frame(0x83, b"a"), FrameError::UnknownOpcode(3)),
            (server_frame(0x89, &[0; 126]), FrameError::ControlTooLong),
            (server_frame(0x09, b"a"), FrameError::ControlFragmented),
            (server_frame(0x80, b"a"), FrameError::UnexpectedContinuation),
            (
                [server_frame(0x01, b"a"), server_frame(0x81, b"b")].concat(),
                FrameError::InterleavedMessage,
            ),
            (vec![0x81, 126, 0, 5, 1, 2, 3, 4, 5], FrameError::BadLength),
            (
                vec![0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0],
                FrameError::BadLength,
            ),
            (server_frame(0x88, &[3]), FrameError::CloseTooShort),
            (
                server_frame(0x88, &1005u16.to_be_bytes()),
                FrameError::BadCloseCode(1005),
            ),
        ];
        for (bytes, err) in cases {
            assert_eq!(decode_in_pieces(&bytes, 1), Err(err.clone()), "{err}");
        }
        let mut small = FrameDecoder::new(4, 10);
        let big = [server_frame(0x01, &[0; 6]), server_frame(0x80, &[0; 6])].concat();
        assert_eq!(
            small.feed(&big, |_| {}),
            Err(FrameError::MessageTooLarge(10))
        );
    }

    /// RFC 6455 section 8.1: a text message must be UTF-8, judged whole, across fragments and
    /// reads cut inside a character; binary messages are not judged.
    #[test]
    fn a_text_message_must_be_utf8_across_fragments_and_cuts() {
        // "é" (2 bytes), "€" (3), "𝄞" (4), each split between two fragments.
        let good = [
            server_frame(0x01, &[b'a', 0xC3]),
            server_frame(0x00, &[0xA9, 0xE2, 0x82]),
            server_frame(0x00, &[0xAC, 0xF0, 0x9D]),
            server_frame(0x80, &[0x84, 0x9E, b'z']),
        ]
        .concat();
        for piece in 1..=good.len() {
            let seen = decode_in_pieces(&good, piece).unwrap();
            assert_eq!(seen.len(), 1, "pieces of {piece}");
            assert!(matches!(&seen[0], Seen::Message(false, _, 11)));
        }
        let bad: Vec<(&str, Vec<u8>)> = vec![
            ("not UTF-8 at all", server_frame(0x81, &[0xff, 0xfe, 0xfd])),
            ("an overlong '/'", server_frame(0x81, &[0xC0, 0xAF])),
            ("a surrogate", server_frame(0x81, &[0xED, 0xA0, 0x80])),
            (
                "a character cut at the end",
                server_frame(0x81, &[b'a', 0xE2, 0x82]),
            ),
            (
                "a bad byte in a later fragment",
                [
                    server_frame(0x01, &[0xE2]),
                    server_frame(0x80, &[0x82, b'x']),
                ]
                .concat(),
            ),
            ("a close reason", server_frame(0x88, &[0x03, 0xE8, 0xff])),
        ];
        for (what, bytes) in &bad {
            for piece in 1..=bytes.len() {
                assert_eq!(
                    decode_in_pieces(bytes, piece),
                    Err(FrameError::InvalidUtf8),
                    "{what}, pieces of {piece}"
                );
            }
        }
        // The same bytes as a binary message are no text: accepted.
        let binary = server_frame(0x82, &[0xff, 0xfe, 0xfd]);
        assert_eq!(
            decode_in_pieces(&binary, 1).unwrap(),
            vec![Seen::Message(true, vec![0xff, 0xfe, 0xfd], 3)]
        );
        // A text cut inside a character is forgotten on reset: the next connection starts clean.
        let mut d = FrameDecoder::new(8, 1 << 20);
        d.feed(&server_frame(0x01, &[0xE2]), |_| {}).unwrap();
        d.reset();
        let mut n = 0;
        d.feed(&server_frame(0x81, b"ok"), |_| n += 1).unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn close_codes_follow_the_rfc() {
        for ok in [1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999] {
            assert!(close_code_is_valid(ok), "{ok}");
        }
        for bad in [0, 999, 1004, 1005, 1006, 1015, 2000, 5000] {
            assert!(!close_code_is_valid(bad), "{bad}");
        }
    }
}
