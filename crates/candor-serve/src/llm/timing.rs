//! The server's truth without I/O: when each write of an answer leaves, and how many tokens a
//! prompt counts.

use super::config::{LlmConfig, TOKENS_PER_WORD};

/// When each write of one streamed answer leaves, for a request read at `read_ns` by a server
/// started at `started_ns`, whose prompt takes `prefill_ns` to compute ([`prefill_ns`]): `[0]`
/// the response head, then one instant per token (`tokens` of them). Token `k` is due at
/// `read + ttft + prefill + k * itl`; a write due inside a stall window leaves at the window's
/// end, and no write leaves before the one before it.
pub fn emission_times(
    config: &LlmConfig,
    started_ns: u64,
    read_ns: u64,
    prefill_ns: u64,
    tokens: u32,
    out: &mut Vec<u64>,
) {
    out.clear();
    let hold = |due: u64| match &config.stall {
        Some(s) => s.window_end_at(started_ns, due).unwrap_or(due),
        None => due,
    };
    let mut last = hold(read_ns);
    out.push(last);
    for k in 0..u64::from(tokens) {
        let due = read_ns + config.ttft_ns + prefill_ns + k * config.itl_ns;
        last = hold(due).max(last);
        out.push(last);
    }
}

/// The prompt's token count by [`TOKENS_PER_WORD`], from its words: those of `prompt` for
/// completions, of the contents of `messages` for chat (see [`RequestBody::prompt_words`](super::body::RequestBody::prompt_words)).
pub fn prompt_tokens(words: u64) -> u64 {
    let (num, den) = TOKENS_PER_WORD;
    words.saturating_mul(num).div_ceil(den)
}

/// The time a prompt of `prompt_tokens` takes to compute when `cached_tokens` of them come from
/// the prefix cache: `--prefill-per-token` for each of the others.
pub fn prefill_ns(config: &LlmConfig, prompt_tokens: u64, cached_tokens: u64) -> u64 {
    config
        .prefill_per_token_ns
        .saturating_mul(prompt_tokens.saturating_sub(cached_tokens))
}

/// The tokens of a prompt of `words` words served from the cache, when the first `hit` of its
/// blocks were found there: whole blocks, and never the last word (see
/// [`cacheable_blocks`](super::prefix::cacheable_blocks)).
pub fn cached_tokens(words: u64, hit: usize) -> u64 {
    use super::prefix::{cacheable_blocks, BLOCK_TOKENS};
    (hit as u64).min(cacheable_blocks(words)) * BLOCK_TOKENS
}

/// When a prompt's prefill ends, from its answer's [`emission_times`]: the first token's
/// instant (its TTFT), or the head's for an answer of no tokens.
pub fn prefill_end(times: &[u64], read_ns: u64) -> u64 {
    times.get(1).or(times.first()).copied().unwrap_or(read_ns)
}
