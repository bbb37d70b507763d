//! Which measure runs are compared on, and its histogram read from a run's results.

use candor_core::hist::HistCodecError;
use candor_core::results::RunResults;
use candor_core::stream_measures::StreamMeasure;
use candor_core::Histo;

/// Which measure to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparisonMeasure {
    ResponseTime,
    ServiceTime,
    SendLag,
    /// From the intended send to the first byte of the response.
    FirstByte,
    /// A measure of streamed responses (`--stream`, `--llm`): TTFT, ITL, TPOT, first event,
    /// event gap.
    Stream(StreamMeasure),
}

impl ComparisonMeasure {
    pub fn label(self) -> &'static str {
        match self {
            ComparisonMeasure::ResponseTime => "response time",
            ComparisonMeasure::ServiceTime => "service time",
            ComparisonMeasure::SendLag => "send lag",
            ComparisonMeasure::FirstByte => "first byte",
            ComparisonMeasure::Stream(m) => m.label(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{label}: histogram is not valid: {cause}")]
    Histogram {
        label: String,
        cause: HistCodecError,
    },
    #[error("{label} has no {} histogram: it is not a run that recorded it ({})", measure.name(), stream_flag(*measure))]
    Missing {
        label: String,
        measure: StreamMeasure,
    },
}

/// The flag of `candor run` whose runs record stream measure `m`.
fn stream_flag(m: StreamMeasure) -> &'static str {
    match m {
        StreamMeasure::FirstEvent | StreamMeasure::EventGap => "--stream or --llm",
        _ => "--llm",
    }
}

pub(crate) fn histogram(
    r: &RunResults,
    m: ComparisonMeasure,
    label: &str,
) -> Result<Histo, CompareError> {
    if let ComparisonMeasure::Stream(sm) = m {
        // The full histogram is kept in `extra` under the measure's name.
        return match r.stream_histogram(sm) {
            Some(h) => h.map_err(|cause| CompareError::Histogram {
                label: label.to_string(),
                cause,
            }),
            None => Err(CompareError::Missing {
                label: label.to_string(),
                measure: sm,
            }),
        };
    }
    let rec = r
        .main
        .histograms
        .decode()
        .map_err(|cause| CompareError::Histogram {
            label: label.to_string(),
            cause,
        })?;
    Ok(of_recorder(rec, m))
}

/// Measure `m`'s histogram among a recorder's (empty for a stream measure: those are kept
/// apart from the recorder, and the callers read them there first).
pub(crate) fn of_recorder(rec: candor_core::Recorder, m: ComparisonMeasure) -> Histo {
    match m {
        ComparisonMeasure::ResponseTime => rec.response,
        ComparisonMeasure::ServiceTime => rec.service,
        ComparisonMeasure::SendLag => rec.send_lag,
        ComparisonMeasure::FirstByte => rec.first_byte,
        ComparisonMeasure::Stream(_) => candor_core::new_histogram(),
    }
}

/// A percentile as the tables name it: `p99.9`, `max`.
pub(crate) fn pct_label(p: f64) -> String {
    if p >= 100.0 {
        "max".into()
    } else {
        format!("p{}", format!("{p}").trim_end_matches(".0"))
    }
}
