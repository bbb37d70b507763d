//! What an embeddings run sends (`--llm openai-embeddings`): `POST /v1/embeddings` with
//! `{"model": M, "input": [...]}` (as vLLM's `bench serve --backend openai-embeddings`), each
//! request a batch of `--embedding-batch` inputs taken in turn from the prompts (a prompts
//! line's `prompt` or `input`, a ShareGPT prompt, a synthetic prompt), wrapping round at the
//! end so that every request carries exactly the batch: the inputs a run sends are its
//! requests times the batch.

use super::prompts::{json_headers, LlmBody, Prompt, PromptError, PromptInput};
use candor_wire::requests::RequestSpec;
use serde_json::{json, Map, Value};

/// The largest batch: OpenAI's embeddings endpoint takes at most 2,048 inputs a request.
pub const MAX_BATCH: u32 = 2048;

/// The requests for `prompts` in batches of `batch` inputs: ceil(prompts / batch) of them
/// (at least one). Each body has `model`, `body`'s fields, the fields of its inputs' lines (a
/// later line's win), then `input`; an output budget means nothing to an embedding and is not
/// sent. Messages are refused (they are chat's).
pub fn requests(
    model: &str,
    prompts: &[Prompt],
    batch: u32,
    extra_headers: &[String],
    body: &LlmBody,
) -> Result<Vec<RequestSpec>, PromptError> {
    if batch == 0 || batch > MAX_BATCH {
        return Err(PromptError::Dataset(format!(
            "--embedding-batch must be from 1 to {MAX_BATCH} (OpenAI's limit of inputs a request), not {batch}"
        )));
    }
    if prompts.is_empty() {
        return Err(PromptError::Dataset("no prompts to embed".into()));
    }
    let headers = json_headers(extra_headers);
    let batch = batch as usize;
    let count = prompts.len().div_ceil(batch).max(1);
    (0..count)
        .map(|r| {
            let mut fields = Map::new();
            fields.insert("model".into(), json!(model));
            fields.extend(body.fields.clone());
            let mut inputs = Vec::with_capacity(batch);
            for k in 0..batch {
                let at = (r * batch + k) % prompts.len();
                let p = &prompts[at];
                fields.extend(p.extra.clone());
                match &p.input {
                    PromptInput::Text(t) => inputs.push(Value::String(t.clone())),
                    PromptInput::Messages(_) => {
                        return Err(PromptError::Line {
                            file: "prompts".into(),
                            line: at + 1,
                            why: "\"messages\" are chat's: --llm openai-embeddings takes \"prompt\" or \"input\""
                                .into(),
                        })
                    }
                }
            }
            fields.insert("input".into(), Value::Array(inputs));
            Ok(RequestSpec {
                method: "POST".into(),
                path: "/v1/embeddings".into(),
                headers: headers.clone(),
                body: serde_json::to_vec(&Value::Object(fields)).expect("a JSON value serialises"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(spec: &RequestSpec) -> Value {
        serde_json::from_slice(&spec.body).unwrap()
    }

    #[test]
    fn inputs_go_in_batches_that_wrap_round_so_each_request_carries_the_batch() {
        let prompts: Vec<Prompt> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|t| Prompt::text(*t, Some(9)))
            .collect();
        let specs = requests("m", &prompts, 2, &["X-K: v".into()], &LlmBody::default()).unwrap();
        assert_eq!(specs.len(), 3);
        let inputs: Vec<Value> = specs.iter().map(|s| body(s)["input"].clone()).collect();
        assert_eq!(
            inputs,
            [json!(["a", "b"]), json!(["c", "d"]), json!(["e", "a"])]
        );
        let b = body(&specs[0]);
        assert_eq!(b["model"], "m");
        assert!(
            b.get("max_tokens").is_none() && b.get("stream").is_none(),
            "{b}"
        );
        assert_eq!(specs[0].path, "/v1/embeddings");
        assert_eq!(
            specs[0].headers,
            ["Content-Type: application/json", "X-K: v"]
        );
        // Fewer prompts than the batch: one request, the prompts repeated to fill it.
        let one = requests("m", &prompts[..1], 3, &[], &LlmBody::default()).unwrap();
        assert_eq!(body(&one[0])["input"], json!(["a", "a", "a"]));
    }

    #[test]
    fn extra_fields_pass_through_and_bad_settings_are_refused() {
        let text = "{\"input\": \"x y\", \"encoding_format\": \"float\"}\n{\"prompt\": \"z\", \"dimensions\": 8}\n";
        let prompts = crate::prompts::parse_prompts(text, "p.jsonl").unwrap();
        let mut llm_body = LlmBody::default();
        llm_body.fields.insert("user".into(), json!("u"));
        let specs = requests("m", &prompts, 2, &[], &llm_body).unwrap();
        let b = body(&specs[0]);
        assert_eq!(b["input"], json!(["x y", "z"]));
        assert_eq!(
            (&b["encoding_format"], &b["dimensions"], &b["user"]),
            (&json!("float"), &json!(8), &json!("u"))
        );
        let e = crate::prompts::parse_prompts(r#"{"input": ["a", "b"]}"#, "p").unwrap_err();
        assert!(e.to_string().contains("\"input\" must be a string"), "{e}");
        for bad in [0, MAX_BATCH + 1] {
            let e = requests("m", &prompts, bad, &[], &LlmBody::default()).unwrap_err();
            assert!(e.to_string().contains("--embedding-batch"), "{e}");
        }
        let chat = crate::prompts::parse_prompts(
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            "p",
        )
        .unwrap();
        let e = requests("m", &chat, 1, &[], &LlmBody::default()).unwrap_err();
        assert!(e.to_string().contains("\"messages\" are chat's"), "{e}");
    }
}
