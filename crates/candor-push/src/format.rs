//! The seam every push format plugs into: how a batch of series becomes a request body.

use crate::series::Batch;

/// One push format: how a batch becomes a request body (one file per format, as hyperfine's
/// exporters).
pub trait Format: Send {
    /// The name `--out` gives it.
    fn name(&self) -> &'static str;
    fn encode(&self, batch: &Batch) -> Vec<u8>;
    fn headers(&self) -> &'static [(&'static str, &'static str)];
}
