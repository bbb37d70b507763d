//! One load thread: its connections, its share of the schedule, and its recorders.
//!
//! The loop: send every request whose intended time has come on a free connection (in schedule
//! order; the rest wait, still timed from their intended time), handle I/O, flush interval
//! histograms at each boundary, time out stuck requests, and sleep precisely until the next
//! thing to do: a timerfd for the long stretch, then a spin of non-blocking polls.

use crate::config::LoadConfig;
use crate::http1::{ParseError, Progress, ResponseParser};
use crate::schedule::Schedule;
use crate::timer::Timer;
use candor_core::hist::record_clamped;
use candor_core::results::RequestCounts;
use candor_core::{new_histogram, now_ns, Histo, Recorder};
use crossbeam_channel::{Receiver, Sender};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const TIMER: Token = Token(usize::MAX - 1);
/// Responses larger than this are fine (bodies stream through); only a head must fit.
const READ_BUFFER: usize = 64 * 1024;
/// How often stuck requests are looked for; timeouts are seconds, so 10 ms is precise enough.
const TIMEOUT_SCAN_NS: u64 = 10_000_000;
/// A send this much after its intended time, on a connection that was already free, is the
/// generator's own lateness (a spin-paced loop is normally within microseconds).
const GENERATOR_LATE_NS: u64 = 1_000_000;

/// Histograms and counts of one interval of one worker.
pub(crate) struct IntervalData {
    pub rec: Recorder,
    pub completed: u64,
    pub failed: u64,
}

impl IntervalData {
    pub fn new() -> Self {
        IntervalData {
            rec: Recorder::new(),
            completed: 0,
            failed: 0,
        }
    }
    pub fn reset(&mut self) {
        self.rec.reset();
        self.completed = 0;
        self.failed = 0;
    }
}

pub(crate) struct IntervalMsg {
    pub index: u64,
    /// Set on the worker's last (possibly partial) interval: when the worker stopped.
    pub final_end_ns: Option<u64>,
    pub data: Box<IntervalData>,
}

/// What a worker accumulated in one phase (0 = warm-up, 1 = measured).
pub(crate) struct PhaseAcc {
    pub rec: Recorder,
    pub unfinished: Histo,
    pub counts: RequestCounts,
}

impl PhaseAcc {
    fn new() -> Self {
        PhaseAcc {
            rec: Recorder::new(),
            unfinished: new_histogram(),
            counts: RequestCounts::default(),
        }
    }
}

