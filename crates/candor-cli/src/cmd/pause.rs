//! Pausing a process under test during a run (SIGSTOP, then SIGCONT: the "^Z test"), timed on
//! the run's own monotonic clock, and comparing a measured distribution with the truth predicted
//! for known stall windows.

use anyhow::{bail, Context, Result};
use candor_core::truth::StallTruth;
use candor_core::units::{format_ns, parse_duration_ns};
use candor_core::{now_ns, precise_sleep_until, Summary};
use candor_load::IntervalReport;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use candor_analysis::stopping::{
    max_intended, AbortVerdict, AbortWatch, IntervalObs, PrecisionTarget, PrecisionWatch, RunBounds,
};
use candor_core::results::{StopDetail, StopReason};

/// Pause `pid` from `at_ns` after the run's first intended send, for `for_ns`.
#[derive(Debug, Clone, Copy)]
pub struct PauseSpec {
    pub pid: i32,
    pub at_ns: u64,
    pub for_ns: u64,
}

impl PauseSpec {
    /// Validates the flags: a live process that is not candor itself, a positive length.
    pub fn from_flags(pid: i32, at: &str, for_: &str) -> Result<PauseSpec> {
        if pid <= 0 {
            // kill() with 0 or a negative pid signals whole process groups: never do that.
            bail!("--pause-pid must be a positive process id, got {pid}");
        }
        if pid as u32 == std::process::id() {
            bail!("--pause-pid {pid} is candor itself");
        }
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        if unsafe { libc::kill(pid, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            bail!("--pause-pid {pid}: cannot signal that process: {e}");
        }
        let at_ns = parse_duration_ns(at).context("--pause-at")?;
        let for_ns = parse_duration_ns(for_).context("--pause-for")?;
        if for_ns == 0 {
            bail!("--pause-for must be longer than zero");
        }
        Ok(PauseSpec { pid, at_ns, for_ns })
    }
}

/// `[stop, resume)` of the pause on the monotonic clock, if it happened.
pub type PauseWindow = Option<(u64, u64)>;

/// The thread that pauses and resumes the process; [`Pauser::finish`] always resumes it.
pub struct Pauser {
    spec: PauseSpec,
    cancel: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<Result<PauseWindow, String>>>>,
}

/// Sleeps until `target` unless cancelled (then returns false at once).
fn sleep_until(target: u64, cancel: &std::sync::mpsc::Receiver<()>) -> bool {
    // Coarse, cancellable waiting first; the last 2 ms on the precise pacer.
    loop {
        let now = now_ns();
        if now + 2_000_000 >= target {
            break;
        }
        let wait = std::time::Duration::from_nanos(target - now - 2_000_000);
        match cancel.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return false,
        }
    }
    precise_sleep_until(target);
    true
}

fn signal(pid: i32, sig: libc::c_int) -> Result<(), String> {
    // SAFETY: plain kill(2) on a validated positive pid.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(format!(
            "signalling pid {pid}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Best effort: real-time priority for the pause thread, which sleeps nearly all the time but
/// must wake on time on a busy machine (the truth uses the instants it records, so lateness only
/// shifts the window; this keeps it close to what was asked). Without the privilege it stays
/// an ordinary thread.
fn raise_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sets the scheduling policy of the calling thread only.
    unsafe {
        libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
    }
}

impl Pauser {
    pub fn new(spec: PauseSpec) -> Arc<Pauser> {
        Arc::new(Pauser {
            spec,
            cancel: Mutex::new(None),
            thread: Mutex::new(None),
        })
    }

    /// The run's start hook: starts the pausing thread relative to the run's first intended send.
    pub fn hook(self: &Arc<Self>) -> Arc<dyn Fn(u64) + Send + Sync> {
        let me = self.clone();
        Arc::new(move |start_ns| {
            let (tx, rx) = channel::<()>();
            let spec = me.spec;
            let handle = std::thread::Builder::new()
                .name("candor-pause".into())
                .spawn(move || {
                    raise_priority();
                    if !sleep_until(start_ns + spec.at_ns, &rx) {
                        return Ok(None);
                    }
                    signal(spec.pid, libc::SIGSTOP)?;
                    let stopped = now_ns();
                    // Cancelled or not, the process is resumed; early only on cancel.
                    let _ = sleep_until(stopped + spec.for_ns, &rx);
                    signal(spec.pid, libc::SIGCONT)?;
                    Ok(Some((stopped, now_ns())))
                });
            match handle {
                Ok(h) => {
                    *me.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
                    *me.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                }
                Err(e) => eprintln!("candor: warning: cannot start the pause thread: {e}"),
            }
        })
    }

