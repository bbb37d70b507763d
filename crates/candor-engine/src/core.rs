//! The sans-IO core of a load thread: handed `now` and events, it answers which due request goes
//! on which slot and keeps the books. It never reads the clock and never touches a socket, so
//! every rule that makes candor honest is written once here and tested exactly on simulated time
//! (`engine::sim`).
//!
//! What it owns: the schedule cursor (consumed in order through `peek`/`advance`, never skipped,
//! thinned or re-anchored); the FIFO of free slots (a due request takes the first; the rest of
//! the due stretch waits in the schedule, keeping its intended time); which requests each
//! connection carries (for pipelined HTTP/1.1 in the order they were written); timeouts; the
//! `generator_late` rule; stop, early end and drain; and the end-of-run census
//! (`intended = completed + failed + unfinished`).
//!
//! A slot is one request a connection can carry at a time: HTTP/1.1 with `--pipeline P` has P per
//! connection, HTTP/2 one per stream (`--streams`), raw TCP one. Slot `k` belongs to connection
//! `k % connections`, and the free FIFO starts as `0, 1, 2, ...`, so consecutive requests spread
//! over all connections before they stack on one.

use crate::backoff::Backoff;
use crate::config::RequestOrder;
use crate::ledger::{Exchange, Ledger};
use crate::schedule::Schedule;
pub use crate::seam::carrying::TimeoutScope;
use crate::shared::{FailureClass, PhaseAcc, WorkerSetup};
use candor_core::sleep_or_spin::MIN_SLEEP_NS;
use candor_workload::pick::Picker;
use candor_workload::source::{Next, PreparedSource, RequestSource};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod connections;
mod conversations;
mod outcomes;

/// Follow-ups one load thread of a multi-turn run may hold waiting, at least: a thread with many
/// slots gets [`FOLLOW_UPS_PER_SLOT`] per slot. Each is 24 bytes, so the queue costs at most a
/// few hundred kilobytes; a run that needs more (a long think time at a high rate) counts the
/// conversations it could not continue as `unqueued` (see `core/conversations.rs`).
const MIN_FOLLOW_UPS: usize = 4096;
const FOLLOW_UPS_PER_SLOT: usize = 16;

/// The follow-ups a load thread of `slots` slots may hold waiting.
pub fn follow_up_capacity(slots: usize) -> usize {
    MIN_FOLLOW_UPS.max(slots.saturating_mul(FOLLOW_UPS_PER_SLOT))
}

/// How often stuck requests are looked for; timeouts are seconds, so 10 ms is precise enough.
pub const TIMEOUT_SCAN_NS: u64 = 10_000_000;

/// A request [`Core::scan_timeouts`] is about to fail for its timeout: `slot`, carried by
/// connection `conn` (with [`TimeoutScope::Connection`] the connection's oldest request, and
/// the driver closes `conn`; with [`TimeoutScope::Stream`] the driver resets `slot`'s stream).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Expiry {
    pub conn: usize,
    pub slot: usize,
}

/// How far ahead of its instant a request may be made ([`Core::prepare`]): far enough that a
/// source making requests in batches (a script's `request()`) calls it a few times back to
/// back, near enough that what the request carries (a time, a counter) is at most this early.
pub const AHEAD_HORIZON_NS: u64 = 1_000_000;

