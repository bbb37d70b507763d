//! How the streaming server answers (timing, output length, stalls, faults) and the limits
//! that keep clients from holding its connections.

use super::error::LlmError;
use crate::Stall;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// A word of the prompt is this many tokens (OpenAI's rule of thumb: a token is about three
/// quarters of a word): `prompt_tokens = ceil(words * 4 / 3)`.
pub const TOKENS_PER_WORD: (u64, u64) = (4, 3);

/// The most connections served at once by default; more are refused (closed at once), since
/// each holds a thread.
pub const MAX_CONNECTIONS: usize = 1024;

/// How long a connection may wait for a request's first byte by default (at its start and
/// between keep-alive requests), and a blocked write for the client to read; then it is closed,
/// so that silent connections cannot hold the [`MAX_CONNECTIONS`] places for ever.
pub const IDLE_TIMEOUT_NS: u64 = 60_000_000_000;

/// How long a request's head may take by default from its first byte to its end; then it is
/// answered `408` and the connection closed (a head sent a byte at a time). The body that
/// follows has the idle timeout between two reads (nginx's `client_body_timeout`) and a total
/// deadline from [`MIN_BODY_RATE`].
pub const HEAD_TIMEOUT_NS: u64 = 10_000_000_000;

/// The slowest a body may arrive on the whole, in bytes per second: its total deadline is the
/// head timeout plus its length at this rate, from the end of its head (as nginx's and Apache
/// `mod_reqtimeout`'s `MinRate`); a later body is answered `408` and the connection closed.
/// Without it a read deadline alone lets a client sending a byte every 59 s hold a place and
/// its thread for years. 64 KiB/s is generous on both sides: a debug build parsed four 16 MiB
/// bodies at once in about 15 s on a busy 2-core machine, over 1 MB/s each (its time counts,
/// since the deadline runs while the body is parsed), a client on a real network sends far
/// faster, and the worst case, a 16 MiB body, still gets 256 s plus the head timeout.
pub const MIN_BODY_RATE: u64 = 64 * 1024;

/// The `Server` header line of every answer, so that a client's backend probe can name it.
pub(super) const SERVER: &str = "Server: candor\r\n";

/// The largest prefix cache, in blocks: 4,194,304 blocks are 67 million tokens, far past any
/// one server's KV cache, and cost the cache about 64 bytes each (256 MiB).
pub const MAX_PREFIX_CACHE_BLOCKS: usize = 1 << 22;

/// How the streaming server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmConfig {
    pub listen: SocketAddr,
    /// From reading a request to its first token.
    pub ttft_ns: u64,
    /// Between consecutive tokens of one response.
    pub itl_ns: u64,
    /// Tokens per response; a request's smaller `max_tokens` (or `max_completion_tokens`)
    /// lowers it for that request.
    pub output_tokens: u32,
    /// Periodic global stall: no byte leaves during a window.
    pub stall: Option<Stall>,
    /// Deliberate failures on every `every`-th request.
    pub fault: Option<LlmFault>,
    /// The model name the answers carry.
    pub model: String,
    /// The most connections served at once ([`MAX_CONNECTIONS`] by default).
    pub max_connections: usize,
    /// See [`IDLE_TIMEOUT_NS`].
    pub idle_timeout_ns: u64,
    /// See [`HEAD_TIMEOUT_NS`].
    pub head_timeout_ns: u64,
    /// Never send `usage`, even when a request asks for it (`stream_options.include_usage`),
    /// as servers that ignore the option do: the client must count the output tokens itself.
    pub no_usage: bool,
    /// `/v1/embeddings`: from reading a request to its answer, plus this per input token
    /// (by [`TOKENS_PER_WORD`]), and the length of every vector.
    pub embed_latency_ns: u64,
    pub embed_per_token_ns: u64,
    pub embed_dim: u32,
    /// Computing each prompt token not served from the prefix cache adds this to the time to
    /// the first token (`--prefill-per-token`; 0: the TTFT does not depend on the prompt).
    pub prefill_per_token_ns: u64,
    /// The prefix cache's size in blocks of 16 tokens (`--prefix-cache`; 0: no cache).
    pub prefix_cache_blocks: usize,
}

/// The longest embedding vector served: 4,096 (the largest common models'); an answer of
/// [`MAX_EMBED_INPUTS`] of them is written piece by piece, never held whole.
pub const MAX_EMBED_DIM: u32 = 4096;

/// The most inputs one embeddings request may carry (OpenAI's limit); more are answered 400.
pub const MAX_EMBED_INPUTS: u64 = 2048;

