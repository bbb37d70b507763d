//! The results a workload adds to a run's: one entry per stage of a load profile (a request
//! belongs to the stage of its intended time) and one per request name, each shaped like the
//! top level (`requests`, `response_time`, `service_time`, `send_lag`, ...), and the first few
//! failed responses as they came back (`failure_examples`).

use crate::phase_results::{FailureClass, PhaseResults};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Stages and per-name breakdowns; empty (and absent from JSON) for runs without them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadResults {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageResults>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_request: BTreeMap<String, PhaseResults>,
    /// The earliest (by intended time) of the measured window's responses that failed their
    /// status or a response check, at most [`FAILURE_EXAMPLES`]; absent when none failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_examples: Vec<FailureExample>,
}

impl WorkloadResults {
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.by_request.is_empty() && self.failure_examples.is_empty()
    }
}

/// How many failed responses a run keeps as examples: each load thread keeps this many, the run
/// the earliest this many of theirs, and `candor merge` the earliest this many of its inputs'.
pub const FAILURE_EXAMPLES: usize = 5;

/// How many bytes of a failed response's body an example keeps.
pub const EXCERPT_BYTES: usize = 100;

/// What ends an excerpt whose body was longer than [`EXCERPT_BYTES`].
pub const TRUNCATED_MARKER: &str = "…[truncated]";

/// Which check a failed response failed: its status (class `status`) or, its status accepted, a
/// header or body check (class `check`). Headers are judged before the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedCheck {
    /// A status outside `--check-status` (or the request line's `"check_status"`).
    Status,
    /// `--check-header`.
    Header,
    /// `--check-body` (or the request line's `"check_body"`).
    Body,
    /// A script's `response()` (`-s`): it returned false or called `wrk.fail(reason)`; the
    /// example's body holds the reason.
    Script,
    /// A streamed response that failed (`--stream`, `--llm`: an error event, no `[DONE]`).
    Stream,
    /// A gRPC call's `grpc-status` outside `--check-status` (class `grpc`).
    Grpc,
    /// An HTTP/1.1 request pipelined behind a response that said `Connection: close` (class
    /// `read`): the server closed with it unanswered. The example's status is the closing
    /// response's.
    PipelinedClose,
}

impl FailedCheck {
    /// The failure class the response is counted in.
    pub fn class(self) -> FailureClass {
        match self {
            FailedCheck::Status => FailureClass::Status,
            FailedCheck::Header | FailedCheck::Body | FailedCheck::Script => FailureClass::Check,
            FailedCheck::Stream => FailureClass::Stream,
            FailedCheck::Grpc => FailureClass::Grpc,
            FailedCheck::PipelinedClose => FailureClass::Read,
        }
    }

    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            FailedCheck::Status => "status",
            FailedCheck::Header => "header",
            FailedCheck::Body => "body",
            FailedCheck::Script => "script",
            FailedCheck::Stream => "stream",
            FailedCheck::Grpc => "grpc",
            FailedCheck::PipelinedClose => "pipelined behind Connection: close",
        }
    }
}

/// One failed response as it came back, so that a reader sees what the target answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureExample {
    /// The request's name (method and path template when the request set names none).
    pub request: String,
    /// The request's index in the whole schedule, across threads and shards.
    pub seq: u64,
    /// Its intended send time, seconds after `start_time_unix_s` (the first intended send).
    pub intended_s: f64,
    pub status: u16,
    /// The error class it is counted in: `status` or `check` (follows from `check`).
    pub class: FailureClass,
    pub check: FailedCheck,
    /// The first [`EXCERPT_BYTES`] bytes of its body made printable (see [`printable_excerpt`]);
    /// absent when the protocol did not capture the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

impl FailureExample {
    /// An example of request `request` (entry `seq`, intended `intended_s` after the first
    /// intended send) that failed `check` with `status`; `body` holds the body's first bytes (more
    /// than [`EXCERPT_BYTES`] of them mark the excerpt as truncated), `None` when not captured.
    pub fn new(
        request: String,
        seq: u64,
        intended_s: f64,
        status: u16,
        check: FailedCheck,
        body: Option<&[u8]>,
    ) -> FailureExample {
        FailureExample {
            request,
            seq,
            intended_s,
            status,
            class: check.class(),
            check,
            excerpt: body.map(printable_excerpt),
        }
    }
}

/// Keeps the earliest [`FAILURE_EXAMPLES`] of `examples` by intended time (then by `seq`), in
/// that order.
pub fn keep_earliest(examples: &mut Vec<FailureExample>) {
    examples.sort_by(|a, b| {
        a.intended_s
            .total_cmp(&b.intended_s)
            .then(a.seq.cmp(&b.seq))
    });
    examples.truncate(FAILURE_EXAMPLES);
}

