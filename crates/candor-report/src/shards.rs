//! Shards of one schedule (`candor run --shard I/N`, possibly on many machines) read as one run:
//! the exact merge of [`crate::exact_merge`], plus what only a shard set has: a check that the set is
//! complete and consistent, each shard's start offset, and the shards that fell behind.
//!
//! Response times need no cross-machine clock: each is measured on one shard's monotonic clock
//! from that shard's own intended send time. Only the wall-clock labels (interval alignment,
//! `--start-at`) depend on the machines' clocks agreeing (docs/scale-out.md).

use crate::exact_merge::{merge, MergeError};
use candor_core::dates::rfc3339_millis;
use candor_core::recorded::{RecordedConfig, ShardRecord, ShardSetRecord};
use candor_core::results::RunResults;
use candor_core::table::{Column, TextTable};
// The engine's own verdict: send lag p99 above this means requests left late.
use candor_core::thresholds::SEND_LAG_WARN_NS;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A shard that started this much after the agreed instant (or after the earliest shard) is
/// reported as late: the engine warns from 1 ms, a shard's own first interval is 1 s long, and
/// NTP-synchronised machines agree to well under this (docs/scale-out.md).
pub const LATE_START_WARN_S: f64 = 0.010;
/// Without a common `--start-at`, shards whose starts spread more than this do not form one run
/// in time (their intervals do not line up).
pub const START_SPREAD_WARN_S: f64 = 0.5;

/// What one input says about itself as a shard.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardInfo {
    /// File name (or label) of the input.
    pub label: String,
    /// `None` when the input does not record shard settings (not a `candor run` result).
    pub index: Option<u32>,
    pub count: Option<u32>,
    /// The total rate of the whole schedule (`-R`), not this shard's share.
    pub total_rate_per_s: Option<f64>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub arrival: Option<String>,
    pub seed: Option<u64>,
    pub target: String,
    pub start_at_unix_s: Option<f64>,
    /// First intended send of the shard's schedule, wall clock.
    pub start_time_unix_s: f64,
    /// How late the process was for `--start-at`, when it recorded that.
    pub late_start_s: Option<f64>,
    /// When the shard really began sending, relative to the set's reference instant.
    pub start_offset_s: f64,
    pub intended: u64,
    pub completed: u64,
    pub failed: u64,
    /// This shard's share of the total rate.
    pub target_per_s: Option<f64>,
    pub achieved_per_s: f64,
    pub send_lag_p99_ns: u64,
    pub generator_late: u64,
    /// Why this shard fell behind its share of the schedule; empty when it kept up.
    pub behind: Vec<String>,
    /// The same, in short words for the table's status column.
    pub status: Vec<&'static str>,
}

/// The shard set as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardReport {
    pub shards: Vec<ShardInfo>,
    /// What start offsets are relative to, in words.
    pub reference: String,
    /// Wall-clock reference instant (the agreed `--start-at`, else the earliest shard's start).
    pub reference_unix_s: f64,
    /// Reasons the inputs do not form one complete, consistent schedule; empty when they do.
    pub problems: Vec<String>,
    /// Observations about the set as a whole that help read the shards' verdicts.
    pub notes: Vec<String>,
}

/// The merged result and the report on its shards.
#[derive(Debug, Clone)]
pub struct ShardMerge {
    pub merged: RunResults,
    pub report: ShardReport,
}

/// True when `r` was run as part of a shard set (`--shard` with N > 1, or a `--start-at`).
pub fn is_shard(r: &RunResults) -> bool {
    r.run_config()
        .is_some_and(|c| c.shard_count > 1 || c.start_at_unix_s.is_some())
}

