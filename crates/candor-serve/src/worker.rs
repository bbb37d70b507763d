//! One worker: a mio event loop over its share of the connections, a FIFO of delayed answers
//! and a timerfd that fires when the oldest one (or the current stall) is due.
//!
//! Worker 0 also owns the listener and deals accepted sockets round-robin to the workers, which
//! keeps the split even however the clients connect. In steady state nothing is allocated:
//! connection buffers are recycled with their slots, and the delay queue and ready lists keep
//! their capacity.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use candor_core::now_ns;
use mio::event::Event;
use mio::net::{TcpListener, TcpStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use socket2::{Domain, SockRef, Socket, Type};

use crate::config::{FaultKind, InjectedFault, ServeConfig, Stall};
use crate::response::{Responses, GARBAGE};
use crate::server_state::ServerState;
use candor_core::timerfd::TimerFd as Timer;
use std::os::fd::AsRawFd;

const WAKER: Token = Token(0);
const TIMER: Token = Token(1);
const LISTENER: Token = Token(2);
const FIRST_CONN: usize = 3;

/// Per-connection read buffer: room for any sane request head, and for many pipelined ones.
const READ_BUF: usize = 8192;
const WRITE_BUF_INITIAL: usize = 4096;
/// A connection that has this many answers waiting in the delay queue is not read further
/// until some are sent; bounds memory against a client that pipelines without limit.
const MAX_PENDING_PER_CONN: u32 = 1024;
const MAX_HEADERS: usize = 64;
/// Reads attempted to empty the receive queue before a graceful close: closing with unread
/// data makes the kernel send a RST, which could destroy the answer still in flight.
const CLOSE_DRAIN_READS: usize = 8;
/// The timer is armed this much before a delayed answer is due and the rest is spun on the
/// clock: a timerfd wakes ~20-60 us late (p50-p99) on these machines, which would shave a few
/// percent off the capacity (connections / delay) that tests rely on. Spinning costs up to this
/// much CPU per wake-up; answers due close together share one wake-up.
const TIMER_EARLY_NS: u64 = candor_core::SPIN_MARGIN_NS;
/// After accept fails for want of descriptors or memory, the listener is tried again this much
/// later: the connections left in the backlog raise no new readiness edge, so without a retry
/// they would wait for the next connection to arrive. 10 ms is 100 tries a second while out of
/// descriptors, and at most 10 ms added to a waiting client's connection.
const ACCEPT_RETRY_NS: u64 = 10_000_000;

/// Read-only settings shared by the workers.
pub(crate) struct Settings {
    responses: Responses,
    delay_ns: u64,
    stall: Option<Stall>,
    fault: Option<InjectedFault>,
    started_ns: u64,
    /// Unsent response bytes above which a connection is not read further.
    write_pause_bytes: usize,
    busy_poll: bool,
}

impl Settings {
    pub(crate) fn new(config: &ServeConfig, started_ns: u64) -> Settings {
        let responses = Responses::new(config.body_bytes);
        let write_pause_bytes = (64 * 1024).max(2 * responses.get.len());
        Settings {
            responses,
            delay_ns: config.delay_ns,
            stall: config.stall,
            fault: config.fault,
            started_ns,
            write_pause_bytes,
            busy_poll: config.busy_poll,
        }
    }

    #[inline]
    fn stall_end_at(&self, t_ns: u64) -> Option<u64> {
        self.stall
            .as_ref()
            .and_then(|s| s.window_end_at(self.started_ns, t_ns))
    }

    /// When an answer due at `deadline` can actually go out: a stall holds it to the window end.
    #[inline]
    fn effective(&self, deadline: u64) -> u64 {
        self.stall_end_at(deadline).unwrap_or(deadline)
    }
}

/// A non-blocking listener with a deep backlog (benchmarks open thousands of connections at once).
pub(crate) fn bind_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    socket.set_nonblocking(true)?;
    Ok(TcpListener::from_std(socket.into()))
}

