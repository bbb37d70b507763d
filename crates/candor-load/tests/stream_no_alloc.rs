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
                    sse.feed(piece, |data, _| progress.event(at, data, |_| gaps += 1));
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
