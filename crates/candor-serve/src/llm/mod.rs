//! `candor serve --llm`: an OpenAI-compatible streaming completion server whose timing is known
//! in advance (time to first token, gap between tokens, output length, stall windows, faults),
//! so that an LLM serving benchmark can be checked against the truth as HTTP runs are.
//!
//! Each connection has its own thread, which reads a request, then writes its answer at
//! absolute deadlines on the monotonic clock (`clock_nanosleep`): the head at once, token `k` at
//! `read + ttft + k * itl`. A write due inside a stall window goes out at the window's end, as
//! every answer of the HTTP server does, so the truth of a stalled stream is computed by
//! [`emission_times`] without I/O. A thread per connection (rather than the HTTP server's event
//! loop) keeps each stream's deadlines independent of the others': LLM runs keep tens of
//! streams open, not thousands, and every write waits on its own deadline.

mod answer;
pub mod body;
mod config;
mod connection;
mod embed;
mod error;
pub mod prefix;
mod request;
mod server;
mod state;
#[cfg(test)]
mod tests;
mod timing;

pub use config::{
    LlmConfig, LlmFault, LlmFaultKind, HEAD_TIMEOUT_NS, IDLE_TIMEOUT_NS, MAX_CONNECTIONS,
    MAX_EMBED_DIM, MAX_EMBED_INPUTS, MAX_PREFIX_CACHE_BLOCKS, MIN_BODY_RATE, TOKENS_PER_WORD,
};
pub use embed::embed_time;
pub use error::LlmError;
pub use server::{start, LlmServer};
pub use timing::{cached_tokens, emission_times, prefill_ns, prompt_tokens};
