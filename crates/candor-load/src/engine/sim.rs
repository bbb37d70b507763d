//! The engine core on simulated time: a manual clock and a scripted server drive [`Core`] with
//! no sockets and no sleeping, so every decision it makes is asserted exactly.
//!
//! The harness plays the driver's part: at each instant it hands the core `now`, writes what the
//! core says is due (at once if the connection is up, else when its connect completes), delivers
//! the scripted answers, and jumps to the next instant anything can happen (an answer, a connect,
//! or the wake-up the core plans). Times are nanoseconds from an arbitrary origin.

use crate::config::{LoadConfig, RequestOrder, Target};
use crate::engine::backoff::{Backoff, Fault};
use crate::engine::core::{Core, CoreConfig, Due, HaltState, Plan, TimeoutScope, TIMEOUT_SCAN_NS};
use crate::engine::ledger::Ledger;
use crate::schedule::{ArrivalKind, Schedule};
use crate::shared::{Failure, IntervalData, IntervalMsg, PhaseAcc, WorkerSetup};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// The first intended send; far from 0, since 0 means "not sent" to the books.
const START: u64 = 1_000 * MS;

/// What the scripted server does with the request of a given sequence number.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Answer {
    /// Answers with this status after this long (from the later of the send and the end of a stall).
    After(u64, u16),
    /// Never answers.
    Never,
}

/// One request as the harness saw it go out.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Sent {
    seq: u64,
    request: u32,
    intended: u64,
    at: u64,
    conn: usize,
}

struct Shape {
    rate: Option<f64>,
    connections: usize,
    slots_per_connection: usize,
    duration_ns: u64,
    warmup_ns: u64,
    timeout_ns: u64,
    drain_ns: u64,
    scope: TimeoutScope,
    seq_lane: u64,
    seq_stride: u64,
    request_count: usize,
    request_order: RequestOrder,
}

impl Shape {
    /// 1,000 requests a second for 100 ms on one connection with one slot.
    fn new() -> Shape {
        Shape {
            rate: Some(1000.0),
            connections: 1,
            slots_per_connection: 1,
            duration_ns: 100 * MS,
            warmup_ns: 0,
            timeout_ns: 2_000 * MS,
            drain_ns: 2_000 * MS,
            scope: TimeoutScope::Connection,
            seq_lane: 0,
            seq_stride: 1,
            request_count: 1,
            request_order: RequestOrder::RoundRobin,
        }
    }
}

struct Sim {
    now: u64,
    core: Core,
    intervals: Receiver<IntervalMsg>,
    pool: Sender<Box<IntervalData>>,
    halt: HaltState,
    /// Per connection: when it is up (`u64::MAX`: down, connecting on the next request).
    up_at: Vec<u64>,
    connect_ns: u64,
    /// The scripted server: an answer per sequence number (the default for the rest).
    script: Vec<(u64, Answer)>,
    default_answer: Answer,
    /// The server answers nothing before this instant.
    stall_until: u64,
    /// Answers on their way: (at, slot, seq, status).
    answers: Vec<(u64, usize, u64, u16)>,
    /// Every send, in the order they went out.
    sends: Vec<Sent>,
    /// Per send, the bytes the request source made for it (`None`: a prepared request).
    made: Vec<Option<Vec<u8>>>,
    /// What each timeout scan expired.
    expired: Vec<usize>,
    /// The driver is late: it does not wake before this instant (CPU starvation).
    asleep_until: u64,
    /// The most streams a connection ever had open (HTTP/2).
    stream_limit: usize,
    max_open_streams: usize,
    /// Slots that hold a request but wait for a stream.
    stream_waiters: Vec<usize>,
    phases: Option<[PhaseAcc; 2]>,
    /// This many connects (from now on) fail when they would complete (the server refuses).
    refuse: u32,
    /// Connect attempts started during the run.
    connects: Vec<u64>,
}

