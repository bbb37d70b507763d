//! HTTP/1.1 (plain or TLS: the byte stream is the driver's) as a [`Protocol`]: one response per
//! request, in order, delimited by [`ResponseParser`] (`codec.rs`, which also builds requests).

mod codec;

pub use codec::{build_request, has_header, ParseError, Progress, ResponseParser, USER_AGENT_LINE};

use crate::protocol::Protocol;
use crate::shared::Prepared;

impl Protocol for ResponseParser {
    #[inline]
    fn start(&mut self, request: &Prepared) {
        if self.at_start() {
            self.set_head_request(request.head);
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
    fn set_checks(&mut self, table: std::sync::Arc<[crate::workload::check::ResponseChecks]>) {
        ResponseParser::set_checks(self, table)
    }
    #[inline]
    fn select_checks(&mut self, request: usize) {
        if self.at_start() {
            ResponseParser::select_checks(self, request)
        }
    }
    #[inline]
    fn failed_check(&self) -> Option<crate::engine::examples::ContentCheck> {
        ResponseParser::failed_check(self)
    }
    fn keep_excerpts(&mut self, accept: std::sync::Arc<[crate::status::StatusSet]>) {
        ResponseParser::keep_excerpts(self, accept)
    }
    #[inline]
    fn excerpt(&self) -> Option<&[u8]> {
        ResponseParser::excerpt(self)
    }
}
