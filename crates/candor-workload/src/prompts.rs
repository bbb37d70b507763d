//! What an LLM run sends (`--llm openai`): OpenAI-compatible streaming requests built once,
//! before the run, from a prompts file (`--prompts FILE`, JSON lines, its extra body fields
//! kept), a ShareGPT file ([`crate::sharegpt`]) or synthetic prompts ([`crate::synthetic`]),
//! with `--llm-body`'s fields. Each prompt becomes one request of a request set, so the request
//! source, weights and `by_request` rows work as for any set.

use candor_wire::requests::RequestSpec;
use serde_json::{json, Map, Value};
use std::fmt;
use thiserror::Error;

/// Which OpenAI endpoint the requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmApi {
    /// `POST /v1/chat/completions` with `messages`.
    Chat,
    /// `POST /v1/completions` with `prompt`.
    Completions,
    /// `POST /v1/embeddings` with `input` (a batch of texts), answered whole.
    Embeddings,
}

impl LlmApi {
    pub fn path(self) -> &'static str {
        match self {
            LlmApi::Chat => "/v1/chat/completions",
            LlmApi::Completions => "/v1/completions",
            LlmApi::Embeddings => "/v1/embeddings",
        }
    }

    /// The name of `--llm`.
    pub fn name(self) -> &'static str {
        match self {
            LlmApi::Chat => "openai",
            LlmApi::Completions => "openai-completions",
            LlmApi::Embeddings => "openai-embeddings",
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
            "openai-embeddings" => Ok(LlmApi::Embeddings),
            other => Err(PromptError::UnknownApi(other.to_string())),
        }
    }
}

/// A synthetic prompt of `tokens` tokens has `ceil(tokens * 3 / 4)` words (a token is about three
/// quarters of a word); `candor serve --llm` counts a prompt's tokens by the inverse rule.
pub const WORDS_PER_TOKEN: (u64, u64) = (3, 4);

/// What a prompt asks: text (a completions `prompt`, or one user message in chat) or messages.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    Text(String),
    Messages(Vec<Value>),
}

/// How the output budget is spelled in the body: OpenAI's older `max_tokens` (what every
/// OpenAI-compatible server reads) or `max_completion_tokens` (what OpenAI's chat API now asks
/// for, and what vLLM's `bench serve` sends to chat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetKey {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

impl BudgetKey {
    pub fn name(self) -> &'static str {
        match self {
            BudgetKey::MaxTokens => "max_tokens",
            BudgetKey::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

impl std::str::FromStr for BudgetKey {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "max_tokens" => Ok(BudgetKey::MaxTokens),
            "max_completion_tokens" => Ok(BudgetKey::MaxCompletionTokens),
            other => Err(PromptError::UnknownBudgetKey(other.to_string())),
        }
    }
}

/// One prompt: what the request asks, how long an answer it allows, and the body fields of its
/// line beyond those (`temperature`, `ignore_eos`, `seed`, ...), sent unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub input: PromptInput,
    pub max_tokens: Option<u64>,
    /// The spelling its line used (`None`: the run's `--max-tokens-field`).
    pub budget_key: Option<BudgetKey>,
    pub extra: Map<String, Value>,
}

impl Prompt {
    /// A text prompt with a budget and nothing else.
    pub fn text(prompt: impl Into<String>, max_tokens: Option<u64>) -> Prompt {
        Prompt {
            input: PromptInput::Text(prompt.into()),
            max_tokens,
            budget_key: None,
            extra: Map::new(),
        }
    }

    /// The output tokens it asks for at most, when it says.
    pub fn max_tokens(&self) -> Option<u64> {
        self.max_tokens
    }
}

/// The body fields candor sets itself, which neither a prompts line nor `--llm-body` may give:
/// every request is streamed with usage, and its content comes from the prompt.
const CANDORS_FIELDS: [&str; 4] = ["stream", "prompt", "messages", "stream_options"];

/// `--llm-body JSON` and `--max-tokens-field`: what every request's body gets besides its
/// prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmBody {
    /// Fields merged into every body (a prompts line's own fields win).
    pub fields: Map<String, Value>,
    pub budget_key: BudgetKey,
    /// Ask for whole answers (`"stream": false`, no `stream_options`) instead of streams.
    pub whole: bool,
}