impl Sim {
    fn new(shape: Shape) -> Sim {
        let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        config.warmup_ns = shape.warmup_ns;
        config.duration_ns = shape.duration_ns;
        let (to_collector, intervals) = crossbeam_channel::unbounded();
        let (pool, from_pool) = crossbeam_channel::unbounded();
        let schedule = shape.rate.map(|r| {
            Schedule::new(
                START,
                r,
                ArrivalKind::Constant,
                shape.seq_lane,
                shape.seq_stride,
            )
        });
        let setup = WorkerSetup {
            config: Arc::new(config),
            requests: Vec::new().into(),
            connections: shape.connections,
            start_ns: START,
            schedule: None,
            to_collector,
            pool: from_pool,
            stop: Arc::new(AtomicBool::new(false)),
            end: Arc::default(),
            on_start: None,
            seq_lane: shape.seq_lane,
            seq_stride: shape.seq_stride,
        };
        let cfg = CoreConfig {
            start_ns: START,
            schedule_end_ns: START + shape.warmup_ns + shape.duration_ns,
            drain_ns: shape.drain_ns,
            timeout_ns: shape.timeout_ns,
            connections: shape.connections,
            slots_per_connection: shape.slots_per_connection,
            timeout_scope: shape.scope,
            request_count: shape.request_count,
            request_order: shape.request_order,
            seq_lane: shape.seq_lane,
            seq_stride: shape.seq_stride,
        };
        let core = Core::new(cfg, schedule, Ledger::new(&setup));
        Sim {
            now: START - 10 * MS,
            core,
            intervals,
            pool,
            halt: HaltState::default(),
            // Connected before the first intended send, as the drivers do.
            up_at: vec![START - 5 * MS; shape.connections],
            connect_ns: MS,
            script: Vec::new(),
            default_answer: Answer::After(100 * US, 200),
            stall_until: 0,
            answers: Vec::new(),
            sends: Vec::new(),
            made: Vec::new(),
            expired: Vec::new(),
            asleep_until: 0,
            stream_limit: usize::MAX,
            max_open_streams: 0,
            stream_waiters: Vec::new(),
            phases: None,
            refuse: 0,
            connects: Vec::new(),
        }
    }

    fn answer_for(&self, seq: u64) -> Answer {
        self.script
            .iter()
            .find(|(s, _)| *s == seq)
            .map_or(self.default_answer, |(_, a)| *a)
    }

    fn is_up(&self, conn: usize) -> bool {
        self.up_at[conn] <= self.now
    }

    /// Writes slot `slot`'s request now: the core learns it went out, the server schedules its answer.
    fn write(&mut self, slot: usize) {
        let conn = self.core.conn_of(slot);
        if self.core.exchange(slot).sent != 0 {
            return;
        }
        if self.stream_limit != usize::MAX && !self.core.open_stream(slot, self.stream_limit) {
            if !self.stream_waiters.contains(&slot) {
                self.stream_waiters.push(slot);
            }
            return;
        }
        self.max_open_streams = self.max_open_streams.max(self.core.open_streams(conn));
        self.core.sent(slot, self.now);
        self.core.written(slot, 100);
        let e = *self.core.exchange(slot);
        self.sends.push(Sent {
            seq: e.seq,
            request: e.request,
            intended: e.intended,
            at: self.now,
            conn,
        });
        self.made
            .push(self.core.slot_request(slot).map(|(b, _)| b.to_vec()));
        if let Answer::After(ns, status) = self.answer_for(e.seq) {
            let at = self.now.max(self.stall_until) + ns;
            self.answers.push((at, slot, e.seq, status));
        }
    }

    /// One round of the driver at the current instant.
    fn step(&mut self) {
        let now = self.now;
        // Answers due now (the server's order is the order they were scheduled in).
        let mut k = 0;
        while k < self.answers.len() {
            let (at, slot, seq, status) = self.answers[k];
            if at <= now {
                self.answers.remove(k);
                if self.core.is_busy(slot) && self.core.exchange(slot).seq == seq {
                    self.core.complete(slot, status, now);
                    self.retry_stream_waiters();
                }
            } else {
                k += 1;
            }
        }
        self.core.halt(now, self.halt);
        self.core.flush_due(now);
        for conn in 0..self.up_at.len() {
            if self.up_at[conn] == now && self.refuse > 0 {
                self.refuse -= 1;
                self.core.fail_connection(conn, Failure::Connect, now);
                self.core.connection_down(conn, Some(Fault::Refused), now);
                self.up_at[conn] = u64::MAX;
            } else if self.up_at[conn] == now {
                self.core.connected(now);
                let waiting: Vec<usize> = self.core.carried(conn).collect();
                for slot in waiting {
                    self.write(slot);
                }
            }
        }
        while let Some(Due { slot, conn, .. }) = self.core.next_due(now) {
            if self.is_up(conn) {
                self.write(slot);
            } else if self.up_at[conn] == u64::MAX && self.core.may_connect(conn, now) {
                self.connect(conn);
            }
        }
        while let Some(conn) = self.core.deferred_connect(now) {
            if self.up_at[conn] == u64::MAX {
                self.connect(conn);
            }
        }
        let mut expired = Vec::new();
        self.core.scan_timeouts(now, |x| expired.push(x));
        for &x in &expired {
            if self.core_scope() == TimeoutScope::Connection {
                // Closed: the next request given to it reconnects.
                self.up_at[x] = u64::MAX;
            }
        }
        self.expired.extend(expired);
        self.retry_stream_waiters();
        // Recycle interval boxes, as the collector does.
        while let Ok(msg) = self.intervals.try_recv() {
            let _ = self.pool.send(msg.data);
        }
    }

