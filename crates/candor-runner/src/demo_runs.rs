//! The two measurements of `candor demo`: a server that freezes periodically, measured by a
//! wrk-style closed loop and by candor's open loop over the same length of time, next to the
//! truth predicted from its freeze windows alone. How one measurement is run is the caller's
//! (the real engine in the binary, scripted numbers in tests).

use candor_core::results::PhaseResults;
use candor_load::{LoadConfigError, RunPlan, Target};
use candor_truth::StallTruth;

/// What the demo measures: each measurement's length, the server's freezes, the open loop's rate.
#[derive(Debug, Clone, Copy)]
pub struct DemoPlan {
    pub duration_ns: u64,
    /// The server freezes once per this period...
    pub every_ns: u64,
    /// ...for this long.
    pub for_ns: u64,
    /// The open loop's intended rate per second.
    pub rate: f64,
}

/// Which of the two measurements is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoStep {
    ClosedLoop,
    OpenLoop,
}

/// One measurement: the monotonic instant of its first intended send and its measured phase.
pub struct Measurement {
    pub start_ns: u64,
    pub main: PhaseResults,
}

/// The demo's numbers, for its table.
pub struct DemoMeasured {
    pub closed: PhaseResults,
    pub open: PhaseResults,
    /// The truth over the open loop's measured window.
    pub truth: StallTruth,
}

/// The closed loop's configuration: 10 connections, each waiting for its answer, with a
/// timeout that outlasts a freeze.
pub fn closed_loop(url: &str, plan: &DemoPlan) -> Result<RunPlan, LoadConfigError> {
    let mut closed = RunPlan::new(Target::parse(url)?, Default::default())?;
    closed.shape = candor_load::LoadShape::ClosedLoop;
    closed.connections = 10;
    closed.threads = 2;
    closed.duration_ns = plan.duration_ns;
    closed.timeout_ns = (plan.for_ns * 3).max(2_000_000_000);
    closed.drain_ns = closed.timeout_ns;
    closed.validate()?;
    Ok(closed)
}

/// Runs the closed loop, then the open loop at `plan.rate` over 16 connections, against the
/// server at `url`; `stalls_between(from, to)` names the server's freezes in a window.
pub fn demo<E: From<LoadConfigError>>(
    url: &str,
    plan: &DemoPlan,
    run: &mut dyn FnMut(DemoStep, &RunPlan) -> Result<Measurement, E>,
    stalls_between: &dyn Fn(u64, u64) -> Vec<(u64, u64)>,
) -> Result<DemoMeasured, E> {
    let closed = closed_loop(url, plan)?;
    let closed_run = run(DemoStep::ClosedLoop, &closed)?;
    let mut open = closed.clone();
    open.shape = candor_load::LoadShape::constant(plan.rate);
    open.connections = 16;
    let open_run = run(DemoStep::OpenLoop, &open)?;
    let from = open_run.start_ns + open.warmup_ns;
    let to = from + open.duration_ns;
    let base = open_run.main.service_time.at(50.0).unwrap_or(0);
    let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
    truth.stalls = stalls_between(from, to);
    Ok(DemoMeasured {
        closed: closed_run.main,
        open: open_run.main,
        truth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::RequestCounts;
    use candor_core::{new_histogram, Recorder};

    const S: u64 = 1_000_000_000;

    fn phase(ns: u64, n: u64) -> PhaseResults {
        let mut rec = Recorder::new();
        for _ in 0..n {
            rec.record(ns, ns, 0);
        }
        let counts = RequestCounts {
            intended: n,
            completed: n,
            ..Default::default()
        };
        PhaseResults::from_recorder(&rec, &new_histogram(), counts, 1.0, None)
    }

    #[test]
    fn the_closed_loop_runs_first_and_the_truth_covers_the_open_loops_window() {
        let plan = DemoPlan {
            duration_ns: 10 * S,
            every_ns: 5 * S,
            for_ns: S,
            rate: 500.0,
        };
        let mut asked = Vec::new();
        let mut run = |step: DemoStep, c: &RunPlan| -> Result<Measurement, LoadConfigError> {
            asked.push((step, c.shape.rate_per_s(), c.connections));
            Ok(match step {
                DemoStep::ClosedLoop => Measurement {
                    start_ns: S,
                    main: phase(1_000, 10),
                },
                DemoStep::OpenLoop => Measurement {
                    start_ns: 100 * S,
                    main: phase(2_000, 20),
                },
            })
        };
        let windows = |from: u64, to: u64| vec![(from, from + S), (to - S, to)];
        let m = demo("http://127.0.0.1:9/", &plan, &mut run, &windows).expect("the demo");
        assert_eq!(
            asked,
            [
                (DemoStep::ClosedLoop, None, 10),
                (DemoStep::OpenLoop, Some(500.0), 16)
            ]
        );
        assert_eq!((m.truth.from_ns, m.truth.to_ns), (100 * S, 110 * S));
        assert_eq!(m.truth.stalls, [(100 * S, 101 * S), (109 * S, 110 * S)]);
        assert_eq!(m.closed.requests.completed, 10);
        assert_eq!(m.open.requests.completed, 20);
        // Two of ten seconds frozen: a fifth of the intended sends wait.
        assert!((m.truth.stalled_fraction() - 0.2).abs() < 1e-9);
    }

    #[test]
    fn a_freeze_longer_than_two_seconds_stretches_the_closed_loops_timeout() {
        let plan = DemoPlan {
            duration_ns: S,
            every_ns: 10 * S,
            for_ns: 3 * S,
            rate: 100.0,
        };
        let c = closed_loop("http://127.0.0.1:9/", &plan).expect("a config");
        assert_eq!(c.timeout_ns, 9 * S);
        assert!(closed_loop("not a url", &plan).is_err());
    }
}
