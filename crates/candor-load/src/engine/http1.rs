//! HTTP/1.1 (plain or TLS: the byte stream is the driver's) as a [`Framing`]: one response per
//! request, in order, delimited by `crate::http1::ResponseParser`.

use crate::engine::transport::Framing;
use crate::http1::{ParseError, Progress, ResponseParser};
use crate::shared::Prepared;

impl Framing for ResponseParser {
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
}