impl LlmBody {
    /// Reads `--llm-body`: a JSON object of fields other than candor's own.
    pub fn parse(text: &str) -> Result<Map<String, Value>, PromptError> {
        let bad = |why: String| PromptError::Body(why);
        let value: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(bad(format!("expected a JSON object, not {value}")));
        };
        if let Some(k) = CANDORS_FIELDS.iter().find(|k| fields.contains_key(**k)) {
            return Err(bad(format!(
                "\"{k}\" is set by candor (every request streams its prompt with usage)"
            )));
        }
        Ok(fields)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PromptError {
    #[error("unknown --llm '{0}': expected openai, openai-completions or openai-embeddings")]
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
    #[error("unknown --max-tokens-field '{0}': expected max_tokens or max_completion_tokens")]
    UnknownBudgetKey(String),
    #[error("--llm-body: {0}")]
    Body(String),
    #[error("{0}")]
    Dataset(String),
}

/// Reads a prompts file's text: one JSON object per line, `{"prompt": "...", "max_tokens": N}`
/// or `{"messages": [...], "max_tokens": N}` (or `max_completion_tokens`), with any other body
/// fields beside them (`temperature`, `ignore_eos`, `top_p`, `seed`, ...) sent unchanged; empty
/// lines are skipped.
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
        let Value::Object(object) = value else {
            return Err(bad(
                "expected a JSON object with \"prompt\" or \"messages\"".into(),
            ));
        };
        prompts.push(prompt_of(object).map_err(bad)?);
    }
    if prompts.is_empty() {
        return Err(PromptError::Empty(file.to_string()));
    }
    Ok(prompts)
}

/// One line's object as a prompt, or why it is none.
fn prompt_of(mut object: Map<String, Value>) -> Result<Prompt, String> {
    if object.contains_key("max_tokens") && object.contains_key("max_completion_tokens") {
        return Err("give \"max_tokens\" or \"max_completion_tokens\", not both".into());
    }
    let (budget_key, budget) = match (
        object.remove("max_tokens"),
        object.remove("max_completion_tokens"),
    ) {
        (Some(v), _) => (Some(BudgetKey::MaxTokens), Some(v)),
        (None, Some(v)) => (Some(BudgetKey::MaxCompletionTokens), Some(v)),
        (None, None) => (None, None),
    };
    let max_tokens = match budget {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Some(n),
            _ => {
                return Err(format!(
                    "max_tokens must be a whole number of at least 1, not {v}"
                ))
            }
        },
    };
    // An embeddings line says `input` (what the endpoint calls it); one without `prompt` or
    // `messages` may say it for any API.
    let mut text_key = "prompt";
    if !object.contains_key("prompt") && !object.contains_key("messages") {
        if let Some(input) = object.remove("input") {
            object.insert("prompt".into(), input);
            text_key = "input";
        }
    }
    let input = match (object.remove("prompt"), object.remove("messages")) {
        (Some(_), Some(_)) => return Err("give \"prompt\" or \"messages\", not both".into()),
        (Some(Value::String(p)), None) => PromptInput::Text(p),
        (Some(other), None) => return Err(format!("\"{text_key}\" must be a string, not {other}")),
        (None, Some(Value::Array(m))) => {
            if m.is_empty() {
                return Err("\"messages\" is empty".into());
            }
            for (k, message) in m.iter().enumerate() {
                let ok = message.get("role").is_some_and(Value::is_string)
                    && message.get("content").is_some();
                if !ok {
                    return Err(format!(
                        "message {} needs a \"role\" string and a \"content\"",
                        k + 1
                    ));
                }
            }
            PromptInput::Messages(m)
        }
        (None, Some(other)) => return Err(format!("\"messages\" must be an array, not {other}")),
        (None, None) => return Err("expected \"prompt\" or \"messages\"".into()),
    };
    if let Some(k) = CANDORS_FIELDS.iter().find(|k| object.contains_key(**k)) {
        return Err(format!(
            "\"{k}\" is set by candor (every request streams its prompt with usage)"
        ));
    }
    Ok(Prompt {
        input,
        max_tokens,
        budget_key,
        extra: object,
    })
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
    requests_with(api, model, prompts, extra_headers, &LlmBody::default())
}

