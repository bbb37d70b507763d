//! Results built in memory for unit tests.

use candor_core::results::{Kind, PhaseResults, RequestCounts, RunResults};
use candor_core::{new_histogram, Recorder};

/// A run whose response times are `values_ns` (service time 10 ns), all completed.
pub fn run_of(values_ns: &[u64], target: Option<f64>, mode: &str) -> RunResults {
    let mut rec = Recorder::new();
    for &v in values_ns {
        rec.record(v, 10, 0);
    }
    let n = values_ns.len() as u64;
    RunResults {
        candor_version: "test".into(),
        ..RunResults::new(
            Kind::Run,
            mode.parse().expect("a known mode"),
            "http://127.0.0.1:1/",
            candor_core::results::RunConfig {
                connections: 10,
                ..Default::default()
            },
            PhaseResults::from_recorder(
                &rec,
                &new_histogram(),
                RequestCounts {
                    intended: n,
                    completed: n,
                    ..Default::default()
                },
                1.0,
                target,
            ),
        )
    }
}

/// An empty open-loop run at `target` with the given achieved rate.
pub fn empty_run(target: Option<f64>, achieved: f64) -> RunResults {
    let mut r = run_of(&[], target, "open-loop");
    r.main.rate.achieved_per_s = achieved;
    r
}
