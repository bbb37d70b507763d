//! The protocols candor speaks, one folder each: `http1/` (HTTP/1.1, plain or TLS), `tcp/` (raw
//! TCP with `--framing`), `http2/` (HTTP/2 with its streams, plain or TLS with ALPN `h2`). A
//! byte-stream protocol that answers each request with one response, in order, is one
//! [`Protocol`] implementation that the driver (`engine/driver.rs`) feeds the bytes it reads.

pub mod http1;
pub(crate) mod http2;
pub mod tcp;
pub mod ws;

use crate::shared::Prepared;
use http1::{ParseError, Progress};

/// How a byte-stream protocol delimits the response to each request.
pub trait Protocol {
    /// Before the first byte of the response to `request` is fed.
    fn start(&mut self, request: &Prepared);
    /// Consumes what it can of `input` (`full`: the read buffer is full, so a head that does
    /// not fit in it never will).
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError>;
    /// The connection closed: the status of a response that the close completes, if any.
    fn finish_at_eof(&mut self) -> Option<u16>;
    /// Forgets a partial response (the connection is gone).
    fn reset(&mut self);
    /// Checks responses against `table` (one entry per request); protocols without response
    /// checks ignore it.
    fn set_checks(&mut self, _table: std::sync::Arc<[crate::workload::check::ResponseChecks]>) {}
    /// The response about to be fed answers prepared request `request`: its checks apply.
    fn select_checks(&mut self, _request: usize) {}
    /// The check the last completed response failed besides its status (`None`: passed, or
    /// the protocol has none).
    fn failed_check(&self) -> Option<crate::engine::examples::ContentCheck> {
        None
    }
    /// Keeps the body's first bytes of responses whose status request `i` does not accept
    /// (`accept[i]`) or that have checks, for the report's first failed responses; protocols
    /// without bodies ignore it.
    fn keep_excerpts(&mut self, _accept: std::sync::Arc<[crate::status::StatusSet]>) {}
    /// The first bytes of the last completed response's body, when kept.
    fn excerpt(&self) -> Option<&[u8]> {
        None
    }
}
