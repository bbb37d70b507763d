//! The one I/O driver of a load thread, for every protocol (`crate::seam::Protocol`:
//! HTTP/1.1 and raw TCP carried in order, HTTP/2 framed): mio sockets, a timerfd and the final
//! spin. Every decision (what is due, on which slot, what a timeout or a drop fails, when the run
//! ends) is the core's; this loop reads the clock, moves bytes, and reports what happened. A
//! protocol turns bytes into completions; how it carries requests ([`Carriage`]) picks the write
//! and read steps: `driver/in_order.rs` writes each request's bytes as prepared and feeds replies
//! to the protocol one response per request, `driver/framed.rs` flushes what the protocol framed
//! into each connection's out buffer and hands it what was read.
//!
//! First the pool: every connection is opened (its TLS handshake done, and a framed protocol's
//! greeting answered), at most [`crate::pool::CONNECTS_IN_FLIGHT`] at a time, and reported to
//! the start gate; the schedule begins at the instant the run sets once every thread's pool is
//! ready.
//!
//! Then the loop: hand the core `now` (early-end requests, interval flushes), write every request
//! it says is due, let it scan for timeouts, and wait as the [`Pacer`] says: sleep on the timerfd
//! (one arm per wait, however many sends fell due in the last pass) or, when the next send is too
//! close for a sleep to be worth it or on time, spin with non-blocking polls so that responses
//! are still timed precisely. Sends that fall due while a batch of events is handled go out
//! between events, not after the batch.

use crate::config::LoadConfig;
use crate::core::{Core, CoreConfig, HaltState, Plan, TimeoutScope};
use crate::ledger::{Booked, Ledger};
use crate::pool::{GateTicket, Opener, PoolReport, TIMER};
use crate::rxstamp::{self, ClockOffset};
use crate::schedule::Schedule;
use crate::seam::{AlpnAnswer, Carriage, Fitting, Protocol, Transport};
use crate::shared::{FailureClass, Halt, PhaseAcc, Prepared, WorkerError, WorkerSetup};
use crate::socket_steps;
use crate::transport::{start_tls, ConnectState, Handshake, Sock};
use candor_core::exact_sleep::sleep_until_absolute;
use candor_core::sleep_or_spin::{listen, poll_sockets};
use candor_core::timerfd::TimerFd;
use candor_core::{now_ns, Listen, Pacer, Pacing, Wait};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// Responses larger than this are fine (bodies stream through); only a head must fit.
const READ_BUFFER: usize = 64 * 1024;
/// Reads of one connection per event or pass (1 MiB with `READ_BUFFER`): a server that sends
/// without pause (a ping flood, an endless body) would otherwise keep the loop in one
/// connection's reads, and the run's clock with it: no send, no timeout scan, no stop or end
/// check while it lasts. A connection cut short is read again in the next pass (`unread`).
pub const READS_PER_PASS: usize = 16;
/// A framed connection's out buffer, as first reserved (requests of one pass, acks, windows).
const OUT_BUFFER: usize = 64 * 1024;
/// How often connects that take too long are looked for when timeouts are per request (as the
/// core's timeout scan).
const CONNECT_SCAN_NS: u64 = crate::core::TIMEOUT_SCAN_NS;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum ConnState {
    /// No socket; a request given to it starts a connect.
    Down,
    /// TCP connect in progress.
    Connecting,
    /// TLS handshake in progress.
    Handshaking,
    /// A framed protocol greeted the server and waits for its first word ([`crate::seam::Greeting`]).
    Greeting,
    /// Ready for requests.
    Open,
}

