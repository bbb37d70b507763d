//! Workloads as users have them: load profiles (stages of held and ramped rates), trace replay,
//! templated requests filled from data, weighted named requests and response checks. Everything
//! here is decided before the run or in pure functions, so it is tested exactly, without sockets.

pub mod check;
pub mod conversation;
pub mod data;
pub mod embed_requests;
pub mod pick;
pub mod profile;
pub mod prompts;
pub mod replay;
pub mod runtime;
pub mod script_source;
pub mod sharegpt;
pub mod source;
pub mod synthetic;
pub mod template;
pub mod think;
pub mod tokenizer;

use candor_wire::requests::RequestLine;
use candor_wire::status::StatusSet;
use check::ResponseChecks;
use data::{DataOrder, DataTable};
use pick::Picker;
use std::sync::Arc;
use template::{RequestTemplate, TemplateError};

/// The workload settings of a run beyond one request (the load profile and a replayed trace are
/// `LoadConfig::shape`).
#[derive(Debug, Clone, Default)]
pub struct WorkloadConfig {
    /// Names, weights and checks of the `--requests` lines, one per `LoadConfig::requests` entry
    /// (empty: names are method and path, no weights, no per-line checks).
    pub lines: Vec<RequestLine>,
    /// `--data`: the rows `{{data:COLUMN}}` is filled from.
    pub data: Option<Arc<DataTable>>,
    pub data_order: DataOrder,
    /// `--seed`: templates' random values, weighted choice and random data rows.
    pub seed: u64,
    /// `-s`: a wrk Lua script's states, one per load thread, which make every request.
    pub script: Option<Arc<script_source::ScriptRun>>,
    /// `--check-body` and `--check-header`, for every response.
    pub checks: ResponseChecks,
    /// The targets besides the command line's that `--requests` lines name by `"url"`, resolved.
    pub targets: Vec<candor_wire::target::Target>,
    /// Per `LoadConfig::requests` entry, its target: 0 the command line's, `i` `targets[i - 1]`
    /// (empty: every request goes to the command line's).
    pub target_of: Vec<usize>,
}

/// Everything the request choice needs, compiled before the run.
#[derive(Debug, Clone)]
pub struct CompiledRequests {
    pub templates: Vec<RequestTemplate>,
    /// Whether any request has a placeholder (otherwise the prepared bytes are sent as they are).
    pub templated: bool,
    /// Distinct request names, in first-seen order, and each request's index among them.
    pub names: Vec<String>,
    pub name_of: Vec<usize>,
    pub picker: Picker,
    /// Per request: the statuses it accepts and its checks.
    pub accept: Vec<StatusSet>,
    pub checks: Vec<ResponseChecks>,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("{0}")]
    Invalid(String),
}
