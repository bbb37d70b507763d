//! A flag that cannot work, as one line naming the flag, and the reads of the files flags name.

use candor_core::units::UnitError;
use candor_load::workload::check::CheckError;
use candor_load::workload::data::DataError;
use candor_load::workload::profile::ProfileError;
use candor_load::workload::replay::ReplayError;
use candor_load::workload::WorkloadError;
use candor_load::LoadConfigError;

/// A flag of `candor run` (or of the commands that share its load flags) that cannot work, in one
/// line naming the flag.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{flag}")]
    Value {
        flag: &'static str,
        source: UnitError,
    },
    #[error("-R/--rate")]
    Profile(#[from] ProfileError),
    /// Not `#[from]` nor a source: the reason is part of the one line.
    #[error("{flag} {path}: {reason}")]
    Read {
        flag: &'static str,
        path: String,
        reason: candor_core::bounded::BoundedReadError,
    },
    #[error(transparent)]
    Target(#[from] candor_load::TargetError),
    #[error(transparent)]
    Config(#[from] LoadConfigError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("{0}")]
    Invalid(String),
}

pub(crate) type Result<T> = std::result::Result<T, FlagError>;

/// Names the flag whose value failed to parse.
pub(crate) fn flag<T>(r: std::result::Result<T, UnitError>, flag: &'static str) -> Result<T> {
    r.map_err(|source| FlagError::Value { flag, source })
}

/// Reads a file named by a flag, of at most `max_bytes` (and `max_line` per line).
pub(crate) fn read(
    path: &std::path::Path,
    flag: &'static str,
    max_bytes: u64,
    max_line: Option<usize>,
) -> Result<Vec<u8>> {
    candor_core::bounded::read_file(path, max_bytes, max_line).map_err(|reason| FlagError::Read {
        flag,
        path: path.display().to_string(),
        reason,
    })
}
