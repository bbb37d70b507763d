//! When a run may end before its planned duration: every `--precision` target reached (the 95%
//! order-statistic interval of each named percentile within ±X% of its estimate), or an objective
//! that can no longer pass whatever the rest of the run does (`--abort-on-fail`). Pure decisions
//! over the measured window's interval data, so that they can be tested exactly.

use crate::confidence::{rank_interval, samples_needed, value_at_rank, Z95};
use crate::slo::{Metric, Objective};
use candor_core::hist::value_at;
use candor_core::results::PrecisionRow;
use candor_core::units::{format_count, format_ns};
use candor_core::{new_histogram, Histo, Recorder};

/// Measured intervals a precision decision needs at the least: one lucky second must not end a
/// run, and neighbouring requests are correlated, so the order-statistic interval of a very short
/// window understates the uncertainty most.
pub const MIN_PRECISION_INTERVALS: u64 = 3;

/// The finest half-width that can be asked for: the histograms keep 3 significant digits, so
/// values within 0.1% of each other are one bucket.
pub const FINEST_PRECISION: f64 = 0.001;

/// Consecutive seconds below a rate objective after which it counts as failed for good.
pub const RATE_GRACE_S: f64 = 5.0;

/// `p99=5%`: the 95% interval of p99 must lie within ±5% of the estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionTarget {
    /// 0 < percentile < 100.
    pub percentile: f64,
    /// Half-width as a fraction of the estimate (0.05 = ±5%).
    pub target: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid --precision '{text}': {why}; expected PERCENTILE=HALF-WIDTH% like p99=5%")]
pub struct PrecisionError {
    pub text: String,
    pub why: String,
}

impl PrecisionTarget {
    pub fn parse(text: &str) -> Result<PrecisionTarget, PrecisionError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let err = |why: String| PrecisionError {
            text: compact.clone(),
            why,
        };
        let (lhs, rhs) = compact
            .split_once('=')
            .ok_or_else(|| err("missing '=' between the percentile and the half-width".into()))?;
        let lower = lhs.to_ascii_lowercase();
        if lower == "max" || lower == "p100" {
            return Err(err(
                "the max has no upper confidence bound; name a percentile below 100".into(),
            ));
        }
        let p: f64 = lower
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| {
                err(format!(
                    "'{lhs}' is not a percentile (write p50, p99, p99.9...)"
                ))
            })?;
        if !(p > 0.0 && p < 100.0) {
            return Err(err(format!("percentile {p} is outside (0, 100)")));
        }
        let pct: f64 = rhs
            .strip_suffix('%')
            .ok_or_else(|| err(format!("the half-width is a percentage, like {lhs}=5%")))?
            .parse()
            .map_err(|_| err(format!("'{rhs}' is not a percentage")))?;
        if !pct.is_finite() || pct <= 0.0 {
            return Err(err(
                "the half-width must be more than 0% (no finite run can be exact)".into(),
            ));
        }
        if pct >= 100.0 {
            return Err(err("the half-width must be below 100%".into()));
        }
        if pct / 100.0 < FINEST_PRECISION {
            return Err(err(format!(
                "{pct}% is finer than the histograms' resolution ({}%)",
                FINEST_PRECISION * 100.0
            )));
        }
        Ok(PrecisionTarget {
            percentile: p,
            target: pct / 100.0,
        })
    }

    /// The text of the target, e.g. `p99=5%`.
    pub fn label(&self) -> String {
        format!("p{}={}%", self.percentile, self.target * 100.0)
    }

    /// How close the samples in `h` come to this target. Reached when the samples support the
    /// percentile (see [`samples_needed`]), the interval is bounded on both sides, and its
    /// farther bound is within the half-width of the estimate.
    pub fn row(&self, h: &Histo) -> PrecisionRow {
        let n = h.len();
        let q = self.percentile / 100.0;
        let estimate_ns = value_at(h, self.percentile);
        let (ci_low_ns, ci_high_ns) = match rank_interval(n, q, Z95) {
            Some((lo, hi)) => (value_at_rank(h, lo), hi.and_then(|r| value_at_rank(h, r))),
            None => (None, None),
        };
        let half_width = match (ci_low_ns, ci_high_ns) {
            (Some(lo), Some(hi)) if estimate_ns > 0 => {
                let below = estimate_ns.saturating_sub(lo);
                let above = hi.saturating_sub(estimate_ns);
                Some(below.max(above) as f64 / estimate_ns as f64)
            }
            _ => None,
        };
        PrecisionRow {
            percentile: self.percentile,
            target: self.target,
            samples: n,
            estimate_ns,
            ci_low_ns,
            ci_high_ns,
            half_width,
            reached: n >= samples_needed(q) && half_width.is_some_and(|w| w <= self.target),
        }
    }
}

