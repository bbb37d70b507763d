//! Runs one configured load test the way the `candor` process does: the open-file limit, the
//! pre-flight checks of reachability and protocol, the signal handlers, the live line on stderr
//! and the live view; and records the settings and command line its results carry.
//!
//! Every command that sends load (`run` and its repeats, `sweep`, `capacity`, `calibrate`,
//! `demo`) goes through [`execute_watched`] (`watched.rs`), so that these concerns are written
//! once. `candor run`'s objectives, early ends and pause wrap it (`extras.rs`, `stop.rs`).

// A run's notes on stderr are best effort: a reader that has gone (`2>&1 | head -1`) must not
// turn a note into a panic in the middle of a run. These shadow std's for the whole crate.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod demo_runs;
pub mod demo_text;
mod error;
pub mod extras;
pub mod fdlimit;
pub mod flags;
pub mod goodput_of_slo;
pub mod grpc_flags;
pub mod interrupt;
pub mod k8s_flags;
pub mod live_view;
pub mod llm_demo;
pub mod llm_demo_text;
mod llm_model;
pub mod push_view;
pub mod rate_series;
mod recorded;
pub mod repeats;
pub mod results_file;
pub mod script;
pub mod serve_flags;
pub(crate) mod shard_flags;
pub mod step_records;
pub mod stop;
pub mod verdicts;
mod watched;

pub use error::RunnerError;
pub use recorded::{command_line, recorded_config, redact_header, redacted_command_line};
pub use results_file::run_results;
pub use watched::{execute, execute_watched, execute_with, stderr_is_terminal, LiveLine, OnStart};
