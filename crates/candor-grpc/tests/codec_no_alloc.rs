//! What the HTTP/2 protocol will call per request allocates nothing in steady state: sending a
//! static message, counting a response's messages, reading and counting its status, encoding
//! `grpc-timeout`.

use candor_grpc::length_prefix::MessageCounter;
use candor_grpc::{Code, CodeSet, GrpcCodeCounts, GrpcTimeout, StaticMessage};

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

#[test]
fn the_per_request_paths_allocate_nothing() {
    let pool = candor_grpc::bench_descriptor_pool();
    let descriptor = pool
        .get_message_by_name("candor.bench.EchoRequest")
        .unwrap();
    let message = StaticMessage::from_json(descriptor, br#"{"name":"steady","seq":1}"#).unwrap();
    let mut response = Vec::new();
    for i in 0..7u8 {
        response.extend_from_slice(&candor_grpc::length_prefix::prefix(
            false,
            u32::from(i) * 40,
        ));
        response.extend(std::iter::repeat_n(i, usize::from(i) * 40));
    }
    let accepted: CodeSet = "OK,NOT_FOUND".parse().unwrap();
    let mut decoder = MessageCounter::default();
    let mut out = Vec::with_capacity(4096);
    let mut sink = 0u64;
    let mut counts = GrpcCodeCounts::default();

    let mut one_round = |round: u64| {
        out.clear();
        out.extend_from_slice(message.framed());
        decoder.reset();
        for chunk in response.chunks(1 + (round as usize % 97)) {
            sink += u64::from(decoder.feed(chunk).unwrap().completed);
        }
        sink += decoder.finish().unwrap();
        let status = Code::from_header_value(if round % 2 == 0 { b"0" } else { b"5" }).unwrap();
        sink += u64::from(accepted.contains(status));
        counts.record(status);
        sink += GrpcTimeout::from_ns(round * 1_000_003).as_bytes().len() as u64;
    };
    for round in 0..100 {
        one_round(round);
    }
    // The test's own thread: the harness's other threads allocate at any time.
    let before = candor_testkit::this_thread_allocations();
    for round in 100..10_100 {
        one_round(round);
    }
    let after = candor_testkit::this_thread_allocations();
    assert_eq!(
        after - before,
        0,
        "allocations in 10,000 steady-state rounds"
    );
    assert_eq!(sink, 10_100 * 7 * 2 + 10_100 + timeout_lengths());
    assert_eq!(counts.total(), 10_100);
}

fn timeout_lengths() -> u64 {
    (0..10_100u64)
        .map(|round| GrpcTimeout::from_ns(round * 1_000_003).as_bytes().len() as u64)
        .sum()
}
