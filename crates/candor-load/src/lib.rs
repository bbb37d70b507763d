//! candor's load engine: an open-loop schedule of intended send times (`schedule`), and per load
//! thread one sans-IO core (`engine::core`) that decides what is sent when and on which
//! connection and keeps the books, with transports beneath it for HTTP/1.1 (plain or TLS), raw
//! TCP and HTTP/2, paced to the microsecond. Response time, service time and send lag are
//! recorded for every request, and nothing is dropped from the accounting:
//! `intended = completed + failed + unfinished`.

pub mod config;
pub mod engine;
pub(crate) mod interval_store;
pub mod load_run;
pub(crate) mod phase_outcome;
pub(crate) mod pool;
pub mod priority;
pub mod probe;
pub mod protocol;
pub mod requests;
pub mod schedule;
pub mod shape;
pub mod shared;
pub(crate) mod status;
pub mod stream;
pub mod target;
pub mod transport;
pub(crate) mod wire;
pub mod workload;

pub use config::{
    Arrival, Framing, GrpcCall, GrpcConfig, LoadConfig, LoadConfigError, RequestOrder, RequestSpec,
    Scheme, Target, TargetError, TlsOptions,
};
pub use load_run::{run, IntervalReport, RunOutcome};
pub use shape::LoadShape;
pub use status::{StatusSet, StatusSetError};
