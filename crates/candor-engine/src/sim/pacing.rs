//! The core's schedule on simulated time: what is sent when, in which order, on which slot and
//! with which request, in open and closed loops.

use super::*;

#[test]
fn the_backlog_after_a_stall_is_sent_in_order_and_never_skipped() {
    // 1,000/s on one connection with one slot; request 10 takes 30.5 ms: entries 11..=40 fall
    // due behind it and must all go out, in order, each the moment the slot frees.
    let mut sim = Sim::new(Shape::new());
    sim.script
        .push((10, Answer::After(30 * MS + 500 * US, 200)));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!(
        (c.intended, c.completed, c.failed, c.in_flight_at_end),
        (100, 100, 0, 0)
    );
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(
        seqs,
        (0..100).collect::<Vec<_>>(),
        "in schedule order, none skipped"
    );
    for s in &sim.sends {
        assert_eq!(s.intended, START + s.seq * MS, "intended times kept: {s:?}");
    }
    // Request 10 went out at 10 ms and came back at 40.5 ms; 11 (due at 11 ms) then goes, and
    // each answer (100 us) frees the slot for the next of the backlog.
    assert_eq!(sim.sends[11].at, START + 40 * MS + 500 * US);
    for k in 12..=40 {
        assert_eq!(
            sim.sends[k].at,
            sim.sends[k - 1].at + 100 * US,
            "backlog entry {k}"
        );
    }
    // The backlog is drained by then (41 sends x 0.1 ms after 40.5 ms is 43.4 ms < 44 ms).
    assert!(sim.sends.iter().skip(44).all(|s| s.at == s.intended));
    // Waiting for a busy slot is queueing, not the generator's lateness.
    assert_eq!(c.generator_late, 0);
    // The send lag of the first backlog entry is exactly its wait.
    let lag = &measured(&phases).rec.send_lag;
    assert!(
        lag.equivalent(lag.max(), 29 * MS + 500 * US),
        "{}",
        lag.max()
    );
}

#[test]
fn due_requests_wait_in_order_for_a_free_slot_and_keep_their_intended_time() {
    // Two connections, one slot each, answers after 3.5 ms at 1,000/s: every request waits
    // for the first slot to free, in schedule order, and is timed from its intended time.
    let mut shape = Shape::new();
    shape.connections = 2;
    shape.duration_ns = 20 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(3 * MS + 500 * US, 200);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed), (20, 20));
    let mut last = 0;
    for (k, s) in sim.sends.iter().enumerate() {
        assert_eq!(s.seq, k as u64, "sent in schedule order");
        assert_eq!(s.intended, START + s.seq * MS);
        assert!(s.at >= s.intended && s.at >= last);
        last = s.at;
    }
    // Slots free at 3.5 ms, 4.5 ms, 7 ms, 8 ms ...: request k goes at the first of them after
    // its intended time, alternating between the connections.
    let at: Vec<u64> = sim.sends.iter().take(6).map(|s| s.at - START).collect();
    assert_eq!(at, [0, MS, 3_500 * US, 4_500 * US, 7 * MS, 8 * MS]);
    let conns: Vec<usize> = sim.sends.iter().take(6).map(|s| s.conn).collect();
    assert_eq!(conns, [0, 1, 0, 1, 0, 1]);
    // The response time of each request runs from its intended time: the last one waited
    // longest (the queue grows by 0.75 ms per request).
    let rt = &measured(&phases).rec.response;
    let last = sim.sends.last().unwrap();
    assert!(rt.equivalent(rt.max(), last.at + 3_500 * US - last.intended));
    assert_eq!(c.generator_late, 0);
}

