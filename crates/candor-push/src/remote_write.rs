//! Prometheus remote write 1.0: the `WriteRequest` protobuf, snappy block-compressed, POSTed.
//! The messages are written from the spec's `prompb/types.proto` and `prompb/remote.proto`
//! (<https://prometheus.io/docs/specs/prw/remote_write_spec/>, the Prometheus repository's
//! `prompb/` at v2.42), only the fields candor sends; field numbers as there.

use crate::format::Format;
use crate::native::{NativeHistogram, SCHEMA};
use crate::series::{Batch, Value};

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// A native histogram with integer counts (`count_int`, `zero_count_int`, `positive_deltas`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// `ResetHint`: 0 unknown, 1 yes, 2 no, 3 gauge.
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// Classic buckets' upper bounds in seconds for `?classic` (old receivers without native
/// histograms): every 8th native bound, i.e. 16 per doubling (4.4% apart), from 1 us to 1 h.
fn classic_bounds() -> impl Iterator<Item = (i32, f64)> {
    let lo = crate::native::bucket_index(1_000);
    let hi = crate::native::bucket_index(3_600_000_000_000);
    (lo..=hi)
        .step_by(8)
        .map(|i| (i, crate::native::upper_bound_s(i)))
}

/// The remote write output: native histograms, or classic `_bucket`/`_count`/`_sum` series.
pub struct RemoteWrite {
    pub classic: bool,
}

fn labels_of(name: &str, labels: &[(String, String)], extra: Option<(&str, String)>) -> Vec<Label> {
    let mut l: Vec<Label> = labels
        .iter()
        .map(|(k, v)| Label {
            name: k.clone(),
            value: v.clone(),
        })
        .collect();
    l.push(Label {
        name: "__name__".into(),
        value: name.into(),
    });
    if let Some((k, v)) = extra {
        l.push(Label {
            name: k.into(),
            value: v,
        });
    }
    l.sort_by(|a, b| a.name.cmp(&b.name));
    l
}

fn float(
    name: &str,
    labels: &[(String, String)],
    extra: Option<(&str, String)>,
    value: f64,
    ts: i64,
) -> TimeSeries {
    TimeSeries {
        labels: labels_of(name, labels, extra),
        samples: vec![Sample {
            value,
            timestamp: ts,
        }],
        histograms: Vec::new(),
    }
}

fn native(h: &NativeHistogram, ts: i64) -> Histogram {
    Histogram {
        count_int: h.count,
        sum: h.sum_s,
        schema: SCHEMA,
        zero_threshold: 0.0,
        zero_count_int: h.zero_count,
        positive_spans: h
            .spans()
            .into_iter()
            .map(|s| BucketSpan {
                offset: s.offset,
                length: s.length,
            })
            .collect(),
        positive_deltas: h.deltas(),
        reset_hint: 0,
        timestamp: ts,
    }
}

impl RemoteWrite {
    /// The `WriteRequest` of `batch`.
    pub fn request(&self, batch: &Batch) -> WriteRequest {
        let ts = batch.timestamp_ms;
        let mut timeseries = Vec::new();
        for s in &batch.series {
            match &s.value {
                Value::Counter(v) | Value::Gauge(v) => {
                    timeseries.push(float(s.name, &s.labels, None, *v, ts))
                }
                Value::Histogram(h) if !self.classic => timeseries.push(TimeSeries {
                    labels: labels_of(s.name, &s.labels, None),
                    samples: Vec::new(),
                    histograms: vec![native(h, ts)],
                }),
                Value::Histogram(h) => {
                    let bucket = format!("{}_bucket", s.name);
                    let mut seen = h.zero_count;
                    let mut it = h.buckets.iter().peekable();
                    for (i, le) in classic_bounds() {
                        while let Some(&&(j, c)) = it.peek() {
                            if j > i {
                                break;
                            }
                            seen += c;
                            it.next();
                        }
                        timeseries.push(float(
                            &bucket,
                            &s.labels,
                            Some(("le", format!("{le}"))),
                            seen as f64,
                            ts,
                        ));
                    }
                    timeseries.push(float(
                        &bucket,
                        &s.labels,
                        Some(("le", "+Inf".into())),
                        h.count as f64,
                        ts,
                    ));
                    timeseries.push(float(
                        &format!("{}_count", s.name),
                        &s.labels,
                        None,
                        h.count as f64,
                        ts,
                    ));
                    timeseries.push(float(
                        &format!("{}_sum", s.name),
                        &s.labels,
                        None,
                        h.sum_s,
                        ts,
                    ));
                }
            }
        }
        WriteRequest { timeseries }
    }
}

