//! Synthetic LLM prompts as vLLM's `random` dataset and guidellm's synthetic data make them:
//! input and output lengths drawn from a distribution (fixed, uniform, or normal within
//! bounds), optionally behind a shared prefix of N tokens (prefix-cache tests). Drawn before
//! the run from `--seed`, so the same seed sends the same prompts.

use crate::prompts::{Prompt, PromptError, WORDS_PER_TOKEN};
use crate::tokenizer::Tokenizer;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;
use std::str::FromStr;

/// How many tokens each prompt has (or asks for): `--prompt-tokens` and `--output-tokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lengths {
    /// `N`: every one the same.
    Fixed(u64),
    /// `uniform:LO..HI`: each a whole number from LO to HI, all equally likely.
    Uniform { lo: u64, hi: u64 },
    /// `normal:MEAN,SD[,LO..HI]`: each drawn from a normal distribution, rounded, and redrawn
    /// until it falls within LO..HI (default 1 ..= MEAN + 4 SD), as guidellm bounds its own.
    Normal {
        mean: f64,
        sd: f64,
        lo: u64,
        hi: u64,
    },
}

impl Lengths {
    /// Whether every draw is the same length.
    pub fn fixed(self) -> Option<u64> {
        match self {
            Lengths::Fixed(n) => Some(n),
            _ => None,
        }
    }

    /// The longest a draw can be.
    pub fn max(self) -> u64 {
        match self {
            Lengths::Fixed(n) => n,
            Lengths::Uniform { hi, .. } | Lengths::Normal { hi, .. } => hi,
        }
    }

    /// One draw.
    pub fn draw(self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            Lengths::Fixed(n) => n,
            Lengths::Uniform { lo, hi } => lo + rng.next_u64() % (hi - lo + 1),
            Lengths::Normal { mean, sd, lo, hi } => loop {
                // Box-Muller by hand (one draw per prompt, before the run): a distributions
                // crate for this one formula would add a dependency and its rand version.
                let u1 = unit(rng);
                let u2 = unit(rng);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let n = (mean + sd * z).round();
                if n >= lo as f64 && n <= hi as f64 {
                    break n as u64;
                }
            },
        }
    }
}

/// A uniform draw in (0, 1] from 53 random bits (never 0, so its logarithm is finite).
fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

impl fmt::Display for Lengths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lengths::Fixed(n) => write!(f, "{n}"),
            Lengths::Uniform { lo, hi } => write!(f, "uniform:{lo}..{hi}"),
            Lengths::Normal { mean, sd, lo, hi } => write!(f, "normal:{mean},{sd},{lo}..{hi}"),
        }
    }
}

/// Why a length distribution is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}': {why} (expected N, uniform:LO..HI or normal:MEAN,SD[,LO..HI])")]
pub struct LengthsError {
    text: String,
    why: String,
}

impl FromStr for Lengths {
    type Err = LengthsError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| LengthsError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let whole = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad("not a whole number"))
        };
        let range = |s: &str| -> Result<(u64, u64), LengthsError> {
            let (lo, hi) = s.split_once("..").ok_or_else(|| bad("a range is LO..HI"))?;
            let (lo, hi) = (whole(lo)?, whole(hi)?);
            if lo == 0 || lo > hi {
                return Err(bad("a range needs 1 <= LO <= HI"));
            }
            Ok((lo, hi))
        };
        if let Some(r) = text.strip_prefix("uniform:") {
            let (lo, hi) = range(r)?;
            return Ok(Lengths::Uniform { lo, hi });
        }
        if let Some(r) = text.strip_prefix("normal:") {
            let mut parts = r.splitn(3, ',');
            let number = |s: Option<&str>| -> Result<f64, LengthsError> {
                s.and_then(|s| s.trim().parse::<f64>().ok())
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| bad("MEAN and SD are non-negative numbers"))
            };
            let (mean, sd) = (number(parts.next())?, number(parts.next())?);
            let (lo, hi) = match parts.next() {
                Some(r) => range(r)?,
                None => (1, (mean + 4.0 * sd).round().max(1.0) as u64),
            };
            if mean + 4.0 * sd < lo as f64 || mean - 4.0 * sd > hi as f64 {
                return Err(bad("the range lies beyond 4 SD of the mean"));
            }
            return Ok(Lengths::Normal { mean, sd, lo, hi });
        }
        match whole(text)? {
            0 => Err(bad("must be at least 1")),
            n => Ok(Lengths::Fixed(n)),
        }
    }
}

/// What synthetic prompts look like: `--prompt-tokens`, `--output-tokens`, `--prefix-tokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSpec {
    pub prompt: Lengths,
    pub output: Lengths,
    /// Tokens of a prefix every prompt shares, before its own `prompt` tokens (0: none).
    pub prefix: u64,
    pub seed: u64,
}

/// Words synthetic prompts are made of.
const VOCABULARY: [&str; 16] = [
    "latency",
    "measure",
    "queue",
    "server",
    "stall",
    "token",
    "stream",
    "request",
    "honest",
    "schedule",
    "intended",
    "arrival",
    "percentile",
    "histogram",
    "client",
    "response",
];

