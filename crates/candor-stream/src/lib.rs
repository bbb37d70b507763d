//! Events within one streamed response, found without allocating: server-sent events
//! (`sse.rs`), newline-delimited lines (`lines.rs`), and what an OpenAI-compatible LLM stream's
//! events say and what they add up to per request (`openai.rs`: first token, gaps, output tokens,
//! how the stream ended), and `goodput.rs` the per-request objectives of `--goodput`. Each piece is sans-IO: it is fed body bytes and the instant they
//! arrived, so every decision is tested exactly on simulated time; a protocol's response
//! observer feeds it the body of each response (HTTP/1.1 de-chunked, HTTP/2 DATA frames).

pub mod answer;
pub mod count;
pub mod embeddings;
pub mod goodput;
pub mod json_key;
pub mod line;
pub mod openai;
pub mod sse;
pub mod tap;

/// How a response's body divides into events (`--stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Server-sent events (`text/event-stream`): an event ends at a blank line.
    Sse,
    /// Each HTTP/1.1 chunk (or HTTP/2 DATA frame) is one event.
    Chunks,
    /// Each non-empty line is one event (newline-delimited JSON).
    Lines,
}

impl StreamKind {
    pub const ALL: [StreamKind; 3] = [StreamKind::Sse, StreamKind::Chunks, StreamKind::Lines];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StreamKind::Sse => "sse",
            StreamKind::Chunks => "chunks",
            StreamKind::Lines => "lines",
        }
    }

    /// The kind a response's `Content-Type` says, when it says one (`text/event-stream`).
    pub fn from_content_type(value: &[u8]) -> Option<StreamKind> {
        let essence = value.split(|&b| b == b';').next().unwrap_or(value);
        let essence = essence.trim_ascii();
        if essence.eq_ignore_ascii_case(b"text/event-stream") {
            Some(StreamKind::Sse)
        } else if essence.eq_ignore_ascii_case(b"application/x-ndjson")
            || essence.eq_ignore_ascii_case(b"application/jsonl")
        {
            Some(StreamKind::Lines)
        } else {
            None
        }
    }
}

impl std::str::FromStr for StreamKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StreamKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown stream kind '{s}': expected sse, chunks or lines"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_name_their_kind_with_or_without_parameters() {
        assert_eq!(
            StreamKind::from_content_type(b"text/event-stream"),
            Some(StreamKind::Sse)
        );
        assert_eq!(
            StreamKind::from_content_type(b"Text/Event-Stream; charset=utf-8"),
            Some(StreamKind::Sse)
        );
        assert_eq!(
            StreamKind::from_content_type(b"application/x-ndjson"),
            Some(StreamKind::Lines)
        );
        assert_eq!(StreamKind::from_content_type(b"application/json"), None);
        assert_eq!(StreamKind::from_content_type(b"text/event-streams"), None);
    }

    #[test]
    fn names_round_trip() {
        for k in StreamKind::ALL {
            assert_eq!(k.name().parse::<StreamKind>(), Ok(k));
        }
        assert!("ws".parse::<StreamKind>().unwrap_err().contains("'ws'"));
    }
}