fn info_of(label: &str, r: &RunResults) -> ShardInfo {
    let c = r.run_config();
    let c = c.as_ref();
    // A run always records a shard count of at least 1, and a duration; zeros are settings an
    // older or hand-made file does not record (read as defaults by `run_config`).
    let sharded = c.filter(|c| c.shard_count > 0);
    let m = &r.main;
    ShardInfo {
        label: label.to_string(),
        index: sharded.map(|c| c.shard_index),
        count: sharded.map(|c| c.shard_count),
        total_rate_per_s: c.and_then(|c| c.rate_per_s),
        duration_s: c
            .map(|c| c.duration_s)
            .filter(|&d| d > 0.0)
            .unwrap_or(m.duration_s),
        // No warm-up setting and no warm-up phase agree: 0.
        warmup_s: c
            .map(|c| c.warmup_s)
            .filter(|&w| w > 0.0)
            .unwrap_or_else(|| r.warmup.as_ref().map_or(0.0, |w| w.duration_s)),
        arrival: c.and_then(|c| c.arrival).map(|a| a.name().to_string()),
        seed: c.and_then(|c| c.seed),
        target: r.target.clone(),
        start_at_unix_s: c.and_then(|c| c.start_at_unix_s),
        start_time_unix_s: r.start_time_unix_s,
        late_start_s: c.and_then(|c| c.late_start_s),
        start_offset_s: 0.0,
        intended: m.requests.intended,
        completed: m.requests.completed,
        failed: m.requests.failed,
        target_per_s: m.rate.target_per_s,
        achieved_per_s: m.rate.achieved_per_s,
        send_lag_p99_ns: Summary::at(&m.send_lag, 99.0).unwrap_or(0),
        generator_late: m.requests.generator_late,
        behind: Vec::new(),
        status: Vec::new(),
    }
}

fn shard_name(s: &ShardInfo) -> String {
    match (s.index, s.count) {
        (Some(i), Some(n)) => format!("shard {i}/{n} ({})", s.label),
        _ => format!("'{}'", s.label),
    }
}

/// Values of one setting across the shards, with the shards that have each.
fn distinct<T: PartialEq + Clone>(
    shards: &[ShardInfo],
    f: impl Fn(&ShardInfo) -> T,
) -> Vec<(T, Vec<String>)> {
    let mut out: Vec<(T, Vec<String>)> = Vec::new();
    for s in shards {
        let v = f(s);
        match out.iter_mut().find(|(x, _)| *x == v) {
            Some((_, names)) => names.push(s.label.clone()),
            None => out.push((v, vec![s.label.clone()])),
        }
    }
    out
}

fn disagree<T: PartialEq + Clone>(
    problems: &mut Vec<String>,
    shards: &[ShardInfo],
    what: &str,
    f: impl Fn(&ShardInfo) -> T,
    show: impl Fn(&T) -> String,
) {
    let d = distinct(shards, f);
    if d.len() > 1 {
        let parts: Vec<String> = d
            .iter()
            .map(|(v, names)| format!("{} in {}", show(v), names.join(", ")))
            .collect();
        problems.push(format!(
            "the shards disagree on {what}: {}; they are not shards of one schedule",
            parts.join("; ")
        ));
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Checks that the shards form one complete schedule, computes start offsets and finds the
/// shards that fell behind.
pub fn analyse(inputs: &[(String, RunResults)]) -> ShardReport {
    let mut shards: Vec<ShardInfo> = inputs.iter().map(|(l, r)| info_of(l, r)).collect();
    let mut problems = settings_problems(inputs, &shards);
    index_problems(&shards, &mut problems);
    let (reference, reference_unix_s) = set_offsets(&mut shards, &mut problems);
    mark_behind(&mut shards);
    let notes = send_lag_notes(&shards);
    ShardReport {
        shards,
        reference,
        reference_unix_s,
        problems,
        notes,
    }
}

/// Shards that record no shard settings, and the settings the shards disagree on.
fn settings_problems(inputs: &[(String, RunResults)], shards: &[ShardInfo]) -> Vec<String> {
    let mut problems = Vec::new();
    for s in shards
        .iter()
        .filter(|s| s.index.is_none() || s.count.is_none())
    {
        problems.push(format!(
            "'{}' records no shard settings (kind '{}'?): it is not a `candor run --shard` result",
            s.label,
            inputs
                .iter()
                .find(|(l, _)| *l == s.label)
                .map_or("", |(_, r)| r.kind.name())
        ));
    }
    disagree(&mut problems, shards, "the shard count N", |s| s.count, opt);
    disagree(
        &mut problems,
        shards,
        "the total rate (-R)",
        |s| s.total_rate_per_s.map(f64::to_bits),
        |b| opt(&b.map(|b| format_rate(f64::from_bits(b)))),
    );
    disagree(
        &mut problems,
        shards,
        "the duration",
        |s| s.duration_s.to_bits(),
        |b| format_ns(f64::from_bits(*b) * 1e9),
    );
    disagree(
        &mut problems,
        shards,
        "the warm-up",
        |s| s.warmup_s.to_bits(),
        |b| format_ns(f64::from_bits(*b) * 1e9),
    );
    disagree(
        &mut problems,
        shards,
        "the arrival process",
        |s| (s.arrival.clone(), s.seed),
        |(a, seed)| match seed {
            Some(seed) => format!("{} seed {seed}", opt(a)),
            None => opt(a),
        },
    );
    disagree(
        &mut problems,
        shards,
        "the target",
        |s| s.target.clone(),
        |t| t.clone(),
    );
    disagree(
        &mut problems,
        shards,
        "--start-at",
        |s| s.start_at_unix_s.map(f64::to_bits),
        |b| opt(&b.map(|b| rfc3339_millis(f64::from_bits(b)))),
    );

    problems
}

/// Every index of 0..N exactly once, for the N the shards agree on.
fn index_problems(shards: &[ShardInfo], problems: &mut Vec<String>) {
    let counts = distinct(shards, |s| s.count);
    if let [(Some(n), _)] = counts.as_slice() {
        let mut by_index: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for s in shards {
            if let Some(i) = s.index {
                by_index.entry(i).or_default().push(s.label.clone());
            }
        }
        for (i, names) in &by_index {
            if names.len() > 1 {
                problems.push(format!(
                    "shard {i}/{n} appears {} times ({}): its requests are counted {} times",
                    names.len(),
                    names.join(", "),
                    names.len()
                ));
            }
        }
        let missing: Vec<String> = (0..*n)
            .filter(|i| !by_index.contains_key(i))
            .map(|i| i.to_string())
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "shard{} {} of {n} missing: the merged result covers {} of {n} shares of the schedule, \
                 at a fraction of the intended total rate",
                if missing.len() == 1 { " is" } else { "s are" },
                missing.join(", "),
                by_index.len()
            ));
        }
    }
}

