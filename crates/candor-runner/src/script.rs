//! `candor run -s script.lua`: the wrk script loaded, checked and set up before any load (each
//! failure one line), its thread states handed to the engine, SIGINT reaching Lua code that
//! never returns, and after the run the script's own report (`done()`), the time it took and
//! why it stopped the run, if it did.

use crate::flags::RunArgs;
use crate::interrupt;
use candor_core::results::{RunResults, StopDetail, StopReason};
use candor_core::units::format_ns;
use candor_load::workload::script_source::{LuaTime, ScriptRun, ScriptStop};
use candor_load::RunPlan;
use candor_script::{
    InterruptHandle, RunSummary, ScriptError, ScriptHost, ScriptOptions, ScriptTarget,
    WrkErrorCounts,
};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Mean time in Lua per request above which the report warns: at that cost one thread cannot
/// keep a schedule much faster than 10k/s, and the script, not the target, sets the send lag.
const WARN_LUA_NS_PER_REQUEST: u64 = 50_000;

/// Share of a load thread's interval between intended sends (open loop) spent in Lua above
/// which the report warns: beyond it a burst or a slow call leaves the thread behind.
const WARN_LUA_SHARE: f64 = 0.5;

/// Why a script cannot run, or failed after the run: one line each.
#[derive(Debug, thiserror::Error)]
pub enum ScriptRunError {
    /// Flags a script does not combine with.
    #[error("{0}")]
    Flags(&'static str),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Config(#[from] candor_load::LoadConfigError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Histogram(#[from] candor_core::hist::HistCodecError),
    #[error(transparent)]
    NewHistogram(#[from] hdrhistogram::CreationError),
}

type Result<T> = std::result::Result<T, ScriptRunError>;

/// A script loaded for a run, and what it needs after it.
pub struct LoadedScript {
    host: ScriptHost,
    run: Arc<ScriptRun>,
    interrupt: InterruptHandle,
    /// Set when the run is over: the watcher that forwards a signal into Lua then ends.
    finished: Arc<AtomicBool>,
    /// Open loop: each load thread's mean interval between intended sends, in ns.
    thread_interval_ns: Option<f64>,
}

/// Refuses, before anything reads a file or contacts the target, the flags a script cannot
/// combine with and that act before [`prepare`] would see them: `--reflect` asks the server
/// for its descriptors while the flags are read, and `--llm` makes requests of its own.
pub fn check_flags(args: &RunArgs) -> Result<()> {
    if args.script.is_none() {
        return Ok(());
    }
    let load = &args.load;
    if load.llm.is_some() {
        return Err(ScriptRunError::Flags("-s (a wrk script) makes the requests; it does not combine with --llm, which makes OpenAI requests of its own (give the script's request() the JSON body, or drop -s)"));
    }
    if load.call.is_some() || load.reflect || !load.proto.is_empty() {
        return Err(ScriptRunError::Flags("-s (a wrk script) makes HTTP requests; it does not apply to gRPC calls (--call, --proto, --reflect)"));
    }
    Ok(())
}

/// Loads `args.script` into `config` (one thread state per load thread): a syntax error, an
/// error in `setup`/`init`, or `delay()` in an open loop is one line, before any load is sent.
pub fn prepare(args: &RunArgs, config: &mut RunPlan) -> Result<Option<LoadedScript>> {
    let Some(path) = &args.script else {
        return Ok(None);
    };
    if args.repeat.is_some() {
        // Repeats are meant to be the same test N times; a script's state (its counters, a
        // token, thread:set values, what setup() handed out) would carry from one into the next.
        return Err(ScriptRunError::Flags("--repeat does not combine with -s: the script's state would carry from one repeat into the next, so the repeats would not be the same test (run candor once per repeat instead)"));
    }
    let headers = args
        .load
        .headers
        .iter()
        .filter_map(|h| {
            let (name, value) = h.split_once(':')?;
            Some((name.trim().to_string(), value.trim().to_string()))
        })
        .collect();
    let target = ScriptTarget {
        url: args.load.url.clone(),
        headers,
        method: Some(config.method.clone()),
        body: (!config.body.is_empty()).then(|| config.body.clone()),
    };
    let mut options = ScriptOptions::default();
    if let Some(limit) = args.script_memory {
        options.heap_limit = limit;
    }
    let mut host = ScriptHost::load_with(path, args.script_args.clone(), target, options)?;
    if config.is_open_loop() {
        host.check_open_loop()?;
    }
    let threads = host.setup_threads(config.threads)?;
    let run = Arc::new(ScriptRun::new(threads, host.source_contains("name")));
    config.workload.script = Some(run.clone());
    config.validate()?;
    let interrupt = host.interrupt_handle();
    let finished = Arc::new(AtomicBool::new(false));
    watch_signals(interrupt.clone(), finished.clone(), Some(run.clone()))?;
    let thread_interval_ns = config
        .shard_rate_per_s()
        .filter(|r| *r > 0.0)
        .map(|r| config.threads.max(1) as f64 * 1e9 / r);
    Ok(Some(LoadedScript {
        host,
        run,
        interrupt,
        finished,
        thread_interval_ns,
    }))
}

/// The script's calls, by function: `request()` and `response()` always (a script without
/// `request()` is said to have none), `delay()` when it was called, each a share of the time
/// reported with them.
fn calls_made(lua: &LuaTime) -> String {
    let mut calls = Vec::with_capacity(3);
    if lua.makes_requests {
        calls.push(format!("{} request()", lua.request_calls));
    }
    calls.push(format!("{} response()", lua.response_calls));
    if lua.delay_calls > 0 {
        calls.push(format!("{} delay()", lua.delay_calls));
    }
    let last = calls.pop().unwrap_or_default();
    let mut text = if calls.is_empty() {
        format!("{last} calls")
    } else {
        format!("{} and {last} calls", calls.join(", "))
    };
    if !lua.makes_requests {
        text.push_str(
            "; no request(): the request wrk.format() built after init() was sent every time",
        );
    }
    text
}

/// How long after the run's window and drain a script still in Lua is stopped: the engine
/// makes no call after its drain, so only a call that would not return is still running then
/// (the second keeps a call that a busy machine delayed past the instant from being cut).
const OVERRUN_GRACE_NS: u64 = 1_000_000_000;

/// A signal must stop a script stuck in Lua (an endless loop in `request()`): Lua's hook checks
/// the script's own flag, which this thread sets once the run's stop is asked for, or once the
/// run's window and drain are over (`run`'s deadline) while a call still runs.
fn watch_signals(
    interrupt: InterruptHandle,
    finished: Arc<AtomicBool>,
    run: Option<Arc<ScriptRun>>,
) -> Result<()> {
    let stop = interrupt::install()?.stop.clone();
    std::thread::Builder::new()
        .name("candor-script-signal".into())
        .spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) {
                    interrupt.interrupt();
                    return;
                }
                let overran = run
                    .as_ref()
                    .and_then(|r| r.deadline_ns())
                    .is_some_and(|at| candor_core::now_ns() > at.saturating_add(OVERRUN_GRACE_NS));
                if overran {
                    interrupt.interrupt_overrun();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        })?;
    Ok(())
}

