//! Was the run steady? The Mann-Kendall trend test on the per-interval percentiles of the
//! measured window, and the stationarity verdict every report carries.
//!
//! Mann-Kendall is rank-based: it counts, over all pairs of intervals, how often the later one is
//! higher minus how often it is lower (`S`), and compares `S` with its spread under "no trend"
//! (normal approximation with the tie correction). It assumes nothing about the shape of the
//! distribution, only that the intervals would be exchangeable if nothing drifted. Latency in
//! neighbouring intervals is often correlated, which makes the test too eager; two guards keep a
//! steady run from being called drifting: a strict level ([`ALPHA`]) and a size the drift must
//! reach ([`MIN_CHANGE_PCT`], median of the last third of the intervals against the first third).

use candor_core::results::{Interval, RunResults};

/// Two-sided significance level of the trend test. Two series (p50, p99) are tested on every
/// report, so 1% each keeps false warnings on steady runs at about 2% of runs or fewer.
pub const ALPHA: f64 = 0.01;
/// The smallest drift worth a warning: the last third's median per-interval percentile against
/// the first third's, in percent.
pub const MIN_CHANGE_PCT: f64 = 10.0;
/// Fewer measured intervals than this are not tested: the normal approximation of `S` and the
/// thirds need about this many.
pub const MIN_INTERVALS: usize = 10;
/// The per-interval percentiles tested.
pub const TESTED_PERCENTILES: [f64; 2] = [50.0, 99.0];

/// The Mann-Kendall statistics of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannKendall {
    /// Number of later-higher pairs minus later-lower pairs.
    pub s: i64,
    /// Variance of `S` under no trend, corrected for ties.
    pub var_s: f64,
    /// Normal score with continuity correction (0 when `S` = 0).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Mann-Kendall test of `series` in time order; `None` for fewer than 3 values or a constant
