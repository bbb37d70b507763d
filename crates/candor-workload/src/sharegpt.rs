//! ShareGPT-format datasets (`--sharegpt FILE`), read as vLLM's `bench serve --dataset-name
//! sharegpt` reads them: a JSON array of `{"conversations": [{"from": "human", "value": ...},
//! {"from": "gpt", "value": ...}, ...]}`; the first human turn is the prompt, and the answer
//! that follows it gives the output budget when asked (`--sharegpt-budget answer`).
//!
//! As vLLM's `sample_sharegpt_requests`, pairs too short or too long are pruned ([`pruned`]:
//! by the tokenizer when given, else by the 3/4-word rule) and the prompts are a random
//! sample (seeded) of those kept, in a random order; `Sample::First` takes the first instead.
//!
//! The file is read as a stream: only the prompts sampled are kept (a bounded heap of the
//! number wanted), so a dataset of hundreds of megabytes (ShareGPT_V3 is ~640 MB) costs the
//! kept prompts, not the file.

use crate::prompts::{Prompt, PromptError};
use crate::tokenizer::Tokenizer;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::io::Read;

/// Where each ShareGPT prompt's output budget comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SharegptBudget {
    /// The recorded answer's length in tokens (by the 3/4-word rule).
    Answer,
    /// `--output-tokens` (a fixed number or a distribution, drawn per prompt).
    Drawn(crate::synthetic::Lengths),
}

#[derive(Deserialize)]
pub(crate) struct Turn {
    pub(crate) from: String,
    pub(crate) value: String,
}

#[derive(Deserialize)]
pub(crate) struct Entry {
    #[serde(default)]
    pub(crate) conversations: Vec<Turn>,
}

/// Whether a turn is the user's (`human`/`user`) or an answer (`gpt`/`chatgpt`/`assistant`).
pub(crate) fn asks(t: &Turn) -> bool {
    matches!(t.from.as_str(), "human" | "user")
}

pub(crate) fn answers(t: &Turn) -> bool {
    matches!(t.from.as_str(), "gpt" | "chatgpt" | "assistant")
}

/// An answer's length in tokens, as an output budget: [`tokens`], at least 1.
pub(crate) fn answer_tokens(answer: &str, tokenizer: Option<&Tokenizer>) -> u64 {
    tokens(answer, tokenizer).max(1)
}

/// vLLM's `sample_sharegpt_requests` prunes a pair whose prompt or answer is under this many
/// tokens...
pub const MIN_TOKENS: u64 = 4;
/// ...whose prompt is over this many...
pub const MAX_PROMPT_TOKENS: u64 = 1024;
/// ...or whose prompt and answer together are over this many.
pub const MAX_TOTAL_TOKENS: u64 = 2048;

/// Whether vLLM's rules prune a pair of `prompt` and `answer` tokens. `answer_budget`: the
/// answer's length is the output budget (`--sharegpt-budget answer`); otherwise the answer's
/// length is not the request's, and only the prompt is judged (vLLM skips its answer's
/// minimum with a fixed output length too).
pub fn pruned(prompt: u64, answer: u64, answer_budget: bool) -> bool {
    !(MIN_TOKENS..=MAX_PROMPT_TOKENS).contains(&prompt)
        || (answer_budget && (answer < MIN_TOKENS || prompt + answer > MAX_TOTAL_TOKENS))
}

/// Which conversations are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A uniform random sample of the kept ones (vLLM shuffles the file, then takes the first
    /// that pass its rules), in a random order, seeded.
    Random,
    /// The first ones kept, in the file's order.
    First,
}

/// How a ShareGPT file is read: how many prompts, how sampled, whether pruned, budgeted how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharegptOptions {
    /// Prompts wanted (vLLM's `--num-prompts`).
    pub count: usize,
    pub sample: Sample,
    /// vLLM's length rules ([`pruned`]); off: every usable conversation may be taken.
    pub prune: bool,
    pub budget: SharegptBudget,
    pub seed: u64,
}

/// What reading a ShareGPT file came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    pub prompts: Vec<Prompt>,
    pub counts: candor_core::results::DatasetSample,
}

/// A conversation's prompt and answer, if it has both: a first turn from the user
/// (`human`/`user`) with text, then an answer (`gpt`/`chatgpt`/`assistant`).
fn first_pair(e: Entry) -> Option<(String, String)> {
    let mut turns = e.conversations.into_iter();
    let (ask, answer) = (turns.next()?, turns.next()?);
    if !asks(&ask) || !answers(&answer) || ask.value.trim().is_empty() {
        return None;
    }
    Some((ask.value, answer.value))
}

