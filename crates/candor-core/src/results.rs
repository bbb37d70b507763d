//! The results model: what a run (or a harness benchmark) produced, as written to JSON.
//!
//! This is a stable contract for scripts and CI. Fields are only ever added; a change that would
//! break readers bumps [`SCHEMA_VERSION`], and readers refuse versions newer than their own.

//!
//! The numbers of a phase are in `phase_results.rs` and the file's provenance and settings in
//! `run_config.rs`, re-exported here so that `results` stays the one path readers use.

pub use crate::llm_run::{
    BackendModel, Conversations, DatasetSample, LlmBackend, LlmSettings, ModelSource,
    TokenizerCheck, PLACEHOLDER_MODEL,
};
pub use crate::phase_results::*;
pub use crate::run_config::*;
use crate::stream_measures::StreamMeasure;
use serde::{Deserialize, Serialize};

/// Version of the JSON layout written by this build.
pub const SCHEMA_VERSION: u32 = 1;

/// Why the measured window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It ran for the planned duration (`-d`, or the window of `-n`).
    Duration,
    /// Every `--precision` target was reached before the planned end.
    Precision,
    /// An objective could no longer pass (`--abort-on-fail`).
    Abort,
    /// A signal (SIGINT, SIGTERM) cut it short.
    Interrupt,
    /// A load thread failed (a panic): the run ended there, with what was measured so far; the
    /// warnings name the failure.
    Failure,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::Precision => "precision",
            StopReason::Abort => "abort",
            StopReason::Interrupt => "interrupt",
            StopReason::Failure => "failure",
        }
    }
}

/// A `--precision` target and how close the measured window came to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionRow {
    /// 0 < percentile < 100.
    pub percentile: f64,
    /// The half-width asked for, as a fraction of the estimate (0.05 = ±5%).
    pub target: f64,
    pub samples: u64,
    pub estimate_ns: u64,
    /// The 95% order-statistic interval; `None` where the samples cannot bound it.
    pub ci_low_ns: Option<u64>,
    pub ci_high_ns: Option<u64>,
    /// The larger distance from the estimate to a bound, as a fraction of the estimate;
    /// `None` while the interval is unbounded.
    pub half_width: Option<f64>,
    pub reached: bool,
}

/// Details of how the measured window ended, when there is more to say than its reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StopDetail {
    /// Seconds from the first intended send (warm-up included) to the end of the schedule.
    pub at_s: f64,
    /// Measured (not warm-up) intervals complete when the decision was made.
    pub intervals: u64,
    /// `--precision` targets with the interval reached over the whole measured window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<PrecisionRow>,
    /// The objective that could no longer pass (an abort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// In plain words.
    pub detail: String,
}

pub use crate::recorded::{
    HarnessConfig, HlogConfig, MergedConfig, MergedSource, RecordedConfig, ShardRecord,
    ShardSetRecord,
};

/// Everything a run wrote: the measured window at the top level, warm-up and intervals beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    pub schema_version: u32,
    pub candor_version: String,
    pub kind: Kind,
    pub mode: Mode,
    pub target: String,
    pub command_line: Vec<String>,
    /// Wall-clock start of the run (warm-up included), seconds since the Unix epoch.
    pub start_time_unix_s: f64,
    pub environment: Environment,
    /// The settings the run used, typed by the tool that made it: a [`RunConfig`] for runs
    /// (read it with [`RunResults::run_config`]), the harness's own settings, what a merge was
    /// made from, an interval log's header, or (older files) the JSON as it was read.
    pub config: RecordedConfig,
    #[serde(flatten)]
    pub main: PhaseResults,
    pub warmup: Option<PhaseResults>,
    pub intervals: Vec<Interval>,
    /// Further named histograms: harness probes, the platform jitter monitor, TLS handshakes...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<NamedHistogram>,
    /// Reasons not to trust the numbers, in plain words; empty when none were found.
    pub warnings: Vec<String>,
    /// Why the measured window ended (runs only; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// How it ended, for `--precision` and `--abort-on-fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopDetail>,
    /// Load-profile stages (`stages`) and the per-name breakdown (`by_request`); absent when
    /// the run had neither.
    #[serde(flatten, default)]
    pub workload: crate::workload_results::WorkloadResults,
    /// The runs of `candor run --repeat N` (or `candor merge --as-repeats`), each whole with its
    /// own histograms and books, in the order they ran; the rest of the file is their union.
    /// Empty (and absent from the file) for a single run, so older files read as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RunResults>,
}

