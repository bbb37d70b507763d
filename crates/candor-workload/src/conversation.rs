//! Multi-turn conversations of an LLM run (`--sharegpt FILE --multi-turn`, synthetic
//! `--turns N`): a conversation of T turns becomes T prepared requests with consecutive
//! indices, turn k's `messages` holding user 1, assistant 1, ..., user k. The earlier answers
//! are the dataset's recorded ones (ShareGPT's `gpt` turns) or, for synthetic conversations,
//! synthetic text of that turn's output budget, so every body is fixed before the run: prompt
//! lengths are known exactly and nothing is built per request. The server's own answers are
//! not fed back (vLLM's multi-turn benchmark does): feeding them back would make each body
//! depend on the previous response, built and sized per request on the hot path, and the
//! prompt lengths (what a prefix cache or a prefill is measured against) would no longer be
//! known before the run.
//!
//! The schedule gives the conversation starts (a [`ConversationSource`] answers each entry with
//! a conversation's first turn); the core sends the next turn when the previous one completes,
//! asking the source which request follows which ([`RequestSource::follow_up`]).

use crate::pick::Picker;
use crate::prompts::{Prompt, PromptError, PromptInput};
use crate::sharegpt::{
    answer_tokens, answers, asks, pruned, read_kept, tokens, Entry, Sample, SharegptBudget, Take,
};
use crate::source::{Next, RequestSource};
use crate::synthetic::{words_of, Lengths};
use crate::tokenizer::Tokenizer;
use candor_core::results::DatasetSample;
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{json, Value};
use std::cell::Cell;
use std::sync::Arc;

/// One turn as the dataset has it: what the user says, the answer recorded for it, and the
/// output budget its request asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnText {
    pub user: String,
    pub answer: String,
    pub budget: u64,
}

/// The requests of a run's conversations: `prompts[i]` is turn `turns[i]` (from 1) of its
/// conversation, the turns of one conversation consecutive.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversations {
    pub prompts: Vec<Prompt>,
    pub turns: Vec<u32>,
    /// How a ShareGPT file's conversations were taken and pruned (`None`: synthetic).
    pub sample: Option<DatasetSample>,
}

impl Conversations {
    /// The prompts of `conversations`, each turn's messages all the turns and answers before it.
    pub fn of(conversations: &[Vec<TurnText>]) -> Conversations {
        let mut prompts = Vec::new();
        let mut turns = Vec::new();
        for c in conversations {
            let mut messages: Vec<Value> = Vec::with_capacity(2 * c.len());
            for (k, t) in c.iter().enumerate() {
                messages.push(json!({"role": "user", "content": t.user}));
                prompts.push(Prompt {
                    input: PromptInput::Messages(messages.clone()),
                    max_tokens: Some(t.budget),
                    budget_key: None,
                    extra: Default::default(),
                });
                turns.push(k as u32 + 1);
                messages.push(json!({"role": "assistant", "content": t.answer}));
            }
        }
        Conversations {
            prompts,
            turns,
            sample: None,
        }
    }

    /// The plan the core's source follows (which request starts a conversation, which follows).
    pub fn plan(&self) -> ConversationPlan {
        ConversationPlan::new(&self.turns)
    }

    /// The most turns a conversation has.
    pub fn max_turns(&self) -> u32 {
        self.turns.iter().copied().max().unwrap_or(0)
    }
}

/// Which prepared request starts each conversation and which request follows each, fixed
/// before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationPlan {
    starts: Box<[u32]>,
    /// `next[r]`: the request of the turn after request `r` (`u32::MAX`: `r` is a last turn).
    next: Box<[u32]>,
}

impl ConversationPlan {
    /// The plan of requests whose turn numbers are `turns` (1 opens a conversation).
    pub fn new(turns: &[u32]) -> ConversationPlan {
        let starts = (0..turns.len() as u32)
            .filter(|&r| turns[r as usize] == 1)
            .collect();
        let next = (0..turns.len())
            .map(|r| match turns.get(r + 1) {
                Some(&t) if t > 1 => r as u32 + 1,
                _ => u32::MAX,
            })
            .collect();
        ConversationPlan { starts, next }
    }