/// The fixed shape of one load thread, as the core needs it.
#[derive(Clone, Copy, Debug)]
pub struct CoreConfig {
    /// The first intended send (absolute ns).
    pub start_ns: u64,
    /// The end of the schedule: warm-up plus duration after the start.
    pub schedule_end_ns: u64,
    pub drain_ns: u64,
    pub timeout_ns: u64,
    /// `--event-timeout`: the longest wait between two events of a streamed response (0: none).
    pub event_timeout_ns: u64,
    /// `--stream-timeout`: the bound on a response whose first event has come (0: `timeout_ns`).
    pub stream_timeout_ns: u64,
    pub connections: usize,
    /// Requests one connection carries at once (pipeline depth or streams).
    pub slots_per_connection: usize,
    pub timeout_scope: TimeoutScope,
    /// How many prepared requests there are, and in what order they are chosen (the source
    /// the core asks unless it is given another, see [`Core::set_source`]).
    pub request_count: usize,
    pub request_order: RequestOrder,
    /// This thread's place among all streams of the schedule (threads times shards): the global
    /// sequence number of its k-th entry is `k * seq_stride + seq_lane`.
    pub seq_lane: u64,
    pub seq_stride: u64,
    /// Multi-turn conversations: the follow-ups that may wait at once (the heap allocated
    /// before the run; 0: not a conversation run), and the think time from a turn's completion
    /// to its follow-up's intended send, drawn per follow-up under `think_seed`.
    pub follow_ups: usize,
    pub think: candor_workload::think::ThinkTime,
    pub think_seed: u64,
}

impl CoreConfig {
    /// The timeout of a request whose latest stream event came at `last_event` (0: none yet):
    /// `--timeout` until its first event, then `--stream-timeout` when one is set, so that a
    /// long stream is not cut by the bound meant for the wait to its first token.
    #[inline]
    pub fn bound_for(&self, last_event: u64) -> u64 {
        if last_event != 0 && self.stream_timeout_ns != 0 {
            self.stream_timeout_ns
        } else {
            self.timeout_ns
        }
    }

    /// The configuration of the load thread `setup` describes, whose connections carry
    /// `slots_per_connection` requests at once and choose among `request_count` prepared requests.
    pub fn for_thread(
        setup: &WorkerSetup,
        slots_per_connection: usize,
        timeout_scope: TimeoutScope,
        request_count: usize,
    ) -> CoreConfig {
        let cfg = &setup.config;
        CoreConfig {
            start_ns: setup.start_ns,
            schedule_end_ns: setup.start_ns + cfg.warmup_ns + cfg.duration_ns,
            drain_ns: cfg.drain_ns,
            timeout_ns: cfg.timeout_ns,
            event_timeout_ns: cfg.event_timeout_ns,
            stream_timeout_ns: cfg.stream_timeout_ns,
            connections: setup.connections,
            slots_per_connection,
            timeout_scope,
            request_count,
            request_order: cfg.request_order,
            seq_lane: setup.seq_lane,
            seq_stride: setup.seq_stride,
            follow_ups: cfg.conversations.as_ref().map_or(0, |_| {
                follow_up_capacity(setup.connections * slots_per_connection)
            }),
            think: cfg
                .conversations
                .as_ref()
                .map_or(Default::default(), |c| c.think),
            think_seed: cfg.conversations.as_ref().map_or(0, |c| c.seed),
        }
    }
}

/// A request due now, given to a slot: the transport writes `request` on `conn`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Due {
    pub slot: usize,
    pub conn: usize,
    pub exchange: Exchange,
}

/// What the driver does after a round of events.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Plan {
    /// The run is over: call [`Core::finish`].
    Done,
    /// Wait until `wake`, or until the next send at `send_at` (`u64::MAX`: none pending a free slot).
    Wait { send_at: u64, wake: u64 },
}

/// The run's owner asks for an end: read by the driver from `Halt`, handed in as a value.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct HaltState {
    /// Stop at once: no more sends and no drain (a signal, or an objective that cannot pass).
    pub aborting: bool,
    /// The instant an early end was asked for, if one was.
    pub requested_at: Option<u64>,
}

#[derive(Clone, Copy)]
struct SlotState {
    conn: usize,
    busy: bool,
    exchange: Exchange,
    /// When this slot last became free (to tell the generator's lateness from queueing).
    free_since: u64,
    /// HTTP/2: the connection epoch on which this slot holds an open stream.
    stream: Option<u64>,
    /// Closed loop: not before this instant does this slot send again (the source's
    /// [`RequestSource::hold_ns`] when it came free).
    hold_until: u64,
    /// The instant of its streamed response's latest event (0: none yet), and whether the
    /// wait for the next one already ran past `--event-timeout` (handed to the driver once).
    last_event: u64,
    stalled: bool,
}