/// `text`'s tokens: the tokenizer's count, or by the 3/4-word rule (candor serve's).
pub(crate) fn tokens(text: &str, tokenizer: Option<&Tokenizer>) -> u64 {
    match tokenizer {
        Some(t) => t.count(text),
        None => (text.split_whitespace().count() as u64 * 4).div_ceil(3),
    }
}

/// A conversation taken so far, by its sampling key (the smallest keys win).
struct Taken {
    key: (u64, u64),
    prompt: String,
    answer_tokens: u64,
}

impl PartialEq for Taken {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Taken {}
impl PartialOrd for Taken {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Taken {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// Reads the array as a stream, keeping at most `count` conversations: each usable one gets a
/// key (a random draw, or its place in the file), and the `count` kept ones with the smallest
/// keys are the sample. A conversation whose key could not make the sample is not judged (not
/// tokenized): the sample is the same as judging every one first, and with a tokenizer a
/// file of 94,000 conversations costs ~count x ln(94,000 / count) judgements, not 94,000.
struct Keep<'t> {
    options: SharegptOptions,
    tokenizer: Option<&'t Tokenizer>,
}

impl<'de> Visitor<'de> for Keep<'_> {
    type Value = (Vec<Taken>, candor_core::results::DatasetSample);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use rand_xoshiro::rand_core::{RngCore, SeedableRng};
        let o = self.options;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(o.seed ^ SAMPLE_SEED);
        let mut counts = candor_core::results::DatasetSample {
            random: o.sample == Sample::Random,
            seed: o.seed,
            pruning: o.prune,
            ..Default::default()
        };
        let mut heap = std::collections::BinaryHeap::<Taken>::with_capacity(o.count.min(4096));
        let answer_budget = o.budget == SharegptBudget::Answer;
        loop {
            let full = heap.len() >= o.count;
            if full && o.sample == Sample::First {
                // Read past the rest, counting it, without building it.
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    counts.conversations += 1;
                }
                break;
            }
            let Some(entry) = seq.next_element::<Entry>()? else {
                break;
            };
            counts.conversations += 1;
            let Some((prompt, answer)) = first_pair(entry) else {
                counts.unusable += 1;
                continue;
            };
            let key = match o.sample {
                Sample::Random => (rng.next_u64(), counts.conversations),
                Sample::First => (counts.conversations, 0),
            };
            if full && heap.peek().is_some_and(|worst| key >= worst.key) {
                continue;
            }
            counts.examined += 1;
            let answer_tokens = if answer_budget || o.prune {
                answer_tokens(&answer, self.tokenizer)
            } else {
                1
            };
            if o.prune
                && pruned(
                    tokens(&prompt, self.tokenizer),
                    answer_tokens,
                    answer_budget,
                )
            {
                counts.pruned += 1;
                continue;
            }
            heap.push(Taken {
                key,
                prompt,
                answer_tokens,
            });
            if heap.len() > o.count {
                heap.pop();
            }
        }
        let taken = heap.into_sorted_vec();
        counts.kept = taken.len() as u64;
        Ok((taken, counts))
    }
}

/// Mixed into `--seed` for the sampling keys, so that they are not the draws of the budgets.
const SAMPLE_SEED: u64 = 0x5348_4152_4547_5054;

/// Reads prompts from a ShareGPT file's bytes (`file` names it in errors) as `options` say,
/// each budgeted as `options.budget` says (`Drawn` lengths drawn in order from the seed).
pub fn read(
    reader: impl Read,
    file: &str,
    options: SharegptOptions,
    tokenizer: Option<&Tokenizer>,
) -> Result<Sampled, PromptError> {
    use rand_xoshiro::rand_core::SeedableRng;
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let (taken, counts) = de
        .deserialize_seq(Keep { options, tokenizer })
        .and_then(|k| de.end().map(|()| k))
        .map_err(|e| PromptError::Dataset(format!("{file}: not ShareGPT JSON: {e}")))?;
    if counts.examined == 0 {
        return Err(PromptError::Dataset(format!(
            "{file}: no conversation opens with a user turn followed by an answer"
        )));
    }
    if taken.is_empty() {
        return Err(PromptError::Dataset(format!(
            "{file}: vLLM's length rules pruned all {} usable conversations (prompt or answer under {MIN_TOKENS} tokens, prompt over {MAX_PROMPT_TOKENS}, both over {MAX_TOTAL_TOKENS}): --sharegpt-keep-all keeps them",
            counts.examined
        )));
    }
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(options.seed);
    let prompts = taken
        .into_iter()
        .map(|t| {
            let budget = match options.budget {
                SharegptBudget::Answer => t.answer_tokens,
                SharegptBudget::Drawn(lengths) => lengths.draw(&mut rng),
            };
            Prompt::text(t.prompt, Some(budget))
        })
        .collect();
    Ok(Sampled { prompts, counts })
}

