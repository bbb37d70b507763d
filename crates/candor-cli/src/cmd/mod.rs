//! One module per subcommand.

pub mod compare;
pub mod demo;
pub mod k8s;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
