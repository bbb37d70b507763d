//! Everything derived from one run's results for its report: confidence intervals and sample
//! support of the reported percentiles, and the saturation, coordinated-omission and stationarity
//! verdicts.

use crate::confidence;
use crate::omission;
use crate::saturation;
use candor_core::hist::SUMMARY_PERCENTILES;
use candor_core::results::{Kind, RunResults};

pub use candor_core::analysis::Analysis;

/// Whether the distribution was recorded without a schedule (so coordinated omission may hide
/// in it): closed-loop runs and imported logs.
pub fn unscheduled(results: &RunResults) -> bool {
    results.mode.is_closed_loop() || results.kind == Kind::Hlog
}

/// Analyses `results` (response time of the measured window).
pub fn analyze(results: &RunResults) -> Analysis {
    let rec = results.main.histograms.decode().ok();
    let n = results.main.response_time.count;
    let confidence = match &rec {
        Some(r) => confidence::percentile_confidence(&r.response, &SUMMARY_PERCENTILES),
        None => Vec::new(),
    };
    let coordinated_omission = match (&rec, unscheduled(results)) {
        (Some(r), true) => {
            // A closed loop's connections each send again when answered: the interval between
            // one connection's samples is about connections / achieved rate.
            let conns = results
                .run_config()
                .map(|c| c.connections as u64)
                .filter(|&c| c > 0);
            let rate = results.main.rate.achieved_per_s;
            let interval = match conns {
                Some(c) if results.mode.is_closed_loop() && rate > 0.0 => {
                    Some((c as f64 / rate * 1e9) as u64)
                }
                _ => None,
            };
            omission::detect(&r.response, interval)
        }
        _ => None,
    };
    Analysis {
        confidence,
        highest_supported_percentile: confidence::highest_supported_percentile(n),
        saturation: saturation::detect(results),
        coordinated_omission,
        // Only runs and merges have measured intervals; a summary without them is not tested.
        stationarity: results
            .intervals
            .iter()
            .any(|i| !i.warmup)
            .then(|| crate::trend::stationarity(results)),
        slo: Vec::new(),
    }
}

/// The report section: confidence intervals and sample support of the response-time
/// percentiles, timeline events, and the verdicts.
pub fn render_text(results: &RunResults) -> String {
    use candor_core::units::format_ns;
    let a = analyze(results);
    let mut out = String::new();
    let n = results.main.response_time.count;
    if n > 0 && !a.confidence.is_empty() {
        let support = confidence::support_phrase(n);
        out.push_str(&format!(
            "\n  response-time percentiles with 95% confidence intervals (order statistics); {} {}:\n",
            crate::late::count_noun(n, "sample", "samples"),
            support
        ));
        for c in a
            .confidence
            .iter()
            .filter(|c| c.percentile < 100.0 && c.percentile != 75.0)
        {
            out.push_str(&format!(
                "  {:<10} {:>12}   {}\n",
                format!("p{}", omission::trim_pct(c.percentile)),
                format_ns(c.value_ns as f64),
                confidence::describe(c)
            ));
        }
    }
    for e in &results.main.events {
        out.push_str(&format!(
            "\n  event: {} at {:.3}s for {}{}\n",
            e.kind,
            e.at_s,
            format_ns(e.length_s * 1e9),
            if e.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", e.detail)
            }
        ));
    }
    if let Some(s) = &a.stationarity {
        out.push_str(&format!("\n  {}\n", crate::trend::summary(s)));
    }
    let verdicts = a.verdicts();
    if !verdicts.is_empty() {
        out.push('\n');
        for v in verdicts {
            out.push_str(&format!("VERDICT: {v}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::run_of;

    #[test]
    fn closed_loop_stall_gets_the_co_verdict_open_loop_does_not() {
        let mut values = vec![50_000u64; 100_000];
        values.extend(std::iter::repeat_n(400_000_000u64, 10));
        let closed = run_of(&values, None, "closed-loop");
        let a = analyze(&closed);
        assert!(a.coordinated_omission.is_some());
        assert_eq!(a.verdicts().len(), 1);
        let open = run_of(&values, Some(1000.0), "open-loop");
        assert!(analyze(&open).coordinated_omission.is_none());
        assert_eq!(a.confidence.len(), SUMMARY_PERCENTILES.len());
        let sup = a.highest_supported_percentile.unwrap();
        assert!((sup - 99.9).abs() < 0.001, "{sup}");
        let json = a.to_value();
        assert!(json["confidence"][3]["lower_ns"].is_u64());
    }
}