/// The first [`EXCERPT_BYTES`] of `body` as text a terminal and a JSON reader show as they are:
/// valid UTF-8 stays (so `{"ok":false}` reads as itself), a backslash is doubled, tab, CR and LF
/// become `\t`, `\r`, `\n`, other control characters `\u{..}`, and bytes that are not UTF-8
/// `\xNN`; a longer body ends with [`TRUNCATED_MARKER`]. Written by hand because the standard
/// escapes either quote `"` (`escape_debug`) or every non-ASCII byte (`escape_ascii`), and
/// `from_utf8_lossy` loses the bytes it replaces.
pub fn printable_excerpt(body: &[u8]) -> String {
    use std::fmt::Write as _;
    let cut = &body[..body.len().min(EXCERPT_BYTES)];
    let mut out = String::with_capacity(cut.len() + TRUNCATED_MARKER.len());
    for chunk in cut.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\n' => out.push_str("\\n"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    if body.len() > EXCERPT_BYTES {
        out.push_str(TRUNCATED_MARKER);
    }
    out
}

/// One stage of a load profile: its window and target rates, and what its requests came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageResults {
    /// Seconds from the start of the measured window.
    pub start_s: f64,
    /// The intended rate at the stage's start and end (equal for a hold).
    pub from_per_s: f64,
    pub to_per_s: f64,
    /// `duration_s`, the achieved and (mean) target rate, requests and latencies of the stage.
    #[serde(flatten)]
    pub results: PhaseResults,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_keep_text_and_escape_control_and_invalid_bytes() {
        assert_eq!(printable_excerpt(b"{\"ok\":false}"), "{\"ok\":false}");
        assert_eq!(printable_excerpt("überlastet".as_bytes()), "überlastet");
        assert_eq!(
            printable_excerpt(b"a\r\nb\tc\\d\x00\x1b[0m"),
            "a\\r\\nb\\tc\\\\d\\u{0}\\u{1b}[0m"
        );
        assert_eq!(printable_excerpt(b"\xff\xfeok\xc3"), "\\xff\\xfeok\\xc3");
        assert_eq!(printable_excerpt(b""), "");
    }

    #[test]
    fn excerpts_are_cut_at_the_limit_with_a_marker() {
        let exact = vec![b'a'; EXCERPT_BYTES];
        assert_eq!(printable_excerpt(&exact), "a".repeat(EXCERPT_BYTES));
        let longer = vec![b'b'; EXCERPT_BYTES + 1];
        assert_eq!(
            printable_excerpt(&longer),
            format!("{}{TRUNCATED_MARKER}", "b".repeat(EXCERPT_BYTES))
        );
        // A character cut in half by the limit is shown as the bytes that were kept.
        let mut split = vec![b'c'; EXCERPT_BYTES - 1];
        split.extend_from_slice("é and more".as_bytes());
        let shown = printable_excerpt(&split);
        assert!(
            shown.ends_with(&format!("c\\xc3{TRUNCATED_MARKER}")),
            "{shown}"
        );
    }

    #[test]
    fn the_earliest_examples_are_kept_in_order() {
        let at = |seq: u64, t: f64| {
            FailureExample::new("GET /".into(), seq, t, 503, FailedCheck::Status, None)
        };
        let mut v: Vec<FailureExample> = [(9, 0.9), (1, 0.1), (7, 0.5), (3, 0.3), (2, 0.3)]
            .into_iter()
            .chain([(8, 0.8), (4, 0.4)])
            .map(|(s, t)| at(s, t))
            .collect();
        keep_earliest(&mut v);
        let seqs: Vec<u64> = v.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4, 7]);
        assert_eq!(v[0].class, FailureClass::Status);
        let check = FailureExample::new("b".into(), 0, 0.0, 200, FailedCheck::Body, Some(b"x"));
        assert_eq!(
            (check.class, check.excerpt.as_deref()),
            (FailureClass::Check, Some("x"))
        );
    }

    #[test]
    fn examples_are_absent_from_json_when_empty_and_older_files_load() {
        let w: WorkloadResults = serde_json::from_str("{}").unwrap();
        assert!(w.failure_examples.is_empty());
        assert_eq!(serde_json::to_string(&w).unwrap(), "{}");
        let e = FailureExample::new("a".into(), 3, 0.5, 503, FailedCheck::Status, Some(b"busy"));
        let text = serde_json::to_string(&e).unwrap();
        assert!(
            text.contains("\"class\":\"status\",\"check\":\"status\""),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<FailureExample>(&text).unwrap(), e);
    }
}