struct ConnBooks {
    /// Busy slots of this connection, in the order their requests were given to it.
    carried: VecDeque<usize>,
    /// When the latest connect attempt started.
    connect_started: u64,
    /// HTTP/2: streams open on the current connection, which is the `stream_epoch`-th.
    open_streams: usize,
    stream_epoch: u64,
    /// When it may be connected again after ends without an answer (`engine::backoff`).
    backoff: Backoff,
    /// A request waits for it while its back-off runs: [`Core::deferred_connect`] hands it back.
    deferred: bool,
}

/// A conversation's next turn, waiting for its intended send `due`: request `request`, under
/// its conversation's `seq` (every turn of a conversation carries the `seq` of its first).
/// `order` counts the follow-ups queued, so that of two due at the same instant the one whose
/// turn completed first goes first; the heap orders by (`due`, `order`) only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FollowUp {
    due: u64,
    order: u64,
    seq: u64,
    request: u32,
}

pub struct Core {
    cfg: CoreConfig,
    schedule: Option<Schedule>,
    schedule_end_ns: u64,
    drain_end_ns: u64,
    stopping: bool,
    ended_early: bool,
    ledger: Ledger,
    free: VecDeque<usize>,
    slots: Vec<SlotState>,
    conns: Vec<ConnBooks>,
    busy: usize,
    /// What each entry sends: the one place the core asks (see [`RequestSource`]).
    source: Box<dyn RequestSource>,
    /// Closed loop: sends made so far (the k of the global sequence number).
    closed_sends: u64,
    next_timeout_scan: u64,
    /// Some connection is deferred (see `ConnBooks::deferred`).
    any_deferred: bool,
    /// Slots whose stream waited past `--event-timeout`, for the driver to end
    /// ([`Core::take_stalled`]); sized for every slot, so it never grows.
    stalled: Vec<usize>,
    /// Multi-turn runs: follow-up turns waiting for their intended send, a min-heap by it
    /// (allocated before the run for `cfg.follow_ups`, never pushed past; see
    /// `core/conversations.rs`), and how many were ever queued (their tie order).
    follow_ups: BinaryHeap<Reverse<FollowUp>>,
    follow_ups_queued: u64,
}

impl Core {
    pub fn new(cfg: CoreConfig, schedule: Option<Schedule>, ledger: Ledger) -> Core {
        let connections = cfg.connections.max(1);
        let per = cfg.slots_per_connection.max(1);
        let slot_count = connections * per;
        let idle = Exchange {
            seq: 0,
            request: 0,
            intended: 0,
            sent: 0,
            first_byte: 0,
        };
        let slots = (0..slot_count)
            .map(|k| SlotState {
                conn: k % connections,
                busy: false,
                exchange: idle,
                free_since: 0,
                stream: None,
                hold_until: 0,
                last_event: 0,
                stalled: false,
            })
            .collect();
        let conns = (0..connections)
            .map(|_| ConnBooks {
                carried: VecDeque::with_capacity(per),
                connect_started: 0,
                open_streams: 0,
                stream_epoch: 0,
                backoff: Backoff::default(),
                deferred: false,
            })
            .collect();
        // Request `seq mod count` (every request in turn over the whole schedule, whichever
        // thread or shard sends it), or a seeded uniform draw by `seq`.
        let n = cfg.request_count.max(1);
        let source = match cfg.request_order {
            RequestOrder::Random { seed } if n > 1 => {
                PreparedSource::new(Picker::Uniform { n }, seed)
            }
            _ => PreparedSource::new(Picker::RoundRobin { n }, 0),
        };
        Core {
            schedule_end_ns: cfg.schedule_end_ns,
            drain_end_ns: cfg.schedule_end_ns + cfg.drain_ns,
            next_timeout_scan: cfg.start_ns + TIMEOUT_SCAN_NS,
            cfg,
            schedule,
            stopping: false,
            ended_early: false,
            ledger,
            free: (0..slot_count).collect(),
            slots,
            conns,
            busy: 0,
            source: Box::new(source),
            closed_sends: 0,
            any_deferred: false,
            stalled: Vec::with_capacity(slot_count),
            follow_ups: BinaryHeap::with_capacity(cfg.follow_ups),
            follow_ups_queued: 0,
        }
    }

