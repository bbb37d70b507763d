//! The `config` field of a results file, typed by the tool that wrote it: a load run's settings,
//! the harness's, what a merge was made from, or an interval log's header. A value no shape of
//! this build matches exactly (an older file, another tool's) is kept whole as
//! [`RecordedConfig::Other`], so reading and writing a file back never loses a setting.

use crate::run_config::{Environment, Kind, RunConfig};
use serde::{Deserialize, Serialize};

/// What a tool records as `config`.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedConfig {
    /// `candor run` (and every step of a sweep or capacity search).
    Run(Box<RunConfig>),
    /// The in-process harness.
    Harness(HarnessConfig),
    /// `candor merge`.
    Merged(Box<MergedConfig>),
    /// An interval log read by `candor report`.
    Hlog(HlogConfig),
    /// Anything else, as it was read: older layouts, a time slice, hand-made files.
    Other(serde_json::Value),
}

/// The harness's settings and its summary tables. They are the harness's own types, which sit
/// above this crate, so they are kept as the JSON the harness wrote them as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessConfig {
    /// `candor_harness::Config`.
    pub harness: serde_json::Value,
    /// `candor_harness::SummaryTable`s: end to end, then each probe.
    pub summaries: Vec<serde_json::Value>,
}

/// What a merge was made from; for a shard set also the set's shape and its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergedConfig {
    pub merged_from: Vec<MergedSource>,
    /// A shard set: the threads and connections of all shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// A consistent shard set: the shards' common total rate (`None` in closed loop), duration
    /// and warm-up. Absent when the set has problems.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_per_s: Option<Option<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// The report on a shard set (`candor_report::shards::ShardReport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardSetRecord>,
}

/// A key that is there, `null` or not (a plain `Option<Option<_>>` reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

/// One input of a merge, as its results described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergedSource {
    pub kind: Kind,
    pub target: String,
    pub start_time_unix_s: f64,
    pub command_line: Vec<String>,
    pub config: RecordedConfig,
    pub environment: Environment,
}

/// The report on a merged shard set, as recorded in `config.shards`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSetRecord {
    /// The set's shard count (that of the first shard).
    pub count: Option<u32>,
    /// What start offsets are relative to, in words.
    pub reference: String,
    pub reference_unix_s: f64,
    /// Reasons the inputs do not form one complete, consistent schedule.
    pub problems: Vec<String>,
    pub notes: Vec<String>,
    pub shards: Vec<ShardRecord>,
}

/// One shard of a merged set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardRecord {
    /// The input's label (its file).
    pub file: String,
    pub shard_index: Option<u32>,
    pub shard_count: Option<u32>,
    pub start_time_unix_s: f64,
    pub late_start_s: Option<f64>,
    pub start_offset_s: f64,
    pub intended: u64,
    pub completed: u64,
    pub failed: u64,
    pub target_per_s: Option<f64>,
    pub achieved_per_s: f64,
    pub send_lag_p99_ns: u64,
    pub generator_late: u64,
    /// Why the shard fell behind, in words; empty when it kept up.
    pub behind: Vec<String>,
}

/// What `candor report` knows of an interval log it read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HlogConfig {
    /// The log's label (its file).
    pub source: String,
    /// The `[Logged with ...]` comment, when the log has one.
    pub logged_with: Option<String>,
    pub log_format_version: Option<String>,
    /// The log's tags (`(untagged)` for lines without one).
    pub tags: Vec<String>,
    /// The tag read (`None`: the untagged lines).
    pub selected_tag: Option<String>,
}

impl RecordedConfig {
    /// The `config` value of a results file. Keys come out sorted at every depth, as every
    /// earlier build wrote them (they were `serde_json::Value`s), so the bytes do not change.
    pub fn to_value(&self) -> serde_json::Value {
        let value = match self {
            RecordedConfig::Run(c) => serde_json::to_value(c),
            RecordedConfig::Harness(c) => serde_json::to_value(c),
            RecordedConfig::Merged(c) => serde_json::to_value(c),
            RecordedConfig::Hlog(c) => serde_json::to_value(c),
            RecordedConfig::Other(v) => return v.clone(),
        };
        value.expect("recorded settings always serialize")
    }