/// Keeps the first `cap` entries `usable` makes something of (whole conversations, for
/// multi-turn runs: `crate::conversation`) and reads past the rest without building them.
struct KeepFirst<'t, T> {
    cap: usize,
    tokenizer: Option<&'t Tokenizer>,
    usable: &'t dyn Fn(Entry, Option<&Tokenizer>) -> Option<T>,
}

impl<'de, T> Visitor<'de> for KeepFirst<'_, T> {
    type Value = (Vec<T>, u64);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut kept, mut read) = (Vec::new(), 0);
        while kept.len() < self.cap {
            match seq.next_element::<Entry>()? {
                Some(e) => kept.extend((self.usable)(e, self.tokenizer)),
                None => return Ok((kept, read)),
            }
            read += 1;
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            read += 1;
        }
        Ok((kept, read))
    }
}

/// Keeps a seeded uniform sample of `cap` of the entries `usable` makes something of, as
/// [`Keep`] samples prompts: each entry draws a key before it is judged, one that cannot make
/// the sample is not judged (not tokenized), and the `cap` smallest keys are kept, in key order.
struct KeepSample<'t, T> {
    cap: usize,
    seed: u64,
    tokenizer: Option<&'t Tokenizer>,
    usable: &'t dyn Fn(Entry, Option<&Tokenizer>) -> Option<T>,
}

/// An entry in [`KeepSample`]'s heap, ordered by its key only.
struct Keyed<T>((u64, u64), T);

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Keyed<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

impl<'de, T> Visitor<'de> for KeepSample<'_, T> {
    type Value = (Vec<T>, u64);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use rand_xoshiro::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed ^ SAMPLE_SEED);
        let mut heap = std::collections::BinaryHeap::<Keyed<T>>::with_capacity(self.cap.min(4096));
        let mut index = 0u64;
        while let Some(e) = seq.next_element::<Entry>()? {
            index += 1;
            let key = (rng.next_u64(), index);
            if heap.len() >= self.cap && heap.peek().is_some_and(|worst| key >= worst.0) {
                continue;
            }
            if let Some(kept) = (self.usable)(e, self.tokenizer) {
                heap.push(Keyed(key, kept));
                if heap.len() > self.cap {
                    heap.pop();
                }
            }
        }
        let kept = heap.into_sorted_vec().into_iter().map(|k| k.1).collect();
        Ok((kept, index))
    }
}

/// Which entries [`read_kept`] keeps: the first `cap` (`Sample::First`) or a seeded random
/// sample of `cap` (`Sample::Random`, seeded by `seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Take {
    pub(crate) cap: usize,
    pub(crate) sample: Sample,
    pub(crate) seed: u64,
}