pub(crate) struct WorkerSetup {
    pub config: Arc<LoadConfig>,
    pub request: Arc<[u8]>,
    pub connections: usize,
    pub start_ns: u64,
    /// `None` in closed-loop mode.
    pub schedule: Option<Schedule>,
    pub to_collector: Sender<IntervalMsg>,
    pub pool: Receiver<Box<IntervalData>>,
    pub stop: Arc<AtomicBool>,
    pub on_start: Option<Arc<dyn Fn() + Send + Sync>>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum ConnState {
    /// No socket; a request given to it starts a connect.
    Down,
    /// Connect in progress (with or without a request waiting for it).
    Connecting,
    /// Part of the request is written; waiting for the socket to accept the rest.
    Writing,
    /// Request written, response not complete.
    Awaiting,
    /// Connected, nothing outstanding.
    Idle,
}

struct Conn {
    stream: Option<TcpStream>,
    state: ConnState,
    has_request: bool,
    intended: u64,
    sent: u64,
    connect_started: u64,
    /// When the connection last became free (to tell the generator's lateness from queueing).
    free_since: u64,
    write_off: usize,
    parser: ResponseParser,
    buf: Box<[u8]>,
    buf_len: usize,
}

#[derive(Clone, Copy)]
enum Failure {
    Connect,
    Read,
    Write,
    Timeout,
    Parse,
}

pub(crate) struct Worker {
    config: Arc<LoadConfig>,
    request: Arc<[u8]>,
    conns: Vec<Conn>,
    /// Connections that can take a request now: Idle or Down. FIFO, capacity = connections.
    free: VecDeque<usize>,
    poll: Poll,
    timer: Timer,
    schedule: Option<Schedule>,
    start_ns: u64,
    warmup_end_ns: u64,
    schedule_end_ns: u64,
    phases: [PhaseAcc; 2],
    interval: Box<IntervalData>,
    interval_index: u64,
    next_boundary_ns: u64,
    to_collector: Sender<IntervalMsg>,
    pool: Receiver<Box<IntervalData>>,
    stop: Arc<AtomicBool>,
}

impl Worker {
    pub fn new(setup: WorkerSetup) -> io::Result<Worker> {
        let head_request = setup.config.method.eq_ignore_ascii_case("HEAD");
        let conns = (0..setup.connections)
            .map(|_| Conn {
                stream: None,
                state: ConnState::Down,
                has_request: false,
                intended: 0,
                sent: 0,
                connect_started: 0,
                free_since: 0,
                write_off: 0,
                parser: ResponseParser::new(head_request),
                buf: vec![0u8; READ_BUFFER].into_boxed_slice(),
                buf_len: 0,
            })
            .collect();
        let poll = Poll::new()?;
        let timer = Timer::new()?;
        timer.register(poll.registry(), TIMER)?;
        let cfg = &setup.config;
        let warmup_end_ns = setup.start_ns + cfg.warmup_ns;
        let first_interval = setup
            .pool
            .try_recv()
            .unwrap_or_else(|_| Box::new(IntervalData::new()));
        Ok(Worker {
            conns,
            free: VecDeque::with_capacity(setup.connections),
            poll,
            timer,
            schedule: setup.schedule,
            start_ns: setup.start_ns,
            warmup_end_ns,
            schedule_end_ns: warmup_end_ns + cfg.duration_ns,
            phases: [PhaseAcc::new(), PhaseAcc::new()],
            interval: first_interval,
            interval_index: 0,
            next_boundary_ns: setup.start_ns + cfg.interval_ns,
            to_collector: setup.to_collector,
            pool: setup.pool,
            stop: setup.stop,
            request: setup.request,
            config: setup.config,
        })
    }

    /// Runs to the end of the schedule plus the drain, then returns the per-phase totals.
    pub fn run(mut self) -> [PhaseAcc; 2] {
        candor_core::set_fine_timer_slack();
        let mut events = Events::with_capacity(1024);
        // Connect everything before the first intended send, as wrk does.
        let now = now_ns();
        for i in 0..self.conns.len() {
            self.start_connect(i, now);
        }
        let spin = self.config.spin_ns;
        let mut drain_end_ns = self.schedule_end_ns + self.config.drain_ns;
        let mut next_timeout_scan = self.start_ns + TIMEOUT_SCAN_NS;
        let mut stopped = false;
        loop {
            let now = now_ns();
            if !stopped && self.stop.load(Ordering::Relaxed) {
                // Interrupted: no more sends, no drain; what is outstanding is reported as such.
                stopped = true;
                self.schedule_end_ns = self.schedule_end_ns.min(now.max(self.start_ns));
                drain_end_ns = now;
            }
            while now >= self.next_boundary_ns {
                self.flush_interval(None);
            }
            if now >= self.start_ns {
                self.send_due(now);
            }
            if now >= next_timeout_scan {
                self.scan_timeouts(now);
                next_timeout_scan = now + TIMEOUT_SCAN_NS;
            }
            let outstanding = self.conns.iter().any(|c| c.has_request);
            if now >= self.schedule_end_ns
                && (now >= drain_end_ns || (!outstanding && !self.backlog_due()))
            {
                break;
            }

            // Decide when to wake: the next send (if a connection is free to take it), the
            // interval boundary, the timeout scan, or the end of the schedule/drain.
            let mut wake = self.next_boundary_ns.min(next_timeout_scan);
            wake = wake.min(if now < self.schedule_end_ns {
                self.schedule_end_ns
            } else {
                drain_end_ns
            });
            let mut send_at = u64::MAX;
            if !self.free.is_empty() {
                if let Some(s) = &self.schedule {
                    if s.peek() < self.schedule_end_ns {
                        send_at = s.peek().max(self.start_ns);
                    }
                } else if now < self.schedule_end_ns {
                    send_at = self.start_ns.max(now);
                }
            }
            let timeout = if send_at <= now + spin || wake <= now {
                // Spin stretch: poll without blocking so responses are still timed precisely.
                Some(std::time::Duration::ZERO)
            } else {
                self.timer.arm(wake.min(send_at - spin));
                None
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.acknowledge();
                    continue;
                }
                self.handle_event(
                    ev.token().0,
                    ev.is_readable(),
                    ev.is_writable() || ev.is_error(),
                );
            }
        }
        self.finish()
    }

