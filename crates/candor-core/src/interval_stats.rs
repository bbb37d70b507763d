//! A few percentiles of one measure in one interval (`IntervalStats`): the form every
//! per-interval measure takes in the results, time series and live views.

use crate::Histo;
use serde::{Deserialize, Serialize};

/// A few percentiles of one measure in one interval, for time series and live views.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalStats {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl IntervalStats {
    /// [`IntervalStats::of`] a measure that not every request has (the first byte): `None`
    /// when nothing was recorded, so that results without it keep their shape.
    pub fn of_recorded(h: &Histo) -> Option<Self> {
        (!h.is_empty()).then(|| Self::of(h))
    }

    pub fn of(h: &Histo) -> Self {
        use crate::hist::value_at;
        IntervalStats {
            count: h.len(),
            p50_ns: value_at(h, 50.0),
            p90_ns: value_at(h, 90.0),
            p99_ns: value_at(h, 99.0),
            p999_ns: value_at(h, 99.9),
            max_ns: value_at(h, 100.0),
        }
    }
}
