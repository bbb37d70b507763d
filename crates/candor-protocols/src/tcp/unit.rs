//! Raw TCP as what a run speaks: the payload every request sends, how a response is delimited,
//! and the HTTP settings that have no meaning here, refused rather than dropped.

use super::{Framing, TcpFramer};
use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{ProtocolUnit, RequestForm, ScheduleAt};
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_wire::target::Target;
use candor_workload::WorkloadError;
use std::sync::Arc;

/// The names this folder's protocol goes by in the results (see `ProtocolName`).
#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static TCP: ProtocolNaming = ProtocolNaming {
    id: "tcp",
    words: "raw TCP",
    replies_are_messages: false,
};

/// Raw TCP (`tcp://`): `payload` for every request, `pipeline` requests in flight per
/// connection, each answered by one frame as `framing` delimits it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tcp {
    pub pipeline: usize,
    pub payload: Vec<u8>,
    pub framing: Framing,
}

impl ProtocolUnit for Tcp {
    fn name(&self, _target: &Target) -> ProtocolName {
        ProtocolName::new(&TCP)
    }

    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.pipeline,
            timeout: TimeoutScope::Connection,
        }
    }

    fn request_form(&self) -> RequestForm<'_> {
        RequestForm::Payload(&self.payload)
    }

    fn record(&self, settings: &mut RunConfig) {
        settings.pipeline = self.pipeline;
    }

    fn check(&self, config: &LoadConfig) -> Result<(), LoadConfigError> {
        let bad = |m: String| Err(LoadConfigError::Invalid(m));
        if self.payload.is_empty() {
            return bad("tcp:// needs a request payload: --payload or --payload-file".into());
        }
        if !config.requests.is_empty() {
            return bad("--h2 and --requests apply to HTTP targets, not tcp://".into());
        }
        if config.target.credentials.is_some() {
            return bad(
                "a tcp:// URL cannot carry user:password@ (raw TCP has no authorization header)"
                    .into(),
            );
        }
        // HTTP's flags would be ignored here; a run that silently drops what was asked for is
        // not the run that was asked for.
        let http_only = [
            (!config.headers.is_empty(), "-H/--header"),
            (config.method != "GET", "-m/--method"),
            (!config.body.is_empty(), "--body/--body-file"),
            (config.workload.checks.body.is_some(), "--check-body"),
            (!config.workload.checks.headers.is_empty(), "--check-header"),
            (
                config.tls.insecure || config.tls.ca_file.is_some(),
                "-k/--insecure and --ca",
            ),
        ];
        if let Some((_, flag)) = http_only.iter().find(|(given, _)| *given) {
            return bad(format!(
                "{flag} applies to http:// and https:// targets; a tcp:// request is the bytes of \
                 --payload or --payload-file alone"
            ));
        }
        match &self.framing {
            Framing::ExpectBytes(0) => bad("--expect-bytes must be positive".into()),
            Framing::Delimiter(d) if d.is_empty() => {
                bad("--expect-delimiter must not be empty".into())
            }
            Framing::LengthPrefix { width } if ![1, 2, 4, 8].contains(width) => bad(format!(
                "length prefix width must be 1, 2, 4 or 8 bytes, got {width}"
            )),
            _ => Ok(()),
        }
    }

    fn check_workload(&self, config: &LoadConfig) -> Result<(), WorkloadError> {
        let bad = |m: &str| Err(WorkloadError::Invalid(m.into()));
        let w = &config.workload;
        if w.script.is_some() {
            return bad("-s (a wrk script) applies to HTTP targets, not tcp://");
        }
        if !w.checks.is_empty() {
            return bad("--check-body and --check-header apply to HTTP targets, not tcp://");
        }
        if w.data.is_some() || config.shape.replay_plan().is_some() {
            return bad("--data and --replay apply to HTTP targets, not tcp://");
        }
        Ok(())
    }

    fn run_thread(
        &self,
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        ticket: GateTicket,
        schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        let framing = self.framing.clone();
        candor_engine::driver::run_worker(setup, tls, ticket, schedule_at, move || {
            TcpFramer::new(framing.clone())
        })
    }
}
