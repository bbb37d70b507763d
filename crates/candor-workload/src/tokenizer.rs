//! Exact token counts (`--tokenizer`): a tiktoken encoding embedded in the binary
//! (`cl100k_base`, `o200k_base`, by `tiktoken-rs`, no download) or a Hugging Face
//! `tokenizer.json` (by the `tokenizers` crate), used before the run to make prompts of exactly
//! N tokens and to count what a dataset's prompts hold. Output tokens are counted with it per content chunk when the
//! server sends no usage (`candor_stream::count`).

use std::path::Path;
use thiserror::Error;

/// A loaded tokenizer.
pub enum Tokenizer {
    Tiktoken {
        name: &'static str,
        bpe: &'static tiktoken_rs::CoreBPE,
    },
    HuggingFace {
        path: String,
        inner: Box<tokenizers::Tokenizer>,
    },
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TokenizerError {
    #[error("--tokenizer {0}: not a tiktoken encoding (cl100k_base, o200k_base) nor a tokenizer.json file")]
    Unknown(String),
    #[error("--tokenizer {path}: not a Hugging Face tokenizer.json: {why}")]
    BadFile { path: String, why: String },
    #[error("--tokenizer {name}: cannot make a prompt of exactly {tokens} tokens")]
    Inexact { name: String, tokens: u64 },
}

impl Tokenizer {
    /// `cl100k_base` or `o200k_base` (embedded), else a path to a `tokenizer.json`.
    pub fn load(spec: &str) -> Result<Tokenizer, TokenizerError> {
        match spec {
            "cl100k_base" => Ok(Tokenizer::Tiktoken {
                name: "cl100k_base",
                bpe: tiktoken_rs::cl100k_base_singleton(),
            }),
            "o200k_base" => Ok(Tokenizer::Tiktoken {
                name: "o200k_base",
                bpe: tiktoken_rs::o200k_base_singleton(),
            }),
            path if Path::new(path).is_file() => {
                let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| {
                    TokenizerError::BadFile {
                        path: path.to_string(),
                        why: e.to_string(),
                    }
                })?;
                Ok(Tokenizer::HuggingFace {
                    path: path.to_string(),
                    inner: Box::new(inner),
                })
            }
            other => Err(TokenizerError::Unknown(other.to_string())),
        }
    }

    /// How it is named in the results: the encoding, or the file.
    pub fn name(&self) -> &str {
        match self {
            Tokenizer::Tiktoken { name, .. } => name,
            Tokenizer::HuggingFace { path, .. } => path,
        }
    }

    /// The token ids of `text`, special-token text read as plain text and no special tokens
    /// added (a server adds its chat template's own; what is counted is what was written).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match self {
            Tokenizer::Tiktoken { bpe, .. } => bpe.encode_ordinary(text),
            Tokenizer::HuggingFace { inner, .. } => inner
                .encode(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    /// The number of tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        self.encode(text).len() as u64
    }

    /// A text of exactly `tokens` tokens: `words` cycled (each after a space) until the next
    /// would pass `tokens`, then single-token fillers (` a`, or ` 0` for a tokenizer that
    /// merges those) up to it; checked by counting the whole text.
    pub fn exact_text(
        &self,
        start: &str,
        words: &[&str],
        tokens: u64,
    ) -> Result<String, TokenizerError> {
        let inexact = || TokenizerError::Inexact {
            name: self.name().to_string(),
            tokens,
        };
        let mut text = start.to_string();
        let mut have = self.count(&text);
        if have > tokens {
            return Err(inexact());
        }
        // A word's tokens after a space do not depend on what came before for these
        // tokenizers' pre-splitting (it splits before each space-led word), so the count is
        // kept by adding each word's own; the final count checks that.
        let mut k = 0;
        loop {
            let word = format!(" {}", words[k % words.len()]);
            let n = self.count(&word);
            if have + n > tokens {
                break;
            }
            text.push_str(&word);
            have += n;
            k += 1;
            if have == tokens {
                break;
            }
        }
        let filler = [" a", " 0", " x"]
            .into_iter()
            .find(|f| self.count(f) == 1)
            .ok_or_else(inexact)?;
        while have < tokens {
            text.push_str(filler);
            have += 1;
        }
        if self.count(&text) == tokens {
            Ok(text)
        } else {
            Err(inexact())
        }
    }
}

/// The tokenizer counts the output of LLM streams (each content chunk's text) during the run.
impl candor_stream::count::TokenCounter for Tokenizer {
    fn count_tokens(&self, text: &str) -> u64 {
        self.count(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_of_exactly_n_tokens_are_made_for_each_embedded_encoding() {
        for name in ["cl100k_base", "o200k_base"] {
            let t = Tokenizer::load(name).unwrap();
            assert_eq!(t.name(), name);
            for n in [1, 2, 7, 128, 1000] {
                let text = t
                    .exact_text("0", &["latency", "percentile", "queue"], n)
                    .unwrap();
                assert_eq!(t.count(&text), n, "{name} {n}: {text}");
                assert!(text.starts_with('0'));
            }
            // The start alone is longer than 1 token: refused, not silently longer.
            assert!(t.exact_text("latency percentile queue", &["a"], 1).is_err());
        }
    }

    #[test]
    fn an_unknown_name_and_a_bad_file_are_refused_by_name() {
        let e = Tokenizer::load("gpt5_base").err().unwrap().to_string();
        assert!(
            e.starts_with("--tokenizer gpt5_base: not a tiktoken encoding"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, "{\"not\": \"a tokenizer\"}").unwrap();
        let e = Tokenizer::load(path.to_str().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a Hugging Face tokenizer.json"), "{e}");
    }

    #[test]
    fn a_hugging_face_tokenizer_json_is_read_and_counts_its_own_tokens() {
        // A word-level tokenizer.json written here: each whitespace-split word is one token.
        let json = r#"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null, "model": {"type": "WordLevel", "unk_token": "[UNK]",
            "vocab": {"[UNK]": 0, "hello": 1, "world": 2, "a": 3, "0": 4, "latency": 5}}}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json).unwrap();
        let t = Tokenizer::load(path.to_str().unwrap()).unwrap();
        assert_eq!(t.encode("hello world"), vec![1, 2]);
        assert_eq!(t.encode("hello nope"), vec![1, 0]);
        let text = t.exact_text("0", &["latency"], 9).unwrap();
        assert_eq!(t.count(&text), 9);
        assert_eq!(
            text,
            "0 latency latency latency latency latency latency latency latency"
        );
    }
}