/// The words of `tokens` tokens by [`WORDS_PER_TOKEN`].
pub fn words_of(tokens: u64) -> usize {
    let (num, den) = WORDS_PER_TOKEN;
    (tokens * num).div_ceil(den) as usize
}

/// The shared prefix of `tokens` tokens: "shared" then vocabulary words in a fixed order.
pub fn prefix_text(tokens: u64) -> String {
    let mut text = String::from("shared");
    for w in 1..words_of(tokens) {
        text.push(' ');
        text.push_str(VOCABULARY[(w * 5) % VOCABULARY.len()]);
    }
    text
}

/// Prompt `k`'s own text of `tokens` tokens: its number first, so that a server's prefix
/// cache cannot answer one prompt from another beyond the shared prefix.
fn own_text(k: usize, tokens: u64) -> String {
    let mut text = format!("{k}");
    for w in 1..words_of(tokens) {
        text.push(' ');
        text.push_str(VOCABULARY[(k * 7 + w * 13) % VOCABULARY.len()]);
    }
    text
}

/// `count` synthetic prompts as `spec` says, drawn in order from its seed. With `tokenizer`,
/// each prompt is exactly its drawn tokens (and the prefix exactly `spec.prefix`) by that
/// tokenizer's count; without, by [`WORDS_PER_TOKEN`].
pub fn prompts(
    spec: SyntheticSpec,
    count: usize,
    tokenizer: Option<&Tokenizer>,
) -> Result<Vec<Prompt>, PromptError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let tokenized = |e: crate::tokenizer::TokenizerError| PromptError::Dataset(e.to_string());
    let prefix = match (spec.prefix, tokenizer) {
        (0, _) => None,
        (n, None) => Some(prefix_text(n)),
        (n, Some(t)) => Some(
            t.exact_text("shared", &VOCABULARY_BY_FIVES, n)
                .map_err(tokenized)?,
        ),
    };
    (0..count)
        .map(|k| {
            let own_tokens = spec.prompt.draw(&mut rng);
            let output = spec.output.draw(&mut rng);
            let text = match (&prefix, tokenizer) {
                (Some(p), None) => format!("{p} {}", own_text(k, own_tokens)),
                (None, None) => own_text(k, own_tokens),
                // The whole prompt is counted, so that joining prefix and own part (a number
                // after a space may be two tokens) cannot make it longer than asked.
                (p, Some(t)) => {
                    let start = match p {
                        Some(p) => format!("{p} {k}"),
                        None => k.to_string(),
                    };
                    let total = spec.prefix + own_tokens;
                    let words = [
                        VOCABULARY[k % VOCABULARY.len()],
                        VOCABULARY[(k * 7 + 3) % VOCABULARY.len()],
                    ];
                    t.exact_text(&start, &words, total).map_err(tokenized)?
                }
            };
            Ok(Prompt::text(text, Some(output)))
        })
        .collect()
}

/// The prefix's words in [`prefix_text`]'s order.
const VOCABULARY_BY_FIVES: [&str; 16] = {
    let mut v = [""; 16];
    let mut w = 0;
    while w < 16 {
        v[w] = VOCABULARY[((w + 1) * 5) % 16];
        w += 1;
    }
    v
};