#[test]
fn generator_late_counts_only_sends_late_while_a_slot_was_free() {
    // A driver that oversleeps: between 9.5 ms and 15 ms it does not run at all. Entries 10..=13
    // were due while free slots (eight, answers in 0.1 ms) waited and go out more than 1 ms late: the generator's fault.
    // Entry 14 (due 14 ms, sent 15 ms) is late by exactly 1 ms: not more than the threshold.
    let mut shape = Shape::new();
    shape.slots_per_connection = 8;
    let mut sim = Sim::new(shape);
    sim.run_until(START + 9 * MS + 500 * US);
    sim.asleep_until = START + 15 * MS;
    let phases = sim.run_to_end();
    assert_eq!(measured(&phases).counts.generator_late, 4);
    // The same lateness behind a busy slot is queueing: none counted.
    let mut sim = Sim::new(Shape::new());
    sim.script.push((9, Answer::After(6 * MS, 200)));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert!(sim.sends[10].at >= START + 15 * MS);
    assert_eq!(c.generator_late, 0);
}

#[test]
fn the_phase_of_a_request_is_its_intended_time() {
    let mut shape = Shape::new();
    shape.warmup_ns = 5 * MS;
    shape.duration_ns = 5 * MS;
    let mut sim = Sim::new(shape);
    // Request 4 (warm-up, due at 4 ms) is answered at 8 ms, inside the measured window.
    sim.script.push((4, Answer::After(4 * MS, 200)));
    let phases = sim.run_to_end();
    assert_eq!(phases[0].counts.intended, 5);
    assert_eq!(phases[0].counts.completed, 5);
    assert_eq!(phases[1].counts.intended, 5);
    assert_eq!(phases[1].counts.completed, 5);
}

#[test]
fn sequence_numbers_are_global_across_interleaved_streams() {
    // Two threads of one shard pair (stride 4): thread 1 of shard 1 is phase 3.
    let mut shape = Shape::new();
    shape.rate = Some(4000.0);
    shape.duration_ns = 3 * MS;
    shape.seq_lane = 3;
    shape.seq_stride = 4;
    let mut sim = Sim::new(shape);
    sim.run_to_end();
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [3, 7, 11]);
    // Its intended times are those entries of the combined 4,000/s stream.
    let at: Vec<u64> = sim.sends.iter().map(|s| s.intended - START).collect();
    assert_eq!(at, [750 * US, 1_750 * US, 2_750 * US]);
    // Closed loop: the k-th send of the thread is k * stride + phase too.
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = MS;
    shape.seq_lane = 1;
    shape.seq_stride = 2;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(300 * US, 200);
    sim.run_to_end();
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 3, 5, 7]);
}

#[test]
fn closed_loop_sends_the_next_request_when_a_slot_frees() {
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 10 * MS;
    shape.connections = 2;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(MS, 200);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Two slots, 1 ms each, 10 ms: 20 exchanges, each sent the instant it was intended.
    assert_eq!((c.intended, c.completed), (20, 20));
    assert!(sim.sends.iter().all(|s| s.at == s.intended));
    // A zero is recorded as 1 ns, the histograms' lowest value (candor_core::hist::record_clamped).
    assert_eq!(measured(&phases).rec.send_lag.max(), 1);
}

#[test]
fn begin_at_moves_the_whole_run_to_the_start_the_pool_allowed() {
    // A core made before its start was known (while the pool opened), then started 7 ms later
    // than it was made for: every intended time and the end of the schedule follow the new
    // start, and the connect made before it is booked in the measured phase (no warm-up).
    let mut shape = Shape::new();
    shape.duration_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    let start = START + 7 * MS;
    let schedule = Schedule::new(start, 1000.0, ArrivalKind::Constant, 0, 1);
    sim.core.begin_at(start, Some(schedule), 0);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed), (10, 10), "{c:?}");
    assert_eq!(c.connections_opened, 1);
    let intended: Vec<u64> = sim.sends.iter().map(|s| s.intended - start).collect();
    assert_eq!(intended, (0..10).map(|k| k * MS).collect::<Vec<_>>());
    assert!(sim.sends.iter().all(|s| s.at == s.intended));
}