pub struct Conn<P> {
    pub sock: Option<Sock>,
    pub state: ConnState,
    /// Of the requests the core gave this connection (oldest first), this many are fully
    /// written, and the next one up to `write_off`.
    pub written: usize,
    pub write_off: usize,
    /// When the latest connect call was made, and when TCP was connected.
    pub connect_called: u64,
    tcp_connected: u64,
    pub protocol: P,
    pub buf: Box<[u8]>,
    pub buf_len: usize,
    /// The last exchange booked on this connection while no other request was written after
    /// it: bytes arriving now are not an answer to anything, and make it a protocol error.
    answered: Option<Booked>,
    /// The server sent bytes before any request was written on this connection: the next
    /// request given to it fails as `parse` (the books need a request to charge).
    pub stray: bool,
    /// Framed: what the protocol wrote for the server, sent up to `out_off`.
    pub out: Vec<u8>,
    out_off: usize,
    /// Framed: `out` grew in this pass; in `Driver::dirty`, written once at its end.
    dirty: bool,
    /// Its reads stopped at [`READS_PER_PASS`] with more perhaps waiting: in `Driver::unread`.
    unread: bool,
}

/// Runs one load thread (each connection's [`Protocol`] made by `protocol`): opens its pool, reports it through `ticket`, and, from the start the run sets
/// (with the schedule `schedule_at` makes for it), runs to the end of the schedule plus the
/// drain; returns its two phases (0 = warm-up, 1 = measured).
pub fn run_worker<P: Protocol>(
    setup: WorkerSetup,
    tls: Option<Arc<rustls::ClientConfig>>,
    ticket: GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<Schedule>, crate::shared::WorkerError>,
    protocol: impl Fn() -> P,
) -> Result<[PhaseAcc; 2], crate::shared::WorkerError> {
    let mut driver = Driver::new(setup, tls, protocol)?;
    let report = crate::pool::open(&mut driver);
    let start_ns = ticket
        .report_and_wait(report)
        .ok_or(crate::shared::WorkerError::NoStart)?;
    if let Some(e) = driver.fatal.take() {
        return Err(e);
    }
    let warmup_ns = driver.config.warmup_ns;
    driver
        .core
        .begin_at(start_ns, schedule_at(start_ns)?, warmup_ns);
    driver.run()
}

pub struct Driver<P> {
    config: Arc<LoadConfig>,
    pub requests: Arc<[Prepared]>,
    /// What a request filled by the core's maker is, for the protocol: not HEAD, HEAD.
    filled: [Prepared; 2],
    tls: Option<Arc<rustls::ClientConfig>>,
    pub conns: Vec<Conn<P>>,
    poll: Poll,
    timer: TimerFd,
    pub core: Core,
    halt: Halt,
    /// While the pool opens (before the start is known): how it goes.
    pool: Option<PoolReport>,
    /// Reads return the kernel's receive timestamp ([`rxstamp`]), and a response is complete
    /// at the arrival of its last bytes, not when it is read: open loop, plain sockets, one
    /// request per connection at a time (so the last packet a read copies from is the last of
    /// the response it completes). Responses wait for a later wake-up only while this holds;
    /// it is cleared for good by a read that came without a stamp.
    stamped: bool,
    /// Reads go through `recvmsg` and take the kernel's stamp whenever it gives one (set with
    /// `stamped` at the start, never cleared: a read without a stamp is timed when it was read,
    /// and the reads after it that have one are still timed by it).
    stamp_reads: bool,
    /// A read has returned a stamp, so the kernel stamps what arrives (it starts to shortly
    /// after the first socket asks): only then may responses wait for a later wake-up.
    stamps_seen: bool,
    clock_offset: ClockOffset,
    /// Some connection may be owed a socket event (a connect or TLS handshake in progress, a
    /// write the socket did not take): checked, and cleared, before a wait on the timer alone.
    pub socket_owed: bool,
    /// Framed: connections whose out buffer grew in this pass, so that the requests of one
    /// pass leave in one system call per connection (as h2load writes them).
    dirty: Vec<usize>,
    /// Framed, per-request timeouts: slots the core's timeout scan failed.
    expired: Vec<usize>,
    /// Connections whose reads stopped at [`READS_PER_PASS`]: read again in each pass (an
    /// edge-triggered socket says nothing more of bytes it already announced), and the loop
    /// polls without sleeping while any is.
    pub unread: Vec<usize>,
    /// When connects that take too long are next looked for (per-request timeouts do not
    /// bound a connect, as the connection scope does).
    next_connect_scan: u64,
    /// A condition that makes the run meaningless (the server does not speak the protocol).
    fatal: Option<WorkerError>,
    /// Where connections go: the target's address, or a script's `thread.addr`.
    connect_to: std::net::SocketAddr,
}

