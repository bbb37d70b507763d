//! The flags of `candor run` (and the load flags that `sweep`, `capacity` and `k8s` share), and
//! their validation into a `LoadConfig` before any load is sent: `args.rs` the flags as typed,
//! `config.rs` the one path from them to a `LoadConfig`, by concern: `shape.rs` the load shape
//! and window, `requests.rs` what is sent, `protocol.rs` the protocols' flags, `stream.rs`
//! streamed and LLM responses (`turns.rs` an LLM run's multi-turn conversations), `series.rs` a series of runs at several rates; `error.rs` the
//! one-line errors.

pub(crate) mod args;
mod config;
pub(crate) mod error;
mod protocol;
mod requests;
mod series;
mod shape;
mod stream;
pub mod switches;
mod turns;

pub use crate::shard_flags::{check_start_ahead, parse_shard, parse_start_at, START_AT_HORIZON_NS};
pub use args::{ArrivalArg, DataOrderArg, LoadArgs, RequestOrderArg, RunArgs};
pub use config::{load_config, run_config, run_config_of_words, shape_config};
pub use error::FlagError;
pub use series::{parse_rates, series_base, step_warmup_ns};
pub use shape::{count_window_ns, open_rate, rate_flag};

/// Threads when -t is not given (fewer when -c asks for fewer connections).
pub use candor_load::config::DEFAULT_THREADS;