#[test]
fn the_request_sent_is_chosen_per_entry_and_booked_with_it() {
    // Three prepared requests in round-robin order: request `seq mod 3`, from the first.
    let mut shape = Shape::new();
    shape.duration_ns = 6 * MS;
    shape.request_count = 3;
    let mut sim = Sim::new(shape);
    sim.run_to_end();
    let chosen: Vec<u32> = sim.sends.iter().map(|s| s.request).collect();
    assert_eq!(chosen, [0, 1, 2, 0, 1, 2]);
    // A second thread of a closed loop (every other seq, from 1) continues the same rotation
    // rather than starting its own: its requests are those of its seqs.
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 6 * MS;
    shape.request_count = 3;
    shape.seq_lane = 1;
    shape.seq_stride = 2;
    let mut sim = Sim::new(shape);
    sim.run_to_end();
    assert!(sim.sends.len() >= 3);
    for s in &sim.sends {
        assert_eq!(s.seq % 2, 1);
        assert_eq!(s.request as u64, s.seq % 3, "seq {}", s.seq);
    }
    // Random order: seeded, so the same seed gives the same choices, every index in range.
    let random = |seed| {
        let mut shape = Shape::new();
        shape.duration_ns = 50 * MS;
        shape.request_count = 3;
        shape.request_order = RequestOrder::Random { seed };
        let mut sim = Sim::new(shape);
        sim.run_to_end();
        sim.sends.iter().map(|s| s.request).collect::<Vec<u32>>()
    };
    let (a, b) = (random(7), random(7));
    assert_eq!(a, b);
    assert!(a.iter().all(|&r| r < 3));
    assert!((0..3).all(|r| a.contains(&r)), "{a:?}");
}

/// A source that makes its own bytes, as a script will: entry `seq` sends request `seq % 2` as
/// the bytes `r{seq}` in its slot's buffer, except every fifth entry, which it cannot make.
struct Scripted {
    buffers: Vec<Vec<u8>>,
}

impl candor_workload::source::RequestSource for Scripted {
    fn next(
        &mut self,
        slot: usize,
        seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> candor_workload::source::Next {
        let b = &mut self.buffers[slot];
        b.clear();
        b.extend_from_slice(format!("r{seq}").as_bytes());
        candor_workload::source::Next {
            request: (seq % 2) as u32,
            sendable: seq % 5 != 4,
        }
    }

    fn made(&self, slot: usize) -> Option<(&[u8], bool)> {
        Some((&self.buffers[slot], false))
    }
}

#[test]
fn the_core_asks_its_request_source_what_each_entry_sends() {
    let mut shape = Shape::new();
    shape.duration_ns = 10 * MS;
    shape.connections = 2;
    let mut sim = Sim::new(shape);
    let slots = sim.core.slot_count();
    sim.core.set_source(Box::new(Scripted {
        buffers: vec![Vec::new(); slots],
    }));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // 10 entries: 4 and 9 could not be made and failed before a byte was written.
    assert_eq!((c.intended, c.completed, c.errors.template), (10, 8, 2));
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 5, 6, 7, 8]);
    for (s, made) in sim.sends.iter().zip(&sim.made) {
        assert_eq!(s.request as u64, s.seq % 2);
        assert_eq!(made.as_deref(), Some(format!("r{}", s.seq).as_bytes()));
    }
}

/// A source that cannot make entry `fail_at` and ends the run there, as a script's failing
/// `request()` does.
struct Failing {
    fail_at: u64,
    halted: bool,
    /// Whether entry `fail_at` went unmade because the run stops (a script's `os.exit`),
    /// not because it could not be made.
    by_stop: bool,
}

