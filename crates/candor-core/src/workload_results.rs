//! The results a workload adds to a run's: one entry per stage of a load profile (a request
//! belongs to the stage of its intended time) and one per request name, each shaped like the
//! top level (`requests`, `response_time`, `service_time`, `send_lag`, ...).

use crate::results::PhaseResults;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Stages and per-name breakdowns; empty (and absent from JSON) for runs without them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadResults {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageResults>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_request: BTreeMap<String, PhaseResults>,
}

impl WorkloadResults {
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.by_request.is_empty()
    }
}

/// One stage of a load profile: its window and target rates, and what its requests came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageResults {
    /// Seconds from the start of the measured window.
    pub start_s: f64,
    /// The intended rate at the stage's start and end (equal for a hold).
    pub from_per_s: f64,
    pub to_per_s: f64,
    /// `duration_s`, the achieved and (mean) target rate, requests and latencies of the stage.
    #[serde(flatten)]
    pub results: PhaseResults,
}
