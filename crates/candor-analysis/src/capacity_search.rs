//! The capacity search: the highest request rate whose measurement passes (SLOs met, every
//! request served), found by bracketing (doubling from the minimum) then bisecting, with repeated
//! confirmation runs at the answer. Written over any `FnMut(rate) -> Trial` so it can be tested
//! without a network.

use serde::{Deserialize, Serialize};

/// Why a rate was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Bracket,
    Bisect,
    Confirm,
}

impl Purpose {
    pub fn name(self) -> &'static str {
        match self {
            Purpose::Bracket => "bracket",
            Purpose::Bisect => "bisect",
            Purpose::Confirm => "confirm",
        }
    }
}

/// The outcome of measuring one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub pass: bool,
    /// Evidence shown in the table (percentiles, achieved rate, the failed objective...).
    pub note: String,
}

/// One measurement of the search, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub rate: f64,
    pub purpose: Purpose,
    pub pass: bool,
    pub note: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// Lowest and highest rates to try.
    pub min: f64,
    pub max: f64,
    /// Stop bisecting when `fail / pass − 1 <= tolerance` (relative width of the bracket).
    pub tolerance: f64,
    /// Extra passing runs required at the answer.
    pub confirmations: u32,
    /// Upper bound on measurements (the search stops and says so).
    pub max_steps: u32,
    /// Factor between bracketing steps.
    pub growth: f64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            min: 100.0,
            max: 1_000_000.0,
            tolerance: 0.05,
            confirmations: 2,
            max_steps: 20,
            growth: 2.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    #[error("--min must be positive and below --max (got {min} and {max})")]
    Range { min: f64, max: f64 },
    #[error("the tolerance must be between 0.1% and 100% (got {0})")]
    Tolerance(f64),
    #[error("the step limit ({0}) is too small for a search: at least 3")]
    Steps(u32),
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// `capacity` passed every run (1 + confirmations); `failed_at` is the lowest rate above it
    /// that failed, so the true capacity lies in [capacity, failed_at).
    Found { capacity: f64, failed_at: f64 },
    /// Even the minimum failed.
    BelowMin { min: f64 },
    /// The maximum passed every run: capacity is at least that.
    AtLeastMax { max: f64 },
    /// The step limit ended the search; `best` is the highest confirmed pass, if any, and
    /// `unconfirmed` the highest rate above it that passed every run it had, too few to count.
    StepLimit {
        best: Option<f64>,
        failed_at: Option<f64>,
        #[serde(default)]
        unconfirmed: Option<f64>,
    },
    /// A signal ended the search (the step it cut short is no evidence and is not listed); the
    /// fields are those of [`Outcome::StepLimit`] over the steps judged before it.
    Interrupted {
        best: Option<f64>,
        failed_at: Option<f64>,
        unconfirmed: Option<f64>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub settings: SearchSettings,
    pub probes: Vec<Probe>,
    pub outcome: Outcome,
}

impl SearchSettings {
    pub fn validate(&self) -> Result<(), SearchError> {
        if !(self.min > 0.0 && self.min.is_finite() && self.max.is_finite() && self.min < self.max)
        {
            return Err(SearchError::Range {
                min: self.min,
                max: self.max,
            });
        }
        if !(0.001..=1.0).contains(&self.tolerance) {
            return Err(SearchError::Tolerance(self.tolerance));
        }
        if self.max_steps < 3 {
            return Err(SearchError::Steps(self.max_steps));
        }
        Ok(())
    }
}

struct State<'a, E> {
    probes: Vec<Probe>,
    measure: &'a mut dyn FnMut(f64, Purpose) -> Result<Option<Trial>, E>,
    max_steps: u32,
    stopped: &'a dyn Fn() -> bool,
    interrupted: bool,
}

