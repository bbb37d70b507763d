//! Histogram recording: one HdrHistogram layout for every measure, clamping instead of
//! dropping, and summaries (percentiles, mean, stdev) computed the same way everywhere.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The histogram type used throughout: counts are `u64`, values are nanoseconds.
pub type Histo = Histogram<u64>;

/// Highest value tracked exactly: one hour in nanoseconds. Larger values are clamped to it.
pub const HIGHEST_TRACKABLE_NS: u64 = 3_600_000_000_000;
/// Three significant digits: 0.1% value resolution across the whole range.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// Percentiles every summary reports (100 is the max, always shown).
pub const SUMMARY_PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// One statistic of a distribution, as a row of a report table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// A percentile, 0..=100 (100 is the max).
    Percentile(f64),
    /// The mean.
    Mean,
}

impl Statistic {
    /// The statistic of `h` in nanoseconds (0 for an empty histogram).
    pub fn of(self, h: &Histo) -> f64 {
        match self {
            Statistic::Percentile(p) => value_at(h, p) as f64,
            Statistic::Mean if h.is_empty() => 0.0,
            Statistic::Mean => h.mean(),
        }
    }
}

/// A labelled row of a latency table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatRow {
    pub label: &'static str,
    pub statistic: Statistic,
}

const fn row(label: &'static str, p: f64) -> StatRow {
    StatRow {
        label,
        statistic: Statistic::Percentile(p),
    }
}

/// The rows of every latency table: [`SUMMARY_PERCENTILES`] by name, then the mean.
pub const SUMMARY_ROWS: [StatRow; 9] = [
    row("p50", 50.0),
    row("p75", 75.0),
    row("p90", 90.0),
    row("p99", 99.0),
    row("p99.9", 99.9),
    row("p99.99", 99.99),
    row("p99.999", 99.999),
    row("max", 100.0),
    StatRow {
        label: "mean",
        statistic: Statistic::Mean,
    },
];

/// A fresh histogram covering 1 ns .. 1 h at 3 significant digits.
pub fn new_histogram() -> Histo {
    Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// Records `value_ns`, clamping it into the trackable range so that nothing is ever dropped.
/// Returns true when the value was above range and had to be clamped.
#[inline]
pub fn record_clamped(h: &mut Histo, value_ns: u64) -> bool {
    let clamped = value_ns > h.high();
    // saturating_record cannot fail: it clamps to the histogram's highest trackable value.
    h.saturating_record(value_ns.max(1));
    clamped
}

/// The measures of one request stream: the three every request has, recorded together, and the
/// first byte of its response, recorded when one came.
#[derive(Clone)]
pub struct Recorder {
    /// From the intended send time to the last byte of the response.
    pub response: Histo,
    /// From the actual write to the last byte of the response.
    pub service: Histo,
    /// Actual write time minus intended send time.
    pub send_lag: Histo,
    /// From the intended send time to the first byte of the response (empty for producers that
    /// do not see responses arrive, such as the in-process harness).
    pub first_byte: Histo,
    /// How many values (of any measure) were above range and clamped to one hour.
    pub clamped: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("response", &self.response.len())
            .field("service", &self.service.len())
            .field("send_lag", &self.send_lag.len())
            .field("first_byte", &self.first_byte.len())
            .field("clamped", &self.clamped)
            .finish()
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder {
            response: new_histogram(),
            service: new_histogram(),
            send_lag: new_histogram(),
            first_byte: new_histogram(),
            clamped: 0,
        }
    }

    /// Records one finished request. Never allocates.
    #[inline]
    pub fn record(&mut self, response_ns: u64, service_ns: u64, send_lag_ns: u64) {
        let c = record_clamped(&mut self.response, response_ns) as u64
            + record_clamped(&mut self.service, service_ns) as u64
            + record_clamped(&mut self.send_lag, send_lag_ns) as u64;
        self.clamped += c;
    }

    /// Records the first byte of one response, `first_byte_ns` after its intended send. Never
    /// allocates.
    #[inline]
    pub fn record_first_byte(&mut self, first_byte_ns: u64) {
        self.clamped += record_clamped(&mut self.first_byte, first_byte_ns) as u64;
    }

    /// Adds another recorder's counts into this one (exact: histograms merge bucket by bucket).
    pub fn add(&mut self, other: &Recorder) {
        // Same layout on both sides, so `add` cannot fail.
        self.response.add(&other.response).expect("same layout");
        self.service.add(&other.service).expect("same layout");
        self.send_lag.add(&other.send_lag).expect("same layout");
        self.first_byte.add(&other.first_byte).expect("same layout");
        self.clamped += other.clamped;
    }

    pub fn reset(&mut self) {
        self.response.reset();
        self.service.reset();
        self.send_lag.reset();
        self.first_byte.reset();
        self.clamped = 0;
    }
}

