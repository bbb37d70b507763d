//! Workloads as users have them: load profiles (stages of held and ramped rates), trace replay,
//! templated requests filled from data, weighted named requests and response checks. Everything
//! here is decided before the run or in pure functions, so it is tested exactly, without sockets.

pub mod check;
pub mod data;
pub mod pick;
pub mod profile;
pub mod replay;
pub mod template;
