//! One module per subcommand.

pub mod compare;
pub mod demo;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