impl<E> State<'_, E> {
    /// The verdict of one more step; `None` when the search ends here (the step limit, or a stop).
    fn run(&mut self, rate: f64, purpose: Purpose) -> Result<Option<bool>, E> {
        if self.probes.len() as u32 >= self.max_steps || self.stop_seen() {
            return Ok(None);
        }
        // A step a stop cut short is no evidence either way.
        let Some(t) = (self.measure)(rate, purpose)? else {
            self.interrupted = true;
            return Ok(None);
        };
        self.probes.push(Probe {
            rate,
            purpose,
            pass: t.pass,
            note: t.note,
        });
        Ok(Some(t.pass))
    }

    /// Passing and failing runs at exactly `rate`.
    fn record(&self, rate: f64) -> (u32, u32) {
        self.probes
            .iter()
            .filter(|p| p.rate == rate)
            .fold((0, 0), |(ok, bad), p| {
                (ok + p.pass as u32, bad + !p.pass as u32)
            })
    }

    fn stop_seen(&mut self) -> bool {
        self.interrupted |= (self.stopped)();
        self.interrupted
    }

    /// Highest rate below `limit` that never failed.
    fn best_pass_below(&self, limit: f64) -> Option<f64> {
        self.probes
            .iter()
            .filter(|p| p.pass && p.rate < limit && self.record(p.rate).1 == 0)
            .map(|p| p.rate)
            .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))))
    }
}

/// Runs the search, calling `measure(rate, purpose)` for each step (errors abort it).
pub fn search<E>(
    settings: SearchSettings,
    measure: &mut dyn FnMut(f64, Purpose) -> Result<Trial, E>,
) -> Result<Search, E> {
    search_until(settings, &mut |r, p| measure(r, p).map(Some), &|| false)
}

/// [`search`] that can be interrupted: it ends with [`Outcome::Interrupted`], keeping the steps
/// judged before, once `stopped` says so before a step or `measure` answers `None` (a step a stop
/// cut short: it proves nothing and is dropped).
pub fn search_until<E>(
    settings: SearchSettings,
    measure: &mut dyn FnMut(f64, Purpose) -> Result<Option<Trial>, E>,
    stopped: &dyn Fn() -> bool,
) -> Result<Search, E> {
    let mut st = State {
        probes: Vec::new(),
        measure,
        max_steps: settings.max_steps,
        stopped,
        interrupted: false,
    };
    let outcome = run_search(&settings, &mut st)?;
    Ok(Search {
        settings,
        probes: st.probes,
        outcome,
    })
}

fn round_rate(r: f64) -> f64 {
    // Whole requests per second keep the table readable and the comparisons exact.
    r.round().max(1.0)
}

fn run_search<E>(s: &SearchSettings, st: &mut State<'_, E>) -> Result<Outcome, E> {
    let limit = |st: &State<'_, E>, hi: Option<f64>| {
        let best = confirmed_best(st, s);
        // The highest pass seen, when it is more than the confirmed one: worth reporting, marked
        // as not confirmed (a settled search would have repeated it).
        let unconfirmed = st
            .best_pass_below(f64::INFINITY)
            .filter(|&u| !matches!(best, Some(b) if u <= b));
        Ok(if st.interrupted {
            Outcome::Interrupted {
                best,
                failed_at: hi,
                unconfirmed,
            }
        } else {
            Outcome::StepLimit {
                best,
                failed_at: hi,
                unconfirmed,
            }
        })
    };
    // Bracket: grow from the minimum until a rate fails or the maximum passes.
    let mut lo: Option<f64> = None;
    let mut hi: Option<f64> = None;
    let mut r = round_rate(s.min);
    loop {
        match st.run(r, Purpose::Bracket)? {
            None => return limit(st, hi),
            Some(true) => {
                lo = Some(r);
                if r >= s.max {
                    break;
                }
                r = round_rate((r * s.growth).min(s.max));
            }
            Some(false) => {
                hi = Some(r);
                break;
            }
        }
    }
    loop {
        let Some(l) = lo else {
            // Nothing below the failure has passed: walk down towards the minimum.
            let h = hi.unwrap_or(s.max);
            if h <= round_rate(s.min) {
                return Ok(Outcome::BelowMin { min: s.min });
            }
            let r = round_rate((h / s.growth).max(s.min));
            match st.run(r, Purpose::Bracket)? {
                None => return limit(st, hi),
                Some(true) => lo = Some(r),
                Some(false) => hi = Some(r),
            }
            continue;
        };
        if let Some(h) = hi {
            let mid = round_rate((l + h) / 2.0);
            if h / l - 1.0 > s.tolerance && mid > l && mid < h {
                match st.run(mid, Purpose::Bisect)? {
                    None => return limit(st, hi),
                    Some(true) => lo = Some(mid),
                    Some(false) => hi = Some(mid),
                }
                continue;
            }
        }
        // Narrow enough (or at the maximum): confirm `l` with repeated runs.
        let (ok, bad) = st.record(l);
        if bad == 0 && ok > s.confirmations {
            return Ok(match hi {
                Some(h) => Outcome::Found {
                    capacity: l,
                    failed_at: h,
                },
                None => Outcome::AtLeastMax { max: l },
            });
        }
        match st.run(l, Purpose::Confirm)? {
            None => return limit(st, hi),
            Some(true) => {}
            Some(false) => {
                // A pass that does not repeat is not capacity: it becomes the upper bound.
                hi = Some(l);
                lo = st.best_pass_below(l);
            }
        }
    }
}