/// `Content-Type: application/json` and `extra_headers` (`-H`) but their own content type.
pub(crate) fn json_headers(extra_headers: &[String]) -> Vec<String> {
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
    headers
}

/// [`requests`] with `body`'s fields in every body (`--llm-body`), under each prompt's own
/// fields, and its budget spelled as the prompt's line did, else as `body.budget_key`.
pub fn requests_with(
    api: LlmApi,
    model: &str,
    prompts: &[Prompt],
    extra_headers: &[String],
    body: &LlmBody,
) -> Result<Vec<RequestSpec>, PromptError> {
    let headers = json_headers(extra_headers);
    prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut fields = Map::new();
            fields.insert("model".into(), json!(model));
            fields.extend(body.fields.clone());
            fields.extend(p.extra.clone());
            fields.insert("stream".into(), json!(!body.whole));
            if !body.whole {
                fields.insert("stream_options".into(), json!({"include_usage": true}));
            }
            let (key, content) = match (api, &p.input) {
                (LlmApi::Chat, PromptInput::Text(prompt)) => {
                    ("messages", json!([{"role": "user", "content": prompt}]))
                }
                (LlmApi::Chat, PromptInput::Messages(m)) => ("messages", Value::Array(m.clone())),
                (LlmApi::Completions, PromptInput::Text(prompt)) => {
                    ("prompt", Value::String(prompt.clone()))
                }
                (LlmApi::Embeddings, PromptInput::Text(t)) => ("input", json!([t])),
                (LlmApi::Embeddings, PromptInput::Messages(_)) => return Err(PromptError::Line {
                    file: "prompts".into(),
                    line: i + 1,
                    why: "\"messages\" are chat's: --llm openai-embeddings takes \"prompt\" or \"input\"".into(),
                }),
                (LlmApi::Completions, PromptInput::Messages(_)) => return Err(PromptError::Line {
                    file: "prompts".into(),
                    line: i + 1,
                    why:
                        "\"messages\" need --llm openai (chat); openai-completions takes \"prompt\""
                            .into(),
                }),
            };
            fields.insert(key.into(), content);
            if let Some(n) = p.max_tokens {
                let spelling = p.budget_key.unwrap_or(body.budget_key);
                fields.insert(spelling.name().into(), json!(n));
            }
            Ok(RequestSpec {
                method: "POST".into(),
                path: api.path().into(),
                headers: headers.clone(),
                body: serde_json::to_vec(&Value::Object(fields)).expect("a JSON value serialises"),
            })
        })
        .collect()
}

