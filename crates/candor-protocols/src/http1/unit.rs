//! HTTP/1.1 as what a run speaks: its pipeline depth, its name, its TLS and its load threads.

use super::ResponseParser;
use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError, Scheme};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{ProbeFailure, ProtocolUnit, ScheduleAt};
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_engine::transport::tls::{self, TlsError};
use candor_wire::target::Target;
use std::sync::Arc;
use std::time::Duration;

/// The names this folder's protocol goes by in the results (see `ProtocolName`).
#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static HTTP1: ProtocolNaming = ProtocolNaming {
    id: "http/1.1",
    words: "HTTP/1.1",
    replies_are_messages: false,
};

#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static HTTP1_TLS: ProtocolNaming = ProtocolNaming {
    id: "http/1.1 (TLS)",
    words: "HTTP/1.1 over TLS",
    replies_are_messages: false,
};

/// What TLS offers by ALPN for HTTP/1.1.
pub const ALPN: &[&[u8]] = &[b"http/1.1"];

/// HTTP/1.1 (`http://`, `https://`), `pipeline` requests in flight per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http1 {
    pub pipeline: usize,
}

impl ProtocolUnit for Http1 {
    fn name(&self, target: &Target) -> ProtocolName {
        match target.scheme {
            Scheme::Https => ProtocolName::new(&HTTP1_TLS),
            _ => ProtocolName::new(&HTTP1),
        }
    }

    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.pipeline,
            timeout: TimeoutScope::Connection,
        }
    }

    fn record(&self, settings: &mut RunConfig) {
        settings.pipeline = self.pipeline;
    }

    fn check(&self, _config: &LoadConfig) -> Result<(), LoadConfigError> {
        Ok(())
    }

    fn thread_tls(
        &self,
        config: &LoadConfig,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        tls::shared_client_config(config, ALPN)
    }

    fn probe(&self, config: &LoadConfig, timeout: Duration) -> Result<(), ProbeFailure> {
        Ok(tls::probe_handshake(config, ALPN, timeout)?)
    }

    fn run_thread(
        &self,
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        ticket: GateTicket,
        schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        candor_engine::driver::run_worker(setup, tls, ticket, schedule_at, || {
            ResponseParser::new(false)
        })
    }
}
