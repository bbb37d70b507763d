//! The JLBH-like text of a harness run: the banner, one line per histogram, a run's and the
//! warm-up's blocks, and the comparison of runs (what `HarnessResults` prints).

use crate::alloc::NOT_COUNTED;
use crate::phased::FIRST_PROBE;
use crate::run_data::{Phase, RunData};
use crate::settings::Config;
use crate::summary::{format_us_short, percentile_label, percentile_rows};
use crate::tables::{ratio_cell, SummaryTable};
use candor_analysis::compare_ci::Method;
use candor_core::hist::{value_at, Histo};
use std::fmt::Write as _;

pub(crate) const BANNER_WIDTH: usize = 100;

pub(crate) fn banner(title: &str) -> String {
    let left = 32;
    let right = BANNER_WIDTH.saturating_sub(left + title.len()).max(3);
    format!("{}{}{}", "-".repeat(left), title, "-".repeat(right))
}

pub(crate) fn phase_name(p: Phase) -> String {
    match p {
        Phase::Warmup => "warm-up".into(),
        Phase::Run(n) => format!("run {n}"),
    }
}

/// One histogram as JLBH's one-line run summary: `Name (count)  50/90 99/99.9 - worst was ...`.
pub fn histogram_line(name: &str, h: &Histo) -> String {
    let mut ps = percentile_rows(h.len());
    ps.push(100.0);
    let labels: Vec<String> = ps[..ps.len() - 1]
        .iter()
        .map(|&p| percentile_label(p))
        .collect();
    let values: Vec<String> = ps
        .iter()
        .map(|&p| format_us_short(value_at(h, p) as f64 / 1e3))
        .collect();
    let pair = |v: &[String], sep: &str, gap: &str| {
        v.chunks(2)
            .map(|c| c.join(sep))
            .collect::<Vec<_>>()
            .join(gap)
    };
    let n = values.len() - 1;
    format!(
        "{:<48}{} - worst was {} - {}",
        format!("{name} ({})", candor_core::units::format_count(h.len())),
        pair(&labels, "/", " "),
        pair(&values[..n], " / ", "  "),
        values[n]
    )
}

/// The warm-up line.
pub fn warmup_text(w: &RunData) -> String {
    format!(
        "Warm up complete ({} iterations took {:.3}s)",
        w.iterations,
        w.duration_ns as f64 / 1e9
    )
}

/// One run's block in JLBH's layout (values in us), plus candor's service time and start lag.
pub fn run_text(cfg: &Config, r: &RunData) -> String {
    let mut s = String::new();
    let n = match r.phase {
        Phase::Run(n) => n,
        Phase::Warmup => 0,
    };
    let _ = writeln!(
        s,
        "{}",
        banner(&format!(" BENCHMARK RESULTS (RUN {n}) us "))
    );
    // Several harnesses in one process print one after the other; the name tells them apart.
    let _ = writeln!(s, "Benchmark: {}", cfg.name);
    let _ = writeln!(s, "Run time: {:.3}s", r.duration_ns as f64 / 1e9);
    let _ = writeln!(
        s,
        "Correcting for co-ordinated:{}",
        cfg.account_for_coordinated_omission
    );
    let interval_us = cfg.interval_ns() / 1e3;
    let interval = format!("{interval_us:.3}");
    let interval = interval.trim_end_matches('0').trim_end_matches('.');
    let _ = writeln!(
        s,
        "Target throughput:{}/s = 1 message every {interval}us",
        format_rate_plain(cfg.throughput_per_s)
    );
    let _ = writeln!(s, "{}", histogram_line("End to End:", r.end_to_end()));
    if cfg.account_for_coordinated_omission {
        let _ = writeln!(
            s,
            "{}",
            histogram_line("Service time (from actual start)", r.service_time())
        );
        let _ = writeln!(
            s,
            "{}",
            histogram_line("Start lag (actual - intended)", r.send_lag())
        );
    }
    for (i, name) in cfg.probes.iter().enumerate() {
        if let Some(h) = r.hists.get(FIRST_PROBE + i) {
            let _ = writeln!(s, "{}", histogram_line(name, h));
        }
    }
    if let Some(j) = &r.jitter {
        let _ = writeln!(s, "{}", histogram_line("OS Jitter", j));
    }
    if !r.wait_stalls.is_empty() {
        let _ = writeln!(
            s,
            "{}",
            histogram_line("Stalls while waiting", &r.wait_stalls)
        );
    }
    match &r.allocations {
        Some(a) => {
            let _ = writeln!(s, "{}", a.text());
        }
        None => {
            let _ = writeln!(s, "{NOT_COUNTED}");
        }
    }
    let _ = write!(s, "{}", "-".repeat(BANNER_WIDTH));
    s
}

/// A table's comparisons with run 1: a row per percentile, a column per later run; empty with
/// one run.
pub fn comparison_text(t: &SummaryTable) -> String {
    const CELL: usize = 34;
    let mut s = String::new();
    if t.comparisons.is_empty() {
        return s;
    }
    let method = match t.comparisons[0].method {
        Method::OrderStatistics => "order statistics of each run's samples",
        Method::Bootstrap => "block bootstrap",
        Method::AcrossRuns => "across runs",
    };
    let _ = writeln!(s, "Ratio to run1 with 95% confidence interval ({method}):");
    let _ = write!(s, "{:<10}", "Percentile");
    for c in &t.comparisons {
        let _ = write!(s, "  {:<CELL$}", c.candidate);
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    for (i, row) in t.rows.iter().enumerate() {
        let label = match row.percentile {
            Some(p) => format!("{}:", percentile_label(p)),
            None => "worst:".to_string(),
        };
        let _ = write!(s, "{label:<10}");
        for c in &t.comparisons {
            let cell = c.rows.get(i).map(ratio_cell).unwrap_or_default();
            let _ = write!(s, "  {cell:<CELL$}");
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
    }
    s.push_str(
        "(same when the interval contains 1 or the ratio is within 2% of 1; the runs of a session\n \
         repeat the same code, so a difference between two of them beyond the one-run interval is\n \
         run-to-run variation, which one run against one cannot tell from a change: \"not enough\n \
         runs\". Compare code across sessions with HarnessResults::compare_sessions or `candor\n \
         compare` of their JSON, across runs. A run is one histogram, so the bounds treat\n \
         iterations as independent; no interval bounds a worst; docs/statistics.md)\n",
    );
    s
}

fn format_rate_plain(per_s: f64) -> String {
    if per_s.fract() == 0.0 {
        format!("{}", per_s as u64)
    } else {
        format!("{per_s:.3}")
    }
}