pub(crate) fn build_workers(
    listener: TcpListener,
    settings: &Arc<Settings>,
    shared: &Arc<ServerState>,
    threads: usize,
) -> io::Result<Vec<Worker>> {
    let mut workers = Vec::with_capacity(threads);
    let mut senders = Vec::with_capacity(threads);
    for id in 0..threads {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let timer = Timer::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let (tx, rx) = mpsc::channel();
        senders.push((tx, Arc::clone(&waker)));
        workers.push(Worker {
            id,
            poll,
            waker,
            timer,
            armed: None,
            due_soon: false,
            listener: None,
            accept_retry_at: None,
            peers: Vec::new(),
            next_peer: 0,
            inbox: rx,
            slots: Vec::new(),
            free: Vec::new(),
            ready: Vec::with_capacity(1024),
            processing: Vec::with_capacity(1024),
            dirty: Vec::with_capacity(1024),
            out: Out {
                queue: VecDeque::with_capacity(4096),
                settings: Arc::clone(settings),
                shared: Arc::clone(shared),
                served: 0,
            },
        });
    }
    let mut listener = listener;
    workers[0]
        .poll
        .registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    workers[0].listener = Some(listener);
    workers[0].peers = senders;
    Ok(workers)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading and answering.
    Open,
    /// No more input (peer finished, or a `Connection: close` request): answer what is
    /// pending, then close.
    Closing,
    /// No more answers: send what is buffered, then close.
    Draining,
    /// Abort with a RST at the next flush.
    Resetting,
}

/// What happens to the connection after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persist {
    /// HTTP/1.1 default: stays open.
    KeepAlive,
    /// HTTP/1.0 that asked for keep-alive: stays open, and the answer must say so.
    KeepAlive10,
    /// Answered with `Connection: close`, then closed.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    Head,
    Bad,
}

/// An answer waiting for its deadline. Slots are recycled, so `gen` tells whether the
/// connection it belongs to is still the one in the slot.
#[derive(Debug, Clone, Copy)]
struct Pending {
    deadline: u64,
    idx: u32,
    gen: u32,
    kind: Kind,
    persist: Persist,
}

struct Slot {
    stream: Option<TcpStream>,
    gen: u32,
    rbuf: Box<[u8]>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Request-body bytes still to skip.
    body_left: u64,
    /// Answers of this connection in the delay queue.
    pending: u32,
    state: State,
    /// The socket may have unread input (edge-triggered readiness not yet consumed).
    readable: bool,
    /// Reading stopped because too much output is waiting.
    paused: bool,
    in_ready: bool,
    in_dirty: bool,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            stream: None,
            gen: 0,
            rbuf: vec![0u8; READ_BUF].into_boxed_slice(),
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(WRITE_BUF_INITIAL),
            wpos: 0,
            body_left: 0,
            pending: 0,
            state: State::Open,
            readable: false,
            paused: false,
            in_ready: false,
            in_dirty: false,
        }
    }

    #[inline]
    fn over_limits(&self, settings: &Settings) -> bool {
        self.wbuf.len() - self.wpos > settings.write_pause_bytes
            || self.pending >= MAX_PENDING_PER_CONN
    }

    /// Closes the connection (with a RST if `reset`) and readies the slot for reuse.
    fn close(&mut self, reset: bool) {
        if let Some(mut stream) = self.stream.take() {
            if reset {
                let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            } else {
                for _ in 0..CLOSE_DRAIN_READS {
                    match stream.read(&mut self.rbuf) {
                        Ok(n) if n > 0 => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        _ => break,
                    }
                }
            }
            // Dropping closes the descriptor, which also removes it from the epoll set.
            drop(stream);
        }
        self.gen = self.gen.wrapping_add(1);
        self.rstart = 0;
        self.rend = 0;
        self.wbuf.clear();
        self.wpos = 0;
        self.body_left = 0;
        self.pending = 0;
        self.state = State::Open;
        self.readable = false;
        self.paused = false;
        self.in_dirty = false;
    }
}

/// The answering side of a worker: the delay queue and what deciding an answer needs.
struct Out {
    queue: VecDeque<Pending>,
    settings: Arc<Settings>,
    shared: Arc<ServerState>,
    served: u64,
}

impl Out {
    /// Parses and answers (or queues answers for) the complete requests in the read buffer.
    fn parse(&mut self, slot: &mut Slot, idx: usize, now: u64) {
        while slot.state == State::Open
            && slot.rstart < slot.rend
            && !slot.over_limits(&self.settings)
        {
            if slot.body_left > 0 {
                let skip = slot.body_left.min((slot.rend - slot.rstart) as u64);
                slot.rstart += skip as usize;
                slot.body_left -= skip;
                continue;
            }
            let (len, kind, persist, body) = {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut req = httparse::Request::new(&mut headers);
                match req.parse(&slot.rbuf[slot.rstart..slot.rend]) {
                    Ok(httparse::Status::Complete(len)) => match inspect(&req) {
                        Some((kind, persist, body)) => (len, kind, persist, body),
                        None => (len, Kind::Bad, Persist::Close, 0),
                    },
                    Ok(httparse::Status::Partial) => {
                        if slot.rstart == 0 && slot.rend == slot.rbuf.len() {
                            // A request head larger than the whole buffer.
                            (0, Kind::Bad, Persist::Close, 0)
                        } else {
                            break;
                        }
                    }
                    Err(_) => (0, Kind::Bad, Persist::Close, 0),
                }
            };
            slot.rstart += len;
            slot.body_left = body;
            if persist == Persist::Close {
                slot.state = State::Closing;
            }
            self.respond(slot, idx, kind, persist, now);
        }
        if slot.rstart == slot.rend {
            slot.rstart = 0;
            slot.rend = 0;
        }
    }

