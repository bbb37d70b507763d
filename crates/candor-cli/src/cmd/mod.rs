//! One module per subcommand.

pub mod calibrate;
pub mod capacity;
pub mod compare;
pub mod completions;
pub mod correct;
pub mod demo;
pub mod demo_llm;
pub mod k8s;
pub mod live;
pub mod merge;
pub mod outputs;
pub mod repeat;
pub mod report;
pub mod report_sweep;
pub mod run;
pub mod serve;
pub mod sweep;

/// Signals and exit codes 130/143, shared by every command that sends load.
pub use candor_runner::interrupt;

pub use candor_runner::extras::EXIT_VERDICT_FAILED;
