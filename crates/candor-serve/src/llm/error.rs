//! Why the streaming server could not start.

use std::net::SocketAddr;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LlmError {
    #[error("--output-tokens must be at least 1")]
    NoTokens,
    #[error("invalid stall: need 0 < --stall-for < --stall-every")]
    InvalidStall,
    #[error("fault frequency must be at least 1 (1 = every request)")]
    FaultEveryZero,
    #[error("--idle-timeout and --head-timeout must be longer than zero")]
    ZeroTimeout,
    #[error("--embed-dim must be from 1 to 4096, not {0}")]
    EmbedDim(u32),
    #[error("--prefix-cache takes at most 4194304 blocks")]
    PrefixCacheTooLarge,
    #[error("the server must take at least one connection")]
    NoConnections,
    #[error("unknown LLM fault '{0}': expected rate-limit, error-mid-stream, no-done or close-mid-stream")]
    UnknownFault(String),
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("cannot start the accept thread: {0}")]
    Thread(std::io::Error),
}
