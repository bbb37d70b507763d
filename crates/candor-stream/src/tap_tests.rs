//! The stream reader's tests: events, LLM streams and their failures, tokenizer counts,
//! whole answers and embeddings, each fed bytes on simulated time.
use super::*;

fn tap(kind: Option<StreamKind>, llm: bool) -> StreamTap {
    StreamTap::new(StreamSettings {
        kind,
        llm,
        counter: None,
        whole: false,
        embeddings: None,
    })
}

fn gaps(t: &mut StreamTap) -> Vec<(u64, bool)> {
    let mut v = Vec::new();
    t.drain_gaps(|g| v.push((g.ns, g.token)));
    v
}

#[test]
fn sse_events_are_timed_by_the_read_that_completed_them() {
    let mut t = tap(None, false);
    t.head(Some(b"text/event-stream"));
    t.at(100);
    t.body(b"data: a\n\nda");
    t.at(150);
    t.body(b"ta: b\n\n: comment\n\n");
    t.at(190);
    t.body(b"data: c\n\n");
    assert_eq!(gaps(&mut t), vec![(50, false), (40, false)]);
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.events, o.first_event, o.failure), (3, Some(100), None));
    assert_eq!(t.take_outcome(), None);
}

#[test]
fn without_a_kind_only_an_event_stream_is_read() {
    let mut t = tap(None, false);
    t.head(Some(b"application/json"));
    assert!(!t.active());
    t.body(b"data: a\n\n");
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome(), None);
}

#[test]
fn lines_and_chunks_are_events_of_their_own() {
    let mut t = tap(Some(StreamKind::Lines), false);
    t.head(Some(b"application/json"));
    t.at(10);
    t.body(b"{\"a\":1}\n\n{\"b\"");
    t.at(25);
    t.body(b":2}\n");
    t.end(StreamEnd::Complete, 200);
    assert_eq!(gaps(&mut t), vec![(15, false)]);
    assert_eq!(t.take_outcome().unwrap().events, 2);
    let mut t = tap(Some(StreamKind::Chunks), false);
    t.head(None);
    for (at, piece) in [(5u64, &b"ab"[..]), (7, b"cd")] {
        t.at(at);
        t.body(piece);
        t.chunk_end();
    }
    t.end(StreamEnd::Complete, 200);
    assert_eq!(gaps(&mut t), vec![(2, false)]);
    assert_eq!(t.take_outcome().unwrap().first_event, Some(5));
}

#[test]
fn a_stream_cut_after_events_fails_with_them_counted() {
    let mut t = tap(Some(StreamKind::Sse), false);
    t.head(None);
    t.at(3);
    t.body(b"data: x\n\n");
    t.end(StreamEnd::Cut, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.events, o.failure), (1, Some(LlmFailure::Cut)));
}

#[test]
fn llm_streams_count_tokens_and_name_their_failures() {
    let mut t = tap(None, true);
    t.head(Some(b"text/event-stream"));
    t.at(100);
    t.body(b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
    t.at(200);
    t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
    t.at(230);
    t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n");
    t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
    assert_eq!(
        gaps(&mut t),
        vec![
            (100, false),
            (30, false),
            (30, true),
            (0, false),
            (0, false)
        ]
    );
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.first_token, o.output_tokens), (Some(200), 2));
    assert_eq!(
        (o.tokens_from, o.tpot_ns),
        (Some(TokenSource::Usage), Some(30))
    );
    assert_eq!((o.events, o.failure), (5, None));
    // A 429 is rate_limited; a stream without [DONE] is no_done.
    t.head(Some(b"application/json"));
    t.end(StreamEnd::Complete, 429);
    assert_eq!(
        t.take_outcome().unwrap().failure,
        Some(LlmFailure::RateLimited)
    );
    t.head(Some(b"text/event-stream"));
    t.body(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome().unwrap().failure, Some(LlmFailure::NoDone));
}

const TOKEN: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
const USAGE_7: &[u8] = b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\n";