    fn connect(&mut self, conn: usize) {
        self.core.connecting(conn, self.now);
        self.up_at[conn] = self.now + self.connect_ns;
        self.connects.push(self.now);
    }

    fn core_scope(&self) -> TimeoutScope {
        self.core.timeout_scope()
    }

    fn retry_stream_waiters(&mut self) {
        let waiting = std::mem::take(&mut self.stream_waiters);
        for slot in waiting {
            if self.core.is_busy(slot) {
                self.write(slot);
            }
        }
    }

    /// Fails everything connection `conn` carries (the server closed it) at the current instant.
    fn drop_connection(&mut self, conn: usize) {
        self.core.fail_connection(conn, Failure::Read, self.now);
        self.up_at[conn] = u64::MAX;
    }

    /// Runs until `until` (or the end of the run), jumping from one instant to the next.
    fn run_until(&mut self, until: u64) {
        let mut same_instant = 0;
        while self.phases.is_none() {
            self.step();
            let plan = self.core.plan(self.now);
            let Plan::Wait { send_at, wake } = plan else {
                let now = self.now;
                self.phases = Some(self.core.finish(now, &|| now, &|| false));
                return;
            };
            // A send due now (a timeout scan freed a slot after the sends of this round) is
            // made in another round at the same instant, as the drivers' spin does.
            let mut next = send_at.min(wake).max(self.now);
            same_instant = if next == self.now {
                same_instant + 1
            } else {
                0
            };
            assert!(
                same_instant < 1000,
                "the core makes no progress at {}",
                self.now
            );
            for &(at, ..) in &self.answers {
                next = next.min(at);
            }
            for &u in &self.up_at {
                if u > self.now && u != u64::MAX {
                    next = next.min(u);
                }
            }
            next = next.max(self.asleep_until);
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
        }
    }

    fn run_to_end(&mut self) -> [PhaseAcc; 2] {
        self.run_until(u64::MAX - 1);
        self.phases.take().expect("the run ended")
    }
}

fn measured(phases: &[PhaseAcc; 2]) -> &PhaseAcc {
    &phases[1]
}

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
fn a_timeout_records_the_age_and_frees_the_connection() {
    let mut shape = Shape::new();
    shape.timeout_ns = 25 * MS;
    shape.duration_ns = 40 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((0, Answer::Never));
    let phases = sim.run_to_end();
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.intended, c.completed, c.failed), (40, 39, 1), "{c:?}");
    assert_eq!(c.errors.timeout, 1);
    // Scans run every 10 ms from the start: at 30 ms request 0 (sent at 0) is 30 ms old, past
    // the 25 ms limit; its age is recorded as its response and service time.
    assert_eq!(sim.expired, [0]);
    // (The backlog behind it has response times near it, but none at 30.0 ms.)
    assert_eq!(p.rec.response.count_at(30 * MS), 1);
    assert!(p.rec.service.equivalent(p.rec.service.max(), 30 * MS));
    // The connection was closed and the next request reconnects it (1 ms), so request 1 (due
    // at 1 ms, waiting since) goes out at 31 ms: freed at 30 ms, plus the connect.
    assert_eq!(sim.sends[1].seq, 1);
    assert_eq!(sim.sends[1].at, START + 31 * MS);
    assert_eq!(c.connections_opened, 2, "the initial one and the reconnect");
}