    /// Asks `source` what every entry sends instead of choosing among the prepared requests
    /// (weighted choice, templates, a replayed trace; next, a script).
    pub fn set_source(&mut self, source: Box<dyn RequestSource>) {
        self.source = source;
    }

    /// Nothing is due before `send_at` (the next entry's send, a slot free for it), and the
    /// thread would sleep until `spin_from` and spin from there: the source may make requests
    /// ahead ([`RequestSource::prepare`]) for the entries of the schedule due within
    /// [`AHEAD_HORIZON_NS`] and before its end (a closed loop, which has no instants to look
    /// ahead to, only for the next); true when it made one. The time it is offered is all of
    /// the time to the send when the thread would spin until then anyway, and otherwise only
    /// what still leaves a sleep worth taking ([`MIN_SLEEP_NS`]) before the spin: time spent
    /// making requests ahead never turns a sleep into a spin.
    #[inline]
    pub fn prepare(&mut self, now: u64, send_at: u64, spin_from: u64) -> bool {
        if send_at == u64::MAX || send_at <= now {
            return false;
        }
        let offered = if spin_from <= now.saturating_add(MIN_SLEEP_NS) {
            send_at - now
        } else {
            spin_from - now - MIN_SLEEP_NS
        };
        let horizon = now
            .saturating_add(AHEAD_HORIZON_NS)
            .min(self.schedule_end_ns);
        let schedule = &mut self.schedule;
        let mut due = |past_next: usize| {
            past_next == 0
                || schedule
                    .as_mut()
                    .is_some_and(|s| s.due_before(horizon, past_next + 1) > past_next)
        };
        self.source.prepare(offered, &mut due)
    }

    /// The bytes of slot `slot`'s request and whether it is a HEAD request, when the source
    /// made them (`None`: send prepared request `exchange.request`).
    #[inline]
    pub fn slot_request(&self, slot: usize) -> Option<(&[u8], bool)> {
        self.source.made(slot)
    }

    /// Sets the first intended send at `start_ns`, with the schedule that starts there, once
    /// the connection pool is open and before anything was sent. A core made before the start is
    /// known is given one far ahead, so that what happens while the pool opens (connects, TLS
    /// handshakes) is booked as before the start.
    pub fn begin_at(&mut self, start_ns: u64, schedule: Option<Schedule>, warmup_ns: u64) {
        let span = self.cfg.schedule_end_ns - self.cfg.start_ns;
        self.cfg.start_ns = start_ns;
        self.cfg.schedule_end_ns = start_ns + span;
        self.schedule_end_ns = self.cfg.schedule_end_ns;
        self.drain_end_ns = self.schedule_end_ns + self.cfg.drain_ns;
        self.next_timeout_scan = start_ns + TIMEOUT_SCAN_NS;
        self.schedule = schedule;
        self.ledger.begin_at(start_ns, warmup_ns);
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn ledger_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }

    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn conn_of(&self, slot: usize) -> usize {
        self.slots[slot].conn
    }

    /// The exchange slot `slot` carries (meaningful while it is busy).
    pub fn exchange(&self, slot: usize) -> &Exchange {
        &self.slots[slot].exchange
    }

    pub fn is_busy(&self, slot: usize) -> bool {
        self.slots[slot].busy
    }

    /// Requests given to slots and not yet answered or failed.
    pub fn busy(&self) -> usize {
        self.busy
    }

