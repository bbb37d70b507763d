//! The protocols candor speaks, one folder each: `http1/` (HTTP/1.1, plain or TLS), `tcp/` (raw
//! TCP with `--framing`), `http2/` (HTTP/2 with its streams, plain or TLS with ALPN `h2`). A
//! byte-stream protocol that answers each request with one response, in order, is one
//! [`Protocol`] implementation that the driver (`engine/driver.rs`) feeds the bytes it reads.
//!
//! Which protocol a run speaks is decided here alone ([`ProtocolKind::of`]), and a load thread
//! is started for it here alone (`run_worker`): the run, the pre-run probe and the drivers ask
//! this module, so a new protocol is its own folder plus one line in each of those two matches.

pub mod http1;
pub(crate) mod http2;
pub mod observe;
pub mod tcp;
pub mod ws;

use crate::config::{LoadConfig, Scheme};
use crate::pool::GateTicket;
use crate::schedule::Schedule;
use crate::shared::{PhaseAcc, Prepared, WorkerError, WorkerSetup};
use crate::transport::tls::TlsError;
use http1::{ParseError, Progress};
use std::sync::Arc;

/// The protocol a run speaks to a target.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ProtocolKind {
    /// HTTP/1.1, plain (`http://`) or over TLS (`https://`).
    Http1,
    /// HTTP/2 (`--h2`), by prior knowledge in the clear or by ALPN `h2` over TLS.
    Http2,
    /// Raw TCP (`tcp://`), responses delimited by `--framing`.
    Tcp,
}

impl ProtocolKind {
    /// The protocol `config` asks for: its target's scheme and `--h2` (validated by
    /// `LoadConfig::validate`: `tcp://` has a framing and no `--h2`).
    pub fn of(config: &LoadConfig) -> ProtocolKind {
        match (config.target.scheme, config.http2) {
            (Scheme::Tcp, _) => ProtocolKind::Tcp,
            (_, true) => ProtocolKind::Http2,
            (_, false) => ProtocolKind::Http1,
        }
    }

    /// What TLS offers by ALPN for this protocol over `https://`.
    pub fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            ProtocolKind::Http1 => &[b"http/1.1"],
            ProtocolKind::Http2 => &[b"h2"],
            ProtocolKind::Tcp => &[],
        }
    }

    /// The TLS client configuration a load thread of this protocol is handed (made once per
    /// target, shared by its threads): over `https://` for HTTP/1.1. HTTP/2 makes its own in
    /// its thread, so that a server refusing `h2` is named by the thread that met it.
    pub(crate) fn thread_tls(
        self,
        config: &LoadConfig,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        match (self, config.target.scheme) {
            (ProtocolKind::Http1, Scheme::Https) => Ok(Some(crate::transport::tls::client_config(
                &config.tls,
                self.alpn(),
            )?)),
            _ => Ok(None),
        }
    }
}

/// Runs one load thread of protocol `kind` (see `engine::driver::run_worker`).
pub(crate) fn run_worker(
    kind: ProtocolKind,
    setup: WorkerSetup,
    tls: Option<Arc<rustls::ClientConfig>>,
    ticket: GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<Schedule>, WorkerError>,
) -> Result<[PhaseAcc; 2], WorkerError> {
    use crate::engine::driver;
    match kind {
        ProtocolKind::Http1 => driver::run_worker(setup, tls, ticket, schedule_at, || {
            http1::ResponseParser::new(false)
        }),
        ProtocolKind::Tcp => {
            let framing = setup
                .config
                .framing
                .clone()
                .ok_or(WorkerError::TcpNeedsFraming)?;
            driver::run_worker(setup, tls, ticket, schedule_at, move || {
                tcp::TcpFramer::new(framing.clone())
            })
        }
        ProtocolKind::Http2 => http2::run_worker(setup, ticket, |start_ns| {
            schedule_at(start_ns).map_err(|e| e.to_string())
        })
        .map_err(WorkerError::Http2),
    }
}

/// How a byte-stream protocol delimits the response to each request.
pub trait Protocol {
    /// Before the first byte of the response to `request` (prepared request `index`) is fed.
    fn start(&mut self, request: &Prepared, index: usize);
    /// Consumes what it can of `input` (`full`: the read buffer is full, so a head that does
    /// not fit in it never will).
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError>;
    /// The connection closed: the status of a response that the close completes, if any.
    fn finish_at_eof(&mut self) -> Option<u16>;
    /// Forgets a partial response (the connection is gone).
    fn reset(&mut self);
    /// The observer of this protocol's responses (status, headers, body), for protocols that
    /// have them (`observe.rs`); `None` for those that do not (raw TCP).
    fn observer(&mut self) -> Option<&mut observe::ResponseObserver> {
        None
    }
}
