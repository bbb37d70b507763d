//! Saturation: when the offered load exceeds capacity the backlog grows by `R − K` requests per
//! second and every later request waits longer, so response time grows linearly with time
//! (docs/truth.md, case 4). A straight-line fit over the per-interval percentiles detects it.

use candor_core::results::RunResults;
use candor_core::units::{format_ns, format_rate};
use serde::{Deserialize, Serialize};

/// Fewer points than this cannot separate a trend from noise.
pub const MIN_INTERVALS: usize = 4;
/// Required t statistic of the slope (slope / its standard error).
pub const MIN_T: f64 = 4.0;
/// Required share of the variance explained by the line.
pub const MIN_R2: f64 = 0.7;

/// Completions per second while the measured window lasted, from the per-interval counts (by
/// completion time). Unlike `achieved_per_s` (all completions of the window's requests, including
/// those answered during the drain), this falls below the offered rate when the target cannot
/// keep up. `None` without whole measured intervals.
pub fn throughput(results: &RunResults) -> Option<f64> {
    let warm = results.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    let end = warm + results.main.duration_s;
    let (done, secs) = results
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.start_s >= warm - 1e-6 && i.start_s + i.length_s <= end + 1e-6)
        .fold((0u64, 0.0), |(d, s), i| (d + i.completed, s + i.length_s));
    (secs >= 0.5).then(|| done as f64 / secs)
}

/// A least-squares line through points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LineFit {
    pub slope: f64,
    pub intercept: f64,
    pub r2: f64,
    /// slope / standard error of the slope; infinite for a perfect fit.
    pub t: f64,
    pub points: usize,
}

/// Ordinary least squares of `y` on `x`; `None` with fewer than 3 points or no spread in `x`.
pub fn fit_line(points: &[(f64, f64)]) -> Option<LineFit> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = points
        .iter()
        .map(|p| (p.1 - intercept - slope * p.0).powi(2))
        .sum();
    let r2 = if syy > 0.0 { 1.0 - sse / syy } else { 0.0 };
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    let t = if se > 0.0 {
        slope / se
    } else if slope > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    Some(LineFit {
        slope,
        intercept,
        r2,
        t,
        points: n,
    })
}

pub use candor_core::analysis::Saturation;

fn significant(fit: &LineFit, rise_ns: f64, floor_ns: f64) -> bool {
    fit.points >= MIN_INTERVALS
        && fit.slope > 0.0
        && fit.t >= MIN_T
        && fit.r2 >= MIN_R2
        && rise_ns >= floor_ns
}