    /// Ends the pause (resuming the process if it is still stopped) and returns the actual
    /// `[stop, resume)` window on the monotonic clock, if the pause happened.
    pub fn finish(&self) -> Result<PauseWindow> {
        if let Some(tx) = self.cancel.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(());
        }
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        match handle {
            None => Ok(None),
            Some(h) => match h.join() {
                Ok(r) => r.map_err(anyhow::Error::msg),
                Err(_) => {
                    // Never leave the target stopped.
                    let _ = signal(self.spec.pid, libc::SIGCONT);
                    bail!("the pause thread panicked")
                }
            },
        }
    }
}

/// Rows of a truth table: label and percentile (100 = max, negative = mean).
pub const TRUTH_ROWS: [(&str, f64); 8] = [
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
    ("max", 100.0),
    ("mean", -1.0),
];

/// One row of predicted versus measured.
#[derive(Debug, Clone)]
pub struct TruthRow {
    pub label: &'static str,
    pub predicted_ns: f64,
    pub measured_ns: f64,
    /// Allowed |measured − predicted|; for rows in the unstalled body only an upper bound.
    pub tolerance_ns: f64,
    /// The prediction is the plain service time (the row is below 1 − f).
    pub body: bool,
    /// Extra allowance above the prediction for the drain after a stall (see [`Drain`]); the
    /// stall-only prediction leaves it out, and it only ever makes a measurement read higher.
    pub drain_ns: f64,
}

/// How the backlog of a stall leaves once the stall ends. Requests intended during a stall of
/// length `S` queue up (`rate · S` of them) and go out `connections` at a time, one round trip
/// (`round_ns`, the run's own service time) apart. The request whose stall-only prediction is `w`
/// was intended `S − w` before the end, so `rate · (S − w)` requests leave ahead of it and it waits
/// `⌈rate · (S − w) / connections⌉` extra rounds. On an idle machine a round is ~0.1 ms and this is
/// noise; on a busy 2-core machine a round can take a millisecond and the p90 of a 1 s stall at
/// 1,000/s on 16 connections sits 31 rounds deep, so ignoring it would fail an honest measurement.
#[derive(Debug, Clone, Copy)]
pub struct Drain {
    pub rate_per_s: f64,
    pub connections: usize,
    pub round_ns: f64,
}

impl Drain {
    /// No drain allowance (unit tests of the stall-only prediction).
    #[cfg(test)]
    pub const NONE: Drain = Drain {
        rate_per_s: 0.0,
        connections: 1,
        round_ns: 0.0,
    };

    /// Extra wait of a request whose stall-only wait is `predicted_ns` in a stall of `stall_ns`.
    pub fn allowance_ns(&self, stall_ns: f64, predicted_ns: f64) -> f64 {
        let ahead = self.rate_per_s * (stall_ns - predicted_ns).max(0.0) / 1e9;
        (ahead / self.connections.max(1) as f64).ceil() * self.round_ns
    }
}

impl TruthRow {
    pub fn error_ns(&self) -> f64 {
        self.measured_ns - self.predicted_ns
    }
    pub fn pass(&self) -> bool {
        if self.body {
            self.measured_ns <= self.predicted_ns + self.tolerance_ns
        } else {
            let err = self.error_ns();
            -self.tolerance_ns <= err && err <= self.tolerance_ns + self.drain_ns
        }
    }
}

/// Tolerance of a stall prediction: 5 ms plus 2% of the predicted value (see docs/truth-tools.md).
pub fn stall_tolerance_ns(predicted_ns: f64) -> f64 {
    5e6 + 0.02 * predicted_ns
}