/// Errors reading a results file.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not candor results JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("written by a newer candor (schema {found}, this build reads up to {supported}); upgrade candor")]
    FutureVersion { found: u32, supported: u32 },
}

/// Reads a versioned candor JSON file (results or sweep), refusing a future schema before looking
/// at anything else: a file from a newer candor says "upgrade", not a confusing field error.
/// Files without a `schema_version` and every version up to [`SCHEMA_VERSION`] load.
pub fn read_versioned<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ResultsError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if let Some(found) = value.get("schema_version").and_then(|v| v.as_u64()) {
        if found > SCHEMA_VERSION as u64 {
            return Err(ResultsError::FutureVersion {
                found: found as u32,
                supported: SCHEMA_VERSION,
            });
        }
    }
    Ok(serde_json::from_value(value)?)
}

/// The `kind` of a candor JSON document, if it names one candor knows.
pub fn kind_of(text: &str) -> Option<Kind> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::from_value(value.get("kind")?.clone()).ok()
}

impl RunResults {
    /// Results with what every producer states (kind, mode, target, settings, the measured
    /// window) and the rest empty: this build's version, no command line, start time,
    /// environment, warm-up, intervals, further histograms, warnings, stop, workload or repeats.
    /// A producer sets what else it has with `RunResults { field, ..RunResults::new(..) }`, so a
    /// new field is written out here and nowhere else.
    pub fn new(
        kind: Kind,
        mode: Mode,
        target: impl Into<String>,
        config: impl Into<RecordedConfig>,
        main: PhaseResults,
    ) -> Self {
        RunResults {
            schema_version: SCHEMA_VERSION,
            candor_version: env!("CARGO_PKG_VERSION").to_string(),
            kind,
            mode,
            target: target.into(),
            command_line: Vec::new(),
            start_time_unix_s: 0.0,
            environment: Environment::default(),
            config: config.into(),
            main,
            warmup: None,
            intervals: Vec::new(),
            extra: Vec::new(),
            warnings: Vec::new(),
            stop_reason: None,
            stop: None,
            workload: Default::default(),
            repeats: Vec::new(),
        }
    }

    /// Parses results JSON (see [`read_versioned`]).
    pub fn from_json(text: &str) -> Result<Self, ResultsError> {
        read_versioned(text)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("results always serialize")
    }

    /// The settings of a load run, read as far as they go: whole when typed, else field by field
    /// from an untyped object (`None` for other tools' settings and for a value that is not an
    /// object: no tool writes that).
    pub fn run_config(&self) -> Option<RunConfig> {
        let other = match &self.config {
            RecordedConfig::Run(c) => return Some((**c).clone()),
            RecordedConfig::Other(v) if v.is_object() => v,
            _ => return None,
        };
        // Field by field, so that one odd value (another tool's) loses only that field.
        let mut c = RunConfig::default();
        let get = |k: &str| other.get(k).cloned();
        macro_rules! field {
            ($($name:ident),*) => {$(
                if let Some(v) = get(stringify!($name)) {
                    if let Ok(x) = serde_json::from_value(v) {
                        c.$name = x;
                    }
                }
            )*};
        }
        field!(
            arrival,
            body_bytes,
            check_status,
            connections,
            drain_s,
            duration_s,
            headers,
            interrupted_after_s,
            interval_s,
            late_start_s,
            llm,
            method,
            pipeline,
            protocol,
            rate_per_s,
            request_set_size,
            requests_total,
            seed,
            shard_count,
            shard_index,
            spin_us,
            start_at_unix_s,
            streams,
            threads,
            timeout_s,
            tls_insecure,
            warmup_s
        );
        Some(c)
    }
}