/// One line per target: `p99=5%  estimate 1.23ms, 95% CI 1.20ms .. 1.27ms (±3.3%): reached`.
pub fn describe(row: &PrecisionRow) -> String {
    let label = format!("p{}=±{}%", row.percentile, row.target * 100.0);
    let ci = match (row.ci_low_ns, row.ci_high_ns) {
        (Some(lo), Some(hi)) => format!(
            "95% CI {} .. {}",
            format_ns(lo as f64),
            format_ns(hi as f64)
        ),
        _ => "95% CI not bounded by the samples".to_string(),
    };
    let width = row
        .half_width
        .map_or(String::new(), |w| format!(" (±{:.2}%)", w * 100.0));
    let need = samples_needed(row.percentile / 100.0);
    let verdict = if row.reached {
        "reached".to_string()
    } else if row.samples < need {
        format!(
            "not reached: {} samples of the ~{} p{} needs",
            format_count(row.samples),
            format_count(need),
            row.percentile
        )
    } else {
        "not reached".to_string()
    };
    format!(
        "{label:<12} estimate {}, {ci}{width}, {} samples: {verdict}",
        format_ns(row.estimate_ns as f64),
        format_count(row.samples)
    )
}

/// Accumulates the measured window's response times interval by interval and says when every
/// target is reached.
pub struct PrecisionWatch {
    targets: Vec<PrecisionTarget>,
    cumulative: Histo,
    intervals: u64,
}

impl PrecisionWatch {
    pub fn new(targets: Vec<PrecisionTarget>) -> PrecisionWatch {
        PrecisionWatch {
            targets,
            cumulative: new_histogram(),
            intervals: 0,
        }
    }

    /// Adds one measured interval's response times; true when every target is now reached
    /// (and at least [`MIN_PRECISION_INTERVALS`] intervals were seen).
    pub fn observe(&mut self, response: &Histo) -> bool {
        // Same layout on both sides: adding cannot fail.
        let _ = self.cumulative.add(response);
        self.intervals += 1;
        self.intervals >= MIN_PRECISION_INTERVALS
            && !self.targets.is_empty()
            && self.targets.iter().all(|t| t.row(&self.cumulative).reached)
    }

    /// Measured intervals seen so far.
    pub fn intervals(&self) -> u64 {
        self.intervals
    }

    /// Every target's row over the measured window so far.
    pub fn rows(&self) -> Vec<PrecisionRow> {
        self.targets
            .iter()
            .map(|t| t.row(&self.cumulative))
            .collect()
    }

    /// Progress toward the targets for the live line: see [`progress`].
    pub fn progress(&self) -> String {
        progress(&self.rows())
    }
}

/// Progress toward `--precision` targets for `candor run`'s live line, e.g.
/// `precision p50 ±0.41%/2% ✓  p99 6,000/10,000 samples`: per target the half-width reached
/// against the goal (`✓` once reached), or, while the samples cannot yet support the
/// percentile, how many there are of the number it needs; `±?` while the interval is unbounded.
pub fn progress(rows: &[PrecisionRow]) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            let p = format!("p{}", crate::omission::trim_pct(r.percentile));
            let goal = format!("{}%", crate::omission::trim_pct(r.target * 100.0));
            let need = samples_needed(r.percentile / 100.0);
            if r.samples < need {
                return format!(
                    "{p} {}/{} samples",
                    format_count(r.samples),
                    format_count(need)
                );
            }
            let width = r
                .half_width
                .map_or("±?".to_string(), |w| format!("±{:.2}%", w * 100.0));
            let mark = if r.reached { " ✓" } else { "" };
            format!("{p} {width}/{goal}{mark}")
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("precision {}", parts.join("  "))
    }
}