    fn make_free(&mut self, i: usize, now: u64) {
        self.conns[i].free_since = now;
        self.free.push_back(i);
    }

    fn backlog_due(&self) -> bool {
        self.schedule
            .as_ref()
            .is_some_and(|s| s.peek() < self.schedule_end_ns)
    }

    #[inline]
    fn phase_of(&self, intended: u64) -> usize {
        (intended >= self.warmup_end_ns) as usize
    }

    fn send_due(&mut self, now: u64) {
        while let Some(&conn) = self.free.front() {
            let intended = match &mut self.schedule {
                Some(s) => {
                    let t = s.peek();
                    if t > now || t >= self.schedule_end_ns {
                        return;
                    }
                    s.advance();
                    t
                }
                None => {
                    if now >= self.schedule_end_ns {
                        return;
                    }
                    now
                }
            };
            self.free.pop_front();
            let phase = self.phase_of(intended);
            let counts = &mut self.phases[phase].counts;
            counts.intended += 1;
            if now > intended + GENERATOR_LATE_NS && self.conns[conn].free_since <= intended {
                counts.generator_late += 1;
            }
            self.dispatch(conn, intended, now);
        }
    }

    /// Gives the request intended at `intended` to free connection `i`.
    fn dispatch(&mut self, i: usize, intended: u64, now: u64) {
        let c = &mut self.conns[i];
        c.has_request = true;
        c.intended = intended;
        match c.state {
            ConnState::Idle => {
                c.sent = now;
                c.write_off = 0;
                c.state = ConnState::Writing;
                self.write_request(i, now);
            }
            ConnState::Down => self.start_connect(i, now),
            other => unreachable!("busy connection {other:?} in the free list"),
        }
    }

    fn start_connect(&mut self, i: usize, now: u64) {
        let addr = self.config.target.addr;
        let c = &mut self.conns[i];
        c.connect_started = now;
        match TcpStream::connect(addr) {
            Ok(mut stream) => {
                let token = Token(i);
                if self
                    .poll
                    .registry()
                    .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                    .is_err()
                {
                    self.connect_failed(i, now);
                    return;
                }
                c.stream = Some(stream);
                c.state = ConnState::Connecting;
            }
            Err(_) => self.connect_failed(i, now),
        }
    }

    fn connect_failed(&mut self, i: usize, now: u64) {
        self.close(i);
        if self.conns[i].has_request {
            self.fail(i, Failure::Connect, now);
        } else if !self.free.contains(&i) {
            // A pre-connect failed: the connection is still usable (a later request retries it).
            self.make_free(i, now);
        }
    }