    fn respond(&mut self, slot: &mut Slot, idx: usize, kind: Kind, persist: Persist, now: u64) {
        if self.settings.delay_ns == 0 {
            self.emit(slot, kind, persist);
            return;
        }
        // FIFO order must match deadline order; reads later in a pass can carry a fresher clock
        // than a connection resumed from its buffer, so never go below the tail.
        let mut deadline = now + self.settings.delay_ns;
        if let Some(last) = self.queue.back() {
            deadline = deadline.max(last.deadline);
        }
        self.queue.push_back(Pending {
            deadline,
            idx: idx as u32,
            gen: slot.gen,
            kind,
            persist,
        });
        slot.pending += 1;
    }

    /// Puts the answer (or the fault) into the connection's output.
    fn emit(&mut self, slot: &mut Slot, kind: Kind, persist: Persist) {
        let r = &self.settings.responses;
        if kind == Kind::Bad {
            slot.wbuf.extend_from_slice(&r.bad_request);
            slot.state = State::Draining;
            return;
        }
        if let Some(fault) = self.settings.fault {
            let n = self.shared.fault_count.fetch_add(1, Ordering::Relaxed) + 1;
            if n % fault.every == 0 {
                let full: &[u8] = if kind == Kind::Head { &r.head } else { &r.get };
                match fault.kind {
                    FaultKind::Reset => slot.state = State::Resetting,
                    FaultKind::CloseMidResponse => {
                        slot.wbuf.extend_from_slice(&full[..full.len() / 2]);
                        slot.state = State::Draining;
                    }
                    FaultKind::Garbage => {
                        slot.wbuf.extend_from_slice(GARBAGE);
                        slot.state = State::Draining;
                    }
                    FaultKind::Close => slot.state = State::Draining,
                }
                return;
            }
        }
        self.served += 1;
        let bytes: &[u8] = match (kind, persist) {
            (Kind::Head, Persist::KeepAlive) => &r.head,
            (Kind::Head, Persist::KeepAlive10) => &r.head_keep_alive,
            (Kind::Head, Persist::Close) => &r.head_close,
            (_, Persist::KeepAlive) => &r.get,
            (_, Persist::KeepAlive10) => &r.get_keep_alive,
            (_, Persist::Close) => &r.get_close,
        };
        slot.wbuf.extend_from_slice(bytes);
        if persist == Persist::Close {
            slot.state = State::Draining;
        }
    }
}

/// Reads what the server needs from a request head: (kind, connection afterwards, body length).
/// `None` for requests we refuse (chunked bodies, bad or conflicting Content-Length).
fn inspect(req: &httparse::Request<'_, '_>) -> Option<(Kind, Persist, u64)> {
    let kind = if req.method == Some("HEAD") {
        Kind::Head
    } else {
        Kind::Get
    };
    let http10 = req.version == Some(0);
    let mut close = http10;
    let mut body: Option<u64> = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let value: u64 = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
            if body.is_some_and(|b| b != value) {
                return None;
            }
            body = Some(value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return None;
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if http10 && token.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
    }
    let persist = match (close, http10) {
        (true, _) => Persist::Close,
        (false, true) => Persist::KeepAlive10,
        (false, false) => Persist::KeepAlive,
    };
    Some((kind, persist, body.unwrap_or(0)))
}

pub(crate) struct Worker {
    id: usize,
    poll: Poll,
    waker: Arc<Waker>,
    timer: Timer,
    /// The deadline the timer is set to, if it has not fired yet.
    armed: Option<u64>,
    /// The next delayed answer is due within `TIMER_EARLY_NS`: poll without blocking.
    due_soon: bool,
    listener: Option<TcpListener>,
    /// When to call accept again after it failed with the backlog not empty (worker 0 only).
    accept_retry_at: Option<u64>,
    /// Every worker's hand-over channel (worker 0 only).
    peers: Vec<(Sender<TcpStream>, Arc<Waker>)>,
    next_peer: usize,
    inbox: Receiver<TcpStream>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Connections to service in the next pass.
    ready: Vec<usize>,
    processing: Vec<usize>,
    /// Connections with output produced by the delay queue.
    dirty: Vec<usize>,
    out: Out,
}