/// What bounds the rest of the run, for deciding that an objective can no longer pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunBounds {
    /// The target rate (`None`: closed loop).
    pub target_per_s: Option<f64>,
    /// The most requests the measured window can intend (`None`: unbounded, a closed loop). Each
    /// intended request records at most one response, so it bounds the samples too.
    pub max_intended: Option<u64>,
}

/// One measured interval, as the objectives watch it.
pub struct IntervalObs<'a> {
    /// Seconds from the first intended send (warm-up included) to the interval's end.
    pub end_s: f64,
    pub length_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub rec: &'a Recorder,
}

/// An objective that can no longer pass, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct AbortVerdict {
    pub objective: String,
    /// Seconds from the first intended send (warm-up included): the end of the interval that
    /// decided it.
    pub at_s: f64,
    pub reason: String,
}

/// Watches the objectives interval by interval (`--abort-on-fail`).
pub struct AbortWatch {
    objectives: Vec<Objective>,
    bounds: RunBounds,
    failed: u64,
    cumulative: Recorder,
    /// Per objective: consecutive seconds below a rate objective.
    below_s: Vec<f64>,
}

impl AbortWatch {
    pub fn new(objectives: Vec<Objective>, bounds: RunBounds) -> AbortWatch {
        let below_s = vec![0.0; objectives.len()];
        AbortWatch {
            objectives,
            bounds,
            failed: 0,
            cumulative: Recorder::new(),
            below_s,
        }
    }

    /// Adds one measured interval; the first objective that can no longer pass, if any.
    pub fn observe(&mut self, obs: &IntervalObs<'_>) -> Option<AbortVerdict> {
        self.failed += obs.failed;
        self.cumulative.add(obs.rec);
        for i in 0..self.objectives.len() {
            let o = &self.objectives[i];
            let reason = match o.metric {
                Metric::Errors => self.errors_spent(o),
                Metric::Rate => {
                    let Some(target) = self.bounds.target_per_s.filter(|t| *t > 0.0) else {
                        continue;
                    };
                    if obs.length_s <= 0.0 {
                        continue;
                    }
                    let rate = obs.completed as f64 / obs.length_s;
                    if o.holds(rate / target) {
                        self.below_s[i] = 0.0;
                        None
                    } else {
                        self.below_s[i] += obs.length_s;
                        // Interval lengths are sums of floats; a hair short of 5 s is 5 s.
                        (self.below_s[i] >= RATE_GRACE_S - 1e-6).then(|| {
                            format!(
                                "the completion rate was below {} of the target {:.1}/s for {:.1} consecutive seconds \
                                 (last: {:.1}/s)",
                                o.limit_text(),
                                target,
                                self.below_s[i],
                                rate
                            )
                        })
                    }
                }
                Metric::Max | Metric::Mean | Metric::Percentile(_) => self.latency_broken(o),
                // Intervals carry no per-request goodput verdicts: judged at the end only.
                Metric::Goodput => None,
            };
            if let Some(reason) = reason {
                return Some(AbortVerdict {
                    objective: o.text.clone(),
                    at_s: obs.end_s,
                    reason,
                });
            }
        }
        None
    }

    /// Errors are failed plus unfinished per intended. Failures so far only grow, and intended
    /// is at most `max_intended`, so once the failures reach the limit times that bound the
    /// final fraction is at least the limit whatever happens next.
    fn errors_spent(&self, o: &Objective) -> Option<String> {
        let most = self.bounds.max_intended?;
        if self.failed == 0 || most == 0 {
            return None;
        }
        let floor = self.failed as f64 / most as f64;
        (!o.holds(floor)).then(|| {
            format!(
                "the error budget is spent: {} requests failed, and even all of at most {} intended would leave \
                 errors at {:.3}% or more",
                format_count(self.failed),
                format_count(most),
                floor * 100.0
            )
        })
    }

