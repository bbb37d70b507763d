//! Runs one configured load test the way the `candor` process does: the open-file limit, the
//! pre-flight checks of reachability and protocol, the signal handlers, the live line on stderr
//! and the live view; and records the settings and command line its results carry.
//!
//! Every command that sends load (`run`, `sweep`, `capacity`, `calibrate`, `demo`) goes through
//! [`execute_watched`], so that these concerns are written once. `candor run`'s objectives,
//! early ends and pause wrap it (`extras.rs`, `stop.rs`).

// A run's notes on stderr are best effort: a reader that has gone (`2>&1 | head -1`) must not
// turn a note into a panic in the middle of a run. These shadow std's for the whole crate.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod demo_runs;
pub mod extras;
pub mod fdlimit;
pub mod flags;
pub mod goodput_of_slo;
pub mod grpc_flags;
pub mod interrupt;
pub mod live_view;
pub mod llm_demo;
pub mod rate_series;
pub mod results_file;
pub(crate) mod shard_flags;
pub mod stop;
pub mod verdicts;

pub use results_file::run_results;

use candor_core::results::{ArrivalName, RunConfig, StopReason};
use candor_core::units::{format_ns, format_rate};
use candor_load::load_run::RunOptions;
use candor_load::schedule::ArrivalKind;
use candor_load::{IntervalReport, RunOutcome, RunPlan, Scheme};
use std::io::Write as _;
use std::sync::Arc;

