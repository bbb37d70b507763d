//! Why a report page could not be written: a run's histogram did not decode.

use candor_core::hist::HistCodecError;

#[derive(Debug, thiserror::Error)]
#[error("{label}: {what} histogram is not valid: {cause}")]
pub struct HtmlError {
    pub label: String,
    pub what: String,
    pub cause: HistCodecError,
}
