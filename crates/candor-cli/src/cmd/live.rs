//! `--live ADDR`: the flags; the server itself lives in `candor_runner::live`.

use anyhow::{Context, Result};
use candor_core::units::parse_duration_ns;
pub use candor_runner::live::{more_runs_follow, LiveSession};
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Serve a live view during the run at ADDR (HOST:PORT, e.g. 127.0.0.1:9464; port 0 picks a
    /// free one): the page at /, Server-Sent Events at /events, Prometheus metrics at /metrics.
    #[arg(long, value_name = "ADDR")]
    pub live: Option<String>,
    /// How long the live server stays up after the results are written, so that a scraper sees
    /// the final numbers.
    #[arg(long, default_value = "1s", value_name = "DUR", requires = "live")]
    pub live_linger: String,
}

/// Starts the live server if `--live` was given, before any load is sent.
pub fn start(args: &LiveArgs) -> Result<Option<LiveSession>> {
    let Some(addr) = &args.live else {
        return Ok(None);
    };
    let linger =
        Duration::from_nanos(parse_duration_ns(&args.live_linger).context("--live-linger")?);
    Ok(Some(candor_runner::live::start(addr, linger)?))
}
