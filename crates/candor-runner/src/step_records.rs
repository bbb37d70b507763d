//! `candor sweep --records FILE` and `candor capacity --records FILE`: one `--records` file per
//! step, named after `FILE` with the step's number and rate (`r.jsonl` → `r-step3-r40.jsonl`), so
//! that each is a whole run's file `candor report` reads back as it reads `run --records`.
//! Each step has its own writer (the one `run` uses: a bounded queue, never blocking a load
//! thread), opened before the step's load and finished after it.

use crate::RunnerError;
use candor_core::results::RunResults;
use candor_load::records::{self, RecordsError};
use candor_load::RunPlan;
use std::path::{Path, PathBuf};

/// The `--records` flag of a series of steps.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StepRecordsArgs {
    /// Write one JSON line per request of each step to its own file: FILE with the step's
    /// number and rate before the extension (r.jsonl: r-step1-r100.jsonl, r-step2-r200.jsonl,
    /// ...), each read back by `candor report` as a `run --records` file (docs/formats.md).
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
}

/// Step `step`'s (from 1) file at `rate`: `base` with `-step{step}-r{rate}` before its
/// extension (or at its end when it has none).
pub fn step_path(base: &Path, step: usize, rate: f64) -> PathBuf {
    let tag = format!("-step{step}-r{}", rate_tag(rate));
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let name = match base.extension() {
        Some(ext) => format!("{stem}{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}{tag}"),
    };
    base.with_file_name(name)
}

/// A rate as a file name carries it: whole rates plainly, others to a thousandth.
fn rate_tag(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        let s = format!("{rate:.3}");
        s.trim_end_matches('0').to_string()
    }
}

/// Checks `args` before any load: the path is not one of `inputs`, and the first step's file
/// (at `first_rate`) can be created, so that a bad folder fails in a second, not after a step.
pub fn check(
    args: &StepRecordsArgs,
    inputs: &[&Path],
    first_rate: f64,
) -> Result<(), RecordsError> {
    let Some(base) = &args.records else {
        return Ok(());
    };
    let first = step_path(base, 1, first_rate);
    for p in [base.as_path(), first.as_path()] {
        if inputs.contains(&p) {
            return Err(RecordsError::Open {
                path: p.to_path_buf(),
                cause: std::io::Error::other("that is an input of the run"),
            });
        }
    }
    std::fs::File::create(&first).map_err(|cause| RecordsError::Open { path: first, cause })?;
    Ok(())
}

/// `inner` (a step's run) with each step's records written to its own file when `args` asks:
/// the steps are numbered in the order they run, from 1.
pub fn with_records<'a>(
    args: &StepRecordsArgs,
    mut inner: impl FnMut(&RunPlan) -> Result<RunResults, RunnerError> + 'a,
) -> impl FnMut(&RunPlan) -> Result<RunResults, RunnerError> + 'a {
    let base = args.records.clone();
    let mut step = 0usize;
    move |c: &RunPlan| {
        let Some(base) = &base else { return inner(c) };
        step += 1;
        let path = step_path(base, step, c.shape.rate_per_s().unwrap_or(0.0));
        let names = c.workload.lines.iter().map(|l| l.name.clone()).collect();
        let (sink, writer) = records::open(&path, names)?;
        let mut plan = c.clone();
        plan.records = Some(sink);
        let ran = inner(&plan);
        // The writer is finished whatever the step came to, so that its file is whole.
        drop(plan);
        let summary = writer.finish()?;
        let mut results = ran?;
        let label = format!("--records {}", path.display());
        results.warnings.extend(summary.warnings(&label));
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_file_carries_its_number_and_rate_before_the_extension() {
        let p = |s: &str, step, rate| step_path(Path::new(s), step, rate);
        assert_eq!(
            p("out/r.jsonl", 3, 40.0),
            Path::new("out/r-step3-r40.jsonl")
        );
        assert_eq!(p("r", 1, 2.5), Path::new("r-step1-r2.5"));
        assert_eq!(
            p("a.b.jsonl", 12, 33.333_333),
            Path::new("a.b-step12-r33.333.jsonl")
        );
        assert_eq!(
            p("r.jsonl", 2, 100_000.0),
            Path::new("r-step2-r100000.jsonl")
        );
    }

    #[test]
    fn a_missing_folder_or_an_input_is_refused_before_any_step() {
        let args = |p: &str| StepRecordsArgs {
            records: Some(p.into()),
        };
        let e = check(&args("/nonexistent-dir/r.jsonl"), &[], 10.0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--records /nonexistent-dir/r-step1-r10.jsonl:"),
            "{e}"
        );
        let e = check(&args("in.jsonl"), &[Path::new("in.jsonl")], 10.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--records in.jsonl: that is an input of the run"
        );
        assert!(check(&StepRecordsArgs::default(), &[], 10.0).is_ok());
    }
}