#[test]
fn the_cached_tokens_of_usage_are_read_for_a_stream_that_succeeded() {
    let mut t = tap(None, true);
    let mut run = |body: &[u8], end: StreamEnd| {
        t.head(Some(b"text/event-stream"));
        t.body(body);
        t.end(end, 200);
        let o = t.take_outcome().unwrap();
        (o.input_tokens, o.cached_tokens)
    };
    // As vLLM and OpenAI send them: inside prompt_tokens_details.
    let usage = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"total_tokens\":41,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n";
    let whole = [TOKEN, &usage[..], b"data: [DONE]\n\n"].concat();
    assert_eq!(run(&whole, StreamEnd::Complete), (Some(40), Some(32)));
    // vLLM without --enable-prompt-tokens-details sends null details: none said.
    let null = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"prompt_tokens_details\":null}}\n\n";
    let whole = [TOKEN, &null[..], b"data: [DONE]\n\n"].concat();
    assert_eq!(run(&whole, StreamEnd::Complete), (Some(40), None));
    // A failed stream's are not the run's.
    assert_eq!(
        run(&[TOKEN, &usage[..]].concat(), StreamEnd::Cut),
        (None, None)
    );
}

#[test]
fn the_input_tokens_of_usage_are_read_for_a_stream_that_succeeded() {
    let mut t = tap(None, true);
    let usage = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1,\"total_tokens\":13}}\n\n";
    let mut run = |body: &[u8], end: StreamEnd| {
        t.head(Some(b"text/event-stream"));
        t.body(body);
        t.end(end, 200);
        let o = t.take_outcome().unwrap();
        (o.input_tokens, o.output_tokens)
    };
    let whole = [TOKEN, &usage[..], b"data: [DONE]\n\n"].concat();
    assert_eq!(run(&whole, StreamEnd::Complete), (Some(12), 1));
    // Cut before [DONE]: failed, neither count is the run's.
    assert_eq!(
        run(&[TOKEN, &usage[..]].concat(), StreamEnd::Cut),
        (None, 0)
    );
    // No usage: no input count (output from the chunks).
    assert_eq!(
        run(&[TOKEN, b"data: [DONE]\n\n"].concat(), StreamEnd::Complete),
        (None, 1)
    );
    // A nonsense prompt_tokens is ignored, not failed.
    let odd =
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-4,\"completion_tokens\":1}}\n\n";
    assert_eq!(
        run(
            &[TOKEN, &odd[..], b"data: [DONE]\n\n"].concat(),
            StreamEnd::Complete
        ),
        (None, 1)
    );
}

#[test]
fn only_a_stream_that_succeeded_adds_output_tokens() {
    let mut t = tap(None, true);
    let mut run = |head: &[u8], body: &[u8], end: StreamEnd, status: u16| {
        t.head(Some(head));
        t.at(10);
        t.body(body);
        t.end(end, status);
        let o = t.take_outcome().unwrap();
        (o.output_tokens, o.failure, o.first_token)
    };
    let sse = &b"text/event-stream"[..];
    let whole = [TOKEN, USAGE_7, b"data: [DONE]\n\n"].concat();
    assert_eq!(
        run(sse, &whole, StreamEnd::Complete, 200),
        (7, None, Some(10))
    );
    // A 429 (or any refusal) with an event-stream body: failed, its tokens not output.
    assert_eq!(
        run(sse, &whole, StreamEnd::Complete, 429),
        (0, Some(LlmFailure::RateLimited), Some(10))
    );
    assert_eq!(
        run(sse, &whole, StreamEnd::Complete, 500),
        (0, None, Some(10))
    );
    // Failed streams keep their first token but add no tokens.
    let no_done = [TOKEN, USAGE_7].concat();
    assert_eq!(
        run(sse, &no_done, StreamEnd::Complete, 200),
        (0, Some(LlmFailure::NoDone), Some(10))
    );
    assert_eq!(
        run(sse, &no_done, StreamEnd::Timeout, 200),
        (0, Some(LlmFailure::Timeout), Some(10))
    );
    // Left unfinished by the run's end: no failure, and not a success either.
    assert_eq!(
        run(sse, &no_done, StreamEnd::Unfinished, 200),
        (0, None, Some(10))
    );
    let garbage = [TOKEN, b"data: not json\n\n", b"data: [DONE]\n\n"].concat();
    assert_eq!(
        run(sse, &garbage, StreamEnd::Complete, 200),
        (0, Some(LlmFailure::NotJson), Some(10))
    );
    // Tokens and usage after [DONE] are no part of the answer.
    let after = [TOKEN, b"data: [DONE]\n\n", USAGE_7, TOKEN].concat();
    assert_eq!(
        run(sse, &after, StreamEnd::Complete, 200),
        (1, None, Some(10))
    );
}

