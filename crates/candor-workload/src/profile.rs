//! Load profiles: `-R 500:30s,500..5000:2m,5000:1m`, a list of stages that hold a rate or ramp it
//! linearly, and the exact arithmetic of their integral that places intended send times.
//!
//! With constant arrivals the k-th send of a stage is where the integral of the stage's rate
//! reaches k, and a stage sends its integral rounded to the nearest whole request, so the count of
//! every stage is known before the run. With Poisson arrivals the profile's integral Λ(t) rescales
//! a unit-rate Poisson process (time rescaling), which gives exactly a non-homogeneous Poisson
//! process of intensity rate(t); nothing is thinned.

use candor_core::units::{parse_duration_ns, parse_rate, Rate};
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum ProfileError {
    #[error("invalid stage '{0}': expected RATE:DURATION or FROM..TO:DURATION, e.g. 500:30s or 500..5000:2m")]
    Shape(String),
    #[error(
        "invalid stage '{stage}': rate '{rate}' is not a rate (a number, k or M suffix, 0 or more)"
    )]
    Rate { stage: String, rate: String },
    #[error("invalid stage '{stage}': duration '{duration}': {reason}")]
    Duration {
        stage: String,
        duration: String,
        reason: String,
    },
    #[error("invalid stage '{0}': a stage must last longer than zero")]
    ZeroLength(String),
    #[error("the load profile sends no request: every stage has rate 0")]
    Empty,
    #[error(
        "the load profile sends no request: no stage lasts long enough at its rate for one \
         (a stage sends rate x duration requests, rounded); lengthen a stage or raise its rate"
    )]
    TooShort,
}

/// One stage: the intended rate goes linearly from `from_per_s` to `to_per_s` over `duration_ns`
/// (equal ends hold the rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub from_per_s: f64,
    pub to_per_s: f64,
    pub duration_ns: u64,
}

impl Stage {
    /// A stage that holds `rate` for `duration_ns`.
    pub fn hold(rate: f64, duration_ns: u64) -> Stage {
        Stage {
            from_per_s: rate,
            to_per_s: rate,
            duration_ns,
        }
    }

    /// The integral of the rate over the stage: the expected number of requests.
    pub fn integral(&self) -> f64 {
        (self.from_per_s + self.to_per_s) / 2.0 * self.duration_ns as f64 / 1e9
    }

    /// Requests this stage sends with constant arrivals: its integral, rounded.
    pub fn count(&self) -> u64 {
        self.integral().round() as u64
    }

    /// Offset in nanoseconds from the stage's start at which the stage's integral reaches `m`
    /// (requests, fractional allowed); `m` must be below [`Stage::integral`].
    pub fn offset_of(&self, m: f64) -> u64 {
        let a = self.from_per_s;
        if m <= 0.0 {
            return 0;
        }
        if self.from_per_s == self.to_per_s {
            return (m * (1e9 / a)) as u64;
        }
        // Rate a + s·τ, integral aτ + sτ²/2 = m. The root written as 2m / (a + √(a² + 2sm))
        // avoids the cancellation of (−a + √…)/s and holds for falling ramps (s < 0) too, since
        // m below the integral keeps a² + 2sm above the final rate squared, which is ≥ 0.
        let s = (self.to_per_s - a) / (self.duration_ns as f64 / 1e9);
        let root = (a * a + 2.0 * s * m).max(0.0).sqrt();
        let tau_s = 2.0 * m / (a + root);
        ((tau_s * 1e9) as u64).min(self.duration_ns.saturating_sub(1))
    }
}

/// A list of stages, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub stages: Vec<Stage>,
}

/// Whether `-R` text is a list of stages rather than one rate.
pub fn is_profile(text: &str) -> bool {
    text.contains(':')
}

/// Parses one stage rate: like `-R` (k and M suffixes), and 0 is allowed (a ramp from zero, or a
/// pause).
fn stage_rate(stage: &str, text: &str) -> Result<f64, ProfileError> {
    let t = text.trim();
    let bad = || ProfileError::Rate {
        stage: stage.into(),
        rate: text.into(),
    };
    if t.parse::<f64>() == Ok(0.0) {
        return Ok(0.0);
    }
    match parse_rate(t) {
        Ok(Rate::PerSecond(r)) => Ok(r),
        _ => Err(bad()),
    }
}

