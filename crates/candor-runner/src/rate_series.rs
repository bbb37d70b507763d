//! The series of load tests behind `candor sweep` and `candor capacity`: one base configuration
//! run at one offered rate after another, a pause between steps so that one step's backlog does
//! not spill into the next, and a signal ending the series with the steps measured before it.
//! How one step is run is the caller's ([`StepRun`]: the real engine in the binary, scripted
//! results in tests), so the loops are tested without sending load.

use crate::{execute, interrupt, live_view, recorded_config, run_results, RunnerError};
use candor_analysis::capacity_search::{search_until, Purpose, Search, SearchSettings, Trial};
use candor_analysis::slo::SloSet;
use candor_analysis::sweep_results::SweepStep;
use candor_core::results::{RunResults, StopReason};
use candor_core::units::format_rate;
use candor_load::{LoadConfigError, RunPlan};

/// Runs one step (the base configuration at one rate) to its results.
pub type StepRun<'a> = dyn FnMut(&RunPlan) -> Result<RunResults, RunnerError> + 'a;

/// Why a series stopped before its end with an error (a signal is not one: the steps measured
/// before it are returned).
#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    #[error("step {}", format_rate(*rate))]
    Step {
        rate: f64,
        #[source]
        source: RunnerError,
    },
    #[error("at {}", format_rate(*rate))]
    Config {
        rate: f64,
        #[source]
        source: LoadConfigError,
    },
}

/// The base configuration at `rate`, checked.
pub fn at_rate(base: &RunPlan, rate: f64) -> Result<RunPlan, SeriesError> {
    let mut c = base.clone();
    c.shape = base.shape.with_rate(rate);
    c.validate()
        .map_err(|source| SeriesError::Config { rate, source })?;
    Ok(c)
}

/// The step the binary runs: the real engine (with the live line when `live`), its results
/// with `command_line`.
pub fn engine_step(
    live: bool,
    command_line: Vec<String>,
) -> impl FnMut(&RunPlan) -> Result<RunResults, RunnerError> {
    move |c: &RunPlan| {
        let outcome = execute(c, live)?;
        Ok(run_results(
            &outcome,
            c,
            command_line.clone(),
            recorded_config(c),
        ))
    }
}

/// `candor sweep`'s steps: `base` at each of `rates` in order, `pause_ns` apart, each judged
/// against `slo` and handed to `on_step` as it is measured. A signal ends the series (a step it
/// cut short is the last, and the pause before the next step ends at once).
pub fn sweep(
    base: &RunPlan,
    rates: &[f64],
    pause_ns: u64,
    slo: &SloSet,
    run_step: &mut StepRun,
    on_step: &mut dyn FnMut(&SweepStep),
) -> Result<Vec<SweepStep>, SeriesError> {
    let mut steps = Vec::with_capacity(rates.len());
    for (i, &rate) in rates.iter().enumerate() {
        if interrupt::received().is_some() || (i > 0 && !interrupt::sleep(pause_ns)) {
            break;
        }
        let c = at_rate(base, rate)?;
        live_view::more_runs_follow(i + 1 < rates.len());
        let results = run_step(&c).map_err(|source| SeriesError::Step { rate, source })?;
        let step = sweep_step(rate, results, slo);
        on_step(&step);
        steps.push(step);
    }
    Ok(steps)
}

/// The results of one step with its analysis, SLO verdicts and saturation verdict.
pub fn sweep_step(rate: f64, mut results: RunResults, slo: &SloSet) -> SweepStep {
    let mut analysis = candor_analysis::analyze(&results);
    let verdicts = slo.evaluate(&results);
    analysis.slo = verdicts.clone();
    let saturation = analysis.saturation.as_ref().map(|s| s.verdict.clone());
    results.main.analysis = Some(analysis);
    SweepStep {
        offered_per_s: rate,
        results,
        slo: verdicts,
        saturation,
    }
}