impl<P: Protocol> Driver<P> {
    pub fn new(
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        protocol: impl Fn() -> P,
    ) -> io::Result<Driver<P>> {
        let framed = P::CARRIAGE == Carriage::Framed;
        let conns: Vec<Conn<P>> = (0..setup.connections)
            .map(|_| Conn {
                sock: None,
                state: ConnState::Down,
                written: 0,
                write_off: 0,
                connect_called: 0,
                tcp_connected: 0,
                protocol: protocol(),
                buf: vec![0u8; READ_BUFFER].into_boxed_slice(),
                buf_len: 0,
                answered: None,
                stray: false,
                out: Vec::with_capacity(if framed { OUT_BUFFER } else { 0 }),
                out_off: 0,
                dirty: false,
                unread: false,
            })
            .collect();
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let (per_connection, scope) = (setup.slots.per_connection, setup.slots.timeout);
        let cfg = CoreConfig::for_thread(&setup, per_connection, scope, setup.requests.len());
        let ledger = Ledger::new(&setup);
        let mut core = Core::new(cfg, setup.schedule, ledger);
        let mut conns = conns;
        let mut connect_to = setup.config.target.addr;
        if let Some(compiled) = &setup.compiled {
            let config = &setup.config;
            // The first failed responses' bodies (only failing or checked bodies are copied).
            let accept: Arc<[candor_wire::status::StatusSet]> = compiled.accept.clone().into();
            let checks = crate::request_plan::has_checks(config).then(|| {
                Arc::<[candor_workload::check::ResponseChecks]>::from(compiled.checks.clone())
            });
            let slots = core.slot_count();
            let script = crate::request_plan::script_source(config, slots);
            let source = match &script {
                Some(_) => None,
                None => crate::request_plan::request_source(config, compiled, slots),
            };
            let fitting = Fitting {
                accept,
                checks,
                max_filled_bytes: source.as_ref().map(|s| s.max_request_bytes()),
                stream: config.stream,
            };
            for c in &mut conns {
                c.protocol.fit(&fitting);
            }
            if let Some(script) = script {
                if let Some(addr) = script.redirect() {
                    // The script's `thread.addr`: this thread's connections go there.
                    connect_to = addr;
                }
                // A script's response() sees every connection's responses.
                for c in &mut conns {
                    c.protocol.set_script(&mut || script.judge());
                }
                core.set_source(Box::new(script));
            } else if let Some(source) = source {
                core.set_source(Box::new(source));
            } else if let Some(source) = crate::request_plan::conversation_source(config) {
                core.set_source(Box::new(source));
            }
        }
        // Kernel receive stamps time a response only when one request at a time is in flight on
        // a connection whose bytes are read as they come (see `stamped`); never in a multi-turn
        // run, where a response that waited for a later wake-up would hold back the next turn
        // its completion makes due.
        let stamp = !framed
            && setup.config.is_open_loop()
            && tls.is_none()
            && per_connection == 1
            && setup.config.conversations.is_none();
        let slots = core.slot_count();
        let marker = |head| Prepared {
            bytes: Box::default(),
            head,
        };
        Ok(Driver {
            connect_to,
            filled: [marker(false), marker(true)],
            conns,
            poll,
            timer,
            tls: tls.clone(),
            core,
            halt: Halt {
                signal: setup.stop,
                end: setup.end,
            },
            pool: None,
            stamped: stamp,
            stamp_reads: stamp,
            stamps_seen: false,
            clock_offset: ClockOffset::measure(),
            socket_owed: true,
            dirty: Vec::with_capacity(if framed { setup.connections } else { 0 }),
            expired: Vec::with_capacity(if framed { slots } else { 0 }),
            unread: Vec::with_capacity(setup.connections),
            // Connects are bounded by the core's scan when timeouts are per connection.
            next_connect_scan: match scope {
                TimeoutScope::Stream => 0,
                TimeoutScope::Connection => u64::MAX,
            },
            fatal: None,
            requests: setup.requests,
            config: setup.config,
        })
    }