impl LoadedScript {
    /// After the run: marks the results when the script stopped it, and says what the script
    /// cost (a line for the report; a warning in the results when it is large). Returns that
    /// line and the one-line error when the script failed (the run then exits non-zero).
    pub fn mark(&self, results: &mut RunResults) -> (String, Option<String>) {
        self.finished.store(true, Ordering::Relaxed);
        let lua = self.run.lua_time();
        let requests = results.main.requests.intended.max(1);
        let per_request = lua.total_ns / requests;
        let took = format!(
            "the script ({}) spent {} in Lua per intended request on average ({}, {} in all{}): that time is in the send lag of the requests it delayed",
            self.host.script_name(),
            format_ns(per_request as f64),
            calls_made(&lua),
            format_ns(lua.total_ns as f64),
            if lua.makes_requests {
                format!(
                    "; the longest request() took {}",
                    format_ns(lua.longest_request_ns as f64)
                )
            } else {
                String::new()
            },
        );
        if lua.odd_delays > 0 {
            let value = lua.first_odd_delay.map_or_else(String::new, |v| {
                if v.is_nan() {
                    " nan".to_string()
                } else {
                    format!(" {v}")
                }
            });
            results.warnings.push(format!(
                "delay() returned{value} ({} of its {} calls returned a negative number or NaN): each was taken as no wait (0 ms)",
                lua.odd_delays, lua.delay_calls
            ));
        }
        if lua.long_delays > 0 {
            let value = lua.first_long_delay.map_or_else(String::new, |v| match v {
                v if v.is_infinite() => " inf".to_string(),
                v if v >= 1e9 => format!(" {v:e}"),
                v => format!(" {v}"),
            });
            results.warnings.push(format!(
                "delay() returned{value} ({} of its {} calls asked to wait longer than the whole run, {} with the drain): each held its connection until the run's end",
                lua.long_delays,
                lua.delay_calls,
                format_ns(lua.run_span_ns as f64)
            ));
        }
        // Large on its own, or against the time a load thread has per request in an open loop.
        let share = self
            .thread_interval_ns
            .map_or(0.0, |interval| per_request as f64 / interval);
        let line = if per_request > WARN_LUA_NS_PER_REQUEST || share >= WARN_LUA_SHARE {
            let of_interval = match self.thread_interval_ns {
                Some(interval) => format!(
                    " ({:.0}% of each load thread's {} between intended sends)",
                    share * 100.0,
                    format_ns(interval)
                ),
                None => String::new(),
            };
            results.warnings.push(format!("{took}{of_interval}; at this cost the script, not the target, limits how closely the schedule is kept"));
            String::new()
        } else {
            format!("{took}\n")
        };
        let Some(stop) = self.run.stop_reason() else {
            return (line, None);
        };
        let (detail, error) = match stop {
            ScriptStop::Error(message) => (
                format!("the script failed: {message}; the schedule ended there and these are the results so far"),
                Some(message),
            ),
            ScriptStop::ThreadStop => (
                "the script called thread:stop(); the schedule ended there".to_string(),
                None,
            ),
            // os.exit(0) (or true, or nothing) is a stop the script meant; any other code is a
            // failure it reports, exit 1 (its own code could pass for one of candor's).
            ScriptStop::Exit { code, message } => (
                format!("{message}; the schedule ended there"),
                (code != 0).then_some(message),
            ),
        };
        results.stop_reason = Some(StopReason::Abort);
        let at_s = results
            .stop
            .as_ref()
            .map_or(results.main.duration_s, |s| s.at_s);
        results.stop = Some(StopDetail {
            at_s,
            intervals: results.intervals.iter().filter(|i| !i.warmup).count() as u64,
            precision: Vec::new(),
            objective: None,
            detail: detail.clone(),
        });
        if error.is_some() {
            results.warnings.insert(0, detail);
        }
        (line, error)
    }

