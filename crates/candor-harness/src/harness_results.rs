//! What a harness run returns: per-run histograms as values, summary tables across runs, the
//! JLBH-like text, and the same results JSON as `candor run`.

use crate::alloc::{AllocStats, AllocationFailure, NOT_COUNTED};
use crate::phased::{E2E, SERVICE};
use crate::sampler::ProbeId;
use crate::settings::{Config, HarnessError};
use crate::summary::{percentile_label, percentile_rows, variation_runs};
use candor_analysis::compare_ci::{self, Method, RatioComparison, RatioRow, RunSamples, Verdict};
use candor_analysis::repeats::Policy;
use candor_core::hist::{new_histogram, value_at, Histo, Recorder};
use candor_core::recorded::{HarnessConfig, RecordedConfig};
use candor_core::results::{
    EncodedHistograms, Environment, Interval, IntervalStats, NamedHistogram, PhaseResults,
    RequestCounts, RunResults,
};
use std::fmt::Write as _;

/// Which part of a harness session a piece of data comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Phase {
    /// Unpaced warm-up iterations (excluded from the results).
    Warmup,
    /// Measured run number `n`, from 1.
    Run(u32),
}

/// One phase's measurements.
#[derive(Debug, Clone)]
pub struct RunData {
    pub(crate) phase: Phase,
    pub(crate) start_ns: u64,
    pub(crate) duration_ns: u64,
    pub(crate) iterations: u64,
    pub(crate) scheduled_ns: u64,
    /// End to end, service, then probes.
    pub(crate) hists: Vec<Histo>,
    pub(crate) send_lag: Histo,
    /// The longest clock gap of each wait for the schedule that had one above the jitter
    /// threshold: the benchmark thread descheduled or interrupted while it waited.
    pub(crate) wait_stalls: Histo,
    /// Stalls forgiven (`forgive_wait_stalls`) and the start lag they would have added, ns.
    pub(crate) forgiven_stalls: (u64, u64),
    pub(crate) jitter: Option<Histo>,
    pub(crate) clamped: u64,
    pub(crate) misrouted: u64,
    pub(crate) handed_off: u64,
    pub(crate) missing_end_to_end: u64,
    pub(crate) late_samples: u64,
    /// `None` when [`CountingAllocator`](crate::CountingAllocator) is not installed.
    pub(crate) allocations: Option<AllocStats>,
}

impl RunData {
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Iterations started.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }
    /// From the first iteration's start to the last one's end (harness clock).
    pub fn duration_ns(&self) -> u64 {
        self.duration_ns
    }
    /// Start of the phase on the harness clock.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    /// End-to-end times, measured from each iteration's intended start.
    pub fn end_to_end(&self) -> &Histo {
        &self.hists[E2E]
    }
    /// Service times, measured from each iteration's actual start.
    pub fn service_time(&self) -> &Histo {
        &self.hists[SERVICE]
    }
    /// Actual start minus intended start, per iteration.
    pub fn send_lag(&self) -> &Histo {
        &self.send_lag
    }
    /// A probe's histogram.
    pub fn probe(&self, p: ProbeId) -> Option<&Histo> {
        self.hists.get(p.slot())
    }
    /// Stalls of the benchmark thread while it waited for an iteration's intended start (the
    /// longest clock gap of each such wait above the jitter threshold): the machine took the CPU.
    /// The iterations due meanwhile start late, and their end-to-end times include it.
    pub fn wait_stalls(&self) -> &Histo {
        &self.wait_stalls
    }
    /// With `forgive_wait_stalls`: how many stalls restarted the schedule, and the total start
    /// lag they left out of the end-to-end times (ns).
    pub fn forgiven_stalls(&self) -> (u64, u64) {
        self.forgiven_stalls
    }
    /// Clock gaps seen by the jitter monitor during this phase, if it ran.
    pub fn jitter(&self) -> Option<&Histo> {
        self.jitter.as_ref()
    }
    /// Iterations handed off to another thread whose end-to-end sample never arrived.
    pub fn missing_end_to_end(&self) -> u64 {
        self.missing_end_to_end
    }
    /// Values above one hour, recorded as one hour.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    /// What the measured code allocated on the benchmark thread, per iteration; `None` (not
    /// zero) when [`CountingAllocator`](crate::CountingAllocator) is not the global allocator.
    pub fn allocations(&self) -> Option<&AllocStats> {
        self.allocations.as_ref()
    }
    /// Throughput actually achieved: iterations per second of run time.
    pub fn achieved_per_s(&self) -> f64 {
        if self.duration_ns == 0 {
            0.0
        } else {
            self.iterations as f64 * 1e9 / self.duration_ns as f64
        }
    }
}

