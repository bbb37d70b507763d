//! HTTP/1.1 (plain or TLS: the byte stream is the driver's) as a [`Protocol`]: one response per
//! request, in order, delimited by [`ResponseParser`] (`codec.rs`, which also builds requests).

mod codec;
pub mod unit;

pub use candor_engine::seam::progress::{ParseError, Progress};
pub use candor_wire::request_form::{build_request, has_header, USER_AGENT_LINE};
pub use codec::ResponseParser;

use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::Protocol;
use candor_engine::shared::Prepared;

impl Protocol for ResponseParser {
    #[inline]
    fn start(&mut self, request: &Prepared, index: usize) {
        if self.at_start() {
            self.set_head_request(request.head);
            self.select_checks(index);
        }
    }
    #[inline]
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError> {
        ResponseParser::feed(self, input, full)
    }
    fn finish_at_eof(&mut self) -> Option<u16> {
        ResponseParser::finish_at_eof(self)
    }
    fn reset(&mut self) {
        ResponseParser::reset(self)
    }
    #[inline]
    fn observer(&mut self) -> Option<&mut ResponseObserver> {
        Some(ResponseParser::observer(self))
    }
}

#[cfg(test)]
pub(crate) mod sim;