/// One percentile of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentileValue {
    pub percentile: f64,
    pub value_ns: u64,
}

/// The numbers a report shows for one histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub percentiles: Vec<PercentileValue>,
}

impl Summary {
    /// Summarises `h` at [`SUMMARY_PERCENTILES`]. An empty histogram gives zeros, not NaN.
    pub fn of(h: &Histo) -> Summary {
        let empty = h.is_empty();
        Summary {
            count: h.len(),
            min_ns: if empty { 0 } else { h.min() },
            max_ns: if empty { 0 } else { h.max() },
            mean_ns: if empty { 0.0 } else { h.mean() },
            stdev_ns: if empty { 0.0 } else { h.stdev() },
            percentiles: SUMMARY_PERCENTILES
                .iter()
                .map(|&p| PercentileValue {
                    percentile: p,
                    value_ns: if empty { 0 } else { value_at(h, p) },
                })
                .collect(),
        }
    }

    /// The value at percentile `p` if the summary has it.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|v| (v.percentile - p).abs() < 1e-9)
            .map(|v| v.value_ns)
    }
}

/// Value at percentile `p` (0..=100), reported as the highest value equivalent to the bucket,
/// as HdrHistogram does everywhere; 100 gives the exact recorded max.
pub fn value_at(h: &Histo, p: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    if p >= 100.0 {
        return h.max();
    }
    h.highest_equivalent(h.value_at_quantile(p / 100.0))
}

/// Errors decoding a serialized histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistCodecError {
    #[error("invalid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("invalid histogram encoding: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
}

/// Serializes to the V2 compressed encoding (zlib), base64 encoded, as `.hlog` lines use.
pub fn to_base64_v2_compressed(h: &Histo) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes a base64 V2 (plain or compressed) histogram.
pub fn from_base64_v2(text: &str) -> Result<Histo, HistCodecError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HistCodecError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_rows_name_the_summary_percentiles_then_the_mean() {
        let ps: Vec<f64> = SUMMARY_ROWS
            .iter()
            .filter_map(|r| match r.statistic {
                Statistic::Percentile(p) => Some(p),
                Statistic::Mean => None,
            })
            .collect();
        assert_eq!(ps, SUMMARY_PERCENTILES);
        assert_eq!(SUMMARY_ROWS[8].statistic, Statistic::Mean);
        let mut h = new_histogram();
        h.record(1000).unwrap();
        h.record(2000).unwrap();
        assert_eq!(Statistic::Mean.of(&h), 1500.0);
        assert_eq!(Statistic::Percentile(100.0).of(&h), 2000.0);
        assert_eq!(Statistic::Mean.of(&new_histogram()), 0.0);
    }

    #[test]
    fn values_above_range_are_clamped_and_counted_not_dropped() {
        let mut r = Recorder::new();
        r.record(HIGHEST_TRACKABLE_NS * 2, 10, 0);
        assert_eq!(r.response.len(), 1);
        assert_eq!(r.send_lag.len(), 1, "a zero lag is recorded too");
        assert_eq!(r.clamped, 1);
        assert!(r.response.max() >= HIGHEST_TRACKABLE_NS);
    }

    #[test]
    fn summary_of_uniform_values() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = Summary::of(&h);
        assert_eq!(s.count, 10_000);
        let p50 = s.at(50.0).unwrap();
        assert!((p50 as f64 - 5_000_000.0).abs() / 5e6 < 0.002, "{p50}");
        assert_eq!(s.at(100.0).unwrap(), h.max());
        assert!((s.mean_ns - 5_000_500.0).abs() / 5e6 < 0.002);
    }

    #[test]
    fn empty_summary_is_zero_not_nan() {
        let s = Summary::of(&new_histogram());
        assert_eq!(s.count, 0);
        assert_eq!(s.mean_ns, 0.0);
        assert!(s.percentiles.iter().all(|p| p.value_ns == 0));
    }

    #[test]
    fn base64_round_trip_keeps_every_count() {
        let mut h = new_histogram();
        for v in [1u64, 17, 1_000, 123_456, 9_999_999, 3_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let text = to_base64_v2_compressed(&h);
        let back = from_base64_v2(&text).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        assert_eq!(back, h);
    }

    #[test]
    fn bad_base64_is_an_error_not_a_panic() {
        assert!(from_base64_v2("not base64 !!!").is_err());
        assert!(from_base64_v2("AAAA").is_err());
    }
}