/// `count` distinct synthetic prompts of `prompt_tokens` tokens each (by
/// [`WORDS_PER_TOKEN`]), each asking for `output_tokens`. Each starts with its own number, so
/// that a server's prefix cache cannot answer one from another.
pub fn fixed(
    prompt_tokens: u64,
    output_tokens: u64,
    count: usize,
) -> Result<Vec<Prompt>, PromptError> {
    if prompt_tokens == 0 {
        return Err(PromptError::NoPromptTokens);
    }
    if output_tokens == 0 {
        return Err(PromptError::NoOutputTokens);
    }
    prompts(
        SyntheticSpec {
            prompt: Lengths::Fixed(prompt_tokens),
            output: Lengths::Fixed(output_tokens),
            prefix: 0,
            seed: 0,
        },
        count,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::PromptInput;

    fn text(p: &Prompt) -> &str {
        match &p.input {
            PromptInput::Text(t) => t,
            PromptInput::Messages(_) => unreachable!(),
        }
    }

    #[test]
    fn length_specs_are_read_and_bad_ones_named() {
        assert_eq!("512".parse(), Ok(Lengths::Fixed(512)));
        assert_eq!(
            "uniform:256..768".parse(),
            Ok(Lengths::Uniform { lo: 256, hi: 768 })
        );
        assert_eq!(
            "normal:512,64".parse(),
            Ok(Lengths::Normal {
                mean: 512.0,
                sd: 64.0,
                lo: 1,
                hi: 768
            })
        );
        assert_eq!(
            "normal:512,64,400..600".parse(),
            Ok(Lengths::Normal {
                mean: 512.0,
                sd: 64.0,
                lo: 400,
                hi: 600
            })
        );
        for (bad, why) in [
            ("0", "at least 1"),
            ("x", "not a whole number"),
            ("uniform:9..3", "1 <= LO <= HI"),
            ("uniform:0..3", "1 <= LO <= HI"),
            ("uniform:5", "LO..HI"),
            ("normal:5", "MEAN and SD"),
            ("normal:-5,1", "MEAN and SD"),
            ("normal:10,1,100..200", "beyond 4 SD"),
        ] {
            let e = bad.parse::<Lengths>().unwrap_err().to_string();
            assert!(
                e.contains(why) && e.starts_with(&format!("'{bad}'")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn draws_follow_their_distribution() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let u = Lengths::Uniform { lo: 10, hi: 13 };
        let mut seen = [0u32; 4];
        for _ in 0..40_000 {
            seen[(u.draw(&mut rng) - 10) as usize] += 1;
        }
        // Each of 4 values 10,000 expected; 5 SD of a binomial (sd ~87) is 433.
        assert!(seen.iter().all(|&n| n.abs_diff(10_000) < 433), "{seen:?}");
        let n = Lengths::Normal {
            mean: 100.0,
            sd: 10.0,
            lo: 90,
            hi: 130,
        };
        let draws: Vec<u64> = (0..40_000).map(|_| n.draw(&mut rng)).collect();
        assert!(draws.iter().all(|d| (90..=130).contains(d)));
        // Within ±1 SD of the mean: 0.6827 of the untruncated mass over the kept 0.8400
        // (P(-1 <= z <= 3)) = 0.8127; rounding to whole tokens widens it to [89.5, 110.5]:
        // P(-1.05 <= z <= 1.05) / P(-1.05 <= z <= 3.05) = 0.7063 / 0.8520 = 0.829.
        let inside = draws.iter().filter(|&&d| (90..=110).contains(&d)).count() as f64 / 40_000.0;
        assert!((inside - 0.829).abs() < 0.01, "{inside}");
    }

    #[test]
    fn prompts_share_the_prefix_and_differ_after_it_and_repeat_by_seed() {
        let spec = SyntheticSpec {
            prompt: Lengths::Uniform { lo: 8, hi: 16 },
            output: Lengths::Fixed(4),
            prefix: 40,
            seed: 9,
        };
        let p = prompts(spec, 50, None).unwrap();
        let prefix = prefix_text(40);
        // 40 tokens -> 30 words.
        assert_eq!(prefix.split_whitespace().count(), 30);
        for (k, prompt) in p.iter().enumerate() {
            let t = text(prompt);
            let own = t.strip_prefix(&format!("{prefix} ")).unwrap();
            assert!(
                own.starts_with(&format!("{k} ")) || own == k.to_string(),
                "{own}"
            );
            let words = own.split_whitespace().count();
            // 8..=16 tokens -> 6..=12 words.
            assert!((6..=12).contains(&words), "{words}");
            assert_eq!(prompt.max_tokens, Some(4));
        }
        assert_eq!(prompts(spec, 50, None).unwrap(), p);
        let other = prompts(SyntheticSpec { seed: 10, ..spec }, 50, None).unwrap();
        assert_ne!(other, p);
    }

    #[test]
    fn with_a_tokenizer_each_prompt_is_exactly_its_tokens_behind_an_exact_prefix() {
        let t = Tokenizer::load("cl100k_base").unwrap();
        let spec = SyntheticSpec {
            prompt: Lengths::Uniform { lo: 5, hi: 300 },
            output: Lengths::Fixed(4),
            prefix: 64,
            seed: 3,
        };
        let p = prompts(spec, 40, Some(&t)).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let prefix = t.exact_text("shared", &VOCABULARY_BY_FIVES, 64).unwrap();
        assert_eq!(t.count(&prefix), 64);
        for (k, prompt) in p.iter().enumerate() {
            let own = spec.prompt.draw(&mut rng);
            spec.output.draw(&mut rng);
            let text = text(prompt);
            assert_eq!(t.count(text), 64 + own, "prompt {k}");
            assert!(text.starts_with(&format!("{prefix} {k}")), "prompt {k}");
        }
        let plain = SyntheticSpec { prefix: 0, ..spec };
        for prompt in prompts(plain, 10, Some(&t)).unwrap() {
            assert!((5..=300).contains(&t.count(text(&prompt))));
        }
    }
    #[test]
    fn synthetic_prompts_have_the_stated_length_and_differ() {
        let p = fixed(512, 128, 3).unwrap();
        for (k, prompt) in p.iter().enumerate() {
            let (PromptInput::Text(prompt), max_tokens) = (&prompt.input, &prompt.max_tokens)
            else {
                unreachable!()
            };
            // 512 tokens -> ceil(512 * 3 / 4) = 384 words.
            assert_eq!(prompt.split_whitespace().count(), 384);
            assert!(prompt.starts_with(&format!("{k} ")));
            assert_eq!(*max_tokens, Some(128));
        }
        assert_ne!(p[0], p[1]);
        assert_eq!(fixed(0, 1, 1), Err(PromptError::NoPromptTokens));
        assert_eq!(fixed(1, 0, 1), Err(PromptError::NoOutputTokens));
    }
}
