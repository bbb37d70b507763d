//! One load thread for HTTP/1.1 (optionally pipelined, optionally over TLS) and raw TCP: its
//! connections, its share of the schedule, and its recorders.
//!
//! The loop: send every request whose intended time has come on a free slot of a connection (in
//! schedule order; the rest wait, still timed from their intended time), handle I/O, flush
//! interval histograms at each boundary, time out stuck requests, and sleep precisely until the
//! next thing to do: a timerfd for the long stretch, then a spin of non-blocking polls.

use crate::config::{LoadConfig, RequestOrder, Scheme};
use crate::http1::{ParseError, Progress, ResponseParser};
use crate::schedule::Schedule;
use crate::shared::{Booked, Failure, Ledger, PhaseAcc, Prepared, WorkerSetup};
use crate::tcp::TcpFramer;
use candor_core::now_ns;
use candor_core::timerfd::TimerFd;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const TIMER: Token = Token(usize::MAX - 1);
/// Responses larger than this are fine (bodies stream through); only a head must fit.
const READ_BUFFER: usize = 64 * 1024;
/// How often stuck requests are looked for; timeouts are seconds, so 10 ms is precise enough.
const TIMEOUT_SCAN_NS: u64 = 10_000_000;

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

/// A request given to a connection: queued, being written, or awaiting its response.
#[derive(Clone, Copy)]
struct InFlight {
    intended: u64,
    /// When its first byte was handed to the socket (0 until then).
    sent: u64,
    request: u32,
}

/// The byte stream: plain TCP or TLS over it.
enum Transport {
    Plain(TcpStream),
    Tls(TcpStream, Box<rustls::ClientConnection>),
}

impl Transport {
    fn socket(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s,
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(data),
            // Plaintext is buffered by rustls (and encrypted into records); `flush` sends it.
            Transport::Tls(_, c) => c.writer().write(data),
        }
    }

    /// Sends buffered TLS records; `WouldBlock` means wait for writability.
    fn flush(&mut self) -> io::Result<()> {
        if let Transport::Tls(s, c) = self {
            while c.wants_write() {
                c.write_tls(s)?;
            }
        }
        Ok(())
    }

    /// Like `Read::read` on the plaintext: `Ok(0)` is end of stream.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s, c) => loop {
                match c.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // Closed without close_notify: for a client that is simply the end.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
                if c.read_tls(s)? == 0 {
                    return Ok(0);
                }
                c.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            },
        }
    }
}

/// How responses are delimited.
enum Framer {
    Http(ResponseParser),
    Tcp(TcpFramer),
}

impl Framer {
    fn feed(&mut self, input: &[u8], full: bool) -> Result<Progress, ParseError> {
        match self {
            Framer::Http(p) => p.feed(input, full),
            Framer::Tcp(f) => f.feed(input, full),
        }
    }
    fn finish_at_eof(&mut self) -> Option<u16> {
        match self {
            Framer::Http(p) => p.finish_at_eof(),
            Framer::Tcp(_) => None,
        }
    }
    fn reset(&mut self) {
        match self {
            Framer::Http(p) => p.reset(),
            Framer::Tcp(f) => f.reset(),
        }
    }
    fn prepare(&mut self, head: bool) {
        if let Framer::Http(p) = self {
            if p.at_start() {
                p.set_head_request(head);
            }
        }
    }
}

struct Conn {
    transport: Option<Transport>,
    state: ConnState,
    /// Requests given to this connection, oldest first; at most `pipeline`.
    inflight: VecDeque<InFlight>,
    /// `inflight[..written]` are fully written; `inflight[written]` is written up to `write_off`.
    written: usize,
    write_off: usize,
    connect_started: u64,
    tcp_connected: u64,
    /// When a slot of this connection last became free.
    free_since: u64,
    framer: Framer,
    buf: Box<[u8]>,
    buf_len: usize,
    /// The last exchange booked on this connection while no other request was written after
    /// it: bytes arriving now are not an answer to anything, and make it a protocol error.
    answered: Option<Booked>,
    /// The server sent bytes before any request was written on this connection: the next
    /// request given to it fails as `parse` (the books need a request to charge).
    stray: bool,
}

pub(crate) struct Worker {
    config: Arc<LoadConfig>,
    requests: Arc<[Prepared]>,
    tls: Option<Arc<rustls::ClientConfig>>,
    conns: Vec<Conn>,
    /// Free slots: a connection appears once per request it can still take. FIFO.
    free: VecDeque<usize>,
    poll: Poll,
    timer: TimerFd,
    schedule: Option<Schedule>,
    start_ns: u64,
    schedule_end_ns: u64,
    ledger: Ledger,
    stop: Arc<AtomicBool>,
    end: Arc<crate::shared::EarlyEnd>,
    next_request: u64,
    rng: Xoshiro256PlusPlus,
}