    pub fn conversations(&self) -> usize {
        self.starts.len()
    }

    /// The request of the turn after request `request`, if it has one.
    #[inline]
    pub fn follow_up(&self, request: u32) -> Option<u32> {
        self.next
            .get(request as usize)
            .copied()
            .filter(|&r| r != u32::MAX)
    }
}

/// The conversations of a run as the core asks for them: each schedule entry starts the
/// conversation the picker chooses by `seq` (round robin, or uniform by `--seed` with
/// `--request-order random`), and each turn names the request that follows it.
#[derive(Debug, Clone)]
pub struct ConversationSource {
    plan: Arc<ConversationPlan>,
    picker: Picker,
    seed: u64,
}

impl ConversationSource {
    /// Starts chosen round robin (`random: false`) or uniformly from `seed`.
    pub fn new(plan: Arc<ConversationPlan>, random: bool, seed: u64) -> ConversationSource {
        let n = plan.conversations().max(1);
        let picker = if random && n > 1 {
            Picker::Uniform { n }
        } else {
            Picker::RoundRobin { n }
        };
        ConversationSource { plan, picker, seed }
    }
}

impl RequestSource for ConversationSource {
    #[inline]
    fn next(&mut self, _slot: usize, seq: u64, _taken: Option<(&[u8], bool)>) -> Next {
        let c = self.picker.choose(self.seed, seq) as usize;
        Next {
            request: self.plan.starts.get(c).copied().unwrap_or(0),
            sendable: true,
        }
    }

    #[inline]
    fn made(&self, _slot: usize) -> Option<(&[u8], bool)> {
        None
    }

    #[inline]
    fn follow_up(&self, request: u32) -> Option<u32> {
        self.plan.follow_up(request)
    }
}

/// The turns of a ShareGPT entry: each user turn followed by an answer, from the first, as long
/// as they alternate, up to `max_turns` (0: all); none when it does not open with a user turn
/// and an answer.
fn turns_of(
    e: Entry,
    max_turns: usize,
    tokenizer: Option<&Tokenizer>,
) -> Option<Vec<(String, String, u64)>> {
    let mut turns = Vec::new();
    let mut it = e.conversations.into_iter();
    while max_turns == 0 || turns.len() < max_turns {
        let (Some(ask), Some(answer)) = (it.next(), it.next()) else {
            break;
        };
        if !asks(&ask) || !answers(&answer) || ask.value.trim().is_empty() {
            break;
        }
        let tokens = answer_tokens(&answer.value, tokenizer);
        turns.push((ask.value, answer.value, tokens));
    }
    (!turns.is_empty()).then_some(turns)
}

/// What vLLM's length rules (see [`pruned`]) make of a conversation's turns, each judged with
/// its whole prompt (every earlier message and its own user turn) as the prompt length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pruning {
    /// Every turn passes.
    Whole,
    /// Cut before its first turn that fails, after this many turns.
    Cut(usize),
    /// Its first turn fails.
    Dropped,
}

/// Judges `turns` by vLLM's rules, turn by turn. `answer_budget`: each turn's recorded answer
/// is its output budget (`--sharegpt-budget answer`), so the answer is judged too.
fn prune_turns(
    turns: &[(String, String, u64)],
    answer_budget: bool,
    tokenizer: Option<&Tokenizer>,
) -> Pruning {
    let mut context = 0;
    for (k, (user, answer, budget)) in turns.iter().enumerate() {
        let prompt = context + tokens(user, tokenizer);
        if pruned(prompt, *budget, answer_budget) {
            return if k == 0 {
                Pruning::Dropped
            } else {
                Pruning::Cut(k)
            };
        }
        context = prompt + tokens(answer, tokenizer);
    }
    Pruning::Whole
}

/// The text a run's conversation turns may hold in all: turn k of a conversation repeats the
/// k - 1 turns and answers before it, so long conversations cost the square of their length,
/// and the bodies are held three times over before the run (prompts, JSON, request bytes).
/// Conversations past this are not kept (the run's settings name how many were).
pub const MAX_TURN_TEXT_BYTES: usize = 64 << 20;

