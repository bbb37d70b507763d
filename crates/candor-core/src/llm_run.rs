//! What an LLM run records beyond its measures: its settings (`LlmSettings`, the results'
//! `config.llm`, shown in the reports' settings table) and how the run's tokenizer agreed with
//! the server's own counts (`TokenizerCheck`).

use serde::{Deserialize, Serialize};

/// The settings of an `--llm` run as they were in effect (defaults included), so that a
/// report can show what produced the numbers without the command line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    /// `--llm`: the API (`openai` chat, `openai-completions`...).
    pub api: String,
    pub model: String,
    /// `--tokenizer`; absent: token counts not from the server's usage are estimates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Where the prompts came from: `synthetic`, `--prompts FILE`, `--sharegpt FILE`.
    pub dataset: String,
    /// `--prompt-tokens`, `--output-tokens`, `--prefix-tokens` as given (or their defaults);
    /// a prompts file's own budgets win over the output tokens.
    pub prompt_tokens: String,
    pub output_tokens: String,
    pub prefix_tokens: u64,
    /// How the output budget is spelled in the body (`max_tokens`, `max_completion_tokens`).
    pub max_tokens_field: String,
    /// Whole answers (`--no-stream`) rather than streams.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub whole_answers: bool,
    /// `--llm-body`, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_body: Option<String>,
    /// `--stream-timeout` and `--event-timeout` in seconds (0: none).
    pub stream_timeout_s: f64,
    pub event_timeout_s: f64,
    /// `--sharegpt`: how the prompts were sampled from the file, and how many were pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<DatasetSample>,
}

/// How a dataset's prompts were taken (`--sharegpt`): of the conversations read, those without
/// a user turn and an answer are unusable; of the usable ones, those that could make the sample
/// were examined by vLLM's length rules, which pruned some; the rest of those examined are kept
/// or were displaced by ones that drew smaller sampling keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetSample {
    /// A random sample seeded by `seed` (else the first ones kept, in the file's order).
    pub random: bool,
    pub seed: u64,
    /// vLLM's length rules applied (`--sharegpt-keep-all` turns them off).
    pub pruning: bool,
    pub conversations: u64,
    pub unusable: u64,
    pub examined: u64,
    pub pruned: u64,
    pub kept: u64,
}

impl DatasetSample {
    /// The settings table's rows.
    pub fn rows(&self) -> [(&'static str, String); 2] {
        let c = crate::units::format_count;
        let how = if self.random {
            format!("at random (seed {})", self.seed)
        } else {
            "the first ones".to_string()
        };
        let sample = format!(
            "{} prompts, {how}, from {} conversations read ({} without a user turn and an answer)",
            c(self.kept),
            c(self.conversations),
            c(self.unusable)
        );
        let pruned = if self.pruning {
            format!(
                "{} of {} examined (vLLM's rules: prompt or answer under 4 tokens, prompt over 1,024, prompt + answer over 2,048)",
                c(self.pruned),
                c(self.examined)
            )
        } else {
            "none: --sharegpt-keep-all".to_string()
        };
        [("dataset sample", sample), ("pruned", pruned)]
    }
}

impl LlmSettings {
    /// The rows of a report's settings table, in its order.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let mut rows = vec![
            ("API", self.api.clone()),
            ("model", self.model.clone()),
            ("dataset", self.dataset.clone()),
            ("prompt tokens", self.prompt_tokens.clone()),
            ("output tokens (budget)", self.output_tokens.clone()),
        ];
        if let Some(sample) = &self.sample {
            // Beside the dataset they describe.
            for (k, row) in sample.rows().into_iter().enumerate() {
                rows.insert(3 + k, row);
            }
        }
        if self.prefix_tokens > 0 {
            rows.push(("shared prefix tokens", self.prefix_tokens.to_string()));
        }
        rows.push((
            "tokenizer",
            match &self.tokenizer {
                Some(t) => t.clone(),
                None => "none: counts not from the server's usage are estimates".into(),
            },
        ));
        rows.push(("budget field", self.max_tokens_field.clone()));
        if self.whole_answers {
            rows.push(("answers", "whole (--no-stream)".into()));
        }
        if let Some(b) = &self.llm_body {
            rows.push(("extra body fields", b.clone()));
        }
        let secs = |s: f64| {
            if s > 0.0 {
                crate::units::format_ns(s * 1e9)
            } else {
                "none".into()
            }
        };
        rows.push(("stream timeout", secs(self.stream_timeout_s)));
        rows.push(("event timeout", secs(self.event_timeout_s)));
        rows
    }
}

