//! `--live ADDR`: the flags; the server itself lives in `candor_runner::live_view`.

use anyhow::Result;
pub use candor_runner::live_view::{more_runs_follow, LiveArgs, LiveSession};
use std::time::Duration;

/// Starts the live server if `--live` was given, before any load is sent.
pub fn start(args: &LiveArgs) -> Result<Option<LiveSession>> {
    let Some(addr) = &args.live else {
        return Ok(None);
    };
    let linger = Duration::from_nanos(args.live_linger.ns());
    Ok(Some(candor_runner::live_view::start(addr, linger)?))
}
