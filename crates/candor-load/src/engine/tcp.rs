//! Raw TCP as a [`Framing`]: one response frame per request, in order, delimited by
//! `crate::tcp::TcpFramer` (`--framing`); there is no status.

use crate::engine::transport::Framing;
use crate::http1::{ParseError, Progress};
use crate::shared::Prepared;
use crate::tcp::TcpFramer;

impl Framing for TcpFramer {
    #[inline]
    fn start(&mut self, _request: &Prepared) {}
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
