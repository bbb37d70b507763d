//! Responses on simulated time: header and body checks, LLM streams read from DATA frames, and
//! gRPC calls ended by their trailers.

use super::*;

/// `:status 200` and `x-ok: yes` (literals without indexing), then `:status 200` alone.
const STATUS_200_X_OK: &[u8] = &[
    0x88, 0x00, 0x04, b'x', b'-', b'o', b'k', 0x03, b'y', b'e', b's',
];

#[test]
fn the_observer_is_handed_the_headers_of_a_stream_with_header_checks() {
    let mut shape = streams(2, 2);
    shape.checks = header_and_body_checks();
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200_X_OK, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"needle", true), START + 2 * MS));
    // Stream 3 lacks the header: a header failure, its body kept for the report.
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, b"needle too", true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    let kept = p.failures.sorted();
    assert_eq!(kept[0].check, FailedCheck::Header);
    assert_eq!(kept[0].body(), Some(&b"needle too"[..]));
}

#[test]
fn the_observer_searches_a_body_across_data_frames() {
    let mut shape = streams(2, 2);
    shape.checks = header_and_body_checks();
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200_X_OK, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"a nee", false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"dle b", true), START + 2 * MS));
    assert!(r.feed(0, &headers(3, STATUS_200_X_OK, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, b"no needl e", true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    assert_eq!(p.failures.sorted()[0].check, FailedCheck::Body);
}

/// An OpenAI-compatible chunk carrying `text`, as one SSE event.
fn token(text: &str) -> Vec<u8> {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n").into_bytes()
}

fn llm(n: usize, count: u64) -> Shape {
    let mut s = streams(n, count);
    s.stream = candor_stream::tap::StreamSettings {
        kind: None,
        llm: true,
        counter: None,
        whole: false,
        embeddings: None,
    };
    s
}

#[test]
fn llm_streams_over_http2_are_read_from_their_data_frames_each_on_its_own() {
    // Two streams on one connection, their DATA frames interleaved: stream 1 (intended at 0)
    // gets tokens at 2 and 5 ms, stream 3 (intended at 1 ms) at 3 and 4 ms; each ends with
    // [DONE]. TTFT 2 ms each, ITL 3 and 1 ms, two tokens each (counted chunks).
    let mut r = h2(llm(2, 2));
    r.open_all(100).at(START).at(START + MS);
    assert_eq!((r.stream_of(0), r.stream_of(1)), (1, 3));
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(0, &data(3, &token("b"), false), START + 3 * MS));
    assert!(r.feed(0, &data(3, &token("c"), false), START + 4 * MS));
    assert!(r.feed(0, &data(1, &token("d"), false), START + 5 * MS));
    assert!(r.feed(0, &data(3, b"data: [DONE]\n\n", true), START + 6 * MS));
    assert!(r.feed(0, &data(1, b"data: [DONE]\n\n", true), START + 7 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (2, 0));
    let s = p.stream.as_ref().unwrap();
    assert_eq!(s.ttft.count_at(2 * MS), 2);
    assert_eq!((s.itl.count_at(3 * MS), s.itl.count_at(MS)), (1, 1));
    assert_eq!((s.output_tokens, s.tokens_from_chunks, s.events), (4, 2, 6));
    assert_eq!(s.failures.iter().sum::<u64>(), 0);
}

#[test]
fn an_http2_stream_past_its_event_timeout_is_reset_and_fails_alone() {
    // Stream 1 has one token at 2 ms, then nothing; stream 3 keeps its tokens coming. With an
    // 8 ms bound the first scan (10 ms) finds stream 1 waiting 8 ms: the bound is reached, so
    // it is reset with CANCEL then, its event counted, and the connection carries stream 3
    // (last event at 9 ms) to its end.
    let mut shape = llm(2, 2);
    shape.event_timeout_ns = 8 * MS;
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, &token("b"), false), START + 3 * MS));
    r.at(START + 9 * MS);
    assert!(r.feed(0, &data(3, &token("c"), false), START + 9 * MS));
    r.at(START + 10 * MS);
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!(
        (rst.2, rst.3.as_slice()),
        (1, &frame::CANCEL.to_be_bytes()[..])
    );
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    assert!(r.feed(0, &data(3, b"data: [DONE]\n\n", true), START + 12 * MS));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 1));
    assert_eq!(p.counts.errors.stream, 1);
    let s = p.stream.as_ref().unwrap();
    let timeouts = s.failures[candor_stream::openai::LlmFailure::EventTimeout.index()];
    assert_eq!(timeouts, 1);
    // Stream 1's one event and stream 3's three.
    assert_eq!((s.events, s.responses), (4, 2));
    assert!(faults(&p).is_empty());
}

