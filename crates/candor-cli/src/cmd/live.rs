//! `--live ADDR`: the flags; the server itself lives in `candor_runner::live_view`.

use anyhow::{Context, Result};
use candor_core::units::parse_duration_ns;
pub use candor_runner::live_view::{more_runs_follow, LiveArgs, LiveSession};
use std::time::Duration;

/// Starts the live server if `--live` was given, before any load is sent.
pub fn start(args: &LiveArgs) -> Result<Option<LiveSession>> {
    let Some(addr) = &args.live else {
        return Ok(None);
    };
    let linger =
        Duration::from_nanos(parse_duration_ns(&args.live_linger).context("--live-linger")?);
    Ok(Some(candor_runner::live_view::start(addr, linger)?))
}
