//! candor's load run: a validated configuration in, the run's phases and intervals out
//! (`load_run.rs`), with the pre-run probe of the target (`probe.rs`) and the registry of the
//! protocols (`registry.rs`). The parts are crates of their own, re-exported here as the public
//! face of the load: requests as data (`candor-wire`), streamed responses (`candor-stream`),
//! workloads (`candor-workload`), the protocol-neutral engine (`candor-engine`) and the protocols
//! (`candor-protocols`). Nothing is dropped from the accounting:
//! `intended = completed + failed + unfinished`.

mod collector;
pub mod llm_backend;
pub mod load_run;
pub mod plan;
pub mod probe;
pub mod registry;

pub use candor_engine::{
    backoff, books, config, core, driver, examples, ledger, priority, records, request_plan,
    schedule, seam, shape, shared, transport,
};
pub use candor_protocols as protocol;
pub use candor_stream as stream;
pub use candor_wire::{requests, target};
pub use candor_workload as workload;

/// The engine's modules under the path they had before the engine was a crate of its own.
pub mod engine {
    pub use candor_engine::{backoff, books, core, examples, ledger};
}

pub use candor_engine::config::{
    Arrival, ConversationSettings, LoadConfig, LoadConfigError, RequestOrder, RequestSpec, Scheme,
    Target, TargetError, TlsOptions,
};
pub use candor_engine::shape::LoadShape;
pub use candor_protocols::http2::calls::{GrpcCall, GrpcConfig};
pub use candor_protocols::tcp::Framing;
pub use candor_wire::status::{StatusSet, StatusSetError};
pub use load_run::{run, IntervalReport, RunOutcome};
pub use plan::RunPlan;
pub use registry::ProtocolFlags;
