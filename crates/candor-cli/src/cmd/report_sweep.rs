//! `candor report` of a sweep results file: its table, or its chart page with `-o`, and the
//! objectives judged at every step.

use anyhow::{bail, Context, Result};
use candor_analysis::slo::SloSet;
use candor_analysis::sweep_results::SweepResults;
use candor_core::units::format_rate;
use std::path::{Path, PathBuf};

/// `candor report` of a sweep file: the table, or the chart page with -o; exit code 0 whatever
/// the steps' SLO verdicts (see `SweepArgs::slo`). `None` when the inputs are not a sweep.
pub fn report_sweep(
    files: &[PathBuf],
    slo: &[String],
    output: Option<&Path>,
    title: Option<&str>,
) -> Result<Option<i32>> {
    let mut sweeps = Vec::new();
    for f in files {
        let text = candor_report::input::read_input(f)
            .with_context(|| format!("reading {}", f.display()))?;
        if SweepResults::detect(&text) {
            sweeps.push((f, text));
        }
    }
    if sweeps.is_empty() {
        return Ok(None);
    }
    if files.len() > 1 {
        bail!(
            "a sweep results file is reported on its own (got {} files)",
            files.len()
        );
    }
    let (path, text) = &sweeps[0];
    let sweep = SweepResults::from_json(text).with_context(|| format!("{}", path.display()))?;
    let slo = SloSet::parse_all(slo)?;
    match output {
        Some(out) => {
            let page = candor_report::sweep_html::SweepHtmlExporter {
                title: title.map(str::to_string),
            };
            candor_report::export::Destination::open("-o", out)?.export(&page, &sweep)?;
            eprintln!(
                "wrote {} (sweep of {} rates)",
                out.display(),
                sweep.steps.len()
            );
        }
        None => {
            println!("candor sweep of {}\n", sweep.target);
            print!("{}", sweep.table());
        }
    }
    if !slo.is_empty() {
        for s in &sweep.steps {
            let v = slo.evaluate(&s.results);
            println!("at {}:", format_rate(s.offered_per_s));
            print!("{}", candor_analysis::slo::render(&v));
        }
    }
    // As `candor sweep` itself: the verdicts are shown, the exit code says only that it was read.
    Ok(Some(0))
}
