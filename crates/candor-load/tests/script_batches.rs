//! A script's `request()` calls made ahead of their sends come in batches (RequestSource::prepare):
//! up to MAX_AHEAD back to back in one offer once the calls made ahead have all been taken, none
//! while some are waiting, and the requests still go out in the order the calls made them; and a
//! `delay()` longer than the run holds a slot only for the run's length.

use candor_load::workload::script_source::{ScriptRun, ScriptSource, MAX_AHEAD};
use candor_load::workload::source::RequestSource;
use candor_script::{ScriptHost, ScriptTarget};
use std::path::Path;
use std::sync::Arc;

/// Time enough before the next send for any call to be made ahead (`due` then decides).
const FAR: u64 = u64::MAX / 2;

fn source() -> (Arc<ScriptRun>, ScriptSource) {
    source_of("tests/scripts/counted.lua")
}

fn source_of(script: &str) -> (Arc<ScriptRun>, ScriptSource) {
    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let mut host = ScriptHost::load(Path::new(script), vec![], target).unwrap();
    let run = Arc::new(ScriptRun::new(host.setup_threads(1).unwrap(), false));
    let source = ScriptSource::take(&run, 1).unwrap();
    (run, source)
}

/// The path of the request `source` sends next.
fn send(source: &mut ScriptSource, seq: u64) -> String {
    assert!(source.next(0, seq, None).sendable);
    let (bytes, _) = source.made(0).unwrap();
    let line = std::str::from_utf8(bytes).unwrap().lines().next().unwrap();
    line.split(' ').nth(1).unwrap().to_string()
}

#[test]
fn calls_made_ahead_come_in_batches_and_keep_their_order() {
    let (run, mut source) = source();
    // The first call is made at its send: its time is not known before.
    assert!(!source.prepare(FAR, &mut |_| true));
    assert_eq!(send(&mut source, 0), "/1");
    // Then a batch, in one offer: as many calls as there are places, and no more.
    assert!(source.prepare(FAR, &mut |_| true));
    assert_eq!(run.lua_time().request_calls, 1 + MAX_AHEAD as u64);
    assert!(!source.prepare(FAR, &mut |_| true));
    assert_eq!(run.lua_time().request_calls, 1 + MAX_AHEAD as u64);
    // While some of the batch waits, no call is made: the next batch starts once all are out.
    let mut seq = 1;
    for _ in 0..MAX_AHEAD - 1 {
        seq += 1;
        assert_eq!(send(&mut source, seq), format!("/{seq}"));
        assert!(!source.prepare(FAR, &mut |_| true));
    }
    seq += 1;
    assert_eq!(send(&mut source, seq), format!("/{seq}"));
    assert!(source.prepare(FAR, &mut |_| true));
    seq += 1;
    assert_eq!(send(&mut source, seq), format!("/{seq}"));
}

#[test]
fn no_call_is_made_ahead_when_the_send_is_near() {
    let (run, mut source) = source();
    assert_eq!(send(&mut source, 0), "/1");
    // Under twice a call's time plus the margin (5 µs) before the send: none.
    assert!(!source.prepare(4_000, &mut |_| true));
    assert_eq!(run.lua_time().request_calls, 1);
    assert_eq!(send(&mut source, 1), "/2");
    assert_eq!(run.lua_time().request_calls, 2);
}

#[test]
fn a_batch_holds_no_more_calls_than_the_time_offered() {
    // Each call takes at least 1 ms: an offer of 3.5 ms holds two calls with twice a call's
    // time left before each (fewer when the machine is busy and a call takes longer).
    let (run, mut source) = source_of("tests/scripts/slow_counted.lua");
    assert_eq!(send(&mut source, 0), "/1");
    source.prepare(3_500_000, &mut |_| true);
    let made_ahead = run.lua_time().request_calls - 1;
    assert!(made_ahead <= 2, "{made_ahead} calls made ahead in 3.5 ms");
    assert_eq!(send(&mut source, 1), "/2");
}

#[test]
fn calls_are_made_ahead_only_for_entries_due_within_the_horizon() {
    let (run, mut source) = source();
    assert_eq!(send(&mut source, 0), "/1");
    // Three entries due within the horizon: the batch stops at three calls, asking for each.
    let mut asked = Vec::new();
    let mut due = |past_next: usize| {
        asked.push(past_next);
        past_next < 3
    };
    assert!(source.prepare(FAR, &mut due));
    assert!(!source.prepare(FAR, &mut due));
    assert_eq!(asked, [0, 1, 2, 3]);
    assert_eq!(run.lua_time().request_calls, 4);
    // The batch ended: none until those three are out, even with every entry due.
    assert_eq!(send(&mut source, 1), "/2");
    assert!(!source.prepare(FAR, &mut |_| true));
    assert_eq!(send(&mut source, 2), "/3");
    assert_eq!(send(&mut source, 3), "/4");
    assert!(source.prepare(FAR, &mut |_| true));
    assert_eq!(send(&mut source, 4), "/5");
}

#[test]
fn a_delay_longer_than_the_run_holds_for_the_run_and_is_told() {
    // A delay() of math.huge held its slot for ~u64::MAX ns, and nothing said so.
    let (run, mut source) = source_of("tests/scripts/huge_delay.lua");
    let span = 3_000_000_000;
    run.set_deadline(1_000, 1_000 + span);
    assert_eq!(source.hold_ns(), span);
    assert_eq!(source.hold_ns(), span);
    assert_eq!(source.hold_ns(), 3_000_000);
    let lua = run.lua_time();
    assert_eq!((lua.delay_calls, lua.long_delays), (3, 2));
    assert_eq!(lua.first_long_delay, Some(f64::INFINITY));
    assert_eq!(lua.run_span_ns, span);
}

#[test]
fn an_entry_whose_request_an_exit_ended_is_unmade_by_the_stop() {
    use candor_load::workload::script_source::ScriptStop;
    let (run, mut source) = source_of("tests/scripts/exit_third.lua");
    assert_eq!(send(&mut source, 0), "/1");
    assert!(!source.unmade_by_stop());
    assert_eq!(send(&mut source, 1), "/2");
    // The third call exits: its entry is not made, because the run stops (the engine books it
    // unfinished, not failed as `template`), and the run stops with the exit.
    assert!(!source.next(0, 2, None).sendable);
    assert!(source.unmade_by_stop());
    assert!(source.halted());
    assert!(matches!(
        run.stop_reason(),
        Some(ScriptStop::Exit { code: 0, .. })
    ));
}