impl Worker {
    pub(crate) fn waker(&self) -> Arc<Waker> {
        Arc::clone(&self.waker)
    }

    pub(crate) fn run(mut self) {
        candor_core::set_fine_timer_slack();
        let mut events = Events::with_capacity(1024);
        loop {
            // Leftover work (a connection resumed after its output drained) must not wait for a
            // new event; during a stall the timer is armed for the window end instead.
            let busy = self.due_soon || !self.ready.is_empty() || self.out.settings.busy_poll;
            let now = now_ns();
            let mut timeout = if busy && !self.stalled(now) {
                Some(Duration::ZERO)
            } else {
                None
            };
            if let Some(at) = self.accept_retry_at {
                let wait = Duration::from_nanos(at.saturating_sub(now));
                timeout = Some(timeout.map_or(wait, |t| t.min(wait)));
            }
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            if self.out.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            for event in events.iter() {
                match event.token() {
                    WAKER => self.take_inbox(),
                    TIMER => {
                        self.timer.acknowledge();
                        self.armed = None;
                    }
                    LISTENER => self.accept_all(),
                    Token(t) => self.mark_ready(t - FIRST_CONN, event),
                }
            }
            if self.accept_retry_at.is_some_and(|at| now_ns() >= at) {
                self.accept_all();
            }
            self.pass();
        }
    }

    #[inline]
    fn stalled(&self, now: u64) -> bool {
        self.out.settings.stall_end_at(now).is_some()
    }

    fn mark_ready(&mut self, idx: usize, event: &Event) {
        let Some(slot) = self.slots.get_mut(idx) else {
            return;
        };
        if slot.stream.is_none() {
            return;
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            slot.readable = true;
        }
        if !slot.in_ready {
            slot.in_ready = true;
            self.ready.push(idx);
        }
    }

    /// One round of work after the poll returned.
    fn pass(&mut self) {
        let now = now_ns();
        if let Some(end) = self.out.settings.stall_end_at(now) {
            // The global lock is held: nothing is processed until the window ends.
            self.arm(end);
            self.publish();
            return;
        }
        std::mem::swap(&mut self.ready, &mut self.processing);
        for i in 0..self.processing.len() {
            let idx = self.processing[i];
            self.service(idx, now);
        }
        self.processing.clear();
        if !self.out.queue.is_empty() {
            self.emit_due();
            for i in 0..self.dirty.len() {
                let idx = self.dirty[i];
                if self.slots[idx].in_dirty {
                    self.flush(idx);
                }
            }
            self.dirty.clear();
        }
        self.due_soon = false;
        if let Some(front) = self.out.queue.front() {
            let at = self.out.settings.effective(front.deadline);
            if at <= now_ns() + TIMER_EARLY_NS {
                // Under load answers fall due microseconds apart: polling without a timeout
                // and spinning beats two timerfd syscalls and a wake-up per answer.
                self.due_soon = true;
            } else {
                self.arm(at - TIMER_EARLY_NS);
            }
        }
        self.publish();
    }

    fn publish(&self) {
        self.out.shared.served[self.id]
            .0
            .store(self.out.served, Ordering::Relaxed);
    }

    fn arm(&mut self, at: u64) {
        if self.armed == Some(at) {
            return;
        }
        self.timer.arm(at);
        self.armed = Some(at);
    }

    /// Sends the delayed answers that are due. The timer fires up to `TIMER_EARLY_NS` before
    /// the first one; that last stretch is spun on the clock for a precise service time.
    fn emit_due(&mut self) {
        let mut now = now_ns();
        if let Some(front) = self.out.queue.front() {
            let due = self.out.settings.effective(front.deadline);
            if due > now && due - now <= TIMER_EARLY_NS {
                while now < due {
                    std::hint::spin_loop();
                    now = now_ns();
                }
            }
        }
        while let Some(front) = self.out.queue.front() {
            if front.deadline > now {
                break;
            }
            let p = *front;
            self.out.queue.pop_front();
            let idx = p.idx as usize;
            let slot = &mut self.slots[idx];
            if slot.stream.is_none() || slot.gen != p.gen {
                continue;
            }
            slot.pending -= 1;
            if matches!(slot.state, State::Open | State::Closing) {
                self.out.emit(slot, p.kind, p.persist);
            }
            if !slot.in_dirty {
                slot.in_dirty = true;
                self.dirty.push(idx);
            }
        }
    }

