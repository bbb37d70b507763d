//! What an LLM run sends (`--llm openai`): OpenAI-compatible streaming requests built once,
//! before the run, from a prompts file (`--prompts FILE`, JSON lines) or from synthetic prompts
//! of a given length (`--prompt-tokens N --output-tokens M`). Each prompt becomes one request of
//! a request set, so the request source, weights and `by_request` rows work as for any set.

use candor_wire::requests::RequestSpec;
use serde_json::{json, Value};
use std::fmt;
use thiserror::Error;

/// Which OpenAI endpoint the requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmApi {
    /// `POST /v1/chat/completions` with `messages`.
    Chat,
    /// `POST /v1/completions` with `prompt`.
    Completions,
}

impl LlmApi {
    pub fn path(self) -> &'static str {
        match self {
            LlmApi::Chat => "/v1/chat/completions",
            LlmApi::Completions => "/v1/completions",
        }
    }

    /// The name of `--llm`.
    pub fn name(self) -> &'static str {
        match self {
            LlmApi::Chat => "openai",
            LlmApi::Completions => "openai-completions",
        }
    }
}

impl fmt::Display for LlmApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LlmApi {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(LlmApi::Chat),
            "openai-completions" => Ok(LlmApi::Completions),
            other => Err(PromptError::UnknownApi(other.to_string())),
        }
    }
}

/// A synthetic prompt of `tokens` tokens has `ceil(tokens * 3 / 4)` words (a token is about three
/// quarters of a word); `candor serve --llm` counts a prompt's tokens by the inverse rule.
pub const WORDS_PER_TOKEN: (u64, u64) = (3, 4);

/// One prompt: what the request asks and how long an answer it allows.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text {
        prompt: String,
        max_tokens: Option<u64>,
    },
    Messages {
        messages: Vec<Value>,
        max_tokens: Option<u64>,
    },
}

