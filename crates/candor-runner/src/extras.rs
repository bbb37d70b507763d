//! What `candor run --slo/--precision/--abort-on-fail/--pause-*/--expect` adds to a run: the
//! flags validated before the load, the watch that may end it early, the pause (from
//! `candor_truth`) around it, and the verdicts after it.

use crate::stop::{record_stop, run_bounds, Decision};
use candor_analysis::stopping::{
    AbortWatch, IntervalObs, PrecisionError, PrecisionTarget, PrecisionWatch,
};
use candor_core::results::{RunResults, StopReason, TimelineEvent};
use candor_core::units::format_ns;
use candor_load::{IntervalReport, RunOutcome, RunPlan};
use candor_truth::pause::{expectation, pause_truth};
use candor_truth::{Drain, PauseError, PauseSpec, Pauser};
use std::sync::Arc;

/// Exit code of a run that worked but whose verdict is a failure (SLO missed, calibration failed,
/// aborted by `--abort-on-fail`).
pub const EXIT_VERDICT_FAILED: i32 = 3;

/// Flags of the run's objectives, stopping rules and pause that cannot work together, or a pause
/// that could not be undone.
#[derive(Debug, thiserror::Error)]
pub enum ExtrasError {
    #[error(transparent)]
    Slo(#[from] candor_analysis::SloError),
    #[error(transparent)]
    Precision(#[from] PrecisionError),
    #[error(transparent)]
    Pause(#[from] PauseError),
    #[error("{0}")]
    Flags(String),
}

/// Runs the load: given the pause's start hook and the watch, as `crate::execute_watched` does.
pub type Execute<'a, E> = dyn FnOnce(
        Option<Arc<dyn Fn(u64) + Send + Sync>>,
        &mut (dyn FnMut(&IntervalReport, &mut String) -> Option<StopReason> + Send),
    ) -> Result<RunOutcome, E>
    + 'a;

/// `--slo`, `--precision`, `--abort-on-fail`, the pause and `--expect` as typed values, parsed
/// once at the edge (`RunArgs::extras`); [`RunExtras::new`] checks them against the run.
pub struct ExtrasFlags {
    pub slo: candor_analysis::SloSet,
    pub precision: Vec<PrecisionTarget>,
    pub abort_on_fail: bool,
    pub pause: Option<PauseFlags>,
    pub expect: bool,
}

/// `--pause-pid`, `--pause-at` and `--pause-for`: the validated pause, and the two durations as
/// written, for the messages that name them.
pub struct PauseFlags {
    pub spec: PauseSpec,
    pub at: String,
    pub for_: String,
}

impl ExtrasFlags {
    /// Parses the flags as given (`None` for a pause flag not given).
    pub fn parse(
        slo: &[String],
        precision: &[String],
        abort_on_fail: bool,
        pause: (Option<i32>, Option<&str>, Option<&str>),
        expect: bool,
    ) -> Result<ExtrasFlags, ExtrasError> {
        let slo = candor_analysis::SloSet::parse_all(slo)?;
        let precision = precision
            .iter()
            .map(|t| PrecisionTarget::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        let pause = match pause {
            (None, None, None) => None,
            (Some(pid), Some(at), Some(for_)) => Some(PauseFlags {
                spec: PauseSpec::from_flags(pid, at, for_)?,
                at: at.to_string(),
                for_: for_.to_string(),
            }),
            _ => {
                return Err(ExtrasError::Flags(
                    "--pause-pid, --pause-at and --pause-for go together".into(),
                ))
            }
        };
        Ok(ExtrasFlags {
            slo,
            precision,
            abort_on_fail,
            pause,
            expect,
        })
    }
}

/// The run's objectives, stopping rules and pause.
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

impl RunExtras {
    /// The extras `flags` ask for, checked against the run's settings `config`.
    pub fn new(flags: ExtrasFlags, config: &RunPlan) -> Result<RunExtras, ExtrasError> {
        let ExtrasFlags {
            slo,
            precision,
            abort_on_fail,
            pause,
            expect,
        } = flags;
        if (abort_on_fail || !precision.is_empty()) && config.shard_count > 1 {
            // Each shard would decide on its own share and end at its own time, leaving holes
            // in the merged schedule.
            return Err(ExtrasError::Flags(
                "--precision and --abort-on-fail end a run on its own data; shards must end together, so they \
                 cannot be used with --shard".into(),
            ));
        }
        for o in &slo.objectives {
            use candor_analysis::slo::Measure;
            // Embeddings are read whole: they have no events or tokens to time.
            let streamed = config.stream.llm && config.stream.embeddings.is_none();
            let recorded = match o.measure {
                Measure::FirstEvent | Measure::EventGap => config.stream.kind.is_some() || streamed,
                Measure::Ttft | Measure::TtftService | Measure::Itl | Measure::Tpot => streamed,
                _ => true,
            };
            if let (false, Some(flag)) = (recorded, o.measure.needs()) {
                return Err(ExtrasError::Flags(format!(
                    "--slo {}: this run records no {} (it is measured with {flag})",
                    o.text,
                    o.measure.name()
                )));
            }
        }
        if abort_on_fail && slo.is_empty() {
            return Err(ExtrasError::Flags(
                "--abort-on-fail watches the objectives of --slo: give at least one".into(),
            ));
        }
        let pauser = match pause {
            None => None,
            Some(PauseFlags { spec, at, for_ }) => {
                let total = config.warmup_ns + config.duration_ns;
                if spec.at_ns >= total {
                    return Err(ExtrasError::Flags(format!(
                        "--pause-at {at} is not inside the run ({} with warm-up)",
                        format_ns(total as f64)
                    )));
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
        };
        if expect && pauser.is_none() {
            return Err(ExtrasError::Flags(
                "--expect predicts the distribution of a pause: give --pause-pid, --pause-at and --pause-for"
                    .into(),
            ));
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

    /// Runs the load with `execute`, pausing the process if asked; the process is always resumed.
    pub fn execute<E: From<ExtrasError>>(
        &mut self,
        config: &RunPlan,
        execute: Box<Execute<'_, E>>,
    ) -> Result<RunOutcome, E> {
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
        let outcome = execute(self.pauser.as_ref().map(|p| p.hook()), &mut watch);
        self.decided = decided;
        self.watched = watched;
        if let Some(p) = &self.pauser {
            self.window = p.finish().map_err(ExtrasError::from)?;
        }
        outcome
    }

    /// Adds the pause event and the analysis to `results`; returns text to print after the
    /// report and the exit code.
    pub fn finish(
        &self,
        outcome: &RunOutcome,
        config: &RunPlan,
        results: &mut RunResults,
    ) -> (String, i32) {
        let mut text = String::new();
        if let (Some(p), Some((stop, cont))) = (&self.pauser, self.window) {
            results.main.events.push(TimelineEvent {
                kind: "pause".into(),
                at_s: stop.saturating_sub(outcome.start_ns) as f64 / 1e9,
                length_s: (cont - stop) as f64 / 1e9,
                detail: format!("SIGSTOP/SIGCONT of pid {}", p.spec().pid),
            });
        } else if self.pauser.is_some() {
            text.push_str(
                "\nWARNING: the pause did not happen (the run ended before --pause-at)\n",
            );
        }
        // Recorded in the results; the report (text::render) shows it.
        let aborted = (!self.precision.is_empty() || self.abort_on_fail)
            && record_stop(
                &self.precision,
                self.watched,
                self.decided.as_ref(),
                outcome,
                config,
                results,
            );
        let mut analysis = candor_analysis::analyze(results);
        analysis.slo = self.slo.evaluate(results);
        let slo = analysis.slo.clone();
        results.main.analysis = Some(analysis);
        self.slo.judge_stages(results);
        if let (true, Some(window)) = (self.expect, self.window) {
            let from = outcome.start_ns + config.warmup_ns;
            let to = from + config.duration_ns;
            let base = results.main.service_time.at(50.0).unwrap_or(0);
            let drain = Drain {
                rate_per_s: config.shape.rate_per_s().unwrap_or(0.0),
                connections: config.connections,
                round_ns: results.main.service_time.at(90.0).unwrap_or(0) as f64,
            };
            let truth = pause_truth(window, from, to, base);
            text.push_str(&expectation(&truth, &results.main.response_time, &drain));
        }
        let mut code = 0;
        if !slo.is_empty() {
            text.push('\n');
            text.push_str(&candor_analysis::slo::render(&slo));
            if !candor_analysis::slo::all_pass(&slo) {
                code = EXIT_VERDICT_FAILED;
                text.push_str(&format!("SLO: FAILED (exit code {EXIT_VERDICT_FAILED})\n"));
            } else {
                text.push_str("SLO: all objectives met\n");
            }
            text.push_str(&candor_analysis::slo::render_stages(
                &results.workload.stages,
            ));
        }
        if aborted {
            code = EXIT_VERDICT_FAILED;
        }
        (text, code)
    }
}