/// Each shard's start offset from the reference (the agreed `--start-at`, else the earliest
/// start), and the reference in words and in seconds since the epoch.
fn set_offsets(shards: &mut [ShardInfo], problems: &mut Vec<String>) -> (String, f64) {
    let agreed = match distinct(shards, |s| s.start_at_unix_s.map(f64::to_bits)).as_slice() {
        [(Some(b), _)] => Some(f64::from_bits(*b)),
        _ => None,
    };
    let earliest = shards
        .iter()
        .map(|s| s.start_time_unix_s)
        .fold(f64::INFINITY, f64::min);
    let (reference, reference_unix_s) = match agreed {
        Some(t) => (format!("the agreed --start-at {}", rfc3339_millis(t)), t),
        None => (
            format!("the earliest shard's start {}", rfc3339_millis(earliest)),
            earliest,
        ),
    };
    for s in shards.iter_mut() {
        // A late shard's schedule starts when it was ready (start_time_unix_s); files written
        // before that kept the agreed start there and carried the lateness alone.
        s.start_offset_s =
            (s.start_time_unix_s - reference_unix_s).max(s.late_start_s.unwrap_or(f64::MIN));
    }
    if agreed.is_none() && shards.len() > 1 {
        let spread = shards
            .iter()
            .map(|s| s.start_offset_s)
            .fold(0.0f64, f64::max);
        if spread > START_SPREAD_WARN_S {
            problems.push(format!(
                "without a common --start-at the shards started up to {} apart: they did not offer the total \
                 rate together, and their intervals do not line up",
                format_ns(spread * 1e9)
            ));
        }
    }
    (reference, reference_unix_s)
}

