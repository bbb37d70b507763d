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
    let pct = candor_analysis::repeats::pct;
    if shown > crate::compare_gate::MAX_NOISE {
        // A figure compare would refuse is no advice: say what it means instead.
        let _ = writeln!(
            out,
            "noise floor: {} (the largest above): more than the {}% candor compare takes as \
             --noise; runs on this machine are too far apart to compare one a side: quiet it, or \
             compare repeats (--repeat)",
            pct(shown),
            crate::compare_gate::MAX_NOISE * 100.0
        );
    } else {
        let _ = writeln!(
            out,
            "noise floor: {} (the largest above): pass --noise {} to candor compare for one run a side",
            pct(shown),
            pct(shown)
        );
    }
    (out, Some(floor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `n` samples all at `ns`.
    fn run(n: usize, ns: u64) -> Histo {
        let mut h = candor_core::hist::new_histogram();
        for _ in 0..n {
            h.record(ns).unwrap();
        }
        h
    }

    #[test]
    fn a_floor_compare_takes_is_advised_and_one_past_its_bound_is_said_instead() {
        let quiet = [run(500, 1_000_000), run(500, 1_010_000), run(500, 990_000)];
        let (text, floor) = noise_text(&quiet, "http://h/", "-R 500");
        assert!(
            floor.is_some_and(|f| f <= crate::compare_gate::MAX_NOISE),
            "{text}"
        );
        assert!(text.contains("pass --noise "), "{text}");
        let figure = text.split("pass --noise ").nth(1).unwrap();
        let figure = figure.split_whitespace().next().unwrap();
        assert!(crate::compare_gate::parse_noise(figure).is_ok(), "{figure}");

        // One run twenty times as slow: no figure compare would refuse is printed.
        let busy = [
            run(500, 1_000_000),
            run(500, 20_000_000),
            run(500, 1_000_000),
        ];
        let (text, floor) = noise_text(&busy, "http://h/", "-R 500");
        assert!(
            floor.is_some_and(|f| f > crate::compare_gate::MAX_NOISE),
            "{text}"
        );
        assert!(!text.contains("pass --noise"), "{text}");
        assert!(
            text.contains("more than the 1000% candor compare takes"),
            "{text}"
        );
    }
}
