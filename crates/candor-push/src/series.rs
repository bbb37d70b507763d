//! The neutral series model every push format encodes: a name, labels, and a counter, gauge or
//! native histogram, all cumulative since the start of their phase.

use crate::native::NativeHistogram;

/// One series' value at a push.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Counter(f64),
    Gauge(f64),
    Histogram(NativeHistogram),
}

/// One series: its metric name, labels (the common ones included) and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: Vec<(String, String)>,
    pub value: Value,
}

/// Every series of one push, taken at one instant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    /// Wall-clock time of the push, milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// Wall-clock start of the run, ns since the Unix epoch (OTLP's cumulative start time).
    pub start_unix_ns: u64,
    pub series: Vec<Series>,
    /// The run's last push (its final numbers).
    pub last: bool,
}

impl Batch {
    /// Samples in the batch: one per series (a native histogram is one sample).
    pub fn samples(&self) -> u64 {
        self.series.len() as u64
    }
}
