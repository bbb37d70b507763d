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
    /// The per-request bounds goodput was judged by (`--goodput`, or those the `--slo`
    /// latencies set), e.g. `ttft<500ms,tpot<50ms`; absent: no goodput was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<String>,
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
        if let Some(g) = &self.goodput {
            rows.push(("goodput bounds", g.clone()));
        }
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
        assert!(!rows.iter().any(|(k, _)| *k == "goodput bounds"));
        let judged = LlmSettings {
            goodput: Some("ttft<500ms".into()),
            ..s
        };
        assert_eq!(
            judged.rows().last(),
            Some(&("goodput bounds", "ttft<500ms".to_string()))
        );
    }
}
