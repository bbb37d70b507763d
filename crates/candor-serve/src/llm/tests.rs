//! The server's rules checked without a socket: timing, limits, token counts, settings.

use super::body::RequestBody;
use super::connection::output_tokens;
use super::request::{body_allowance_ns, MAX_BODY};
use super::*;
use crate::Stall;

const MS: u64 = 1_000_000;

fn config() -> LlmConfig {
    let mut c = LlmConfig::new("127.0.0.1:0".parse().unwrap());
    c.ttft_ns = 100 * MS;
    c.itl_ns = 20 * MS;
    c.output_tokens = 4;
    c
}

#[test]
fn a_body_may_take_the_head_timeout_plus_its_length_at_the_minimum_rate() {
    let c = config();
    assert_eq!(body_allowance_ns(&c, 0), HEAD_TIMEOUT_NS);
    // The largest body: 16 MiB at 64 KiB/s is 256 s.
    assert_eq!(
        body_allowance_ns(&c, MAX_BODY),
        HEAD_TIMEOUT_NS + 256_000_000_000
    );
    assert_eq!(
        body_allowance_ns(&c, 64 * 1024 + 1),
        HEAD_TIMEOUT_NS + 1_000_015_258
    );
}

#[test]
fn without_a_stall_tokens_are_due_at_ttft_then_every_itl() {
    let mut t = Vec::new();
    emission_times(&config(), 0, 1_000 * MS, 0, 4, &mut t);
    assert_eq!(
        t,
        vec![1_000 * MS, 1_100 * MS, 1_120 * MS, 1_140 * MS, 1_160 * MS]
    );
}

#[test]
fn a_stall_holds_every_write_due_inside_it_to_its_end() {
    let mut c = config();
    // Stalled during [4 s, 5 s) of every 5 s.
    c.stall = Some(Stall {
        every_ns: 5_000 * MS,
        for_ns: 1_000 * MS,
    });
    let mut t = Vec::new();
    // Read at 3.95 s: the head leaves at once, the first token (due 4.05 s) at 5 s, and the
    // tokens due at 4.07, 4.09 and 4.11 s all at 5 s too.
    emission_times(&c, 0, 3_950 * MS, 0, 4, &mut t);
    assert_eq!(
        t,
        vec![3_950 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS]
    );
    // Read at 4.5 s (inside the stall): everything waits for 5 s, the last token is due
    // after it (4.5 + 0.1 + 3 * 0.02 = 4.66 s: still inside, so 5 s).
    emission_times(&c, 0, 4_500 * MS, 0, 4, &mut t);
    assert_eq!(t, vec![5_000 * MS; 5]);
    // Read at 4.85 s: tokens due at 4.95, 4.97, 4.99 s are held; 5.01 s is not.
    emission_times(&c, 0, 4_850 * MS, 0, 4, &mut t);
    assert_eq!(
        t,
        vec![5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_010 * MS]
    );
}

#[test]
fn the_prompt_tokens_not_cached_delay_every_token_by_the_prefill() {
    let mut c = config();
    c.prefill_per_token_ns = MS / 2;
    // 40 words = 54 tokens (ceil(160 / 3)); 3 blocks (36 words) may be cached.
    assert_eq!(prompt_tokens(40), 54);
    assert_eq!(cached_tokens(40, 0), 0);
    assert_eq!(cached_tokens(40, 2), 32);
    assert_eq!(cached_tokens(40, 3), 48);
    // The last word is never served from the cache: 36 words hit in full still leave it.
    assert_eq!(cached_tokens(36, 3), 32);
    assert_eq!(prefill_ns(&c, 54, 0), 27 * MS);
    assert_eq!(prefill_ns(&c, 54, 48), 3 * MS);
    let mut t = Vec::new();
    emission_times(&c, 0, 1_000 * MS, prefill_ns(&c, 54, 48), 4, &mut t);
    assert_eq!(
        t,
        vec![1_000 * MS, 1_103 * MS, 1_123 * MS, 1_143 * MS, 1_163 * MS]
    );
    // Without --prefill-per-token the prompt changes nothing.
    assert_eq!(prefill_ns(&config(), 54, 0), 0);
}

#[test]
fn a_prefix_is_cached_for_a_request_read_after_the_first_ones_prefill_ends() {
    use super::prefix::PrefixCache;
    use super::timing::prefill_end;
    let mut c = config();
    c.prefill_per_token_ns = MS / 2;
    // A 40-word prompt (54 tokens, 3 cacheable blocks) read at 1 s with nothing cached: its
    // first token at 1,000 + 100 + 27 = 1,127 ms, its last (4th) at 1,187 ms.
    let blocks = [7, 8, 9];
    let mut cache = PrefixCache::new(100);
    let read = 1_000 * MS;
    assert_eq!(cache.hit(&blocks, read), 0);
    let mut t = Vec::new();
    emission_times(&c, 0, read, prefill_ns(&c, 54, 0), 4, &mut t);
    assert_eq!((prefill_end(&t, read), t[4]), (1_127 * MS, 1_187 * MS));
    cache.insert(&blocks, prefill_end(&t, read));
    // A second request with the same prompt, read 1 ns before that prefill ends: nothing yet.
    assert_eq!(cache.hit(&blocks, 1_127 * MS - 1), 0);
    // Read at its end or after, while the first answer still streams: all 3 blocks, 48 tokens.
    for at in [1_127 * MS, 1_150 * MS, 1_187 * MS - 1] {
        let hit = cache.hit(&blocks, at);
        assert_eq!((hit, cached_tokens(40, hit)), (3, 48), "read at {at}");
    }
    // An answer of no tokens ends its prefill with its head.
    assert_eq!(prefill_end(&[5], 3), 5);
}

