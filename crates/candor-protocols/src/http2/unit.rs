//! HTTP/2 as what a run speaks: streams per connection, gRPC as its flavour (a `grpc://` or
//! `grpcs://` target with `--call`), its name, its pre-run probe and its load threads.

use super::calls::GrpcConfig;
use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError, Scheme};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{BodyForm, ProbeFailure, ProtocolUnit, ScheduleAt};
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
/// A gRPC target's calls ride along (`grpc`).
#[derive(Debug, Clone)]
pub struct Http2 {
    pub streams: usize,
    /// A gRPC run's calls (`grpc://`, `grpcs://` with `--call`).
    pub grpc: Option<Arc<GrpcConfig>>,
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
        if let Some(g) = &self.grpc {
            // The codes --check-status accepts, and the calls.
            settings.check_status = Some(g.accept.to_string());
            settings.grpc_call = Some(g.call.clone());
        }
    }

    fn body_form(&self, index: usize) -> BodyForm {
        match &self.grpc {
            Some(g) => g.body_form(index),
            None => BodyForm::Template,
        }
    }

    fn check(&self, config: &LoadConfig) -> Result<(), LoadConfigError> {
        if config.target.grpc != self.grpc.is_some() {
            return Err(LoadConfigError::Invalid(
                "a gRPC run needs a grpc:// or grpcs:// target and --call, both or neither".into(),
            ));
        }
        match &self.grpc {
            Some(g) if g.calls.len() != config.requests.len().max(1) => Err(
                LoadConfigError::Invalid("a gRPC run needs one call per request".into()),
            ),
            _ => Ok(()),
        }
    }

    fn check_workload(&self, config: &LoadConfig) -> Result<(), WorkloadError> {
        if config.workload.script.is_some() && self.grpc.is_some() {
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
        super::run_worker(
            setup,
            self.streams,
            self.grpc.as_deref(),
            ticket,
            schedule_at,
        )
    }
}