#[test]
fn an_answer_that_is_not_an_event_stream_says_so() {
    let mut t = tap(None, true);
    t.head(Some(b"application/json"));
    t.body(b"{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}");
    t.end(StreamEnd::Complete, 200);
    assert_eq!(
        t.take_outcome().unwrap().failure,
        Some(LlmFailure::NotEventStream)
    );
    // Events without the header, and a proper end, are a stream all the same.
    t.head(None);
    t.body(&[TOKEN, b"data: [DONE]\n\n"].concat());
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome().unwrap().failure, None);
    // An event stream that stops early still stopped mid-way.
    t.head(Some(b"text/event-stream"));
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome().unwrap().failure, Some(LlmFailure::NoDone));
}

#[test]
fn a_byte_order_mark_opening_an_llm_stream_loses_no_event() {
    let mut t = tap(None, true);
    t.head(Some(b"text/event-stream"));
    t.at(5);
    t.body(&[&b"\xEF\xBB\xBF"[..], TOKEN, b"data: [DONE]\n\n"].concat());
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.events, o.first_token, o.output_tokens), (2, Some(5), 1));
}

struct Chars;
impl crate::count::TokenCounter for Chars {
    fn count_tokens(&self, text: &str) -> u64 {
        text.chars().count() as u64
    }
}
static CHARS: Chars = Chars;

#[test]
fn a_tokenizer_counts_each_content_chunks_text_and_usage_still_wins() {
    let mut t = StreamTap::new(StreamSettings {
        kind: None,
        llm: true,
        counter: Some(Counter(&CHARS)),
        whole: false,
        embeddings: None,
    });
    let chunk = |text: &str| {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
    };
    let answer = [chunk("H\\u00e9llo"), chunk(" w\\\"r"), chunk("ld")].concat();
    t.head(Some(b"text/event-stream"));
    t.body(answer.as_bytes());
    t.body(b"data: [DONE]\n\n");
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    // "Héllo" 5 + " w\"r" 4 + "ld" 2, each chunk's text decoded from its JSON string.
    assert_eq!((o.output_tokens, o.counted_tokens), (11, Some(11)));
    assert_eq!(o.tokens_from, Some(TokenSource::Tokenizer));
    t.head(Some(b"text/event-stream"));
    t.body(answer.as_bytes());
    t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n");
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.output_tokens, o.counted_tokens), (3, Some(11)));
    assert_eq!(o.tokens_from, Some(TokenSource::Usage));
    // After an answer with usage the next is not counted (a check, sampled): without usage
    // of its own it falls back to its chunks; the one after it is counted again.
    t.head(Some(b"text/event-stream"));
    t.body(b"data: {\"choices\":[{\"text\":\"abc\"}]}\n\ndata: [DONE]\n\n");
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!((o.output_tokens, o.counted_tokens), (1, None));
    assert_eq!(o.tokens_from, Some(TokenSource::Chunks));
    // A completion chunk's `text`, and an answer without content: 0 by the tokenizer.
    t.head(Some(b"text/event-stream"));
    t.body(b"data: {\"choices\":[{\"text\":\"abc\"}]}\n\ndata: [DONE]\n\n");
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome().unwrap().counted_tokens, Some(3));
    t.head(Some(b"text/event-stream"));
    t.body(b"data: [DONE]\n\n");
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!(
        (o.output_tokens, o.tokens_from),
        (0, Some(TokenSource::Tokenizer))
    );
}