/// Predicted versus measured response time for every row of [`TRUTH_ROWS`], each stalled row
/// allowed the `drain` it implies.
pub fn truth_rows(truth: &StallTruth, measured: &Summary, drain: &Drain) -> Vec<TruthRow> {
    let f = truth.stalled_fraction();
    let stall_ns = truth.max() as f64;
    TRUTH_ROWS
        .iter()
        .map(|&(label, p)| {
            let (predicted, got) = if p < 0.0 {
                (truth.mean(), measured.mean_ns)
            } else if p >= 100.0 {
                (truth.max() as f64, measured.max_ns as f64)
            } else {
                (
                    truth.percentile(p) as f64,
                    measured.at(p).unwrap_or(0) as f64,
                )
            };
            // Rows within a point of 1 − f sit on the edge of the stalled tail, where the smallest
            // stalled waits (plus the drain after each stall) meet the service time: judged as
            // stall rows, not as service time.
            let body = (0.0..100.0).contains(&p) && 1.0 - p / 100.0 > f + 0.01;
            let tolerance = if p < 0.0 {
                3e6 + 0.05 * predicted
            } else {
                stall_tolerance_ns(predicted)
            };
            // The mean carries the average drain of the stalled fraction: f · (rounds at S/2).
            let drain_ns = if body {
                0.0
            } else if p < 0.0 {
                f * drain.allowance_ns(stall_ns, stall_ns / 2.0)
            } else {
                drain.allowance_ns(stall_ns, predicted)
            };
            TruthRow {
                label,
                predicted_ns: predicted,
                measured_ns: got,
                tolerance_ns: tolerance,
                body,
                drain_ns,
            }
        })
        .collect()
}

/// The table, with a pass/fail column when `judge` is set.
pub fn render_truth(rows: &[TruthRow], judge: bool) -> String {
    let mut out = format!(
        "  {:<8} {:>12} {:>12} {:>11} {:>12}{}\n",
        "",
        "predicted",
        "measured",
        "error",
        "tolerance",
        if judge { "  result" } else { "" }
    );
    for r in rows {
        let err = r.error_ns();
        let tol = if r.body {
            format!("<= +{}", format_ns(r.tolerance_ns))
        } else if r.drain_ns > 0.0 {
            format!(
                "-{}..+{}",
                format_ns(r.tolerance_ns),
                format_ns(r.tolerance_ns + r.drain_ns)
            )
        } else {
            format!("±{}", format_ns(r.tolerance_ns))
        };
        out.push_str(&format!(
            "  {:<8} {:>12} {:>12} {:>11} {:>12}{}\n",
            r.label,
            format_ns(r.predicted_ns),
            format_ns(r.measured_ns),
            format!(
                "{}{}",
                if err < 0.0 { "-" } else { "+" },
                format_ns(err.abs())
            ),
            tol,
            if judge {
                if r.pass() {
                    "  pass"
                } else {
                    "  FAIL"
                }
            } else {
                ""
            }
        ));
    }
    out
}

/// What `candor run --slo/--precision/--abort-on-fail/--pause-*/--expect` adds to a run.
pub struct RunExtras {
    slo: candor_analysis::SloSet,
    precision: Vec<PrecisionTarget>,
    abort_on_fail: bool,
    pauser: Option<Arc<Pauser>>,
    expect: bool,
    window: Option<(u64, u64)>,
    /// Measured intervals seen by the watch when the run was decided, and what decided it.
    decided: Option<(u64, Decision)>,
    /// Measured intervals the watch saw in all.
    watched: u64,
}

/// What ended a run early.
enum Decision {
    Precision { at_s: f64 },
    Abort(AbortVerdict),
}

/// What bounds the measured window of `config`, for deciding that an objective can no longer pass.
pub fn run_bounds(config: &candor_load::LoadConfig) -> RunBounds {
    let target = config.rate.map(|r| r / config.shard_count as f64);
    let max_intended = target.map(|r| {
        let most = max_intended(
            r,
            config.duration_ns as f64 / 1e9,
            config.threads as u64,
            matches!(
                config.arrival,
                candor_load::schedule::ArrivalKind::Poisson { .. }
            ),
        );
        config.count.map_or(most, |n| n.min(most))
    });
    RunBounds {
        target_per_s: target,
        max_intended,
    }
}

/// Exit code of a run that worked but whose verdict is a failure (SLO missed, calibration failed).
pub const EXIT_VERDICT_FAILED: i32 = 3;

