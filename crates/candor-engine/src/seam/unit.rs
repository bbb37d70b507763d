//! What a run speaks, as one typed value: a protocol's settings (HTTP/1.1's pipeline depth,
//! HTTP/2's streams, raw TCP's payload and framing, WebSocket's matching), chosen once by the
//! registry from the target and the flags, and asked by the engine and the run for what they
//! need. Neither ever tests which protocol it is: each protocol's folder answers for itself (its
//! name, ALPN, flag checks, pre-run probe and load threads).

use crate::config::{LoadConfig, LoadConfigError};
use crate::pool::GateTicket;
use crate::schedule::Schedule;
use crate::seam::carrying::{RequestKind, Slots};
use crate::shared::{PhaseAcc, WorkerError, WorkerSetup};
use crate::transport::tls::TlsError;
use candor_core::results::{ProtocolName, RunConfig};
use candor_wire::target::Target;
use candor_workload::WorkloadError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The bytes each request is encoded to, once, before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestForm<'a> {
    /// The HTTP/1.1 form of each request of the run (the request set, or the URL's one request):
    /// HTTP/1.1 sends it as it is, the other HTTP protocols read theirs from it.
    Http,
    /// These bytes for every request (raw TCP's payload).
    Payload(&'a [u8]),
}

/// When a load thread learns its start: the schedule it follows from then (`None` in a closed
/// loop).
pub type ScheduleAt<'a> = Box<dyn FnOnce(u64) -> Result<Option<Schedule>, WorkerError> + 'a>;

/// How a request's body is compiled before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyForm {
    /// Text with placeholders (`{{seq}}`, `{{data:COLUMN}}`), filled per request.
    Template,
    /// Bytes sent as they are (an encoded message): never read for placeholders.
    Bytes,
    /// JSON with placeholders, values filled into its strings escaped as JSON (a message
    /// encoded per request from it).
    JsonTemplate,
}

/// One protocol's answer to everything the engine and the run ask of it. One value per run,
/// shared by its load threads.
pub trait ProtocolUnit: fmt::Debug + Send + Sync + std::panic::RefUnwindSafe {
    /// The protocol's name in the results, for `target` (over TLS or in the clear).
    fn name(&self, target: &Target) -> ProtocolName;

    /// How many requests a connection carries at once, and what a request's timeout ends.
    fn slots(&self) -> Slots;

    /// Writes its own settings into the settings the results record (its pipeline depth, its
    /// streams, its matching), beside its name.
    fn record(&self, settings: &mut RunConfig);

    /// The bytes its requests are encoded to before the run.
    fn request_form(&self) -> RequestForm<'_> {
        RequestForm::Http
    }

    /// How the body of request `index` (of the request set, or 0 for the one request) is
    /// compiled before the run: a text template, unless the protocol's bodies are bytes.
    fn body_form(&self, _index: usize) -> BodyForm {
        BodyForm::Template
    }

    /// What its requests are, without their bytes.
    fn requests_are(&self) -> RequestKind {
        match self.request_form() {
            RequestForm::Http => RequestKind::Http,
            RequestForm::Payload(_) => RequestKind::Payload,
        }
    }

    /// Its settings, and the run's settings that do not apply to it, checked before anything
    /// starts: the first that fails, in one line.
    fn check(&self, config: &LoadConfig) -> Result<(), LoadConfigError>;

    /// The workload (a script, templates, data, replay) checked against what it carries.
    fn check_workload(&self, _config: &LoadConfig) -> Result<(), WorkloadError> {
        Ok(())
    }

    /// The TLS client configuration its load threads share over a TLS target (made once per
    /// run), or `None` for a protocol that makes its own per thread or has no TLS.
    fn thread_tls(
        &self,
        _config: &LoadConfig,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        Ok(None)
    }

    /// What carries its connections: over a datagram transport a TCP connect proves nothing,
    /// so the run's reachability check is left to [`ProtocolUnit::probe`].
    fn transport(&self) -> crate::seam::carrying::Transport {
        crate::seam::carrying::Transport::Stream
    }

    /// Checks before the run, within `timeout`, that the target answers in this protocol
    /// beyond accepting a connection (a TLS handshake, HTTP/2's preface); in the protocol's words.
    fn probe(&self, _config: &LoadConfig, _timeout: Duration) -> Result<(), ProbeFailure> {
        Ok(())
    }

    /// Runs one load thread of this protocol on the one driver.
    fn run_thread(
        &self,
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        ticket: GateTicket,
        schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError>;
}

/// Why the pre-run probe of a protocol failed, as the run says it.
#[derive(Debug, thiserror::Error)]
pub enum ProbeFailure {
    /// The TLS handshake failed (its own words).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server does not speak the protocol: what it did instead.
    #[error("{0}")]
    Protocol(String),
}

/// Units for the engine's own tests and rigs, which have no protocol of their own.
#[cfg(any(test, feature = "sim"))]
pub mod testing;
