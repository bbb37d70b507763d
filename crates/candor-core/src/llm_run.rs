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
    /// The model the requests name, and where it came from.
    pub model: String,
    #[serde(skip_serializing_if = "ModelSource::is_flag")]
    pub model_from: ModelSource,
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
    /// Embeddings (`--llm openai-embeddings`): the inputs a request carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_batch: Option<u32>,
    /// `--llm-body`, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_body: Option<String>,
    /// `--stream-timeout` and `--event-timeout` in seconds (0: none).
    pub stream_timeout_s: f64,
    pub event_timeout_s: f64,
    /// What the server said of itself before the load (`GET /v1/models`, probed once); absent
    /// in results written before the probe existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<LlmBackend>,
    /// The per-request bounds goodput was judged by (`--goodput`, or those the `--slo`
    /// latencies set), e.g. `ttft<500ms,tpot<50ms`; absent: no goodput was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<String>,
    /// `--sharegpt`: how the prompts were sampled from the file, and how many were pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<DatasetSample>,
}

/// Where an LLM run's model came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// `--model` (results written before the field existed read as this).
    #[default]
    Flag,
    /// `--model` was not given: the first model the server listed before the load (as vLLM's
    /// `bench serve` and guidellm take it).
    Server,
    /// `--model` was not given and the server listed none: [`PLACEHOLDER_MODEL`] was sent.
    Placeholder,
}

impl ModelSource {
    fn is_flag(&self) -> bool {
        *self == ModelSource::Flag
    }
}

/// The model requests name until the server names one, when `--model` is not given.
pub const PLACEHOLDER_MODEL: &str = "default";

/// The backend an LLM run measured, as `GET {base}/v1/models` named it before the load: the
/// models it listed (`id`, `owned_by`: vLLM says `vllm`) and its `Server` header. A probe that
/// failed leaves `models` empty and says why in `unknown`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmBackend {
    pub models: Vec<BackendModel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Why the models are not known (the probe's failure, in words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

/// One model of a `/v1/models` list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendModel {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
}

/// The most models a backend's list keeps (a server listing thousands is named by the first).
pub const MAX_BACKEND_MODELS: usize = 16;

impl LlmBackend {
    /// The "backend" row: who owns the models and which they are, or why unknown.
    pub fn describe(&self) -> String {
        if self.models.is_empty() {
            return format!(
                "unknown ({})",
                self.unknown.as_deref().unwrap_or("no models listed")
            );
        }
        let mut owners: Vec<&str> = self
            .models
            .iter()
            .filter_map(|m| m.owned_by.as_deref())
            .collect();
        owners.dedup();
        let ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
        format!(
            "{} (models: {})",
            if owners.is_empty() {
                "owner not said".to_string()
            } else {
                owners.join(", ")
            },
            ids.join(", ")
        )
    }

