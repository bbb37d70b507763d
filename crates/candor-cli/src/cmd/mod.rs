//! One module per subcommand.

pub mod calibrate;
pub mod capacity;
pub mod compare;
pub mod correct;
pub mod demo;
pub mod k8s;
pub mod live;
pub mod merge;
pub mod pause;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
