//! candor's load engine: an open-loop schedule of intended send times, connections driven by
//! an event loop with microsecond pacing, HTTP/1.1 exchanges, and recording of response time,
//! service time and send lag for every request, with nothing dropped from the accounting.

pub mod config;
mod h2worker;
pub mod http1;
pub mod pool;
pub mod probe;
pub mod requests;
pub mod run;
pub mod schedule;
pub mod shared;
pub mod status;
pub mod tcp;
pub mod tls;
mod worker;

pub use config::{
    Arrival, Framing, LoadConfig, LoadConfigError, RequestOrder, RequestSpec, Scheme, Target,
    TlsOptions,
};
pub use run::{run, IntervalReport, RunOutcome};
pub use status::{StatusSet, StatusSetError};