#[test]
fn a_request_waiting_for_its_connection_times_out_from_its_intended_time() {
    let mut shape = Shape::new();
    shape.timeout_ns = 15 * MS;
    shape.duration_ns = 5 * MS;
    let mut sim = Sim::new(shape);
    // The connection never comes up.
    sim.up_at = vec![u64::MAX];
    sim.connect_ns = u64::MAX / 2;
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Request 0 is due at 0 and waits for the connect; the scan at 20 ms finds it 20 ms old
    // (10 ms is not yet 15). Each later one waits in the schedule for the slot, is given it when
    // the previous attempt is given up, starts a connect then, and is timed from there: the
    // attempts end at 20, 40, 60, 80 and 100 ms, and each records its age from its intended time.
    assert_eq!(c.intended, 5);
    assert_eq!(c.errors.timeout, 5);
    assert_eq!(sim.expired, [0; 5]);
    assert_eq!(sim.sends.len(), 0);
    let rt = &measured(&phases).rec.response;
    assert!(rt.equivalent(rt.min(), 20 * MS), "{}", rt.min());
    assert!(rt.equivalent(rt.max(), 96 * MS), "{}", rt.max());
}

#[test]
fn a_drop_fails_exactly_the_requests_in_flight_on_it() {
    // Two connections pipelining three requests each; the server holds every answer for 50 ms.
    let mut shape = Shape::new();
    shape.connections = 2;
    shape.slots_per_connection = 3;
    shape.duration_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(50 * MS, 200);
    // At 4.5 ms requests 0..=4 are out: 0, 2, 4 on connection 0 and 1, 3 on connection 1.
    sim.run_until(START + 4 * MS + 500 * US);
    assert_eq!(sim.core.carried(0).count(), 3);
    assert_eq!(sim.core.carried(1).count(), 2);
    sim.drop_connection(0);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!(c.failed, 3, "exactly what connection 0 carried: {c:?}");
    assert_eq!(c.errors.read, 3);
    assert_eq!((c.intended, c.completed + c.failed), (10, 10));
    assert!(c.balanced());
}

