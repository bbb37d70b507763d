//! Which measure runs are compared on, and its histogram read from a run's results.

use candor_core::hist::HistCodecError;
use candor_core::results::RunResults;
use candor_core::stream_measures::StreamMeasure;
use candor_core::Histo;

/// Which measure to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    ResponseTime,
    ServiceTime,
    SendLag,
    /// From the intended send to the first byte of the response.
    FirstByte,
    /// A measure of streamed responses (`--stream`, `--llm`): TTFT, ITL, TPOT, first event,
    /// event gap.
    Stream(StreamMeasure),
}

impl Measure {
    pub fn label(self) -> &'static str {
        match self {
            Measure::ResponseTime => "response time",
            Measure::ServiceTime => "service time",
            Measure::SendLag => "send lag",
            Measure::FirstByte => "first byte",
            Measure::Stream(m) => m.label(),
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

pub(crate) fn histogram(r: &RunResults, m: Measure, label: &str) -> Result<Histo, CompareError> {
    if let Measure::Stream(sm) = m {
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
pub(crate) fn of_recorder(rec: candor_core::Recorder, m: Measure) -> Histo {
    match m {
        Measure::ResponseTime => rec.response,
        Measure::ServiceTime => rec.service,
        Measure::SendLag => rec.send_lag,
        Measure::FirstByte => rec.first_byte,
        Measure::Stream(_) => candor_core::new_histogram(),
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