/// The run's tokenizer against the server's `usage.completion_tokens`, over the successful
/// responses that had both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TokenizerCheck {
    pub responses: u64,
    /// Output tokens by the server's usage, and by the tokenizer, over those responses.
    pub usage_tokens: u64,
    pub tokenizer_tokens: u64,
    /// Responses whose two counts differ by more than 5% of the server's.
    pub disagreeing: u64,
}

impl TokenizerCheck {
    /// Adds another phase's (or run's) check.
    pub fn add(&mut self, o: &TokenizerCheck) {
        self.responses += o.responses;
        self.usage_tokens += o.usage_tokens;
        self.tokenizer_tokens += o.tokenizer_tokens;
        self.disagreeing += o.disagreeing;
    }

    /// The warning the results carry when the totals differ by more than 5% of the server's
    /// count, or some responses' counts did.
    pub fn warning(&self) -> Option<String> {
        let apart = self.usage_tokens.abs_diff(self.tokenizer_tokens) as f64;
        let share = if self.usage_tokens > 0 {
            apart / self.usage_tokens as f64
        } else if apart > 0.0 {
            1.0
        } else {
            0.0
        };
        (share > 0.05 || self.disagreeing > 0).then(|| {
            format!(
                "the tokenizer counted {} output tokens where the server's usage said {} ({:.1}% apart; \
                 {} of {} responses more than 5% apart): the tokenizer is probably not the model's",
                self.tokenizer_tokens,
                self.usage_tokens,
                share * 100.0,
                self.disagreeing,
                self.responses
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_that_disagrees_with_the_server_is_warned_of() {
        let mut c = TokenizerCheck {
            responses: 10,
            usage_tokens: 200,
            tokenizer_tokens: 209,
            disagreeing: 0,
        };
        assert_eq!(
            c.warning(),
            None,
            "4.5% apart in total, no response past 5%"
        );
        c.disagreeing = 1;
        assert!(c.warning().unwrap().contains("1 of 10 responses"));
        c.disagreeing = 0;
        c.tokenizer_tokens = 240;
        let w = c.warning().unwrap();
        assert!(
            w.contains("counted 240 output tokens where the server's usage said 200 (20.0% apart"),
            "{w}"
        );
        let mut sum = TokenizerCheck::default();
        sum.add(&c);
        sum.add(&c);
        assert_eq!(
            (sum.responses, sum.usage_tokens, sum.tokenizer_tokens),
            (20, 400, 480)
        );
    }

    #[test]
    fn settings_rows_say_when_counts_are_estimates() {
        let s = LlmSettings {
            api: "openai".into(),
            stream_timeout_s: 60.0,
            ..Default::default()
        };
        let rows = s.rows();
        assert!(rows.contains(&(
            "tokenizer",
            "none: counts not from the server's usage are estimates".into()
        )));
        assert!(rows.contains(&("event timeout", "none".into())));
        assert!(!rows.iter().any(|(k, _)| *k == "shared prefix tokens"));
        assert!(!rows.iter().any(|(k, _)| *k == "dataset sample"));
    }

    #[test]
    fn a_datasets_sample_and_its_pruning_are_rows() {
        let mut sample = DatasetSample {
            random: true,
            seed: 7,
            pruning: true,
            conversations: 94_145,
            unusable: 3_210,
            examined: 1_012,
            pruned: 12,
            kept: 1_000,
        };
        let s = LlmSettings {
            dataset: "--sharegpt s.json".into(),
            sample: Some(sample),
            ..Default::default()
        };
        let rows = s.rows();
        assert_eq!(rows[2].0, "dataset");
        assert_eq!(
            rows[3],
            (
                "dataset sample",
                "1,000 prompts, at random (seed 7), from 94,145 conversations read (3,210 without a user turn and an answer)".into()
            )
        );
        assert_eq!(
            rows[4],
            (
                "pruned",
                "12 of 1,012 examined (vLLM's rules: prompt or answer under 4 tokens, prompt over 1,024, prompt + answer over 2,048)".into()
            )
        );
        sample.pruning = false;
        sample.random = false;
        let [first, none] = sample.rows();
        assert!(
            first.1.starts_with("1,000 prompts, the first ones, from"),
            "{}",
            first.1
        );
        assert_eq!(none.1, "none: --sharegpt-keep-all");
        // Results written before samples were recorded read back without one.
        let old: LlmSettings = serde_json::from_str(r#"{"api":"openai"}"#).unwrap();
        assert_eq!(old.sample, None);
    }
}
