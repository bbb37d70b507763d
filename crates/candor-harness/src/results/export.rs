//! A harness session in candor's results model (`kind: "harness"`) and the files candor's
//! report crate writes of it (JSON, `.hlog`, HTML), through its one export path.

use super::HarnessResults;
use crate::alloc::AllocStats;
use crate::run_data::{Phase, RunData};
use crate::sampler::ProbeId;
use crate::settings::HarnessError;
use candor_core::hist::{new_histogram, Recorder};
use candor_core::recorded::{HarnessConfig, RecordedConfig};
use candor_core::results::{
    EncodedHistograms, Environment, Interval, IntervalStats, NamedHistogram, PhaseResults,
    RequestCounts, RunResults,
};

impl HarnessResults {
    /// The top-level `allocations` object of the JSON: the runs merged, plus `runs` (one
    /// entry per run), `limit` and `failure`; `{"counted": false}` when nothing was counted.
    pub fn allocations_json(&self) -> serde_json::Value {
        let mut v = match self.allocations() {
            Some(a) => a.to_json(),
            None => serde_json::json!({ "counted": false }),
        };
        if let Some(obj) = v.as_object_mut() {
            if self.allocations().is_some() {
                let runs: Vec<serde_json::Value> = self
                    .runs
                    .iter()
                    .filter_map(|r| r.allocations.as_ref().map(AllocStats::to_json))
                    .collect();
                obj.insert("runs".into(), runs.into());
            }
            obj.insert(
                "limit".into(),
                serde_json::to_value(self.cfg.max_allocations_per_iteration)
                    .unwrap_or(serde_json::Value::Null),
            );
            obj.insert(
                "failure".into(),
                serde_json::to_value(self.failure).unwrap_or(serde_json::Value::Null),
            );
        }
        v
    }

