//! Proves that finding the events of streamed responses and reading an LLM stream's events
//! allocate nothing per event: the scanners' buffers are sized when they are made, and the
//! measured stretch runs on a thread marked for the counting allocator.

use candor_load::stream::line::LineSplitter;
use candor_load::stream::llm::{LlmProgress, StreamEnd};
use candor_load::stream::sse::SseScanner;

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

#[test]
fn scanning_events_and_tracking_llm_streams_allocate_nothing() {
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
