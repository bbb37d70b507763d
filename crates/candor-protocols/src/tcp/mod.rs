//! Raw TCP as a [`Protocol`]: one response frame per request, in order, delimited by
//! [`TcpFramer`] (`framer.rs`, as `--framing` says); there is no status.

mod framer;
pub mod unit;

pub use framer::{parse_payload, unescape, Framing, TcpFramer};

use crate::http1::{ParseError, Progress};
use candor_engine::seam::Protocol;
use candor_engine::shared::Prepared;

impl Protocol for TcpFramer {
    #[inline]
    fn start(&mut self, _request: &Prepared, _index: usize) {}
    #[inline]
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError> {
        TcpFramer::feed(self, input, full)
    }
    fn finish_at_eof(&mut self) -> Option<u16> {
        // A frame is complete when its framing says so; a close completes nothing.
        None
    }
    fn reset(&mut self) {
        TcpFramer::reset(self)
    }
}

#[cfg(test)]
mod sim;
