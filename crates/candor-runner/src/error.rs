//! Why a load test could not run, as one type for every step of a run.

use crate::{extras, fdlimit};

/// Why a load test could not run (each a one-line message for the user).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    FdLimit(#[from] fdlimit::FdLimitError),
    #[error(transparent)]
    Target(#[from] candor_load::TargetError),
    #[error(transparent)]
    Protocol(#[from] candor_load::probe::ProbeError),
    #[error("installing the signal handlers: {0}")]
    Signals(#[from] std::io::Error),
    #[error(transparent)]
    Run(#[from] candor_load::load_run::RunError),
    #[error(transparent)]
    Extras(#[from] extras::ExtrasError),
    #[error(transparent)]
    Records(#[from] candor_load::records::RecordsError),
    #[error("the pre-flight check: {0}")]
    Thread(std::io::Error),
}
