//! The report of `candor run --repeat N`: the repeats' union as the results of one run (every
//! repeat kept whole beside it), judged against the objectives, and its text with the spread
//! across the repeats.

use crate::comparison::{compare_text, CompareError, ComparisonMeasure};
use crate::exact_merge::{merge_as_repeats, MergeError};
use candor_analysis::slo::SloSet;
use candor_core::hist::HistCodecError;
use candor_core::results::{Kind, RunResults, StopReason};

/// Why the repeats could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum RepeatsError {
    #[error("no repeat ran")]
    NoneRan,
    #[error("combining the repeats into their union")]
    Union(#[source] MergeError),
    #[error("decoding histograms")]
    Histograms(#[source] HistCodecError),
    #[error(transparent)]
    Compare(#[from] CompareError),
}

/// The series of repeats as it ended.
pub struct Repeats {
    /// Each repeat's results, in order.
    pub runs: Vec<RunResults>,
    /// How many were asked for.
    pub asked: u32,
    /// The name of the signal that ended the series early, if one did.
    pub interrupted: Option<String>,
}

/// The union, the text that reports it, and the exit code its objectives give.
pub struct RepeatsReport {
    pub union: RunResults,
    pub text: String,
    pub code: i32,
}

/// The union of `runs` as the results of one `candor run`, with every run kept in `repeats`.
pub fn union_of(runs: Vec<RunResults>, first: &RunResults) -> Result<RunResults, RepeatsError> {
    let mut union = merge_as_repeats(&runs).map_err(RepeatsError::Union)?;
    // One test repeated: the union is a run of that test, not a merge of unrelated files.
    union.kind = Kind::Run;
    union.command_line = first.command_line.clone();
    union.config = first.config.clone();
    union.target = first.target.clone();
    Ok(union)
}

/// Why the series of repeats ended, as the union's `stop_reason`: a signal, whether it cut a
/// repeat short or came in a pause between two (the union then holds fewer repeats than asked);
/// otherwise the way the last repeat ended, since the series ends with it.
pub fn union_stop_reason(repeats: &[RunResults], interrupted: bool) -> Option<StopReason> {
    if interrupted {
        return Some(StopReason::Interrupt);
    }
    repeats.last().and_then(|r| r.stop_reason)
}

/// Reports `repeats` as `candor run` reports one run: the union analysed and judged against
/// `slo` (a miss gives `failed_code`), its text (with the response-time spectrum when
/// `latency`), then the spread across the repeats and the verdict.
pub fn report(
    repeats: Repeats,
    slo: &SloSet,
    latency: bool,
    failed_code: i32,
) -> Result<RepeatsReport, RepeatsError> {
    let Repeats {
        runs,
        asked,
        interrupted,
    } = repeats;
    let first = runs.first().cloned().ok_or(RepeatsError::NoneRan)?;
    let done = runs.len();
    let labelled: Vec<(String, RunResults)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("repeat {}", i + 1), r.clone()))
        .collect();
    let mut union = union_of(runs, &first)?;
    union.stop_reason = union_stop_reason(&union.repeats, interrupted.is_some());
    let mut analysis = candor_analysis::analyze(&union);
    analysis.slo = slo.evaluate(&union);
    let verdicts = analysis.slo.clone();
    union.main.analysis = Some(analysis);
    slo.judge_stages(&mut union);

    let mut text = crate::text::render(&union);
    if latency {
        text.push_str(&crate::text::spectrum(&union).map_err(RepeatsError::Histograms)?);
    }
    text.push_str(&format!(
        "\nacross {done} repeats (the report above is their union):\n"
    ));
    if done > 1 {
        text.push_str(&compare_text(&labelled, ComparisonMeasure::ResponseTime)?);
    }
    let mut code = 0;
    if !verdicts.is_empty() {
        text.push('\n');
        text.push_str(&candor_analysis::slo::render(&verdicts));
        if candor_analysis::slo::all_pass(&verdicts) {
            text.push_str("SLO: all objectives met on the union of the repeats\n");
        } else {
            code = failed_code;
            text.push_str(&format!(
                "SLO: FAILED on the union of the repeats (exit code {code})\n"
            ));
        }
    }
    if let Some(signal) = &interrupted {
        text.push_str(&format!(
            "\ninterrupted by {signal} after {done} of {asked} repeats: partial results\n"
        ));
    }
    Ok(RepeatsReport { union, text, code })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_says_why_the_series_ended() {
        let run = |reason| {
            let mut r = crate::synthetic::synthetic_run(1, 2, 10, 1_000_000, 0);
            r.stop_reason = reason;
            r
        };
        let done = [
            run(Some(StopReason::Duration)),
            run(Some(StopReason::Duration)),
        ];
        assert_eq!(union_stop_reason(&done, false), Some(StopReason::Duration));
        // Interrupted in the pause after two whole repeats: still an interrupted series.
        assert_eq!(union_stop_reason(&done, true), Some(StopReason::Interrupt));
        let cut = [
            run(Some(StopReason::Duration)),
            run(Some(StopReason::Interrupt)),
        ];
        assert_eq!(union_stop_reason(&cut, true), Some(StopReason::Interrupt));
        let precise = [run(Some(StopReason::Precision))];
        assert_eq!(
            union_stop_reason(&precise, false),
            Some(StopReason::Precision)
        );
    }
}