/// One row of a summary table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryRow {
    /// The percentile, or `None` for the "worst" row.
    pub percentile: Option<f64>,
    /// One value per run, ns.
    pub values_ns: Vec<u64>,
    /// % variation over the runs chosen by [`variation_runs`], with the configured formula.
    pub variation_pct: f64,
}

/// One run against the first, percentile by percentile: the ratio run / run 1 with its 95%
/// confidence interval and verdict, by the method of `candor compare`
/// ([`candor_analysis::compare_ci`]); the same shape as an element of its `--json` comparisons.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunComparison {
    /// `run1`.
    pub baseline: String,
    /// `run2`, `run3`, ...
    pub candidate: String,
    /// A harness run is one histogram, not a series of intervals, so this is always
    /// order statistics (a bootstrap needs blocks to draw).
    pub method: Method,
    /// One per row of the table, in its order; the worst row is percentile 100.
    pub rows: Vec<RatioRow>,
}

/// A percentile-by-run table for one measure, as JLBH prints after all runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryTable {
    pub name: String,
    pub rows: Vec<SummaryRow>,
    /// Each run after the first against the first, at the table's percentiles.
    pub comparisons: Vec<RunComparison>,
}

impl SummaryTable {
    /// Builds the table from one histogram per run. Rows are those the smallest run's sample
    /// count supports ([`percentile_rows`]), then "worst".
    pub fn of(name: &str, per_run: &[&Histo], variation: crate::Variation) -> SummaryTable {
        let min_count = per_run.iter().map(|h| h.len()).min().unwrap_or(0);
        let mut percentiles: Vec<Option<f64>> =
            percentile_rows(min_count).into_iter().map(Some).collect();
        percentiles.push(None);
        let range = variation_runs(per_run.len());
        let rows: Vec<SummaryRow> = percentiles
            .into_iter()
            .map(|p| {
                let values_ns: Vec<u64> = per_run
                    .iter()
                    .map(|h| value_at(h, p.unwrap_or(100.0)))
                    .collect();
                let chosen: Vec<f64> = values_ns[range.clone()].iter().map(|&v| v as f64).collect();
                SummaryRow {
                    percentile: p,
                    variation_pct: variation.of(&chosen),
                    values_ns,
                }
            })
            .collect();
        let percentiles: Vec<f64> = rows.iter().map(|r| r.percentile.unwrap_or(100.0)).collect();
        SummaryTable {
            name: name.to_string(),
            rows,
            comparisons: compare_with_first(per_run, &percentiles),
        }
    }

    /// The row for percentile `p` (`None` for worst), if shown.
    pub fn row(&self, p: Option<f64>) -> Option<&SummaryRow> {
        self.rows.iter().find(|r| match (r.percentile, p) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (None, None) => true,
            _ => false,
        })
    }
}

/// Each run after the first against the first at `percentiles` (ascending, 100 = worst).
fn compare_with_first(per_run: &[&Histo], percentiles: &[f64]) -> Vec<RunComparison> {
    // The run is its only block: fewer than MIN_BOOTSTRAP_INTERVALS, so compare_ci takes
    // order-statistic bounds, which is all one histogram per run can support.
    let samples = |h: &Histo| RunSamples {
        total: h.clone(),
        intervals: vec![h.clone()],
        measured: usize::from(!h.is_empty()),
    };
    let Some((first, rest)) = per_run.split_first() else {
        return Vec::new();
    };
    let base = samples(first);
    rest.iter()
        .enumerate()
        .map(|(i, h)| {
            // Runs of one session repeat the same code: one run against one cannot tell a change
            // from run-to-run variation, so no noise floor is assumed and a difference beyond
            // the one-run interval reads "not enough runs", never faster or slower.
            let c = compare_ci::compare(
                &base,
                &samples(h),
                percentiles,
                compare_ci::RESAMPLES,
                compare_ci::SEED,
                Policy::default(),
            );
            RunComparison {
                baseline: "run1".into(),
                candidate: format!("run{}", i + 2),
                method: c.method,
                rows: c.rows,
            }
        })
        .collect()
}

