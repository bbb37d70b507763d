//! The per-request cost of gRPC request messages: a static message (encoded once, copied per
//! request) against templated JSON encoded per request, in ns and allocations per request.
//!
//! `cargo bench -p candor-grpc --bench encode` (pin it for steadier figures:
//! `taskset -c 1 cargo bench ...`); docs/grpc.md records the figures.

use std::hint::black_box;
use std::io::Write as _;
use std::time::Instant;

use candor_grpc::{StaticMessage, TemplatedMessage};

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

const ROUNDS: u64 = 5;
const PER_ROUND: u64 = 200_000;

/// Best (lowest) ns per request over the rounds, and allocations per request.
fn measure(mut one: impl FnMut(u64)) -> (f64, f64) {
    for seq in 0..10_000 {
        one(seq);
    }
    let mut best = f64::MAX;
    let allocations_before = candor_testkit::total_allocations();
    for round in 0..ROUNDS {
        let started = Instant::now();
        for seq in round * PER_ROUND..(round + 1) * PER_ROUND {
            one(seq);
        }
        best = best.min(started.elapsed().as_nanos() as f64 / PER_ROUND as f64);
    }
    let allocations = candor_testkit::total_allocations() - allocations_before;
    (best, allocations as f64 / (ROUNDS * PER_ROUND) as f64)
}

fn main() {
    let pool = candor_grpc::bench_descriptor_pool();
    let descriptor = pool
        .get_message_by_name("candor.bench.EchoRequest")
        .unwrap();
    let mut out = Vec::with_capacity(4096);

    let static_message =
        StaticMessage::from_json(descriptor.clone(), br#"{"name":"user-1","seq":1}"#).unwrap();
    let (ns, allocs) = measure(|_| {
        out.clear();
        out.extend_from_slice(static_message.framed());
        black_box(&out);
    });
    println!(
        "static message (copied):           {ns:8.1} ns/request, {allocs:.1} allocations/request"
    );

    let mut small = TemplatedMessage::new(descriptor.clone());
    let (ns, allocs) = measure(|seq| {
        out.clear();
        small
            .encode(
                |json| write!(json, r#"{{"name":"user-{seq}","seq":{seq}}}"#),
                &mut out,
            )
            .unwrap();
        black_box(&out);
    });
    println!(
        "templated, 2 fields (~40 B JSON):  {ns:8.1} ns/request, {allocs:.1} allocations/request"
    );

    let mut large = TemplatedMessage::new(descriptor);
    let (ns, allocs) = measure(|seq| {
        out.clear();
        large
            .encode(
                |json| {
                    write!(
                        json,
                        r#"{{"name":"user-{seq}","seq":{seq},"kind":"KIND_FAST","payload":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==","tags":["a","b","c","d","e","f","g","h"],"inner":{{"n":{seq}}}}}"#
                    )
                },
                &mut out,
            )
            .unwrap();
        black_box(&out);
    });
    println!(
        "templated, 6 fields (~230 B JSON): {ns:8.1} ns/request, {allocs:.1} allocations/request"
    );
}