/// `body` (a request's JSON) naming `to` where its `model` is `from`; `None` when it is not a
/// JSON object whose `model` is `from` (a prompts line that named its own model keeps it).
/// Run once per request before the load, when the server names the model (`--model` not given).
pub fn rename_model(body: &[u8], from: &str, to: &str) -> Option<Vec<u8>> {
    let mut v: Map<String, Value> = serde_json::from_slice(body).ok()?;
    if v.get("model").and_then(Value::as_str) != Some(from) {
        return None;
    }
    v.insert("model".into(), Value::String(to.into()));
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_model_is_renamed_and_a_lines_own_model_kept() {
        let body =
            br#"{"messages":[{"role":"user","content":"hi"}],"model":"default","stream":true}"#;
        let renamed = rename_model(body, "default", "llama-3").unwrap();
        let v: Value = serde_json::from_slice(&renamed).unwrap();
        assert_eq!(v["model"], "llama-3");
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(v["stream"], true);
        assert_eq!(rename_model(br#"{"model":"mine"}"#, "default", "x"), None);
        assert_eq!(rename_model(b"not json", "default", "x"), None);
        assert_eq!(rename_model(br#"{"prompt":"p"}"#, "default", "x"), None);
    }

    #[test]
    fn prompt_lines_of_both_shapes_are_read_and_empty_lines_skipped() {
        let text = r#"{"prompt": "hello there", "max_tokens": 32}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
"#;
        let p = parse_prompts(text, "p.jsonl").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            Prompt {
                budget_key: Some(BudgetKey::MaxTokens),
                ..Prompt::text("hello there", Some(32))
            }
        );
        assert!(
            matches!(&p[1].input, PromptInput::Messages(m) if m.len() == 2)
                && p[1].max_tokens.is_none()
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
        // Whole answers (`--no-stream`): "stream": false and no stream_options.
        let whole = LlmBody {
            whole: true,
            ..LlmBody::default()
        };
        let specs = requests_with(LlmApi::Chat, "m1", &prompts, &[], &whole).unwrap();
        let body: Value = serde_json::from_slice(&specs[0].body).unwrap();
        assert_eq!(body["stream"], false);
        assert!(body.get("stream_options").is_none());
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

    #[test]
    fn a_lines_other_fields_are_sent_unchanged_and_its_budget_spelled_as_it_was() {
        let text = r#"{"prompt": "hi", "max_completion_tokens": 5, "ignore_eos": true, "temperature": 0, "top_p": 0.9, "seed": 7, "model": "m2"}
{"prompt": "yo", "max_tokens": 6}
{"prompt": "no budget", "temperature": 1.5}
"#;
        let prompts = parse_prompts(text, "p").unwrap();
        let body = LlmBody {
            fields: LlmBody::parse(
                r#"{"temperature": 0.5, "ignore_eos": false, "logprobs": null}"#,
            )
            .unwrap(),
            budget_key: BudgetKey::MaxCompletionTokens,
            whole: false,
        };
        let specs = requests_with(LlmApi::Completions, "m1", &prompts, &[], &body).unwrap();
        let bodies: Vec<Value> = specs
            .iter()
            .map(|s| serde_json::from_slice(&s.body).unwrap())
            .collect();
        // The line's own fields win over --llm-body's, which win over --model.
        assert_eq!(
            bodies[0],
            json!({"model": "m2", "prompt": "hi", "max_completion_tokens": 5, "ignore_eos": true,
                   "temperature": 0, "top_p": 0.9, "seed": 7, "logprobs": null, "stream": true,
                   "stream_options": {"include_usage": true}})
        );
        // A line's spelling is kept; --max-tokens-field spells the others.
        assert_eq!(bodies[1]["max_tokens"], 6);
        assert!(bodies[1].get("max_completion_tokens").is_none());
        assert_eq!(
            (
                bodies[1]["temperature"].clone(),
                bodies[1]["ignore_eos"].clone()
            ),
            (json!(0.5), json!(false))
        );
        assert_eq!(bodies[2]["temperature"], 1.5);
        assert!(
            bodies[2].get("max_tokens").is_none()
                && bodies[2].get("max_completion_tokens").is_none()
        );
        let synthetic = crate::synthetic::fixed(4, 3, 1).unwrap();
        let spec = &requests_with(LlmApi::Chat, "m", &synthetic, &[], &body).unwrap()[0];
        let v: Value = serde_json::from_slice(&spec.body).unwrap();
        assert_eq!(v["max_completion_tokens"], 3);
    }

    #[test]
    fn candors_own_fields_and_bad_bodies_are_refused_by_name() {
        for (line, want) in [
            (
                r#"{"prompt": "a", "stream": false}"#,
                "\"stream\" is set by candor",
            ),
            (
                r#"{"prompt": "a", "stream_options": {}}"#,
                "\"stream_options\" is set by candor",
            ),
            (
                r#"{"prompt": "a", "max_tokens": 1, "max_completion_tokens": 2}"#,
                "not both",
            ),
            (
                r#"{"prompt": "a", "max_completion_tokens": 0}"#,
                "at least 1",
            ),
        ] {
            let e = parse_prompts(line, "p").unwrap_err().to_string();
            assert!(e.starts_with("p:1: ") && e.contains(want), "{line}: {e}");
        }
        for (body, want) in [
            ("{", "--llm-body: not JSON"),
            ("[1]", "--llm-body: expected a JSON object, not [1]"),
            (
                r#"{"messages": []}"#,
                "--llm-body: \"messages\" is set by candor",
            ),
            (
                r#"{"stream": false}"#,
                "--llm-body: \"stream\" is set by candor",
            ),
        ] {
            let e = LlmBody::parse(body).unwrap_err().to_string();
            assert!(e.starts_with(want), "{body}: {e}");
        }
        assert_eq!(
            "max_completion_tokens".parse::<BudgetKey>(),
            Ok(BudgetKey::MaxCompletionTokens)
        );
        assert!("max_new_tokens".parse::<BudgetKey>().is_err());
    }
}
