//! gRPC's length-prefixed messages: the 5-byte prefix (compressed flag, big-endian length)
//! written in front of an encoded message, and a sans-IO decoder that counts the messages of a
//! response's DATA frames as they arrive, without buffering or allocating.

use thiserror::Error;

/// The prefix's length: one flag byte and four length bytes.
pub const PREFIX_LEN: usize = 5;

/// gRPC's default limit on a received message (4 MiB), which the decoder also applies unless
/// told otherwise.
pub const DEFAULT_MAX_MESSAGE: u32 = 4 * 1024 * 1024;

/// The prefix of a message of `len` bytes.
pub fn prefix(compressed: bool, len: u32) -> [u8; PREFIX_LEN] {
    let [a, b, c, d] = len.to_be_bytes();
    [u8::from(compressed), a, b, c, d]
}

/// Appends one uncompressed message to `out`: reserves the prefix, lets `encode` append the
/// message, then writes its length. `out` is the caller's, reused across requests.
pub fn append_framed<E>(
    out: &mut Vec<u8>,
    encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), FramedError<E>> {
    let start = out.len();
    out.extend_from_slice(&[0; PREFIX_LEN]);
    if let Err(error) = encode(out) {
        out.truncate(start);
        return Err(FramedError::Encode(error));
    }
    let len = out.len() - start - PREFIX_LEN;
    let Ok(len32) = u32::try_from(len) else {
        out.truncate(start);
        return Err(FramedError::TooLong(len));
    };
    out[start..start + PREFIX_LEN].copy_from_slice(&prefix(false, len32));
    Ok(())
}

/// Why a message could not be framed.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FramedError<E> {
    #[error("{0}")]
    Encode(E),
    #[error("a message of {0} bytes is longer than gRPC's 4-byte length allows")]
    TooLong(usize),
}

/// What a response stream's bytes held that is not a well-formed sequence of messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum MessageStreamError {
    #[error("gRPC message with compressed flag {0} (only 0 and 1 exist)")]
    BadFlag(u8),
    #[error("gRPC message of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge { len: u32, max: u32 },
    #[error("gRPC response ended inside a message ({missing} bytes missing)")]
    Truncated { missing: u64 },
}

/// What one `feed` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fed {
    /// Messages whose last byte was in this chunk.
    pub completed: u32,
    /// The stream's first message was completed in this chunk: the moment a server-streaming
    /// call's time to first message is taken.
    pub first_completed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Prefix { have: u8, bytes: [u8; PREFIX_LEN] },
    Body { remaining: u32 },
}

/// Counts the messages of one response stream, fed its DATA bytes in any chunking.
#[derive(Debug, Clone)]
pub struct MessageCounter {
    state: State,
    messages: u64,
    compressed: u64,
    max_message: u32,
}

impl Default for MessageCounter {
    fn default() -> Self {
        MessageCounter::new(DEFAULT_MAX_MESSAGE)
    }
}

impl MessageCounter {
    pub fn new(max_message: u32) -> MessageCounter {
        MessageCounter {
            state: State::Prefix {
                have: 0,
                bytes: [0; PREFIX_LEN],
            },
            messages: 0,
            compressed: 0,
            max_message,
        }
    }

    /// Ready for the next response, keeping the limit.
    pub fn reset(&mut self) {
        *self = MessageCounter::new(self.max_message);
    }

    /// Messages completed so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Of those, the ones the server flagged compressed.
    pub fn compressed(&self) -> u64 {
        self.compressed
    }

