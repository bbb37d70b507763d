//! `--think-time`: the wait from a conversation turn's completion to its next turn's intended
//! send, one constant or drawn from a distribution as guidellm (`delay`) and vLLM's multi-turn
//! benchmark draw it, in the syntax of the token-length flags with durations for numbers.
//!
//! A draw is keyed by (`--seed`, the conversation's `seq`, the follow-up's request index): the
//! same seed gives the same turn of the same conversation the same think time whatever order
//! the completions come in and on any number of threads, which a generator advanced per
//! completion would not (the order of completions is the server's, not ours). A table drawn
//! before the run per request index would repeat one think time every time a prepared
//! conversation is reused. Keyed draws need no state and no allocation.

use candor_core::units::{format_ns, parse_duration_ns};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;
use std::str::FromStr;

/// How long a conversation's user thinks between turns, in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    /// `D`: every wait the same.
    Fixed(u64),
    /// `uniform:LO..HI`: each wait from LO to HI, all equally likely (to the ns).
    Uniform { lo: u64, hi: u64 },
    /// `normal:MEAN,SD[,LO..HI]`: each drawn from a normal distribution and redrawn until it
    /// falls within LO..HI (default 0 ..= MEAN + 4 SD).
    Normal {
        mean: f64,
        sd: f64,
        lo: u64,
        hi: u64,
    },
    /// `exp:MEAN`: exponentially distributed (a user who thinks memorylessly), mean MEAN.
    Exp { mean: f64 },
}

impl Default for ThinkTime {
    fn default() -> Self {
        ThinkTime::Fixed(0)
    }
}

