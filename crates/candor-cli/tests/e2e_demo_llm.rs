//! `candor demo --llm` against its built-in stalling LLM server: candor's TTFT from the intended
//! send matches the truth, and the benchmark-style sender (10 connections, timed from the actual
//! send) under-reports it, as predicted in docs/truth.md ("`candor demo --llm`").

mod common;
use candor_core::units::parse_duration_ns;
use common::*;

const MS: f64 = 1e6;

/// The row `label` of the demo's table: truth, benchmark-style, candor, candor (actual send).
fn row(text: &str, label: &str) -> [f64; 4] {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label))
        .unwrap_or_else(|| panic!("no {label} row in {text}"));
    let cells: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|c| parse_duration_ns(c).unwrap_or_else(|_| panic!("{c:?} in {line}")) as f64)
        .collect();
    cells
        .try_into()
        .unwrap_or_else(|_| panic!("four cells in {line}"))
}

#[test]
fn the_llm_demo_shows_the_true_ttft_and_how_timing_from_the_actual_send_hides_it() {
    let _g = serial();
    let out = candor()
        .args([
            "demo",
            "--llm",
            "-R",
            "40",
            "--duration",
            "10s",
            "--stall-every",
            "5s",
            "--stall-for",
            "1s",
        ])
        .output()
        .expect("run candor demo --llm");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    // docs/truth.md: T = 50 ms, f = 0.2, S = 1 s.
    let [truth90, bench90, ours90, _] = row(&text, "p90");
    let [truth99, _, ours99, _] = row(&text, "p99");
    assert!(
        (truth90 - 550.0 * MS).abs() < 1.0 * MS,
        "truth p90 {truth90}"
    );
    assert!(
        (truth99 - 1000.0 * MS).abs() < 1.0 * MS,
        "truth p99 {truth99}"
    );
    let tol = 65.0 * MS;
    assert!(
        (ours90 - truth90).abs() <= tol,
        "candor p90 {:.1} ms, truth {:.1} ms",
        ours90 / MS,
        truth90 / MS
    );
    assert!(
        (ours99 - truth99).abs() <= tol,
        "candor p99 {:.1} ms, truth {:.1} ms",
        ours99 / MS,
        truth99 / MS
    );
    assert!(
        bench90 < truth90 / 2.0,
        "the benchmark-style p90 {:.1} ms should hide the stall (truth {:.1} ms)",
        bench90 / MS,
        truth90 / MS
    );
    assert!(text.contains("What you are looking at:"), "{text}");
}

#[test]
fn a_demo_rate_that_is_not_a_rate_is_one_line_before_any_load() {
    let out = candor()
        .args(["demo", "--llm", "-R", "max"])
        .output()
        .expect("run candor demo --llm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("candor: error:"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}
