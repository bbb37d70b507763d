//! JSON exports: results, sweeps, merges and comparison reports, pretty-printed.

use crate::export::{ExportError, Exporter};
use serde::Serialize;

/// Any serializable document as pretty JSON.
pub struct JsonExporter;

impl<T: Serialize + ?Sized> Exporter<T> for JsonExporter {
    fn export(&self, document: &T) -> Result<Vec<u8>, ExportError> {
        serde_json::to_vec_pretty(document).map_err(|e| ExportError::Format(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_json_of_any_document() {
        let bytes = JsonExporter.export(&serde_json::json!({"a": [1]})).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
    }
}
