//! The one way a configured load test is run by every command that sends load (`run`, its
//! repeats, `sweep`, `capacity`, `calibrate`, `demo`): signals, the open-file limit, the
//! pre-flight probes, the live line on stderr and the live view, and a watch that may end the
//! measured window early.

use crate::{fdlimit, interrupt, live_view, push_view, RunnerError};
use candor_core::results::StopReason;
use candor_core::units::{format_ns, format_rate};
use candor_load::load_run::RunOptions;
use candor_load::{IntervalReport, RunOutcome, RunPlan};
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How long the backend probe of an `--llm` run (`GET /v1/models`) may take: it names the
/// server, it must not hold the run up.
const BACKEND_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

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
    // Over datagrams a TCP connect proves nothing: the protocol's own probe is the check.
    let by_stream = probed.protocol.transport() == candor_load::seam::Transport::Stream;
    let probes = move || -> Result<(), RunnerError> {
        if by_stream {
            probed.target.check_reachable(probe_timeout)?;
        }
        candor_load::probe::check_protocol(&probed, probe_timeout)?;
        for target in &probed.workload.targets {
            let mut other = probed.clone();
            other.target = target.clone();
            if by_stream {
                other.target.check_reachable(probe_timeout)?;
            }
            candor_load::probe::check_protocol(&other, probe_timeout)?;
        }
        Ok(())
    };
    // Stopped during the probes: the run below sees the stop at once and ends with its (empty)
    // results marked interrupted, as a stop in any later phase does.
    if let Some(probed) = interrupt::unless_stopped(&stop, probes).map_err(RunnerError::Thread)? {
        probed?;
    }
    let mut named = None;
    let backend = config.llm_settings.as_ref().map(|s| {
        // Stopped during it, as during the probes above: the run below ends at once.
        let asked = config.clone();
        let answer = interrupt::unless_stopped(&stop, move || {
            candor_load::llm_backend::probe(&asked, BACKEND_PROBE_TIMEOUT)
        });
        // A signal may also break the probe's read (EINTR): a failure once stopped is the stop's.
        let b = match answer {
            Ok(Some(b)) if b.unknown.is_none() || !stop.load(Ordering::Relaxed) => b,
            Ok(_) => backend_unknown("no answer before the stop"),
            Err(e) => backend_unknown(&e.to_string()),
        };
        named = crate::llm_model::named_by_server(config, &b);
        // Said once per process: a sweep's or capacity's steps probe the same server.
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let say = |line: String| {
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!("{line}");
            }
        };
        match &named {
            Some(n) => {
                let model = n.llm_settings.as_ref().map_or("", |s| s.model.as_str());
                say(format!(
                    "candor: --model not given: the requests name {model}, the first model the server lists"
                ));
            }
            None => {
                if let Some(w) = b.model_warning(&s.model) {
                    say(format!("candor: warning: {w}"));
                }
            }
        }
        b
    });
    let config = named.as_ref().unwrap_or(config);
    announce_wait(config);
    live_view::begin(config);
    push_view::begin(config);
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
        push_view::interval(r);
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
    let mut outcome = candor_load::run(config, options, &mut on_interval)?;
    outcome.llm_backend = backend;
    outcome.llm_model_from_server = named
        .as_ref()
        .and_then(|n| Some(n.llm_settings.as_ref()?.model.clone()));
    live_view::finish(&outcome, stop.load(std::sync::atomic::Ordering::Relaxed));
    push_view::finish(&outcome, config);
    if live {
        eprint!("\r\x1b[2K");
    }
    Ok(outcome)
}

/// A backend the probe could not name, and why.
fn backend_unknown(why: &str) -> candor_core::results::LlmBackend {
    candor_core::results::LlmBackend {
        unknown: Some(format!("GET /v1/models: {why}")),
        ..Default::default()
    }
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