impl Worker {
    pub fn new(setup: WorkerSetup, tls: Option<Arc<rustls::ClientConfig>>) -> io::Result<Worker> {
        let cfg = &setup.config;
        let pipeline = cfg.pipeline;
        let conns: Vec<Conn> = (0..setup.connections)
            .map(|_| Conn {
                transport: None,
                state: ConnState::Down,
                inflight: VecDeque::with_capacity(pipeline),
                written: 0,
                write_off: 0,
                connect_started: 0,
                tcp_connected: 0,
                free_since: 0,
                framer: match &cfg.framing {
                    Some(f) if cfg.target.scheme == Scheme::Tcp => {
                        Framer::Tcp(TcpFramer::new(f.clone()))
                    }
                    _ => Framer::Http(ResponseParser::new(false)),
                },
                buf: vec![0u8; READ_BUFFER].into_boxed_slice(),
                buf_len: 0,
                answered: None,
                stray: false,
            })
            .collect();
        let mut free = VecDeque::with_capacity(conns.len() * pipeline);
        for _ in 0..pipeline {
            free.extend(0..conns.len());
        }
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let ledger = Ledger::new(&setup);
        let seed = match cfg.request_order {
            RequestOrder::Random { seed } => seed ^ (setup.start_ns.rotate_left(17)),
            RequestOrder::RoundRobin => 0,
        };
        Ok(Worker {
            conns,
            free,
            poll,
            timer,
            tls,
            schedule: setup.schedule,
            start_ns: setup.start_ns,
            schedule_end_ns: ledger.warmup_end_ns + cfg.duration_ns,
            ledger,
            stop: setup.stop,
            end: setup.end,
            requests: setup.requests,
            config: setup.config,
            next_request: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
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
        let mut ended_early = false;
        loop {
            let now = now_ns();
            if !stopped && (self.stop.load(Ordering::Relaxed) || self.end.aborting()) {
                // Interrupted: no more sends, no drain; what is outstanding is reported as such.
                stopped = true;
                let at = self.end.requested().map_or(now, |(_, at)| at.min(now));
                self.schedule_end_ns = self.schedule_end_ns.min(at.max(self.start_ns));
                drain_end_ns = now;
            } else if !ended_early && !stopped {
                if let Some((_, at)) = self.end.requested() {
                    // The question of the run is answered: no more sends, the usual drain.
                    ended_early = true;
                    self.schedule_end_ns = self.schedule_end_ns.min(at.max(self.start_ns));
                    drain_end_ns = drain_end_ns.min(self.schedule_end_ns + self.config.drain_ns);
                }
            }
            self.ledger.flush_due(now);
            if now >= self.start_ns {
                self.send_due(now);
            }
            if now >= next_timeout_scan {
                self.scan_timeouts(now);
                next_timeout_scan = now + TIMEOUT_SCAN_NS;
            }
            let outstanding = self.conns.iter().any(|c| !c.inflight.is_empty());
            if now >= self.schedule_end_ns
                && (now >= drain_end_ns || (!outstanding && !self.backlog_due()))
            {
                break;
            }

            // Decide when to wake: the next send (if a slot is free to take it), the interval
            // boundary, the timeout scan, or the end of the schedule/drain.
            let mut wake = self.ledger.next_boundary_ns.min(next_timeout_scan);
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
                    ev.is_readable() || ev.is_read_closed(),
                    ev.is_writable() || ev.is_error(),
                );
            }
        }
        self.finish()
    }

    fn backlog_due(&self) -> bool {
        self.schedule
            .as_ref()
            .is_some_and(|s| s.peek() < self.schedule_end_ns)
    }

    fn make_free(&mut self, i: usize, now: u64) {
        self.conns[i].free_since = now;
        self.free.push_back(i);
    }