impl Prompt {
    /// The output tokens it asks for at most, when it says.
    pub fn max_tokens(&self) -> Option<u64> {
        match self {
            Prompt::Text { max_tokens, .. } | Prompt::Messages { max_tokens, .. } => *max_tokens,
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PromptError {
    #[error("unknown --llm '{0}': expected openai or openai-completions")]
    UnknownApi(String),
    #[error("{file}:{line}: {why}")]
    Line {
        file: String,
        line: usize,
        why: String,
    },
    #[error("{0}: no prompts (every line is empty)")]
    Empty(String),
    #[error("--prompt-tokens must be at least 1")]
    NoPromptTokens,
    #[error("--output-tokens must be at least 1")]
    NoOutputTokens,
}

/// Reads a prompts file's text: one JSON object per line, `{"prompt": "...", "max_tokens": N}`
/// or `{"messages": [...], "max_tokens": N}`; empty lines are skipped.
pub fn parse_prompts(text: &str, file: &str) -> Result<Vec<Prompt>, PromptError> {
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| PromptError::Line {
            file: file.to_string(),
            line: i + 1,
            why,
        };
        let value: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(object) = value.as_object() else {
            return Err(bad(
                "expected a JSON object with \"prompt\" or \"messages\"".into(),
            ));
        };
        let max_tokens = match object
            .get("max_tokens")
            .or_else(|| object.get("max_completion_tokens"))
        {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Some(n),
                _ => {
                    return Err(bad(format!(
                        "max_tokens must be a whole number of at least 1, not {v}"
                    )))
                }
            },
        };
        let prompt = match (object.get("prompt"), object.get("messages")) {
            (Some(_), Some(_)) => {
                return Err(bad("give \"prompt\" or \"messages\", not both".into()))
            }
            (Some(Value::String(p)), None) => Prompt::Text {
                prompt: p.clone(),
                max_tokens,
            },
            (Some(other), None) => {
                return Err(bad(format!("\"prompt\" must be a string, not {other}")))
            }
            (None, Some(Value::Array(m))) => {
                if m.is_empty() {
                    return Err(bad("\"messages\" is empty".into()));
                }
                for (k, message) in m.iter().enumerate() {
                    let ok = message.get("role").is_some_and(Value::is_string)
                        && message.get("content").is_some();
                    if !ok {
                        return Err(bad(format!(
                            "message {} needs a \"role\" string and a \"content\"",
                            k + 1
                        )));
                    }
                }
                Prompt::Messages {
                    messages: m.clone(),
                    max_tokens,
                }
            }
            (None, Some(other)) => {
                return Err(bad(format!("\"messages\" must be an array, not {other}")))
            }
            (None, None) => {
                return Err(bad("expected \"prompt\" or \"messages\"".into()));
            }
        };
        prompts.push(prompt);
    }
    if prompts.is_empty() {
        return Err(PromptError::Empty(file.to_string()));
    }
    Ok(prompts)
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

/// `count` distinct synthetic prompts of `prompt_tokens` tokens each (by
/// [`WORDS_PER_TOKEN`]), each asking for `output_tokens`. Each starts with its own number, so
/// that a server's prefix cache cannot answer one from another.
pub fn synthetic(
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
    let (num, den) = WORDS_PER_TOKEN;
    let words = (prompt_tokens * num).div_ceil(den) as usize;
    Ok((0..count)
        .map(|k| {
            let mut text = format!("{k}");
            for w in 1..words {
                text.push(' ');
                text.push_str(VOCABULARY[(k * 7 + w * 13) % VOCABULARY.len()]);
            }
            Prompt::Text {
                prompt: text,
                max_tokens: Some(output_tokens),
            }
        })
        .collect())
}

/// The requests for `prompts`: each a streaming `POST` to `api`'s path with `model`, asking for
/// usage in the stream (`stream_options.include_usage`), and `extra_headers` (`-H`) after
/// `Content-Type`. A chat prompt given as text becomes one user message; messages sent to the
/// completions API are refused.
pub fn requests(
    api: LlmApi,
    model: &str,
    prompts: &[Prompt],
    extra_headers: &[String],
) -> Result<Vec<RequestSpec>, PromptError> {
    let mut headers = vec!["Content-Type: application/json".to_string()];
    headers.extend(
        extra_headers
            .iter()
            .filter(|h| {
                !h.split(':')
                    .next()
                    .is_some_and(|n| n.trim().eq_ignore_ascii_case("content-type"))
            })
            .cloned(),
    );
    prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut body = json!({
                "model": model,
                "stream": true,
                "stream_options": {"include_usage": true},
            });
            let (content, max_tokens) = match (api, p) {
                (LlmApi::Chat, Prompt::Text { prompt, max_tokens }) => (
                    ("messages", json!([{"role": "user", "content": prompt}])),
                    max_tokens,
                ),
                (
                    LlmApi::Chat,
                    Prompt::Messages {
                        messages,
                        max_tokens,
                    },
                ) => (("messages", Value::Array(messages.clone())), max_tokens),
                (LlmApi::Completions, Prompt::Text { prompt, max_tokens }) => {
                    (("prompt", Value::String(prompt.clone())), max_tokens)
                }
                (LlmApi::Completions, Prompt::Messages { .. }) => return Err(PromptError::Line {
                    file: "prompts".into(),
                    line: i + 1,
                    why:
                        "\"messages\" need --llm openai (chat); openai-completions takes \"prompt\""
                            .into(),
                }),
            };
            body[content.0] = content.1;
            if let Some(n) = max_tokens {
                body["max_tokens"] = json!(n);
            }
            Ok(RequestSpec {
                method: "POST".into(),
                path: api.path().into(),
                headers: headers.clone(),
                body: serde_json::to_vec(&body).expect("a JSON value serialises"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_lines_of_both_shapes_are_read_and_empty_lines_skipped() {
        let text = r#"{"prompt": "hello there", "max_tokens": 32}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
"#;
        let p = parse_prompts(text, "p.jsonl").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            Prompt::Text {
                prompt: "hello there".into(),
                max_tokens: Some(32)
            }
        );
        assert!(
            matches!(&p[1], Prompt::Messages { messages, max_tokens: None } if messages.len() == 2)
        );
    }

    #[test]
    fn every_bad_line_names_its_file_and_line() {
        let cases = [
            ("not json", "not JSON"),
            ("[1]", "expected a JSON object"),
            (r#"{"text": "x"}"#, "expected \"prompt\" or \"messages\""),
            (r#"{"prompt": 3}"#, "must be a string"),
            (r#"{"prompt": "a", "messages": []}"#, "not both"),
            (r#"{"messages": []}"#, "is empty"),
            (
                r#"{"messages": [{"content": "x"}]}"#,
                "message 1 needs a \"role\"",
            ),
            (r#"{"prompt": "a", "max_tokens": 0}"#, "at least 1"),
            (r#"{"prompt": "a", "max_tokens": "9"}"#, "whole number"),
        ];
        for (line, want) in cases {
            let text = format!("{{\"prompt\": \"ok\"}}\n{line}\n");
            let e = parse_prompts(&text, "p.jsonl").unwrap_err().to_string();
            assert!(
                e.starts_with("p.jsonl:2: ") && e.contains(want),
                "{line}: {e}"
            );
        }
        assert_eq!(
            parse_prompts("\n\n", "e.jsonl").unwrap_err().to_string(),
            "e.jsonl: no prompts (every line is empty)"
        );
    }

    #[test]
    fn synthetic_prompts_have_the_stated_length_and_differ() {
        let p = synthetic(512, 128, 3).unwrap();
        for (k, prompt) in p.iter().enumerate() {
            let Prompt::Text { prompt, max_tokens } = prompt else {
                unreachable!()
            };
            // 512 tokens -> ceil(512 * 3 / 4) = 384 words.
            assert_eq!(prompt.split_whitespace().count(), 384);
            assert!(prompt.starts_with(&format!("{k} ")));
            assert_eq!(*max_tokens, Some(128));
        }
        assert_ne!(p[0], p[1]);
        assert_eq!(synthetic(0, 1, 1), Err(PromptError::NoPromptTokens));
        assert_eq!(synthetic(1, 0, 1), Err(PromptError::NoOutputTokens));
    }

    #[test]
    fn requests_are_streaming_posts_with_usage_and_the_users_headers() {
        let prompts = parse_prompts(
            "{\"prompt\": \"hi\", \"max_tokens\": 8}\n{\"messages\": [{\"role\": \"user\", \"content\": \"yo\"}]}\n",
            "p",
        )
        .unwrap();
        let auth = vec![
            "Authorization: Bearer k".to_string(),
            "content-type: text/plain".to_string(),
        ];
        let chat = requests(LlmApi::Chat, "m1", &prompts, &auth).unwrap();
        assert_eq!(chat[0].path, "/v1/chat/completions");
        assert_eq!(chat[0].method, "POST");
        assert_eq!(
            chat[0].headers,
            vec!["Content-Type: application/json", "Authorization: Bearer k"]
        );
        let body: Value = serde_json::from_slice(&chat[0].body).unwrap();
        assert_eq!(body["model"], "m1");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["messages"][0]["content"], "hi");
        assert_eq!(body["max_tokens"], 8);
        let body: Value = serde_json::from_slice(&chat[1].body).unwrap();
        assert!(body.get("max_tokens").is_none());
        let e = requests(LlmApi::Completions, "m", &prompts, &[]).unwrap_err();
        assert!(e.to_string().contains("need --llm openai"), "{e}");
        let done = requests(LlmApi::Completions, "m", &prompts[..1], &[]).unwrap();
        let body: Value = serde_json::from_slice(&done[0].body).unwrap();
        assert_eq!(body["prompt"], "hi");
        assert_eq!(
            "openai-completions".parse::<LlmApi>(),
            Ok(LlmApi::Completions)
        );
        assert!("anthropic".parse::<LlmApi>().is_err());
    }
}