#[test]
fn a_bodys_prompt_words_are_hashed_in_blocks_as_they_are_counted() {
    use super::prefix::BlockHashes;
    let shared = (0..24)
        .map(|k| format!("s{k}"))
        .collect::<Vec<_>>()
        .join(" ");
    let read = |json: &str| {
        let mut b = BlockHashes::new(100);
        let body = RequestBody::read_hashing(json.as_bytes(), Some(&mut b)).unwrap();
        (body.prompt_words, b.hashes().to_vec())
    };
    let mut plain = BlockHashes::new(100);
    plain.words(&format!("{shared} own words"));
    // A completion's prompt, and a chat whose messages hold the same words in turn (a value of
    // another type than a string adds none).
    let (n, completion) = read(&format!(
        r#"{{"prompt":"{shared} own words","stream":true}}"#
    ));
    assert_eq!((n, completion.as_slice()), (26, plain.hashes()));
    let (n, chat) = read(&format!(
        r#"{{"messages":[{{"role":"system","content":"{shared}"}},{{"content":7}},{{"role":"user","content":"own words"}}]}}"#
    ));
    assert_eq!((n, chat), (26, completion.clone()));
    assert_eq!(completion.len(), 2);
    // Only the words count: a body without a cache reads the same.
    assert_eq!(
        RequestBody::read(format!(r#"{{"prompt":"{shared} own words"}}"#).as_bytes())
            .unwrap()
            .prompt_words,
        26
    );
}

fn words(json: &str) -> u64 {
    RequestBody::read(json.as_bytes()).unwrap().prompt_words
}

#[test]
fn prompt_tokens_follow_the_stated_rule() {
    let chat = r#"{"messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one two three four"}
    ]}"#;
    // 6 words -> ceil(6 * 4 / 3) = 8 tokens.
    assert_eq!(prompt_tokens(words(chat)), 8);
    // 5 words -> ceil(20 / 3) = 7.
    assert_eq!(prompt_tokens(words(r#"{"prompt": "a b c d e"}"#)), 7);
    assert_eq!(prompt_tokens(words("{}")), 0);
}

#[test]
fn a_smaller_max_tokens_lowers_the_output_and_a_larger_one_does_not_raise_it() {
    let c = config();
    let asked = |json: &str| RequestBody::read(json.as_bytes()).unwrap().max_tokens;
    assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 2}"#)), 2);
    assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 99}"#)), 4);
    assert_eq!(
        output_tokens(&c, asked(r#"{"max_completion_tokens": 3}"#)),
        3
    );
    assert_eq!(output_tokens(&c, asked(r#"{"max_tokens": 0}"#)), 4);
    assert_eq!(output_tokens(&c, asked("{}")), 4);
}

#[test]
fn fault_names_round_trip_and_unknown_ones_are_refused() {
    for k in LlmFaultKind::ALL {
        assert_eq!(k.name().parse::<LlmFaultKind>().unwrap(), k);
    }
    let err = "slow".parse::<LlmFaultKind>().unwrap_err().to_string();
    assert!(err.contains("unknown LLM fault 'slow'"), "{err}");
}

#[test]
fn bad_settings_are_refused() {
    let mut c = config();
    c.output_tokens = 0;
    assert!(matches!(c.validate(), Err(LlmError::NoTokens)));
    let mut c = config();
    c.stall = Some(Stall {
        every_ns: 10,
        for_ns: 10,
    });
    assert!(matches!(c.validate(), Err(LlmError::InvalidStall)));
    let mut c = config();
    c.fault = Some(LlmFault {
        kind: LlmFaultKind::NoDone,
        every: 0,
    });
    assert!(matches!(c.validate(), Err(LlmError::FaultEveryZero)));
    let mut c = config();
    c.idle_timeout_ns = 0;
    assert!(matches!(c.validate(), Err(LlmError::ZeroTimeout)));
    let mut c = config();
    c.head_timeout_ns = 0;
    assert!(matches!(c.validate(), Err(LlmError::ZeroTimeout)));
    let mut c = config();
    c.max_connections = 0;
    assert!(matches!(c.validate(), Err(LlmError::NoConnections)));
    let mut c = config();
    c.prefix_cache_blocks = MAX_PREFIX_CACHE_BLOCKS + 1;
    assert!(matches!(c.validate(), Err(LlmError::PrefixCacheTooLarge)));
    c.prefix_cache_blocks = MAX_PREFIX_CACHE_BLOCKS;
    assert!(c.validate().is_ok());
}