#[test]
fn with_usage_the_tokenizer_checks_one_answer_in_cross_check_every() {
    let mut t = StreamTap::new(StreamSettings {
        kind: None,
        llm: true,
        counter: Some(Counter(&CHARS)),
        whole: false,
        embeddings: None,
    });
    let mut counted = Vec::new();
    for i in 0..(2 * CROSS_CHECK_EVERY + 1) {
        t.head(Some(b"text/event-stream"));
        t.body(b"data: {\"choices\":[{\"text\":\"abcd\"}]}\n\n");
        t.body(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n");
        t.body(b"data: [DONE]\n\n");
        t.end(StreamEnd::Complete, 200);
        let o = t.take_outcome().unwrap();
        assert_eq!(o.output_tokens, 1, "usage wins, counted or not");
        if o.counted_tokens.is_some() {
            assert_eq!(o.counted_tokens, Some(4));
            counted.push(i);
        }
    }
    assert_eq!(counted, [0, CROSS_CHECK_EVERY, 2 * CROSS_CHECK_EVERY]);
}

#[test]
fn a_whole_answer_is_read_at_its_end_by_its_usage_or_its_text() {
    let settings = |counter| StreamSettings {
        kind: None,
        llm: true,
        counter,
        whole: true,
        embeddings: None,
    };
    let answer = br#"{"choices":[{"message":{"role":"assistant","content":"h\u00e9llo"}}],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#;
    let mut t = StreamTap::new(settings(None));
    t.head(Some(b"application/json"));
    assert!(!t.active());
    t.body(&answer[..20]);
    t.body(&answer[20..]);
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!(
        (o.output_tokens, o.input_tokens, o.failure),
        (2, Some(4), None)
    );
    assert_eq!(
        (o.events, o.first_token, o.tokens_from),
        (0, None, Some(TokenSource::Usage))
    );
    // With a tokenizer the text is counted too ("héllo": 5 by the char counter).
    let mut t = StreamTap::new(settings(Some(Counter(&CHARS))));
    t.head(Some(b"application/json"));
    t.body(answer);
    t.end(StreamEnd::Complete, 200);
    assert_eq!(t.take_outcome().unwrap().counted_tokens, Some(5));
    t.head(Some(b"application/json"));
    t.body(br#"{"choices":[{"text":"abc"}]}"#);
    t.end(StreamEnd::Complete, 200);
    let o = t.take_outcome().unwrap();
    assert_eq!(
        (o.output_tokens, o.tokens_from),
        (3, Some(TokenSource::Tokenizer))
    );
    // Failures: not JSON, an error object, cut, 429; none add tokens.
    for (body, end, status, failure) in [
        (
            &b"oops"[..],
            StreamEnd::Complete,
            200,
            Some(LlmFailure::NotJson),
        ),
        (
            br#"{"error":{"message":"x"}}"#,
            StreamEnd::Complete,
            200,
            Some(LlmFailure::ErrorEvent),
        ),
        (&answer[..30], StreamEnd::Cut, 200, Some(LlmFailure::Cut)),
        (
            &b""[..],
            StreamEnd::Complete,
            429,
            Some(LlmFailure::RateLimited),
        ),
        (&b"bad"[..], StreamEnd::Complete, 500, None),
    ] {
        t.head(Some(b"application/json"));
        t.body(body);
        t.end(end, status);
        let o = t.take_outcome().unwrap();
        assert_eq!((o.failure, o.output_tokens), (failure, 0), "{body:?}");
    }
}

#[test]
fn an_embeddings_answer_counts_its_inputs_and_names_what_is_wrong() {
    let mut t = StreamTap::new(StreamSettings {
        kind: None,
        llm: true,
        counter: None,
        whole: true,
        embeddings: Some(2),
    });
    let run = |t: &mut StreamTap, body: &[u8], end, status| {
        t.head(Some(b"application/json"));
        for piece in body.chunks(7) {
            t.body(piece);
        }
        t.end(end, status);
        let o = t.take_outcome().unwrap();
        (o.inputs, o.input_tokens, o.failure)
    };
    let two = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,1]},{"object":"embedding","index":1,"embedding":[0,0.25]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}"#;
    assert_eq!(
        run(&mut t, two, StreamEnd::Complete, 200),
        (2, Some(8), None)
    );
    let one = br#"{"data":[{"embedding":[1]}],"usage":{"prompt_tokens":4}}"#;
    for (body, end, status, failure) in [
        (
            &one[..],
            StreamEnd::Complete,
            200,
            Some(LlmFailure::EmbeddingCount),
        ),
        (b"oops", StreamEnd::Complete, 200, Some(LlmFailure::NotJson)),
        (
            br#"{"object":"list"}"#,
            StreamEnd::Complete,
            200,
            Some(LlmFailure::NotOpenai),
        ),
        (
            br#"{"error":{"message":"x"}}"#,
            StreamEnd::Complete,
            200,
            Some(LlmFailure::ErrorEvent),
        ),
        (&two[..40], StreamEnd::Cut, 200, Some(LlmFailure::Cut)),
        (
            &two[..],
            StreamEnd::Complete,
            429,
            Some(LlmFailure::RateLimited),
        ),
        (&two[..], StreamEnd::Complete, 500, None),
    ] {
        assert_eq!(
            run(&mut t, body, end, status),
            (0, None, failure),
            "{body:?}"
        );
    }
    // A body far past the buffer: counted as it came, usage read from its kept end.
    let vector = format!("[{}0]", "0.123456,".repeat(20_000));
    let big = format!(
        r#"{{"data":[{{"embedding":{vector}}},{{"embedding":{vector}}}],"usage":{{"prompt_tokens":6}}}}"#
    );
    assert!(big.len() > 4 * crate::answer::ANSWER_CAPACITY);
    assert_eq!(
        run(&mut t, big.as_bytes(), StreamEnd::Complete, 200),
        (2, Some(6), None)
    );
}