    /// Runs the loop to its end. A panic in it (a bug: any cause) does not lose the thread's
    /// books: the run is ended for every thread (as an abort ends it), this thread's books are
    /// closed as they stand, and the failure is named in the results. Should closing them panic
    /// too, the thread fails and `load_run` keeps the other threads' results.
    fn run(mut self) -> Result<[PhaseAcc; 2], WorkerError> {
        let mut pacer = Pacer::new(match self.config.spin_ns {
            Some(spin_ns) => Pacing::Fixed { spin_ns },
            None => Pacing::Adaptive,
        });
        let looped =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_loop(&mut pacer)));
        match looped {
            Ok(Ok(())) => Ok(self.finish(pacer.stats())),
            Ok(Err(e)) => Err(e),
            Err(payload) => {
                self.halt
                    .end
                    .request(candor_core::results::StopReason::Failure);
                let message = crate::shared::panic_message(&*payload);
                let warning = crate::shared::thread_failure_warning(
                    std::thread::current().name().unwrap_or("?"),
                    &message,
                );
                let stats = pacer.stats();
                // What was due after now is not part of this run (as after an abort).
                let now = now_ns();
                self.core.halt(
                    now,
                    HaltState {
                        aborting: true,
                        requested_at: Some(now),
                    },
                );
                let finished =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.finish(stats)));
                let mut phases = finished.map_err(|_| WorkerError::PanickedWith(message))?;
                phases[1].warnings.push(warning);
                Ok(phases)
            }
        }
    }

    fn run_loop(&mut self, pacer: &mut Pacer) -> Result<(), WorkerError> {
        let mut events = Events::with_capacity(1024);
        // Set after a non-blocking poll that found nothing: the start of that idle spin.
        let mut idle_since: Option<u64> = None;
        let mut last_poll = 0;
        let mut offset_measured = now_ns();
        loop {
            let now = now_ns();
            if let Some(t) = idle_since.take() {
                pacer.spun(now.saturating_sub(t));
            }
            if self.stamp_reads && now - offset_measured >= ClockOffset::REFRESH_NS {
                self.clock_offset = ClockOffset::measure();
                offset_measured = now;
            }
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            let sent = self.turn(now);
            let (send_at, wake) = match self.core.plan(now) {
                Plan::Done => break,
                Plan::Wait { send_at, wake } => (send_at, wake.min(self.next_connect_scan)),
            };
            let wake = match P::WAKES {
                true => wake.min(self.protocol_wake()),
                false => wake,
            };
            if self
                .core
                .prepare(now, send_at, send_at.saturating_sub(pacer.margin_ns()))
            {
                // The next request was made ahead (a script's request()): time has passed.
                continue;
            }
            let mut until = wake;
            let mut spin = wake <= now;
            if send_at != u64::MAX {
                match pacer.wait(now, send_at) {
                    Wait::Spin => spin = true,
                    Wait::Sleep { until_ns } => until = until.min(until_ns),
                }
            }
            let stamped = self.stamped && self.stamps_seen;
            let pending = send_at != u64::MAX;
            let owed = stamped && pending && self.socket_owed && self.owes_socket_event();
            // Reads cut short wait in the sockets: poll them at once, without sleeping.
            let reads_owed = !self.unread.is_empty();
            spin |= reads_owed;
            let listening = match reads_owed {
                true => Listen::Sockets,
                false => listen(stamped, pending, owed),
            };
            let mut clock_spun = false;
            let mut clock_slept = false;
            let mut polling = true;
            let timeout = match (spin, listening) {
                // Spin stretch: poll without blocking so responses are still timed precisely.
                (true, Listen::Sockets) => Some(std::time::Duration::ZERO),
                // Reads are stamped: spin on the clock alone, without a system call, until the
                // send, and read the sockets only every so often.
                (true, Listen::TimerOnly) => {
                    let target = send_at.min(wake);
                    let mut t = now;
                    while t < target {
                        std::hint::spin_loop();
                        t = now_ns();
                    }
                    pacer.spun(t - now);
                    clock_spun = true;
                    // Before a timeout scan or an interval's end, read what has arrived: a
                    // response in by then counts as in by then.
                    polling = t >= wake || poll_sockets(t, last_poll);
                    Some(std::time::Duration::ZERO)
                }
                (false, Listen::Sockets) => {
                    self.timer.arm(until);
                    None
                }
                // One wake-up for the send, from one system call (no timer to arm); what arrived
                // meanwhile is read with it.
                (false, Listen::TimerOnly) => {
                    sleep_until_absolute(until);
                    let woke = now_ns();
                    pacer.woke(until, woke);
                    clock_slept = true;
                    // What arrived during the sleep is read before the send: a connection the
                    // server closed meanwhile (an idle keep-alive timeout) must be seen closed,
                    // and reopened, before a request is written to it. The loop's next turn
                    // sends; the reads cost that send a few microseconds of lag, but no request
                    // is charged a failure that was only an idle connection's close.
                    Some(std::time::Duration::ZERO)
                }
            };
            if polling {
                if let Err(e) = self.poll.poll(&mut events, timeout) {
                    if e.kind() != io::ErrorKind::Interrupted {
                        break;
                    }
                }
                last_poll = now_ns();
            } else {
                events.clear();
            }
            if !spin
                && !clock_slept
                && !events.is_empty()
                && !events.iter().any(|ev| ev.token() == TIMER)
            {
                pacer.socket_woke();
            }
            if spin && !clock_spun && !sent && events.is_empty() && !reads_owed {
                // Nothing was sent or received in this turn: it was pacing's cost.
                idle_since = Some(now);
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    // (After a clock sleep this is an older deadline's expiry: not this wait's.)
                    if !spin && !clock_slept {
                        // The timer's lateness teaches the pacer this machine's wake-ups.
                        pacer.woke(until, now_ns());
                    }
                    self.timer.fired();
                    continue;
                }
                self.handle_event(ev);
                if send_at != u64::MAX && !clock_slept {
                    // A send that fell due while this batch is handled leaves now, not after it.
                    let now = now_ns();
                    if now >= send_at {
                        while let Some(due) = self.core.next_due(now) {
                            self.dispatch(due.conn, due.slot, now);
                        }
                        if P::CARRIAGE == Carriage::Framed {
                            self.sends_deferred(now);
                            self.flush_dirty(now);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One pass of the loop's decisions at `now`: what is due is written (`Driver::send_due`),
    /// then the core's timeout scan closes the connections whose requests it failed (or, with
    /// per-request timeouts, the protocol tells the server of each one); whether anything was
    /// sent.
    pub fn turn(&mut self, now: u64) -> bool {
        let sent = self.send_due(now);
        if P::WAKES {
            self.wake_protocols(now);
        }
        self.read_unread();
        match self.core.timeout_scope() {
            TimeoutScope::Connection => self.core.scan_timeouts(now, |x| {
                let c = &mut self.conns[x.conn];
                // Asked before the close forgets the response under way.
                let outcome = c.protocol.observer().and_then(|o| o.timed_out());
                close(c, &self.poll);
                outcome
            }),
            TimeoutScope::Stream => self.scan_request_timeouts(now),
        }
        while let Some(slot) = self.core.take_stalled() {
            self.event_timeout(slot, now);
        }
        sent
    }

    /// Reads again the connections whose reads stopped at [`READS_PER_PASS`] (each at most that
    /// many again; one still not drained stays in the list for the next pass). Until blocked:
    /// the event that announced these bytes may also have announced the peer's close, and comes
    /// once, so a short read here does not prove the end of stream read; the `WouldBlock` this
    /// costs is one system call per connection that was cut short, which is rare.
    fn read_unread(&mut self) {
        let n = self.unread.len();
        for k in 0..n {
            let i = self.unread[k];
            self.conns[i].unread = false;
            if self.conns[i].sock.is_none() {
                continue;
            }
            match (P::CARRIAGE, self.conns[i].state) {
                (Carriage::Framed, ConnState::Greeting | ConnState::Open) => {
                    self.read_framed(i, true)
                }
                (Carriage::InOrder, ConnState::Open) => self.read_responses(i, true),
                _ => {}
            }
        }
        self.unread.drain(..n);
    }

    /// Connection `i` read [`READS_PER_PASS`] times in a row without draining its socket: the
    /// rest is read in the next pass.
    pub fn read_cut_short(&mut self, i: usize) {
        if !self.conns[i].unread {
            self.conns[i].unread = true;
            self.unread.push(i);
        }
    }

    /// Hands the core `now` (an end asked for, interval flushes) and writes every request due by
    /// then; whether any was.
    fn send_due(&mut self, now: u64) -> bool {
        let halt = HaltState {
            aborting: self.halt.aborting(),
            requested_at: self.halt.end.requested().map(|(_, at)| at),
        };
        self.core.halt(now, halt);
        self.core.flush_due(now);
        let mut sent = false;
        while let Some(due) = self.core.next_due(now) {
            self.dispatch(due.conn, due.slot, now);
            sent = true;
        }
        self.sends_deferred(now);
        if P::CARRIAGE == Carriage::Framed {
            self.flush_dirty(now);
        }
        sent
    }

    /// Connects the connections whose back-off ran out, with requests waiting on them.
    fn sends_deferred(&mut self, now: u64) {
        while let Some(i) = self.core.deferred_connect(now) {
            if self.conns[i].state == ConnState::Down {
                self.start_connect(i, now);
            }
        }
    }

    /// Whether some connection waits for a socket event (see `socket_owed`), which a wait on
    /// the timer alone would not see; once none does, the flag is cleared.
    fn owes_socket_event(&mut self) -> bool {
        let owed = self.conns.iter().enumerate().any(|(i, c)| match c.state {
            ConnState::Connecting | ConnState::Handshaking | ConnState::Greeting => true,
            ConnState::Open => self.core.carried_at(i, c.written).is_some(),
            ConnState::Down => false,
        });
        self.socket_owed = owed;
        owed
    }

    /// The core gave slot `slot` of connection `i` a request.
    fn dispatch(&mut self, i: usize, slot: usize, now: u64) {
        let c = &mut self.conns[i];
        if c.stray {
            c.stray = false;
            self.core.fail(slot, FailureClass::Parse, now);
            return;
        }
        match c.state {
            ConnState::Open => match P::CARRIAGE {
                Carriage::InOrder => self.write_requests(i, now),
                Carriage::Framed => self.send_framed(i, now),
            },
            // A connection that keeps failing is tried again only after its back-off; the
            // request waits meanwhile, and its wait is send lag.
            ConnState::Down if self.core.may_connect(i, now) => self.start_connect(i, now),
            ConnState::Down => {}
            // Written as soon as the connection is ready; the wait counts against it.
            ConnState::Connecting | ConnState::Handshaking | ConnState::Greeting => {}
        }
    }

    pub fn start_connect(&mut self, i: usize, now: u64) {
        self.core.connecting(i, now);
        self.conns[i].connect_called = now;
        self.socket_owed = true;
        let opened = match P::TRANSPORT {
            Transport::Stream => socket_steps::connect(self.connect_to, &self.poll, i),
            Transport::Datagram => socket_steps::connect_datagram(self.connect_to, &self.poll, i),
        };
        let Some(sock) = opened else {
            return self.connect_failed(i, FailureClass::Connect, now);
        };
        if self.stamped && rxstamp::enable(sock.as_raw_fd()).is_err() {
            self.stamped = false;
        }
        let c = &mut self.conns[i];
        c.sock = Some(sock);
        c.state = ConnState::Connecting;
    }

    fn handle_event(&mut self, ev: &mio::event::Event) {
        let i = ev.token().0;
        // A datagram socket reports an ICMP refusal as an error event alone: the read returns it.
        let readable = ev.is_readable()
            || ev.is_read_closed()
            || (P::TRANSPORT == Transport::Datagram && ev.is_error());
        let writable = ev.is_writable() || ev.is_error();
        if i >= self.conns.len() || self.conns[i].sock.is_none() {
            return;
        }
        match self.conns[i].state {
            ConnState::Connecting => {
                if writable || readable {
                    self.finish_connect(i, now_ns());
                }
            }
            ConnState::Handshaking => self.drive_handshake(i, now_ns()),
            ConnState::Greeting | ConnState::Open if P::CARRIAGE == Carriage::Framed => {
                let now = now_ns();
                if writable {
                    self.flush(i, now);
                }
                if readable && self.conns[i].sock.is_some() {
                    self.read_framed(i, ev.is_read_closed());
                }
            }
            ConnState::Greeting => {}
            ConnState::Open => {
                // An edge-triggered event of an open socket says writable almost every time;
                // the clock is read only when there is something to write (or TLS to flush).
                let c = &self.conns[i];
                let owes_write = self.core.carried_at(i, c.written).is_some()
                    || !matches!(c.sock, Some(Sock::Plain(_)));
                if writable && owes_write {
                    self.write_requests(i, now_ns());
                }
                if readable && self.conns[i].sock.is_some() {
                    self.read_responses(i, ev.is_read_closed());
                }
            }
            ConnState::Down => {}
        }
    }

    pub fn finish_connect(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        match sock.connect_state() {
            ConnectState::InProgress => return,
            ConnectState::Failed => return self.connect_failed(i, FailureClass::Connect, now),
            ConnectState::Connected => {}
        }
        c.tcp_connected = now;
        self.core.connected(now);
        if let Some(tls) = &self.tls {
            if start_tls(&mut c.sock, tls, &self.config.target.host) {
                c.state = ConnState::Handshaking;
                self.drive_handshake(i, now);
            } else {
                self.connect_failed(i, FailureClass::Connect, now);
            }
        } else {
            self.transport_up(i, now);
        }
    }

    /// Connection `i`'s byte stream (TCP, and TLS over it) is up at `now`: an in-order protocol
    /// is open and written to at once; a framed one greets the server first.
    fn transport_up(&mut self, i: usize, now: u64) {
        match P::CARRIAGE {
            Carriage::InOrder => {
                let c = &mut self.conns[i];
                c.state = ConnState::Open;
                if let Some(p) = &mut self.pool {
                    p.ready(now - c.connect_called);
                }
                self.write_requests(i, now);
            }
            Carriage::Framed => self.greet(i, now),
        }
    }

    /// Connection `i` failed before it was open, as `kind`.
    fn connect_failed(&mut self, i: usize, kind: FailureClass, now: u64) {
        match P::CARRIAGE {
            Carriage::InOrder => self.fail_connection(i, kind, now),
            Carriage::Framed => self.framed_connect_failed(i, kind, now),
        }
    }

    fn drive_handshake(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        let answer = match sock.handshake() {
            Handshake::Waiting => return,
            Handshake::Failed => return self.connect_failed(i, FailureClass::Connect, now),
            Handshake::AlpnRefused => AlpnAnswer::Refused,
            Handshake::Done => AlpnAnswer::Chose(sock.alpn_protocol()),
        };
        // A server that does not speak the protocol must be named, and the run ends.
        if let Err(e) = c.protocol.alpn(answer, &self.config) {
            self.fatal.get_or_insert(e);
            return self.connect_failed(i, FailureClass::Connect, now);
        }
        if answer == AlpnAnswer::Refused {
            return self.connect_failed(i, FailureClass::Connect, now);
        }
        let handshake = now.saturating_sub(c.tcp_connected);
        self.core.tls_handshake(handshake, now);
        self.transport_up(i, now);
        // Application data may have arrived with the last handshake flight.
        if self.conns[i].sock.is_some() {
            match P::CARRIAGE {
                Carriage::InOrder => self.read_responses(i, true),
                Carriage::Framed => self.read_framed(i, true),
            }
        }
    }

    /// `n` more bytes were read into connection `i`'s buffer, arrived at `now`: the core counts
    /// them and the protocol handles them. False when the connection was closed.
    pub fn received(&mut self, i: usize, n: usize, now: u64) -> bool {
        match P::CARRIAGE {
            Carriage::InOrder => self.received_in_order(i, n, now),
            Carriage::Framed => self.received_framed(i, n, now),
        }
    }

    /// Slot `slot`'s streamed response waited past `--event-timeout` for its next event.
    fn event_timeout(&mut self, slot: usize, now: u64) {
        match P::CARRIAGE {
            Carriage::InOrder => self.event_timeout_in_order(slot, now),
            Carriage::Framed => self.event_timeout_framed(slot, now),
        }
    }

    /// The server closed connection `i` (its end of stream was read at `now`).
    pub fn end_of_stream(&mut self, i: usize, now: u64) {
        match P::CARRIAGE {
            Carriage::InOrder => self.end_of_stream_in_order(i, now),
            Carriage::Framed => self.end_of_stream_framed(i, now),
        }
    }

    /// Accounts for everything still outstanding, says goodbye on the connections still up
    /// (as far as their sockets take it at once), then hands back the totals with what the
    /// protocol saw that the results must name.
    pub fn finish(mut self, pacing: candor_core::PaceStats) -> [PhaseAcc; 2] {
        self.book_unfinished_streams();
        for c in &self.conns {
            if let Some(w) = c.protocol.end_warning() {
                let warnings = &mut self.core.ledger_mut().phases[1].warnings;
                if !warnings.iter().any(|seen| seen == w) {
                    warnings.push(w.into());
                }
            }
        }
        let phases = final_phases(&mut self.core, &self.halt, pacing);
        for c in &mut self.conns {
            if let Some(sock) = c.sock.as_mut() {
                c.protocol.goodbye(&mut c.out);
                if c.out_off < c.out.len() {
                    sock.write_now(&c.out[c.out_off..]);
                }
            }
            close(c, &self.poll);
        }
        phases
    }
}

impl<P: Protocol> Driver<P> {
    /// The run is ending: each stream still under way keeps what it delivered (its first
    /// event, first token and events), as a stream ended any other way does; its request stays
    /// unfinished ([`Core::finish`]).
    pub fn book_unfinished_streams(&mut self) {
        let lanes = self.conns.len();
        for i in 0..self.conns.len() {
            let mut k = 0;
            while let Some(slot) = self.core.carried_at(i, k) {
                k += 1;
                if let Some(o) = self.conns[i].protocol.unfinished_stream(slot / lanes) {
                    self.core.stream_outcome(slot, &o);
                }
            }
        }
    }
}

/// The books of a thread whose loop ended: the core accounts for everything still outstanding (as cut off by an abort when the run is
/// aborting), and the measured phase carries the loop's `pacing`.
pub fn final_phases(core: &mut Core, halt: &Halt, pacing: candor_core::PaceStats) -> [PhaseAcc; 2] {
    let mut phases = core.finish(now_ns(), &now_ns, &|| halt.aborting());
    phases[1].pacing = pacing;
    phases
}

impl<P: Protocol> Opener for Driver<P> {
    fn connection_count(&self) -> usize {
        self.conns.len()
    }
    fn opening(&self, i: usize) -> bool {
        matches!(
            self.conns[i].state,
            ConnState::Connecting | ConnState::Handshaking | ConnState::Greeting
        )
    }
    fn start_connect(&mut self, i: usize, now: u64) {
        Driver::start_connect(self, i, now)
    }
    fn given_up(&self) -> bool {
        self.halt.aborting() || self.fatal.is_some()
    }
    fn handle_event(&mut self, ev: &mio::event::Event) {
        Driver::handle_event(self, ev)
    }
    fn waits(&mut self) -> (&mut Poll, &mut TimerFd) {
        (&mut self.poll, &mut self.timer)
    }
    fn report(&mut self) -> &mut Option<PoolReport> {
        &mut self.pool
    }
    fn timeout_ns(&self) -> u64 {
        self.config.timeout_ns
    }
}

/// Closes a connection's socket and forgets its partial state (not its books: the core's).
fn close<P: Protocol>(c: &mut Conn<P>, poll: &Poll) {
    socket_steps::release(&mut c.sock, poll);
    c.state = ConnState::Down;
    c.answered = None;
    c.buf_len = 0;
    c.write_off = 0;
    c.written = 0;
    c.out.clear();
    c.out_off = 0;
    c.protocol.reset();
}

mod framed;
#[cfg(test)]
mod framed_sim;
mod in_order;
#[cfg(any(test, feature = "sim"))]
pub mod rig;
#[cfg(test)]
mod wake_sim;