#[test]
fn a_stream_reset_by_the_server_after_its_events_fails_as_cut_with_them_counted() {
    let mut r = h2(llm(1, 1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(
        0,
        &frame(frame::RST_STREAM, 0, 1, &frame::CANCEL.to_be_bytes()),
        START + 3 * MS
    ));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.stream, p.counts.errors.read), (1, 0));
    let s = p.stream.as_ref().unwrap();
    let cut = s.failures[candor_stream::openai::LlmFailure::Cut.index()];
    assert_eq!((cut, s.events), (1, 1));
}

#[test]
fn a_server_close_after_events_fails_that_stream_as_cut_and_the_silent_one_as_read() {
    let mut r = h2(llm(2, 2));
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    r.d.end_of_stream(0, START + 3 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.stream, p.counts.errors.read), (1, 1));
    let s = p.stream.as_ref().unwrap();
    let cut = s.failures[candor_stream::openai::LlmFailure::Cut.index()];
    assert_eq!((cut, s.events), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Closed));
}

/// A header block of literal fields (HPACK "without indexing", new name).
fn literals(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, value) in fields {
        b.push(0x00);
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b.push(value.len() as u8);
        b.extend_from_slice(value.as_bytes());
    }
    b
}

/// A gRPC response's head: `:status: 200`, `content-type: application/grpc`.
fn grpc_head() -> Vec<u8> {
    let mut head = STATUS_200.to_vec();
    head.extend(literals(&[("content-type", "application/grpc")]));
    head
}

/// A gRPC run of `count` unary calls on `n` streams of one connection, `accept`ing these codes.
fn grpc(n: usize, count: u64, accept: &str) -> Rig {
    let mut shape = streams(n, count);
    shape.headers = vec!["content-type: application/grpc".into()];
    // An empty message: no compression flag, length 0.
    shape.body = vec![0; 5];
    let calls = crate::http2::calls::GrpcConfig {
        call: "candor.bench.Bench/Echo".into(),
        accept: accept.parse().unwrap(),
        calls: vec![crate::http2::calls::GrpcCall {
            kind: candor_grpc::CallKind::Unary,
            templated: None,
        }],
    };
    super::h2_calling(shape, Some(calls))
}

#[test]
fn a_grpc_call_ends_at_its_trailers_or_a_trailers_only_answer_judged_by_grpc_status() {
    use candor_grpc::Code;
    let mut r = grpc(3, 3, "OK,NOT_FOUND");
    r.open_all(100).at(START).at(START + MS).at(START + 2 * MS);
    assert_eq!((r.stream_of(0), r.stream_of(1), r.stream_of(2)), (1, 3, 5));
    // A whole answer: HEADERS, one message, the trailers with grpc-status 0 end it.
    assert!(r.feed(0, &headers(1, &grpc_head(), false), START + 3 * MS));
    assert!(r.feed(0, &data(1, &[0, 0, 0, 0, 2, 8, 1], false), START + 4 * MS));
    assert_eq!(r.stream_of(0), 1, "a message is not the end of the call");
    let ok = literals(&[("grpc-status", "0")]);
    assert!(r.feed(0, &headers(1, &ok, true), START + 6 * MS));
    // Trailers-only answers: NOT_FOUND is accepted, UNAVAILABLE is not.
    let mut not_found = STATUS_200.to_vec();
    not_found.extend(literals(&[("grpc-status", "5"), ("grpc-message", "no")]));
    assert!(r.feed(0, &headers(3, &not_found, true), START + 7 * MS));
    let mut unavailable = STATUS_200.to_vec();
    unavailable.extend(literals(&[("grpc-status", "14")]));
    assert!(r.feed(0, &headers(5, &unavailable, true), START + 9 * MS));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (2, 1));
    assert_eq!(p.counts.errors.grpc, 1);
    assert_eq!(p.reply_codes.get(Code::Ok.as_u32()), 1);
    assert_eq!(p.reply_codes.get(Code::NotFound.as_u32()), 1);
    assert_eq!(p.reply_codes.get(Code::Unavailable.as_u32()), 1);
    // Each is timed to the end of its call, the failed one included (the server answered).
    // OK at 6 ms of its intended time, NOT_FOUND at 7 - 1 = 6 ms, UNAVAILABLE at 9 - 2 = 7 ms.
    assert_eq!(p.rec.response.count_at(6 * MS), 2);
    assert_eq!(p.rec.response.count_at(7 * MS), 1);
    assert_eq!(p.rec.response.len(), 3);
    assert_eq!(r.d.conns[0].state, ConnState::Open);
}

#[test]
fn a_grpc_answer_without_grpc_status_is_a_parse_failure_and_a_reset_call_a_read_failure() {
    let mut r = grpc(2, 2, "OK");
    r.open_all(100).at(START).at(START + MS);
    // HTTP 200 and the stream ended, but no grpc-status: the call broke the protocol.
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, &[0, 0, 0, 0, 0], true), START + 3 * MS));
    // The server resets the other call: it fails as read, the connection carries on.
    // INTERNAL_ERROR.
    let code = 0x2u32.to_be_bytes();
    assert!(r.feed(0, &frame(frame::RST_STREAM, 0, 3, &code), START + 4 * MS));
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.failed, 2);
    assert_eq!((p.counts.errors.parse, p.counts.errors.read), (1, 1));
    assert_eq!(p.reply_codes.get(candor_grpc::Code::Ok.as_u32()), 0);
}