/// series (no variance: nothing moved, so no trend).
pub fn mann_kendall(series: &[f64]) -> Option<MannKendall> {
    let n = series.len();
    if n < 3 {
        return None;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match series[j].partial_cmp(&series[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    // Tie groups: each group of t equal values removes t(t-1)(2t+5) from the variance.
    let mut sorted = series.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mut ties = 0f64;
    let mut k = 0;
    while k < n {
        let mut t = 1;
        while k + t < n && sorted[k + t] == sorted[k] {
            t += 1;
        }
        let tf = t as f64;
        ties += tf * (tf - 1.0) * (2.0 * tf + 5.0);
        k += t;
    }
    let nf = n as f64;
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var_s <= 0.0 {
        return None;
    }
    let z = match s.signum() {
        1 => (s - 1) as f64 / var_s.sqrt(),
        -1 => (s + 1) as f64 / var_s.sqrt(),
        _ => 0.0,
    };
    let p_value = erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0);
    Some(MannKendall {
        s,
        var_s,
        z,
        p_value,
    })
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, fractional error below
/// 1.2e-7 everywhere: ample for a p-value compared with 0.01).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let ans = t * poly.exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// The median of `v` (mean of the middle two for an even count); `v` must not be empty.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

pub use candor_core::analysis::{Stationarity, Steadiness, TrendTest};

/// One line for a text report: the verdict on `s` with the test's level and guards.
pub fn summary(s: &Stationarity) -> String {
    match s.verdict {
        Steadiness::TooFewIntervals => format!(
            "stationarity: not tested ({} measured intervals; the trend test needs {MIN_INTERVALS})",
            s.intervals
        ),
        Steadiness::Steady => format!(
            "stationarity: steady (no trend in per-interval {} over {} intervals; Mann-Kendall, level {ALPHA}, drifts under {MIN_CHANGE_PCT}% ignored)",
            s.tests
                .iter()
                .map(|t| format!("p{}", crate::omission::trim_pct(t.percentile)))
                .collect::<Vec<_>>()
                .join(" and "),
            s.intervals
        ),
        Steadiness::Drifted => format!(
            "stationarity: drifted over {} intervals (Mann-Kendall, level {ALPHA})",
            s.intervals
        ),
    }
}

/// The warning for a drifted percentile, in the words the reports use.
pub fn drift_warning(t: &TrendTest) -> String {
    let verb = if t.change_pct >= 0.0 { "rose" } else { "fell" };
    format!(
        "p{} {verb} {:.0}% from the first third to the last: the system was not in a steady state; \
         a longer warm-up or a lower rate may be needed",
        crate::omission::trim_pct(t.percentile),
        t.change_pct.abs()
    )
}

/// Tests each series (`(percentile, per-interval values in time order)`); all series have the
/// same length, the number of measured intervals.
pub fn assess(series: &[(f64, Vec<f64>)]) -> Stationarity {
    let intervals = series.first().map_or(0, |(_, s)| s.len());
    if intervals < MIN_INTERVALS {
        return Stationarity {
            verdict: Steadiness::TooFewIntervals,
            intervals,
            tests: Vec::new(),
            warnings: Vec::new(),
        };
    }
    let third = intervals / 3;
    let tests: Vec<TrendTest> = series
        .iter()
        .map(|(p, s)| {
            let first = median(&s[..third]);
            let last = median(&s[s.len() - third..]);
            let change_pct = if first > 0.0 {
                100.0 * (last - first) / first
            } else {
                0.0
            };
            let (s_stat, z, p_value) = match mann_kendall(s) {
                Some(mk) => (mk.s, mk.z, mk.p_value),
                None => (0, 0.0, 1.0),
            };
            TrendTest {
                percentile: *p,
                intervals,
                s: s_stat,
                z,
                p_value,
                first_third_ns: first,
                last_third_ns: last,
                change_pct,
                // The direction of the thirds must agree with the trend's, so a rise in the
                // middle that fell back is not reported as a rise.
                drifted: p_value < ALPHA
                    && change_pct.abs() >= MIN_CHANGE_PCT
                    && (change_pct > 0.0) == (s_stat > 0),
            }
        })
        .collect();
    let warnings: Vec<String> = tests
        .iter()
        .filter(|t| t.drifted)
        .map(drift_warning)
        .collect();
    Stationarity {
        verdict: if warnings.is_empty() {
            Steadiness::Steady
        } else {
            Steadiness::Drifted
        },
        intervals,
        tests,
        warnings,
    }
}

/// Most points in a tested series: longer runs are tested on this many groups of consecutive
/// intervals (the test compares all pairs, so its cost grows with the square of the points).
pub const MAX_POINTS: usize = 1_000;

/// The measured intervals' response-time percentiles, tested. Intervals that hold no samples are
/// left out (they carry no latency to trend), and so are intervals whose histograms do not decode.
pub fn stationarity(results: &RunResults) -> Stationarity {
    let measured: Vec<&Interval> = results
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.response_time.count > 0)
        .collect();
    let mut groups = crate::compare_ci::Coalescer::new(measured.len(), MAX_POINTS);
    for iv in measured {
        if let Ok(rec) = iv.histograms.decode() {
            groups.push(rec.response);
        }
    }
    let groups = groups.finish();
    let series: Vec<(f64, Vec<f64>)> = TESTED_PERCENTILES
        .iter()
        .map(|&p| {
            let s = groups
                .iter()
                .filter(|h| !h.is_empty())
                .map(|h| candor_core::hist::value_at(h, p) as f64)
                .collect();
            (p, s)
        })
        .collect();
    assess(&series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207, erfc(1.959964/sqrt 2) = 0.05.
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(1.959_964 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
    }

    #[test]
    fn s_and_variance_are_exact_on_small_series() {
        // Strictly rising, n = 5: all 10 pairs rise; Var = 5*4*15/18 = 16.667.
        let mk = mann_kendall(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(mk.s, 10);
        assert!((mk.var_s - 300.0 / 18.0).abs() < 1e-12);
        // z = (10 - 1)/sqrt(16.667) = 2.2045; p = 0.0275.
        assert!((mk.z - 9.0 / (300.0f64 / 18.0).sqrt()).abs() < 1e-12);
        assert!((mk.p_value - 0.0275).abs() < 5e-4, "{}", mk.p_value);
        // Falling is the mirror image.
        let down = mann_kendall(&[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!(down.s, -10);
        assert!((down.z + mk.z).abs() < 1e-12);
    }

    #[test]
    fn ties_shrink_the_variance_and_count_zero() {
        // [1, 2, 2, 3]: pairs (1,2)+ (1,2)+ (1,3)+ (2,2)0 (2,3)+ (2,3)+ -> S = 5.
        // Var = (4*3*13 - 2*1*9)/18 = (156 - 18)/18 = 7.667.
        let mk = mann_kendall(&[1.0, 2.0, 2.0, 3.0]).unwrap();
        assert_eq!(mk.s, 5);
        assert!((mk.var_s - 138.0 / 18.0).abs() < 1e-12);
        // Constant: no variance, no test.
        assert_eq!(mann_kendall(&[7.0; 12]), None);
        assert_eq!(mann_kendall(&[1.0, 2.0]), None);
    }

    #[test]
    fn flat_series_is_steady() {
        let flat = vec![1_000_000.0; 30];
        let s = assess(&[(50.0, flat.clone()), (99.0, flat)]);
        assert_eq!(s.verdict, Steadiness::Steady);
        assert!(s.warnings.is_empty());
        assert_eq!(s.tests[0].p_value, 1.0);
    }

    #[test]
    fn rising_series_drifts_with_the_issue_wording() {
        // p99 rises linearly from 1.0 ms to 1.58 ms over 30 intervals: thirds' medians are
        // 1.09 ms (intervals 0..9, median of 1.00..1.18) and 1.49 ms (20..29): +36.7%.
        let rising: Vec<f64> = (0..30).map(|i| 1_000_000.0 + 20_000.0 * i as f64).collect();
        let flat = vec![500_000.0; 30];
        let s = assess(&[(50.0, flat), (99.0, rising)]);
        assert_eq!(s.verdict, Steadiness::Drifted);
        let t = &s.tests[1];
        assert_eq!(t.s, 435); // 30*29/2 pairs, all rising
        assert!(t.drifted && t.p_value < 1e-6);
        assert!((t.change_pct - 100.0 * 400_000.0 / 1_090_000.0).abs() < 1e-9);
        assert_eq!(
            s.warnings,
            vec![
                "p99 rose 37% from the first third to the last: the system was not in a steady \
                  state; a longer warm-up or a lower rate may be needed"
                    .to_string()
            ]
        );
        assert!(!s.tests[0].drifted);
    }

    #[test]
    fn noisy_flat_series_is_steady_and_a_small_trend_is_ignored() {
        // A fixed, patternless sequence around 1 ms (±5%): no trend.
        let noise = [
            3, -4, 1, 5, -2, -5, 0, 4, -1, 2, -3, 5, -4, 1, -2, 3, 0, -5, 2, -1,
        ];
        let noisy: Vec<f64> = noise
            .iter()
            .map(|&d| 1_000_000.0 * (1.0 + d as f64 / 100.0))
            .collect();
        let mk = mann_kendall(&noisy).unwrap();
        assert!(mk.p_value > 0.2, "{mk:?}");
        let s = assess(&[(50.0, noisy.clone())]);
        assert_eq!(s.verdict, Steadiness::Steady);
        // A significant but small rise (0.1% per interval: +2% over the run) is below the size
        // that matters.
        let creeping: Vec<f64> = (0..20).map(|i| 1_000_000.0 + 1_000.0 * i as f64).collect();
        let s = assess(&[(50.0, creeping)]);
        assert!(s.tests[0].p_value < ALPHA);
        assert_eq!(s.verdict, Steadiness::Steady);
    }

    #[test]
    fn a_falling_series_says_fell_and_few_intervals_are_not_tested() {
        let falling: Vec<f64> = (0..12)
            .map(|i| 2_000_000.0 - 100_000.0 * i as f64)
            .collect();
        let s = assess(&[(50.0, falling)]);
        assert_eq!(s.verdict, Steadiness::Drifted);
        assert!(s.warnings[0].starts_with("p50 fell "), "{:?}", s.warnings);
        let s = assess(&[(50.0, vec![1.0; 9])]);
        assert_eq!(s.verdict, Steadiness::TooFewIntervals);
        assert!(summary(&s).contains("9 measured intervals"));
    }
}