/// Looks for linear growth of the per-interval response-time p50 (then max) in the measured
/// intervals of `results`.
pub fn detect(results: &RunResults) -> Option<Saturation> {
    let intervals: Vec<_> = results
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.response_time.count > 0 && i.length_s > 0.25)
        .collect();
    if intervals.len() < MIN_INTERVALS {
        return None;
    }
    let mid = |i: &candor_core::results::Interval| i.start_s + i.length_s / 2.0;
    let span = mid(intervals[intervals.len() - 1]) - mid(intervals[0]);
    let mut found = None;
    for (name, get) in [
        (
            "p50",
            (|i: &candor_core::results::Interval| i.response_time.p50_ns) as fn(&_) -> u64,
        ),
        ("max", |i: &candor_core::results::Interval| {
            i.response_time.max_ns
        }),
    ] {
        let pts: Vec<(f64, f64)> = intervals.iter().map(|i| (mid(i), get(i) as f64)).collect();
        let Some(fit) = fit_line(&pts) else { continue };
        let rise = fit.slope * span;
        let lowest = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        // The growth must be large against the run's own floor, not a drift of microseconds.
        let floor = (2.0 * lowest).max(1e6);
        if significant(&fit, rise, floor) {
            found = Some((name, fit, rise));
            break;
        }
    }
    let (name, fit, rise) = found?;
    let lag: Vec<(f64, f64)> = intervals
        .iter()
        .map(|i| (mid(i), i.send_lag.p50_ns as f64))
        .collect();
    let lag_grows = fit_line(&lag).is_some_and(|f| significant(&f, f.slope * span, 1e6));
    let r = &results.main.requests;
    let rate = &results.main.rate;
    let done = throughput(results).unwrap_or(rate.achieved_per_s);
    let short = rate.target_per_s.is_some_and(|t| done < 0.98 * t);
    let overload = rate.target_per_s.is_some() && (short || r.in_flight_at_end > 0 || lag_grows);
    let slope_ms = fit.slope / 1e6;
    let verdict = if overload {
        let capacity = match rate.target_per_s {
            Some(t) if short => format!(
                "; {} completed per second while {} was offered, so capacity is about {}",
                format_rate(done),
                format_rate(t),
                format_rate(done)
            ),
            _ => String::new(),
        };
        format!(
            "SATURATED: offered load above capacity: response-time {name} grows {slope_ms:.2} ms/s over the run \
             (+{} in {span:.0}s, R² {:.2}); the backlog grows and every later request waits longer{capacity}; \
             percentiles of this run depend on its length, lower the rate",
            format_ns(rise),
            fit.r2
        )
    } else {
        format!(
            "response-time {name} grows steadily, {slope_ms:.2} ms/s over the run (+{} in {span:.0}s, R² {:.2}): \
             a queue or leak is building up (or the offered load is above capacity)",
            format_ns(rise),
            fit.r2
        )
    };
    Some(Saturation {
        statistic: name.to_string(),
        slope_ms_per_s: slope_ms,
        r2: fit.r2,
        rise_ns: rise,
        overload,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::{EncodedHistograms, Interval, IntervalStats};

    #[test]
    fn line_fit_is_exact_on_a_line() {
        let f = fit_line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-12 && (f.intercept - 1.0).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12 && f.t.is_infinite());
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    pub(crate) fn with_intervals(p50s_ms: &[f64], achieved: f64) -> RunResults {
        let mut r = crate::test_support::empty_run(Some(1000.0), achieved);
        r.main.duration_s = p50s_ms.len() as f64;
        let h = EncodedHistograms {
            response_time: String::new(),
            service_time: String::new(),
            send_lag: String::new(),
            first_byte: None,
        };
        r.intervals = p50s_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| Interval {
                start_s: i as f64,
                length_s: 1.0,
                warmup: false,
                completed: achieved as u64,
                failed: 0,
                response_time: IntervalStats {
                    count: 1000,
                    p50_ns: (ms * 1e6) as u64,
                    max_ns: (ms * 2e6) as u64,
                    ..Default::default()
                },
                service_time: IntervalStats::default(),
                send_lag: IntervalStats::default(),
                first_byte: None,
                histograms: h.clone(),
                stream: None,
            })
            .collect();
        r
    }

    #[test]
    fn linear_growth_with_a_short_rate_is_overload_with_its_slope() {
        // The truth of case 4: R = 1.1 K, a request intended at t waits 0.1 t: 100 ms/s.
        let p50: Vec<f64> = (0..8).map(|i| 0.05 + 100.0 * (i as f64 + 0.5)).collect();
        let s = detect(&with_intervals(&p50, 909.0)).expect("saturation");
        assert!(s.overload);
        assert!(
            (s.slope_ms_per_s - 100.0).abs() < 0.5,
            "{}",
            s.slope_ms_per_s
        );
        assert!(
            s.verdict.contains("offered load above capacity"),
            "{}",
            s.verdict
        );
        assert!(s.verdict.contains("100.00 ms/s"), "{}", s.verdict);
    }

    #[test]
    fn flat_noisy_or_short_runs_are_not_saturated() {
        let flat = [0.05, 0.06, 0.05, 0.07, 0.05, 0.06, 0.05, 0.06];
        assert!(detect(&with_intervals(&flat, 1000.0)).is_none());
        // A periodic stall: spikes, no trend.
        let stall = [0.05, 250.0, 0.05, 250.0, 0.05, 250.0, 0.05, 250.0];
        assert!(detect(&with_intervals(&stall, 1000.0)).is_none());
        // Growth of microseconds is not saturation.
        let drift: Vec<f64> = (0..8).map(|i| 0.05 + 0.001 * i as f64).collect();
        assert!(detect(&with_intervals(&drift, 1000.0)).is_none());
        assert!(detect(&with_intervals(&[1.0, 100.0, 200.0], 500.0)).is_none());
    }

    #[test]
    fn growth_without_backlog_is_reported_but_not_called_overload() {
        let p50: Vec<f64> = (0..8).map(|i| 1.0 + 5.0 * i as f64).collect();
        let s = detect(&with_intervals(&p50, 1000.0)).unwrap();
        assert!(!s.overload);
        assert!(s.verdict.contains("grows steadily"));
    }
}
