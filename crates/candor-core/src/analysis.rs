//! The derived figures a results file carries as its `analysis` field: plain data with serde
//! derives, so that every reader sees typed fields. `candor-analysis` computes them and re-exports
//! these types under their old paths.

use serde::{Deserialize, Serialize};

/// The derived figures of one run (stored as the `analysis` field of the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Response-time percentiles with 95% order-statistic intervals and sample support.
    pub confidence: Vec<PercentileConfidence>,
    /// Highest percentile the sample count supports (about 100 samples beyond it).
    pub highest_supported_percentile: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<Saturation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinated_omission: Option<CoSignature>,
    /// Whether latency drifted during the measured window (Mann-Kendall on per-interval p50
    /// and p99); absent in results written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stationarity: Option<Stationarity>,
    /// SLO verdicts when objectives were given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<SloVerdict>,
}

impl Analysis {
    /// The `analysis` value of a results file.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("analysis always serializes")
    }

    /// Verdict lines for a report, in plain words.
    pub fn verdicts(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(s) = &self.saturation {
            v.push(s.verdict.clone());
        }
        if let Some(c) = &self.coordinated_omission {
            v.push(c.verdict.clone());
        }
        if let Some(s) = &self.stationarity {
            v.extend(s.warnings.iter().cloned());
        }
        v
    }
}

/// One reported percentile with its confidence interval and sample support.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileConfidence {
    /// 0..=100 (100 is the max).
    pub percentile: f64,
    pub value_ns: u64,
    /// 95% order-statistic interval; `upper_ns` is `None` when the samples cannot bound it.
    pub lower_ns: Option<u64>,
    pub upper_ns: Option<u64>,
    pub samples: u64,
    pub samples_needed: u64,
    /// `samples >= samples_needed`.
    pub supported: bool,
}

/// A detected steady growth of response time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// "p50" or "max": the per-interval statistic that grows.
    pub statistic: String,
    /// Growth in milliseconds of response time per second of run.
    pub slope_ms_per_s: f64,
    pub r2: f64,
    /// Growth over the fitted span, ns.
    pub rise_ns: f64,
    /// True when the run also shows that the load was not absorbed (achieved rate below target,
    /// requests left unfinished, or send lag growing): offered load above capacity.
    pub overload: bool,
    pub verdict: String,
}

/// The signature of coordinated omission in a distribution recorded without a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoSignature {
    /// Largest value below 10% of the max, and smallest at or above it, ns.
    pub below_ns: u64,
    pub above_ns: u64,
    /// Percentile (0..100) at which the curve rises.
    pub at_percentile: f64,
    /// Samples at or above 10% of the max.
    pub tail_samples: u64,
    /// Decades of 1/(1−q) between 10% and 90% of the max.
    pub rise_decades: f64,
    pub samples: u64,
    /// Samples a schedule-driven measurement would have recorded in the rise, estimated
    /// with the expected interval (HdrHistogram's correction).
    pub implied_missing: f64,
    pub expected_interval_ns: u64,
    pub verdict: String,
}

/// The trend test of one per-interval percentile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendTest {
    /// The per-interval percentile tested (0..100).
    pub percentile: f64,
    pub intervals: usize,
    /// Mann-Kendall S, its normal score and two-sided p-value.
    pub s: i64,
    pub z: f64,
    pub p_value: f64,
    /// Median of the per-interval percentile over the first and the last third of the intervals.
    pub first_third_ns: f64,
    pub last_third_ns: f64,
    /// 100 × (last − first) / first.
    pub change_pct: f64,
    /// Significant at the test's level and at least the smallest drift worth a warning
    /// (`candor_analysis::trend::ALPHA`, `MIN_CHANGE_PCT`).
    pub drifted: bool,
}

/// The verdict on the whole measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steadiness {
    /// No tested percentile drifted.
    Steady,
    /// At least one tested percentile drifted.
    Drifted,
    /// Too few measured intervals to test (`candor_analysis::trend::MIN_INTERVALS`).
    TooFewIntervals,
}

/// The stationarity verdict (stored as `analysis.stationarity` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stationarity {
    pub verdict: Steadiness,
    pub intervals: usize,
    pub tests: Vec<TrendTest>,
    /// The warning for a report, one per drifted percentile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The outcome of one objective on one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloVerdict {
    pub objective: String,
    /// The measured value: ns for latency, a fraction for errors; `None` when it cannot be measured.
    pub measured: Option<f64>,
    pub pass: bool,
    /// Plain-words caveat (too few samples for the percentile, no accounting in the input...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_reads_back_typed_and_keeps_its_layout() {
        let text = r#"{"confidence":[{"percentile":99.0,"value_ns":5,"lower_ns":4,"upper_ns":null,"samples":10,"samples_needed":10000,"supported":false}],"highest_supported_percentile":null,"stationarity":{"verdict":"too_few_intervals","intervals":3,"tests":[]},"slo":[{"objective":"p99<1ms","measured":5.0,"pass":true}]}"#;
        let a: Analysis = serde_json::from_str(text).unwrap();
        assert_eq!(a.confidence[0].upper_ns, None);
        assert_eq!(
            a.stationarity.as_ref().unwrap().verdict,
            Steadiness::TooFewIntervals
        );
        assert!(a.slo[0].pass && a.saturation.is_none());
        assert_eq!(serde_json::to_string(&a).unwrap(), text);
    }
}