#[test]
fn a_stop_leaves_exactly_the_expected_census() {
    // 1,000/s, one slot, and a server that never answers: request 0 holds the slot and the
    // rest of what falls due waits. An interrupt at 7.5 ms ends the schedule there.
    let mut shape = Shape::new();
    shape.duration_ns = 1_000 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::Never;
    sim.run_until(START + 7 * MS + 500 * US);
    sim.halt = HaltState {
        aborting: true,
        requested_at: None,
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Entries 0..=7 were due by 7.5 ms: one sent and unanswered, seven never sent; the other
    // 992 were never due and are not counted.
    assert_eq!(c.intended, 8, "{c:?}");
    assert_eq!((c.completed, c.failed), (0, 0));
    assert_eq!(c.in_flight_at_end, 8);
    assert_eq!((c.sent_unanswered, c.queued_unsent), (1, 7));
    assert!(c.balanced());
    assert_eq!(measured(&phases).unfinished.len(), 8);
    assert_eq!(sim.now, START + 7 * MS + 500 * US, "no drain after a stop");
}

#[test]
fn an_early_end_drains_and_counts_only_what_was_due() {
    // Answers take 3 ms; an early end (precision reached) asked for at 5.5 ms: nothing due
    // after it is sent, what is out is awaited in the drain.
    let mut shape = Shape::new();
    shape.slots_per_connection = 8;
    shape.duration_ns = 1_000 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(3 * MS, 200);
    sim.run_until(START + 5 * MS + 500 * US);
    sim.halt = HaltState {
        aborting: false,
        requested_at: Some(START + 5 * MS + 500 * US),
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!(
        (c.intended, c.completed, c.in_flight_at_end),
        (6, 6, 0),
        "{c:?}"
    );
    // The last one (due at 5 ms) came back at 8 ms, and the run ended then.
    assert_eq!(sim.now, START + 8 * MS);
}

#[test]
fn the_drain_ends_at_its_deadline_with_the_rest_unfinished() {
    let mut shape = Shape::new();
    shape.duration_ns = 3 * MS;
    shape.slots_per_connection = 4;
    shape.drain_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((2, Answer::After(50 * MS, 200)));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // 0 and 1 come back; 2 is still out when the drain ends at 3 + 10 ms.
    assert_eq!(
        (c.intended, c.completed, c.in_flight_at_end),
        (3, 2, 1),
        "{c:?}"
    );
    assert_eq!(c.sent_unanswered, 1);
    assert_eq!(sim.now, START + 13 * MS);
    let u = &measured(&phases).unfinished;
    assert!(
        u.equivalent(u.max(), 11 * MS),
        "aged from its intended time (2 ms)"
    );
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
fn the_http2_stream_limit_holds_and_the_wait_is_send_lag() {
    // One connection offering 4 streams; the server allows 2 at once and answers after 1 ms.
    let mut shape = Shape::new();
    shape.rate = Some(10_000.0);
    shape.duration_ns = 400 * US;
    shape.slots_per_connection = 4;
    shape.scope = TimeoutScope::Stream;
    let mut sim = Sim::new(shape);
    sim.stream_limit = 2;
    sim.default_answer = Answer::After(MS, 200);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed), (4, 4));
    assert_eq!(sim.max_open_streams, 2, "never more than the server allows");
    // 0 and 1 go when due; 2 and 3 wait for the streams 0 and 1 free at 1 ms and 1.1 ms.
    let at: Vec<u64> = sim.sends.iter().map(|s| s.at - START).collect();
    assert_eq!(at, [0, 100 * US, MS, 1_100 * US]);
    // The wait is send lag (before the request went out), not service time.
    let r = &measured(&phases).rec;
    assert!(r.send_lag.equivalent(r.send_lag.max(), 800 * US));
    assert!(r.service.equivalent(r.service.max(), MS));
}

#[test]
fn an_http2_timeout_resets_one_stream_and_the_connection_carries_on() {
    let mut shape = Shape::new();
    shape.slots_per_connection = 4;
    shape.scope = TimeoutScope::Stream;
    shape.timeout_ns = 15 * MS;
    shape.duration_ns = 30 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((1, Answer::Never));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed, c.errors.timeout), (30, 29, 1));
    // The scan at 20 ms finds request 1 (sent at 1 ms) 19 ms old; the expired slot is its.
    assert_eq!(sim.expired.len(), 1);
    assert_eq!(c.connections_opened, 1, "no reconnect");
    let rt = &measured(&phases).rec.response;
    assert!(rt.equivalent(rt.max(), 19 * MS));
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
fn a_pipelined_connection_that_times_out_fails_everything_it_carried() {
    // Three requests pipelined on one connection, none answered: the oldest times out (HTTP/1.1
    // answers in order, so nothing behind it can come back), and the connection with it.
    let mut shape = Shape::new();
    shape.slots_per_connection = 3;
    shape.duration_ns = 3 * MS;
    shape.timeout_ns = 25 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::Never;
    let phases = sim.run_to_end();
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.intended, c.failed, c.errors.timeout), (3, 3, 3), "{c:?}");
    assert_eq!(sim.expired, [0], "one connection closed, once");
    // The scan at 30 ms: each records its own age, 30, 29 and 28 ms.
    assert_eq!(p.rec.response.len(), 3);
    assert!(p.rec.response.equivalent(p.rec.response.min(), 28 * MS));
    assert!(p.rec.response.equivalent(p.rec.response.max(), 30 * MS));
    assert_eq!(sim.now, START + 30 * MS, "nothing left to drain");
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