impl RunResults {
    /// The measured window's full histogram of stream measure `m` (kept in `extra` under its
    /// name), if the run recorded it.
    pub fn stream_histogram(
        &self,
        m: StreamMeasure,
    ) -> Option<Result<crate::Histo, crate::hist::HistCodecError>> {
        self.extra.iter().find(|n| n.name == m.name()).map(|n| {
            let d = crate::hist::from_base64_v2(&n.histogram)?;
            let mut h = crate::new_histogram();
            for v in d.iter_recorded() {
                h.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
            Ok(h)
        })
    }

    /// The stream measures this run recorded, in report order.
    pub fn stream_measures(&self) -> Vec<StreamMeasure> {
        StreamMeasure::ALL
            .into_iter()
            .filter(|m| self.main.stream_summary(*m).is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::hist::{new_histogram, Recorder};

    fn sample() -> RunResults {
        let mut r = Recorder::new();
        for i in 1..=1000u64 {
            r.record(i * 1000, i * 900, i * 100);
        }
        let requests = RequestCounts {
            intended: 1002,
            completed: 1000,
            in_flight_at_end: 2,
            sent_unanswered: 1,
            queued_unsent: 1,
            ..Default::default()
        };
        RunResults {
            candor_version: "test".into(),
            command_line: vec!["candor".into()],
            start_time_unix_s: 1.0,
            ..RunResults::new(
                Kind::Run,
                Mode::OpenLoop,
                "http://127.0.0.1:1/",
                serde_json::json!({"rate": 1000}),
                PhaseResults::from_recorder(&r, &new_histogram(), requests, 1.0, Some(1000.0)),
            )
        }
    }

    #[test]
    fn status_codes_are_counted_without_allocating_and_written_by_code() {
        let mut c = CodeCounts::default();
        for code in [200, 200, 404, 0, 599, 600, 99, 100] {
            c.count(code);
        }
        assert_eq!(c.total(), 7, "0 (no status) is not counted");
        let mut d = CodeCounts::default();
        d.add(&c);
        d.count(200);
        let map = d.to_map();
        let expected: Vec<(&str, u64)> =
            vec![("100", 1), ("200", 3), ("404", 1), ("599", 1), ("other", 2)];
        assert_eq!(
            map.iter()
                .map(|(k, n)| (k.as_str(), *n))
                .collect::<Vec<_>>(),
            expected
        );
        assert_eq!(
            status_codes_line(&map),
            "100 ×1  200 ×3  404 ×1  599 ×1  other ×2"
        );
        d.reset();
        assert_eq!(d.total(), 0);
        // In the JSON next to `requests`; absent when empty, and older files read without it.
        let mut res = sample();
        let text = res.to_json_pretty();
        assert!(!text.contains("status_codes") && !text.contains("connection_faults"));
        res.main.status_codes = map;
        res.main.connection_faults = [("connect refused or failed".to_string(), 4)].into();
        let v: serde_json::Value = serde_json::from_str(&res.to_json_pretty()).unwrap();
        assert_eq!(v["status_codes"]["200"], 3);
        assert_eq!(v["connection_faults"]["connect refused or failed"], 4);
        let back = RunResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.main.status_codes, res.main.status_codes);
        assert_eq!(back.main.connection_faults, res.main.connection_faults);
    }

    #[test]
    fn json_round_trip_and_contract_fields() {
        let res = sample();
        assert!(res.main.requests.balanced());
        let text = res.to_json_pretty();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "response_time",
            "service_time",
            "send_lag",
            "requests",
            "rate",
            "duration_s",
        ] {
            assert!(v.get(key).is_some(), "missing top-level {key}");
        }
        assert_eq!(v["response_time"]["percentiles"][4]["percentile"], 99.9);
        assert_eq!(v["requests"]["status"]["2xx"], 0);
        let back = RunResults::from_json(&text).unwrap();
        assert_eq!(back, res);
        let decoded = back.main.histograms.decode().unwrap();
        assert_eq!(decoded.response.len(), 1000);
    }

    #[test]
    fn files_without_the_new_counters_still_load() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json_pretty()).unwrap();
        v["requests"]["errors"]
            .as_object_mut()
            .unwrap()
            .remove("status");
        v["requests"]
            .as_object_mut()
            .unwrap()
            .remove("connections_opened");
        let back = RunResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.main.requests.errors.status, 0);
        assert_eq!(back.main.requests.connections_opened, 0);
    }

    #[test]
    fn status_and_check_failures_balance_the_books_and_count_as_responses() {
        let r = RequestCounts {
            intended: 10,
            completed: 3,
            failed: 7,
            errors: ErrorCounts {
                status: 4,
                check: 2,
                timeout: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(r.balanced());
        // Answered but failed (status or checks) is not unanswered.
        assert_eq!(r.responses(), 9);
        assert_eq!(r.errors.dominant(), Some((FailureClass::Status, 4)));
        assert_eq!(ErrorCounts::default().dominant(), None);
        let tie = ErrorCounts {
            read: 2,
            parse: 2,
            ..Default::default()
        };
        assert_eq!(tie.dominant(), Some((FailureClass::Read, 2)));
        let p = PhaseResults::from_recorder(&Recorder::new(), &new_histogram(), r, 2.0, None);
        assert_eq!(p.rate.achieved_per_s, 4.5);
    }

    #[test]
    fn kinds_and_modes_keep_their_json_names() {
        for (k, name) in [
            (Kind::Run, "run"),
            (Kind::Harness, "harness"),
            (Kind::Merged, "merged"),
            (Kind::Hlog, "hlog"),
            (Kind::Sweep, "sweep"),
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert_eq!(k.name(), name);
        }
        let mixed = Mode::common([Mode::OpenLoop, Mode::ClosedLoop, Mode::OpenLoop]).unwrap();
        assert_eq!(mixed.name(), "open-loop + closed-loop + open-loop");
        let back: Mode = serde_json::from_value(serde_json::json!(mixed.name())).unwrap();
        assert_eq!(back, mixed);
        assert_eq!(
            Mode::common([Mode::ClosedLoop, Mode::ClosedLoop]),
            Some(Mode::ClosedLoop)
        );
        assert_eq!("interval log".parse(), Ok(Mode::IntervalLog));
        assert_eq!(
            "open loop".parse::<Mode>().unwrap_err().to_string(),
            "unknown mode \"open loop\" (expected open-loop, closed-loop or interval log)"
        );
        assert!(Mode::ClosedLoop == "closed-loop" && Kind::Merged == "merged");
        let e = serde_json::from_value::<Mode>(serde_json::json!("half-open")).unwrap_err();
        assert!(e.to_string().contains("unknown mode"), "{e}");
    }

    static HTTPS_NAMING: crate::protocol_name::ProtocolNaming =
        crate::protocol_name::ProtocolNaming {
            id: "http/1.1 (TLS)",
            words: "HTTP/1.1 over TLS",
            replies_are_messages: false,
        };

    #[test]
    fn run_settings_keep_the_layout_earlier_builds_wrote() {
        let c = RunConfig {
            arrival: Some(ArrivalName::Poisson),
            protocol: Some(ProtocolName::new(&HTTPS_NAMING)),
            rate_per_s: Some(100.0),
            connections: 4,
            ..Default::default()
        };
        // The struct writes its fields in declaration order (a `Value` would sort them anyway).
        let text = serde_json::to_string(&c).unwrap();
        let v = c.to_value();
        let at = |k: &String| text.find(&format!("\"{k}\":")).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        assert_eq!(v["protocol"], "http/1.1 (TLS)");
        assert_eq!(v["arrival"], "poisson");
        assert!(v.get("late_start_s").is_none() && v["seed"].is_null());
        let mut r = sample();
        r.config = RecordedConfig::from_value(v.clone());
        assert_eq!(r.run_config(), Some(c.clone()), "typed whole");
        let mut odd = v;
        odd["connections"] = serde_json::json!("many");
        r.config = odd.into();
        let read = r.run_config().unwrap();
        assert_eq!(read.connections, 0, "an odd value loses only its field");
        assert_eq!(read.rate_per_s, Some(100.0));
        r.config = serde_json::json!({"harness": {}}).into();
        assert_eq!(r.run_config().unwrap(), RunConfig::default());
        r.config = serde_json::json!(null).into();
        assert_eq!(r.run_config(), None);
    }

    #[test]
    fn analysis_reads_typed_and_an_unknown_layout_does_not_refuse_the_file() {
        let mut res = sample();
        res.main.analysis = Some(Analysis {
            confidence: vec![],
            highest_supported_percentile: Some(99.9),
            saturation: None,
            coordinated_omission: None,
            stationarity: None,
            slo: vec![crate::analysis::SloVerdict {
                objective: "p99<1ms".into(),
                measured: Some(1e6),
                pass: false,
                note: String::new(),
            }],
        });
        let text = res.to_json_pretty();
        let back = RunResults::from_json(&text).unwrap();
        assert_eq!(back, res);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["analysis"]["slo"][0]["pass"], false);
        let mut odd = v.clone();
        odd["analysis"] = serde_json::json!({"confidence": "an earlier layout"});
        let back = RunResults::from_json(&odd.to_string()).unwrap();
        assert_eq!(back.main.analysis, None);
        assert_eq!(back.main.requests, res.main.requests);
    }

    #[test]
    fn future_schema_is_refused_clearly() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json_pretty()).unwrap();
        v["schema_version"] = serde_json::json!(99);
        let err = RunResults::from_json(&v.to_string()).unwrap_err();
        assert!(err.to_string().contains("newer candor"), "{err}");
    }
}
