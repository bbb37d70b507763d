//! The protobuf exposition of `/metrics` (`io.prometheus.client.MetricFamily`, length-delimited),
//! the format in which Prometheus scrapes native histograms: each histogram carries its classic
//! buckets and its native (schema 7) buckets, the same as candor pushes over remote write. The
//! messages are prometheus-client's, generated from Prometheus's own `metrics.proto`.

use crate::buckets::Buckets;
use crate::exposition::{families, Kind, MetricsSnapshot, Sample, BUCKET_BOUNDS_NS};
use candor_push::native::SCHEMA;
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model as pb;
use prost::Message;

/// The media type of this exposition, as Prometheus asks for it and as the answer names it.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

fn histogram(b: &Buckets) -> pb::Histogram {
    let native = &b.native;
    pb::Histogram {
        sample_count: b.count,
        sample_sum: b.sum_ns as f64 / 1e9,
        bucket: BUCKET_BOUNDS_NS
            .iter()
            .zip(b.cumulative.iter())
            .map(|(bound, n)| pb::Bucket {
                cumulative_count: *n,
                upper_bound: *bound as f64 / 1e9,
                ..Default::default()
            })
            .collect(),
        schema: SCHEMA,
        // Only values of exactly 0 (a send lag of 0 ns) are in the zero bucket; Prometheus takes
        // a histogram for a native one when it has native buckets or a zero bucket.
        zero_threshold: 0.0,
        zero_count: native.zero_count,
        positive_span: native
            .spans()
            .into_iter()
            .map(|s| pb::BucketSpan {
                offset: s.offset,
                length: s.length,
            })
            .collect(),
        positive_delta: native.deltas(),
        ..Default::default()
    }
}

/// The length-delimited `MetricFamily` messages of `s`. Families without a metric (no status
/// code seen yet) are left out: Prometheus refuses an empty family.
pub fn render(s: &MetricsSnapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * 1024);
    for f in families(s).into_iter().filter(|f| !f.metrics.is_empty()) {
        let metric = f
            .metrics
            .iter()
            .map(|m| {
                let mut metric = pb::Metric {
                    label: m
                        .labels
                        .iter()
                        .map(|(k, v)| pb::LabelPair {
                            name: k.to_string(),
                            value: v.clone(),
                        })
                        .collect(),
                    ..Default::default()
                };
                match (f.kind, m.sample) {
                    (_, Sample::Histogram(b)) => metric.histogram = Some(histogram(b)),
                    (Kind::Counter, Sample::Number(v)) => {
                        metric.counter = Some(pb::Counter {
                            value: v,
                            ..Default::default()
                        })
                    }
                    (_, Sample::Number(v)) => metric.gauge = Some(pb::Gauge { value: v }),
                }
                metric
            })
            .collect();
        let family = pb::MetricFamily {
            name: f.name,
            help: f.help,
            r#type: match f.kind {
                Kind::Counter => pb::MetricType::Counter,
                Kind::Gauge => pb::MetricType::Gauge,
                Kind::Histogram => pb::MetricType::Histogram,
            } as i32,
            metric,
            unit: String::new(),
        };
        // Writing into a Vec cannot run out of room.
        let _ = family.encode_length_delimited(&mut out);
    }
    out
}

/// Which exposition a scraper's `Accept` header asks for (pure, so tested exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    Text,
    Protobuf,
}

