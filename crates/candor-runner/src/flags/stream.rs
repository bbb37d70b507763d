//! `--stream`, `--llm` (an LLM run's requests, from `--prompts` or synthetic ones) and
//! `--goodput`: how responses are read as streams and judged.

use super::args::LoadArgs;
use super::error::{read, FlagError, Result};
use candor_core::bounded::{strip_bom, MAX_LINE_BYTES, MAX_REQUESTS_FILE_BYTES};
use candor_load::LoadConfig;

/// Synthetic prompts made for `--llm` without `--prompts`: distinct ones, so that a server's
/// prefix cache cannot answer one from another, sent round robin.
const SYNTHETIC_PROMPTS: usize = 64;

/// `--stream` and `--llm`: how responses are read, and an LLM run's requests.
fn llm_and_stream(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    use candor_load::stream::StreamKind;
    use candor_load::workload::prompts::{self, LlmApi};
    c.stream.kind = match &a.stream {
        Some(k) => Some(k.parse::<StreamKind>().map_err(FlagError::Invalid)?),
        None => None,
    };
    let Some(api) = &a.llm else {
        return Ok(());
    };
    // Named before anything else the scheme would refuse: the flags --llm sets (a POST, its
    // requests) are not what a grpc:// or ws:// user gave, so their conflicts would mislead.
    candor_load::registry::refuse_llm(&c.target)?;
    let api: LlmApi = api
        .parse()
        .map_err(|e: prompts::PromptError| FlagError::Invalid(e.to_string()))?;
    let list = match &a.prompts {
        Some(path) => {
            let bytes = read(
                path,
                "--prompts",
                MAX_REQUESTS_FILE_BYTES,
                Some(MAX_LINE_BYTES),
            )?;
            let text = std::str::from_utf8(strip_bom(&bytes)).map_err(|e| {
                FlagError::Invalid(format!(
                    "--prompts {}: not UTF-8 text (invalid byte at offset {})",
                    path.display(),
                    e.valid_up_to()
                ))
            })?;
            prompts::parse_prompts(text, &path.display().to_string())
        }
        None => prompts::synthetic(a.prompt_tokens, a.output_tokens, SYNTHETIC_PROMPTS),
    }
    .map_err(|e| FlagError::Invalid(e.to_string()))?;
    let mut specs = prompts::requests(api, &a.model, &list, &a.headers)
        .map_err(|e| FlagError::Invalid(e.to_string()))?;
    for s in &mut specs {
        s.path = api.path().to_string();
    }
    c.method = "POST".to_string();
    c.requests = specs;
    c.stream.llm = true;
    Ok(())
}

/// `--stream`, `--llm` and `--goodput`, set into `c`.
pub(super) fn stream_flags(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    llm_and_stream(a, c)?;
    if let Some(text) = &a.goodput {
        c.goodput = Some(
            candor_load::stream::goodput::GoodputSlo::parse(text)
                .map_err(|e| FlagError::Invalid(e.to_string()))?,
        );
    }
    Ok(())
}