    /// Takes the next bytes of the response body.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Fed, MessageStreamError> {
        let mut fed = Fed::default();
        while !data.is_empty() {
            match &mut self.state {
                State::Prefix { have, bytes } => {
                    let take = (PREFIX_LEN - usize::from(*have)).min(data.len());
                    let at = usize::from(*have);
                    bytes[at..at + take].copy_from_slice(&data[..take]);
                    *have += take as u8;
                    data = &data[take..];
                    if usize::from(*have) < PREFIX_LEN {
                        continue;
                    }
                    let flag = bytes[0];
                    let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
                    if flag > 1 {
                        return Err(MessageStreamError::BadFlag(flag));
                    }
                    if len > self.max_message {
                        return Err(MessageStreamError::TooLarge {
                            len,
                            max: self.max_message,
                        });
                    }
                    self.compressed += u64::from(flag);
                    if len == 0 {
                        self.complete(&mut fed);
                    } else {
                        self.state = State::Body { remaining: len };
                    }
                }
                State::Body { remaining } => {
                    let take = (*remaining as usize).min(data.len());
                    *remaining -= take as u32;
                    data = &data[take..];
                    if *remaining == 0 {
                        self.complete(&mut fed);
                    }
                }
            }
        }
        Ok(fed)
    }

    fn complete(&mut self, fed: &mut Fed) {
        self.messages += 1;
        fed.completed += 1;
        fed.first_completed |= self.messages == 1;
        self.state = State::Prefix {
            have: 0,
            bytes: [0; PREFIX_LEN],
        };
    }

    /// The response's end: the number of messages, or the bytes a cut-off message lacked.
    pub fn finish(&self) -> Result<u64, MessageStreamError> {
        match self.state {
            State::Prefix { have: 0, .. } => Ok(self.messages),
            State::Prefix { have, .. } => Err(MessageStreamError::Truncated {
                missing: (PREFIX_LEN - usize::from(have)) as u64,
            }),
            State::Body { remaining } => Err(MessageStreamError::Truncated {
                missing: u64::from(remaining),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for body in bodies {
            append_framed::<()>(&mut out, |o| {
                o.extend_from_slice(body);
                Ok(())
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn framing_writes_flag_and_big_endian_length() {
        assert_eq!(prefix(false, 0x0102_0304), [0, 1, 2, 3, 4]);
        assert_eq!(prefix(true, 7), [1, 0, 0, 0, 7]);
        let out = stream(&[b"abc", b""]);
        assert_eq!(out, b"\0\0\0\0\x03abc\0\0\0\0\0");
    }

    #[test]
    fn a_failed_encode_leaves_the_buffer_as_it_was() {
        let mut out = b"keep".to_vec();
        let result = append_framed(&mut out, |o| {
            o.extend_from_slice(b"partial");
            Err("bad")
        });
        assert_eq!(result, Err(FramedError::Encode("bad")));
        assert_eq!(out, b"keep");
    }

    #[test]
    fn messages_are_counted_in_any_chunking() {
        let bytes = stream(&[b"hello", b"", &[7u8; 300], b"x"]);
        for chunk in 1..=bytes.len() {
            let mut decoder = MessageCounter::default();
            let mut completed = 0;
            let mut first_at = None;
            for (i, piece) in bytes.chunks(chunk).enumerate() {
                let fed = decoder.feed(piece).unwrap();
                completed += fed.completed;
                if fed.first_completed {
                    assert_eq!(first_at, None, "the first message completes once");
                    first_at = Some(i);
                }
            }
            assert_eq!(completed, 4);
            assert_eq!(decoder.finish(), Ok(4));
            // The first message ends at byte 10: in the chunk holding byte index 9.
            assert_eq!(first_at, Some(9 / chunk), "chunk size {chunk}");
        }
    }

    #[test]
    fn a_cut_off_response_reports_the_missing_bytes() {
        let bytes = stream(&[b"hello"]);
        let mut decoder = MessageCounter::default();
        decoder.feed(&bytes[..7]).unwrap();
        assert_eq!(
            decoder.finish(),
            Err(MessageStreamError::Truncated { missing: 3 })
        );
        let mut decoder = MessageCounter::default();
        decoder.feed(&bytes[..2]).unwrap();
        assert_eq!(
            decoder.finish(),
            Err(MessageStreamError::Truncated { missing: 3 })
        );
        assert_eq!(MessageCounter::default().finish(), Ok(0));
    }

    #[test]
    fn bad_flags_and_oversized_messages_are_errors() {
        let mut decoder = MessageCounter::default();
        assert_eq!(
            decoder.feed(&[2, 0, 0, 0, 0]),
            Err(MessageStreamError::BadFlag(2))
        );
        let mut decoder = MessageCounter::new(10);
        assert_eq!(
            decoder.feed(&prefix(false, 11)),
            Err(MessageStreamError::TooLarge { len: 11, max: 10 })
        );
        let mut decoder = MessageCounter::default();
        decoder.feed(&[1, 0, 0, 0, 1, 9]).unwrap();
        assert_eq!((decoder.messages(), decoder.compressed()), (1, 1));
        decoder.reset();
        assert_eq!(decoder.messages(), 0);
    }
}
