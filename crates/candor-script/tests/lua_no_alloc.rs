//! The engine's per-request calls allocate nothing in steady state, counted with
//! candor-testkit's allocator (Lua's own heap goes through it too): a fixed request, a
//! request() returning a prebuilt string (pipelined or not, labelled with wrk.name or not), a
//! request() that builds new strings and a table every call (the state's allocator reuses
//! their blocks: at most one allocation per 1,000 calls, see below), and a response without
//! response(). One test: the counter is process-wide.

use candor_script::{ResponseVerdict, ScriptHost, ScriptTarget};
use candor_testkit::{mark_this_thread, marked_allocations, CountingAllocator};
use std::path::Path;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const CALLS: u64 = 10_000;

#[test]
fn per_request_calls_allocate_at_most_their_stated_count_once_warm() {
    mark_this_thread();
    // The script that builds strings every call may allocate now and then: LuaJIT rebuilds its
    // string table when a hash chain grows long, and chain lengths depend on the state's random
    // hash seed (0 in most runs, 1-4 in about one run in eight, over 10,000 calls).
    for (script, requests, allowed) in [
        ("tests/scripts/constant.lua", 1, 0),
        ("tests/scripts/pipeline.lua", 3, 0),
        ("tests/scripts/static_request.lua", 1, 0),
        ("tests/scripts/dynamic.lua", 1, CALLS / 1000),
    ] {
        let target = ScriptTarget::url("http://127.0.0.1:8080/");
        let mut host = ScriptHost::load(Path::new(script), vec![], target).unwrap();
        let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
        let mut out = Vec::with_capacity(4096);
        for _ in 0..1000 {
            out.clear();
            thread.next_request(&mut out).unwrap();
        }
        let before = marked_allocations();
        for _ in 0..CALLS {
            out.clear();
            let info = thread.next_request(&mut out).unwrap();
            assert_eq!(info.requests, requests);
            assert_eq!(info.name.is_some(), script.ends_with("constant.lua"));
        }
        let spent = marked_allocations() - before;
        assert!(spent <= allowed, "{script}: {spent} allocations");
    }

    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let path = Path::new("tests/scripts/format_defaults.lua");
    let mut host = ScriptHost::load(path, vec![], target).unwrap();
    let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
    let before = marked_allocations();
    for _ in 0..CALLS {
        let headers: [(&[u8], &[u8]); 1] = [(b"Server", b"x")];
        let verdict = thread.response(200, headers.into_iter(), b"ok").unwrap();
        assert_eq!(verdict, ResponseVerdict::Ok);
    }
    assert_eq!(marked_allocations() - before, 0, "response() not defined");
}