/// The entries of a ShareGPT file that `usable` keeps, taken as `take` says, and how many
/// entries the file has, or why none are kept. `none`: why, when `usable` kept none although
/// some were usable (its own words), else the file has no usable conversation.
pub(crate) fn read_kept<T>(
    reader: impl Read,
    file: &str,
    take: Take,
    tokenizer: Option<&Tokenizer>,
    usable: &dyn Fn(Entry, Option<&Tokenizer>) -> Option<T>,
    none: &dyn Fn() -> Option<String>,
) -> Result<(Vec<T>, u64), PromptError> {
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let kept = match take.sample {
        Sample::First => de.deserialize_seq(KeepFirst {
            cap: take.cap,
            tokenizer,
            usable,
        }),
        Sample::Random => de.deserialize_seq(KeepSample {
            cap: take.cap,
            seed: take.seed,
            tokenizer,
            usable,
        }),
    }
    .and_then(|k| de.end().map(|()| k))
    .map_err(|e| PromptError::Dataset(format!("{file}: not ShareGPT JSON: {e}")))?;
    if kept.0.is_empty() {
        return Err(PromptError::Dataset(match none() {
            Some(why) => format!("{file}: {why}"),
            None => format!("{file}: no conversation opens with a user turn followed by an answer"),
        }));
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::PromptInput;
    use crate::synthetic::Lengths;

    const FILE: &str = r#"[
      {"id": "a", "conversations": [{"from": "human", "value": "what is a queue"},
                                     {"from": "gpt", "value": "one two three four five six"},
                                     {"from": "human", "value": "more"}]},
      {"id": "b", "conversations": [{"from": "gpt", "value": "answer first"}]},
      {"id": "c", "conversations": [{"from": "human", "value": "alone"}]},
      {"id": "d", "conversations": [{"from": "user", "value": "hi"}, {"from": "assistant", "value": "x"}]},
      {"id": "e"},
      {"id": "f", "conversations": [{"from": "human", "value": "late"}, {"from": "gpt", "value": "y"}]}
    ]"#;

    fn options(count: usize, sample: Sample, prune: bool) -> SharegptOptions {
        SharegptOptions {
            count,
            sample,
            prune,
            budget: SharegptBudget::Answer,
            seed: 0,
        }
    }

    fn first(count: usize) -> SharegptOptions {
        options(count, Sample::First, false)
    }

    #[test]
    fn the_first_user_turn_is_the_prompt_and_its_answer_the_budget() {
        let s = read(FILE.as_bytes(), "s.json", first(2), None).unwrap();
        let p = &s.prompts;
        assert_eq!(
            p.len(),
            2,
            "b, c and e have no user turn with an answer; f is past the count"
        );
        assert_eq!(p[0].input, PromptInput::Text("what is a queue".into()));
        // 6 words -> ceil(6 x 4 / 3) = 8 tokens; 1 word -> 2.
        assert_eq!((p[0].max_tokens, p[1].max_tokens), (Some(8), Some(2)));
        // Read to the end, counted: a and d kept, b and c unusable before d; e and f read past.
        let c = s.counts;
        assert_eq!(
            (c.conversations, c.unusable, c.examined, c.pruned, c.kept),
            (6, 2, 2, 0, 2)
        );
        let all = read(
            FILE.as_bytes(),
            "s.json",
            SharegptOptions {
                budget: SharegptBudget::Drawn(Lengths::Fixed(7)),
                ..first(100)
            },
            None,
        )
        .unwrap();
        assert_eq!(all.prompts.len(), 3);
        assert!(all.prompts.iter().all(|p| p.max_tokens == Some(7)));
        // By cl100k_base, "one two three four five six" is 6 tokens and "x" 1.
        let t = Tokenizer::load("cl100k_base").unwrap();
        let p = read(FILE.as_bytes(), "s.json", first(2), Some(&t))
            .unwrap()
            .prompts;
        assert_eq!((p[0].max_tokens, p[1].max_tokens), (Some(6), Some(1)));
    }

    #[test]
    fn vllms_length_rules_prune_at_their_bounds() {
        // Prompt under 4 or over 1,024; answer under 4; both over 2,048 (answer budgets).
        assert!(pruned(3, 100, true) && !pruned(4, 100, true));
        assert!(pruned(1025, 4, true) && !pruned(1024, 4, true));
        assert!(pruned(100, 3, true) && !pruned(100, 4, true));
        assert!(pruned(1024, 1025, true) && !pruned(1024, 1024, true));
        // A drawn budget: the answer is not the request's, only the prompt is judged.
        assert!(!pruned(100, 1, false) && !pruned(1024, 5000, false));
        assert!(pruned(3, 100, false) && pruned(1025, 100, false));
    }

    /// A conversation of a `prompt`-word prompt and an `answer`-word answer.
    fn pair(prompt: usize, answer: usize) -> serde_json::Value {
        let words = |n: usize| vec!["w"; n].join(" ");
        serde_json::json!({"conversations": [
            {"from": "human", "value": words(prompt)},
            {"from": "gpt", "value": words(answer)}
        ]})
    }

    #[test]
    fn pairs_too_short_or_too_long_by_the_word_rule_are_pruned_and_counted() {
        // Words -> tokens by ceil(4w/3): 2 -> 3 (short), 3 -> 4, 768 -> 1024, 769 -> 1026 (long);
        // 768 + 769 words -> 1024 + 1026 = 2050 (over 2,048), 768 + 767 -> 1024 + 1023 = 2047.
        let file = serde_json::json!([
            pair(2, 10),
            pair(3, 10),
            pair(10, 2),
            pair(768, 10),
            pair(769, 10),
            pair(768, 769),
            pair(768, 767),
        ])
        .to_string();
        let s = read(
            file.as_bytes(),
            "s.json",
            options(100, Sample::First, true),
            None,
        )
        .unwrap();
        let words: Vec<usize> = s
            .prompts
            .iter()
            .map(|p| match &p.input {
                PromptInput::Text(t) => t.split_whitespace().count(),
                PromptInput::Messages(_) => unreachable!(),
            })
            .collect();
        assert_eq!(words, [3, 768, 768]);
        assert_eq!(s.prompts[2].max_tokens, Some(1023));
        let c = s.counts;
        assert_eq!((c.examined, c.pruned, c.kept, c.pruning), (7, 4, 3, true));
        // Kept all: the 7, in order.
        let s = read(
            file.as_bytes(),
            "s.json",
            options(100, Sample::First, false),
            None,
        )
        .unwrap();
        assert_eq!((s.prompts.len(), s.counts.pruned), (7, 0));
        // Everything pruned: said, with the way out.
        let short = serde_json::json!([pair(1, 10)]).to_string();
        let e = read(
            short.as_bytes(),
            "s.json",
            options(9, Sample::Random, true),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("pruned all 1 usable") && e.contains("--sharegpt-keep-all"),
            "{e}"
        );
    }

    /// The first word of each prompt of a sample: the conversation's number.
    fn numbers(s: &Sampled) -> Vec<usize> {
        s.prompts
            .iter()
            .map(|p| match &p.input {
                PromptInput::Text(t) => t.split_whitespace().next().unwrap().parse().unwrap(),
                PromptInput::Messages(_) => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn a_random_sample_is_uniform_over_the_kept_conversations_and_repeats_by_seed() {
        // 20 conversations numbered 0..20; the odd ones have a 2-word prompt (pruned).
        let file = serde_json::Value::Array(
            (0..20)
                .map(|k| {
                    let prompt = if k % 2 == 1 {
                        format!("{k} x")
                    } else {
                        format!("{k} a b c")
                    };
                    serde_json::json!({"conversations": [
                        {"from": "human", "value": prompt},
                        {"from": "gpt", "value": "one two three four"}
                    ]})
                })
                .collect(),
        )
        .to_string();
        let sample = |seed: u64, count: usize| {
            let o = SharegptOptions {
                seed,
                ..options(count, Sample::Random, true)
            };
            read(file.as_bytes(), "s.json", o, None).unwrap()
        };
        let a = sample(1, 4);
        assert_eq!(a.prompts.len(), 4);
        assert!(numbers(&a).iter().all(|n| n % 2 == 0), "{:?}", numbers(&a));
        assert_eq!(
            numbers(&sample(1, 4)),
            numbers(&a),
            "same seed, same sample"
        );
        assert_ne!(numbers(&sample(2, 4)), numbers(&a));
        let c = a.counts;
        assert_eq!(
            (c.conversations, c.unusable, c.kept, c.random, c.seed),
            (20, 0, 4, true, 1)
        );
        // Those examined are kept, pruned, or displaced by a smaller key.
        assert!(c.examined >= c.pruned + c.kept && c.pruned >= 1, "{c:?}");
        // Asking for more than there are: every even one, in a shuffled order.
        let mut all = numbers(&sample(3, 100));
        assert_ne!(all, (0..20).step_by(2).collect::<Vec<_>>());
        all.sort_unstable();
        assert_eq!(all, (0..20).step_by(2).collect::<Vec<_>>());
        // Uniform: over 4,000 seeds, each of the 10 kept conversations is in a sample of 3 with
        // probability 3/10: 1,200 times expected, sd sqrt(4000 x 0.3 x 0.7) = 29; 5 sd = 145.
        let mut seen = [0u32; 20];
        for seed in 0..4000 {
            for n in numbers(&sample(seed, 3)) {
                seen[n] += 1;
            }
        }
        for k in (0..20).step_by(2) {
            assert!(seen[k].abs_diff(1200) < 145, "{seen:?}");
        }
        assert!((1..20).step_by(2).all(|k| seen[k] == 0));
    }

    #[test]
    fn a_file_that_is_not_sharegpt_is_refused_with_its_name() {
        for (text, want) in [
            ("{}", "not ShareGPT JSON"),
            ("[1]", "not ShareGPT JSON"),
            ("[{\"conversations\": 3}]", "not ShareGPT JSON"),
            ("[] x", "not ShareGPT JSON"),
            ("[]", "no conversation opens with a user turn"),
        ] {
            let e = read(text.as_bytes(), "s.json", first(10), None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.starts_with("s.json: "), "{text}: {e}");
        }
    }
}