fn confirmed_best<E>(st: &State<'_, E>, s: &SearchSettings) -> Option<f64> {
    st.probes
        .iter()
        .map(|p| p.rate)
        .filter(|&r| {
            let (ok, bad) = st.record(r);
            bad == 0 && ok > s.confirmations
        })
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))))
}

/// Pass when every objective holds, every request was served (unless an errors objective sets
/// the budget) and the offered rate was actually achieved.
pub fn judge(
    results: &candor_core::results::RunResults,
    slo: &crate::slo::SloSet,
    rate: f64,
) -> Trial {
    let verdicts = slo.evaluate(results);
    let m = &results.main;
    let r = &m.requests;
    let mut reasons: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.pass)
        .map(|v| format!("{} missed", v.objective))
        .collect();
    if !slo.limits_errors() && (r.failed > 0 || r.in_flight_at_end > 0) {
        reasons.push(format!(
            "{} failed, {} unfinished",
            candor_core::units::format_count(r.failed),
            candor_core::units::format_count(r.in_flight_at_end)
        ));
    }
    let done = crate::saturation::throughput(results).unwrap_or(m.rate.achieved_per_s);
    if candor_core::thresholds::fell_behind(done, rate) {
        reasons.push(format!(
            "throughput only {}",
            candor_core::units::format_rate(done)
        ));
    }
    let at = |p: f64| candor_core::units::format_ns(m.response_time.at(p).unwrap_or(0) as f64);
    let mut note = format!(
        "p50 {} p99 {} p99.9 {} max {}, throughput {}",
        at(50.0),
        at(99.0),
        at(99.9),
        candor_core::units::format_ns(m.response_time.max_ns as f64),
        candor_core::units::format_rate(done)
    );
    if let Some(llm) = crate::llm_step::LlmStep::of(rate, results) {
        note.push_str(&llm.suffix());
    }
    if !reasons.is_empty() {
        note.push_str(&format!(" ({})", reasons.join("; ")));
    }
    Trial {
        pass: reasons.is_empty(),
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn settings() -> SearchSettings {
        SearchSettings {
            min: 500.0,
            max: 64_000.0,
            tolerance: 0.05,
            confirmations: 2,
            max_steps: 20,
            growth: 2.0,
        }
    }

    fn threshold(k: f64) -> impl FnMut(f64, Purpose) -> Result<Trial, Infallible> {
        move |r, _| {
            Ok(Trial {
                pass: r <= k,
                note: String::new(),
            })
        }
    }

    #[test]
    fn finds_a_sharp_capacity_within_tolerance_in_few_steps() {
        for k in [600.0, 3_900.0, 4_000.0, 17_321.0, 50_000.0] {
            let s = search(settings(), &mut threshold(k)).unwrap();
            match s.outcome {
                Outcome::Found {
                    capacity,
                    failed_at,
                } => {
                    assert!(
                        capacity <= k && failed_at > k,
                        "k {k}: {capacity} {failed_at}"
                    );
                    assert!(failed_at / capacity - 1.0 <= 0.05 + 1e-9, "k {k}");
                    assert!(capacity >= k / 1.05, "k {k}: {capacity}");
                }
                o => panic!("k {k}: {o:?}"),
            }
            // Bracket (<= 8 doublings from 500 to 64k) + bisect (<= 5 halvings of a 2x bracket
            // to 5%) + 2 confirmations.
            assert!(s.probes.len() <= 15, "k {k}: {} steps", s.probes.len());
            let confirms = s
                .probes
                .iter()
                .filter(|p| p.purpose == Purpose::Confirm)
                .count();
            assert_eq!(confirms, 2);
        }
    }

    #[test]
    fn a_flaky_pass_near_the_boundary_is_not_taken_as_capacity() {
        // Rates within 4% below K = 4,000 pass the first time and fail the second.
        let mut seen = std::collections::HashMap::new();
        let mut measure = |r: f64, _| -> Result<Trial, Infallible> {
            let n = seen.entry(r as u64).or_insert(0);
            *n += 1;
            let pass = r <= 4_000.0 && (r < 3_840.0 || *n == 1);
            Ok(Trial {
                pass,
                note: String::new(),
            })
        };
        let s = search(settings(), &mut measure).unwrap();
        match s.outcome {
            Outcome::Found { capacity, .. } => {
                assert!((3_840.0 / 1.1..3_840.0).contains(&capacity), "{capacity}")
            }
            o => panic!("{o:?}"),
        }
        assert!(s
            .probes
            .iter()
            .any(|p| p.purpose == Purpose::Confirm && !p.pass));
    }

    #[test]
    fn below_min_at_least_max_and_step_limit() {
        let s = search(settings(), &mut threshold(100.0)).unwrap();
        assert_eq!(s.outcome, Outcome::BelowMin { min: 500.0 });
        assert_eq!(s.probes.len(), 1);
        let s = search(settings(), &mut threshold(1e9)).unwrap();
        assert_eq!(s.outcome, Outcome::AtLeastMax { max: 64_000.0 });
        let mut few = settings();
        few.max_steps = 5;
        let s = search(few, &mut threshold(3_000.0)).unwrap();
        assert!(
            matches!(s.outcome, Outcome::StepLimit { .. }),
            "{:?}",
            s.outcome
        );
        assert_eq!(s.probes.len(), 5);
    }

    #[test]
    fn a_pass_the_step_limit_left_unconfirmed_is_reported_as_such() {
        // 500, 1k, 1.5k and 1.62k passed once each; nothing was confirmed before the limit.
        let mut few = settings();
        few.max_steps = 4;
        few.max = 1_620.0;
        let s = search(few, &mut threshold(1e9)).unwrap();
        assert_eq!(
            s.outcome,
            Outcome::StepLimit {
                best: None,
                failed_at: None,
                unconfirmed: Some(1_620.0)
            }
        );
        // A confirmed pass below it stays the best; the unconfirmed one is only ever above it.
        let mut few = settings();
        few.max_steps = 9;
        let s = search(few, &mut threshold(3_000.0)).unwrap();
        match s.outcome {
            Outcome::StepLimit {
                best, unconfirmed, ..
            } => {
                if let (Some(b), Some(u)) = (best, unconfirmed) {
                    assert!(u > b, "{b} {u}");
                }
                assert!(unconfirmed.or(best).is_some_and(|r| r <= 3_000.0));
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn a_stop_ends_the_search_with_the_steps_judged_before_it() {
        let steps = std::cell::Cell::new(0);
        // The stop cuts the third step short: two steps judged, the third dropped.
        let mut measure = |r: f64, _| -> Result<Option<Trial>, Infallible> {
            steps.set(steps.get() + 1);
            Ok((steps.get() < 3).then(|| Trial {
                pass: r <= 3_000.0,
                note: String::new(),
            }))
        };
        let s = search_until(settings(), &mut measure, &|| false).unwrap();
        assert_eq!(steps.get(), 3);
        assert_eq!(s.probes.len(), 2);
        assert_eq!(
            s.outcome,
            Outcome::Interrupted {
                best: None,
                failed_at: None,
                unconfirmed: Some(1_000.0)
            }
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["outcome"]["kind"], "interrupted");
        // A stop seen between steps starts no other: the steps judged so far are kept whole.
        steps.set(0);
        let mut whole = |r: f64, _| -> Result<Option<Trial>, Infallible> {
            steps.set(steps.get() + 1);
            Ok(Some(Trial {
                pass: r <= 3_000.0,
                note: String::new(),
            }))
        };
        let s = search_until(settings(), &mut whole, &|| steps.get() >= 2).unwrap();
        assert_eq!(s.probes.len(), 2);
        assert!(matches!(s.outcome, Outcome::Interrupted { .. }));
    }

    #[test]
    fn errors_abort_and_settings_are_checked() {
        let mut failing = |_r: f64, _p| -> Result<Trial, String> { Err("boom".into()) };
        assert_eq!(search(settings(), &mut failing).unwrap_err(), "boom");
        let mut bad = settings();
        bad.min = 0.0;
        assert!(bad.validate().is_err());
        bad = settings();
        bad.tolerance = 0.0;
        assert!(bad.validate().is_err());
        assert!(settings().validate().is_ok());
    }
}
