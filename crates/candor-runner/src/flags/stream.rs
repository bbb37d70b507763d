//! `--stream`, `--llm` (an LLM run's requests, from `--prompts` or synthetic ones) and
//! `--goodput`: how responses are read as streams and judged.

use super::args::LoadArgs;
use super::error::{read, FlagError, Result};
use candor_core::bounded::{strip_bom, MAX_LINE_BYTES, MAX_REQUESTS_FILE_BYTES};
use candor_load::LoadConfig;

/// Synthetic prompts made for `--llm` without `--prompts`: distinct ones, so that a server's
/// prefix cache cannot answer one from another, sent round robin.
const SYNTHETIC_PROMPTS: usize = 64;

/// Synthetic prompts drawn when their lengths are a distribution: as many as vLLM's
/// `--num-prompts` default, so that the lengths sent follow the distribution closely.
const DRAWN_PROMPTS: usize = 1000;

/// `--stream-timeout` of an `--llm` run that does not give one: generous, so that answers of a
/// few thousand tokens at tens of ms a token complete, while a stream that never ends is still
/// ended within a minute.
const LLM_STREAM_TIMEOUT_NS: u64 = 60_000_000_000;

/// The fastest inter-token latency a run is expected to meet (a small model on a fast GPU,
/// ~200 tokens/s): an answer that would outlast its bound even at this pace cannot succeed.
const FAST_ITL_NS: u64 = 5_000_000;

/// The warning for a run whose longest answer (`max_output` tokens, when known) would take
/// longer than `bound_ns` (`--stream-timeout`, or `--timeout` when that bounds the whole
/// stream) even at [`FAST_ITL_NS`] a token: every such request would time out.
fn impossible_answer(max_output: Option<u64>, bound_ns: u64, bound_flag: &str) -> Option<String> {
    let tokens = max_output?;
    let needs = tokens.saturating_mul(FAST_ITL_NS);
    (needs > bound_ns).then(|| {
        format!(
            "candor: warning: answers of {tokens} tokens take {} even at {} a token, past {bound_flag} {}: \
             they would time out (raise {bound_flag} or lower the output tokens)",
            candor_core::units::format_ns(needs as f64),
            candor_core::units::format_ns(FAST_ITL_NS as f64),
            candor_core::units::format_ns(bound_ns as f64),
        )
    })
}

/// `--stream-timeout`: given, or [`LLM_STREAM_TIMEOUT_NS`] for `--llm`, or none; a drain not
/// given waits as long, so that streams begun at the window's end can finish.
fn stream_timeout(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    let streamed = a.llm.is_some() || a.stream.is_some();
    c.stream_timeout_ns = match &a.stream_timeout {
        Some(_) if !streamed => {
            return Err(FlagError::Invalid(
                "--stream-timeout bounds a stream once its first event has come: it needs --stream or --llm"
                    .into(),
            ))
        }
        Some(d) if d.ns() == 0 => {
            return Err(FlagError::Invalid("--stream-timeout must be positive".into()))
        }
        Some(d) => d.ns(),
        None if a.llm.is_some() => LLM_STREAM_TIMEOUT_NS,
        None => 0,
    };
    if a.no_stream {
        // A whole answer's first byte is its end: the bound of a whole answer applies.
        c.timeout_ns = c.timeout_ns.max(c.stream_timeout_ns);
    }
    if a.drain.is_none() {
        c.drain_ns = c.drain_ns.max(c.stream_timeout_ns);
    }
    Ok(())
}

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
    let tokenizer = match &a.tokenizer {
        Some(spec) => Some(
            candor_load::workload::tokenizer::Tokenizer::load(spec)
                .map_err(|e| FlagError::Invalid(e.to_string()))?,
        ),
        None => None,
    };
    let conversations = super::turns::conversations(
        a,
        api,
        tokenizer.as_ref(),
        (SYNTHETIC_PROMPTS, DRAWN_PROMPTS),
    )?;
    let mut sample = None;
    let list = match (&conversations, &a.prompts) {
        (Some(conv), _) => Ok(conv.prompts.clone()),
        (None, Some(path)) => {
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
        (None, None) if a.sharegpt.is_some() => sharegpt_prompts(a, tokenizer.as_ref()).map(|s| {
            sample = Some(s.counts);
            s.prompts
        }),
        (None, None) => {
            use candor_load::workload::synthetic::{self, SyntheticSpec};
            let spec = SyntheticSpec {
                prompt: a.prompt_tokens,
                output: a.output_tokens,
                prefix: a.prefix_tokens,
                seed: a.seed,
            };
            let fixed = spec.prompt.fixed().is_some() && spec.output.fixed().is_some();
            synthetic::prompts(
                spec,
                if fixed {
                    SYNTHETIC_PROMPTS
                } else {
                    DRAWN_PROMPTS
                },
                tokenizer.as_ref(),
            )
        }
    }
    .map_err(|e| FlagError::Invalid(e.to_string()))?;
    if api == LlmApi::Embeddings {
        return embeddings(a, c, &list, tokenizer, sample);
    }
    if a.embedding_batch.is_some() {
        return Err(FlagError::Invalid(
            "--embedding-batch is the inputs of an embeddings request: it needs --llm openai-embeddings"
                .into(),
        ));
    }
    let max_output = list.iter().map(prompts::Prompt::max_tokens).max().flatten();
    let (bound, flag) = if c.stream_timeout_ns != 0 {
        (c.stream_timeout_ns, "--stream-timeout")
    } else {
        (c.timeout_ns, "--timeout")
    };
    if let Some(w) = impossible_answer(max_output, bound, flag) {
        eprintln!("{w}");
    }
    let invalid = |e: prompts::PromptError| FlagError::Invalid(e.to_string());
    let body = prompts::LlmBody {
        fields: match &a.llm_body {
            Some(text) => prompts::LlmBody::parse(text).map_err(invalid)?,
            None => Default::default(),
        },
        budget_key: a.max_tokens_field.parse().map_err(invalid)?,
        whole: a.no_stream,
    };
    let mut specs = prompts::requests_with(api, model(a), &list, &a.headers, &body)
        .map_err(|e| FlagError::Invalid(e.to_string()))?;
    for s in &mut specs {
        s.path = api.path().to_string();
    }
    c.method = "POST".to_string();
    c.requests = specs;
    c.stream.llm = true;
    c.stream.whole = a.no_stream;
    let mut settings = llm_settings(a, c, tokenizer.as_ref());
    settings.sample = sample;
    if let Some(conv) = &conversations {
        super::turns::follow(a, c, conv);
        settings.sample = conv.sample.or(settings.sample);
        settings.dataset = super::turns::dataset(a, conv).unwrap_or(settings.dataset);
    }
    c.llm_settings = Some(settings);
    if let Some(t) = tokenizer {
        // Loaded once per run and kept to its end: every connection's stream reader counts
        // output tokens with it (see `candor_stream::count::Counter`).
        c.stream.counter = Some(candor_load::stream::count::Counter(Box::leak(Box::new(t))));
    }
    Ok(())
}