    /// A latency bound the recorded samples already break for the whole run.
    fn latency_broken(&self, o: &Objective) -> Option<String> {
        // The stream measures are not in the interval histograms: judged after the run only.
        let h = o.measure.of(&self.cumulative)?;
        if h.is_empty() {
            return None;
        }
        let name = o.measure.name();
        match o.metric {
            Metric::Max => {
                // Every value of a bucket reads as its highest equivalent, so a bucket whose
                // lowest value breaks the limit breaks it for certain.
                let worst = h.lowest_equivalent(h.max());
                (!o.holds(worst as f64)).then(|| {
                    format!(
                        "a {name} of {} was recorded: the max can only grow",
                        format_ns(h.max() as f64)
                    )
                })
            }
            Metric::Mean => {
                let most = self.bounds.max_intended?;
                let sum = h.mean() * h.len() as f64;
                let floor = sum / most as f64;
                (!o.holds(floor)).then(|| {
                    format!(
                        "the {name} recorded so far already sum to a mean of {} over all of at most {} requests",
                        format_ns(floor),
                        format_count(most)
                    )
                })
            }
            Metric::Percentile(p) => {
                let most = self.bounds.max_intended?;
                let breaking = breaking_count(h, o);
                // The final pNN is the sample of rank r = ceil(q N); with `breaking` samples past
                // the limit, at most N - breaking lie below it, so the rank-r sample breaks the
                // limit when breaking > N - r. N - r grows with N, so N = `most` is the worst case.
                let rank = ((p / 100.0 * most as f64).ceil() as u64).max(1);
                (breaking > most.saturating_sub(rank)).then(|| {
                    format!(
                        "{} {name} values already break {}: more than the {} that p{p} of at most {} requests can leave above it",
                        format_count(breaking),
                        o.limit_text(),
                        format_count(most.saturating_sub(rank)),
                        format_count(most)
                    )
                })
            }
            Metric::Errors | Metric::Rate | Metric::Goodput => None,
        }
    }
}

/// Samples in `h` that break the latency limit of `o` for certain: those in buckets whose lowest
/// value already breaks it.
fn breaking_count(h: &Histo, o: &Objective) -> u64 {
    h.iter_recorded()
        .filter(|v| !o.holds(h.lowest_equivalent(v.value_iterated_to()) as f64))
        .map(|v| v.count_at_value())
        .sum()
}

