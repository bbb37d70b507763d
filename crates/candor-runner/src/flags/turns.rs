//! `--multi-turn`, `--max-turns`, `--turns` and `--think-time`: an LLM run's multi-turn
//! conversations, each turn a prepared request, the turns of one conversation sent one after
//! another (see `candor_workload::conversation` and the engine core's follow-ups).

use super::args::LoadArgs;
use super::error::{FlagError, Result};
use candor_load::workload::conversation::{self, Conversations};
use candor_load::workload::prompts::LlmApi;
use candor_load::workload::tokenizer::Tokenizer;
use candor_load::LoadConfig;

/// The run's conversations when `--multi-turn` or `--turns` asks for them (`None`: single
/// requests), refusing what cannot be before the run.
/// `counts`: how many conversations to make when every length is fixed, and when one is drawn
/// (the numbers of prompts single requests are made of), and the most kept from a file.
pub(super) fn conversations(
    a: &LoadArgs,
    api: LlmApi,
    tokenizer: Option<&Tokenizer>,
    (fixed_count, drawn_count): (usize, usize),
) -> Result<Option<Conversations>> {
    let invalid = |why: &str| Err(FlagError::Invalid(why.to_string()));
    if !a.multi_turn && a.turns.is_none() {
        if a.think_time.is_some() {
            return invalid(
                "--think-time is the wait between turns: it needs --multi-turn or --turns",
            );
        }
        return Ok(None);
    }
    if api != LlmApi::Chat {
        return Err(FlagError::Invalid(format!(
            "--multi-turn and --turns send each turn's earlier messages: they need --llm openai (chat), not {}",
            api.name()
        )));
    }
    if a.turns == Some(0) || a.max_turns == Some(0) {
        return invalid("--turns and --max-turns must be at least 1");
    }
    let dataset =
        |e: candor_load::workload::prompts::PromptError| FlagError::Invalid(e.to_string());
    if let Some(turns) = a.turns {
        let fixed = a.prompt_tokens.fixed().is_some() && a.output_tokens.fixed().is_some();
        let count = if fixed { fixed_count } else { drawn_count };
        return conversation::synthetic(
            a.prompt_tokens,
            a.output_tokens,
            turns,
            count,
            a.seed,
            tokenizer,
        )
        .map(Some)
        .map_err(dataset);
    }
    use super::args::SharegptBudgetArg;
    use candor_load::workload::sharegpt::SharegptBudget;
    let path = a
        .sharegpt
        .as_ref()
        .expect("--multi-turn requires --sharegpt");
    let file = std::fs::File::open(path)
        .map_err(|e| FlagError::Invalid(format!("--sharegpt {}: {e}", path.display())))?;
    let budget = match a.sharegpt_budget {
        SharegptBudgetArg::Answer => SharegptBudget::Answer,
        SharegptBudgetArg::Drawn => SharegptBudget::Drawn(a.output_tokens),
    };
    if a.sharegpt_prompts == 0 {
        return invalid("--sharegpt-prompts must be at least 1");
    }
    let sample = if a.sharegpt_first {
        candor_load::workload::sharegpt::Sample::First
    } else {
        candor_load::workload::sharegpt::Sample::Random
    };
    conversation::sharegpt(
        file,
        &format!("--sharegpt {}", path.display()),
        a.sharegpt_prompts,
        sample,
        a.max_turns.unwrap_or(0) as usize,
        (budget, !a.sharegpt_keep_all),
        a.seed,
        tokenizer,
    )
    .map(Some)
    .map_err(dataset)
}

/// Makes `c` (whose requests are `conv`'s prompts, in order) follow the conversations: which
/// request follows which, the think time, and each request named by its turn (`turn 1`,
/// `turn 2`, ...), so that the per-request breakdown is per turn.
pub(super) fn follow(a: &LoadArgs, c: &mut LoadConfig, conv: &Conversations) {
    if let Some(w) = window_warning(&c.shape, conv.max_turns()) {
        eprintln!("{w}");
    }
    c.conversations = Some(candor_load::ConversationSettings {
        plan: std::sync::Arc::new(conv.plan()),
        think: a.think_time.unwrap_or_default(),
        seed: a.seed,
    });
    c.workload.lines = c
        .requests
        .iter()
        .zip(&conv.turns)
        .enumerate()
        .map(|(i, (spec, turn))| candor_load::requests::RequestLine {
            spec: spec.clone(),
            name: format!("turn {turn}"),
            weight: None,
            check_status: None,
            check_body: None,
            url: None,
            line: i + 1,
            call: None,
            message: None,
        })
        .collect();
}

/// The warning for a run whose window ends at its last conversation start (`-n`), when
/// conversations have more than one turn: those still under way then are cut short, since no
/// follow-up is sent past the window's end.
fn window_warning(shape: &candor_load::LoadShape, max_turns: u32) -> Option<String> {
    let candor_load::LoadShape::Count { per_s, .. } = shape else {
        return None;
    };
    (max_turns > 1).then(|| {
        format!(
            "candor: warning: with -n the window ends at the last conversation start, so the \
             conversations under way then are cut short (no turn is sent past the window's \
             end): give them room with a stage that starts none, e.g. -R {per_s}:10s,0:30s"
        )
    })
}

/// How the dataset of a conversation run is named in its results' settings.
pub(super) fn dataset(a: &LoadArgs, conv: &Conversations) -> Option<String> {
    let think = match &a.think_time {
        Some(d) => format!(", think time {d}"),
        None => String::new(),
    };
    let (n, most) = (conv.plan().conversations(), conv.max_turns());
    match (&a.sharegpt, a.turns) {
        (_, Some(t)) => Some(format!("synthetic conversations of {t} turns ({n}){think}")),
        (Some(p), None) if a.multi_turn => Some(format!(
            "--sharegpt {} --multi-turn ({n} conversations, up to {most} turns){think}",
            p.display()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_ending_at_the_last_start_is_warned_of_for_conversations_only() {
        let count = candor_load::LoadShape::Count {
            per_s: 10.0,
            count: 5,
        };
        let w = window_warning(&count, 3).unwrap();
        assert!(
            w.starts_with("candor: warning: with -n the window ends"),
            "{w}"
        );
        assert!(w.contains("-R 10"), "{w}");
        assert_eq!(window_warning(&count, 1), None);
        assert_eq!(window_warning(&candor_load::LoadShape::ClosedLoop, 3), None);
    }
}
