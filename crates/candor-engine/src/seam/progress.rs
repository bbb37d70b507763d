//! What an in-order protocol made of the bytes the driver fed it: a response still coming, a
//! response done, or bytes that break the protocol.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum ParseError {
    #[error("malformed response head: {0}")]
    Head(&'static str),
    #[error("response head larger than the read buffer")]
    HeadTooLarge,
    #[error("bad Content-Length")]
    ContentLength,
    #[error("conflicting Content-Length values")]
    ContentLengthConflict,
    #[error("bad chunk framing")]
    Chunk,
}

/// What a call to `Protocol::feed` achieved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress {
    /// More bytes are needed; `consumed` bytes at the front of the input may be discarded.
    NeedMore { consumed: usize },
    /// A full response ended after `consumed` bytes.
    Done {
        consumed: usize,
        status: u16,
        close: bool,
    },
}
