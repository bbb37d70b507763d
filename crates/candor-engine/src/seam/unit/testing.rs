//! Units for the engine's own tests and rigs, which have no protocol of their own: the slots
//! of a connection and the form of its requests, as a real protocol's unit would give them.

use super::*;
use crate::seam::carrying::TimeoutScope;

/// In order, `pipeline` requests per connection, HTTP requests: as HTTP/1.1's unit.
#[derive(Debug, Clone, Copy)]
pub struct InOrder {
    pub pipeline: usize,
}

/// Framed, `streams` requests per connection, each timing out alone: as HTTP/2's unit.
#[derive(Debug, Clone, Copy)]
pub struct Framed {
    pub streams: usize,
}

fn no_thread() -> Result<[PhaseAcc; 2], WorkerError> {
    Err(WorkerError::Setup(std::io::Error::other(
        "a test unit starts no load thread: the test drives the driver itself",
    )))
}

impl ProtocolUnit for InOrder {
    fn name(&self, _target: &Target) -> ProtocolName {
        ProtocolName::new(&IN_ORDER)
    }
    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.pipeline,
            timeout: TimeoutScope::Connection,
        }
    }
    fn record(&self, _settings: &mut RunConfig) {}
    fn check(&self, _config: &LoadConfig) -> Result<(), LoadConfigError> {
        Ok(())
    }
    fn run_thread(
        &self,
        _setup: WorkerSetup,
        _tls: Option<Arc<rustls::ClientConfig>>,
        _ticket: GateTicket,
        _schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        no_thread()
    }
}

impl ProtocolUnit for Framed {
    fn name(&self, _target: &Target) -> ProtocolName {
        ProtocolName::new(&FRAMED)
    }
    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.streams.max(1),
            timeout: TimeoutScope::Stream,
        }
    }
    fn record(&self, _settings: &mut RunConfig) {}
    fn check(&self, _config: &LoadConfig) -> Result<(), LoadConfigError> {
        Ok(())
    }
    fn run_thread(
        &self,
        _setup: WorkerSetup,
        _tls: Option<Arc<rustls::ClientConfig>>,
        _ticket: GateTicket,
        _schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        no_thread()
    }
}

/// A plain HTTP/1.1-like unit, shared.
pub fn in_order() -> Arc<dyn ProtocolUnit> {
    Arc::new(InOrder { pipeline: 1 })
}

/// The test units' names (not declared to the results' list: no run records them).
static IN_ORDER: candor_core::protocol_name::ProtocolNaming =
    candor_core::protocol_name::ProtocolNaming {
        id: "test/in-order",
        words: "a test protocol answered in order",
        replies_are_messages: false,
    };
static FRAMED: candor_core::protocol_name::ProtocolNaming =
    candor_core::protocol_name::ProtocolNaming {
        id: "test/framed",
        words: "a test protocol that frames its requests",
        replies_are_messages: false,
    };
