//! The formatting every part of the page shares: escaping, latencies with the micro sign, the
//! run colours, the percentile-spectrum curves and a summary's row of cells.

use candor_core::hist::value_at;
use candor_core::units::format_count;
use candor_core::{Histo, Summary};

/// Run colours, chosen to stay distinguishable for common colour-vision deficiencies.
pub(crate) const PALETTE: [&str; 8] = [
    "#1f6fb2", "#d1495b", "#2a9d5c", "#8e5cc2", "#e08a1e", "#3b8ea5", "#7a7a7a", "#b5651d",
];

/// Auto-scaled latency with the proper micro sign for a typeset page.
pub(crate) fn format_ns(ns: f64) -> String {
    let s = candor_core::units::format_ns(ns);
    match s.strip_suffix("us") {
        Some(v) => format!("{v}\u{b5}s"),
        None => s,
    }
}

pub(crate) use crate::escape::html_text as esc;

/// Points per decade of the 1/(1-p) axis: 40 keeps curves smooth and puts a point exactly on
/// every labelled tick (90%, 99%, ...).
const PER_DECADE: u32 = 40;

/// The curve of `h` on the grid `xs` of 1/(1-p), running to the max as HdrHistogram's plotter
/// draws it: percentiles up to 1/(1-p) = count (the last one the samples resolve), then the max
/// at the next grid point, where the curve ends.
pub(crate) fn spectrum(h: &Histo, xs: &[f64]) -> Vec<Option<u64>> {
    let n = h.len() as f64;
    let mut ended = h.is_empty();
    xs.iter()
        .map(|&x| {
            if ended {
                None
            } else if x > n * 1.0000001 {
                ended = true;
                Some(h.max())
            } else {
                let p = 100.0 * (1.0 - 1.0 / x);
                Some(value_at(h, p))
            }
        })
        .collect()
}

/// The grid of 1/(1-p) values, PER_DECADE points a decade from 1, reaching one point past
/// `max_count` so that every run's curve has a point for its max.
pub(crate) fn spectrum_grid(max_count: u64) -> Vec<f64> {
    let mut xs = Vec::new();
    for i in 0u32.. {
        let x = 10f64.powf(f64::from(i) / f64::from(PER_DECADE));
        xs.push(x);
        if x > max_count as f64 * 1.0000001 && xs.len() > 1 {
            break;
        }
    }
    xs
}

/// Summary text of a measure for legends and captions: "p99 4.907ms · max 22.74ms".
pub(crate) fn p99_max(h: &Histo) -> String {
    if h.is_empty() {
        "no data".to_string()
    } else {
        format!(
            "p99 {} \u{b7} max {}",
            format_ns(value_at(h, 99.0) as f64),
            format_ns(h.max() as f64)
        )
    }
}

pub(crate) fn summary_row(s: &Summary) -> String {
    let mut cells = String::new();
    for p in [50.0, 90.0, 99.0, 99.9, 99.99] {
        if s.count == 0 {
            cells.push_str("<td class=\"dim\">no data</td>");
            continue;
        }
        let v = s
            .at(p)
            .map_or("no data".to_string(), |v| format_ns(v as f64));
        // The text report's rule (candor_analysis::confidence): about 100 samples beyond a
        // percentile support it; the caveats above list the ones that fall short.
        let needed = candor_analysis::confidence::samples_needed(p / 100.0);
        if s.count >= needed {
            cells.push_str(&format!("<td>{v}</td>"));
        } else {
            cells.push_str(&format!(
                "<td class=\"dim\" title=\"not enough samples ({} of ~{})\">{v}</td>",
                format_count(s.count),
                format_count(needed)
            ));
        }
    }
    if s.count == 0 {
        cells.push_str("<td class=\"dim\">no data</td>".repeat(3).as_str());
        return cells;
    }
    cells.push_str(&format!("<td>{}</td>", format_ns(s.max_ns as f64)));
    cells.push_str(&format!(
        "<td>{}</td><td>{}</td>",
        format_ns(s.mean_ns),
        format_ns(s.stdev_ns)
    ));
    cells
}