/// `candor capacity`'s search: `base` at the rates the search asks for, `pause_ns` apart, each
/// judged against `slo` and handed to `on_trial`. A step a signal cut short is dropped and the
/// search ends with what it judged.
pub fn capacity(
    base: &RunPlan,
    settings: SearchSettings,
    slo: &SloSet,
    pause_ns: u64,
    run_step: &mut StepRun,
    on_trial: &mut dyn FnMut(f64, Purpose, &Trial),
) -> Result<Search, SeriesError> {
    let mut first = true;
    // `None`: a step a signal cut short (or kept from starting), which the search drops.
    let mut measure = |rate: f64, purpose: Purpose| -> Result<Option<Trial>, SeriesError> {
        // A signal during the pause ends the search at once: the next step is not judged.
        if !first && !interrupt::sleep(pause_ns) {
            return Ok(None);
        }
        first = false;
        let c = at_rate(base, rate)?;
        let results = run_step(&c).map_err(|source| SeriesError::Step { rate, source })?;
        if results.stop_reason == Some(StopReason::Interrupt) {
            return Ok(None);
        }
        let trial = candor_analysis::capacity_search::judge(&results, slo, rate);
        on_trial(rate, purpose, &trial);
        Ok(Some(trial))
    };
    let stopped = || interrupt::received().is_some();
    search_until(settings, &mut measure, &stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::{Kind, Mode, PhaseResults, RequestCounts};
    use candor_core::{new_histogram, Recorder};
    use candor_load::Target;

    /// A target that answers in 1 ms up to `knee` requests per second and in 100 ms past it,
    /// keeping up with the rate either way: what a step at `config.rate` would measure.
    fn scripted(knee: f64) -> impl FnMut(&RunPlan) -> Result<RunResults, RunnerError> {
        move |c: &RunPlan| {
            let rate = c.shape.rate_per_s().expect("a series sets the rate");
            let ns = if rate <= knee { 1_000_000 } else { 100_000_000 };
            let mut rec = Recorder::new();
            let n = rate.round() as u64;
            for _ in 0..n {
                rec.record(ns, ns, 0);
            }
            let mut main = PhaseResults::from_recorder(
                &rec,
                &new_histogram(),
                RequestCounts {
                    intended: n,
                    completed: n,
                    ..Default::default()
                },
                1.0,
                Some(rate),
            );
            main.rate.achieved_per_s = rate;
            Ok(RunResults {
                candor_version: "test".into(),
                stop_reason: Some(StopReason::Duration),
                ..RunResults::new(
                    Kind::Run,
                    Mode::OpenLoop,
                    c.target.url.clone(),
                    recorded_config(c),
                    main,
                )
            })
        }
    }

    fn base() -> RunPlan {
        RunPlan::new(
            Target::parse("http://127.0.0.1:9/").expect("a URL"),
            Default::default(),
        )
        .expect("an HTTP/1.1 plan")
    }

    #[test]
    fn a_sweep_runs_every_rate_in_order_and_judges_each_step() {
        let slo = SloSet::parse_all(&["p99<10ms"]).expect("an SLO");
        let mut seen = Vec::new();
        let steps = sweep(
            &base(),
            &[100.0, 300.0, 200.0],
            0,
            &slo,
            &mut scripted(250.0),
            &mut |s| seen.push(s.offered_per_s),
        )
        .expect("a sweep");
        assert_eq!(seen, [100.0, 300.0, 200.0]);
        let rates: Vec<f64> = steps.iter().map(|s| s.offered_per_s).collect();
        assert_eq!(rates, seen);
        let passed: Vec<bool> = steps.iter().map(|s| s.slo[0].pass).collect();
        assert_eq!(passed, [true, false, true]);
        assert!(steps.iter().all(|s| s.results.main.analysis.is_some()));
    }

    #[test]
    fn a_step_that_fails_names_its_rate() {
        let slo = SloSet::parse_all::<&str>(&[]).expect("no SLO");
        let mut failing = |_: &RunPlan| -> Result<RunResults, RunnerError> {
            Err(RunnerError::Thread(std::io::Error::other("boom")))
        };
        let err = sweep(&base(), &[1000.0], 0, &slo, &mut failing, &mut |_| {})
            .expect_err("the step failed");
        assert_eq!(err.to_string(), format!("step {}", format_rate(1000.0)));
        let err = at_rate(&base(), -1.0).expect_err("a negative rate");
        assert!(err.to_string().starts_with("at "), "{err}");
    }

    #[test]
    fn the_capacity_search_finds_the_knee_of_a_scripted_target() {
        let slo = SloSet::parse_all(&["p99<10ms"]).expect("an SLO");
        let settings = SearchSettings {
            min: 100.0,
            max: 10_000.0,
            tolerance: 0.05,
            confirmations: 1,
            max_steps: 30,
            growth: 2.0,
        };
        let mut trials = Vec::new();
        let found = capacity(
            &base(),
            settings,
            &slo,
            0,
            &mut scripted(1000.0),
            &mut |rate, _, t| trials.push((rate, t.pass)),
        )
        .expect("a search");
        assert_eq!(trials.len(), found.probes.len());
        assert!(trials.iter().all(|&(rate, pass)| pass == (rate <= 1000.0)));
        let best = found
            .probes
            .iter()
            .filter(|p| p.pass)
            .map(|p| p.rate)
            .fold(0.0, f64::max);
        assert!(
            (1000.0 / 1.05..=1000.0).contains(&best),
            "{best} within 5% below the knee"
        );
    }
}