    #[inline]
    fn pick_request(&mut self) -> u32 {
        let n = self.requests.len() as u64;
        if n == 1 {
            return 0;
        }
        let k = match self.config.request_order {
            RequestOrder::RoundRobin => {
                self.next_request += 1;
                self.next_request
            }
            RequestOrder::Random { .. } => self.rng.next_u64(),
        };
        (k % n) as u32
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
            self.ledger
                .intend(intended, now, self.conns[conn].free_since);
            let request = self.pick_request();
            self.dispatch(conn, intended, request, now);
        }
    }

    /// Gives the request intended at `intended` to connection `i` (which has a free slot).
    fn dispatch(&mut self, i: usize, intended: u64, request: u32, now: u64) {
        let c = &mut self.conns[i];
        if c.stray {
            c.stray = false;
            self.ledger.fail(Failure::Parse, intended, None, now);
            self.make_free(i, now);
            return;
        }
        c.inflight.push_back(InFlight {
            intended,
            sent: 0,
            request,
        });
        match c.state {
            ConnState::Open => self.write_requests(i, now),
            ConnState::Down => self.start_connect(i, now),
            // Written as soon as the connection is ready; the wait counts against it.
            ConnState::Connecting | ConnState::Handshaking => {}
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
                    self.fail_connection(i, Failure::Connect, now);
                    return;
                }
                c.transport = Some(Transport::Plain(stream));
                c.state = ConnState::Connecting;
            }
            Err(_) => self.fail_connection(i, Failure::Connect, now),
        }
    }

    fn handle_event(&mut self, i: usize, readable: bool, writable: bool) {
        if i >= self.conns.len() || self.conns[i].transport.is_none() {
            return;
        }
        let now = now_ns();
        match self.conns[i].state {
            ConnState::Connecting => {
                if writable || readable {
                    self.finish_connect(i, now);
                }
            }
            ConnState::Handshaking => self.drive_handshake(i, now),
            ConnState::Open => {
                if writable {
                    self.write_requests(i, now);
                }
                if readable && self.conns[i].transport.is_some() {
                    self.read_responses(i);
                }
            }
            ConnState::Down => {}
        }
    }

    fn finish_connect(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(t) = c.transport.as_mut() else {
            return;
        };
        let stream = t.socket();
        match stream.take_error() {
            Ok(None) => {}
            _ => return self.fail_connection(i, Failure::Connect, now),
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(_) => return self.fail_connection(i, Failure::Connect, now),
        }
        let _ = stream.set_nodelay(true);
        c.tcp_connected = now;
        self.ledger.connection_opened(now);
        if let Some(tls) = &self.tls {
            let name = match crate::tls::server_name(&self.config.target.host) {
                Ok(n) => n,
                Err(_) => return self.fail_connection(i, Failure::Connect, now),
            };
            let Some(Transport::Plain(stream)) = c.transport.take() else {
                return;
            };
            match rustls::ClientConnection::new(tls.clone(), name) {
                Ok(session) => {
                    c.transport = Some(Transport::Tls(stream, Box::new(session)));
                    c.state = ConnState::Handshaking;
                    self.drive_handshake(i, now);
                }
                Err(_) => {
                    c.transport = Some(Transport::Plain(stream));
                    self.fail_connection(i, Failure::Connect, now);
                }
            }
        } else {
            c.state = ConnState::Open;
            self.write_requests(i, now);
        }
    }

    fn drive_handshake(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(Transport::Tls(stream, session)) = c.transport.as_mut() else {
            return;
        };
        loop {
            if session.wants_write() {
                match session.write_tls(stream) {
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => return self.fail_connection(i, Failure::Connect, now),
                }
            }
            if !session.is_handshaking() {
                break;
            }
            match session.read_tls(stream) {
                Ok(0) => return self.fail_connection(i, Failure::Connect, now),
                Ok(_) => {
                    if session.process_new_packets().is_err() {
                        // Flush the alert so the server learns why, then give up.
                        let _ = session.write_tls(stream);
                        return self.fail_connection(i, Failure::Connect, now);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.fail_connection(i, Failure::Connect, now),
            }
        }
        let handshake = now.saturating_sub(c.tcp_connected);
        c.state = ConnState::Open;
        self.ledger.tls_handshake(handshake, now);
        self.write_requests(i, now);
        // Application data may have arrived with the last handshake flight.
        if self.conns[i].transport.is_some() {
            self.read_responses(i);
        }
    }

    /// Writes every queued request of connection `i`, as far as the socket takes them.
    fn write_requests(&mut self, i: usize, now: u64) {
        loop {
            let c = &mut self.conns[i];
            if c.written == c.inflight.len() {
                break;
            }
            let Some(t) = c.transport.as_mut() else {
                return;
            };
            let entry = &mut c.inflight[c.written];
            if c.write_off == 0 && entry.sent == 0 {
                entry.sent = now;
                // From here on the server may answer; what it sends is no longer stray.
                c.answered = None;
            }
            let bytes = &self.requests[entry.request as usize].bytes;
            match t.write(&bytes[c.write_off..]) {
                Ok(0) => return self.fail_connection(i, Failure::Write, now),
                Ok(n) => {
                    c.write_off += n;
                    if c.write_off == bytes.len() {
                        let phase = self.ledger.phase_of(entry.intended);
                        self.ledger.phases[phase].counts.bytes_written += bytes.len() as u64;
                        c.written += 1;
                        c.write_off = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail_connection(i, Failure::Write, now),
            }
        }
        if let Some(t) = self.conns[i].transport.as_mut() {
            match t.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => self.fail_connection(i, Failure::Write, now),
            }
        }
    }

    fn read_responses(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(t) = c.transport.as_mut() else {
                return;
            };
            let len = c.buf_len;
            match t.read(&mut c.buf[len..]) {
                Ok(0) => {
                    let now = now_ns();
                    if c.written > 0 {
                        if let Some(status) = c.framer.finish_at_eof() {
                            self.complete_front(i, status, now);
                        }
                    }
                    // Whatever else was outstanding was cut off by the close.
                    self.fail_connection(i, Failure::Read, now);
                    return;
                }
                Ok(n) => {
                    let now = now_ns();
                    c.buf_len += n;
                    let phase = c
                        .inflight
                        .front()
                        .map_or(1, |f| self.ledger.phase_of(f.intended));
                    self.ledger.phases[phase].counts.bytes_read += n as u64;
                    if !self.process_buffer(i, now) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = if e.kind() == io::ErrorKind::InvalidData {
                        Failure::Parse
                    } else {
                        Failure::Read
                    };
                    self.fail_connection(i, kind, now_ns());
                    return;
                }
            }
        }
        // TLS may owe the server bytes after reading (key updates, alerts).
        if let Some(t) = self.conns[i].transport.as_mut() {
            let _ = t.flush();
        }
    }

    /// Parses what is buffered into as many responses as it holds. Returns false when the
    /// connection was closed.
    fn process_buffer(&mut self, i: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[i];
            if c.written == 0 {
                // Bytes nobody asked for (HTTP/1.1 and the raw TCP framings answer each request
                // with one response, in order): the connection is out of step. A second response to one request (or a second
                // raw TCP frame) makes that exchange a protocol error; bytes before any request
                // was written are charged to the requests queued here, or to the next one.
                match c.answered.take() {
                    Some(b) => self.ledger.rebook_as_parse(b),
                    None if c.inflight.is_empty() => c.stray = true,
                    None => {}
                }
                self.fail_connection(i, Failure::Parse, now);
                return false;
            }
            let head = self.requests[c.inflight[0].request as usize].head;
            c.framer.prepare(head);
            let full = c.buf_len == c.buf.len();
            match c.framer.feed(&c.buf[..c.buf_len], full) {
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
                    self.complete_front(i, status, now);
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

    fn complete_front(&mut self, i: usize, status: u16, now: u64) {
        let c = &mut self.conns[i];
        let Some(f) = c.inflight.pop_front() else {
            return;
        };
        c.written -= 1;
        let nothing_else_written = c.written == 0;
        self.make_free(i, now);
        let booked = self.ledger.complete(f.intended, f.sent, now, status);
        self.conns[i].answered = nothing_else_written.then_some(booked);
    }

    /// Closes connection `i` and fails every request it held.
    fn fail_connection(&mut self, i: usize, kind: Failure, now: u64) {
        let c = &mut self.conns[i];
        if let Some(mut t) = c.transport.take() {
            let _ = self.poll.registry().deregister(t.socket());
        }
        c.state = ConnState::Down;
        c.answered = None;
        c.buf_len = 0;
        c.write_off = 0;
        c.written = 0;
        c.framer.reset();
        while let Some(f) = self.conns[i].inflight.pop_front() {
            self.ledger
                .fail(kind, f.intended, (f.sent != 0).then_some(f.sent), now);
            self.make_free(i, now);
        }
    }

    fn scan_timeouts(&mut self, now: u64) {
        let limit = self.config.timeout_ns;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let Some(front) = c.inflight.front() else {
                continue;
            };
            let since = if front.sent != 0 {
                front.sent
            } else {
                // Still waiting for its connection (connect or TLS handshake).
                c.connect_started.max(front.intended)
            };
            if now.saturating_sub(since) >= limit {
                self.fail_connection(i, Failure::Timeout, now);
            }
        }
    }

    /// Accounts for everything still outstanding, then hands back the totals.
    fn finish(mut self) -> [PhaseAcc; 2] {
        let now = now_ns();
        for c in &self.conns {
            for f in &c.inflight {
                self.ledger.unfinished(f.intended, f.sent != 0, now);
            }
        }
        let phases = self
            .ledger
            .finish(self.schedule.as_mut(), self.schedule_end_ns, now, &|| {
                self.stop.load(Ordering::Relaxed) || self.end.aborting()
            });
        for c in &mut self.conns {
            if let Some(mut t) = c.transport.take() {
                let _ = self.poll.registry().deregister(t.socket());
            }
        }
        phases
    }
}