/// Why each shard fell behind (a late start, a low rate, send lag, a late generator).
fn mark_behind(shards: &mut [ShardInfo]) {
    for s in shards.iter_mut() {
        if s.start_offset_s > LATE_START_WARN_S {
            s.behind.push(format!(
                "started {} late (the requests it owed meanwhile left late: see its send lag)",
                format_ns(s.start_offset_s * 1e9)
            ));
            s.status.push("late start");
        }
        if let Some(t) = s.target_per_s {
            if candor_core::thresholds::fell_behind(s.achieved_per_s, t) {
                s.behind.push(format!(
                    "achieved {} of its share {} ({:.1}%)",
                    format_rate(s.achieved_per_s),
                    format_rate(t),
                    100.0 * s.achieved_per_s / t
                ));
                s.status.push("low rate");
            }
        }
        if s.send_lag_p99_ns > SEND_LAG_WARN_NS {
            s.behind.push(format!(
                "send lag p99 {} (requests waited for a connection, or for CPU)",
                format_ns(s.send_lag_p99_ns as f64)
            ));
            s.status.push("send lag");
        }
        // One late request cannot make a shard fall behind: only as many as could move a percentile.
        if let Some(effect) =
            candor_analysis::late::generator_late_effect(s.generator_late, s.intended)
        {
            s.behind.push(effect.warning());
            s.status.push("generator late");
        }
    }
}

/// Send lag on every shard alike comes from the target holding the connections (or from too
/// few of them), which a single process would show just the same; one shard's own trouble
/// stands out from the others.
fn send_lag_notes(shards: &[ShardInfo]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut lags: Vec<u64> = shards.iter().map(|s| s.send_lag_p99_ns).collect();
    lags.sort_unstable();
    if shards.len() > 1 && lags[0] > SEND_LAG_WARN_NS {
        let median = lags[lags.len() / 2];
        notes.push(format!(
            "every shard has send lag p99 above {} ({} .. {}): requests waited for connections across the \
             whole set, because the target answered slowly or there were too few connections; a single \
             process would show the same",
            format_ns(SEND_LAG_WARN_NS as f64),
            format_ns(lags[0] as f64),
            format_ns(lags[lags.len() - 1] as f64)
        ));
        for s in shards.iter().filter(|s| s.send_lag_p99_ns > 2 * median) {
            notes.push(format!(
                "{} stands out with send lag p99 {}, over twice the shards' median {}",
                shard_name(s),
                format_ns(s.send_lag_p99_ns as f64),
                format_ns(median as f64)
            ));
        }
    }
    notes
}

/// Merges the shards of one schedule exactly, and reports on the set.
///
/// On top of [`merge`] (which takes each shard's measured window from its schedule, so the merged
/// target and achieved rates are those of the whole schedule, as a single process would report
/// them): shard problems and late shards lead the warnings, and each shard's own warnings are
/// labelled with its index.
pub fn merge_shards(inputs: &[(String, RunResults)]) -> Result<ShardMerge, MergeError> {
    let runs: Vec<RunResults> = inputs.iter().map(|(_, r)| r.clone()).collect();
    let mut merged = merge(&runs)?;
    let report = analyse(inputs);

    let mut warnings: Vec<String> = report
        .problems
        .iter()
        .map(|p| format!("inconsistent shard set: {p}"))
        .collect();
    for s in report.shards.iter().filter(|s| !s.behind.is_empty()) {
        warnings.push(format!(
            "{} fell behind: {}",
            shard_name(s),
            s.behind.join("; ")
        ));
    }
    warnings.extend(report.notes.iter().cloned());
    // merge() labels each run's own warnings "run K: "; name the shard instead.
    let mut own = Vec::new();
    for (k, (s, (_, r))) in report.shards.iter().zip(inputs).enumerate() {
        let prefix = format!("run {}: ", k + 1);
        for w in &r.warnings {
            let labelled = format!("{prefix}{w}");
            if merged.warnings.contains(&labelled) {
                own.push(format!("{}: {w}", shard_name(s)));
            }
        }
    }
    let unlabelled = merged
        .warnings
        .iter()
        .filter(|w| !(1..=inputs.len()).any(|k| w.starts_with(&format!("run {k}: "))))
        .cloned();
    warnings.extend(own);
    warnings.extend(unlabelled);
    merged.warnings = warnings;

    // What `candor report` shows for the merged run: the whole set's threads and connections.
    if let RecordedConfig::Merged(m) = &mut merged.config {
        let sum = |of: fn(&RecordedConfig) -> Option<u64>| -> u64 {
            inputs.iter().filter_map(|(_, r)| of(&r.config)).sum()
        };
        m.threads = Some(sum(RecordedConfig::threads));
        m.connections = Some(sum(RecordedConfig::connections));
        if report.problems.is_empty() {
            if let Some(first) = report.shards.first() {
                m.rate_per_s = Some(first.total_rate_per_s);
                m.duration_s = Some(first.duration_s);
                m.warmup_s = Some(first.warmup_s);
            }
        }
        m.shards = Some(report.to_record());
    }
    Ok(ShardMerge { merged, report })
}

