//! What an answer says and how it is written: the endpoint's JSON, streamed as server-sent
//! events at their instants or written whole, each write held by a stall like any other.

use super::config::{LlmConfig, LlmFaultKind, SERVER};
use candor_core::exact_sleep::sleep_until_absolute;
use candor_core::now_ns;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};

/// The words the server generates, in turn; each token is one of them plus a space.
pub(super) const WORDS: [&str; 8] = [
    "candor", "measures", "from", "the", "intended", "send", "not", "after",
];

/// Which OpenAI endpoint a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    Chat,
    Completions,
    /// `/v1/embeddings`, answered by `embed.rs`.
    Embeddings,
}

/// A plain (not streamed) answer with a JSON or text body, held by a stall like any write.
pub(super) fn respond_plain(
    out: &mut TcpStream,
    started_ns: u64,
    config: &LlmConfig,
    status: u16,
    body: &str,
    keep: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\n{SERVER}Content-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if keep { "" } else { "Connection: close\r\n" }
    );
    let now = now_ns();
    if let Some(end) = config.stall.and_then(|s| s.window_end_at(started_ns, now)) {
        sleep_until_absolute(end);
    }
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())
}

/// What one answer says, whatever its timing.
pub(super) struct Answer<'a> {
    pub(super) endpoint: Endpoint,
    pub(super) id: u64,
    pub(super) model: &'a str,
    pub(super) prompt_tokens: u64,
    /// The prompt's tokens served from the prefix cache, when there is one.
    pub(super) cached_tokens: Option<u64>,
    pub(super) tokens: u32,
    pub(super) include_usage: bool,
}

impl Answer<'_> {
    /// The usage object; with a prefix cache, its cached tokens where OpenAI and vLLM put
    /// them (`prompt_tokens_details.cached_tokens`).
    fn usage(&self) -> String {
        let details = match self.cached_tokens {
            Some(n) => format!(",\"prompt_tokens_details\":{{\"cached_tokens\":{n}}}"),
            None => String::new(),
        };
        format!(
            "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{}{details}}}",
            self.prompt_tokens,
            self.tokens,
            self.prompt_tokens + u64::from(self.tokens)
        )
    }

    /// The JSON of the chunk that carries token `k`.
    fn chunk(&self, k: u32) -> String {
        let word = WORDS[k as usize % WORDS.len()];
        let finish = if k + 1 == self.tokens {
            "\"length\""
        } else {
            "null"
        };
        match self.endpoint {
            Endpoint::Chat => {
                let role = if k == 0 { "\"role\":\"assistant\"," } else { "" };
                format!(
                    "{{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{{role}\"content\":\"{word} \"}},\"finish_reason\":{finish}}}]}}",
                    self.id, self.model
                )
            }
            Endpoint::Completions | Endpoint::Embeddings => format!(
                "{{\"id\":\"cmpl-{}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":\"{word} \",\"finish_reason\":{finish}}}]}}",
                self.id, self.model
            ),
        }
    }

    /// Streams the answer as server-sent events in HTTP/1.1 chunks, each write at its instant
    /// of `times`; whether the connection stays open.
    pub(super) fn stream(
        &self,
        out: &mut TcpStream,
        times: &[u64],
        fault: Option<LlmFaultKind>,
        keep: bool,
    ) -> io::Result<bool> {
        let head = format!(
            "HTTP/1.1 200 OK\r\n{SERVER}Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n{}\r\n",
            if keep { "" } else { "Connection: close\r\n" }
        );
        sleep_until_absolute(times[0]);
        out.write_all(head.as_bytes())?;
        let cut = match fault {
            Some(LlmFaultKind::ErrorMidStream | LlmFaultKind::CloseMidStream) => self.tokens / 2,
            _ => self.tokens,
        };
        let mut event = String::new();
        for k in 0..cut {
            event.clear();
            let _ = write!(event, "data: {}\n\n", self.chunk(k));
            sleep_until_absolute(times[1 + k as usize]);
            write_chunk(out, &event)?;
        }
        match fault {
            Some(LlmFaultKind::CloseMidStream) => {
                let _ = out.shutdown(Shutdown::Both);
                return Ok(false);
            }
            Some(LlmFaultKind::ErrorMidStream) => {
                write_chunk(
                    out,
                    "data: {\"error\":{\"message\":\"generation failed (candor serve --llm fault)\",\"type\":\"server_error\",\"code\":500}}\n\n",
                )?;
            }
            _ => {
                if self.include_usage {
                    event.clear();
                    let object = match self.endpoint {
                        Endpoint::Chat => "chat.completion.chunk",
                        Endpoint::Completions | Endpoint::Embeddings => "text_completion",
                    };
                    let _ = write!(
                        event,
                        "data: {{\"id\":\"x-{}\",\"object\":\"{object}\",\"created\":0,\"model\":\"{}\",\"choices\":[],\"usage\":{}}}\n\n",
                        self.id,
                        self.model,
                        self.usage()
                    );
                    write_chunk(out, &event)?;
                }
                if fault != Some(LlmFaultKind::NoDone) {
                    write_chunk(out, "data: [DONE]\n\n")?;
                }
            }
        }
        out.write_all(b"0\r\n\r\n")?;
        Ok(keep)
    }

    /// The whole answer in one JSON body, written at the last token's instant.
    pub(super) fn whole(
        &self,
        out: &mut TcpStream,
        times: &[u64],
        fault: Option<LlmFaultKind>,
        keep: bool,
    ) -> io::Result<bool> {
        let text: String = (0..self.tokens)
            .map(|k| format!("{} ", WORDS[k as usize % WORDS.len()]))
            .collect();
        let body = match self.endpoint {
            Endpoint::Chat => format!(
                "{{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":\"length\"}}],\"usage\":{}}}",
                self.id,
                self.model,
                self.usage()
            ),
            Endpoint::Completions | Endpoint::Embeddings => format!(
                "{{\"id\":\"cmpl-{}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":\"length\"}}],\"usage\":{}}}",
                self.id,
                self.model,
                self.usage()
            ),
        };
        sleep_until_absolute(*times.last().unwrap_or(&0));
        if matches!(
            fault,
            Some(LlmFaultKind::CloseMidStream | LlmFaultKind::ErrorMidStream)
        ) {
            // Without a stream there is no middle: the server fails the request as a whole.
            let err = "{\"error\":{\"message\":\"generation failed (candor serve --llm fault)\",\"type\":\"server_error\",\"code\":500}}";
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\n{SERVER}Content-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
                err.len(),
                if keep { "" } else { "Connection: close\r\n" }
            );
            out.write_all(head.as_bytes())?;
            out.write_all(err.as_bytes())?;
            return Ok(keep);
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\n{SERVER}Content-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
            body.len(),
            if keep { "" } else { "Connection: close\r\n" }
        );
        out.write_all(head.as_bytes())?;
        out.write_all(body.as_bytes())?;
        Ok(keep)
    }
}

/// One HTTP/1.1 chunk holding `data`.
pub(super) fn write_chunk(out: &mut TcpStream, data: &str) -> io::Result<()> {
    let mut framed = Vec::with_capacity(data.len() + 16);
    let _ = write!(framed, "{:x}\r\n", data.len());
    framed.extend_from_slice(data.as_bytes());
    framed.extend_from_slice(b"\r\n");
    out.write_all(&framed)
}