    fn handle_event(&mut self, i: usize, readable: bool, writable: bool) {
        if i >= self.conns.len() {
            return;
        }
        let now = now_ns();
        match self.conns[i].state {
            ConnState::Connecting if writable || readable => {
                let c = &mut self.conns[i];
                let Some(stream) = c.stream.as_ref() else {
                    return;
                };
                match stream.take_error() {
                    Ok(None) => {}
                    _ => return self.connect_failed(i, now),
                }
                match stream.peer_addr() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                    Err(_) => return self.connect_failed(i, now),
                }
                let _ = stream.set_nodelay(true);
                if c.has_request {
                    // The connect time is part of this request's send lag and response time.
                    c.sent = now;
                    c.write_off = 0;
                    c.state = ConnState::Writing;
                    self.write_request(i, now);
                } else {
                    c.state = ConnState::Idle;
                    self.make_free(i, now);
                }
                return;
            }
            ConnState::Writing if writable => self.write_request(i, now),
            _ => {}
        }
        if readable && self.conns[i].stream.is_some() {
            self.read_responses(i);
        }
    }

    fn write_request(&mut self, i: usize, now: u64) {
        let req = &self.request[..];
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            match stream.write(&req[c.write_off..]) {
                Ok(0) => return self.fail_and_close(i, Failure::Write, now),
                Ok(n) => {
                    c.write_off += n;
                    if c.write_off == req.len() {
                        c.state = ConnState::Awaiting;
                        let phase = (c.intended >= self.warmup_end_ns) as usize;
                        self.phases[phase].counts.bytes_written += req.len() as u64;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail_and_close(i, Failure::Write, now),
            }
        }
    }

    fn read_responses(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let len = c.buf_len;
            match stream.read(&mut c.buf[len..]) {
                Ok(0) => {
                    let now = now_ns();
                    if c.has_request && matches!(c.state, ConnState::Awaiting | ConnState::Writing)
                    {
                        if let Some(status) = c.parser.finish_at_eof() {
                            self.complete(i, status, now);
                            self.close(i);
                        } else {
                            // Closed before the response was complete (or before it started).
                            self.fail_and_close(i, Failure::Read, now);
                        }
                    } else {
                        // The server closed an idle keep-alive connection; it stays free.
                        self.close(i);
                    }
                    return;
                }
                Ok(n) => {
                    let now = now_ns();
                    c.buf_len += n;
                    let phase = (c.intended >= self.warmup_end_ns) as usize;
                    self.phases[phase].counts.bytes_read += n as u64;
                    if !self.process_buffer(i, now) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    let now = now_ns();
                    if self.conns[i].has_request {
                        self.fail_and_close(i, Failure::Read, now);
                    } else {
                        self.close(i);
                    }
                    return;
                }
            }
        }
    }

    /// Parses what is buffered. Returns false when the connection was closed.
    fn process_buffer(&mut self, i: usize, now: u64) -> bool {
        let c = &mut self.conns[i];
        if !(c.has_request && matches!(c.state, ConnState::Awaiting | ConnState::Writing)) {
            // Bytes nobody asked for: the connection is out of step; drop it.
            self.close(i);
            return false;
        }
        let full = c.buf_len == c.buf.len();
        match c.parser.feed(&c.buf[..c.buf_len], full) {
            Ok(Progress::NeedMore { consumed }) => {
                c.buf.copy_within(consumed..c.buf_len, 0);
                c.buf_len -= consumed;
                true
            }
            Ok(Progress::Done {
                consumed,
                status,
                close,
            }) => {
                let leftover = c.buf_len - consumed;
                c.buf_len = 0;
                self.complete(i, status, now);
                if close || leftover > 0 {
                    // Leftover bytes after a complete response (no pipelining): out of step.
                    self.close(i);
                    return false;
                }
                true
            }
            Err(ParseError::HeadTooLarge) | Err(_) => {
                self.fail_and_close(i, Failure::Parse, now);
                false
            }
        }
    }

    fn complete(&mut self, i: usize, status: u16, now: u64) {
        let c = &mut self.conns[i];
        let (intended, sent) = (c.intended, c.sent);
        c.has_request = false;
        c.state = ConnState::Idle;
        c.write_off = 0;
        self.make_free(i, now);
        let response = now.saturating_sub(intended);
        let service = now.saturating_sub(sent);
        let lag = sent.saturating_sub(intended);
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.rec.record(response, service, lag);
        p.counts.completed += 1;
        p.counts.status.count(status);
        self.interval.rec.record(response, service, lag);
        self.interval.completed += 1;
    }

    /// Fails the request waiting on connection `i`. Timeouts also record their latency so far:
    /// a request that never came back is at least that slow, and must not look fast by absence.
    fn fail(&mut self, i: usize, kind: Failure, now: u64) {
        let c = &mut self.conns[i];
        if !c.has_request {
            return;
        }
        c.has_request = false;
        let (intended, sent, was_sent) = (c.intended, c.sent, c.state != ConnState::Connecting);
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.counts.failed += 1;
        let e = &mut p.counts.errors;
        match kind {
            Failure::Connect => e.connect += 1,
            Failure::Read => e.read += 1,
            Failure::Write => e.write += 1,
            Failure::Timeout => e.timeout += 1,
            Failure::Parse => e.parse += 1,
        }
        if let Failure::Timeout = kind {
            let response = now.saturating_sub(intended);
            p.counts.clamped_values += record_clamped(&mut p.rec.response, response) as u64;
            record_clamped(&mut self.interval.rec.response, response);
            if was_sent {
                let service = now.saturating_sub(sent);
                p.counts.clamped_values += record_clamped(&mut p.rec.service, service) as u64;
                record_clamped(&mut self.interval.rec.service, service);
            }
        }
        self.interval.failed += 1;
        if !self.free.contains(&i) {
            self.make_free(i, now);
        }
    }

    fn fail_and_close(&mut self, i: usize, kind: Failure, now: u64) {
        self.close(i);
        self.fail(i, kind, now);
    }

    /// Drops the socket; the connection becomes Down (and will reconnect when next used).
    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.state = ConnState::Down;
        c.buf_len = 0;
        c.write_off = 0;
        c.parser.reset();
    }

    fn scan_timeouts(&mut self, now: u64) {
        let limit = self.config.timeout_ns;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let since = match c.state {
                ConnState::Connecting if c.has_request => c.connect_started,
                ConnState::Writing | ConnState::Awaiting => c.sent,
                _ => continue,
            };
            if now.saturating_sub(since) >= limit {
                // Keep the state for `fail` to know whether it was sent, then close.
                self.fail(i, Failure::Timeout, now);
                self.close(i);
            }
        }
    }

    fn flush_interval(&mut self, final_end_ns: Option<u64>) {
        // A recycled box from the collector; a new one only if the collector fell behind.
        let fresh = self
            .pool
            .try_recv()
            .unwrap_or_else(|_| Box::new(IntervalData::new()));
        let data = std::mem::replace(&mut self.interval, fresh);
        // The collector drains continuously; a blocking send only waits if it is seconds behind.
        let _ = self.to_collector.send(IntervalMsg {
            index: self.interval_index,
            final_end_ns,
            data,
        });
        self.interval_index += 1;
        self.next_boundary_ns += self.config.interval_ns;
    }

    /// Accounts for everything still outstanding, then hands back the totals.
    fn finish(mut self) -> [PhaseAcc; 2] {
        let now = now_ns();
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if !c.has_request {
                continue;
            }
            let phase = self.phase_of(c.intended);
            let sent = matches!(c.state, ConnState::Writing | ConnState::Awaiting);
            let age = now.saturating_sub(c.intended);
            let p = &mut self.phases[phase];
            p.counts.in_flight_at_end += 1;
            if sent {
                p.counts.sent_unanswered += 1;
            } else {
                p.counts.queued_unsent += 1;
            }
            record_clamped(&mut p.unfinished, age);
        }
        // Due, never sent: the rest of the schedule up to its end. Counted one by one (no
        // formula) so that the count is exactly what the schedule generated.
        let end = self.schedule_end_ns;
        let warmup_end = self.warmup_end_ns;
        if let Some(s) = self.schedule.as_mut() {
            while s.peek() < end {
                let t = s.peek();
                let p = &mut self.phases[(t >= warmup_end) as usize];
                p.counts.intended += 1;
                p.counts.in_flight_at_end += 1;
                p.counts.queued_unsent += 1;
                record_clamped(&mut p.unfinished, now.saturating_sub(t));
                s.advance();
            }
        }
        for p in &mut self.phases {
            p.counts.clamped_values += p.rec.clamped;
        }
        self.flush_interval(Some(now));
        for i in 0..self.conns.len() {
            self.close(i);
        }
        self.phases
    }
}
