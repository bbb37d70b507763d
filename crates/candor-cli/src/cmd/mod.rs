//! One module per subcommand.

pub mod calibrate;
pub mod capacity;
pub mod compare;
pub mod completions;
pub mod correct;
pub mod demo;
pub mod k8s;
pub mod live;
pub mod load_args;
pub mod merge;
pub mod report;
pub mod report_sweep;
pub mod run;
pub mod run_extras;
pub mod serve;
pub mod stop;
pub mod sweep;

/// Signals and exit codes 130/143, shared by every command that sends load.
pub use candor_runner::interrupt;

/// Exit code of a run that worked but whose verdict is a failure (SLO missed, calibration failed).
pub const EXIT_VERDICT_FAILED: i32 = 3;