impl RunExtras {
    #[allow(clippy::too_many_arguments)]
    pub fn from_flags(
        slo: &[String],
        precision: &[String],
        abort_on_fail: bool,
        pause_pid: Option<i32>,
        pause_at: Option<&str>,
        pause_for: Option<&str>,
        expect: bool,
        config: &candor_load::LoadConfig,
    ) -> Result<RunExtras> {
        let slo = candor_analysis::SloSet::parse_all(slo)?;
        let precision = precision
            .iter()
            .map(|t| PrecisionTarget::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        if (abort_on_fail || !precision.is_empty()) && config.shard_count > 1 {
            // Each shard would decide on its own share and end at its own time, leaving holes
            // in the merged schedule.
            bail!(
                "--precision and --abort-on-fail end a run on its own data; shards must end together, so they \
                 cannot be used with --shard"
            );
        }
        if abort_on_fail && slo.is_empty() {
            bail!("--abort-on-fail watches the objectives of --slo: give at least one");
        }
        let pauser = match (pause_pid, pause_at, pause_for) {
            (None, None, None) => None,
            (Some(pid), Some(at), Some(for_)) => {
                let spec = PauseSpec::from_flags(pid, at, for_)?;
                let total = config.warmup_ns + config.duration_ns;
                if spec.at_ns >= total {
                    bail!(
                        "--pause-at {at} is not inside the run ({} with warm-up)",
                        format_ns(total as f64)
                    );
                }
                if spec.for_ns >= config.timeout_ns {
                    eprintln!(
                        "candor: warning: --pause-for {for_} is not shorter than --timeout {}: requests in flight \
                         during the pause will time out instead of completing after it",
                        format_ns(config.timeout_ns as f64)
                    );
                }
                Some(Pauser::new(spec))
            }
            _ => bail!("--pause-pid, --pause-at and --pause-for go together"),
        };
        if expect && pauser.is_none() {
            bail!("--expect predicts the distribution of a pause: give --pause-pid, --pause-at and --pause-for");
        }
        Ok(RunExtras {
            slo,
            precision,
            abort_on_fail,
            pauser,
            expect,
            window: None,
            decided: None,
            watched: 0,
        })
    }

    /// Runs the load, pausing the process if asked; the process is always resumed.
    pub fn execute(
        &mut self,
        config: &candor_load::LoadConfig,
        live: bool,
    ) -> Result<candor_load::RunOutcome> {
        let mut precision =
            (!self.precision.is_empty()).then(|| PrecisionWatch::new(self.precision.clone()));
        let mut abort = self
            .abort_on_fail
            .then(|| AbortWatch::new(self.slo.objectives.clone(), run_bounds(config)));
        let planned_end_s = (config.warmup_ns + config.duration_ns) as f64 / 1e9;
        let mut decided = None;
        let mut watched = 0u64;
        let mut watch = |r: &IntervalReport, status: &mut String| -> Option<StopReason> {
            // Warm-up is not judged, nor the drain after the planned end (nothing is left to stop).
            if r.warmup || r.elapsed_s - r.length_s >= planned_end_s - 1e-9 {
                return None;
            }
            watched += 1;
            if let Some(a) = abort.as_mut() {
                let obs = IntervalObs {
                    end_s: r.elapsed_s,
                    length_s: r.length_s,
                    completed: r.completed,
                    failed: r.failed,
                    rec: r.histograms,
                };
                if let Some(v) = a.observe(&obs) {
                    decided = Some((watched, Decision::Abort(v)));
                    return Some(StopReason::Abort);
                }
            }
            if let Some(p) = precision.as_mut() {
                let reached = p.observe(&r.histograms.response);
                *status = p.progress();
                if reached {
                    decided = Some((watched, Decision::Precision { at_s: r.elapsed_s }));
                    return Some(StopReason::Precision);
                }
            }
            None
        };
        let outcome = crate::cmd::run::execute_watched(
            config,
            live,
            self.pauser.as_ref().map(|p| p.hook()),
            &mut watch,
        );
        self.decided = decided;
        self.watched = watched;
        if let Some(p) = &self.pauser {
            self.window = p.finish()?;
        }
        outcome
    }

    /// Adds the pause event and the analysis to `results`; returns text to print after the
    /// report and the exit code.
    pub fn finish(
        &self,
        outcome: &candor_load::RunOutcome,
        config: &candor_load::LoadConfig,
        results: &mut candor_core::results::RunResults,
    ) -> (String, i32) {
        let mut text = String::new();
        if let (Some(p), Some((stop, cont))) = (&self.pauser, self.window) {
            results
                .main
                .events
                .push(candor_core::results::TimelineEvent {
                    kind: "pause".into(),
                    at_s: stop.saturating_sub(outcome.start_ns) as f64 / 1e9,
                    length_s: (cont - stop) as f64 / 1e9,
                    detail: format!("SIGSTOP/SIGCONT of pid {}", p.spec.pid),
                });
        } else if self.pauser.is_some() {
            text.push_str(
                "\nWARNING: the pause did not happen (the run ended before --pause-at)\n",
            );
        }
        // Recorded in the results; the report (text::render) shows it.
        let aborted = self.stop_detail(outcome, config, results);
        let mut analysis = candor_analysis::analyze(results);
        analysis.slo = self.slo.evaluate(results);
        results.main.analysis = Some(analysis.to_value());
        if let (true, Some((stop, cont))) = (self.expect, self.window) {
            let from = outcome.start_ns + config.warmup_ns;
            let to = from + config.duration_ns;
            let base = results.main.service_time.at(50.0).unwrap_or(0);
            let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
            truth.stalls = vec![(stop, cont)];
            text.push_str(&format!(
                "\nExpected for a {} pause ({:.1}% of the measured window's intended sends fall in it; each waits\n\
                 until the pause ends, uniform on (0, {}]) versus measured response time:\n",
                format_ns((cont - stop) as f64),
                100.0 * truth.stalled_fraction(),
                format_ns((cont - stop) as f64)
            ));
            let drain = Drain {
                rate_per_s: config.rate.unwrap_or(0.0),
                connections: config.connections,
                round_ns: results.main.service_time.at(90.0).unwrap_or(0) as f64,
            };
            text.push_str(&render_truth(
                &truth_rows(&truth, &results.main.response_time, &drain),
                false,
            ));
        }
        let mut code = 0;
        if !analysis.slo.is_empty() {
            text.push('\n');
            text.push_str(&candor_analysis::slo::render(&analysis.slo));
            if !candor_analysis::slo::all_pass(&analysis.slo) {
                code = EXIT_VERDICT_FAILED;
                text.push_str(&format!("SLO: FAILED (exit code {EXIT_VERDICT_FAILED})\n"));
            } else {
                text.push_str("SLO: all objectives met\n");
            }
        }
        if aborted {
            code = EXIT_VERDICT_FAILED;
        }
        (text, code)
    }

    /// Records how the run ended in `results` (`stop`, and a first warning for an abort); true
    /// when the run was aborted.
    fn stop_detail(
        &self,
        outcome: &candor_load::RunOutcome,
        config: &candor_load::LoadConfig,
        results: &mut candor_core::results::RunResults,
    ) -> bool {
        if self.precision.is_empty() && !self.abort_on_fail {
            return false;
        }
        let planned_s = (config.warmup_ns + config.duration_ns) as f64 / 1e9;
        let at_s = outcome
            .ended_early
            .map_or(planned_s, |(_, after)| after as f64 / 1e9);
        let rows: Vec<_> = match results.main.histograms.decode() {
            Ok(rec) => self
                .precision
                .iter()
                .map(|t| t.row(&rec.response))
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut detail = StopDetail {
            at_s,
            intervals: self.watched,
            precision: rows,
            objective: None,
            detail: String::new(),
        };
        let mut aborted = false;
        match (results.stop_reason, &self.decided) {
            (Some(StopReason::Precision), Some((n, Decision::Precision { at_s: decided_s }))) => {
                detail.intervals = *n;
                detail.detail = format!(
                    "every --precision target was reached after {n} measured intervals (decided at {decided_s:.1} s); \
                     the schedule ended at {at_s:.1} s of {planned_s:.1} s planned and the outstanding requests drained"
                );
            }
            (Some(StopReason::Abort), Some((n, Decision::Abort(v)))) => {
                aborted = true;
                detail.intervals = *n;
                detail.objective = Some(v.objective.clone());
                detail.detail = format!(
                    "objective {} can no longer pass (decided at {:.1} s, after {n} measured intervals): {}",
                    v.objective, v.at_s, v.reason
                );
                results.warnings.insert(
                    0,
                    format!(
                        "aborted at {at_s:.1} s of {planned_s:.1} s planned (--abort-on-fail: objective {} could no \
                         longer pass); these results cover only what was due before the abort",
                        v.objective
                    ),
                );
            }
            (Some(StopReason::Interrupt), _) => {
                detail.detail = "interrupted by a signal before the run was decided".into();
            }
            _ if !self.precision.is_empty() => {
                detail.detail = format!(
                    "the planned duration ({:.1} s measured) ended before every --precision target was reached",
                    config.duration_ns as f64 / 1e9
                );
            }
            _ => {
                detail.detail = "no objective failed for good before the planned end".into();
            }
        }
        results.stop = Some(detail);
        aborted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    const MS: u64 = 1_000_000;

    /// Response times an honest measurement records at 1 kHz against the truth's windows, each
    /// plus `extra(wait)`.
    fn sampled_with(truth: &StallTruth, extra: impl Fn(u64) -> u64) -> Summary {
        let mut h = new_histogram();
        let mut t = truth.from_ns;
        while t < truth.to_ns {
            let wait = truth
                .stalls
                .iter()
                .find(|&&(s, e)| t >= s && t < e)
                .map_or(0, |&(_, e)| e - t);
            h.record(truth.base_ns + wait + extra(wait)).unwrap();
            t += MS;
        }
        Summary::of(&h)
    }

    fn sampled(truth: &StallTruth, extra_ns: u64) -> Summary {
        sampled_with(truth, |_| extra_ns)
    }

    #[test]
    fn an_honest_measurement_passes_every_row_and_a_blind_one_fails() {
        let truth = StallTruth::periodic(0, 1_000 * MS, 200 * MS, 0, 6_000 * MS, 30_000);
        let rows = truth_rows(&truth, &sampled(&truth, 0), &Drain::NONE);
        assert_eq!(rows.len(), TRUTH_ROWS.len());
        assert!(
            rows.iter().all(TruthRow::pass),
            "{}",
            render_truth(&rows, true)
        );
        assert!(
            rows[0].body && rows[1].body && !rows[2].body,
            "p50/p75 body, p90 stalled"
        );
        // Adding the drain-sized 2 ms everywhere still passes; 20 ms does not.
        assert!(truth_rows(&truth, &sampled(&truth, 2 * MS), &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        assert!(!truth_rows(&truth, &sampled(&truth, 20 * MS), &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        // A closed loop sees only the base: p90 and above fail.
        let mut blind = new_histogram();
        blind.record_n(30_000, 6_000).unwrap();
        let rows = truth_rows(&truth, &Summary::of(&blind), &Drain::NONE);
        assert!(!rows[2].pass() && !rows[3].pass());
        assert!(render_truth(&rows, true).contains("FAIL"));
    }

    #[test]
    fn the_drain_allowance_counts_the_rounds_ahead_and_only_widens_upwards() {
        // 1,000/s on 16 connections, 1 ms rounds, a 1 s stall: the request predicted at 500 ms
        // has 500 requests ahead of it, ⌈500/16⌉ = 32 rounds.
        let drain = Drain {
            rate_per_s: 1000.0,
            connections: 16,
            round_ns: MS as f64,
        };
        assert_eq!(drain.allowance_ns(1e9, 5e8), 32.0 * MS as f64);
        assert_eq!(drain.allowance_ns(1e9, 1e9), 0.0, "the first in the queue");
        let truth = StallTruth::periodic(0, 1_000 * MS, 200 * MS, 0, 6_000 * MS, 30_000);
        // Drained measurements (every stalled request late by its rounds) pass with the model...
        let drained = sampled_with(&truth, |wait| {
            if wait > 0 {
                drain.allowance_ns(200.0 * MS as f64, wait as f64) as u64
            } else {
                0
            }
        });
        assert!(!truth_rows(&truth, &drained, &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        let rows = truth_rows(&truth, &drained, &drain);
        assert!(
            rows.iter().all(TruthRow::pass),
            "{}",
            render_truth(&rows, true)
        );
        // ...and a blind (closed-loop) measurement still fails: the allowance is only upwards.
        let mut blind = new_histogram();
        blind.record_n(30_000, 6_000).unwrap();
        let rows = truth_rows(&truth, &Summary::of(&blind), &drain);
        assert!(!rows[2].pass() && !rows[3].pass());
    }

    #[test]
    fn pause_flags_are_validated() {
        assert!(PauseSpec::from_flags(0, "1s", "1s").is_err());
        assert!(PauseSpec::from_flags(-5, "1s", "1s").is_err());
        let me = std::process::id() as i32;
        assert!(PauseSpec::from_flags(me, "1s", "1s").is_err());
        // pid 1 exists on Linux; a zero length or a bad duration is refused.
        assert!(PauseSpec::from_flags(1, "1s", "0s").is_err());
        assert!(PauseSpec::from_flags(1, "soon", "1s").is_err());
    }
}