/// One 64-bit key of (seed, seq, request), spread so that neighbouring conversations and
/// turns give unrelated streams (splitmix64's finaliser).
fn key(seed: u64, seq: u64, request: u32) -> u64 {
    let mut z = seed
        ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ u64::from(request).wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in (0, 1] from 53 random bits (never 0, so its logarithm is finite).
fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

impl ThinkTime {
    /// The think time before request `request` of the conversation `seq`, under `seed`.
    #[inline]
    pub fn draw(self, seed: u64, seq: u64, request: u32) -> u64 {
        if let ThinkTime::Fixed(ns) = self {
            return ns;
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(key(seed, seq, request));
        match self {
            ThinkTime::Fixed(ns) => ns,
            ThinkTime::Uniform { lo, hi } => {
                lo + rng.next_u64() % (hi - lo).saturating_add(1).max(1)
            }
            ThinkTime::Normal { mean, sd, lo, hi } => loop {
                // Box-Muller by hand, as `synthetic::Lengths` draws (no distributions crate
                // for one formula). The bounds lie within 4 SD of the mean (checked when
                // parsed), so a draw is kept with probability well above 1/20,000.
                let z = (-2.0 * unit(&mut rng).ln()).sqrt()
                    * (std::f64::consts::TAU * unit(&mut rng)).cos();
                let ns = (mean + sd * z).round();
                if ns >= lo as f64 && ns <= hi as f64 {
                    break ns as u64;
                }
            },
            // Inverse transform; u in (0, 1] keeps it within 37 means.
            ThinkTime::Exp { mean } => (-unit(&mut rng).ln() * mean).round() as u64,
        }
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |ns: f64| format_ns(ns);
        match *self {
            ThinkTime::Fixed(ns) => write!(f, "{}", d(ns as f64)),
            ThinkTime::Uniform { lo, hi } => {
                write!(f, "uniform:{}..{}", d(lo as f64), d(hi as f64))
            }
            ThinkTime::Normal { mean, sd, lo, hi } => write!(
                f,
                "normal:{},{},{}..{}",
                d(mean),
                d(sd),
                d(lo as f64),
                d(hi as f64)
            ),
            ThinkTime::Exp { mean } => write!(f, "exp:{}", d(mean)),
        }
    }
}

/// Why a think time is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}': {why} (expected D, uniform:LO..HI, normal:MEAN,SD[,LO..HI] or exp:MEAN, each a duration such as 20ms)")]
pub struct ThinkTimeError {
    text: String,
    why: String,
}

impl FromStr for ThinkTime {
    type Err = ThinkTimeError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| ThinkTimeError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let dur = |s: &str| parse_duration_ns(s).map_err(|_| bad("not a duration"));
        let range = |s: &str| -> Result<(u64, u64), ThinkTimeError> {
            let (lo, hi) = s.split_once("..").ok_or_else(|| bad("a range is LO..HI"))?;
            let (lo, hi) = (dur(lo)?, dur(hi)?);
            if lo > hi {
                return Err(bad("a range needs LO <= HI"));
            }
            Ok((lo, hi))
        };
        if let Some(r) = text.strip_prefix("uniform:") {
            let (lo, hi) = range(r)?;
            return Ok(ThinkTime::Uniform { lo, hi });
        }
        if let Some(r) = text.strip_prefix("normal:") {
            let mut parts = r.splitn(3, ',');
            let mut next = || parts.next().ok_or_else(|| bad("MEAN and SD are durations"));
            let (mean, sd) = (dur(next()?)? as f64, dur(next()?)? as f64);
            let (lo, hi) = match parts.next() {
                Some(r) => range(r)?,
                None => (0, (mean + 4.0 * sd).round() as u64),
            };
            if mean + 4.0 * sd < lo as f64 || mean - 4.0 * sd > hi as f64 {
                return Err(bad("the range lies beyond 4 SD of the mean"));
            }
            return Ok(ThinkTime::Normal { mean, sd, lo, hi });
        }
        if let Some(m) = text.strip_prefix("exp:") {
            return Ok(ThinkTime::Exp {
                mean: dur(m)? as f64,
            });
        }
        Ok(ThinkTime::Fixed(dur(text)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> ThinkTime {
        s.parse().unwrap()
    }

    #[test]
    fn parses_each_shape_in_durations() {
        assert_eq!(t("20ms"), ThinkTime::Fixed(20_000_000));
        assert_eq!(t("0"), ThinkTime::Fixed(0));
        assert_eq!(
            t("uniform:10ms..50ms"),
            ThinkTime::Uniform {
                lo: 10_000_000,
                hi: 50_000_000
            }
        );
        assert_eq!(
            t("normal:30ms,5ms"),
            ThinkTime::Normal {
                mean: 30e6,
                sd: 5e6,
                lo: 0,
                hi: 50_000_000
            }
        );
        assert_eq!(
            t("normal:30ms,5ms,20ms..40ms"),
            ThinkTime::Normal {
                mean: 30e6,
                sd: 5e6,
                lo: 20_000_000,
                hi: 40_000_000
            }
        );
        assert_eq!(t("exp:1s"), ThinkTime::Exp { mean: 1e9 });
        assert_eq!(
            t("uniform:10ms..50ms").to_string(),
            "uniform:10.00ms..50.00ms"
        );
    }

    #[test]
    fn refuses_what_cannot_be_drawn() {
        for bad in [
            "fast",
            "uniform:50ms..10ms",
            "uniform:10ms",
            "normal:30ms",
            "normal:30ms,1ms,1s..2s",
            "exp:soon",
        ] {
            let e = bad.parse::<ThinkTime>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn draws_are_keyed_reproducible_and_within_bounds() {
        let u = t("uniform:10ms..50ms");
        let n = t("normal:30ms,5ms,25ms..35ms");
        let e = t("exp:20ms");
        let (mut sum_u, mut sum_e) = (0u64, 0u64);
        let mut distinct = std::collections::HashSet::new();
        for seq in 0..2_000u64 {
            let d = u.draw(7, seq, 1);
            assert!((10_000_000..=50_000_000).contains(&d), "{d}");
            assert_eq!(d, u.draw(7, seq, 1), "the same key, the same draw");
            distinct.insert(d);
            sum_u += d;
            let d = n.draw(7, seq, 1);
            assert!((25_000_000..=35_000_000).contains(&d), "{d}");
            sum_e += e.draw(7, seq, 2);
        }
        assert!(distinct.len() > 1_990, "{}", distinct.len());
        // Means of 2,000 draws: uniform's SD is 11.5 ms / sqrt(2000) = 0.26 ms, exp's
        // 20 ms / sqrt(2000) = 0.45 ms; 5 SD either side.
        let mean_u = sum_u as f64 / 2e3;
        assert!((mean_u - 30e6).abs() < 1.3e6, "{mean_u}");
        let mean_e = sum_e as f64 / 2e3;
        assert!((mean_e - 20e6).abs() < 2.3e6, "{mean_e}");
        assert_ne!(
            u.draw(7, 0, 1),
            u.draw(8, 0, 1),
            "the seed changes the draws"
        );
        assert_ne!(u.draw(7, 0, 1), u.draw(7, 0, 2), "so does the turn");
        assert_eq!(t("20ms").draw(7, 3, 4), 20_000_000);
    }
}
