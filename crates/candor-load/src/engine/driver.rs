//! The I/O of one load thread for the byte-stream protocols (HTTP/1.1 plain or TLS, raw TCP):
//! mio sockets, a timerfd and the final spin. Every decision (what is due, on which slot, what
//! a timeout or a drop fails, when the run ends) is the core's; this loop reads the clock,
//! moves bytes, and reports what happened.
//!
//! First the pool: every connection is opened (and its TLS handshake done), at most
//! [`CONNECTS_IN_FLIGHT`] at a time, and reported to the start gate; the schedule begins at the
//! instant the run sets once every thread's pool is ready.
//!
//! Then the loop: hand the core `now` (early-end requests, interval flushes), write every request
//! it says is due, let it scan for timeouts, and wait as the [`Pacer`] says: sleep on the timerfd
//! (one arm per wait, however many sends fell due in the last pass) or, when the next send is too
//! close for a sleep to be worth it or on time, spin with non-blocking polls so that responses
//! are still timed precisely. Sends that fall due while a batch of events is handled go out
//! between events, not after the batch.

use crate::config::LoadConfig;
use crate::engine::backoff::Fault;
use crate::engine::core::{Core, CoreConfig, HaltState, Plan, TimeoutScope};
use crate::engine::ledger::{Booked, Ledger};
use crate::engine::rxstamp::{self, ClockOffset};
use crate::engine::socket_steps;
use crate::pool::{GateTicket, Opener, PoolReport, TIMER};
use crate::protocol::http1::Progress;
use crate::protocol::Protocol;
use crate::protocol::ProtocolKind;
use crate::schedule::Schedule;
use crate::shared::{Failure, Halt, PhaseAcc, Prepared, WorkerSetup};
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

#[derive(Clone, Copy, PartialEq, Debug)]
enum ConnState {
    /// No socket; a request given to it starts a connect.
    Down,
    /// TCP connect in progress.
    Connecting,
    /// TLS handshake in progress.
    Handshaking,
    /// Ready for requests.
    Open,
}

struct Conn<P> {
    sock: Option<Sock>,
    state: ConnState,
    /// Of the requests the core gave this connection (oldest first), this many are fully
    /// written, and the next one up to `write_off`.
    written: usize,
    write_off: usize,
    /// When the latest connect call was made, and when TCP was connected.
    connect_called: u64,
    tcp_connected: u64,
    protocol: P,
    buf: Box<[u8]>,
    buf_len: usize,
    /// The last exchange booked on this connection while no other request was written after
    /// it: bytes arriving now are not an answer to anything, and make it a protocol error.
    answered: Option<Booked>,
    /// The server sent bytes before any request was written on this connection: the next
    /// request given to it fails as `parse` (the books need a request to charge).
    stray: bool,
}

/// Runs one load thread of a byte-stream protocol (each connection's [`Protocol`] made by
/// `protocol`): opens its pool, reports it through `ticket`, and, from the start the run sets
/// (with the schedule `schedule_at` makes for it), runs to the end of the schedule plus the
/// drain; returns its two phases (0 = warm-up, 1 = measured).
pub(crate) fn run_worker<P: Protocol>(
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
    let warmup_ns = driver.config.warmup_ns;
    driver
        .core
        .begin_at(start_ns, schedule_at(start_ns)?, warmup_ns);
    Ok(driver.run())
}

struct Driver<P> {
    config: Arc<LoadConfig>,
    requests: Arc<[Prepared]>,
    /// What a request filled by the core's maker is, for the protocol: not HEAD, HEAD.
    filled: [Prepared; 2],
    tls: Option<Arc<rustls::ClientConfig>>,
    conns: Vec<Conn<P>>,
    poll: Poll,
    timer: TimerFd,
    core: Core,
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
    socket_owed: bool,
}

