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
pub mod pause;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
