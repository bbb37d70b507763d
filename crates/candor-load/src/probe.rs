//! The pre-run check: one blocking connection that proves the target speaks what the run will
//! speak (TLS with a certificate we trust, and what the protocol itself asks, as HTTP/2's
//! preface), so that a run in which nothing could work is one clear error before any load, not
//! a report full of failures.

use crate::plan::RunPlan;
use candor_engine::seam::unit::ProbeFailure;
use candor_engine::transport::tls::TlsError;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("{url}: {reason}")]
    Protocol { url: String, reason: String },
}

/// Checks before the run that the target answers in the protocol the run will use. HTTP/1.1 in
/// the clear and raw TCP need nothing beyond a connection (checked by
/// [`candor_wire::target::Target::check_reachable`]).
pub fn check_protocol(plan: &RunPlan, timeout: Duration) -> Result<(), ProbeError> {
    plan.protocol.probe(plan, timeout).map_err(|e| match e {
        ProbeFailure::Tls(e) => ProbeError::Tls(e),
        ProbeFailure::Protocol(reason) => ProbeError::Protocol {
            url: plan.target.url.clone(),
            reason,
        },
    })
}