impl Profile {
    /// Parses `RATE:DUR` and `FROM..TO:DUR` stages separated by commas.
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let mut stages = Vec::new();
        for stage in text.split(',') {
            let stage = stage.trim();
            let (rates, duration) = stage
                .rsplit_once(':')
                .ok_or_else(|| ProfileError::Shape(stage.into()))?;
            if rates.trim().is_empty() || duration.trim().is_empty() {
                return Err(ProfileError::Shape(stage.into()));
            }
            let (from, to) = match rates.split_once("..") {
                Some((from, to)) => {
                    if from.trim().is_empty() || to.trim().is_empty() {
                        return Err(ProfileError::Shape(stage.into()));
                    }
                    (stage_rate(stage, from)?, stage_rate(stage, to)?)
                }
                None => {
                    let r = stage_rate(stage, rates)?;
                    (r, r)
                }
            };
            let duration_ns = parse_duration_ns(duration).map_err(|e| ProfileError::Duration {
                stage: stage.into(),
                duration: duration.into(),
                reason: e.to_string(),
            })?;
            if duration_ns == 0 {
                return Err(ProfileError::ZeroLength(stage.into()));
            }
            stages.push(Stage {
                from_per_s: from,
                to_per_s: to,
                duration_ns,
            });
        }
        let profile = Profile { stages };
        if profile.total_count() == 0 {
            let silent = |s: &Stage| s.from_per_s == 0.0 && s.to_per_s == 0.0;
            if !profile.stages.iter().all(silent) {
                return Err(ProfileError::TooShort);
            }
            return Err(ProfileError::Empty);
        }
        Ok(profile)
    }

    /// The run's length: the sum of the stages.
    pub fn duration_ns(&self) -> u64 {
        self.stages.iter().map(|s| s.duration_ns).sum()
    }

    /// Requests of the whole profile with constant arrivals (the sum of the stages' counts).
    pub fn total_count(&self) -> u64 {
        self.stages.iter().map(Stage::count).sum()
    }

    /// The highest intended rate anywhere in the profile.
    pub fn peak_per_s(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.from_per_s.max(s.to_per_s))
            .fold(0.0, f64::max)
    }

    /// The mean intended rate: the integral over the duration.
    pub fn mean_per_s(&self) -> f64 {
        let integral: f64 = self.stages.iter().map(Stage::integral).sum();
        integral / (self.duration_ns() as f64 / 1e9)
    }

    /// The profile with a warm-up of `warmup_ns` in front, held at the first stage's rate.
    pub fn with_warmup(&self, warmup_ns: u64) -> Profile {
        let mut stages = Vec::with_capacity(self.stages.len() + 1);
        if warmup_ns > 0 {
            stages.push(Stage::hold(self.stages[0].from_per_s, warmup_ns));
        }
        stages.extend_from_slice(&self.stages);
        Profile { stages }
    }

    /// The index of the stage that holds `offset_ns` from the profile's start (the last stage
    /// for offsets at or past the end).
    pub fn stage_at(&self, offset_ns: u64) -> usize {
        let mut end = 0;
        for (i, s) in self.stages.iter().enumerate() {
            end += s.duration_ns;
            if offset_ns < end {
                return i;
            }
        }
        self.stages.len().saturating_sub(1)
    }

    /// The profile as text, as it would be written on the command line.
    pub fn describe(&self) -> String {
        self.stages
            .iter()
            .map(|s| {
                let d = candor_core::units::format_ns(s.duration_ns as f64);
                if s.from_per_s == s.to_per_s {
                    format!("{}:{d}", s.from_per_s)
                } else {
                    format!("{}..{}:{d}", s.from_per_s, s.to_per_s)
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The profile laid out for the schedule: where each stage starts, in time, in requests (constant
/// arrivals, rounded per stage) and in the continuous integral (Poisson arrivals).
#[derive(Debug, Clone)]
pub struct StageTable {
    pub stages: Vec<Stage>,
    /// Offset of each stage's start from the profile's start, and one more entry: the end.
    pub start_ns: Vec<u64>,
    /// Index of each stage's first request (constant arrivals), and one more entry: the total.
    pub first_index: Vec<u64>,
    /// The integral of the rate up to each stage's start, and one more entry: the whole integral.
    pub integral_before: Vec<f64>,
}

impl StageTable {
    pub fn new(profile: &Profile) -> StageTable {
        let n = profile.stages.len();
        let (mut start_ns, mut first_index, mut integral_before) = (
            Vec::with_capacity(n + 1),
            Vec::with_capacity(n + 1),
            Vec::with_capacity(n + 1),
        );
        let (mut t, mut k, mut l) = (0u64, 0u64, 0f64);
        for s in &profile.stages {
            start_ns.push(t);
            first_index.push(k);
            integral_before.push(l);
            t += s.duration_ns;
            k += s.count();
            l += s.integral();
        }
        start_ns.push(t);
        first_index.push(k);
        integral_before.push(l);
        StageTable {
            stages: profile.stages.clone(),
            start_ns,
            first_index,
            integral_before,
        }
    }

    /// Requests of the whole profile with constant arrivals.
    pub fn total_count(&self) -> u64 {
        *self.first_index.last().unwrap_or(&0)
    }

    /// Offset from the profile's start of the constant-arrival request `k` (< total), searching
    /// forward from stage `*cursor`, which it advances (requests come in order, so a walk through
    /// the stages costs nothing per request).
    pub fn constant_offset(&self, k: u64, cursor: &mut usize) -> u64 {
        while *cursor + 1 < self.stages.len() && k >= self.first_index[*cursor + 1] {
            *cursor += 1;
        }
        let j = *cursor;
        let m = k - self.first_index[j];
        self.start_ns[j] + self.stages[j].offset_of(m as f64)
    }

    /// Offset from the profile's start where the integral reaches `lambda`, or `None` past the
    /// profile's end; `*cursor` as in [`StageTable::constant_offset`].
    pub fn rescaled_offset(&self, lambda: f64, cursor: &mut usize) -> Option<u64> {
        if lambda >= *self.integral_before.last()? {
            return None;
        }
        // Stages of rate 0 have no width in the integral and are stepped over.
        while *cursor + 1 < self.stages.len() && lambda >= self.integral_before[*cursor + 1] {
            *cursor += 1;
        }
        let j = *cursor;
        Some(self.start_ns[j] + self.stages[j].offset_of(lambda - self.integral_before[j]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_holds_and_ramps() {
        let p = Profile::parse("500:30s,500..5k:2m, 5000:1m").unwrap();
        assert_eq!(
            p.stages,
            vec![
                Stage::hold(500.0, 30_000_000_000),
                Stage {
                    from_per_s: 500.0,
                    to_per_s: 5000.0,
                    duration_ns: 120_000_000_000
                },
                Stage::hold(5000.0, 60_000_000_000),
            ]
        );
        assert_eq!(p.duration_ns(), 210_000_000_000);
        // 15,000 + (500+5000)/2·120 = 330,000 + 300,000.
        assert_eq!(p.total_count(), 645_000);
        assert_eq!(p.peak_per_s(), 5000.0);
        assert!(is_profile("500:30s") && !is_profile("2k"));
        assert_eq!(Profile::parse("0..100:10s").unwrap().total_count(), 500);
    }

    #[test]
    fn malformed_stages_are_refused_with_one_line() {
        for (text, expect) in [
            ("500:", "invalid stage '500:'"),
            ("..100:5s", "invalid stage '..100:5s'"),
            ("100..:5s", "expected RATE:DURATION"),
            ("-5:10s", "rate '-5'"),
            ("100..-5:10s", "rate '-5'"),
            ("100:0s", "must last longer than zero"),
            ("100:-3s", "duration '-3s'"),
            ("100:5", "duration '5'"),
            ("abc:5s", "rate 'abc'"),
            ("0:5s", "sends no request"),
            ("100:5s,,", "invalid stage ''"),
        ] {
            let e = Profile::parse(text).unwrap_err().to_string();
            assert!(e.contains(expect), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn each_stage_sends_its_integral_rounded() {
        // 7.5/s for 1 s: 7.5 rounds to 8; 0..3/s over 1 s: 1.5 rounds to 2; 2.4/s for 1 s: 2.
        let p = Profile::parse("7.5:1s,0..3:1s,2.4:1s").unwrap();
        let counts: Vec<u64> = p.stages.iter().map(Stage::count).collect();
        assert_eq!(counts, vec![8, 2, 2]);
        let t = StageTable::new(&p);
        assert_eq!(t.first_index, vec![0, 8, 10, 12]);
        // Every send falls inside its own stage: m < integral for m < round(integral).
        let mut cursor = 0;
        for k in 0..t.total_count() {
            let at = t.constant_offset(k, &mut cursor);
            let stage = p.stage_at(at);
            assert!(
                t.first_index[stage] <= k && k < t.first_index[stage + 1],
                "{k} at {at}"
            );
        }
    }

    #[test]
    fn ramp_send_times_are_where_the_integral_reaches_k() {
        // 1000..3000/s over 1 s: integral 1000τ + 1000τ², which is 750 at τ = 0.5 s exactly and
        // 2000 at the end; the 2000 sends are k = 0..1999.
        let ramp = Stage {
            from_per_s: 1000.0,
            to_per_s: 3000.0,
            duration_ns: 1_000_000_000,
        };
        assert_eq!(ramp.count(), 2000);
        assert_eq!(ramp.offset_of(0.0), 0);
        assert_eq!(ramp.offset_of(750.0), 500_000_000);
        // Integral 1000τ + 1000τ² = 1 at τ = (√5 − 1)/2 ms = 0.000999002 s.
        assert_eq!(ramp.offset_of(1.0), 999_001);
        // A falling ramp mirrors it: 3000..1000 reaches 1250 at 0.5 s (3000τ − 1000τ²).
        let fall = Stage {
            from_per_s: 3000.0,
            to_per_s: 1000.0,
            duration_ns: 1_000_000_000,
        };
        assert_eq!(fall.offset_of(1250.0), 500_000_000);
        // From zero: 0..2000 over 1 s has integral 1000τ², so k = 250 is at τ = 0.5 s.
        let from_zero = Stage {
            from_per_s: 0.0,
            to_per_s: 2000.0,
            duration_ns: 1_000_000_000,
        };
        assert_eq!(from_zero.offset_of(250.0), 500_000_000);
        // Gaps shrink along a rising ramp.
        let gaps: Vec<u64> = [1.0, 2.0, 1998.0, 1999.0]
            .iter()
            .map(|&m| ramp.offset_of(m))
            .collect();
        assert!(gaps[1] - gaps[0] > gaps[3] - gaps[2]);
    }

    #[test]
    fn warm_up_holds_the_first_stage_rate() {
        let p = Profile::parse("200..400:1s")
            .unwrap()
            .with_warmup(500_000_000);
        assert_eq!(p.stages[0], Stage::hold(200.0, 500_000_000));
        assert_eq!(p.total_count(), 100 + 300);
        assert_eq!(p.stage_at(499_999_999), 0);
        assert_eq!(p.stage_at(500_000_000), 1);
    }

    #[test]
    fn rescaling_steps_over_pauses() {
        let p = Profile::parse("10:1s,0:1s,10:1s").unwrap();
        let t = StageTable::new(&p);
        let mut cursor = 0;
        assert_eq!(t.rescaled_offset(5.0, &mut cursor), Some(500_000_000));
        // Λ = 10 is where the second hold at 10/s begins: after the pause, at 2 s.
        assert_eq!(t.rescaled_offset(10.0, &mut cursor), Some(2_000_000_000));
        assert_eq!(t.rescaled_offset(15.0, &mut cursor), Some(2_500_000_000));
        assert_eq!(t.rescaled_offset(20.0, &mut cursor), None);
    }
}
