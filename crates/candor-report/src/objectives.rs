//! The objectives (`--slo`) as `candor report` shows them beside a run: the response-time ones
//! an HTML report draws on its chart, and each run's verdicts as text, per stage too.

use crate::html::Slo;
use candor_analysis::slo::{Measure, Metric};
use candor_analysis::SloSet;
use candor_core::results::RunResults;

/// The objectives of `set` that an HTML report can draw: response-time percentiles and the max.
pub fn drawable_slos(set: &SloSet) -> Vec<Slo> {
    set.objectives
        .iter()
        .filter(|o| o.measure == Measure::ResponseTime)
        .filter_map(|o| {
            let percentile = match o.metric {
                Metric::Percentile(p) => p,
                Metric::Max => 100.0,
                _ => return None,
            };
            Some(Slo {
                label: o.text.clone(),
                percentile,
                threshold_ns: o.limit as u64,
            })
        })
        .collect()
}

/// `r` judged against `set`: the verdicts as text (then each stage's, when `r` has stages), and
/// true when one failed.
pub fn verdict_text(set: &SloSet, r: &RunResults) -> (String, bool) {
    let verdicts = set.evaluate(r);
    let failed = !candor_analysis::slo::all_pass(&verdicts);
    let text = format!(
        "{}{}",
        candor_analysis::slo::render(&verdicts),
        stage_verdicts(set, r)
    );
    (text, failed)
}

fn stage_verdicts(set: &SloSet, r: &RunResults) -> String {
    if r.workload.stages.is_empty() {
        return String::new();
    }
    let mut judged = r.clone();
    set.judge_stages(&mut judged);
    candor_analysis::slo::render_stages(&judged.workload.stages)
}
