//! Proves that finding the events of streamed responses, reading an LLM stream's events and
//! writing and decoding WebSocket frames allocate nothing per event or message: every buffer is
//! sized when it is made, and the measured stretch runs on a thread marked for the counting
//! allocator.

use candor_load::protocol::ws::frames::{
    client_frame_len, write_client_frame, FrameDecoder, Opcode, WsEvent,
};
use candor_load::protocol::ws::matching::WsMatch;
use candor_load::stream::line::LineSplitter;
use candor_load::stream::openai::{LlmProgress, StreamEnd};
use candor_load::stream::sse::SseScanner;
use candor_load::stream::tap::StreamSettings;

/// The marked-allocation count is one for the whole process: the tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

#[test]
fn scanning_events_and_tracking_llm_streams_allocate_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        // A response of many chunks, fed in reads that cut events and lines anywhere.
        let mut body = Vec::new();
        for k in 0..200 {
            body.extend_from_slice(
                format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"w{k} \"}}}}]}}\r\n\r\n")
                    .as_bytes(),
            );
        }
        body.extend_from_slice(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":200}}\n\n");
        body.extend_from_slice(b"data: [DONE]\n\n");
        let mut sse = SseScanner::with_capacity(4096);
        let mut lines = LineSplitter::with_capacity(4096);
        let mut progress = LlmProgress::default();
        let mut gaps = 0u64;
        let mut line_count = 0u64;
        let mut run =
            |sse: &mut SseScanner, lines: &mut LineSplitter, progress: &mut LlmProgress| {
                let mut at = 0u64;
                for piece in body.chunks(37) {
                    at += 1_000;
                    sse.feed(piece, |data, cut| {
                        progress.event(at, data, cut, |_| gaps += 1);
                    });
                    lines.feed(piece, |_, _| line_count += 1);
                }
                let outcome = progress.finish(StreamEnd::Complete);
                assert_eq!(outcome.output_tokens, 200);
                assert_eq!(outcome.failure, None);
            };
        // Warm: the first pass may touch lazily set-up state (none expected, but not measured).
        run(&mut sse, &mut lines, &mut progress);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        for _ in 0..50 {
            run(&mut sse, &mut lines, &mut progress);
        }
        let after = candor_testkit::marked_allocations();
        assert_eq!(after - before, 0, "allocations while scanning streams");
        assert!(gaps > 0 && line_count > 0);
    })
    .join()
    .unwrap();
}

#[test]
fn websocket_frames_and_numbered_messages_allocate_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        let WsMatch::JsonField(id) = "json:id".parse::<WsMatch>().unwrap() else {
            unreachable!()
        };
        let body = br#"{"op":"echo","text":"a message of a few dozen bytes"}"#;
        let mut message = Vec::with_capacity(body.len() + 32);
        let mut wire = Vec::with_capacity(client_frame_len(body.len() + 32));
        // The server's side: an echo of each message, as one unmasked text frame.
        let mut reply = Vec::with_capacity(body.len() + 64);
        let mut decoder = FrameDecoder::new(256, 1 << 20);
        let mut matched = 0u64;
        let mut run = |from: u64| {
            for seq in from..from + 1000 {
                message.clear();
                id.write_with_number(&mut message, body, seq);
                wire.clear();
                write_client_frame(
                    &mut wire,
                    Opcode::Text,
                    &message,
                    (seq as u32).to_be_bytes(),
                );
                reply.clear();
                reply.push(0x81);
                reply.push(message.len() as u8);
                reply.extend_from_slice(&message);
                for piece in reply.chunks(13) {
                    decoder
                        .feed(piece, |e| {
                            if let WsEvent::Message { prefix, .. } = e {
                                if id.number_in(prefix) == Some(seq) {
                                    matched += 1;
                                }
                            }
                        })
                        .unwrap();
                }
            }
        };
        run(0);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        run(1000);
        let after = candor_testkit::marked_allocations();
        assert_eq!(after - before, 0, "allocations while framing messages");
        assert_eq!(matched, 2000);
    })
    .join()
    .unwrap();
}