    /// The slots connection `conn` carries, oldest first.
    pub fn carried(&self, conn: usize) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.conns[conn].carried.iter().copied()
    }

    /// The `k`-th oldest request connection `conn` carries.
    #[inline]
    pub fn carried_at(&self, conn: usize, k: usize) -> Option<usize> {
        self.conns[conn].carried.get(k).copied()
    }

    /// The oldest request connection `conn` carries (for HTTP/1.1, the one the next response answers).
    pub fn oldest(&self, conn: usize) -> Option<usize> {
        self.conns[conn].carried.front().copied()
    }

    pub fn stopping(&self) -> bool {
        self.stopping
    }

    pub fn has_free_slot(&self) -> bool {
        !self.free.is_empty()
    }

    /// An end asked for by the run's owner, as seen at `now`.
    pub fn halt(&mut self, now: u64, halt: HaltState) {
        let start = self.cfg.start_ns;
        if !self.stopping && halt.aborting {
            // Interrupted: no more sends, no drain; what is outstanding is reported as such.
            self.stopping = true;
            let at = halt.requested_at.map_or(now, |at| at.min(now));
            self.schedule_end_ns = self.schedule_end_ns.min(at.max(start));
            self.drain_end_ns = now;
        } else if !self.ended_early && !self.stopping {
            if let Some(at) = halt.requested_at {
                // The question of the run is answered: no more sends, the usual drain.
                self.ended_early = true;
                self.schedule_end_ns = self.schedule_end_ns.min(at.max(start));
                self.drain_end_ns = self
                    .drain_end_ns
                    .min(self.schedule_end_ns + self.cfg.drain_ns);
            }
        }
    }

    /// Hands every interval that ended by `now` to the collector.
    #[inline]
    pub fn flush_due(&mut self, now: u64) {
        self.ledger.flush_due(now);
    }

    /// The next request due at `now`, given to the first free slot; `None` when nothing is due
    /// or no slot is free (then the due stretch waits in the schedule, in order).
    #[inline]
    pub fn next_due(&mut self, now: u64) -> Option<Due> {
        loop {
            let due = self.take_due(now)?;
            if let Some(due) = due {
                return Some(due);
            }
        }
    }

    /// The next due entry given to the first free slot (`Some(Some(..))`), nothing due
    /// (`None`), or an entry whose request could not be made and failed at once in class
    /// `template` (`Some(None)`: ask again).
    #[inline]
    fn take_due(&mut self, now: u64) -> Option<Option<Due>> {
        if self.stopping || now < self.cfg.start_ns {
            return None;
        }
        let &slot = self.free.front()?;
        if self.source.halted() {
            // The source ended the run (a script's request() failed, or it called
            // thread:stop()): an abort from this instant, as the run's end it asked for will
            // be seen at the next pass; the entries after it are not its to make.
            self.halt(
                now,
                HaltState {
                    aborting: true,
                    requested_at: Some(now),
                },
            );
            return None;
        }
        let follow_up = self.due_follow_up(now);
        let (intended, seq) = match &mut self.schedule {
            _ if follow_up.is_some() => {
                let f = self.follow_ups.pop().expect("due").0;
                (f.due, f.seq)
            }
            Some(s) => {
                let t = s.peek();
                if t > now || t >= self.schedule_end_ns {
                    return None;
                }
                let seq = s.seq();
                s.advance();
                (t, seq)
            }
            None => {
                // Closed loop: the intended time is the send time.
                if now >= self.schedule_end_ns || self.slots[slot].hold_until > now {
                    return None;
                }
                let seq = self.closed_sends * self.cfg.seq_stride + self.cfg.seq_lane;
                self.closed_sends += 1;
                (now, seq)
            }
        };
        self.free.pop_front();
        self.turn_taken(intended, follow_up.is_none());
        let s = &mut self.slots[slot];
        self.ledger.intend(intended, now, s.free_since);
        let Next {
            request,
            sendable: made,
        } = match follow_up {
            // A follow-up's request is its conversation's next turn, chosen when the turn
            // before it completed.
            Some(f) => Next {
                request: f.request,
                sendable: true,
            },
            None => {
                let taken = self.schedule.as_ref().and_then(|s| s.taken_request());
                self.source.next(slot, seq, taken)
            }
        };
        self.ledger.intend_named(intended, request);
        s.busy = true;
        s.exchange = Exchange {
            seq,
            request,
            intended,
            sent: 0,
            first_byte: 0,
        };
        let conn = s.conn;
        self.busy += 1;
        self.conns[conn].carried.push_back(slot);
        if !made {
            // Booked like any request, failed before a byte of it is written: the books stay
            // whole and the connection never sees it. Unless the run's stop kept the source
            // from making it: then it is unfinished (queued, never sent), not the request's
            // fault.
            if self.source.unmade_by_stop() {
                let e = self.release(slot, now);
                self.ledger.unfinished(&e, now);
                self.turn_cut(&e);
            } else {
                self.fail(slot, FailureClass::Template, now);
            }
            return Some(None);
        }
        Some(Some(Due {
            slot,
            conn,
            exchange: s.exchange,
        }))
    }

    /// Whether the schedule still holds entries before its end (due or not).
    fn backlog_due(&self) -> bool {
        self.schedule
            .as_ref()
            .is_some_and(|s| s.peek() < self.schedule_end_ns)
            || self.follow_up_at() < self.schedule_end_ns
    }

    /// After a round of events at `now`: is the run over, and if not, when must the driver wake?
    /// (The next send if a slot is free to take it, the interval boundary, the timeout scan, or
    /// the end of the schedule or drain.)
    pub fn plan(&self, now: u64) -> Plan {
        // A stop (a signal, an abort) sends nothing more and drains nothing: done at once, even
        // before the start (a --start-at ahead must not hold a stopped run until it comes).
        if (self.stopping && now >= self.drain_end_ns)
            || (now >= self.schedule_end_ns
                && (now >= self.drain_end_ns || (self.busy == 0 && !self.backlog_due())))
        {
            return Plan::Done;
        }
        let end = if now < self.schedule_end_ns {
            self.schedule_end_ns
        } else {
            self.drain_end_ns
        };
        let mut wake = self
            .ledger
            .next_boundary_ns
            .min(self.next_timeout_scan)
            .min(self.next_retry())
            .min(end);
        if now < self.cfg.start_ns {
            // Waiting for a start ahead: wake as often as the timeout scan would, so that a stop
            // asked for meanwhile is seen within that time.
            wake = wake.min(now + TIMEOUT_SCAN_NS);
        }
        let mut send_at = u64::MAX;
        if !self.free.is_empty() && !self.stopping {
            match &self.schedule {
                Some(s) if s.peek() < self.schedule_end_ns => {
                    send_at = s.peek().max(self.cfg.start_ns)
                }
                Some(_) => {}
                None if now < self.schedule_end_ns => {
                    let hold = self.free.front().map_or(0, |&k| self.slots[k].hold_until);
                    send_at = self.cfg.start_ns.max(now).max(hold)
                }
                None => {}
            }
            let follow_up = self.follow_up_at();
            if follow_up < self.schedule_end_ns {
                send_at = send_at.min(follow_up.max(self.cfg.start_ns));
            }
        }
        Plan::Wait { send_at, wake }
    }

    /// Closes the books at `now`: every request still carried is unfinished (sent or queued),
    /// the never-sent rest of the schedule is counted entry by entry (see [`Ledger::finish`],
    /// which reads `clock` only to bound that count after a stop), and the two phases come back.
    pub fn finish(
        &mut self,
        now: u64,
        clock: &dyn Fn() -> u64,
        stopping: &dyn Fn() -> bool,
    ) -> [PhaseAcc; 2] {
        for k in 0..self.slots.len() {
            if self.slots[k].busy {
                let e = self.slots[k].exchange;
                self.ledger.unfinished(&e, now);
                self.turn_cut(&e);
            }
        }
        self.close_conversations(now);
        self.ledger.finish(
            self.schedule.as_mut(),
            self.schedule_end_ns,
            now,
            clock,
            stopping,
        )
    }
}