/// The protobuf exposition when `accept` names it (with `proto=io.prometheus.client.MetricFamily`
/// and `encoding=delimited`) at a quality above 0 and at least that of any text type it takes;
/// else the text format, which every scraper takes.
pub fn negotiate(accept: Option<&str>) -> Exposition {
    let Some(accept) = accept else {
        return Exposition::Text;
    };
    let mut protobuf_q = 0.0f64;
    let mut text_q = 0.0f64;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut proto, mut delimited) = (false, false);
        for p in parts {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => q = v.parse().unwrap_or(0.0),
                "proto" => proto = v == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = v == "delimited",
                _ => {}
            }
        }
        match media.as_str() {
            "application/vnd.google.protobuf" if proto && delimited => {
                protobuf_q = protobuf_q.max(q)
            }
            "text/plain" | "text/*" | "*/*" | "application/openmetrics-text" => {
                text_q = text_q.max(q)
            }
            _ => {}
        }
    }
    if protobuf_q > 0.0 && protobuf_q >= text_q {
        Exposition::Protobuf
    } else {
        Exposition::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    /// What Prometheus 2.42 sends with `--enable-feature=native-histograms`.
    const PROMETHEUS_ACCEPT: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn negotiation_follows_the_accept_header() {
        assert_eq!(negotiate(None), Exposition::Text);
        assert_eq!(negotiate(Some("*/*")), Exposition::Text);
        assert_eq!(negotiate(Some(PROMETHEUS_ACCEPT)), Exposition::Protobuf);
        assert_eq!(
            negotiate(Some("text/plain;version=0.0.4;q=0.9,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5")),
            Exposition::Text
        );
        // Another message or encoding is not ours to send.
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=other.Message;encoding=delimited"
            )),
            Exposition::Text
        );
        assert_eq!(
            negotiate(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text")),
            Exposition::Text
        );
        assert_eq!(
            negotiate(Some("application/vnd.google.protobuf; proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited; q=0")),
            Exposition::Text
        );
    }

    fn snapshot(h: &candor_core::Histo) -> MetricsSnapshot {
        MetricsSnapshot {
            shard: Some(2),
            response: Buckets::of(h),
            service: Buckets::of(h),
            send_lag: Buckets::of(&new_histogram()),
            first_byte: None,
            stream: None,
            measured: Default::default(),
            codes: Default::default(),
            reply_codes: Default::default(),
            in_flight: 0,
            target_per_s: Some(100.0),
            elapsed_s: 1.5,
            done: true,
        }
    }

    #[test]
    fn families_decode_with_native_and_classic_buckets() {
        let mut h = new_histogram();
        h.record(0).unwrap();
        h.record_n(1_000_000_000, 3).unwrap();
        h.record(2_100_000_000).unwrap();
        let bytes = render(&snapshot(&h));
        let mut buf = bytes.as_slice();
        let mut decoded = Vec::new();
        while !buf.is_empty() {
            decoded.push(pb::MetricFamily::decode_length_delimited(&mut buf).unwrap());
        }
        let names: Vec<&str> = decoded.iter().map(|f| f.name.as_str()).collect();
        assert!(
            !names.contains(&"candor_responses_total"),
            "an empty family is left out: {names:?}"
        );
        let text = crate::exposition::render(&snapshot(&h));
        let text_families = text.matches("# TYPE ").count();
        assert_eq!(decoded.len() + 1, text_families, "{names:?}");
        let rt = &decoded[0];
        assert_eq!(rt.name, "candor_response_time_seconds");
        assert_eq!(rt.r#type, pb::MetricType::Histogram as i32);
        let m = &rt.metric[0];
        assert_eq!(m.label[0].name, "shard");
        assert_eq!(m.label[0].value, "2");
        let hist = m.histogram.as_ref().unwrap();
        let native = Buckets::of(&h).native;
        assert_eq!(hist.sample_count, 5);
        assert_eq!(hist.schema, 7);
        assert_eq!(hist.zero_count, 1);
        assert_eq!(hist.positive_delta, native.deltas());
        assert_eq!(hist.positive_span.len(), native.spans().len());
        assert_eq!(hist.positive_span[0].offset, native.spans()[0].offset);
        assert_eq!(hist.bucket.len(), BUCKET_BOUNDS_NS.len());
        assert_eq!(hist.bucket.last().unwrap().cumulative_count, 5);
        let finished = decoded
            .iter()
            .find(|f| f.name == "candor_run_finished")
            .unwrap();
        assert_eq!(finished.r#type, pb::MetricType::Gauge as i32);
        assert_eq!(finished.metric[0].gauge.as_ref().unwrap().value, 1.0);
        let intended = decoded
            .iter()
            .find(|f| f.name == "candor_requests_intended_total")
            .unwrap();
        assert!(intended.metric[0].counter.is_some());
    }
}
