//! The one live server of this process (`--live`) that every run of the command (a `run`, or
//! each step of a `sweep` or `capacity`) reports its intervals to.

use candor_core::units::format_rate;
use candor_live::{LiveError, LiveServer, RunInfo};
use candor_load::{IntervalReport, RunOutcome, RunPlan};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server every run of this process reports to (one command per process, so one at most).
static SERVER: Mutex<Option<Arc<LiveServer>>> = Mutex::new(None);

/// Set while the command has more runs to come after the current one (sweep and capacity steps),
/// so that the event stream does not end with the current run.
static MORE_RUNS: AtomicBool = AtomicBool::new(false);

/// Says whether another run follows the next one.
pub fn more_runs_follow(more: bool) {
    MORE_RUNS.store(more, Ordering::SeqCst);
}

fn current() -> Option<Arc<LiveServer>> {
    SERVER.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The live server of this command; [`LiveSession::close`] keeps it up for the linger time.
pub struct LiveSession {
    linger: Duration,
}

/// Starts the live server at `addr`, to linger `linger` after the results: a bad or busy address
/// is an error here, before any load is sent. Prints where it listens on stderr (stdout stays
/// for results).
pub fn start(addr: &str, linger: Duration) -> Result<LiveSession, LiveError> {
    let server = LiveServer::bind(addr)?;
    let a = server.addr();
    eprintln!(
        "candor: live view at http://{a}/ (metrics: http://{a}/metrics, events: http://{a}/events)"
    );
    *SERVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(server));
    Ok(LiveSession { linger })
}

impl LiveSession {
    /// Call after the results are written: serves the final state for the linger time, then
    /// stops. Ctrl-C (or SIGTERM) ends the linger early: the run's own handlers have replaced
    /// the default action by then, so without this a long linger could not be interrupted.
    pub fn close(self) {
        let interrupted = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, interrupted.clone());
        }
        let end = std::time::Instant::now() + self.linger;
        while !interrupted.load(Ordering::SeqCst) {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        SERVER.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A run of `config` begins.
pub fn begin(config: &RunPlan) {
    if let Some(s) = current() {
        let target_per_s = config.shard_rate_per_s();
        s.begin(RunInfo {
            target: config.target.url.clone(),
            target_per_s,
            total_s: (config.warmup_ns + config.duration_ns) as f64 / 1e9,
            warmup_s: config.warmup_ns as f64 / 1e9,
            shard: (config.shard_count > 1).then_some(config.shard_index),
            label: match target_per_s {
                Some(r) => format!("{} at {}", config.target.url, format_rate(r)),
                None => format!("{} closed loop", config.target.url),
            },
        });
    }
}

/// One interval of the current run.
pub fn interval(report: &IntervalReport) {
    if let Some(s) = current() {
        s.interval(report);
    }
}

/// The current run ended.
pub fn finish(outcome: &RunOutcome, stopped_early: bool) {
    if let Some(s) = current() {
        s.finish(outcome, stopped_early, !MORE_RUNS.load(Ordering::SeqCst));
    }
}

/// The flags of the live view, shared by every command that sends load.
#[derive(clap::Args, Debug, Clone)]
pub struct LiveArgs {
    /// Serve a live view during the run at ADDR (HOST:PORT, e.g. 127.0.0.1:9464; port 0 picks a
    /// free one): the page at /, Server-Sent Events at /events, Prometheus metrics at /metrics.
    #[arg(long, value_name = "ADDR")]
    pub live: Option<String>,
    /// How long the live server stays up after the results are written, so that a scraper sees
    /// the final numbers.
    #[arg(long, default_value = "1s", value_name = "DUR", requires = "live")]
    pub live_linger: candor_core::units::DurationArg,
}