/// A comparison cell of the text: ratio, interval, verdict; significant changes in capitals so
/// they stand out, as in `candor compare`.
pub fn ratio_cell(row: &RatioRow) -> String {
    let Some(ratio) = row.ratio else {
        return row.verdict.label().to_string();
    };
    let ci = match (row.ci_low, row.ci_high) {
        (None, None) => String::new(),
        (l, h) => format!(
            " [{}, {}]",
            l.map_or("0".to_string(), |v| format!("{v:.3}")),
            h.map_or("inf".to_string(), |v| format!("{v:.3}"))
        ),
    };
    if row.percentile >= 100.0 {
        return format!("{ratio:.3} (no interval)");
    }
    let verdict = match row.verdict {
        Verdict::Slower | Verdict::Faster | Verdict::ChangedBeyondNoise => {
            row.verdict.label().to_uppercase()
        }
        Verdict::Same
        | Verdict::Inconclusive
        | Verdict::NotEnoughRuns
        | Verdict::NotEnoughSamples => row.verdict.label().to_string(),
    };
    format!("{ratio:.3}{ci} {verdict}")
}

/// Everything a harness session measured, as values.
#[derive(Debug, Clone)]
pub struct HarnessResults {
    cfg: Config,
    warmup: Option<RunData>,
    runs: Vec<RunData>,
    start_unix_s: f64,
    warnings: Vec<String>,
    failure: Option<AllocationFailure>,
}