impl<P: Protocol> Driver<P> {
    fn new(
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        protocol: impl Fn() -> P,
    ) -> io::Result<Driver<P>> {
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
            })
            .collect();
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let cfg = CoreConfig::for_thread(
            &setup,
            setup.config.pipeline,
            TimeoutScope::Connection,
            setup.requests.len(),
        );
        let ledger = Ledger::new(&setup);
        let mut core = Core::new(cfg, setup.schedule, ledger);
        let mut conns = conns;
        if ProtocolKind::of(&setup.config) != ProtocolKind::Tcp {
            let config = &setup.config;
            let compiled = crate::config::request_set::compile_requests(config)
                .map_err(|e| io::Error::other(e.to_string()))?;
            // The first failed responses' bodies (only failing or checked bodies are copied).
            let accept: Arc<[crate::status::StatusSet]> = compiled.accept.clone().into();
            let checks = crate::config::request_set::has_checks(config).then(|| {
                Arc::<[crate::workload::check::ResponseChecks]>::from(compiled.checks.clone())
            });
            for observer in conns.iter_mut().filter_map(|c| c.protocol.observer()) {
                observer.keep_excerpts(accept.clone());
                observer.set_stream(config.stream);
                if let Some(table) = &checks {
                    observer.set_checks(table.clone());
                }
            }
            let slots = core.slot_count();
            if let Some(source) =
                crate::config::request_set::request_source(config, &compiled, slots)
            {
                core.set_source(Box::new(source));
            }
        }
        let marker = |head| Prepared {
            bytes: Box::default(),
            head,
        };
        Ok(Driver {
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
            stamped: setup.config.is_open_loop() && tls.is_none() && setup.config.pipeline == 1,
            stamp_reads: setup.config.is_open_loop() && tls.is_none() && setup.config.pipeline == 1,
            stamps_seen: false,
            clock_offset: ClockOffset::measure(),
            socket_owed: true,
            requests: setup.requests,
            config: setup.config,
        })
    }

    fn run(mut self) -> [PhaseAcc; 2] {
        let mut events = Events::with_capacity(1024);
        let mut pacer = Pacer::new(match self.config.spin_ns {
            Some(spin_ns) => Pacing::Fixed { spin_ns },
            None => Pacing::Adaptive,
        });
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
            let sent = self.turn(now);
            let (send_at, wake) = match self.core.plan(now) {
                Plan::Done => break,
                Plan::Wait { send_at, wake } => (send_at, wake),
            };
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
            let listening = listen(stamped, pending, owed);
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
            if spin && !clock_spun && !sent && events.is_empty() {
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
                    }
                }
            }
        }
        self.finish(pacer.stats())
    }

    /// One pass of the loop's decisions at `now`: what is due is written ([`Driver::send_due`]),
    /// then the core's timeout scan closes the connections whose requests it failed; whether
    /// anything was sent.
    fn turn(&mut self, now: u64) -> bool {
        let sent = self.send_due(now);
        self.core
            .scan_timeouts(now, |conn| close(&mut self.conns[conn], &self.poll));
        sent
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
        // Connections whose back-off ran out, with requests waiting on them.
        while let Some(i) = self.core.deferred_connect(now) {
            if self.conns[i].state == ConnState::Down {
                self.start_connect(i, now);
            }
        }
        sent
    }

    /// Whether some connection waits for a socket event (see `socket_owed`), which a wait on
    /// the timer alone would not see; once none does, the flag is cleared.
    fn owes_socket_event(&mut self) -> bool {
        let owed = self.conns.iter().enumerate().any(|(i, c)| match c.state {
            ConnState::Connecting | ConnState::Handshaking => true,
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
            self.core.fail(slot, Failure::Parse, now);
            return;
        }
        match c.state {
            ConnState::Open => self.write_requests(i, now),
            // A connection that keeps failing is tried again only after its back-off; the
            // request waits meanwhile, and its wait is send lag.
            ConnState::Down if self.core.may_connect(i, now) => self.start_connect(i, now),
            ConnState::Down => {}
            // Written as soon as the connection is ready; the wait counts against it.
            ConnState::Connecting | ConnState::Handshaking => {}
        }
    }

    fn start_connect(&mut self, i: usize, now: u64) {
        self.core.connecting(i, now);
        self.conns[i].connect_called = now;
        self.socket_owed = true;
        let Some(mut sock) = socket_steps::connect(self.config.target.addr, &self.poll, i) else {
            return self.fail_connection(i, Failure::Connect, now);
        };
        if self.stamped && rxstamp::enable(sock.socket().as_raw_fd()).is_err() {
            self.stamped = false;
        }
        let c = &mut self.conns[i];
        c.sock = Some(sock);
        c.state = ConnState::Connecting;
    }

    fn handle_event(&mut self, ev: &mio::event::Event) {
        let i = ev.token().0;
        let readable = ev.is_readable() || ev.is_read_closed();
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

    fn finish_connect(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        match sock.connect_state() {
            ConnectState::InProgress => return,
            ConnectState::Failed => return self.fail_connection(i, Failure::Connect, now),
            ConnectState::Connected => {}
        }
        c.tcp_connected = now;
        self.core.connected(now);
        if let Some(tls) = &self.tls {
            if start_tls(&mut c.sock, tls, &self.config.target.host) {
                c.state = ConnState::Handshaking;
                self.drive_handshake(i, now);
            } else {
                self.fail_connection(i, Failure::Connect, now);
            }
        } else {
            c.state = ConnState::Open;
            if let Some(p) = &mut self.pool {
                p.ready(now - c.connect_called);
            }
            self.write_requests(i, now);
        }
    }

    fn drive_handshake(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        match sock.handshake() {
            Handshake::Done => {}
            Handshake::Waiting => return,
            Handshake::Failed | Handshake::AlpnRefused => {
                return self.fail_connection(i, Failure::Connect, now)
            }
        }
        let handshake = now.saturating_sub(c.tcp_connected);
        c.state = ConnState::Open;
        if let Some(p) = &mut self.pool {
            p.ready(now - c.connect_called);
        }
        self.core.tls_handshake(handshake, now);
        self.write_requests(i, now);
        // Application data may have arrived with the last handshake flight.
        if self.conns[i].sock.is_some() {
            self.read_responses(i, true);
        }
    }

    /// Writes every request the core gave connection `i`, as far as the socket takes them.
    fn write_requests(&mut self, i: usize, now: u64) {
        loop {
            let c = &mut self.conns[i];
            let Some(slot) = self.core.carried_at(i, c.written) else {
                break;
            };
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let exchange = *self.core.exchange(slot);
            if c.write_off == 0 && exchange.sent == 0 {
                self.core.sent(slot, now);
                // From here on the server may answer; what it sends is no longer stray.
                c.answered = None;
            }
            let bytes: &[u8] = match self.core.slot_request(slot) {
                Some((filled, _)) => filled,
                None => &self.requests[exchange.request as usize].bytes,
            };
            let len = bytes.len();
            match sock.write(&bytes[c.write_off..]) {
                Ok(0) => return self.fail_connection(i, Failure::Write, now),
                Ok(n) => {
                    c.write_off += n;
                    if c.write_off == len {
                        self.core.written(slot, len);
                        c.written += 1;
                        c.write_off = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.socket_owed = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail_connection(i, Failure::Write, now),
            }
        }
        if let Some(sock) = self.conns[i].sock.as_mut() {
            match sock.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => self.fail_connection(i, Failure::Write, now),
            }
        }
    }

    /// Reads and parses what connection `i` has received. A plain socket that returned less than
    /// asked for is drained as of that read, and whatever arrives later is a new edge-triggered
    /// event, so the read that would only say `WouldBlock` is skipped (one system call per
    /// response instead of two) unless the peer closed (`until_blocked`): its end of stream
    /// must be read now.
    fn read_responses(&mut self, i: usize, until_blocked: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let len = c.buf_len;
            let stamped = self.stamp_reads && matches!(sock, Sock::Plain(_));
            let got = if stamped {
                rxstamp::recv(sock.socket().as_raw_fd(), &mut c.buf[len..])
            } else {
                sock.read(&mut c.buf[len..]).map(|n| (n, None))
            };
            match got {
                Ok((0, _)) => return self.end_of_stream(i, now_ns()),
                Ok((n, stamp)) => {
                    let now = self.arrival(i, stamped, stamp, now_ns());
                    let c = &mut self.conns[i];
                    let Some(sock) = c.sock.as_ref() else {
                        return;
                    };
                    let drained =
                        !until_blocked && len + n < c.buf.len() && matches!(sock, Sock::Plain(_));
                    if !self.received(i, n, now) || drained {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_connection(i, socket_steps::read_failure(&e), now_ns()),
            }
        }
        // TLS may owe the server bytes after reading (key updates, alerts).
        if let Some(sock) = self.conns[i].sock.as_mut() {
            let _ = sock.flush();
        }
    }

    /// The server closed connection `i` (its end of stream was read at `now`).
    fn end_of_stream(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        if c.written > 0 {
            if let Some(status) = c.protocol.finish_at_eof() {
                // A response that the server's close completes: the close has no receive
                // stamp, so it is timed when read. Responses stop waiting for the next send's
                // wake-up in this thread from here on, so that the reads of the next ones (and
                // so their times) are prompt.
                self.stamped = false;
                self.complete_oldest(i, status, now);
            }
        }
        // Whatever else was outstanding was cut off by the close.
        self.fail_connection(i, Failure::Read, now);
    }

    /// `n` more bytes were read into connection `i`'s buffer, arrived at `now`: the core counts
    /// them and the protocol parses them. False when the connection was closed.
    fn received(&mut self, i: usize, n: usize, now: u64) -> bool {
        self.conns[i].buf_len += n;
        self.core.read(i, n);
        self.process_buffer(i, now)
    }

    /// The instant what a read returned at `now` on connection `i` arrived: the kernel's
    /// `stamp` when reads are stamped (mapped to this clock, and kept between the send of the
    /// request it answers and `now`, so that a step of the wall clock can never place it outside
    /// them), else `now`. Reads before the kernel's first stamp were not left waiting, so `now`
    /// is their arrival; a read without a stamp after it ends the waiting for this thread (it is
    /// timed by when it was read, and no later response waits for a wake-up), while the reads
    /// that do carry a stamp, such as those of responses that already waited, keep it.
    fn arrival(&mut self, i: usize, stamped: bool, stamp: Option<u64>, now: u64) -> u64 {
        if !stamped {
            return now;
        }
        let Some(real) = stamp else {
            if self.stamps_seen {
                self.stamped = false;
            }
            return now;
        };
        self.stamps_seen = true;
        let sent = self
            .core
            .oldest(i)
            .map_or(0, |s| self.core.exchange(s).sent);
        self.clock_offset.arrival(real, sent, now)
    }

    /// Parses what is buffered into as many responses as it holds. Returns false when the
    /// connection was closed.
    fn process_buffer(&mut self, i: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[i];
            if c.written == 0 {
                // Bytes nobody asked for (HTTP/1.1 and the raw TCP framings answer each request
                // with one response, in order): the connection is out of step. A second
                // response to one request (or a second raw TCP frame) makes that exchange a
                // protocol error; bytes before any request was written are charged to the
                // requests given to this connection, or to the next one.
                match c.answered.take() {
                    Some(b) => self.core.ledger_mut().rebook_as_parse(b),
                    None if self.core.oldest(i).is_none() => c.stray = true,
                    None => {}
                }
                self.fail_connection(i, Failure::Parse, now);
                return false;
            }
            let Some(front) = self.core.oldest(i) else {
                return true;
            };
            // Buffered bytes are the front response's: its first byte came with this read at
            // the latest (the read's instant, no clock read of its own).
            self.core.first_byte(front, now);
            let request = self.core.exchange(front).request as usize;
            let prepared = match self.core.slot_request(front) {
                Some((_, head)) => &self.filled[usize::from(head)],
                None => &self.requests[request],
            };
            c.protocol.start(prepared, request);
            let full = c.buf_len == c.buf.len();
            if let Some(o) = c.protocol.observer() {
                o.at(now);
            }
            let progress = c.protocol.feed(&c.buf[..c.buf_len], full);
            // Gaps between the events this read completed belong to the front response.
            if let Some(tap) = c.protocol.observer().and_then(|o| o.tap()) {
                tap.drain_gaps(|g| self.core.stream_gap(front, g));
            }
            match progress {
                Ok(Progress::NeedMore { consumed }) => {
                    c.buf.copy_within(consumed..c.buf_len, 0);
                    c.buf_len -= consumed;
                    return true;
                }
                Ok(Progress::Done {
                    consumed,
                    status,
                    close,
                }) => {
                    c.buf.copy_within(consumed..c.buf_len, 0);
                    c.buf_len -= consumed;
                    self.complete_oldest(i, status, now);
                    if close {
                        // Anything pipelined behind a closing response is cut off.
                        self.fail_connection(i, Failure::Read, now);
                        return false;
                    }
                    if self.conns[i].buf_len == 0 {
                        return true;
                    }
                }
                Err(_) => {
                    self.fail_connection(i, Failure::Parse, now);
                    return false;
                }
            }
        }
    }

    /// The response the protocol just completed answers connection `i`'s oldest request.
    fn complete_oldest(&mut self, i: usize, status: u16, now: u64) {
        let Some(slot) = self.core.oldest(i) else {
            return;
        };
        let c = &mut self.conns[i];
        c.written -= 1;
        let nothing_else_written = c.written == 0;
        if let Some(outcome) = c
            .protocol
            .observer()
            .and_then(|o| o.tap())
            .and_then(|t| t.take_outcome())
        {
            self.core.stream_outcome(slot, &outcome);
        }
        let (failed, body) = match c.protocol.observer() {
            Some(o) => (o.failed_check(), o.excerpt()),
            None => (None, None),
        };
        let booked = self.core.complete_response(slot, status, failed, body, now);
        self.conns[i].answered = nothing_else_written.then_some(booked);
    }

    /// Closes connection `i`; the core fails every request it carried, books the fault and
    /// starts its back-off, unless the server only closed it (or it broke) with nothing
    /// outstanding: an idle keep-alive close is no fault.
    fn fail_connection(&mut self, i: usize, kind: Failure, now: u64) {
        let outstanding = self.core.carried_at(i, 0).is_some();
        let always = matches!(kind, Failure::Connect | Failure::Parse);
        let fault = (outstanding || always)
            .then(|| match kind {
                Failure::Connect if self.conns[i].state == ConnState::Handshaking => {
                    Some(Fault::Tls)
                }
                Failure::Connect => Some(Fault::Refused),
                Failure::Timeout => Some(Fault::ConnectTimeout),
                Failure::Read | Failure::Stream => Some(Fault::Closed),
                Failure::Write => Some(Fault::Reset),
                Failure::Parse => Some(Fault::Malformed),
                // A request whose template could not be filled failed before any byte was
                // written: the connection did nothing wrong.
                Failure::Template => None,
            })
            .flatten();
        // A streamed response cut off after events had come fails as a stream of its own.
        if let (Some(front), Some(outcome)) = (
            self.core.oldest(i),
            self.conns[i].protocol.observer().and_then(|o| o.cut()),
        ) {
            self.core.stream_outcome(front, &outcome);
            if outcome.failure.is_some() && kind == Failure::Read {
                self.core.fail(front, Failure::Stream, now);
            }
        }
        close(&mut self.conns[i], &self.poll);
        self.core.fail_connection(i, kind, now);
        self.core.connection_down(i, fault, now);
    }

    /// Accounts for everything still outstanding, then hands back the totals.
    fn finish(mut self, pacing: candor_core::PaceStats) -> [PhaseAcc; 2] {
        let phases = final_phases(&mut self.core, &self.halt, pacing);
        for c in &mut self.conns {
            close(c, &self.poll);
        }
        phases
    }
}

/// The books of a thread whose loop ended, as both loops (this one and HTTP/2's) close them: the
/// core accounts for everything still outstanding (as cut off by an abort when the run is
/// aborting), and the measured phase carries the loop's `pacing`.
pub(crate) fn final_phases(
    core: &mut Core,
    halt: &Halt,
    pacing: candor_core::PaceStats,
) -> [PhaseAcc; 2] {
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
            ConnState::Connecting | ConnState::Handshaking
        )
    }
    fn start_connect(&mut self, i: usize, now: u64) {
        Driver::start_connect(self, i, now)
    }
    fn given_up(&self) -> bool {
        self.halt.aborting()
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
    c.protocol.reset();
}

#[cfg(test)]
pub(crate) mod driver_sim;
