//! What the engine's per-request calls allocate in steady state, counted with candor-harness's
//! per-thread counting allocator (Lua's own heap goes through it too): nothing for a fixed
//! request or a response without response(); one small allocation (mlua's shared reference
//! count of the returned string) for a request() that builds nothing.

use candor_harness::CountingAllocator;
use candor_script::{ScriptHost, Target, Verdict};
use std::path::Path;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

#[test]
fn next_request_allocates_nothing_once_warm() {
    assert!(CountingAllocator::is_installed());
    for (script, per_call) in [
        ("tests/scripts/constant.lua", 1),
        ("tests/scripts/static_request.lua", 0),
    ] {
        let mut host = ScriptHost::load(
            Path::new(script),
            vec![],
            Target::url("http://127.0.0.1:8080/"),
        )
        .unwrap();
        let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
        let mut out = Vec::with_capacity(4096);
        for _ in 0..1000 {
            out.clear();
            thread.next_request(&mut out).unwrap();
        }
        let before = CountingAllocator::thread_counts();
        for _ in 0..10_000 {
            out.clear();
            let info = thread.next_request(&mut out).unwrap();
            assert_eq!(info.requests, 1);
        }
        let spent = CountingAllocator::thread_counts().since(before);
        assert_eq!(spent.reallocations, 0, "{script}: {spent:?}");
        assert!(
            spent.allocations <= per_call * 10_000,
            "{script}: {spent:?}"
        );
        assert!(spent.bytes <= per_call * 16 * 10_000, "{script}: {spent:?}");
    }
}

#[test]
fn a_response_without_response_function_allocates_nothing() {
    let mut host = ScriptHost::load(
        Path::new("tests/scripts/format_defaults.lua"),
        vec![],
        Target::url("http://127.0.0.1:8080/"),
    )
    .unwrap();
    let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
    let before = CountingAllocator::thread_counts();
    for _ in 0..1000 {
        let headers: [(&[u8], &[u8]); 1] = [(b"Server", b"x")];
        assert_eq!(
            thread.response(200, headers.into_iter(), b"ok").unwrap(),
            Verdict::Ok
        );
    }
    let spent = CountingAllocator::thread_counts().since(before);
    assert_eq!(spent.allocations, 0, "{spent:?}");
}