impl Format for RemoteWrite {
    fn name(&self) -> &'static str {
        "prometheus-rw"
    }

    fn encode(&self, batch: &Batch) -> Vec<u8> {
        use prost::Message as _;
        let raw = self.request(batch).encode_to_vec();
        // The block format, not the framed one: the spec says so.
        snap::raw::Encoder::new()
            .compress_vec(&raw)
            .unwrap_or_default()
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ]
    }
}

/// Decodes a remote write body (tests and test receivers).
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    use prost::Message as _;
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| e.to_string())?;
    WriteRequest::decode(raw.as_slice()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Series;

    fn batch() -> Batch {
        let mut h = candor_core::new_histogram();
        h.record_n(1_000_000, 9).unwrap();
        h.record(900_000_000).unwrap();
        Batch {
            timestamp_ms: 1_700_000_000_123,
            start_unix_ns: 0,
            last: true,
            series: vec![
                Series {
                    name: "candor_response_time_seconds",
                    help: "",
                    labels: vec![
                        ("run_id".into(), "r1".into()),
                        ("phase".into(), "measured".into()),
                    ],
                    value: Value::Histogram(NativeHistogram::of(&h)),
                },
                Series {
                    name: "candor_requests_intended_total",
                    help: "",
                    labels: vec![("run_id".into(), "r1".into())],
                    value: Value::Counter(10.0),
                },
            ],
        }
    }

    #[test]
    fn a_batch_round_trips_through_snappy_and_protobuf() {
        let rw = RemoteWrite { classic: false };
        let got = decode(&rw.encode(&batch())).unwrap();
        assert_eq!(got, rw.request(&batch()));
        let h = &got.timeseries[0];
        let names: Vec<&str> = h.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "phase", "run_id"], "sorted by name");
        assert_eq!(h.histograms[0].count_int, 10);
        assert_eq!(h.histograms[0].schema, 7);
        assert_eq!(
            h.histograms[0].positive_deltas.iter().sum::<i64>(),
            1,
            "9, then 1 - 9"
        );
        assert_eq!(h.histograms[0].timestamp, 1_700_000_000_123);
        assert_eq!(got.timeseries[1].samples[0].value, 10.0);
    }

    #[test]
    fn classic_buckets_are_cumulative_to_the_count() {
        let rw = RemoteWrite { classic: true };
        let got = rw.request(&batch());
        let buckets: Vec<&TimeSeries> = got
            .timeseries
            .iter()
            .filter(|t| {
                t.labels
                    .iter()
                    .any(|l| l.value == "candor_response_time_seconds_bucket")
            })
            .collect();
        let values: Vec<f64> = buckets.iter().map(|t| t.samples[0].value).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*values.last().unwrap(), 10.0);
        // 1 ms (its HDR top, 1.0005 ms) is under the first bound at or above it.
        let le_of = |t: &TimeSeries| {
            t.labels
                .iter()
                .find(|l| l.name == "le")
                .unwrap()
                .value
                .clone()
        };
        let first_nine = buckets.iter().find(|t| t.samples[0].value == 9.0).unwrap();
        let le: f64 = le_of(first_nine).parse().unwrap();
        assert!((0.001..0.001 * 1.05).contains(&le), "{le}");
    }
}
