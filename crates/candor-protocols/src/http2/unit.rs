//! HTTP/2 as what a run speaks: streams per connection, gRPC as its flavour (a `grpc://` or
//! `grpcs://` target with `--call`), its name, its pre-run probe and its load threads.

use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError, Scheme};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{ProbeFailure, ProtocolUnit, ScheduleAt};
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_wire::target::Target;
use candor_workload::WorkloadError;
use std::sync::Arc;
use std::time::Duration;

/// The names this folder's protocol goes by in the results (see `ProtocolName`).
#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static H2C: ProtocolNaming = ProtocolNaming {
    id: "h2c",
    words: "HTTP/2, h2c",
    replies_are_messages: false,
};

#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static H2_TLS: ProtocolNaming = ProtocolNaming {
    id: "h2 (TLS)",
    words: "HTTP/2 over TLS, h2",
    replies_are_messages: false,
};

#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static GRPC: ProtocolNaming = ProtocolNaming {
    id: "grpc",
    words: "gRPC over HTTP/2, h2c",
    replies_are_messages: false,
};

#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static GRPC_TLS: ProtocolNaming = ProtocolNaming {
    id: "grpc (TLS)",
    words: "gRPC over HTTP/2 over TLS, h2",
    replies_are_messages: false,
};

/// HTTP/2 (`--h2` on `http://` by prior knowledge or `https://` by ALPN; `grpc://`, `grpcs://`):
/// up to `streams` concurrent streams per connection. Each load thread makes its own TLS
/// configuration, so that a server refusing `h2` is named by the thread that met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2 {
    pub streams: usize,
}

impl ProtocolUnit for Http2 {
    fn name(&self, target: &Target) -> ProtocolName {
        match (target.scheme, target.grpc) {
            (Scheme::Https, true) => ProtocolName::new(&GRPC_TLS),
            (_, true) => ProtocolName::new(&GRPC),
            (Scheme::Https, false) => ProtocolName::new(&H2_TLS),
            (_, false) => ProtocolName::new(&H2C),
        }
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
        match &config.grpc {
            Some(g) if g.calls.len() != config.requests.len().max(1) => Err(
                LoadConfigError::Invalid("a gRPC run needs one call per request".into()),
            ),
            _ => Ok(()),
        }
    }

    fn check_workload(&self, config: &LoadConfig) -> Result<(), WorkloadError> {
        if config.workload.script.is_some() && config.grpc.is_some() {
            return Err(WorkloadError::Invalid(
                "-s (a wrk script) makes HTTP requests; it does not apply to gRPC calls (--call)"
                    .into(),
            ));
        }
        Ok(())
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
