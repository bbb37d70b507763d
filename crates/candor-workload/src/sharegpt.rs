//! ShareGPT-format datasets (`--sharegpt FILE`), read as vLLM's `bench serve --dataset-name
//! sharegpt` reads them: a JSON array of `{"conversations": [{"from": "human", "value": ...},
//! {"from": "gpt", "value": ...}, ...]}`; the first human turn is the prompt, and the answer
//! that follows it gives the output budget when asked (`--sharegpt-budget answer`).
//!
//! The file is read as a stream: only the prompts kept are built, so a dataset of hundreds of
//! megabytes (ShareGPT_V3 is ~640 MB) costs the kept prompts, not the file.

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

/// An answer's length in tokens: by `tokenizer`, else by the inverse of WORDS_PER_TOKEN
/// (candor serve's rule); at least 1.
pub(crate) fn answer_tokens(answer: &str, tokenizer: Option<&Tokenizer>) -> u64 {
    let tokens = match tokenizer {
        Some(t) => t.count(answer),
        None => (answer.split_whitespace().count() as u64 * 4).div_ceil(3),
    };
    tokens.max(1)
}

/// A conversation's prompt and its answer's length in tokens, if it has both: a first turn
/// from the user (`human`/`user`) with text, then an answer (`gpt`/`chatgpt`/`assistant`).
fn usable(e: Entry, tokenizer: Option<&Tokenizer>) -> Option<(String, u64)> {
    let mut turns = e.conversations.into_iter();
    let (ask, answer) = (turns.next()?, turns.next()?);
    if !asks(&ask) || !answers(&answer) || ask.value.trim().is_empty() {
        return None;
    }
    let tokens = answer_tokens(&answer.value, tokenizer);
    Some((ask.value, tokens))
}

/// Keeps the first `cap` usable conversations (what `usable` makes of an entry, when it makes
/// something) and reads past the rest without building them.
pub(crate) struct Keep<'t, T> {
    pub(crate) cap: usize,
    pub(crate) tokenizer: Option<&'t Tokenizer>,
    pub(crate) usable: &'t dyn Fn(Entry, Option<&Tokenizer>) -> Option<T>,
}

impl<'de, T> Visitor<'de> for Keep<'_, T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::new();
        while kept.len() < self.cap {
            match seq.next_element::<Entry>()? {
                Some(e) => kept.extend((self.usable)(e, self.tokenizer)),
                None => return Ok(kept),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(kept)
    }
}

/// Reads up to `cap` prompts from a ShareGPT file's bytes (`file` names it in errors), each
/// budgeted as `budget` says, `Drawn` lengths drawn in order from `seed`.
pub fn read(
    reader: impl Read,
    file: &str,
    cap: usize,
    budget: SharegptBudget,
    seed: u64,
    tokenizer: Option<&Tokenizer>,
) -> Result<Vec<Prompt>, PromptError> {
    use rand_xoshiro::rand_core::SeedableRng;
    let kept = read_kept(reader, file, cap, tokenizer, &usable)?;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    Ok(kept
        .into_iter()
        .map(|(prompt, answer_tokens)| {
            let budget = match budget {
                SharegptBudget::Answer => answer_tokens,
                SharegptBudget::Drawn(lengths) => lengths.draw(&mut rng),
            };
            Prompt::text(prompt, Some(budget))
        })
        .collect())
}

/// The first `cap` entries of a ShareGPT file that `usable` keeps, or why there are none.
pub(crate) fn read_kept<T>(
    reader: impl Read,
    file: &str,
    cap: usize,
    tokenizer: Option<&Tokenizer>,
    usable: &dyn Fn(Entry, Option<&Tokenizer>) -> Option<T>,
) -> Result<Vec<T>, PromptError> {
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let kept = de
        .deserialize_seq(Keep {
            cap,
            tokenizer,
            usable,
        })
        .and_then(|k| de.end().map(|()| k))
        .map_err(|e| PromptError::Dataset(format!("{file}: not ShareGPT JSON: {e}")))?;
    if kept.is_empty() {
        return Err(PromptError::Dataset(format!(
            "{file}: no conversation opens with a user turn followed by an answer"
        )));
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

    #[test]
    fn the_first_user_turn_is_the_prompt_and_its_answer_the_budget() {
        let p = read(
            FILE.as_bytes(),
            "s.json",
            2,
            SharegptBudget::Answer,
            0,
            None,
        )
        .unwrap();
        assert_eq!(
            p.len(),
            2,
            "b, c and e have no user turn with an answer; f is past the cap"
        );
        assert_eq!(p[0].input, PromptInput::Text("what is a queue".into()));
        // 6 words -> ceil(6 x 4 / 3) = 8 tokens; 1 word -> 2.
        assert_eq!((p[0].max_tokens, p[1].max_tokens), (Some(8), Some(2)));
        let all = read(
            FILE.as_bytes(),
            "s.json",
            100,
            SharegptBudget::Drawn(Lengths::Fixed(7)),
            0,
            None,
        )
        .unwrap();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|p| p.max_tokens == Some(7)));
        // By cl100k_base, "one two three four five six" is 6 tokens and "x" 1.
        let t = Tokenizer::load("cl100k_base").unwrap();
        let p = read(
            FILE.as_bytes(),
            "s.json",
            2,
            SharegptBudget::Answer,
            0,
            Some(&t),
        )
        .unwrap();
        assert_eq!((p[0].max_tokens, p[1].max_tokens), (Some(6), Some(1)));
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
            let e = read(
                text.as_bytes(),
                "s.json",
                10,
                SharegptBudget::Answer,
                0,
                None,
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with("s.json: ") && e.contains(want), "{text}: {e}");
        }
    }
}