/// `--llm openai-embeddings`: batches of inputs, each answer read whole and its embeddings
/// counted. What has no meaning for an embedding is refused in one line; the output budget
/// flags, which have defaults, are ignored (docs/streams.md says so).
fn embeddings(
    a: &LoadArgs,
    c: &mut LoadConfig,
    list: &[candor_load::workload::prompts::Prompt],
    tokenizer: Option<candor_load::workload::tokenizer::Tokenizer>,
    sample: Option<candor_core::results::DatasetSample>,
) -> Result<()> {
    use candor_load::workload::{embed_requests, prompts};
    let refuse = |flag: &str, why: &str| {
        Err(FlagError::Invalid(format!(
            "{flag} cannot be given with --llm openai-embeddings: {why}"
        )))
    };
    if a.no_stream {
        return refuse("--no-stream", "an embeddings answer is always read whole");
    }
    if a.event_timeout.is_some() {
        return refuse("--event-timeout", "an embeddings answer has no events");
    }
    if let Some(slo) = &c.goodput {
        if slo.ttft.is_some() || slo.tpot.is_some() {
            return refuse(
                "--goodput on ttft or tpot",
                "an embedding has no tokens out (use e2el)",
            );
        }
    }
    let invalid = |e: prompts::PromptError| FlagError::Invalid(e.to_string());
    let body = prompts::LlmBody {
        fields: match &a.llm_body {
            Some(text) => prompts::LlmBody::parse(text).map_err(invalid)?,
            None => Default::default(),
        },
        ..Default::default()
    };
    let batch = a.embedding_batch.unwrap_or(1);
    c.requests =
        embed_requests::requests(model(a), list, batch, &a.headers, &body).map_err(invalid)?;
    c.method = "POST".to_string();
    c.stream.llm = true;
    c.stream.whole = true;
    c.stream.embeddings = Some(batch);
    // An answer's first byte is its end: the bound of a whole answer applies, as --no-stream's.
    c.timeout_ns = c.timeout_ns.max(c.stream_timeout_ns);
    let mut settings = llm_settings(a, c, tokenizer.as_ref());
    settings.output_tokens = "none (embeddings)".into();
    settings.embedding_batch = Some(batch);
    settings.sample = sample;
    c.llm_settings = Some(settings);
    Ok(())
}

/// `--sharegpt`'s prompts, pruned and sampled as its flags say.
fn sharegpt_prompts(
    a: &LoadArgs,
    tokenizer: Option<&candor_load::workload::tokenizer::Tokenizer>,
) -> std::result::Result<
    candor_load::workload::sharegpt::Sampled,
    candor_load::workload::prompts::PromptError,
