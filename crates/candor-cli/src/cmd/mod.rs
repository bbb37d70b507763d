//! One module per subcommand.

pub mod calibrate;
pub mod capacity;
pub mod compare;
pub mod completions;
pub mod correct;
pub mod demo;
pub mod fdlimit;
pub mod interrupt;
pub mod k8s;
pub mod live;
pub mod load_args;
pub mod merge;
pub mod outputs;
pub mod report;
pub mod report_sweep;
pub mod run;
pub mod run_extras;
pub mod serve;
pub mod stop;
pub mod sweep;

/// Exit code of a run that worked but whose verdict is a failure (SLO missed, calibration failed).
pub const EXIT_VERDICT_FAILED: i32 = 3;