    /// [`HarnessResults::to_run_results`] as JSON with the top-level `allocations` object
    /// ([`HarnessResults::allocations_json`]) added: what [`HarnessResults::write_json`] writes.
    pub fn to_json_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.to_run_results()).unwrap_or(serde_json::Value::Null);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("allocations".into(), self.allocations_json());
        }
        v
    }

    /// The results in candor's JSON model (`kind: "harness"`): the top-level measures are all
    /// runs merged (response_time = end to end from the intended start, service_time = from the
    /// actual start, send_lag = actual minus intended start); `intervals` has the warm-up and
    /// one entry per run; `extra` has each probe and the OS jitter histogram, merged over runs.
    pub fn to_run_results(&self) -> RunResults {
        let first_start = self
            .warmup
            .as_ref()
            .or(self.runs.first())
            .map(|r| r.start_ns)
            .unwrap_or(0);
        let mut main = Recorder::new();
        let mut requests = RequestCounts::default();
        let mut duration_s = 0.0;
        let mut intervals = Vec::new();
        let mut per_run = Vec::new();
        for r in self.warmup.iter().chain(&self.runs) {
            let rec = recorder_of(r);
            let req = requests_of(r);
            intervals.push(Interval {
                start_s: r.start_ns.saturating_sub(first_start) as f64 / 1e9,
                length_s: r.duration_ns as f64 / 1e9,
                warmup: r.phase == Phase::Warmup,
                completed: req.completed,
                failed: 0,
                response_time: IntervalStats::of(&rec.response),
                service_time: IntervalStats::of(&rec.service),
                send_lag: IntervalStats::of(&rec.send_lag),
                first_byte: None,
                histograms: EncodedHistograms::of(&rec),
                stream: None,
            });
            if r.phase != Phase::Warmup {
                main.add(&rec);
                requests.add(&req);
                duration_s += r.duration_ns as f64 / 1e9;
                let interval = intervals.last().expect("pushed above").clone();
                per_run.push((rec, req, r.duration_ns as f64 / 1e9, interval));
            }
        }
        let target = Some(self.cfg.throughput_per_s);
        let empty = new_histogram();
        let warmup = self.warmup.as_ref().map(|w| {
            let rec = recorder_of(w);
            PhaseResults::from_recorder(
                &rec,
                &empty,
                requests_of(w),
                w.duration_ns as f64 / 1e9,
                None,
            )
        });
        let mut extra: Vec<NamedHistogram> = self
            .cfg
            .probes
            .iter()
            .enumerate()
            .map(|(i, name)| NamedHistogram::of(name, &self.merged_probe(ProbeId(i))))
            .collect();
        if self.cfg.record_os_jitter {
            extra.push(NamedHistogram::of("os_jitter", &self.merged_jitter()));
        }
        extra.push(NamedHistogram::of(
            "wait_stalls",
            &self.merged_wait_stalls(),
        ));
        let summaries: Vec<serde_json::Value> = self
            .summary_tables()
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(serde_json::Value::Null))
            .collect();
        let mut union = RunResults {
            command_line: std::env::args().collect(),
            start_time_unix_s: self.start_unix_s,
            environment: Environment::current(),
            warmup,
            intervals,
            extra,
            warnings: self.warnings.clone(),
            ..RunResults::new(
                candor_core::results::Kind::Harness,
                if self.cfg.account_for_coordinated_omission {
                    candor_core::results::Mode::OpenLoop
                } else {
                    candor_core::results::Mode::ClosedLoop
                },
                self.cfg.name.clone(),
                RecordedConfig::Harness(HarnessConfig {
                    harness: serde_json::to_value(&self.cfg).unwrap_or(serde_json::Value::Null),
                    summaries,
                }),
                PhaseResults::from_recorder(&main, &empty, requests, duration_s, target),
            )
        };
        // The measured runs are repeats of one test: each is kept whole, so `candor compare`
        // of two harness files compares across runs.
        if per_run.len() > 1 {
            let repeats = per_run
                .into_iter()
                .map(|(rec, req, secs, interval)| RunResults {
                    main: PhaseResults::from_recorder(&rec, &empty, req, secs, target),
                    warmup: None,
                    intervals: vec![interval],
                    extra: Vec::new(),
                    warnings: Vec::new(),
                    ..union.clone()
                })
                .collect();
            union.repeats = repeats;
        }
        union
    }

    /// Writes [`HarnessResults::to_json_value`] as pretty JSON to `path`.
    pub fn write_json(&self, path: impl AsRef<std::path::Path>) -> Result<(), HarnessError> {
        let json = self.to_json_value();
        Ok(open(path.as_ref())?.export(&candor_report::json::JsonExporter, &json)?)
    }

    /// Writes an HdrHistogram interval log (the same `.hlog` as `candor run --hlog`; one
    /// interval per run, untagged lines = end to end), readable by HdrHistogram's Java tools.
    pub fn write_hlog(&self, path: impl AsRef<std::path::Path>) -> Result<(), HarnessError> {
        let results = self.to_run_results();
        Ok(open(path.as_ref())?.export(&candor_report::hlog::HlogExporter, &results)?)
    }

    /// Writes the self-contained HTML report (percentile spectrum, per-run series, tables), the
    /// same page as `candor report -o`.
    pub fn write_html(
        &self,
        path: impl AsRef<std::path::Path>,
        label: &str,
    ) -> Result<(), HarnessError> {
        let runs = [(label.to_string(), self.to_run_results())];
        let html = candor_report::html::HtmlExporter(Default::default());
        Ok(open(path.as_ref())?.export(&html, runs.as_slice())?)
    }
}

/// The one export path of candor (`-` is stdout).
fn open(path: &std::path::Path) -> Result<candor_report::export::Destination, HarnessError> {
    Ok(candor_report::export::Destination::open(
        "harness output",
        path,
    )?)
}

impl From<candor_report::export::ExportError> for HarnessError {
    fn from(e: candor_report::export::ExportError) -> Self {
        use candor_report::export::ExportError as E;
        match e {
            E::Open { path, reason, .. } | E::Write { path, reason, .. } => HarnessError::Write {
                path,
                source: reason,
            },
            E::Prepare { path, reason, .. } => HarnessError::Write {
                path,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
            },
            E::Format(reason) => HarnessError::Write {
                path: String::new(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
            },
            // The harness opens one output at a time and reads no file; kept for completeness.
            e @ (E::SamePlace { .. } | E::Input { .. }) => HarnessError::Write {
                path: String::new(),
                source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, e.to_string()),
            },
        }
    }
}

fn recorder_of(r: &RunData) -> Recorder {
    let mut rec = Recorder::new();
    let _ = rec.response.add(r.end_to_end());
    let _ = rec.service.add(r.service_time());
    let _ = rec.send_lag.add(r.send_lag());
    rec.clamped = r.clamped;
    rec
}

fn requests_of(r: &RunData) -> RequestCounts {
    let completed = r.end_to_end().len().min(r.iterations);
    let unfinished = r.iterations - completed;
    RequestCounts {
        intended: r.iterations,
        completed,
        in_flight_at_end: unfinished,
        sent_unanswered: unfinished,
        clamped_values: r.clamped,
        ..Default::default()
    }
}