    /// Types `value` as the one shape of this build it is exactly (nothing missing, nothing
    /// more, every value of its type); anything else stays [`RecordedConfig::Other`].
    pub fn from_value(value: serde_json::Value) -> Self {
        fn exactly<T: Serialize + serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
            let typed: T = serde_json::from_value(v.clone()).ok()?;
            (serde_json::to_value(&typed).ok()? == *v).then_some(typed)
        }
        if !value.is_object() {
            return RecordedConfig::Other(value);
        }
        if let Some(c) = exactly::<RunConfig>(&value) {
            RecordedConfig::Run(Box::new(c))
        } else if let Some(c) = exactly::<MergedConfig>(&value) {
            RecordedConfig::Merged(Box::new(c))
        } else if let Some(c) = exactly::<HarnessConfig>(&value) {
            RecordedConfig::Harness(c)
        } else if let Some(c) = exactly::<HlogConfig>(&value) {
            RecordedConfig::Hlog(c)
        } else {
            RecordedConfig::Other(value)
        }
    }

    /// The load run's settings, when these are exactly a run's.
    pub fn run_mut(&mut self) -> Option<&mut RunConfig> {
        match self {
            RecordedConfig::Run(c) => Some(c),
            _ => None,
        }
    }

    /// Load threads, when the tool that wrote it had them (runs, merged shard sets).
    pub fn threads(&self) -> Option<u64> {
        match self {
            RecordedConfig::Run(c) => Some(c.threads as u64),
            RecordedConfig::Merged(m) => m.threads,
            RecordedConfig::Other(v) => v.get("threads").and_then(|v| v.as_u64()),
            RecordedConfig::Harness(_) | RecordedConfig::Hlog(_) => None,
        }
    }

    /// Connections, when the tool that wrote it had them (runs, merged shard sets).
    pub fn connections(&self) -> Option<u64> {
        match self {
            RecordedConfig::Run(c) => Some(c.connections as u64),
            RecordedConfig::Merged(m) => m.connections,
            RecordedConfig::Other(v) => v.get("connections").and_then(|v| v.as_u64()),
            RecordedConfig::Harness(_) | RecordedConfig::Hlog(_) => None,
        }
    }

    /// The bounds of a time slice (`candor report --start/--end`): start and end in seconds
    /// from the run's start, no end meaning the run's end.
    pub fn time_slice(&self) -> Option<(f64, Option<f64>)> {
        match self {
            RecordedConfig::Other(v) => serde_json::from_value(v.get(TIME_SLICE_KEY)?.clone()).ok(),
            _ => None,
        }
    }

    /// These settings marked as cut to a time slice. A slice is a view of the settings, not a
    /// shape any tool writes, so it keeps them as JSON with the bounds beside them.
    pub fn sliced(&self, start_s: f64, end_s: Option<f64>) -> RecordedConfig {
        let bounds = serde_json::json!([start_s, end_s]);
        let mut value = self.to_value();
        match value.as_object_mut() {
            Some(o) => {
                o.insert(TIME_SLICE_KEY.into(), bounds);
            }
            None => value = serde_json::json!({ TIME_SLICE_KEY: bounds }),
        }
        RecordedConfig::Other(value)
    }
}

/// The key of a time slice's bounds in `config`.
pub const TIME_SLICE_KEY: &str = "time_slice_s";

impl From<RunConfig> for RecordedConfig {
    fn from(c: RunConfig) -> Self {
        RecordedConfig::Run(Box::new(c))
    }
}

impl From<serde_json::Value> for RecordedConfig {
    fn from(v: serde_json::Value) -> Self {
        RecordedConfig::from_value(v)
    }
}

