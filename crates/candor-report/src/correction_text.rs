//! What `candor correct` prints: the data as recorded beside HdrHistogram's after-the-fact
//! correction of it (an estimate, said to be one), and the omission the data shows.

use candor_analysis::omission;
use candor_core::hist::{Histo, SUMMARY_ROWS};
use candor_core::table::{Column, TextTable};
use candor_core::units::{format_count, format_ns};
use std::fmt::Write as _;

/// The report of `raw` (read from `name`, an open-loop run when `open_loop`) corrected into
/// `fixed` at the expected `interval` (ns).
pub fn render(name: &str, open_loop: bool, raw: &Histo, fixed: &Histo, interval: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "candor correct: {name} with HdrHistogram's after-the-fact correction, expected interval {}",
        format_ns(interval as f64)
    );
    if open_loop {
        let _ = writeln!(
            out,
            "NOTE: this is an open-loop candor run, already timed from intended send times; correcting it again\n\
             double-counts. The correction is meant for data taken without a schedule."
        );
    }
    let _ = writeln!(out);
    let mut table = TextTable::new([Column::left(9), Column::right(14), Column::right(26)]);
    table.row(&["", "as recorded", "corrected (ESTIMATE)"]);
    for row in SUMMARY_ROWS {
        let (a, b) = (row.statistic.of(raw), row.statistic.of(fixed));
        table.row(&[row.label.to_string(), format_ns(a), format_ns(b)]);
    }
    let added = format_count(fixed.len() - raw.len());
    let corrected = format!("{} (+{added})", format_count(fixed.len()));
    table.row(&["samples".to_string(), format_count(raw.len()), corrected]);
    out.push_str(&table.finish());
    let _ = writeln!(
        out,
        "\nThe corrected column is an estimate: it assumes a sample was intended every {} and that the\n\
         requests a schedule would have sent while a slow one was outstanding would each have waited\n\
         until it ended. Measuring from the intended send time (candor run -R RATE) is exact; prefer it.",
        format_ns(interval as f64)
    );
    if let Some(sig) = omission::detect(raw, Some(interval)) {
        let _ = writeln!(out, "\nAs recorded, the data shows a {}", sig.verdict);
    }
    out
}
