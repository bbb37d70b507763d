//! HTTP/3 as what a run speaks: `--h3` on an `https://` target, streams per connection, its
//! name, its checks (what it does not carry yet is refused in one line), its pre-run probe (one
//! QUIC handshake) and its load threads.

use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{ProbeFailure, ProtocolUnit, ScheduleAt};
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_wire::target::Target;
use std::sync::Arc;
use std::time::Duration;

/// The name HTTP/3 goes by in the results (see `ProtocolName`).
#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static H3: ProtocolNaming = ProtocolNaming {
    id: "h3",
    words: "HTTP/3 over QUIC, h3",
    replies_are_messages: false,
};

/// HTTP/3 over QUIC (`--h3` on `https://`): up to `streams` concurrent request streams per
/// connection. Each load thread makes its own QUIC client configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http3 {
    pub streams: usize,
}

impl ProtocolUnit for Http3 {
    fn name(&self, _target: &Target) -> ProtocolName {
        ProtocolName::new(&H3)
    }

    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.streams.max(1),
            timeout: TimeoutScope::Stream,
        }
    }

    fn record(&self, settings: &mut RunConfig) {
        settings.streams = Some(self.streams);
    }

    fn check(&self, config: &LoadConfig) -> Result<(), LoadConfigError> {
        let bad = |m: &str| Err(LoadConfigError::Invalid(m.into()));
        if config.target.grpc {
            return bad("gRPC runs over HTTP/2; drop --h3");
        }
        if !config.workload.targets.is_empty() {
            return bad("request lines with their own \"url\" are not supported over HTTP/3 yet");
        }
        Ok(())
    }

    fn transport(&self) -> candor_engine::seam::Transport {
        candor_engine::seam::Transport::Datagram
    }

    fn probe(&self, config: &LoadConfig, timeout: Duration) -> Result<(), ProbeFailure> {
        super::probe::probe(config, timeout)
    }

    fn run_thread(
        &self,
        setup: WorkerSetup,
        _tls: Option<Arc<rustls::ClientConfig>>,
        ticket: GateTicket,
        schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        super::run_worker(setup, self.streams, ticket, schedule_at)
    }
}