/// The most requests a measured window of `duration_s` at `rate` can intend, over `streams`
/// independent schedules (threads times shards): each constant stream may round up by one; a
/// Poisson total is bounded at its mean plus 7 standard deviations (exceeded with probability
/// below 1e-11).
pub fn max_intended(rate: f64, duration_s: f64, streams: u64, poisson: bool) -> u64 {
    let mean = (rate * duration_s).max(0.0);
    let spread = if poisson {
        7.0 * mean.sqrt() + 1.0
    } else {
        0.0
    };
    (mean + spread).ceil() as u64 + streams
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slo::SloSet;

    #[test]
    fn precision_targets_parse_and_bad_ones_say_why() {
        let t = PrecisionTarget::parse("p99=5%").unwrap();
        assert_eq!((t.percentile, t.target), (99.0, 0.05));
        let t = PrecisionTarget::parse(" P99.9 = 2.5% ").unwrap();
        assert_eq!((t.percentile, t.target), (99.9, 0.025));
        assert_eq!(t.label(), "p99.9=2.5%");
        for (text, want) in [
            ("p101=5%", "outside (0, 100)"),
            ("p0=5%", "outside (0, 100)"),
            ("p99=0%", "more than 0%"),
            ("p99=-1%", "more than 0%"),
            ("p99=5", "is a percentage"),
            ("p99=abc%", "not a percentage"),
            ("p99=100%", "below 100%"),
            ("p99=0.01%", "resolution"),
            ("p99", "missing '='"),
            ("max=5%", "no upper confidence bound"),
            ("q99=5%", "not a percentile"),
            ("pnan=5%", "not a percentile"),
        ] {
            let e = PrecisionTarget::parse(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.starts_with("invalid --precision"), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    fn uniform(n: u64, lo: u64, step: u64) -> Histo {
        let mut h = new_histogram();
        for i in 0..n {
            h.record(lo + i * step).unwrap();
        }
        h
    }

    #[test]
    fn the_precision_row_is_the_order_statistic_interval() {
        // 10,000 values 1,000,000 + 100 i ns (1.0 ms .. 2.0 ms): p50 is the 5,000th value, about
        // 1.5 ms; its ranks 4,902 .. 5,099 (n q ± 1.96 sqrt(n q (1-q)) = 5,000 ± 98) sit 9.8 us
        // from it: ±0.65%, well inside 5% and outside 0.5%.
        let h = uniform(10_000, 1_000_000, 100);
        let row = PrecisionTarget::parse("p50=5%").unwrap().row(&h);
        assert_eq!(row.samples, 10_000);
        assert!(row.reached, "{row:?}");
        let w = row.half_width.unwrap();
        assert!((0.005..0.008).contains(&w), "{w}");
        assert!(
            row.ci_low_ns.unwrap() < row.estimate_ns && row.estimate_ns < row.ci_high_ns.unwrap()
        );
        assert!(!PrecisionTarget::parse("p50=0.5%").unwrap().row(&h).reached);
        // p99.9 needs ~100,000 samples: not reached with 10,000 however narrow.
        let row = PrecisionTarget::parse("p99.9=50%").unwrap().row(&h);
        assert!(!row.reached);
        assert!(
            describe(&row).contains("not reached: 10,000 samples of the ~100,000"),
            "{}",
            describe(&row)
        );
        // Beyond the data: no upper bound, no half-width.
        let row = PrecisionTarget::parse("p99.99=50%")
            .unwrap()
            .row(&uniform(100, 1_000, 1));
        assert_eq!(
            (row.ci_high_ns, row.half_width, row.reached),
            (None, None, false)
        );
        assert!(describe(&row).contains("not bounded"));
    }

    #[test]
    fn the_watch_needs_every_target_and_three_intervals() {
        let second = uniform(5_000, 1_000_000, 200);
        let mut w = PrecisionWatch::new(vec![
            PrecisionTarget::parse("p50=5%").unwrap(),
            PrecisionTarget::parse("p99=5%").unwrap(),
        ]);
        // p50 is precise at once; p99 needs 10,000 samples: the third interval (15,000) decides.
        assert!(!w.observe(&second));
        assert!(!w.observe(&second));
        assert!(w.observe(&second));
        assert_eq!(w.intervals(), 3);
        // A single target, reachable after one interval, still waits for the third.
        let mut w = PrecisionWatch::new(vec![PrecisionTarget::parse("p50=5%").unwrap()]);
        assert!(!w.observe(&second) && !w.observe(&second) && w.observe(&second));
        // A target finer than the interval: p99 of 15,000 values spaced 10 us apart (three of
        // each) has ranks 14,850 ± 24, i.e. ±8 values or ±80 us around 49.5 ms: ±0.16%, so ±0.1%
        // is not reached and ±0.2% is.
        let spread = uniform(5_000, 1_000, 10_000);
        let mut fine = PrecisionWatch::new(vec![PrecisionTarget::parse("p99=0.1%").unwrap()]);
        let mut coarse = PrecisionWatch::new(vec![PrecisionTarget::parse("p99=0.2%").unwrap()]);
        assert!((0..3).all(|_| !fine.observe(&spread)));
        assert!(!coarse.observe(&spread) && !coarse.observe(&spread) && coarse.observe(&spread));
    }

    #[test]
    fn progress_shows_each_half_width_against_its_goal() {
        let row = |percentile: f64, target: f64, samples: u64, half_width, reached| PrecisionRow {
            percentile,
            target,
            samples,
            estimate_ns: 1_000_000,
            ci_low_ns: None,
            ci_high_ns: None,
            half_width,
            reached,
        };
        assert_eq!(progress(&[]), "");
        assert_eq!(
            progress(&[
                row(50.0, 0.02, 5_000, Some(0.0041), true),
                row(99.0, 0.05, 6_000, None, false),
                row(99.0, 0.05, 20_000, Some(0.0723), false),
                row(99.9, 0.1, 200_000, None, false),
            ]),
            "precision p50 ±0.41%/2% ✓  p99 6,000/10,000 samples  p99 ±7.23%/5%  p99.9 ±?/10%"
        );
        // The watch's own rows: p99 lacks samples after one interval of 5,000; all reached
        // once the watch says so.
        let second = uniform(5_000, 1_000_000, 200);
        let mut w = PrecisionWatch::new(vec![
            PrecisionTarget::parse("p50=5%").unwrap(),
            PrecisionTarget::parse("p99=5%").unwrap(),
        ]);
        assert_eq!(
            w.progress(),
            "precision p50 0/200 samples  p99 0/10,000 samples"
        );
        w.observe(&second);
        let text = w.progress();
        assert!(text.starts_with("precision p50 ±"), "{text}");
        assert!(text.ends_with("/5% ✓  p99 5,000/10,000 samples"), "{text}");
        while !w.observe(&second) {}
        assert_eq!(w.progress().matches(" ✓").count(), 2, "{}", w.progress());
    }

    fn rec_of(response_ns: &[u64], lag_ns: u64) -> Recorder {
        let mut r = Recorder::new();
        for &v in response_ns {
            r.record(v, v, lag_ns);
        }
        r
    }

    fn watch(slo: &str, bounds: RunBounds) -> AbortWatch {
        AbortWatch::new(SloSet::parse(slo).unwrap().objectives, bounds)
    }

    const OPEN: RunBounds = RunBounds {
        target_per_s: Some(1_000.0),
        max_intended: Some(10_000),
    };

    fn second(end_s: f64, completed: u64, failed: u64, rec: &Recorder) -> IntervalObs<'_> {
        IntervalObs {
            end_s,
            length_s: 1.0,
            completed,
            failed,
            rec,
        }
    }

    #[test]
    fn the_error_budget_is_spent_exactly_at_the_limit_of_the_most_intended() {
        let quiet = rec_of(&[1_000], 0);
        // errors<1% of at most 10,000: 100 failures make 1% at best, which is not below 1%.
        let mut w = watch("errors<1%", OPEN);
        assert_eq!(w.observe(&second(1.0, 900, 99, &quiet)), None);
        let v = w.observe(&second(2.0, 999, 1, &quiet)).unwrap();
        assert_eq!(v.objective, "errors<1%");
        assert_eq!(v.at_s, 2.0);
        assert!(v.reason.contains("100 requests failed"), "{}", v.reason);
        // errors<=1% still could pass with exactly 100; 101 cannot.
        let mut w = watch("errors<=1%", OPEN);
        assert_eq!(w.observe(&second(1.0, 900, 100, &quiet)), None);
        assert!(w.observe(&second(2.0, 900, 1, &quiet)).is_some());
        // A closed loop has no bound on intended: never certain.
        let mut w = watch(
            "errors<1%",
            RunBounds {
                target_per_s: None,
                max_intended: None,
            },
        );
        assert_eq!(w.observe(&second(1.0, 0, 1_000_000, &quiet)), None);
    }

    #[test]
    fn the_rate_must_stay_low_for_five_consecutive_seconds() {
        let r = rec_of(&[1_000], 0);
        let mut w = watch("rate>=95%", OPEN);
        // 4 s low, one good second resets the count, then 5 s low: the fifth decides.
        for s in 1..=4 {
            assert_eq!(w.observe(&second(s as f64, 900, 0, &r)), None);
        }
        assert_eq!(
            w.observe(&second(5.0, 950, 0, &r)),
            None,
            "950/s is 95%: met"
        );
        for s in 6..=9 {
            assert_eq!(w.observe(&second(s as f64, 949, 0, &r)), None);
        }
        let v = w.observe(&second(10.0, 0, 0, &r)).unwrap();
        assert_eq!((v.objective.as_str(), v.at_s), ("rate>=95%", 10.0));
        assert!(v.reason.contains("5.0 consecutive seconds"), "{}", v.reason);
        // Closed loop: no target, no rate judgement.
        let mut w = watch(
            "rate>=95%",
            RunBounds {
                target_per_s: None,
                max_intended: None,
            },
        );
        assert!((0..10).all(|s| w.observe(&second(s as f64, 0, 0, &r)).is_none()));
    }

    #[test]
    fn a_latency_bound_breaks_only_when_the_rest_of_the_run_cannot_repair_it() {
        const MS: u64 = 1_000_000;
        // p99<10ms with at most 10,000 requests: rank 9,900, so 100 samples may lie above; the
        // 101st breaking sample decides. Values of 20 ms are far from the bucket edge.
        let bounds = OPEN;
        let mut w = watch("p99<10ms", bounds);
        let slow_100 = rec_of(&vec![20 * MS; 100], 0);
        let slow_1 = rec_of(&[20 * MS], 0);
        let fast = rec_of(&vec![MS; 1_000], 0);
        assert_eq!(w.observe(&second(1.0, 1_000, 0, &fast)), None);
        assert_eq!(w.observe(&second(2.0, 100, 0, &slow_100)), None);
        let v = w.observe(&second(3.0, 1, 0, &slow_1)).unwrap();
        assert!(
            v.reason.contains("101 response time values"),
            "{}",
            v.reason
        );
        // The max breaks with one sample; at the limit itself `<` breaks and `<=` does not.
        let mut w = watch("max<15ms", bounds);
        assert!(w.observe(&second(1.0, 1, 0, &slow_1)).is_some());
        let exact = rec_of(&[8_192], 0); // exact in the histogram (below 2^14 at 3 digits)
        assert!(watch("max<=8192ns", bounds)
            .observe(&second(1.0, 1, 0, &exact))
            .is_none());
        assert!(watch("max<8192ns", bounds)
            .observe(&second(1.0, 1, 0, &exact))
            .is_some());
        // Other measures: send lag of 2 ms breaks send_lag.max<1ms and nothing on response time.
        let lagged = rec_of(&[MS], 2 * MS);
        let mut w = watch("max<1s,send_lag.max<1ms", bounds);
        let v = w.observe(&second(1.0, 1, 0, &lagged)).unwrap();
        assert_eq!(v.objective, "send_lag.max<1ms");
        assert!(v.reason.contains("send lag"), "{}", v.reason);
        // The mean: 10,000 x at most... 100 samples of 20 ms sum to 2 s: a mean of 0.2 ms over
        // 10,000 at the least; mean<0.1ms is broken, mean<1ms is not.
        assert!(watch("mean<0.1ms", bounds)
            .observe(&second(1.0, 100, 0, &slow_100))
            .is_some());
        assert!(watch("mean<1ms", bounds)
            .observe(&second(1.0, 100, 0, &slow_100))
            .is_none());
        // Without a bound on the requests (closed loop), percentiles and means are never certain.
        let open_ended = RunBounds {
            target_per_s: None,
            max_intended: None,
        };
        let mut w = watch("p99<10ms,mean<1us", open_ended);
        assert!(w.observe(&second(1.0, 100, 0, &slow_100)).is_none());
    }

    #[test]
    fn the_most_intended_bounds_the_schedule() {
        assert_eq!(max_intended(1_000.0, 10.0, 2, false), 10_002);
        // Poisson: 10,000 + 7 * 100 + 1.
        assert_eq!(max_intended(1_000.0, 10.0, 2, true), 10_703);
    }
}
