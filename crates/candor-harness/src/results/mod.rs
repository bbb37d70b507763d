//! What a harness session returns, as values: each run's measurements, merged histograms, the
//! summary tables across runs, the comparison of sessions and the JLBH-like text (`text.rs`
//! writes its parts); `export.rs` the same results as candor's results JSON and files.

mod export;

use crate::alloc::{AllocStats, AllocationFailure, NOT_COUNTED};
use crate::run_data::{Phase, RunData};
use crate::sampler::ProbeId;
use crate::settings::Config;
use crate::summary::{percentile_label, variation_runs};
use crate::tables::SummaryTable;
use crate::text::{banner, comparison_text, phase_name, run_text, warmup_text, BANNER_WIDTH};
use candor_analysis::compare_ci::{self, RatioComparison};
use candor_core::hist::{new_histogram, value_at, Histo};
use std::fmt::Write as _;

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
}