    /// Reads and answers what one connection has sent, then sends what is ready.
    fn service(&mut self, idx: usize, batch_now: u64) {
        let delayed = self.out.settings.delay_ns > 0;
        let slot = &mut self.slots[idx];
        slot.in_ready = false;
        if slot.stream.is_none() {
            return;
        }
        let mut now = batch_now;
        loop {
            self.out.parse(slot, idx, now);
            if slot.state != State::Open {
                break;
            }
            // Checked before `readable`: requests may wait in the buffer even when the socket
            // is empty, and the flush that frees room must come back for them.
            if slot.over_limits(&self.out.settings) {
                slot.paused = true;
                break;
            }
            if !slot.readable {
                break;
            }
            if slot.rstart > 0 {
                slot.rbuf.copy_within(slot.rstart..slot.rend, 0);
                slot.rend -= slot.rstart;
                slot.rstart = 0;
            }
            let room = slot.rbuf.len() - slot.rend;
            let Some(stream) = slot.stream.as_mut() else {
                return;
            };
            match stream.read(&mut slot.rbuf[slot.rend..]) {
                Ok(0) => {
                    slot.readable = false;
                    slot.state = State::Closing;
                }
                Ok(n) => {
                    slot.rend += n;
                    // A short read emptied the socket; edge-triggered polling reports new data.
                    if n < room {
                        slot.readable = false;
                    }
                    if delayed {
                        now = now_ns();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => slot.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    slot.close(false);
                    self.free.push(idx);
                    return;
                }
            }
        }
        self.flush(idx);
    }

    /// Writes buffered output; closes the connection when its state says it is finished.
    fn flush(&mut self, idx: usize) {
        let slot = &mut self.slots[idx];
        slot.in_dirty = false;
        let Some(stream) = slot.stream.as_mut() else {
            return;
        };
        if slot.state == State::Resetting {
            // Earlier answers go out first if the socket takes them; the RST discards the rest.
            let _ = stream.write(&slot.wbuf[slot.wpos..]);
            slot.close(true);
            self.free.push(idx);
            return;
        }
        while slot.wpos < slot.wbuf.len() {
            match stream.write(&slot.wbuf[slot.wpos..]) {
                Ok(0) => {
                    slot.close(false);
                    self.free.push(idx);
                    return;
                }
                Ok(n) => slot.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    slot.close(false);
                    self.free.push(idx);
                    return;
                }
            }
        }
        if slot.wpos == slot.wbuf.len() {
            slot.wbuf.clear();
            slot.wpos = 0;
            let finished = match slot.state {
                State::Draining => true,
                State::Closing => slot.pending == 0,
                _ => false,
            };
            if finished {
                slot.close(false);
                self.free.push(idx);
                return;
            }
        }
        if slot.paused && !slot.over_limits(&self.out.settings) {
            slot.paused = false;
            if !slot.in_ready {
                slot.in_ready = true;
                self.ready.push(idx);
            }
        }
    }

    fn accept_all(&mut self) {
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((stream, _)) => {
                    // Small answers must leave at once, not wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let target = self.next_peer;
                    self.next_peer = (self.next_peer + 1) % self.peers.len().max(1);
                    if target == self.id || self.peers.len() <= 1 {
                        self.register(stream);
                    } else {
                        let (tx, waker) = &self.peers[target];
                        if tx.send(stream).is_ok() {
                            let _ = waker.wake();
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.accept_retry_at = None;
                    return;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                // Out of descriptors or memory: the rest stays queued in the backlog, which
                // raises no new edge, so come back for it once some may have been freed.
                Err(_) => {
                    self.accept_retry_at = Some(now_ns() + ACCEPT_RETRY_NS);
                    return;
                }
            }
        }
    }

    fn take_inbox(&mut self) {
        while let Ok(stream) = self.inbox.try_recv() {
            self.register(stream);
        }
    }

    fn register(&mut self, mut stream: TcpStream) {
        let idx = match self.free.pop() {
            Some(idx) => idx,
            None => {
                self.slots.push(Slot::new());
                self.slots.len() - 1
            }
        };
        let registered = self.poll.registry().register(
            &mut stream,
            Token(FIRST_CONN + idx),
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_err() {
            self.free.push(idx);
            return;
        }
        let slot = &mut self.slots[idx];
        slot.stream = Some(stream);
        slot.state = State::Open;
        slot.readable = false;
    }
}