impl Serialize for RecordedConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for RecordedConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(RecordedConfig::from_value(serde_json::Value::deserialize(
            d,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_producer_shape_is_typed_and_writes_the_same_json() {
        let run = RecordedConfig::from(RunConfig {
            connections: 8,
            threads: 2,
            ..Default::default()
        });
        let harness = json!({"harness": {"iterations": 1000, "name": "b"}, "summaries": [{"name": "end to end"}]});
        let hlog = json!({"source": "a.hlog", "logged_with": null, "log_format_version": "1.3",
                          "tags": ["(untagged)"], "selected_tag": null});
        let merged = json!({"merged_from": [{"kind": "run", "target": "http://h/", "start_time_unix_s": 1.5,
            "command_line": ["candor"], "config": run.to_value(),
            "environment": {"cpu_model": "c", "cores": 2, "kernel": "k", "hostname": "h"}}],
            "threads": 4, "connections": 16, "rate_per_s": null, "duration_s": 2.0, "warmup_s": 0.0,
            "shards": {"count": 2, "reference": "r", "reference_unix_s": 1.0, "problems": [], "notes": [],
              "shards": [{"file": "a", "shard_index": 0, "shard_count": 2, "start_time_unix_s": 1.0,
                "late_start_s": null, "start_offset_s": 0.0, "intended": 10, "completed": 9, "failed": 1,
                "target_per_s": 5.0, "achieved_per_s": 4.5, "send_lag_p99_ns": 7, "generator_late": 0,
                "behind": []}]}});
        for v in [run.to_value(), harness, hlog, merged] {
            let typed = RecordedConfig::from_value(v.clone());
            assert!(!matches!(typed, RecordedConfig::Other(_)), "{v}");
            assert_eq!(typed.to_value(), v);
            // The text too: keys sorted at every depth, as a `Value` writes them.
            assert_eq!(
                serde_json::to_string(&typed).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
        let RecordedConfig::Merged(m) = RecordedConfig::from_value(json!({"merged_from": [
            {"kind": "run", "target": "t", "start_time_unix_s": 1.0, "command_line": [],
             "config": run.to_value(), "environment": {"cpu_model": "c", "cores": 2, "kernel": "k", "hostname": "h"}}]}))
        else {
            panic!("a plain merge is typed");
        };
        assert_eq!(m.merged_from[0].config, run);
        assert_eq!((run.threads(), run.connections()), (Some(2), Some(8)));
    }

    #[test]
    fn a_value_no_shape_matches_exactly_is_kept_whole() {
        let mut older = RecordedConfig::from(RunConfig::default()).to_value();
        older.as_object_mut().unwrap().remove("streams");
        older["retired_setting"] = json!(3);
        for v in [
            older,
            json!(null),
            json!({"rate": 1000}),
            json!({"harness": {}}),
        ] {
            let read: RecordedConfig = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(read, RecordedConfig::Other(v.clone()));
            assert_eq!(serde_json::to_value(&read).unwrap(), v);
        }
        let odd = RecordedConfig::from_value(json!({"threads": 3, "connections": "many"}));
        assert_eq!((odd.threads(), odd.connections()), (Some(3), None));
    }

    #[test]
    fn a_time_slice_keeps_the_settings_and_adds_its_bounds() {
        let run = RecordedConfig::from(RunConfig::default());
        assert_eq!(run.time_slice(), None);
        let cut = run.sliced(1.0, None);
        assert_eq!(cut.time_slice(), Some((1.0, None)));
        assert_eq!(cut.to_value()["time_slice_s"], json!([1.0, null]));
        assert_eq!(cut.to_value()["threads"], json!(0));
        let from_null = RecordedConfig::Other(json!(null)).sliced(0.0, Some(2.0));
        assert_eq!(from_null.to_value(), json!({"time_slice_s": [0.0, 2.0]}));
    }
}