/// The text conversation `turns` costs as prepared turns (see [`MAX_TURN_TEXT_BYTES`]).
fn turn_text_bytes(turns: &[(String, String, u64)]) -> usize {
    let mut context = 0;
    let mut total = 0;
    for (user, answer, _) in turns {
        context += user.len();
        total += context;
        context += answer.len();
    }
    total
}

/// Up to `cap` whole conversations of a ShareGPT file (`file` names it in errors), the first
/// or a random sample seeded by `seed` (`sample`, as single prompts are taken), up to
/// `max_turns` turns each (0: all), as many as [`MAX_TURN_TEXT_BYTES`] holds, each turn
/// budgeted as `budget` says (`Drawn` lengths drawn in order from `seed`). With `prune`,
/// vLLM's length rules judge each turn with its whole prompt (`prune_turns`): a conversation
/// is cut before its first turn that fails, or dropped if that is its first; the counts are in
/// the result's `sample` (`pruned`: dropped, `cut`: cut short).
#[allow(clippy::too_many_arguments)]
pub fn sharegpt(
    reader: impl std::io::Read,
    file: &str,
    cap: usize,
    sample: Sample,
    max_turns: usize,
    (budget, prune): (SharegptBudget, bool),
    seed: u64,
    tokenizer: Option<&Tokenizer>,
) -> Result<Conversations, PromptError> {
    let (examined, unusable, dropped, cut) =
        (Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0));
    let answer_budget = budget == SharegptBudget::Answer;
    let usable = |e: Entry, t: Option<&Tokenizer>| {
        let Some(mut turns) = turns_of(e, max_turns, t) else {
            unusable.set(unusable.get() + 1);
            return None;
        };
        examined.set(examined.get() + 1);
        match prune_turns(&turns, answer_budget, t) {
            _ if !prune => {}
            Pruning::Whole => {}
            Pruning::Cut(k) => {
                cut.set(cut.get() + 1);
                turns.truncate(k);
            }
            Pruning::Dropped => {
                dropped.set(dropped.get() + 1);
                return None;
            }
        }
        Some(turns)
    };
    let none = || {
        (dropped.get() > 0).then(|| format!(
            "vLLM's length rules dropped all {} usable conversations (a turn's whole prompt or its answer under {} tokens, the prompt over {}, both over {}): --sharegpt-keep-all keeps them",
            examined.get(),
            crate::sharegpt::MIN_TOKENS,
            crate::sharegpt::MAX_PROMPT_TOKENS,
            crate::sharegpt::MAX_TOTAL_TOKENS
        ))
    };
    let take = Take { cap, sample, seed };
    let (mut kept, read) = read_kept(reader, file, take, tokenizer, &usable, &none)?;
    let mut counts = DatasetSample {
        random: sample == Sample::Random,
        seed,
        pruning: prune,
        conversations: read,
        unusable: unusable.get(),
        examined: examined.get(),
        pruned: dropped.get(),
        cut: cut.get(),
        kept: kept.len() as u64,
        whole_conversations: true,
    };
    let mut total = 0;
    let within = kept
        .iter()
        .take_while(|turns| {
            total += turn_text_bytes(turns);
            total <= MAX_TURN_TEXT_BYTES
        })
        .count();
    kept.truncate(within.max(1));
    counts.kept = kept.len() as u64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let conversations: Vec<Vec<TurnText>> = kept
        .into_iter()
        .map(|turns| {
            turns
                .into_iter()
                .map(|(user, answer, tokens)| TurnText {
                    user,
                    answer,
                    budget: match budget {
                        SharegptBudget::Answer => tokens,
                        SharegptBudget::Drawn(lengths) => lengths.draw(&mut rng),
                    },
                })
                .collect()
        })
        .collect();
    Ok(Conversations {
        sample: Some(counts),
        ..Conversations::of(&conversations)
    })
}

