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
    emission_times(&config(), 0, 1_000 * MS, 4, &mut t);
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
    emission_times(&c, 0, 3_950 * MS, 4, &mut t);
    assert_eq!(
        t,
        vec![3_950 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS]
    );
    // Read at 4.5 s (inside the stall): everything waits for 5 s, the last token is due
    // after it (4.5 + 0.1 + 3 * 0.02 = 4.66 s: still inside, so 5 s).
    emission_times(&c, 0, 4_500 * MS, 4, &mut t);
    assert_eq!(t, vec![5_000 * MS; 5]);
    // Read at 4.85 s: tokens due at 4.95, 4.97, 4.99 s are held; 5.01 s is not.
    emission_times(&c, 0, 4_850 * MS, 4, &mut t);
    assert_eq!(
        t,
        vec![5_000 * MS, 5_000 * MS, 5_000 * MS, 5_000 * MS, 5_010 * MS]
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
}