impl candor_workload::source::RequestSource for Failing {
    fn next(
        &mut self,
        _slot: usize,
        seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> candor_workload::source::Next {
        self.halted |= seq == self.fail_at;
        candor_workload::source::Next {
            request: 0,
            sendable: seq != self.fail_at,
        }
    }

    fn made(&self, _slot: usize) -> Option<(&[u8], bool)> {
        None
    }

    fn halted(&self) -> bool {
        self.halted
    }

    fn unmade_by_stop(&self) -> bool {
        self.by_stop && self.halted
    }
}

#[test]
fn a_source_that_ends_the_run_is_asked_for_no_more_entries() {
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 10 * MS;
    shape.connections = 4;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(MS, 200);
    sim.core.set_source(Box::new(Failing {
        fail_at: 5,
        halted: false,
        by_stop: false,
    }));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Four sent at the start; at 1 ms their answers free slots for entry 4, then for entry 5,
    // which fails and ends the run: no slot freed after it sends again (before, each free slot
    // asked the source for another entry in the same pass), and what is still out is
    // unfinished (an abort does not wait for it).
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    assert_eq!(c.intended, 6);
    assert_eq!(c.errors.template, 1);
    assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
}

#[test]
fn an_entry_a_stop_kept_from_being_made_is_unfinished_not_failed() {
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 10 * MS;
    shape.connections = 4;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(MS, 200);
    sim.core.set_source(Box::new(Failing {
        fail_at: 5,
        halted: false,
        by_stop: true,
    }));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // As above, but entry 5 was not made because the run stops (a script's os.exit ended its
    // request()): it is no template failure, it ends queued and never sent, with the three
    // sent entries still out at the abort.
    let seqs: Vec<u64> = sim.sends.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    assert_eq!(c.intended, 6);
    assert_eq!((c.errors.template, c.failed), (0, 0));
    assert_eq!(c.queued_unsent, 1);
    assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
}

/// A source whose slots wait after each response, as a script's `delay()` asks in a closed
/// loop: `hold` ns, then the slot sends again.
struct Holding {
    hold: u64,
}

impl candor_workload::source::RequestSource for Holding {
    fn next(
        &mut self,
        _slot: usize,
        _seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> candor_workload::source::Next {
        candor_workload::source::Next {
            request: 0,
            sendable: true,
        }
    }

    fn made(&self, _slot: usize) -> Option<(&[u8], bool)> {
        None
    }

    fn hold_ns(&mut self) -> u64 {
        self.hold
    }
}

#[test]
fn a_closed_loop_slot_waits_what_its_source_holds_it_after_each_response() {
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 10 * MS;
    shape.connections = 1;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(MS, 200);
    sim.core.set_source(Box::new(Holding { hold: 2 * MS }));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // 1 ms answer + 2 ms wait: a send every 3 ms from the start, 0, 3, 6, 9 ms.
    let at: Vec<u64> = sim.sends.iter().map(|s| s.at - START).collect();
    assert_eq!(at, [0, 3 * MS, 6 * MS, 9 * MS]);
    assert_eq!((c.intended, c.completed), (4, 4));
    // The wait is the script's think time, not lag: each send is its own intended time.
    assert!(sim.sends.iter().all(|s| s.at == s.intended));
}

/// A source whose freed slots wait `holds` ns in turn (a `delay()` that varies).
struct Varying {
    holds: Vec<u64>,
    k: usize,
}

impl candor_workload::source::RequestSource for Varying {
    fn next(
        &mut self,
        _slot: usize,
        _seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> candor_workload::source::Next {
        candor_workload::source::Next {
            request: 0,
            sendable: true,
        }
    }

    fn made(&self, _slot: usize) -> Option<(&[u8], bool)> {
        None
    }

    fn hold_ns(&mut self) -> u64 {
        let h = self.holds[self.k % self.holds.len()];
        self.k += 1;
        h
    }
}

#[test]
fn a_long_hold_keeps_back_only_its_own_slot() {
    let mut shape = Shape::new();
    shape.rate = None;
    shape.duration_ns = 10 * MS;
    shape.connections = 2;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(MS, 200);
    sim.core.set_source(Box::new(Varying {
        holds: vec![8 * MS, MS],
        k: 0,
    }));
    sim.run_to_end();
    // Both connections send at 0 and are answered at 1 ms; one then waits 8 ms, the other
    // 1 ms: the second sends again at 2 ms, not behind the first's wait (at 9 ms).
    let mut second: Vec<u64> = (0..2)
        .map(|conn| {
            sim.sends
                .iter()
                .filter(|s| s.conn == conn)
                .nth(1)
                .map(|s| s.at - START)
                .unwrap()
        })
        .collect();
    second.sort_unstable();
    assert_eq!(second, [2 * MS, 9 * MS]);
}
