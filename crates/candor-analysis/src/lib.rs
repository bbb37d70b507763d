//! Analysis of measured latency: turning results into verdicts that can be checked against a
//! stated expectation. SLO parsing and evaluation, order-statistic confidence intervals, comparison
//! intervals, stationarity, saturation and coordinated-omission detection, HdrHistogram's
//! after-the-fact correction, the capacity search (generic over the measurement, so it is testable
//! without a network) and sweep results.

pub mod capacity_search;
pub mod compare_ci;
pub mod confidence;
pub mod correction;
pub mod late;
pub mod llm_step;
pub mod omission;
pub mod repeats;
pub mod run;
pub mod saturation;
pub mod slo;
pub mod stopping;
pub mod sweep_results;
pub mod trend;

pub use run::{analyze, Analysis};
pub use slo::{Objective, SloError, SloSet, SloVerdict};

#[cfg(test)]
pub(crate) mod test_support;