> {
    use super::args::SharegptBudgetArg;
    use candor_load::workload::prompts::PromptError;
    use candor_load::workload::sharegpt::{self, SharegptBudget};
    let path = a.sharegpt.as_ref().expect("matched");
    let file = std::fs::File::open(path)
        .map_err(|e| PromptError::Dataset(format!("--sharegpt {}: {e}", path.display())))?;
    if a.sharegpt_prompts == 0 {
        return Err(PromptError::Dataset(
            "--sharegpt-prompts must be at least 1".into(),
        ));
    }
    let options = sharegpt::SharegptOptions {
        count: a.sharegpt_prompts,
        sample: if a.sharegpt_first {
            sharegpt::Sample::First
        } else {
            sharegpt::Sample::Random
        },
        prune: !a.sharegpt_keep_all,
        budget: match a.sharegpt_budget {
            SharegptBudgetArg::Answer => SharegptBudget::Answer,
            SharegptBudgetArg::Drawn => SharegptBudget::Drawn(a.output_tokens),
        },
        seed: a.seed,
    };
    let name = format!("--sharegpt {}", path.display());
    sharegpt::read(file, &name, options, tokenizer)
}

/// The model the requests name: `--model`, or until the server names one (see
/// `crate::watched`) the placeholder.
fn model(a: &LoadArgs) -> &str {
    a.model
        .as_deref()
        .unwrap_or(candor_core::results::PLACEHOLDER_MODEL)
}

/// The settings of an `--llm` run as its results record them (defaults included).
fn llm_settings(
    a: &LoadArgs,
    c: &LoadConfig,
    tokenizer: Option<&candor_load::workload::tokenizer::Tokenizer>,
) -> candor_core::results::LlmSettings {
    let dataset = match (&a.prompts, &a.sharegpt) {
        (Some(p), _) => format!("--prompts {}", p.display()),
        (None, Some(p)) => format!("--sharegpt {}", p.display()),
        (None, None) => "synthetic".to_string(),
    };
    let synthetic = a.prompts.is_none() && a.sharegpt.is_none();
    candor_core::results::LlmSettings {
        api: a.llm.clone().unwrap_or_default(),
        model: model(a).to_string(),
        model_from: if a.model.is_some() {
            candor_core::results::ModelSource::Flag
        } else {
            candor_core::results::ModelSource::Placeholder
        },
        tokenizer: tokenizer.map(|t| t.name().to_string()),
        dataset,
        prompt_tokens: if synthetic {
            a.prompt_tokens.to_string()
        } else {
            "from the dataset".into()
        },
        output_tokens: match (&a.prompts, &a.sharegpt) {
            (Some(_), _) => "from the prompts file".into(),
            (None, Some(_)) => match a.sharegpt_budget {
                super::args::SharegptBudgetArg::Answer => "each recorded answer's length".into(),
                super::args::SharegptBudgetArg::Drawn => a.output_tokens.to_string(),
            },
            (None, None) => a.output_tokens.to_string(),
        },
        prefix_tokens: a.prefix_tokens,
        max_tokens_field: a.max_tokens_field.clone(),
        whole_answers: a.no_stream,
        embedding_batch: None,
        backend: None,
        llm_body: a.llm_body.clone(),
        stream_timeout_s: c.stream_timeout_ns as f64 / 1e9,
        event_timeout_s: c.event_timeout_ns as f64 / 1e9,
        // Set where the config is recorded: --slo may still set the bounds.
        goodput: None,
        sample: None,
    }
}

/// `--stream`, `--llm` and `--goodput`, set into `c`.
pub(super) fn stream_flags(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    stream_timeout(a, c)?;
    if let Some(text) = &a.goodput {
        c.goodput = Some(
            candor_load::stream::goodput::GoodputSlo::parse(text)
                .map_err(|e| FlagError::Invalid(e.to_string()))?,
        );
    }
    llm_and_stream(a, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_cannot_finish_even_at_a_fast_pace_is_warned_of() {
        // 128 tokens at 5 ms = 640 ms: inside 2 s, past 500 ms.
        assert_eq!(
            impossible_answer(Some(128), 2_000_000_000, "--timeout"),
            None
        );
        let w = impossible_answer(Some(128), 500_000_000, "--stream-timeout").unwrap();
        assert!(
            w.starts_with("candor: warning: answers of 128 tokens take 640"),
            "{w}"
        );
        assert!(w.contains("past --stream-timeout 500"), "{w}");
        // Exactly at the bound is possible; unknown budgets are not judged.
        assert_eq!(impossible_answer(Some(100), 500_000_000, "--timeout"), None);
        assert_eq!(impossible_answer(None, 1, "--timeout"), None);
    }
}