/// Words of synthetic turns, as the synthetic prompts' (see [`crate::synthetic`]).
const WORDS: [&str; 8] = [
    "latency", "queue", "server", "token", "stream", "honest", "arrival", "client",
];

/// Text of `tokens` tokens opening with `start`: exactly so by `tokenizer`, else
/// [`words_of`]`(tokens)` words by the 3/4-word rule.
fn text_of(
    start: &str,
    k: usize,
    tokens: u64,
    tokenizer: Option<&Tokenizer>,
) -> Result<String, PromptError> {
    match tokenizer {
        Some(t) => {
            let words = [WORDS[k % WORDS.len()], WORDS[(k * 3 + 1) % WORDS.len()]];
            t.exact_text(start, &words, tokens)
                .map_err(|e| PromptError::Dataset(e.to_string()))
        }
        None => {
            let mut text = start.to_string();
            for w in 1..words_of(tokens) {
                text.push(' ');
                text.push_str(WORDS[(k * 5 + w * 3) % WORDS.len()]);
            }
            Ok(text)
        }
    }
}

/// `count` synthetic conversations of `turns` turns: each turn's user text of `prompt` tokens
/// and the answer recorded for it of its output budget (`output`), drawn in order from `seed`.
/// Each user text opens with its conversation and turn (`c.k`), so that a prefix cache can
/// answer a turn from the earlier turns of its own conversation only.
pub fn synthetic(
    prompt: Lengths,
    output: Lengths,
    turns: u32,
    count: usize,
    seed: u64,
    tokenizer: Option<&Tokenizer>,
) -> Result<Conversations, PromptError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut conversations = Vec::with_capacity(count);
    for c in 0..count {
        let mut list = Vec::with_capacity(turns as usize);
        for k in 1..=turns as usize {
            let (asked, budget) = (prompt.draw(&mut rng), output.draw(&mut rng));
            let n = c * turns as usize + k;
            list.push(TurnText {
                user: text_of(&format!("{c}.{k}"), n, asked, tokenizer)?,
                answer: text_of("answer", n + 1, budget, tokenizer)?,
                budget,
            });
        }
        conversations.push(list);
    }
    Ok(Conversations::of(&conversations))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(p: &Prompt) -> &[Value] {
        match &p.input {
            PromptInput::Messages(m) => m,
            PromptInput::Text(_) => unreachable!(),
        }
    }

    const FILE: &str = r#"[
      {"conversations": [{"from": "human", "value": "one"}, {"from": "gpt", "value": "a b c"},
                         {"from": "human", "value": "two"}, {"from": "gpt", "value": "d"},
                         {"from": "human", "value": "three"}]},
      {"conversations": [{"from": "gpt", "value": "answer first"}]},
      {"conversations": [{"from": "user", "value": "solo"}, {"from": "assistant", "value": "e f"},
                         {"from": "gpt", "value": "twice"}, {"from": "human", "value": "x"}]}
    ]"#;

    /// A conversation of turns of `user` and `answer` words each.
    fn talk(turns: &[(usize, usize)]) -> serde_json::Value {
        let words = |n: usize| vec!["w"; n].join(" ");
        let c: Vec<_> = turns
            .iter()
            .flat_map(|&(u, a)| {
                [
                    json!({"from": "human", "value": words(u)}),
                    json!({"from": "gpt", "value": words(a)}),
                ]
            })
            .collect();
        json!({ "conversations": c })
    }

    #[test]
    fn vllms_rules_judge_each_turn_by_its_whole_prompt_and_cut_or_drop_conversations() {
        // Words -> tokens by ceil(4w/3): 3 -> 4, 300 -> 400, 2 -> 3 (short).
        let file = json!([
            // Whole: prompts 4, then 4 + 4 + 4 = 12.
            talk(&[(3, 3), (3, 3)]),
            // Cut after 2 turns: turn 3's whole prompt is 400 + 400 + 400 + 400 + 4 = 1,604,
            // over 1,024 (each turn alone is 4 tokens).
            talk(&[(300, 300), (3, 300), (3, 3)]),
            // Dropped: the first answer is 3 tokens.
            talk(&[(3, 2), (3, 3)]),
            // Cut after 1 turn: turn 2's prompt 4 + 400 + 400 = 804, its answer 1,300 tokens
            // (975 words): 2,104 together, over 2,048.
            talk(&[(3, 300), (300, 975)]),
            // Unusable.
            json!({"conversations": [{"from": "gpt", "value": "x"}]}),
        ])
        .to_string();
        let read = |prune: bool| {
            sharegpt(
                file.as_bytes(),
                "s",
                10,
                Sample::First,
                0,
                (SharegptBudget::Answer, prune),
                0,
                None,
            )
            .unwrap()
        };
        let c = read(true);
        assert_eq!(c.turns, [1, 2, 1, 2, 1]);
        let s = c.sample.unwrap();
        assert_eq!(
            (
                s.conversations,
                s.unusable,
                s.examined,
                s.pruned,
                s.cut,
                s.kept
            ),
            (5, 1, 4, 1, 2, 3)
        );
        assert!(s.pruning && !s.random);
        assert!(s.rows()[1].1.contains("2 more cut"), "{:?}", s.rows());
        // --sharegpt-keep-all: every turn of every usable conversation.
        let c = read(false);
        assert_eq!(c.turns, [1, 2, 1, 2, 3, 1, 2, 1, 2]);
        let s = c.sample.unwrap();
        assert_eq!((s.pruned, s.cut, s.kept, s.pruning), (0, 0, 4, false));
        // Only the prompt is judged when the budget is not the recorded answer: the third
        // conversation's short answer no longer drops it.
        assert_eq!(
            prune_turns(
                &[
                    ("a b c".into(), "x".into(), 1),
                    ("a b c".into(), "y".into(), 1)
                ],
                false,
                None
            ),
            Pruning::Whole
        );
        // All dropped: said, with the way out.
        let e = sharegpt(
            json!([talk(&[(2, 3)])]).to_string().as_bytes(),
            "s",
            10,
            Sample::First,
            0,
            (SharegptBudget::Answer, true),
            0,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("dropped all 1 usable") && e.contains("--sharegpt-keep-all"),
            "{e}"
        );
    }

    #[test]
    fn each_turn_carries_the_earlier_turns_and_their_recorded_answers() {
        let c = sharegpt(
            FILE.as_bytes(),
            "s",
            10,
            Sample::First,
            0,
            (SharegptBudget::Answer, false),
            0,
            None,
        )
        .unwrap();
        // "three" has no answer; the third entry stops where the turns stop alternating.
        assert_eq!(c.turns, [1, 2, 1]);
        assert_eq!(c.max_turns(), 2);
        let m = messages(&c.prompts[1]);
        let text: Vec<(&str, &str)> = m
            .iter()
            .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            text,
            [("user", "one"), ("assistant", "a b c"), ("user", "two")]
        );
        // Budgets are the recorded answers' lengths: 3 words -> 4 tokens, 1 -> 2.
        let budgets: Vec<_> = c.prompts.iter().map(|p| p.max_tokens).collect();
        assert_eq!(budgets, [Some(4), Some(2), Some(3)]);
        let one = sharegpt(
            FILE.as_bytes(),
            "s",
            10,
            Sample::First,
            1,
            (SharegptBudget::Answer, false),
            0,
            None,
        )
        .unwrap();
        assert_eq!(one.turns, [1, 1], "--max-turns 1");
        let plan = c.plan();
        assert_eq!(plan.conversations(), 2);
        assert_eq!(
            (plan.follow_up(0), plan.follow_up(1), plan.follow_up(2)),
            (Some(1), None, None)
        );
        assert_eq!(plan.follow_up(9), None);
        // Turn 1 holds "one", turn 2 "one", "a b c" and "two".
        let turns = [
            ("one".to_string(), "a b c".to_string(), 4),
            ("two".to_string(), "d".to_string(), 2),
        ];
        assert_eq!(turn_text_bytes(&turns), 3 + (3 + 5 + 3));
        let e = sharegpt(
            "[{}]".as_bytes(),
            "s",
            10,
            Sample::Random,
            0,
            (SharegptBudget::Answer, false),
            0,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no conversation opens"), "{e}");
    }

    #[test]
    fn a_seeded_sample_of_conversations_is_the_same_for_a_seed_and_whole_conversations() {
        // 40 conversations of two turns, the n-th asking "q<n>".
        let entries: Vec<String> = (0..40)
            .map(|n| {
                format!(
                    r#"{{"conversations": [{{"from": "human", "value": "q{n}"}}, {{"from": "gpt", "value": "a"}}, {{"from": "human", "value": "again"}}, {{"from": "gpt", "value": "b c"}}]}}"#
                )
            })
            .collect();
        let file = format!("[{}]", entries.join(","));
        let take = |seed| {
            let c = sharegpt(
                file.as_bytes(),
                "s",
                5,
                Sample::Random,
                0,
                (SharegptBudget::Answer, false),
                seed,
                None,
            )
            .unwrap();
            assert_eq!(
                c.turns,
                [1, 2, 1, 2, 1, 2, 1, 2, 1, 2],
                "whole conversations"
            );
            let firsts: Vec<String> = c
                .prompts
                .iter()
                .step_by(2)
                .map(|p| messages(p)[0]["content"].as_str().unwrap().to_string())
                .collect();
            firsts
        };
        let (a, b, other) = (take(1), take(1), take(2));
        assert_eq!(a, b, "the same seed takes the same sample");
        assert_ne!(a, other, "another seed another sample");
        let first5: Vec<String> = (0..5).map(|n| format!("q{n}")).collect();
        assert_ne!(a, first5, "not the first five");
    }

    #[test]
    fn the_source_starts_conversations_and_names_each_follow_up() {
        let c = synthetic(Lengths::Fixed(4), Lengths::Fixed(2), 3, 2, 0, None).unwrap();
        assert_eq!(c.turns, [1, 2, 3, 1, 2, 3]);
        let mut s = ConversationSource::new(Arc::new(c.plan()), false, 0);
        let starts: Vec<u32> = (0..4).map(|seq| s.next(0, seq, None).request).collect();
        assert_eq!(starts, [0, 3, 0, 3]);
        let chain: Vec<Option<u32>> = (0..6).map(|r| s.follow_up(r)).collect();
        assert_eq!(chain, [Some(1), Some(2), None, Some(4), Some(5), None]);
        let mut random = ConversationSource::new(Arc::new(c.plan()), true, 5);
        assert!((0..50).all(|seq| [0, 3].contains(&random.next(0, seq, None).request)));
    }

    #[test]
    fn synthetic_turns_have_their_lengths_and_grow_by_each_turn_and_answer() {
        // 16 tokens -> 12 words a user turn; answers of 8 tokens -> 6 words.
        let c = synthetic(Lengths::Fixed(16), Lengths::Fixed(8), 3, 2, 1, None).unwrap();
        for (i, p) in c.prompts.iter().enumerate() {
            let m = messages(p);
            let k = c.turns[i] as usize;
            assert_eq!(m.len(), 2 * k - 1);
            let words: usize = m
                .iter()
                .map(|m| m["content"].as_str().unwrap().split_whitespace().count())
                .sum();
            assert_eq!(words, 12 * k + 6 * (k - 1), "turn {k}");
            assert_eq!(p.max_tokens, Some(8));
            let last = m.last().unwrap()["content"].as_str().unwrap();
            assert!(last.starts_with(&format!("{}.{k} ", i / 3)), "{last}");
        }
        assert_eq!(
            c,
            synthetic(Lengths::Fixed(16), Lengths::Fixed(8), 3, 2, 1, None).unwrap()
        );
        let t = Tokenizer::load("cl100k_base").unwrap();
        let exact = synthetic(Lengths::Fixed(20), Lengths::Fixed(9), 2, 3, 1, Some(&t)).unwrap();
        for p in &exact.prompts {
            for (j, m) in messages(p).iter().enumerate() {
                let want = if j % 2 == 0 { 20 } else { 9 };
                assert_eq!(t.count(m["content"].as_str().unwrap()), want);
            }
        }
    }
}
