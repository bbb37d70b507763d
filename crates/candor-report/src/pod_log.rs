//! A results file carried in a pod's log (`candor k8s`): the marker lines around it, and the
//! JSON found between them.

/// Marker lines around the results JSON in a pod's log (`candor k8s`), so that
/// `kubectl logs` output can be merged directly.
pub const LOG_JSON_BEGIN: &str = "----- candor results json begin -----";
pub const LOG_JSON_END: &str = "----- candor results json end -----";

/// The results JSON inside a log captured with `kubectl logs`, if the log has the markers.
pub fn json_from_log(text: &str) -> Option<&str> {
    let start = text.find(LOG_JSON_BEGIN)? + LOG_JSON_BEGIN.len();
    let end = start + text[start..].find(LOG_JSON_END)?;
    Some(text[start..end].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_extraction() {
        let log = format!("text report\nmore\n{LOG_JSON_BEGIN}\n{{\"a\": 1}}\n{LOG_JSON_END}\n");
        assert_eq!(json_from_log(&log), Some("{\"a\": 1}"));
        assert_eq!(json_from_log("no markers"), None);
        assert_eq!(json_from_log(LOG_JSON_BEGIN), None);
    }
}