impl ShardReport {
    /// The report as recorded in the merged result's config (`config.shards`).
    pub fn to_record(&self) -> ShardSetRecord {
        ShardSetRecord {
            count: self.shards.first().and_then(|s| s.count),
            reference: self.reference.clone(),
            reference_unix_s: self.reference_unix_s,
            problems: self.problems.clone(),
            notes: self.notes.clone(),
            shards: self
                .shards
                .iter()
                .map(|s| ShardRecord {
                    file: s.label.clone(),
                    shard_index: s.index,
                    shard_count: s.count,
                    start_time_unix_s: s.start_time_unix_s,
                    late_start_s: s.late_start_s,
                    start_offset_s: s.start_offset_s,
                    intended: s.intended,
                    completed: s.completed,
                    failed: s.failed,
                    target_per_s: s.target_per_s,
                    achieved_per_s: s.achieved_per_s,
                    send_lag_p99_ns: s.send_lag_p99_ns,
                    generator_late: s.generator_late,
                    behind: s.behind.clone(),
                })
                .collect(),
        }
    }

    /// A table of the shards, then the problems of the set, for the terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let n = self.shards.first().and_then(|s| s.count);
        let _ = writeln!(
            out,
            "{} shard result{} (of {}); start offsets relative to {}",
            self.shards.len(),
            if self.shards.len() == 1 { "" } else { "s" },
            opt(&n),
            self.reference
        );
        let mut table = TextTable::new([
            Column::left(7),
            Column::left(22),
            Column::right(9),
            Column::right(9),
            Column::right(7),
            Column::right(10),
            Column::right(10),
            Column::right(10),
            Column::right(10),
            Column::right(8),
        ]);
        table.row_with_tail(
            &[
                "shard",
                "file",
                "intended",
                "completed",
                "failed",
                "share",
                "achieved",
                "offset",
                "lag p99",
                "gen.late",
            ],
            "status",
        );
        for s in &self.shards {
            let status = if s.status.is_empty() {
                "kept up".to_string()
            } else {
                format!("BEHIND: {}", s.status.join(", "))
            };
            let sign = if s.start_offset_s < 0.0 { "-" } else { "+" };
            table.row_with_tail(
                &[
                    match (s.index, s.count) {
                        (Some(i), Some(n)) => format!("{i}/{n}"),
                        _ => "?".into(),
                    },
                    s.label.clone(),
                    format_count(s.intended),
                    format_count(s.completed),
                    format_count(s.failed),
                    s.target_per_s.map_or_else(|| "max".into(), format_rate),
                    format_rate(s.achieved_per_s),
                    format!("{sign}{}", format_ns(s.start_offset_s.abs() * 1e9)),
                    format_ns(s.send_lag_p99_ns as f64),
                    format_count(s.generator_late),
                ],
                &status,
            );
        }
        out.push_str(&table.finish());
        for s in self.shards.iter().filter(|s| !s.behind.is_empty()) {
            let _ = writeln!(
                out,
                "  {} fell behind: {}",
                shard_name(s),
                s.behind.join("; ")
            );
        }
        for n in &self.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        if self.problems.is_empty() {
            let _ = writeln!(out, "  shard set complete and consistent");
        } else {
            for p in &self.problems {
                let _ = writeln!(out, "  INCONSISTENT SHARD SET: {p}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::synthetic_run;
    use candor_core::results::{ArrivalName, RunConfig};

    /// A synthetic run relabelled as shard `i` of `n` of a schedule at `total` per second starting
    /// at `start`.
    fn shard(i: u32, n: u32, total: f64, start: f64, late: f64) -> (String, RunResults) {
        let mut r = synthetic_run(
            10 + u64::from(i),
            4,
            250,
            1_000_000 + 100_000 * u64::from(i),
            0,
        );
        r.start_time_unix_s = start;
        r.main.rate.target_per_s = Some(total / f64::from(n));
        r.config = RunConfig {
            rate_per_s: Some(total),
            connections: 4,
            threads: 1,
            duration_s: 4.0,
            warmup_s: 1.0,
            arrival: Some(ArrivalName::Constant),
            seed: None,
            shard_index: i,
            shard_count: n,
            start_at_unix_s: Some(start),
            late_start_s: Some(late),
            ..Default::default()
        }
        .into();
        (format!("shard-{i}.json"), r)
    }

    const T0: f64 = 1_795_000_000.0;

    #[test]
    fn a_complete_set_merges_exactly_and_reads_as_one_run() {
        let inputs: Vec<_> = (0..4).map(|i| shard(i, 4, 1000.0, T0, 0.0)).collect();
        let m = merge_shards(&inputs).unwrap();
        assert!(m.report.problems.is_empty(), "{:?}", m.report.problems);
        let r = &m.merged;
        assert_eq!(r.kind, candor_core::results::Kind::Merged);
        // Histograms added bucket by bucket: the merged histogram is exactly the sum.
        let mut expected = candor_core::Recorder::new();
        for (_, s) in &inputs {
            expected.add(&s.main.histograms.decode().unwrap());
        }
        let got = r.main.histograms.decode().unwrap();
        assert_eq!(got.response, expected.response);
        assert_eq!(r.main.response_time, Summary::of(&expected.response));
        assert_eq!(r.main.requests.completed, 4 * 1000);
        assert!(r.main.requests.balanced());
        // The schedule's window (4 s), not the intervals' span; total target = the sum of shares.
        assert!(
            (r.main.duration_s - 4.0).abs() < 1e-9,
            "{}",
            r.main.duration_s
        );
        assert_eq!(r.main.rate.target_per_s, Some(1000.0));
        assert!((r.main.rate.achieved_per_s - 1000.0).abs() < 1e-9);
        // Intervals with the same absolute start are one interval of the merged run.
        assert_eq!(r.intervals.len(), inputs[0].1.intervals.len());
        assert_eq!(r.intervals[1].completed, 4 * 250);
        let RecordedConfig::Merged(c) = &r.config else {
            panic!("a merge records what it was made from")
        };
        assert_eq!((c.threads, c.connections), (Some(4), Some(16)));
        assert_eq!(c.shards.as_ref().unwrap().count, Some(4));
        assert_eq!(c.merged_from.len(), 4);
        let text = m.report.render();
        assert!(text.contains("complete and consistent"), "{text}");
        assert!(text.contains("the agreed --start-at 2026-11-18T"), "{text}");
        // The merged file renders like any run.
        let report = crate::text::render(r);
        assert!(report.contains("4 threads, 16 connections"), "{report}");
        assert!(report.contains("target 1.00k/s"), "{report}");
    }

    #[test]
    fn the_percentiles_of_the_merge_are_not_averages() {
        // Two shards with very different tails: the merged p99.9 is the pooled one, which is
        // not the mean of the shards' p99.9.
        let mut a = shard(0, 2, 500.0, T0, 0.0);
        a.1 = synthetic_run(1, 4, 250, 1_000_000, 0);
        let mut b = shard(1, 2, 500.0, T0, 0.0);
        b.1 = synthetic_run(2, 4, 250, 1_000_000, 2);
        for (i, (_, r)) in [&mut a, &mut b].into_iter().enumerate() {
            r.start_time_unix_s = T0;
            r.config = RunConfig {
                rate_per_s: Some(500.0),
                duration_s: 4.0,
                warmup_s: 1.0,
                shard_index: i as u32,
                shard_count: 2,
                start_at_unix_s: Some(T0),
                ..Default::default()
            }
            .into();
        }
        let m = merge_shards(&[a.clone(), b.clone()]).unwrap();
        let pa = a.1.main.response_time.at(99.9).unwrap();
        let pb = b.1.main.response_time.at(99.9).unwrap();
        let pm = m.merged.main.response_time.at(99.9).unwrap();
        let mut pooled = a.1.main.histograms.decode().unwrap();
        pooled.add(&b.1.main.histograms.decode().unwrap());
        assert_eq!(pm, candor_core::hist::value_at(&pooled.response, 99.9));
        assert_ne!(
            pm,
            (pa + pb) / 2,
            "must not be the average of the shards' percentiles"
        );
    }

    #[test]
    fn inconsistent_sets_are_named_clearly() {
        // Shard 1 twice, shard 3 missing, shard 2 from another run (different rate and N).
        let inputs = vec![
            shard(0, 4, 1000.0, T0, 0.0),
            shard(1, 4, 1000.0, T0, 0.0),
            ("again.json".to_string(), shard(1, 4, 1000.0, T0, 0.0).1),
            shard(2, 5, 2000.0, T0, 0.0),
        ];
        let m = merge_shards(&inputs).unwrap();
        let p = m.report.problems.join("\n");
        assert!(p.contains("disagree on the shard count N"), "{p}");
        assert!(p.contains("disagree on the total rate"), "{p}");
        // With N in dispute, indices are not checked against an N.
        let inputs = vec![
            shard(0, 4, 1000.0, T0, 0.0),
            shard(1, 4, 1000.0, T0, 0.0),
            ("again.json".to_string(), shard(1, 4, 1000.0, T0, 0.0).1),
        ];
        let m = merge_shards(&inputs).unwrap();
        let p = m.report.problems.join("\n");
        assert!(
            p.contains("shard 1/4 appears 2 times (shard-1.json, again.json)"),
            "{p}"
        );
        assert!(p.contains("shards are 2, 3 of 4 missing"), "{p}");
        assert!(m.merged.warnings[0].starts_with("inconsistent shard set: "));
        assert!(m.report.render().contains("INCONSISTENT SHARD SET"));
        // The set's settings are not claimed for the merged run when the shards disagree.
        let RecordedConfig::Merged(c) = &m.merged.config else {
            panic!("a merge records what it was made from")
        };
        assert_eq!(c.rate_per_s, None);
        assert!(m.merged.config.to_value().get("rate_per_s").is_none());

        // A plain run among shards, and a different --start-at.
        let mut plain = synthetic_run(5, 4, 250, 1_000_000, 0);
        plain.start_time_unix_s = T0;
        let inputs = vec![
            shard(0, 2, 500.0, T0, 0.0),
            shard(1, 2, 500.0, T0 + 60.0, 0.0),
            ("plain.json".to_string(), plain),
        ];
        let p = analyse(&inputs).problems.join("\n");
        assert!(p.contains("'plain.json' records no shard settings"), "{p}");
        assert!(p.contains("disagree on --start-at"), "{p}");
    }

    #[test]
    fn a_late_shard_that_started_when_ready_is_as_late_as_it_says_not_twice() {
        // Since a missed --start-at starts the schedule when the pool is ready, start_time_unix_s
        // carries the lateness as well as late_start_s: the offset is counted once.
        let mut inputs: Vec<_> = (0..2).map(|i| shard(i, 2, 500.0, T0, 0.0)).collect();
        inputs[1] = shard(1, 2, 500.0, T0, 3.0);
        inputs[1].1.start_time_unix_s = T0 + 3.0;
        let m = merge_shards(&inputs).unwrap();
        assert!((m.report.shards[1].start_offset_s - 3.0).abs() < 1e-9);
        assert_eq!(m.report.shards[0].start_offset_s, 0.0);
    }

    #[test]
    fn late_and_slow_shards_are_reported_with_their_offsets() {
        let mut inputs: Vec<_> = (0..3).map(|i| shard(i, 3, 750.0, T0, 0.0)).collect();
        inputs[1] = shard(1, 3, 750.0, T0, 0.250);
        // Shard 2 completed 90% of its share and its generator was short of CPU.
        {
            let r = &mut inputs[2].1;
            r.main.rate.achieved_per_s = 225.0;
            r.main.requests.generator_late = 17;
            r.warnings
                .push("the generator itself sent 17 requests late".into());
        }
        let m = merge_shards(&inputs).unwrap();
        let s = &m.report.shards;
        assert_eq!(s[0].start_offset_s, 0.0);
        assert!((s[1].start_offset_s - 0.25).abs() < 1e-12);
        assert!(s[0].behind.is_empty(), "{:?}", s[0].behind);
        assert!(
            s[1].behind[0].contains("started 250.0ms late"),
            "{:?}",
            s[1].behind
        );
        let why = s[2].behind.join("; ");
        assert!(
            why.contains("achieved 225.0/s of its share 250.0/s (90.0%)"),
            "{why}"
        );
        assert!(
            why.contains("the generator itself sent 17 requests ("),
            "{why}"
        );
        let w = m.merged.warnings.join("\n");
        assert!(
            w.contains("shard 1/3 (shard-1.json) fell behind: started 250.0ms late"),
            "{w}"
        );
        assert!(
            w.contains("shard 2/3 (shard-2.json): the generator itself sent 17 requests late"),
            "{w}"
        );
        assert!(!w.contains("run 3:"), "{w}");
        let text = m.report.render();
        assert!(text.contains("+250.0ms"), "{text}");
        assert!(text.contains("BEHIND: late start"), "{text}");
        assert!(text.contains("BEHIND: low rate, generator late"), "{text}");
        // Synthetic shards have send lag p99 far below 1 ms: no note about a common lag.
        assert!(m.report.notes.is_empty(), "{:?}", m.report.notes);
    }

    #[test]
    fn one_late_request_does_not_put_a_shard_behind() {
        let mut inputs: Vec<_> = (0..2).map(|i| shard(i, 2, 500.0, T0, 0.0)).collect();
        inputs[0].1.main.requests.generator_late = 1;
        let rep = analyse(&inputs);
        assert!(
            rep.shards[0].status.is_empty(),
            "{:?}",
            rep.shards[0].behind
        );
        assert!(rep.render().contains("kept up"));
        assert!(!rep.render().contains("BEHIND"), "{}", rep.render());
        // As many as could move p99.9 (more than 0.1% of the shard's requests) do.
        let intended = inputs[1].1.main.requests.intended;
        inputs[1].1.main.requests.generator_late = intended / 1000 + 1;
        let rep = analyse(&inputs);
        assert_eq!(rep.shards[1].status, ["generator late"]);
    }

    #[test]
    fn send_lag_common_to_every_shard_is_told_apart_from_one_shards_trouble() {
        let with_lag = |i: u32, lag_ms: u64| {
            let mut sh = shard(i, 3, 750.0, T0, 0.0);
            for p in sh.1.main.send_lag.percentiles.iter_mut() {
                if p.percentile == 99.0 {
                    p.value_ns = lag_ms * 1_000_000;
                }
            }
            sh
        };
        let rep = analyse(&[with_lag(0, 460), with_lag(1, 470), with_lag(2, 1200)]);
        assert!(rep.shards.iter().all(|s| s.status == ["send lag"]));
        assert_eq!(rep.notes.len(), 2, "{:?}", rep.notes);
        assert!(
            rep.notes[0].contains("every shard has send lag p99 above 1.000ms (460.0ms .. 1.200s)")
        );
        assert!(
            rep.notes[1].starts_with("shard 2/3 (shard-2.json) stands out"),
            "{:?}",
            rep.notes
        );
        // One shard lagging alone is behind, and no common cause is claimed.
        let rep = analyse(&[with_lag(0, 0), with_lag(1, 0), with_lag(2, 30)]);
        assert!(rep.notes.is_empty());
        assert_eq!(rep.shards[2].status, ["send lag"]);
        assert!(rep.shards[0].status.is_empty());
    }

    #[test]
    fn without_a_common_start_offsets_are_from_the_earliest_shard() {
        let mut inputs: Vec<_> = (0..2).map(|i| shard(i, 2, 500.0, T0, 0.0)).collect();
        for (k, (_, r)) in inputs.iter_mut().enumerate() {
            let c = r.config.run_mut().unwrap();
            c.start_at_unix_s = None;
            c.late_start_s = None;
            r.start_time_unix_s = T0 + 2.0 * k as f64;
        }
        let rep = analyse(&inputs);
        assert!(rep.reference.starts_with("the earliest shard's start"));
        assert_eq!(rep.shards[1].start_offset_s, 2.0);
        assert!(
            rep.problems
                .iter()
                .any(|p| p.contains("started up to 2.000s apart")),
            "{:?}",
            rep.problems
        );
        assert!(rep.shards[1].behind[0].contains("started 2.000s late"));
    }

    #[test]
    fn shard_detection() {
        assert!(is_shard(&shard(0, 2, 10.0, T0, 0.0).1));
        assert!(!is_shard(&synthetic_run(1, 2, 10, 1000, 0)));
    }

    #[test]
    fn rfc3339_formatting() {
        assert_eq!(rfc3339_millis(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(rfc3339_millis(1_795_000_000.0), "2026-11-18T11:06:40.000Z");
    }
}
