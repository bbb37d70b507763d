//! The engine core on simulated time: a manual clock and a scripted server drive [`Core`] with
//! no sockets and no sleeping, so every decision it makes is asserted exactly.
//!
//! The harness plays the driver's part: at each instant it hands the core `now`, writes what the
//! core says is due (at once if the connection is up, else when its connect completes), delivers
//! the scripted answers, and jumps to the next instant anything can happen (an answer, a connect,
//! or the wake-up the core plans). Times are nanoseconds from an arbitrary origin.

use crate::backoff::{Backoff, Fault};
use crate::config::{LoadConfig, RequestOrder, Target};
use crate::core::{Core, CoreConfig, Due, HaltState, Plan, TimeoutScope, TIMEOUT_SCAN_NS};
use crate::ledger::Ledger;
use crate::schedule::{ArrivalKind, Schedule};
use crate::shared::{FailureClass, IntervalData, IntervalMsg, PhaseAcc, WorkerSetup};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod conversations;
mod faults;
mod pacing;

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
    /// Multi-turn runs: the follow-ups a thread may hold (0: none) and the think time.
    follow_ups: usize,
    think: candor_workload::think::ThinkTime,
    think_seed: u64,
    interval_ns: u64,
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
            follow_ups: 0,
            think: Default::default(),
            think_seed: 0,
            interval_ns: 1_000 * MS,
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
    /// An answer per request index, before the script by sequence number.
    by_request: Vec<(u32, Answer)>,
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
    /// Multi-turn runs: the conversations of every interval handed over, by its index.
    interval_conversations: Vec<(u64, candor_core::results::Conversations)>,
}

impl Sim {
    fn new(shape: Shape) -> Sim {
        let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        config.warmup_ns = shape.warmup_ns;
        config.interval_ns = shape.interval_ns;
        config.duration_ns = shape.duration_ns;
        // A conversation run is an LLM run: its books keep the streams' (and conversations').
        config.stream.llm = shape.follow_ups > 0;
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
            compiled: None,
            requests_are: crate::seam::carrying::RequestKind::Http,
            slots: crate::seam::carrying::Slots {
                per_connection: 1,
                timeout: crate::seam::carrying::TimeoutScope::Connection,
            },
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
            event_timeout_ns: 0,
            stream_timeout_ns: 0,
            connections: shape.connections,
            slots_per_connection: shape.slots_per_connection,
            timeout_scope: shape.scope,
            request_count: shape.request_count,
            request_order: shape.request_order,
            seq_lane: shape.seq_lane,
            seq_stride: shape.seq_stride,
            follow_ups: shape.follow_ups,
            think: shape.think,
            think_seed: shape.think_seed,
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
            by_request: Vec::new(),
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
            interval_conversations: Vec::new(),
        }
    }

    fn answer_for(&self, seq: u64, request: u32) -> Answer {
        if let Some((_, a)) = self.by_request.iter().find(|(r, _)| *r == request) {
            return *a;
        }
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
        if let Answer::After(ns, status) = self.answer_for(e.seq, e.request) {
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
                self.core.fail_connection(conn, FailureClass::Connect, now);
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
        let per_connection = self.core_scope() == TimeoutScope::Connection;
        self.core.scan_timeouts(now, |x| {
            expired.push(if per_connection { x.conn } else { x.slot });
            None
        });
        for &x in &expired {
            if self.core_scope() == TimeoutScope::Connection {
                // Closed: the next request given to it reconnects.
                self.up_at[x] = u64::MAX;
            }
        }
        self.expired.extend(expired);
        self.retry_stream_waiters();
        self.recycle_intervals();
    }

    /// Recycles interval boxes, as the collector does, keeping the sum of their conversations.
    fn recycle_intervals(&mut self) {
        while let Ok(mut msg) = self.intervals.try_recv() {
            if let Some(s) = &msg.data.stream {
                self.interval_conversations
                    .push((msg.index, s.conversations));
            }
            msg.data.reset();
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
        self.core
            .fail_connection(conn, FailureClass::Read, self.now);
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
        self.recycle_intervals();
        self.phases.take().expect("the run ended")
    }
}

fn measured(phases: &[PhaseAcc; 2]) -> &PhaseAcc {
    &phases[1]
}
