//! `candor calibrate --noise`'s report: how much one run differs from the next at a few
//! percentiles, and the noise floor `candor compare --noise` takes for one run a side.

use candor_core::hist::Histo;
use std::fmt::Write as _;

/// The percentiles a noise floor is measured at (those the runs have samples for).
pub const NOISE_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// The variation across `hists` (each run's response times, of `noise_load` against `url`) as
/// text, ending with the floor to pass to `candor compare --noise`; `None` for the floor when
/// no percentile had samples enough (the text then says what each lacked).
pub fn noise_text(hists: &[Histo], url: &str, noise_load: &str) -> (String, Option<f64>) {
    let n = hists.len();
    let mut out = String::new();
    let fewest = hists.iter().map(|h| h.len()).min().unwrap_or(0);
    let _ = writeln!(
        out,
        "run-to-run variation against {url}: {n} runs of `{}`, 1 s apart",
        noise_load
    );
    let mut floor: Option<f64> = None;
    for p in NOISE_PERCENTILES {
        let label = candor_analysis::late::percentile_label(p);
        if !candor_analysis::compare_ci::supported(p, fewest, fewest) {
            let _ = writeln!(
                out,
                "  {label:<6} not enough samples ({} in the smallest run)",
                candor_core::units::format_count(fewest)
            );
            continue;
        }
        let values: Vec<u64> = hists
            .iter()
            .map(|h| candor_core::hist::value_at(h, p))
            .collect();
        let Some(x) = candor_analysis::repeats::noise_floor(&values) else {
            continue;
        };
        let (lo, hi) = (
            values.iter().min().unwrap_or(&0),
            values.iter().max().unwrap_or(&0),
        );
        let _ = writeln!(
            out,
            "  {label:<6} per run {} .. {}: two single runs differ by up to {} (95%)",
            candor_core::units::format_ns(*lo as f64),
            candor_core::units::format_ns(*hi as f64),
            candor_analysis::repeats::pct(x)
        );
        floor = Some(floor.map_or(x, |f: f64| f.max(x)));
    }
    let Some(floor) = floor else {
        return (out, None);
    };
    // Rounded up to a tenth of a percent: a floor is a bound.
    let shown = (floor * 1000.0).ceil() / 1000.0;
    let _ = writeln!(
        out,
        "noise floor: {} (the largest above): pass --noise {} to candor compare for one run a side",
        candor_analysis::repeats::pct(shown),
        candor_analysis::repeats::pct(shown)
    );
    (out, Some(floor))
}