    /// The warning when `model` (`--model`) is not among the models listed; none when the list
    /// is unknown.
    pub fn model_warning(&self, model: &str) -> Option<String> {
        (!self.models.is_empty() && !self.models.iter().any(|m| m.id == model)).then(|| {
            let ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
            format!(
                "--model {model} is not among the models the server lists ({}): its requests may be refused",
                ids.join(", ")
            )
        })
    }
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
    /// `--multi-turn`: conversations cut before their first turn the rules fail (those whose
    /// first turn fails are `pruned`).
    pub cut: u64,
    pub kept: u64,
    /// `--multi-turn`: what is kept are whole conversations, not single prompts.
    pub whole_conversations: bool,
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
        let taken = if self.whole_conversations {
            "conversations"
        } else {
            "prompts"
        };
        let sample = format!(
            "{} {taken}, {how}, from {} conversations read ({} without a user turn and an answer)",
            c(self.kept),
            c(self.conversations),
            c(self.unusable)
        );
        let cut = if self.cut > 0 {
            format!(
                ", {} more cut before their first turn that fails (a turn's prompt: all earlier messages and its own)",
                c(self.cut)
            )
        } else {
            String::new()
        };
        let pruned = if self.pruning {
            format!(
                "{} of {} examined (vLLM's rules: prompt or answer under 4 tokens, prompt over 1,024, prompt + answer over 2,048){cut}",
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
            (
                "model",
                match self.model_from {
                    ModelSource::Flag => self.model.clone(),
                    ModelSource::Server => format!(
                        "{} (the first the server lists: --model not given)",
                        self.model
                    ),
                    ModelSource::Placeholder => format!(
                        "{} (--model not given, and the server listed no model)",
                        self.model
                    ),
                },
            ),
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
        if self.embedding_batch.is_none() {
            rows.push(("budget field", self.max_tokens_field.clone()));
        }
        if self.whole_answers {
            rows.push(("answers", "whole (--no-stream)".into()));
        }
        if let Some(n) = self.embedding_batch {
            rows.push(("inputs per request", n.to_string()));
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
        if self.embedding_batch.is_none() {
            rows.push(("event timeout", secs(self.event_timeout_s)));
        }
        if let Some(b) = &self.backend {
            rows.push(("backend", b.describe()));
            rows.push((
                "server",
                b.server.clone().unwrap_or_else(|| "not said".into()),
            ));
        }
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
    fn the_backend_is_named_by_its_models_owner_and_server() {
        let b = LlmBackend {
            models: vec![BackendModel {
                id: "llama".into(),
                owned_by: Some("vllm".into()),
            }],
            server: Some("uvicorn".into()),
            unknown: None,
        };
        let s = LlmSettings {
            backend: Some(b.clone()),
            ..Default::default()
        };
        let rows = s.rows();
        assert!(rows.contains(&("backend", "vllm (models: llama)".into())));
        assert!(rows.contains(&("server", "uvicorn".into())));
        assert_eq!(b.model_warning("llama"), None);
        assert!(b
            .model_warning("gpt")
            .unwrap()
            .starts_with("--model gpt is not among the models the server lists (llama)"));
        let unknown = LlmBackend {
            unknown: Some("GET /v1/models: HTTP 404".into()),
            ..Default::default()
        };
        assert_eq!(unknown.describe(), "unknown (GET /v1/models: HTTP 404)");
        assert_eq!(unknown.model_warning("x"), None);
        // Older results have no backend: no rows for it.
        assert!(!LlmSettings::default()
            .rows()
            .iter()
            .any(|(k, _)| *k == "backend"));
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
            cut: 0,
            kept: 1_000,
            whole_conversations: false,
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
        sample.whole_conversations = true;
        assert!(sample.rows()[0]
            .1
            .starts_with("1,000 conversations, the first ones, from"));
        // Results written before samples were recorded read back without one.
        let old: LlmSettings = serde_json::from_str(r#"{"api":"openai"}"#).unwrap();
        assert_eq!(old.sample, None);
    }
}

/// Multi-turn conversations (`--multi-turn`, `--turns`): how the conversations a phase started
/// ended. Each conversation ends exactly one way, booked in the phase of the turn that decided
/// it (`started` in the phase of its first turn), so over a run `started = completed + cut +
/// unqueued + past_end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversations {
    /// First turns taken from the schedule.
    pub started: u64,
    /// Every turn completed.
    pub completed: u64,
    /// A turn failed, or was still outstanding (sent, or due and unsent) when the run ended.
    pub cut: u64,
    /// A turn completed while the queue of follow-ups (allocated before the run) was full: its
    /// next turn was never intended.
    pub unqueued: u64,
    /// A turn completed and its next turn would have been due after the schedule's end.
    pub past_end: u64,
    /// Turns taken to be sent (first turns and follow-ups): `turns / started` is the mean
    /// number of turns a conversation sent.
    pub turns: u64,
}

impl Conversations {
    /// Adds `other`'s counts (threads, shards).
    pub fn add(&mut self, other: &Conversations) {
        self.started += other.started;
        self.completed += other.completed;
        self.cut += other.cut;
        self.unqueued += other.unqueued;
        self.past_end += other.past_end;
        self.turns += other.turns;
    }

    /// Conversations cut short, whichever way (a failed or unfinished turn, a full queue, the
    /// schedule's end).
    pub fn cut_short(&self) -> u64 {
        self.cut + self.unqueued + self.past_end
    }

    /// The mean number of turns a started conversation sent (0 when none started).
    pub fn turns_per_conversation(&self) -> f64 {
        if self.started == 0 {
            0.0
        } else {
            self.turns as f64 / self.started as f64
        }
    }
}
