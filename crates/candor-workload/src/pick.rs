//! Which request of a `--requests` set a request is: round robin by `seq`, uniform, or drawn in
//! proportion to each line's `"weight"`, from the request's seeded generator, so that the choice
//! of request `seq` is the same whatever thread or shard sends it.

use super::template::{request_rng, uniform_below};
use rand_xoshiro::rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

/// How the request of each `seq` is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Picker {
    /// `seq mod n`: every request in turn.
    RoundRobin { n: usize },
    /// Uniformly at random.
    Uniform { n: usize },
    /// In proportion to weights: `cumulative[i]` is the sum of the weights up to and including i.
    Weighted { cumulative: Box<[f64]> },
}

/// Salt of the generator that picks the request, so that it does not repeat the draws the
/// request's own placeholders make from `request_rng(seed, seq)`.
const PICK_SALT: u64 = 0x5EED_0FC4_01CE;

/// Why request weights cannot make a picker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeightError {
    #[error("no requests to choose from")]
    NoRequests,
    /// `request` counts from 1, as the user's request set does.
    #[error("request {request}: weight must be a positive number, got {weight}")]
    NotPositive { request: usize, weight: f64 },
}

impl Picker {
    /// The one request choice: which request the schedule entry `seq` sends, a pure function of
    /// the seed and `seq`, so every thread, shard and target's worker agrees on it.
    #[inline]
    pub fn choose(&self, seed: u64, seq: u64) -> u32 {
        match *self {
            // The static request's path: no division, no generator.
            Picker::RoundRobin { n: 1 } => return 0,
            // No draw to make: skip seeding a generator.
            Picker::RoundRobin { n } => return (seq % n as u64) as u32,
            _ => {}
        }
        let mut rng = request_rng(seed ^ PICK_SALT, seq);
        self.pick(seq, &mut rng) as u32
    }

    /// A weighted picker; every weight must be positive and finite.
    pub fn weighted(weights: &[f64]) -> Result<Picker, WeightError> {
        if weights.is_empty() {
            return Err(WeightError::NoRequests);
        }
        let mut total = 0.0;
        let mut cumulative = Vec::with_capacity(weights.len());
        for (i, &w) in weights.iter().enumerate() {
            if !(w > 0.0 && w.is_finite()) {
                return Err(WeightError::NotPositive {
                    request: i + 1,
                    weight: w,
                });
            }
            total += w;
            cumulative.push(total);
        }
        Ok(Picker::Weighted {
            cumulative: cumulative.into(),
        })
    }

    /// The index of request `seq`'s choice.
    #[inline]
    pub fn pick(&self, seq: u64, rng: &mut Xoshiro256PlusPlus) -> usize {
        match self {
            Picker::RoundRobin { n } => (seq % *n as u64) as usize,
            Picker::Uniform { n } => uniform_below(rng, *n as u64) as usize,
            Picker::Weighted { cumulative } => {
                let total = cumulative[cumulative.len() - 1];
                // 53 random bits: a uniform point in [0, total).
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
                cumulative
                    .partition_point(|&c| c <= u)
                    .min(cumulative.len() - 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::request_rng;

    #[test]
    fn weights_are_followed_and_seeded() {
        let p = Picker::weighted(&[1.0, 3.0, 6.0]).unwrap();
        let draw = |seed| -> Vec<usize> {
            (0..100_000)
                .map(|seq| p.pick(seq, &mut request_rng(seed, seq)))
                .collect()
        };
        let a = draw(5);
        assert_eq!(a, draw(5), "same seed, same choices");
        assert_ne!(a, draw(6));
        let mut counts = [0i64; 3];
        for i in a {
            counts[i] += 1;
        }
        // Binomial sd: √(n p (1−p)) ≈ 95, 137, 155; 5 sd bounds.
        assert!((counts[0] - 10_000).abs() < 475, "{counts:?}");
        assert!((counts[1] - 30_000).abs() < 685, "{counts:?}");
        assert!((counts[2] - 60_000).abs() < 775, "{counts:?}");
    }

    #[test]
    fn round_robin_and_bad_weights() {
        let p = Picker::RoundRobin { n: 3 };
        let mut rng = request_rng(1, 0);
        assert_eq!(
            (0..5).map(|s| p.pick(s, &mut rng)).collect::<Vec<_>>(),
            vec![0, 1, 2, 0, 1]
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Picker::weighted(&[1.0, bad]),
                Err(WeightError::NotPositive { request: 2, .. })
            ));
            assert!(Picker::weighted(&[1.0, bad])
                .unwrap_err()
                .to_string()
                .starts_with("request 2: weight must be a positive number"));
        }
    }
}