#[test]
fn an_http2_stream_that_runs_into_the_timeout_keeps_its_first_token_and_events() {
    // One stream, its head at 1 ms and one token at 2 ms, then nothing; -T 15 ms: the scan at
    // 20 ms fails it in class `timeout` and resets it; its token is measured (TTFT 2 ms, one
    // event in one response) and its stream named `timeout`.
    let mut shape = llm(1, 1);
    shape.timeout_ns = 15 * MS;
    let mut r = h2(shape);
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    r.at(START + 10 * MS);
    r.at(START + 20 * MS);
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.timeout), (1, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.ttft.count_at(2 * MS)), (1, 1));
    assert_eq!((s.events, s.responses), (1, 1));
    assert_eq!(
        s.failures[candor_stream::openai::LlmFailure::Timeout.index()],
        1
    );
}

#[test]
fn an_http2_stream_the_run_ends_keeps_its_first_token_and_stays_unfinished() {
    let mut r = h2(llm(1, 1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    let p = r.finish(START + 5 * MS);
    assert_eq!((p.counts.failed, p.counts.in_flight_at_end), (0, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.events, s.responses), (1, 1, 1));
    assert_eq!(s.failures.iter().sum::<u64>(), 0);
}

/// Replies on streams 1, 3, 5, ... of a gRPC run that each end with `grpc-status: 0` but lie:
/// each is INTERNAL (class `grpc`) with why in its failure example, as grpc-go's client judges
/// them; an honest one beside them is OK.
#[test]
fn grpc_replies_whose_framing_or_type_lie_are_internal_with_the_reason_kept() {
    use candor_grpc::Code;
    let lies: Vec<(Vec<u8>, Vec<u8>, &str)> = vec![
        // A prefix that claims 16 bytes, 4 delivered.
        (
            grpc_head(),
            vec![0, 0, 0, 0, 16, 1, 2, 3, 4],
            "INTERNAL: gRPC response ended inside a message (12 bytes missing)",
        ),
        // A prefix that claims 4 GiB, 4 delivered.
        (
            grpc_head(),
            vec![0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4],
            "INTERNAL: gRPC message of 4294967295 bytes exceeds the limit of 4194304 bytes",
        ),
        // Compressed, with no grpc-encoding to say how.
        (
            grpc_head(),
            vec![1, 0, 0, 0, 2, 8, 1],
            "INTERNAL: a message flagged compressed without a grpc-encoding",
        ),
        // Not gRPC at all.
        (
            STATUS_200.to_vec(),
            vec![0, 0, 0, 0, 2, 8, 1],
            "INTERNAL: the response's content-type is not application/grpc",
        ),
    ];
    let n = lies.len() + 2;
    let mut r = grpc(n, n as u64, "OK");
    r.open_all(100);
    for k in 0..n as u64 {
        r.at(START + k * MS);
    }
    let ok = literals(&[("grpc-status", "0")]);
    let at = START + 10 * MS;
    for (k, (head, body, _)) in lies.iter().enumerate() {
        let id = 1 + 2 * k as u32;
        assert!(r.feed(0, &headers(id, head, false), at));
        assert!(r.feed(0, &data(id, body, false), at));
        assert!(r.feed(0, &headers(id, &ok, true), at));
    }
    // Honest: one message, compressed with the encoding named.
    let id = 1 + 2 * lies.len() as u32;
    let mut gzip = grpc_head();
    gzip.extend(literals(&[("grpc-encoding", "gzip")]));
    assert!(r.feed(0, &headers(id, &gzip, false), at));
    assert!(r.feed(0, &data(id, &[1, 0, 0, 0, 2, 8, 1], false), at));
    assert!(r.feed(0, &headers(id, &ok, true), at));
    // A failing status keeps the server's grpc-message, percent-decoded.
    let mut denied = grpc_head();
    denied.extend(literals(&[
        ("grpc-status", "7"),
        ("grpc-message", "no%20entry"),
    ]));
    assert!(r.feed(0, &headers(id + 2, &denied, true), at));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 5));
    assert_eq!(p.counts.errors.grpc, 5);
    assert_eq!(p.reply_codes.get(Code::Internal.as_u32()), 4);
    assert_eq!(p.reply_codes.get(Code::Ok.as_u32()), 1);
    assert_eq!(p.reply_codes.get(Code::PermissionDenied.as_u32()), 1);
    let said: Vec<String> = p
        .failures
        .sorted()
        .iter()
        .map(|f| String::from_utf8_lossy(f.body().unwrap()).into_owned())
        .collect();
    let mut want: Vec<String> = lies.iter().map(|l| l.2.to_string()).collect();
    want.push("PERMISSION_DENIED: no entry".into());
    assert_eq!(said, want);
}