impl LlmConfig {
    /// TTFT 100 ms, ITL 20 ms, 128 tokens, no stall, no fault; embeddings of 16 values in
    /// 20 ms.
    pub fn new(listen: SocketAddr) -> LlmConfig {
        LlmConfig {
            listen,
            ttft_ns: 100_000_000,
            itl_ns: 20_000_000,
            output_tokens: 128,
            stall: None,
            fault: None,
            model: "candor-truth".to_string(),
            max_connections: MAX_CONNECTIONS,
            idle_timeout_ns: IDLE_TIMEOUT_NS,
            head_timeout_ns: HEAD_TIMEOUT_NS,
            no_usage: false,
            embed_latency_ns: 20_000_000,
            embed_per_token_ns: 0,
            embed_dim: 16,
            prefill_per_token_ns: 0,
            prefix_cache_blocks: 0,
        }
    }

    /// Checks what [`start`](super::start) would refuse.
    pub fn validate(&self) -> Result<(), LlmError> {
        if self.output_tokens == 0 {
            return Err(LlmError::NoTokens);
        }
        if let Some(stall) = &self.stall {
            stall.validate().map_err(|_| LlmError::InvalidStall)?;
        }
        if let Some(fault) = &self.fault {
            if fault.every == 0 {
                return Err(LlmError::FaultEveryZero);
            }
        }
        if self.idle_timeout_ns == 0 || self.head_timeout_ns == 0 {
            return Err(LlmError::ZeroTimeout);
        }
        if self.max_connections == 0 {
            return Err(LlmError::NoConnections);
        }
        if self.embed_dim == 0 || self.embed_dim > MAX_EMBED_DIM {
            return Err(LlmError::EmbedDim(self.embed_dim));
        }
        if self.prefix_cache_blocks > MAX_PREFIX_CACHE_BLOCKS {
            return Err(LlmError::PrefixCacheTooLarge);
        }
        Ok(())
    }

    /// One line: TTFT, ITL, tokens, stall, fault.
    pub fn describe(&self) -> String {
        let ms = |ns: u64| candor_core::units::format_ns(ns as f64);
        let stall = match &self.stall {
            Some(s) => format!("{} every {}", ms(s.for_ns), ms(s.every_ns)),
            None => "none".to_string(),
        };
        let fault = match &self.fault {
            Some(f) if f.every == 1 => format!("{} on every request", f.kind),
            Some(f) => format!("{} on every {}th request", f.kind, f.every),
            None => "none".to_string(),
        };
        let prefill = match self.prefill_per_token_ns {
            0 => String::new(),
            ns => format!(", prefill {} per token", ms(ns)),
        };
        let cache = match self.prefix_cache_blocks {
            0 => String::new(),
            n => format!(", prefix cache of {n} blocks of 16 tokens"),
        };
        format!(
            "LLM streaming, ttft {}, itl {}, {} output tokens{prefill}{cache}, embeddings of {} in {}{}, stall {stall}, fault {fault}{}",
            ms(self.ttft_ns),
            ms(self.itl_ns),
            self.output_tokens,
            self.embed_dim,
            ms(self.embed_latency_ns),
            if self.embed_per_token_ns > 0 {
                format!(" + {} an input token", ms(self.embed_per_token_ns))
            } else {
                String::new()
            },
            if self.no_usage { ", no usage" } else { "" }
        )
    }
}

/// A deliberate failure on every `every`-th request (1 = all), counted across the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmFault {
    pub kind: LlmFaultKind,
    pub every: u64,
}

/// How a failing stream looks to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmFaultKind {
    /// `429 Too Many Requests` with an OpenAI error body, at once.
    RateLimit,
    /// Half the tokens, then `data: {"error": ...}` and the end of the stream.
    ErrorMidStream,
    /// Every token, then the end of the stream without `data: [DONE]`.
    NoDone,
    /// Half the tokens, then the connection is closed mid-stream.
    CloseMidStream,
}

impl LlmFaultKind {
    /// Every kind, in the order the command line lists them.
    pub const ALL: [LlmFaultKind; 4] = [
        LlmFaultKind::RateLimit,
        LlmFaultKind::ErrorMidStream,
        LlmFaultKind::NoDone,
        LlmFaultKind::CloseMidStream,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LlmFaultKind::RateLimit => "rate-limit",
            LlmFaultKind::ErrorMidStream => "error-mid-stream",
            LlmFaultKind::NoDone => "no-done",
            LlmFaultKind::CloseMidStream => "close-mid-stream",
        }
    }
}

impl fmt::Display for LlmFaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LlmFaultKind {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LlmFaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| LlmError::UnknownFault(s.to_string()))
    }
}