    /// Runs `done(summary, latency, requests)` with the run's numbers, writing what the script
    /// printed (kept from the run, then `done()`'s as it prints) to stdout, or to stderr when
    /// the JSON goes to stdout. A signal during `done()` stops it (the results are written
    /// already); `os.exit(0)` in it is no error.
    pub fn done(&mut self, results: &RunResults, to_stderr: bool) -> Result<()> {
        // A signal interrupted the run's states; done() still reports, as wrk's does. A signal
        // not seen yet stops done() too; after one, a second ends the process (the handlers).
        // A signal that came after the run had ended on its own (between the results and this
        // call) is one that done() has not seen: the watcher stops done() at once for it.
        self.interrupt.clear();
        let stop = interrupt::install()?.stop.clone();
        let done_finished = Arc::new(AtomicBool::new(false));
        let run_was_interrupted = results.stop_reason == Some(StopReason::Interrupt);
        if !(stop.load(Ordering::Relaxed) && run_was_interrupted) {
            watch_signals(self.interrupt.clone(), done_finished.clone(), None)?;
        }
        let result = self.call_done(results, to_stderr);
        done_finished.store(true, Ordering::Relaxed);
        match result {
            Err(ScriptRunError::Script(ScriptError::Exit { code: 0, .. })) => Ok(()),
            other => other,
        }
    }

    fn call_done(&mut self, results: &RunResults, to_stderr: bool) -> Result<()> {
        let main = &results.main;
        let c = &main.requests;
        let e = &c.errors;
        let summary = RunSummary {
            duration_us: (main.duration_s * 1e6) as u64,
            requests: c.completed + e.status + e.check,
            bytes: c.bytes_read,
            errors: WrkErrorCounts {
                connect: e.connect,
                read: e.read + e.parse,
                write: e.write + e.template,
                status: e.status + e.check,
                timeout: e.timeout,
            },
        };
        let latency = main.histograms.decode()?.response;
        let threads = results.config.threads().unwrap_or(1).max(1) as f64;
        let mut requests = Histogram::<u64>::new(3)?;
        for i in results
            .intervals
            .iter()
            .filter(|i| !i.warmup && i.length_s > 0.0)
        {
            let per_thread = (i.completed + i.failed) as f64 / i.length_s / threads;
            // record grows the histogram to the value (saturating_record would clamp it).
            let _ = requests.record(per_thread.round() as u64);
        }
        let out: Box<dyn std::io::Write + Send> = if to_stderr {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        };
        Ok(self.host.done_to(&summary, &latency, &requests, out)?)
    }
}