impl HarnessResults {
    pub(crate) fn new(
        cfg: Config,
        warmup: Option<RunData>,
        runs: Vec<RunData>,
        start_unix_s: f64,
        mut warnings: Vec<String>,
    ) -> Self {
        for r in warmup.iter().chain(&runs) {
            let name = phase_name(r.phase);
            if r.missing_end_to_end > 0 {
                warnings.push(format!(
                    "{name}: {} of {} handed-off iterations had no end-to-end sample within {:?}",
                    r.missing_end_to_end, r.handed_off, cfg.end_to_end_timeout
                ));
            }
            if r.late_samples > 0 {
                warnings.push(format!(
                    "{name}: {} end-to-end samples arrived after their run was collected and were dropped",
                    r.late_samples
                ));
            }
            if r.misrouted > 0 {
                warnings.push(format!(
                    "{name}: {} samples named a probe of another harness and were dropped",
                    r.misrouted
                ));
            }
            // A stall longer than one interval makes the next iterations late: say that the
            // machine, not the code, put that into the end-to-end times.
            let long = r
                .wait_stalls
                .count_between((cfg.interval_ns() as u64).max(1) + 1, u64::MAX);
            let (forgiven, forgiven_ns) = r.forgiven_stalls;
            if forgiven > 0 {
                warnings.push(format!(
                    "{name}: {forgiven} stalls of the benchmark thread while waiting were forgiven \
                     (forgive_wait_stalls): the schedule restarted after each, so the end-to-end \
                     times leave out {} of start lag, as JLBH's do",
                    candor_core::units::format_ns(forgiven_ns as f64)
                ));
            } else if r.scheduled_ns > 0 && long > 0 {
                warnings.push(format!(
                    "{name}: the benchmark thread was descheduled {long} times while waiting for \
                     its schedule, for longer than one interval (longest {}): the machine, not the \
                     benchmark; the iterations due meanwhile started late and their end-to-end \
                     times include the wait (JLBH's wait forgets such stalls)",
                    candor_core::units::format_ns(r.wait_stalls.max() as f64)
                ));
            }
            if r.clamped > 0 {
                warnings.push(format!(
                    "{name}: {} values above one hour were recorded as one hour",
                    r.clamped
                ));
            }
            // Late starts are expected right after a slow iteration (1% of them in the hiccup
            // example); most iterations starting late means the schedule was not being kept.
            let lag_p50 = value_at(&r.send_lag, 50.0);
            if r.scheduled_ns > 0 && lag_p50 as f64 > (cfg.interval_ns()).max(50_000.0) {
                warnings.push(format!(
                    "{name}: most iterations started late (median start lag {}): the benchmark or \
                     the machine (see OS Jitter) did not sustain {:.0}/s",
                    candor_core::units::format_ns(lag_p50 as f64),
                    cfg.throughput_per_s
                ));
            }
            // 5% over schedule: more than pacing granularity or a scheduler hiccup can explain.
            if r.scheduled_ns > 0 && r.duration_ns as f64 > r.scheduled_ns as f64 * 1.05 {
                warnings.push(format!(
                    "{name}: took {:.3}s for {:.3}s of schedule ({:.0}/s achieved of {:.0}/s): the \
                     benchmark did not keep up{}",
                    r.duration_ns as f64 / 1e9,
                    r.scheduled_ns as f64 / 1e9,
                    r.achieved_per_s(),
                    cfg.throughput_per_s,
                    if cfg.account_for_coordinated_omission {
                        "; end-to-end times include the queueing"
                    } else {
                        "; with correction off that queueing is not in the numbers"
                    }
                ));
            }
        }
        let failure = cfg.max_allocations_per_iteration.and_then(|limit| {
            runs.iter().find_map(|r| {
                let (iteration, allocations) = r.allocations.as_ref()?.first_over_limit?;
                Some(AllocationFailure {
                    run: match r.phase {
                        Phase::Run(n) => n,
                        Phase::Warmup => 0,
                    },
                    iteration,
                    allocations,
                    limit,
                })
            })
        });
        HarnessResults {
            cfg,
            warmup,
            runs,
            start_unix_s,
            warnings,
            failure,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }
    pub fn warmup(&self) -> Option<&RunData> {
        self.warmup.as_ref()
    }
    pub fn runs(&self) -> &[RunData] {
        &self.runs
    }
    /// Reasons to doubt the numbers; empty when none were found.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What the measured code allocated per iteration, all runs merged; `None` (not zero) when
    /// [`CountingAllocator`](crate::CountingAllocator) is not the global allocator.
    pub fn allocations(&self) -> Option<AllocStats> {
        if self.runs.iter().any(|r| r.allocations.is_none()) {
            return None;
        }
        Some(AllocStats::merge(
            self.runs.iter().filter_map(|r| r.allocations.as_ref()),
        ))
    }

    /// The first iteration that broke `max_allocations_per_iteration`, if one did.
    pub fn failure(&self) -> Option<&AllocationFailure> {
        self.failure.as_ref()
    }

    /// False if a check set on the builder (`max_allocations_per_iteration`) failed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// The allocation lines of the summary: the merged counts (or "not counted"), then the
    /// verdict of `max_allocations_per_iteration` if it was set.
    pub fn allocations_text(&self) -> String {
        let mut s = match self.allocations() {
            Some(a) => format!("{} (all runs)", a.text()),
            None => NOT_COUNTED.to_string(),
        };
        if let Some(limit) = self.cfg.max_allocations_per_iteration {
            match &self.failure {
                Some(f) => {
                    let _ = write!(s, "\nFAIL: {f}");
                }
                None => {
                    let _ = write!(
                        s,
                        "\nPASS: no iteration made more than {limit} allocations \
                         (max_allocations_per_iteration)"
                    );
                }
            }
        }
        s
    }

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

    /// Probe id by name.
    pub fn probe_id(&self, name: &str) -> Option<ProbeId> {
        self.cfg.probes.iter().position(|p| p == name).map(ProbeId)
    }

    fn merged(&self, pick: impl Fn(&RunData) -> Option<&Histo>) -> Histo {
        let mut h = new_histogram();
        for r in &self.runs {
            if let Some(x) = pick(r) {
                // Same layout everywhere: cannot fail.
                let _ = h.add(x);
            }
        }
        h
    }

    /// End-to-end times of all runs together.
    pub fn merged_end_to_end(&self) -> Histo {
        self.merged(|r| Some(r.end_to_end()))
    }
    /// Service times of all runs together.
    pub fn merged_service_time(&self) -> Histo {
        self.merged(|r| Some(r.service_time()))
    }
    /// A probe over all runs.
    pub fn merged_probe(&self, p: ProbeId) -> Histo {
        self.merged(|r| r.probe(p))
    }
    /// Stalls of the benchmark thread while waiting, over all runs.
    pub fn merged_wait_stalls(&self) -> Histo {
        self.merged(|r| Some(r.wait_stalls()))
    }
    /// Jitter monitor gaps over all runs (empty if it did not run).
    pub fn merged_jitter(&self) -> Histo {
        self.merged(|r| r.jitter())
    }

    /// The end-to-end summary across runs.
    pub fn end_to_end_summary(&self) -> SummaryTable {
        let per_run: Vec<&Histo> = self.runs.iter().map(|r| r.end_to_end()).collect();
        SummaryTable::of("end to end", &per_run, self.cfg.variation)
    }

    /// A probe's summary across runs.
    pub fn probe_summary(&self, p: ProbeId) -> Option<SummaryTable> {
        let name = self.cfg.probes.get(p.0)?;
        let per_run: Vec<&Histo> = self.runs.iter().filter_map(|r| r.probe(p)).collect();
        Some(SummaryTable::of(name, &per_run, self.cfg.variation))
    }

    /// End to end, then each probe.
    pub fn summary_tables(&self) -> Vec<SummaryTable> {
        let mut v = vec![self.end_to_end_summary()];
        v.extend((0..self.cfg.probes.len()).filter_map(|i| self.probe_summary(ProbeId(i))));
        v
    }

    /// The whole report: warm-up line, each run's block, then the summaries.
    pub fn text(&self) -> String {
        let mut s = String::new();
        if let Some(w) = &self.warmup {
            s.push_str(&warmup_text(w));
            s.push('\n');
        }
        for r in &self.runs {
            s.push_str(&run_text(&self.cfg, r));
            s.push('\n');
        }
        s.push_str(&self.summary_text());
        s
    }

    /// The summary tables across runs, in JLBH's layout (values in us), then the allocation
    /// lines ([`HarnessResults::allocations_text`]).
    pub fn summary_text(&self) -> String {
        let mut s = String::new();
        let range = variation_runs(self.runs.len());
        let _ = writeln!(
            s,
            "Summary of {} over {} runs",
            self.cfg.name,
            self.runs.len()
        );
        for t in self.summary_tables() {
            let _ = writeln!(s, "{}", banner(&format!(" SUMMARY ({}) us ", t.name)));
            let _ = write!(s, "{:<10}", "Percentile");
            for i in 1..=self.runs.len() {
                let _ = write!(s, "{:>13}", format!("run{i}"));
            }
            let _ = writeln!(s, "{:>15}", "% Variation");
            for row in &t.rows {
                let label = match row.percentile {
                    Some(p) => format!("{}:", percentile_label(p)),
                    None => "worst:".to_string(),
                };
                let _ = write!(s, "{label:<10}");
                for v in &row.values_ns {
                    let _ = write!(s, "{:>13.2}", *v as f64 / 1e3);
                }
                let _ = writeln!(s, "{:>15.2}", row.variation_pct);
            }
            let _ = writeln!(
                s,
                "% Variation = {} over runs {}..{}",
                self.cfg.variation.describe(),
                range.start + 1,
                range.end
            );
            s.push_str(&comparison_text(&t));
            let _ = writeln!(s, "{}", "-".repeat(BANNER_WIDTH));
        }
        let _ = writeln!(s, "{}", self.allocations_text());
        s
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

    /// This session (the candidate) against `baseline`, end to end, across their runs (the
    /// measured runs of each are repeats): the verdicts of `candor compare` on two files of
    /// repeats ([`compare_ci::compare_repeats`]), at `percentiles` (0..=100, ascending). A session
    /// of fewer than 2 runs on either side gives only `not enough samples` rows: there is no
    /// run-to-run variation to compare against.
    pub fn compare_sessions(
        &self,
        baseline: &HarnessResults,
        percentiles: &[f64],
        threshold: f64,
    ) -> RatioComparison {
        let per_run = |h: &HarnessResults| -> Vec<Histo> {
            h.runs.iter().map(|r| r.end_to_end().clone()).collect()
        };
        compare_ci::compare_repeats(&per_run(baseline), &per_run(self), percentiles, threshold)
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

use crate::harness_text::{banner, phase_name, BANNER_WIDTH};
pub use crate::harness_text::{comparison_text, histogram_line, run_text, warmup_text};
