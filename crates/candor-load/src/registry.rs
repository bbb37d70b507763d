//! The registry of protocols: which protocol a run speaks ([`ProtocolKind::of`]) and how a load
//! thread is started for it ([`run_worker`]). The run and the pre-run probe ask this module alone.

use candor_engine::config::{LoadConfig, Scheme};
use candor_engine::pool::GateTicket;
use candor_engine::schedule::Schedule;
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_engine::transport::tls::TlsError;
use candor_protocols::{http1, http2, tcp, ws};
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
    /// WebSocket (`ws://`, `wss://`): messages after an HTTP/1.1 upgrade.
    WebSocket,
}

impl ProtocolKind {
    /// The protocol `config` asks for: its target's scheme and `--h2` (validated by
    /// `LoadConfig::validate`: `tcp://` has a framing and no `--h2`).
    pub fn of(config: &LoadConfig) -> ProtocolKind {
        match (config.target.scheme, config.http2) {
            (Scheme::Tcp, _) => ProtocolKind::Tcp,
            (Scheme::Ws | Scheme::Wss, _) => ProtocolKind::WebSocket,
            (_, true) => ProtocolKind::Http2,
            (_, false) => ProtocolKind::Http1,
        }
    }

    /// What TLS offers by ALPN for this protocol over `https://`.
    pub fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            ProtocolKind::Http1 | ProtocolKind::WebSocket => &[b"http/1.1"],
            ProtocolKind::Http2 => &[b"h2"],
            ProtocolKind::Tcp => &[],
        }
    }

    /// The TLS client configuration a load thread of this protocol is handed (made once per
    /// target, shared by its threads): over `https://` for HTTP/1.1, `wss://` for WebSocket. HTTP/2 makes its own in
    /// its thread, so that a server refusing `h2` is named by the thread that met it.
    pub fn thread_tls(
        self,
        config: &LoadConfig,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        match (self, config.target.scheme) {
            (ProtocolKind::Http1, Scheme::Https) | (ProtocolKind::WebSocket, Scheme::Wss) => {
                Ok(Some(candor_engine::transport::tls::client_config(
                    &config.tls,
                    self.alpn(),
                )?))
            }
            _ => Ok(None),
        }
    }
}

/// Runs one load thread of protocol `kind` on the one driver (see `engine::driver::run_worker`).
pub fn run_worker(
    kind: ProtocolKind,
    setup: WorkerSetup,
    tls: Option<Arc<rustls::ClientConfig>>,
    ticket: GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<Schedule>, WorkerError>,
) -> Result<[PhaseAcc; 2], WorkerError> {
    use candor_engine::driver;
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
        ProtocolKind::Http2 => http2::run_worker(setup, ticket, schedule_at),
        ProtocolKind::WebSocket => ws::run_worker(setup, tls, ticket, schedule_at),
    }
}