#[test]
fn a_stop_while_a_start_ahead_is_awaited_ends_the_run_at_once() {
    // A start an hour ahead (--start-at): the core wakes every timeout-scan period while it
    // waits, so a stop asked for meanwhile is seen within that period, and it ends the run there
    // with empty books instead of waiting for the start.
    let mut sim = Sim::new(Shape::new());
    let start = START + 3_600_000 * MS;
    let schedule = Schedule::new(start, 1000.0, ArrivalKind::Constant, 0, 1);
    sim.core.begin_at(start, Some(schedule), 0);
    match sim.core.plan(sim.now) {
        Plan::Wait { wake, .. } => assert!(wake <= sim.now + TIMEOUT_SCAN_NS, "wake {wake}"),
        Plan::Done => panic!("done before the start"),
    }
    let stop_at = START + 25 * MS;
    sim.run_until(stop_at);
    sim.halt = HaltState {
        aborting: true,
        requested_at: None,
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert!(sim.now < stop_at + TIMEOUT_SCAN_NS, "ended at {}", sim.now);
    assert_eq!((c.intended, c.in_flight_at_end), (0, 0), "{c:?}");
    assert!(c.balanced());
    assert!(sim.sends.is_empty());
}

#[test]
fn a_refusing_server_is_retried_on_the_back_off_schedule_and_every_request_is_booked() {
    // 1,000/s for 1 s on one connection that is refused every time (a connect takes 1 ms to
    // fail): each attempt fails the one request that waited on it, and the next is made only
    // when the back-off (1 ms doubling to 1 s) has run out; the rest waits in the schedule.
    let mut shape = Shape::new();
    shape.duration_ns = 1_000 * MS;
    shape.drain_ns = 0;
    let mut sim = Sim::new(shape);
    sim.up_at = vec![u64::MAX];
    sim.refuse = u32::MAX;
    let phases = sim.run_to_end();
    // The attempts the schedule allows: the first at the start, each next one when the
    // previous failed (1 ms later) plus its back-off, while the schedule runs.
    let mut expected = Vec::new();
    let (mut at, mut streak) = (START, 0);
    while at < START + 1_000 * MS {
        expected.push(at);
        streak += 1;
        at += MS + Backoff::delay_ns(streak);
    }
    assert_eq!(sim.connects, expected);
    assert_eq!(expected.len(), 10, "{expected:?}");
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!(c.errors.connect, expected.len() as u64, "{c:?}");
    assert_eq!(c.failed, c.errors.connect);
    assert_eq!(c.intended, 1_000);
    assert!(c.balanced(), "{c:?}");
    assert_eq!(p.faults.total(), expected.len() as u64);
    assert_eq!(
        p.faults.by_cause().into_iter().collect::<Vec<_>>(),
        vec![(
            "connect refused or failed".to_string(),
            expected.len() as u64
        )]
    );
}

#[test]
fn a_connection_that_answered_is_reconnected_at_once() {
    // 500/s; the server closes the connection after each answer (a connect takes 1 ms, an
    // answer 100 us): it answered, so the next request reconnects when it is due (no back-off),
    // and nothing is booked as a fault.
    let mut shape = Shape::new();
    shape.rate = Some(500.0);
    shape.duration_ns = 20 * MS;
    let mut sim = Sim::new(shape);
    for k in 0..10 {
        let answered = if k == 0 {
            500 * US
        } else {
            2 * k * MS + 1_500 * US
        };
        sim.run_until(START + answered);
        assert!(!sim.core.is_busy(0), "request {k} was answered");
        sim.core.connection_down(0, None, sim.now);
        sim.up_at[0] = u64::MAX;
    }
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.completed, c.failed), (10, 0), "{c:?}");
    assert_eq!(
        sim.connects,
        (1..10).map(|k| START + 2 * k * MS).collect::<Vec<_>>()
    );
    assert_eq!(measured(&phases).faults.total(), 0);
}

#[test]
fn the_back_off_wait_is_the_waiting_request_s_send_lag() {
    // 1,000/s on one connection, down at the start; the server refuses the first two connects
    // (a connect takes 1 ms). Request 0 connects at 0 ms and fails at 1 ms (back-off 1 ms);
    // request 1, due at 1 ms, connects at 2 ms and fails at 3 ms (back-off 2 ms); request 2,
    // due at 2 ms, waits for the connect at 5 ms, goes out at 6 ms: 4 ms of send lag.
    let mut shape = Shape::new();
    shape.duration_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.up_at = vec![u64::MAX];
    sim.refuse = 2;
    let phases = sim.run_to_end();
    assert_eq!(sim.connects, vec![START, START + 2 * MS, START + 5 * MS]);
    assert_eq!(sim.sends[0].seq, 2);
    assert_eq!(sim.sends[0].at - sim.sends[0].intended, 4 * MS);
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.errors.connect, c.completed), (2, 8), "{c:?}");
    assert!(c.balanced());
    assert_eq!(
        p.rec.send_lag.max(),
        p.rec.send_lag.highest_equivalent(4 * MS)
    );
}

/// A source that makes its own bytes, as a script will: entry `seq` sends request `seq % 2` as
/// the bytes `r{seq}` in its slot's buffer, except every fifth entry, which it cannot make.
struct Scripted {
    buffers: Vec<Vec<u8>>,
}

impl crate::workload::source::RequestSource for Scripted {
    fn next(
        &mut self,
        slot: usize,
        seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> crate::workload::source::Next {
        let b = &mut self.buffers[slot];
        b.clear();
        b.extend_from_slice(format!("r{seq}").as_bytes());
        crate::workload::source::Next {
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

/// A source whose slots wait after each response, as a script's `delay()` asks in a closed
/// loop: `hold` ns, then the slot sends again.
struct Holding {
    hold: u64,
}

impl crate::workload::source::RequestSource for Holding {
    fn next(
        &mut self,
        _slot: usize,
        _seq: u64,
        _taken: Option<(&[u8], bool)>,
    ) -> crate::workload::source::Next {
        crate::workload::source::Next {
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
