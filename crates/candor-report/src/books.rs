//! What a loaded input knows about its requests beyond their latencies, which every report and
//! merge asks before it states a count.

use candor_core::results::{RequestCounts, RunResults};

/// What a loaded input knows about its requests, beyond their latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Books {
    /// A candor run's full accounting: intended, completed, failed, unfinished, by class.
    Full,
    /// An interval log: latencies only, so how many requests were intended, failed or left
    /// unfinished, their statuses and bytes are unknown.
    LatencyOnly,
    /// A time slice of a run: completed and failed per interval are kept, the rest is not.
    Slice,
}

impl Books {
    pub fn of(r: &RunResults) -> Books {
        if r.kind == candor_core::results::Kind::Hlog {
            Books::LatencyOnly
        } else if r.config.time_slice().is_some() {
            Books::Slice
        } else {
            Books::Full
        }
    }

    /// The request accounting when the input has it whole.
    pub fn requests(r: &RunResults) -> Option<&RequestCounts> {
        (Books::of(r) == Books::Full).then_some(&r.main.requests)
    }
}
