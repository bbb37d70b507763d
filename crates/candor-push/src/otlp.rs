//! OpenTelemetry metrics over OTLP/HTTP (protobuf), with the official message definitions
//! (`opentelemetry-proto`): counters as monotonic cumulative sums, gauges, and histograms as
//! exponential histograms of the same scale (7) and buckets as the Prometheus output's.

use crate::format::Format;
use crate::native::{NativeHistogram, SCHEMA};
use crate::series::{Batch, Value};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    exponential_histogram_data_point::Buckets, metric::Data, number_data_point,
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

/// Labels that describe the run rather than a series: resource attributes in OTLP.
const RESOURCE_LABELS: [&str; 2] = ["run_id", "shard"];

/// The OTLP/HTTP output.
pub struct Otlp;

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
    }
}

/// OTLP's bucket `i` is `(base^i, base^(i+1)]`, Prometheus's `(base^(i-1), base^i]`: the same
/// buckets, indexes one apart. The counts are dense from the first populated bucket.
fn exponential(h: &NativeHistogram) -> (Buckets, u64) {
    let Some(&(first, _)) = h.buckets.first() else {
        return (Buckets::default(), h.zero_count);
    };
    let last = h.buckets.last().map_or(first, |b| b.0);
    let mut counts = vec![0u64; (last - first + 1) as usize];
    for &(i, c) in &h.buckets {
        counts[(i - first) as usize] = c;
    }
    (
        Buckets {
            offset: first - 1,
            bucket_counts: counts,
        },
        h.zero_count,
    )
}

impl Otlp {
    /// The export request of `batch`.
    pub fn request(&self, batch: &Batch) -> ExportMetricsServiceRequest {
        let time = batch.timestamp_ms as u64 * 1_000_000;
        let start = batch.start_unix_ns;
        let mut resource = vec![kv("service.name", "candor")];
        if let Some(first) = batch.series.first() {
            for (k, v) in first
                .labels
                .iter()
                .filter(|(k, _)| RESOURCE_LABELS.contains(&k.as_str()))
            {
                resource.push(kv(&format!("candor.{k}"), v));
            }
        }
        let metrics = batch
            .series
            .iter()
            .map(|s| {
                let attributes: Vec<KeyValue> = s
                    .labels
                    .iter()
                    .filter(|(k, _)| !RESOURCE_LABELS.contains(&k.as_str()))
                    .map(|(k, v)| kv(k, v))
                    .collect();
                let number = |v: f64| NumberDataPoint {
                    attributes: attributes.clone(),
                    start_time_unix_nano: start,
                    time_unix_nano: time,
                    value: Some(number_data_point::Value::AsDouble(v)),
                    ..Default::default()
                };
                let (unit, data) = match &s.value {
                    Value::Counter(v) => (
                        "1",
                        Data::Sum(Sum {
                            data_points: vec![number(*v)],
                            aggregation_temporality: AggregationTemporality::Cumulative as i32,
                            is_monotonic: true,
                        }),
                    ),
                    Value::Gauge(v) => (
                        "1",
                        Data::Gauge(Gauge {
                            data_points: vec![number(*v)],
                        }),
                    ),
                    Value::Histogram(h) => {
                        let (positive, zero_count) = exponential(h);
                        (
                            "s",
                            Data::ExponentialHistogram(ExponentialHistogram {
                                data_points: vec![ExponentialHistogramDataPoint {
                                    attributes: attributes.clone(),
                                    start_time_unix_nano: start,
                                    time_unix_nano: time,
                                    count: h.count,
                                    sum: Some(h.sum_s),
                                    scale: SCHEMA,
                                    zero_count,
                                    positive: Some(positive),
                                    ..Default::default()
                                }],
                                aggregation_temporality: AggregationTemporality::Cumulative as i32,
                            }),
                        )
                    }
                };
                Metric {
                    name: s.name.into(),
                    description: s.help.into(),
                    unit: unit.into(),
                    data: Some(data),
                    ..Default::default()
                }
            })
            .collect();
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: resource,
                    ..Default::default()
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(InstrumentationScope {
                        name: "candor".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    metrics,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }
}

impl Format for Otlp {
    fn name(&self) -> &'static str {
        "otlp"
    }

    fn encode(&self, batch: &Batch) -> Vec<u8> {
        use prost::Message as _;
        self.request(batch).encode_to_vec()
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("Content-Type", "application/x-protobuf")]
    }
}

/// Decodes an OTLP/HTTP protobuf body (tests and test receivers).
pub fn decode(body: &[u8]) -> Result<ExportMetricsServiceRequest, String> {
    use prost::Message as _;
    ExportMetricsServiceRequest::decode(body).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::upper_bound_s;
    use crate::series::Series;

    #[test]
    fn a_histogram_keeps_its_buckets_and_the_run_goes_to_the_resource() {
        let mut h = candor_core::new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000_003).unwrap();
        }
        let native = NativeHistogram::of(&h);
        let batch = Batch {
            timestamp_ms: 1_700_000_000_000,
            start_unix_ns: 1_699_999_990_000_000_000,
            last: true,
            series: vec![Series {
                name: "candor_response_time_seconds",
                help: "h",
                labels: vec![
                    ("run_id".into(), "r".into()),
                    ("shard".into(), "2".into()),
                    ("phase".into(), "measured".into()),
                ],
                value: Value::Histogram(native.clone()),
            }],
        };
        let got = decode(&Otlp.encode(&batch)).unwrap();
        let rm = &got.resource_metrics[0];
        let res: Vec<(String, String)> = rm
            .resource
            .as_ref()
            .unwrap()
            .attributes
            .iter()
            .map(|a| {
                let Some(any_value::Value::StringValue(v)) = &a.value.as_ref().unwrap().value
                else {
                    panic!()
                };
                (a.key.clone(), v.clone())
            })
            .collect();
        assert_eq!(
            res,
            [
                ("service.name".into(), "candor".into()),
                ("candor.run_id".into(), "r".into()),
                ("candor.shard".into(), "2".into())
            ]
        );
        let m = &rm.scope_metrics[0].metrics[0];
        let Some(Data::ExponentialHistogram(e)) = &m.data else {
            panic!("{m:?}")
        };
        let p = &e.data_points[0];
        assert_eq!((p.count, p.scale, p.attributes.len()), (1000, 7, 1));
        let b = p.positive.as_ref().unwrap();
        assert_eq!(b.bucket_counts.iter().sum::<u64>(), 1000);
        // p99 from OTLP's buckets: the upper bound base^(offset+k+1) of the bucket holding rank
        // 990 is within a bucket (0.54%) above candor's.
        let mut seen = 0;
        let k = b
            .bucket_counts
            .iter()
            .position(|&c| {
                seen += c;
                seen >= 990
            })
            .unwrap();
        let upper = upper_bound_s(b.offset + k as i32 + 1);
        let candor = candor_core::hist::value_at(&h, 99.0) as f64 / 1e9;
        assert!(
            upper >= candor && upper / candor < 1.0055,
            "{upper} vs {candor}"
        );
    }
}