#[test]
fn an_llm_response_read_through_the_http1_parser_and_its_stream_tap_allocates_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        use candor_load::protocol::http1::{Progress, ResponseParser};
        // The answer of `candor serve --llm`: SSE in HTTP/1.1 chunks, one event per chunk.
        let mut wire =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        let mut events: Vec<Vec<u8>> = (0..100)
            .map(|k| {
                format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"w{k} \"}}}}]}}\n\n")
                    .into_bytes()
            })
            .collect();
        events.push(b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":100}}\n\n".to_vec());
        events.push(b"data: [DONE]\n\n".to_vec());
        for e in &events {
            wire.extend_from_slice(format!("{:x}\r\n", e.len()).as_bytes());
            wire.extend_from_slice(e);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        let mut parser = ResponseParser::new(false);
        parser.observer().set_stream(StreamSettings {
            kind: None,
            llm: true,
            counter: None,
            whole: false,
            embeddings: None,
        });
        let mut buf = vec![0u8; 64 * 1024];
        let (mut gaps, mut tokens) = (0u64, 0u64);
        let mut run = |parser: &mut ResponseParser| {
            // Reads of 53 bytes, each at its own instant, as the driver feeds them.
            let mut len = 0;
            let mut at = 1_000u64;
            for piece in wire.chunks(53) {
                buf[len..len + piece.len()].copy_from_slice(piece);
                len += piece.len();
                at += 1_000;
                parser.observer().at(at);
                let progress = parser.feed(&buf[..len], false).unwrap();
                if let Some(tap) = parser.observer().tap() {
                    tap.drain_gaps(|_| gaps += 1);
                }
                match progress {
                    Progress::NeedMore { consumed } => {
                        buf.copy_within(consumed..len, 0);
                        len -= consumed;
                    }
                    Progress::Done { .. } => {
                        let o = parser.observer().tap().unwrap().take_outcome().unwrap();
                        assert_eq!((o.output_tokens, o.failure), (100, None));
                        tokens += o.output_tokens;
                        len = 0;
                    }
                }
            }
        };
        run(&mut parser);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        for _ in 0..50 {
            run(&mut parser);
        }
        let after = candor_testkit::marked_allocations();
        assert_eq!(after - before, 0, "allocations while reading LLM streams");
        assert_eq!(tokens, 51 * 100);
        assert!(gaps >= 51 * 99);
    })
    .join()
    .unwrap();
}

#[test]
fn an_embeddings_answer_read_through_the_http1_parser_allocates_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        use candor_load::protocol::http1::{Progress, ResponseParser};
        // 8 vectors of 2,000 values (about 120 KB, past the 64 KiB kept of a whole answer):
        // counted as they pass, the answer's end (its usage) kept.
        let vector = format!("[{}0.5]", "0.123456,".repeat(1_999));
        let items: Vec<String> = (0..8)
            .map(|i| format!("{{\"object\":\"embedding\",\"index\":{i},\"embedding\":{vector}}}"))
            .collect();
        let body = format!(
            "{{\"object\":\"list\",\"data\":[{}],\"usage\":{{\"prompt_tokens\":96,\"total_tokens\":96}}}}",
            items.join(",")
        );
        let mut wire = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        wire.extend_from_slice(body.as_bytes());
        let mut parser = ResponseParser::new(false);
        parser.observer().set_stream(StreamSettings {
            kind: None,
            llm: true,
            counter: None,
            whole: true,
            embeddings: Some(8),
        });
        let mut buf = vec![0u8; 64 * 1024];
        let mut inputs = 0u64;
        let mut run = |parser: &mut ResponseParser| {
            let mut len = 0;
            let mut at = 1_000u64;
            for piece in wire.chunks(4096) {
                buf[len..len + piece.len()].copy_from_slice(piece);
                len += piece.len();
                at += 1_000;
                parser.observer().at(at);
                match parser.feed(&buf[..len], false).unwrap() {
                    Progress::NeedMore { consumed } => {
                        buf.copy_within(consumed..len, 0);
                        len -= consumed;
                    }
                    Progress::Done { .. } => {
                        let o = parser.observer().tap().unwrap().take_outcome().unwrap();
                        assert_eq!((o.inputs, o.input_tokens, o.failure), (8, Some(96), None));
                        inputs += o.inputs;
                        len = 0;
                    }
                }
            }
        };
        run(&mut parser);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        for _ in 0..20 {
            run(&mut parser);
        }
        let after = candor_testkit::marked_allocations();
        assert_eq!(after - before, 0, "allocations while reading embeddings answers");
        assert_eq!(inputs, 21 * 8);
    })
    .join()
    .unwrap();
}
