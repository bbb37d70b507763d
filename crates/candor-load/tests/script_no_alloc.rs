//! A script run's request source allocates nothing per request in steady state when the script
//! builds nothing (a string built once, pipelined, named): the engine adds no allocation to what
//! Lua does. Counted with candor-testkit's allocator (Lua's heap goes through it too).

use candor_load::workload::script_source::{ScriptRun, ScriptSource, MAX_AHEAD};
use candor_load::workload::source::RequestSource;
use candor_script::{ScriptHost, ScriptTarget};
use candor_testkit::{this_thread_allocations, CountingAllocator};
use std::path::Path;
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const ENTRIES: u64 = 20_000;

// Everything under test runs on the test's thread, so only its allocations are counted: another
// test's thread (its teardown, the harness reporting it) counts in the process-wide count of
// marked threads, and under CPU load it did inside this test's window.

#[test]
fn a_script_source_allocates_nothing_per_entry_once_warm() {
    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let path = Path::new("tests/scripts/named_pipeline.lua");
    let mut host = ScriptHost::load(path, vec![], target).unwrap();
    let run = Arc::new(ScriptRun::new(host.setup_threads(1).unwrap(), true));
    let slots = 4;
    let mut source = ScriptSource::take(&run, slots).unwrap();
    for seq in 0..1000 {
        assert!(source.next(seq as usize % slots, seq, None).sendable);
    }
    let before = this_thread_allocations();
    let mut bytes = 0;
    for seq in 0..ENTRIES {
        let slot = seq as usize % slots;
        let next = source.next(slot, seq, None);
        assert!(next.sendable);
        // One row for the name the script gave (row 0 is the unnamed requests').
        assert_eq!(next.request, 1);
        let (made, head) = source.made(slot).unwrap();
        assert!(!head);
        bytes += made.len();
    }
    let spent = this_thread_allocations() - before;
    assert_eq!(spent, 0, "{spent} allocations over {ENTRIES} entries");
    // Each entry sent one of the two pipelined requests: two calls' worth per two entries.
    assert!(bytes > 0);
    assert_eq!(
        run.names(),
        vec!["(unnamed)".to_string(), "pair".to_string()]
    );
    assert_eq!(run.lua_time().request_calls, (1000 + ENTRIES) / 2);
}

/// The same when each `request()` is made ahead of its entry (`RequestSource::prepare`, the
/// driver's idle step): the call's buffers are swapped in, not copied into new ones.
#[test]
fn requests_made_ahead_allocate_nothing_once_warm() {
    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let path = Path::new("tests/scripts/named_pipeline.lua");
    let mut host = ScriptHost::load(path, vec![], target).unwrap();
    let run = Arc::new(ScriptRun::new(host.setup_threads(1).unwrap(), true));
    let slots = 4;
    let mut source = ScriptSource::take(&run, slots).unwrap();
    // The first call is made at its entry (its time is not known before); none ahead yet.
    assert!(!source.prepare(u64::MAX / 2, &mut |_| true));
    // Calls made ahead, counted around each offer (one offer makes a whole batch).
    let mut ahead = 0;
    let mut entry = |source: &mut ScriptSource, seq: u64| {
        let calls = run.lua_time().request_calls;
        if source.prepare(u64::MAX / 2, &mut |_| true) {
            ahead += run.lua_time().request_calls - calls;
        }
        let next = source.next(seq as usize % slots, seq, None);
        assert!(next.sendable);
        assert_eq!(next.request, 1);
    };
    for seq in 0..1000 {
        entry(&mut source, seq);
    }
    let before = this_thread_allocations();
    for seq in 1000..1000 + ENTRIES {
        entry(&mut source, seq);
    }
    let spent = this_thread_allocations() - before;
    assert_eq!(spent, 0, "{spent} allocations over {ENTRIES} entries");
    // Every call after the first was made ahead, one per two entries (two requests a call),
    // and a batch of at most MAX_AHEAD calls is left untaken at the end.
    let calls = run.lua_time().request_calls;
    assert_eq!(ahead + 1, calls);
    let taken = (1000 + ENTRIES) / 2;
    assert!(
        (taken..=taken + MAX_AHEAD as u64).contains(&calls),
        "{calls} calls"
    );
}