/// Why a load test could not run (each a one-line message for the user).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    FdLimit(#[from] fdlimit::FdLimitError),
    #[error(transparent)]
    Target(#[from] candor_load::TargetError),
    #[error(transparent)]
    Protocol(#[from] candor_load::probe::ProbeError),
    #[error("installing the signal handlers: {0}")]
    Signals(#[from] std::io::Error),
    #[error(transparent)]
    Run(#[from] candor_load::load_run::RunError),
    #[error(transparent)]
    Extras(#[from] extras::ExtrasError),
    #[error("the pre-flight check: {0}")]
    Thread(std::io::Error),
}

/// A hook called with the monotonic instant of the first intended send.
pub type OnStart = Arc<dyn Fn(u64) + Send + Sync>;

/// Runs a configured load test with an optional live line on stderr; a signal stops it early.
pub fn execute(config: &RunPlan, live: bool) -> Result<RunOutcome, RunnerError> {
    execute_with(config, live, None)
}

/// [`execute`] with a hook called with the monotonic instant of the first intended send.
pub fn execute_with(
    config: &RunPlan,
    live: bool,
    on_start: Option<OnStart>,
) -> Result<RunOutcome, RunnerError> {
    execute_watched(config, live, on_start, &mut |_, _| None)
}

/// [`execute_with`] with a watch called after every interval: when it names a reason, the
/// measured window ends early for it (see `candor_load::load_run::EarlyEnd`). What it writes into
/// its `String` (cleared before each call) ends the live line, e.g. progress toward
/// `--precision`.
pub fn execute_watched(
    config: &RunPlan,
    live: bool,
    on_start: Option<OnStart>,
    watch: &mut (dyn FnMut(&IntervalReport, &mut String) -> Option<StopReason> + Send),
) -> Result<RunOutcome, RunnerError> {
    // First of all: a signal in any phase, the probes' included, asks for the same stop.
    let stop = interrupt::install()?.stop.clone();
    let targets = 1 + config.workload.targets.len();
    fdlimit::ensure(config.connections * targets, config.threads * targets)?;
    // Fail before starting threads if nothing listens there, or if it does not speak the
    // protocol of the run (TLS and its certificate, HTTP/2): a run in which nothing could work
    // must not look like a result.
    let probe_timeout = std::time::Duration::from_millis((config.timeout_ns / 1_000_000).max(100));
    let probed = config.clone();
    let probes = move || -> Result<(), RunnerError> {
        probed.target.check_reachable(probe_timeout)?;
        candor_load::probe::check_protocol(&probed, probe_timeout)?;
        for target in &probed.workload.targets {
            let mut other = probed.clone();
            other.target = target.clone();
            other.target.check_reachable(probe_timeout)?;
            candor_load::probe::check_protocol(&other, probe_timeout)?;
        }
        Ok(())
    };
    // Stopped during the probes: the run below sees the stop at once and ends with its (empty)
    // results marked interrupted, as a stop in any later phase does.
    if let Some(probed) = interrupt::unless_stopped(&stop, probes).map_err(RunnerError::Thread)? {
        probed?;
    }
    announce_wait(config);
    live_view::begin(config);
    let end = Arc::new(candor_load::load_run::EarlyEnd::default());
    let options = RunOptions {
        stop: stop.clone(),
        end: end.clone(),
        worker_start_hook: None,
        on_start,
    };
    let mut line = LiveLine::default();
    let mut status = String::new();
    let mut on_interval = |r: &IntervalReport| {
        live_view::interval(r);
        if end.requested().is_none() {
            status.clear();
            if let Some(reason) = watch(r, &mut status) {
                end.request(reason);
            }
        }
        let text = line.next(r, &status);
        if live {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{text}");
            let _ = err.flush();
        }
    };
    let outcome = candor_load::run(config, options, &mut on_interval)?;
    live_view::finish(&outcome, stop.load(std::sync::atomic::Ordering::Relaxed));
    if live {
        eprint!("\r\x1b[2K");
    }
    Ok(outcome)
}

/// Says on stderr how long a `--start-at` ahead will keep the run waiting (a silent wait reads as
/// a hang).
fn announce_wait(config: &RunPlan) {
    let Some(at) = config.start_at_wall_ns else {
        return;
    };
    let now = candor_core::clock::wall_clock_ns();
    if at > now {
        eprintln!(
            "candor: waiting until {} (in {}) as --start-at asks; SIGINT or SIGTERM ends the wait",
            candor_core::dates::rfc3339_millis(at as f64 / 1e9),
            format_ns((at - now) as f64)
        );
    }
}

/// The one-line progress shown on a terminal during a run, rewritten every interval.
#[derive(Debug, Default)]
pub struct LiveLine {
    failed: u64,
}

impl LiveLine {
    /// The line after interval `r` (it counts failures across intervals), ended by `status`
    /// (the watch's progress, e.g. toward `--precision`) when there is one.
    pub fn next(&mut self, r: &IntervalReport, status: &str) -> String {
        self.failed += r.failed;
        format!(
            "\r\x1b[2K[{:>6.1}s / {:.0}s{}] {:>10}  failures {}  p99 {}  max {}{}{status}",
            r.elapsed_s,
            r.total_s,
            if r.warmup { " warm-up" } else { "" },
            format_rate(r.completed as f64 / r.length_s),
            self.failed,
            format_ns(r.response_time.p99_ns as f64),
            format_ns(r.response_time.max_ns as f64),
            if status.is_empty() { "" } else { "  " },
        )
    }
}

/// True when stderr is a terminal (where the live line belongs).
pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

/// The settings of `c` as its results record them.
pub fn recorded_config(c: &RunPlan) -> RunConfig {
    let mut settings = RunConfig {
        arrival: Some(match c.shape.arrival() {
            ArrivalKind::Constant => ArrivalName::Constant,
            ArrivalKind::Poisson { .. } => ArrivalName::Poisson,
        }),
        body_bytes: c.body.len(),
        check_status: match &c.grpc {
            Some(g) => Some(g.accept.to_string()),
            None => matches!(c.target.scheme, Scheme::Http | Scheme::Https)
                .then(|| c.accept_status.to_string()),
        },
        connections: c.connections,
        drain_s: c.drain_ns as f64 / 1e9,
        duration_s: c.duration_ns as f64 / 1e9,
        grpc_call: c.grpc.as_ref().map(|g| g.call.clone()),
        // Credentials stay out of results files, which are made to be shared.
        headers: c.headers.iter().map(|h| redact_header(h)).collect(),
        interrupted_after_s: None,
        interval_s: c.interval_ns as f64 / 1e9,
        late_start_s: None,
        method: c.method.clone(),
        // The protocol records its own (below); these are the defaults of the others.
        pipeline: 1,
        profile: c.shape.profile().map(|p| p.describe()),
        protocol: Some(c.protocol_name()),
        rate_per_s: c.shape.rate_per_s(),
        request_set_size: (!c.requests.is_empty()).then_some(c.requests.len()),
        requests_total: c.shape.count(),
        seed: match c.shape.arrival() {
            ArrivalKind::Poisson { seed } => Some(seed),
            ArrivalKind::Constant => None,
        },
        shard_count: c.shard_count,
        shard_index: c.shard_index,
        spin_us: c.spin_ns.map(|n| n as f64 / 1e3),
        start_at_unix_s: c.start_at_wall_ns.map(|n| n as f64 / 1e9),
        streams: None,
        threads: c.threads,
        timeout_s: c.timeout_ns as f64 / 1e9,
        tls_insecure: c.tls.insecure,
        warmup_s: c.warmup_ns as f64 / 1e9,
        ws_binary: None,
        ws_match: None,
    };
    c.protocol.record(&mut settings);
    settings
}

/// `Authorization: (redacted)` for an Authorization header line, the line itself otherwise.
pub fn redact_header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if name.trim().eq_ignore_ascii_case("authorization") => {
            format!("{}: (redacted)", name.trim())
        }
        _ => line.to_string(),
    }
}

/// `args` (a command line) for the results, with the URL's password hidden as in the target and
/// Authorization header values hidden as in the configuration.
pub fn redacted_command_line(
    args: impl IntoIterator<Item = String>,
    config: &RunPlan,
    url_given: &str,
) -> Vec<String> {
    let mut header_value_next = false;
    args.into_iter()
        .map(|arg| {
            let redact_value = std::mem::take(&mut header_value_next);
            header_value_next = arg == "-H" || arg == "--header";
            if arg == url_given {
                config.target.url.clone()
            } else if redact_value {
                redact_header(&arg)
            } else if let Some(h) = arg.strip_prefix("--header=") {
                format!("--header={}", redact_header(h))
            } else {
                arg
            }
        })
        .collect()
}

/// This process's command line for the results (see [`redacted_command_line`]).
pub fn command_line(config: &RunPlan, url_given: &str) -> Vec<String> {
    redacted_command_line(std::env::args(), config, url_given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_values_never_reach_the_results() {
        assert_eq!(
            redact_header("authorization: Bearer s3cret"),
            "authorization: (redacted)"
        );
        assert_eq!(redact_header("X-Trace: 1"), "X-Trace: 1");
    }
}
