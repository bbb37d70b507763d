//! candor's load engine: an open-loop schedule of intended send times, connections driven by
//! an event loop with microsecond pacing, HTTP/1.1 exchanges, and recording of response time,
//! service time and send lag for every request, with nothing dropped from the accounting.

pub mod config;
pub mod http1;
pub mod run;
pub mod schedule;
mod timer;
mod worker;

pub use config::{Arrival, LoadConfig, LoadConfigError, Target};
pub use run::{run, IntervalReport, RunOutcome};
