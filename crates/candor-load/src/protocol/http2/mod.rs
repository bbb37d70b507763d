//! HTTP/2 beneath the engine core: a lean client on mio, in the style of `engine/driver.rs`
//! (plain or TLS through `engine/transport.rs`'s `Sock`, ALPN `h2`). Every decision is the
//! core's, as for the other protocols: which due request goes on which slot (a slot is a stream
//! of a connection, `--streams` per connection), whether a stream may open under the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS, timeouts (a stream that times out is reset with RST_STREAM
//! and its connection carries on), `generator_late`, stop, drain and the census.
//!
//! This file speaks the protocol: the preface, SETTINGS and their acks, PING acks, flow control
//! both ways (a WINDOW_UPDATE for every half window received; request bodies wait for the
//! server's windows), GOAWAY (streams above its last stream id fail as `read`: they were sent
//! and never processed, and candor never retries behind the user's back; streams below it
//! finish, then the connection closes and the requests waiting for a stream reconnect),
//! RST_STREAM, HEADERS with CONTINUATION. Requests are encoded by `frame.rs` as HPACK literals
//! (once per fixed request before the run, per request into a prepared buffer for a filled
//! one); responses are decoded by `hpack.rs`, which hands each header over without copying it
//! (after the first response, constant headers come from its dynamic table), and only
//! `:status` and what the response checks need are looked at. Nothing allocates per request in
//! steady state (`tests/h2.rs` counts).
//!
//! Why not the `h2` crate: see docs/protocols.md (it allocated ~5 times per request and cost
//! 0.6x h2load's requests per CPU-second).

mod connect;
pub mod frame;
mod hpack;
mod receive;

use crate::config::{LoadConfig, Scheme};
use crate::engine::backoff::Fault;
use crate::engine::core::{Core, CoreConfig, HaltState, Plan, TimeoutScope};
use crate::engine::ledger::Ledger;
use crate::engine::socket_steps;
use crate::pool::{GateTicket, PoolReport, NO_START, TIMER};
use crate::protocol::observe::ResponseObserver;
use crate::schedule::Schedule;
use crate::shared::{Failure, Halt, PhaseAcc, Prepared, WorkerSetup};
use crate::transport::Sock;
use crate::workload::check::ResponseChecks;
use candor_core::timerfd::TimerFd;
use candor_core::{now_ns, Pacer, Pacing, Wait};
use frame::FrameHeader;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// Frames are at most 16 KiB (this client never raises SETTINGS_MAX_FRAME_SIZE); room for a few.
const READ_BUFFER: usize = 64 * 1024;
/// Receive windows: large enough that a response body never waits for a WINDOW_UPDATE round
/// trip (the protocol's default of 64 KiB would make big bodies measure the window).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;
/// How often connects that take too long are looked for (as the core's timeout scan).
const CONNECT_SCAN_NS: u64 = crate::engine::core::TIMEOUT_SCAN_NS;

#[derive(Clone, Copy, PartialEq, Debug)]
enum ConnState {
    Down,
    Connecting,
    Handshaking,
    /// The preface is sent; waiting for the server's SETTINGS.
    Settings,
    Open,
}

/// One slot's stream (a slot carries one request at a time).
#[derive(Clone, Copy, Default)]
struct Stream {
    /// 0: no stream (the request waits for its connection or for a stream).
    id: u32,
    send_window: i64,
    /// The body: where it starts in the request's HTTP/1.1 bytes (or in the slot's gRPC
    /// message, `grpc_body`), its length, how much is sent.
    grpc_body: bool,
    body_at: usize,
    body_len: usize,
    body_sent: usize,
    /// Receive-window bytes not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    status: u16,
    /// gRPC: the `grpc-status` of the response's trailers (or of a trailers-only response).
    grpc_status: Option<candor_grpc::Code>,
}

struct Conn {
    sock: Option<Sock>,
    state: ConnState,
    connect_called: u64,
    tcp_connected: u64,
    rbuf: Box<[u8]>,
    rlen: usize,
    wbuf: Vec<u8>,
    woff: usize,
    next_id: u32,
    /// The server's SETTINGS and the connection's send window.
    max_streams: usize,
    initial_window: i64,
    max_frame: usize,
    send_window: i64,
    /// Connection receive-window bytes not yet given back.
    unacked: u32,
    decoder: hpack::Decoder,
    /// A header block being gathered from HEADERS and CONTINUATION frames: its stream (0: none)
    /// and whether its HEADERS frame ended the stream.
    block: Vec<u8>,
    block_stream: u32,
    block_ends: bool,
    /// The server sent GOAWAY: no new streams here.
    goaway: bool,
    /// Open streams: (id, slot).
    active: Vec<(u32, usize)>,
    /// Frames were buffered since the last write: in `Driver::dirty`, written once per pass.
    dirty: bool,
}

impl Conn {
    fn new(streams: usize) -> Conn {
        Conn {
            sock: None,
            state: ConnState::Down,
            connect_called: 0,
            tcp_connected: 0,
            rbuf: vec![0u8; READ_BUFFER].into_boxed_slice(),
            rlen: 0,
            wbuf: Vec::with_capacity(64 * 1024),
            woff: 0,
            next_id: 1,
            max_streams: usize::MAX,
            initial_window: frame::DEFAULT_WINDOW,
            max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            unacked: 0,
            decoder: hpack::Decoder::default(),
            block: Vec::with_capacity(16 * 1024),
            block_stream: 0,
            block_ends: false,
            goaway: false,
            active: Vec::with_capacity(streams),
            dirty: false,
        }
    }

    fn slot_of(&self, id: u32) -> Option<usize> {
        self.active.iter().find(|a| a.0 == id).map(|a| a.1)
    }

    fn forget(&mut self, id: u32) {
        if let Some(i) = self.active.iter().position(|a| a.0 == id) {
            self.active.swap_remove(i);
        }
    }
}

/// A prepared request's HEADERS block, encoded once before the run.
struct Fixed {
    block: Vec<u8>,
    body_at: usize,
}

/// The HTTP/1.1 bytes of slot `slot`'s request: filled by the core's maker, or prepared.
#[inline]
fn request_bytes<'a>(core: &'a Core, requests: &'a [Prepared], slot: usize) -> &'a [u8] {
    match core.slot_request(slot) {
        Some((bytes, _)) => bytes,
        None => &requests[core.exchange(slot).request as usize].bytes,
    }
}

/// A protocol error on a connection: a GOAWAY with `code` is sent (as far as the socket takes it
/// at once), the connection is closed, and its streams fail with `Failure::Parse`.
struct ProtocolError {
    code: u32,
}

impl ProtocolError {
    const PROTOCOL: ProtocolError = ProtocolError {
        code: frame::PROTOCOL_ERROR,
    };
    const FLOW_CONTROL: ProtocolError = ProtocolError {
        code: frame::FLOW_CONTROL_ERROR,
    };
    const FRAME_SIZE: ProtocolError = ProtocolError {
        code: frame::FRAME_SIZE_ERROR,
    };
    const COMPRESSION: ProtocolError = ProtocolError {
        code: frame::COMPRESSION_ERROR,
    };
}

/// Runs one HTTP/2 load thread: opens its pool (connect, TLS with ALPN `h2`, preface, the
/// server's SETTINGS), reports it through `ticket`, and from the start the run sets runs to the
/// end of the schedule plus the drain; returns its two phases (0 = warm-up, 1 = measured).
pub(crate) fn run_worker(
    setup: WorkerSetup,
    ticket: GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<Schedule>, String>,
) -> Result<[PhaseAcc; 2], String> {
    let mut driver = Driver::new(setup)?;
    let report = crate::pool::open(&mut driver);
    let start_ns = ticket.report_and_wait(report).ok_or(NO_START)?;
    if let Some(msg) = driver.fatal.take() {
        return Err(msg);
    }
    let warmup_ns = driver.config.warmup_ns;
    driver
        .core
        .begin_at(start_ns, schedule_at(start_ns)?, warmup_ns);
    driver.run()
}

struct Driver {
    config: Arc<LoadConfig>,
    https: bool,
    requests: Arc<[Prepared]>,
    fixed: Vec<Fixed>,
    /// The HEADERS block of a filled request, encoded per request.
    scratch: Vec<u8>,
    /// Per slot, the observer of its stream's response (checks, the excerpt of a failing body).
    observers: Vec<ResponseObserver>,
    tls: Option<Arc<rustls::ClientConfig>>,
    conns: Vec<Conn>,
    streams: Vec<Stream>,
    /// Slots the timeout scan failed, to reset.
    expired: Vec<usize>,
    /// Connections with frames buffered in this pass: one write each at its end, so that the
    /// requests of one pass leave in one system call per connection, as h2load writes them.
    dirty: Vec<usize>,
    poll: Poll,
    timer: TimerFd,
    core: Core,
    halt: Halt,
    pool: Option<PoolReport>,
    next_connect_scan: u64,
    /// A condition that makes the run meaningless (the server does not speak HTTP/2).
    fatal: Option<String>,
    /// A request waited for a stream on a connection whose server allowed none.
    saw_zero_stream_limit: bool,
    /// A gRPC run: a response ends at its trailers and is judged by their `grpc-status`.
    grpc: bool,
    /// gRPC server streaming: per slot, the messages of its response counted as they arrive
    /// (for the time to the first one); empty otherwise.
    grpc_messages: Vec<candor_grpc::FrameDecoder>,
    /// gRPC with a templated message: its encoder, and per slot the message encoded from the
    /// filled JSON (sent instead of the request's body); empty otherwise.
    grpc_encoder: Option<candor_grpc::RequestEncoder>,
    grpc_bodies: Vec<Vec<u8>>,
}

impl Driver {
    fn new(setup: WorkerSetup) -> Result<Driver, String> {
        let config = setup.config.clone();
        let https = match config.target.scheme {
            Scheme::Https => true,
            Scheme::Http => false,
            Scheme::Tcp => return Err("HTTP/2 needs an http:// or https:// target".into()),
        };
        let tls = if https {
            Some(
                crate::transport::tls::client_config(&config.tls, &[b"h2"])
                    .map_err(|e| e.to_string())?,
            )
        } else {
            None
        };
        let streams = config.streams.max(1);
        let mut fixed = Vec::with_capacity(setup.requests.len());
        for r in setup.requests.iter() {
            let mut block = Vec::new();
            let body_at = frame::encode_request(&r.bytes, https, &mut block)
                .map_err(|_| "a request cannot be sent over HTTP/2".to_string())?;
            fixed.push(Fixed { block, body_at });
        }
        let cfg =
            CoreConfig::for_thread(&setup, streams, TimeoutScope::Stream, setup.requests.len());
        let ledger = Ledger::new(&setup);
        let mut core = Core::new(cfg, setup.schedule, ledger);
        // The workload as over HTTP/1.1: the maker chooses each request by its `seq` (weights)
        // and fills templated or replayed ones into its slot's buffer; checks apply per request.
        let compiled =
            crate::config::request_set::compile_requests(&config).map_err(|e| e.to_string())?;
        let checks = crate::config::request_set::has_checks(&config)
            .then(|| Arc::<[ResponseChecks]>::from(compiled.checks.clone()));
        let accept: Arc<[crate::status::StatusSet]> = compiled.accept.clone().into();
        let mut scratch_len = fixed.iter().map(|f| f.block.len()).max().unwrap_or(0);
        let slots = core.slot_count();
        if let Some(source) = crate::config::request_set::request_source(&config, &compiled, slots)
        {
            // A filled request's block is never longer than its HTTP/1.1 bytes plus a few
            // bytes of lengths per header; twice the largest is ample.
            scratch_len = scratch_len.max(2 * source.max_request_bytes() + 64);
            core.set_source(Box::new(source));
        }
        let poll = Poll::new().map_err(|e| format!("poll: {e}"))?;
        let timer = TimerFd::new().map_err(|e| format!("timerfd: {e}"))?;
        poll.registry()
            .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)
            .map_err(|e| format!("timerfd: {e}"))?;
        let slots = core.slot_count();
        let mut observer = ResponseObserver::default();
        observer.keep_excerpts(accept);
        if let Some(table) = checks {
            observer.set_checks(table);
        }
        Ok(Driver {
            https,
            fixed,
            scratch: Vec::with_capacity(scratch_len),
            observers: vec![observer; slots],
            tls,
            conns: (0..setup.connections).map(|_| Conn::new(streams)).collect(),
            streams: vec![Stream::default(); slots],
            expired: Vec::with_capacity(slots),
            dirty: Vec::with_capacity(setup.connections),
            poll,
            timer,
            core,
            halt: Halt {
                signal: setup.stop,
                end: setup.end,
            },
            pool: None,
            next_connect_scan: 0,
            fatal: None,
            saw_zero_stream_limit: false,
            grpc: config.grpc.is_some(),
            grpc_messages: match &config.grpc {
                Some(g) if g.kind == candor_grpc::CallKind::ServerStreaming => {
                    vec![candor_grpc::FrameDecoder::default(); slots]
                }
                _ => Vec::new(),
            },
            grpc_encoder: config.grpc.as_ref().and_then(|g| g.templated.clone()),
            grpc_bodies: match config.grpc.as_ref().and_then(|g| g.templated.as_ref()) {
                Some(_) => vec![Vec::with_capacity(scratch_len); slots],
                None => Vec::new(),
            },
            requests: setup.requests,
            config,
        })
    }

    fn run(mut self) -> Result<[PhaseAcc; 2], String> {
        let mut events = Events::with_capacity(1024);
        let mut pacer = Pacer::new(match self.config.spin_ns {
            Some(spin_ns) => Pacing::Fixed { spin_ns },
            None => Pacing::Adaptive,
        });
        let mut idle_since: Option<u64> = None;
        loop {
            let now = now_ns();
            if let Some(t) = idle_since.take() {
                pacer.spun(now.saturating_sub(t));
            }
            if let Some(msg) = self.fatal.take() {
                return Err(msg);
            }
            let sent = self.turn(now);
            let (send_at, wake) = match self.core.plan(now) {
                Plan::Done => break,
                Plan::Wait { send_at, wake } => (send_at, wake.min(self.next_connect_scan)),
            };
            let mut until = wake;
            let mut spin = wake <= now;
            if send_at != u64::MAX {
                match pacer.wait(now, send_at) {
                    Wait::Spin => spin = true,
                    Wait::Sleep { until_ns } => until = until.min(until_ns),
                }
            }
            let timeout = if spin {
                Some(std::time::Duration::ZERO)
            } else {
                self.timer.arm(until);
                None
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            if spin && !sent && events.is_empty() {
                idle_since = Some(now);
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    if !spin {
                        pacer.woke(until, now_ns());
                    }
                    self.timer.fired();
                    continue;
                }
                self.handle_event(ev);
                if send_at != u64::MAX {
                    // A send that fell due while this batch is handled leaves now.
                    let now = now_ns();
                    if now >= send_at {
                        self.dispatch_due(now);
                    }
                }
            }
        }
        Ok(self.finish(pacer.stats()))
    }

    /// One pass of the loop's decisions at `now`: the core learns of an end asked for and
    /// flushes intervals, what is due is handed to its connection and written, and the timeout
    /// scan resets the streams it failed; whether anything was due.
    fn turn(&mut self, now: u64) -> bool {
        let halt = HaltState {
            aborting: self.halt.aborting(),
            requested_at: self.halt.end.requested().map(|(_, at)| at),
        };
        self.core.halt(now, halt);
        self.core.flush_due(now);
        let sent = self.dispatch_due(now);
        self.scan_timeouts(now);
        sent
    }

    /// Hands every due request to its connection, then writes; whether any was due.
    fn dispatch_due(&mut self, now: u64) -> bool {
        let mut any = false;
        while let Some(due) = self.core.next_due(now) {
            any = true;
            match self.conns[due.conn].state {
                ConnState::Open => self.open_streams(due.conn, now),
                // After ends without an answer, only once its back-off ran out (the request
                // waits meanwhile: send lag).
                ConnState::Down if self.core.may_connect(due.conn, now) => {
                    self.start_connect(due.conn, now)
                }
                ConnState::Down => {}
                // Sent as soon as the connection is ready; the wait counts against it.
                _ => {}
            }
        }
        while let Some(i) = self.core.deferred_connect(now) {
            if self.conns[i].state == ConnState::Down {
                self.start_connect(i, now);
            }
        }
        self.flush_dirty(now);
        any
    }

    /// Writes every connection that buffered frames in this pass.
    fn flush_dirty(&mut self, now: u64) {
        while let Some(i) = self.dirty.pop() {
            self.conns[i].dirty = false;
            self.flush(i, now);
        }
    }

    fn mark_dirty(&mut self, i: usize) {
        if !self.conns[i].dirty {
            self.conns[i].dirty = true;
            self.dirty.push(i);
        }
    }

    /// The core's timeout scan (it books the failures); the expired streams are reset. Also
    /// bounds connects by the same timeout.
    fn scan_timeouts(&mut self, now: u64) {
        let expired = &mut self.expired;
        self.core.scan_timeouts(now, |slot| expired.push(slot));
        let mut touched = false;
        while let Some(slot) = self.expired.pop() {
            let c = self.core.conn_of(slot);
            let id = std::mem::take(&mut self.streams[slot].id);
            if id != 0 {
                let conn = &mut self.conns[c];
                conn.forget(id);
                frame::put_rst_stream(&mut conn.wbuf, id, frame::CANCEL);
                touched = true;
            }
        }
        if touched {
            for c in 0..self.conns.len() {
                if self.conns[c].state == ConnState::Open {
                    self.mark_dirty(c);
                    self.after_streams_closed(c, now);
                }
            }
            self.flush_dirty(now);
        }
        if now >= self.next_connect_scan {
            self.next_connect_scan = now + CONNECT_SCAN_NS;
            for c in 0..self.conns.len() {
                let conn = &self.conns[c];
                let opening = matches!(
                    conn.state,
                    ConnState::Connecting | ConnState::Handshaking | ConnState::Settings
                );
                if opening && now.saturating_sub(conn.connect_called) >= self.config.timeout_ns {
                    self.connect_failed(c, Failure::Timeout, now);
                }
            }
        }
    }

    fn handle_event(&mut self, ev: &mio::event::Event) {
        let i = ev.token().0;
        if i >= self.conns.len() || self.conns[i].sock.is_none() {
            return;
        }
        let readable = ev.is_readable() || ev.is_read_closed();
        let writable = ev.is_writable() || ev.is_error();
        let now = now_ns();
        match self.conns[i].state {
            ConnState::Connecting => {
                if writable || readable {
                    self.finish_connect(i, now);
                }
            }
            ConnState::Handshaking => self.drive_handshake(i, now),
            ConnState::Settings | ConnState::Open => {
                if writable {
                    self.flush(i, now);
                }
                if readable && self.conns[i].sock.is_some() {
                    self.read_frames(i, ev.is_read_closed());
                }
            }
            ConnState::Down => {}
        }
    }

    /// Writes what is buffered for connection `i`, as far as the socket takes it.
    fn flush(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        while c.woff < c.wbuf.len() {
            match sock.write(&c.wbuf[c.woff..]) {
                Ok(0) => return self.connection_lost(i, Failure::Write, now),
                Ok(n) => c.woff += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.connection_lost(i, Failure::Write, now),
            }
        }
        if c.woff == c.wbuf.len() {
            c.wbuf.clear();
            c.woff = 0;
        }
        match sock.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => self.connection_lost(i, Failure::Write, now),
        }
    }

    /// Opens a stream for every request connection `i` carries that has none, in order, while
    /// the server's limit allows, then writes.
    fn open_streams(&mut self, i: usize, now: u64) {
        if self.conns[i].state != ConnState::Open {
            return;
        }
        let mut k = 0;
        while !self.conns[i].goaway {
            let Some(slot) = self.core.carried_at(i, k) else {
                break;
            };
            k += 1;
            if self.streams[slot].id != 0 {
                continue;
            }
            let limit = self.conns[i].max_streams;
            if !self.core.open_stream(slot, limit) {
                if limit == 0 {
                    self.saw_zero_stream_limit = true;
                }
                break;
            }
            if !self.start_stream(i, slot, now) {
                k -= 1;
            }
        }
        self.mark_dirty(i);
    }

    /// Writes slot `slot`'s HEADERS (and as much body as the windows allow) on connection `i`.
    /// False if the request failed instead (it cannot be sent over HTTP/2).
    fn start_stream(&mut self, i: usize, slot: usize, now: u64) -> bool {
        if let Some(encoder) = &self.grpc_encoder {
            // A templated gRPC message: the filled JSON is encoded here, per request.
            return self.start_grpc_stream(i, slot, encoder.clone(), now);
        }
        let c = &mut self.conns[i];
        let bytes = request_bytes(&self.core, &self.requests, slot);
        let (block, body_at): (&[u8], usize) = match self.core.slot_request(slot) {
            Some(_) => match frame::encode_request(bytes, self.https, &mut self.scratch) {
                Ok(at) => (&self.scratch, at),
                Err(_) => {
                    self.core.fail(slot, Failure::Write, now);
                    return false;
                }
            },
            None => {
                let f = &self.fixed[self.core.exchange(slot).request as usize];
                (&f.block, f.body_at)
            }
        };
        let id = c.next_id;
        // Stream ids run out after 2^30 streams: then the connection is used up, like a GOAWAY.
        c.next_id += 2;
        if c.next_id > 0x7fff_ffff {
            c.goaway = true;
        }
        let body_len = bytes.len() - body_at;
        let before = c.wbuf.len();
        frame::put_headers(&mut c.wbuf, id, block, body_len == 0, c.max_frame);
        let written = c.wbuf.len() - before;
        self.streams[slot] = Stream {
            id,
            send_window: c.initial_window,
            body_at,
            body_len,
            ..Stream::default()
        };
        self.opened(i, slot, id, written, now);
        true
    }

    /// [`Driver::start_stream`] of a gRPC call whose message is a template: the filled JSON
    /// (the body of the slot's filled request) encoded as the framed protobuf the stream sends;
    /// a JSON the fill broke (a data value with a quote, say) fails the request in class
    /// `template`, unsent.
    fn start_grpc_stream(
        &mut self,
        i: usize,
        slot: usize,
        encoder: candor_grpc::RequestEncoder,
        now: u64,
    ) -> bool {
        let bytes = request_bytes(&self.core, &self.requests, slot);
        let Ok(body_at) = frame::encode_request_reencoded(bytes, self.https, &mut self.scratch)
        else {
            self.core.fail(slot, Failure::Write, now);
            return false;
        };
        let message = &mut self.grpc_bodies[slot];
        message.clear();
        if encoder.encode_framed(&bytes[body_at..], message).is_err() {
            self.core.fail(slot, Failure::Template, now);
            return false;
        }
        let c = &mut self.conns[i];
        let id = c.next_id;
        c.next_id += 2;
        if c.next_id > 0x7fff_ffff {
            c.goaway = true;
        }
        let body_len = message.len();
        let before = c.wbuf.len();
        frame::put_headers(&mut c.wbuf, id, &self.scratch, body_len == 0, c.max_frame);
        let written = c.wbuf.len() - before;
        self.streams[slot] = Stream {
            id,
            send_window: c.initial_window,
            grpc_body: true,
            body_len,
            ..Stream::default()
        };
        self.opened(i, slot, id, written, now);
        true
    }

    /// Stream `id` of connection `i` carries slot `slot`'s request, its HEADERS (`written`
    /// bytes) buffered at `now`: booked, and its body sent as far as the windows allow.
    fn opened(&mut self, i: usize, slot: usize, id: u32, written: usize, now: u64) {
        let c = &mut self.conns[i];
        c.active.push((id, slot));
        self.observers[slot].begin(self.core.exchange(slot).request as usize);
        if let Some(messages) = self.grpc_messages.get_mut(slot) {
            messages.reset();
        }
        self.core.sent(slot, now);
        self.core.written(slot, written);
        if self.streams[slot].body_len > 0 {
            self.send_body(i, slot);
        }
    }

    /// Sends as much of slot `slot`'s body as the windows and the frame size allow.
    fn send_body(&mut self, i: usize, slot: usize) {
        let c = &mut self.conns[i];
        let s = &mut self.streams[slot];
        let bytes = if s.grpc_body {
            &self.grpc_bodies[slot]
        } else {
            request_bytes(&self.core, &self.requests, slot)
        };
        let before = c.wbuf.len();
        while s.body_sent < s.body_len {
            let n = (s.body_len - s.body_sent)
                .min(c.max_frame)
                .min(s.send_window.max(0) as usize)
                .min(c.send_window.max(0) as usize);
            if n == 0 {
                break;
            }
            let from = s.body_at + s.body_sent;
            s.body_sent += n;
            let flags = if s.body_sent == s.body_len {
                frame::END_STREAM
            } else {
                0
            };
            frame::put_header(&mut c.wbuf, n, frame::DATA, flags, s.id);
            c.wbuf.extend_from_slice(&bytes[from..from + n]);
            s.send_window -= n as i64;
            c.send_window -= n as i64;
        }
        let written = c.wbuf.len() - before;
        if written > 0 {
            self.core.written(slot, written);
        }
    }

    /// Windows opened on connection `i`: bodies that waited go on.
    fn resume_bodies(&mut self, i: usize) {
        for k in 0..self.conns[i].active.len() {
            let slot = self.conns[i].active[k].1;
            let s = &self.streams[slot];
            if s.body_sent < s.body_len {
                self.send_body(i, slot);
            }
        }
    }

    /// Reads what connection `i` has received and handles its frames (see `engine/driver.rs` on
    /// `until_blocked`).
    fn read_frames(&mut self, i: usize, until_blocked: bool) {
        loop {
            let c = &mut self.conns[i];
            if !matches!(c.state, ConnState::Settings | ConnState::Open) {
                // Closed (and perhaps connecting again) while its frames were handled.
                return;
            }
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let len = c.rlen;
            match sock.read(&mut c.rbuf[len..]) {
                Ok(0) => return self.end_of_stream(i, now_ns()),
                Ok(n) => {
                    let now = now_ns();
                    let drained =
                        !until_blocked && len + n < c.rbuf.len() && matches!(sock, Sock::Plain(_));
                    if !self.received(i, n, now) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.connection_lost(i, socket_steps::read_failure(&e), now_ns()),
            }
        }
        // Acks, window updates and the streams that could open: out in one write.
        if self.conns[i].sock.is_some() {
            self.flush(i, now_ns());
        }
    }

    /// The server closed connection `i` (its end of stream was read at `now`): before its
    /// SETTINGS the connect failed; after, the streams it carried are cut off.
    fn end_of_stream(&mut self, i: usize, now: u64) {
        if self.conns[i].state == ConnState::Settings {
            return self.connect_failed(i, Failure::Connect, now);
        }
        self.connection_lost(i, Failure::Read, now);
    }

    /// `n` more bytes were read into connection `i`'s buffer at `now`: the core counts them and
    /// their frames are handled. False when the connection closed.
    fn received(&mut self, i: usize, n: usize, now: u64) -> bool {
        self.conns[i].rlen += n;
        self.core.read(i, n);
        self.process_frames(i, now)
    }

    /// Handles every whole frame buffered for connection `i`; false if the connection closed.
    fn process_frames(&mut self, i: usize, now: u64) -> bool {
        let buf = std::mem::take(&mut self.conns[i].rbuf);
        let mut at = 0;
        let mut closed_streams = false;
        let mut failed: Option<ProtocolError> = None;
        let rlen = self.conns[i].rlen;
        while rlen - at >= frame::HEADER_LEN {
            let h = FrameHeader::parse(&buf[at..]);
            if h.len > frame::DEFAULT_MAX_FRAME {
                failed = Some(ProtocolError::FRAME_SIZE);
                break;
            }
            if rlen - at < frame::HEADER_LEN + h.len {
                break;
            }
            let payload = &buf[at + frame::HEADER_LEN..at + frame::HEADER_LEN + h.len];
            at += frame::HEADER_LEN + h.len;
            match self.frame(i, h, payload, now) {
                Ok(closed) => closed_streams |= closed,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            if self.conns[i].sock.is_none() {
                break;
            }
        }
        let c = &mut self.conns[i];
        c.rbuf = buf;
        if let Some(error) = failed {
            // The server is told why (RFC 9113 §5.4.1), as far as the socket takes it now.
            if let Some(sock) = c.sock.as_mut() {
                frame::put_goaway(&mut c.wbuf, error.code);
                let _ = sock.write(&c.wbuf[c.woff..]);
                let _ = sock.flush();
            }
            // Before the server's SETTINGS or after, the server broke the protocol: a `parse`
            // failure of what the connection carried, booked with the code candor sent.
            let fault = Fault::H2Error(error.code);
            if c.state == ConnState::Settings {
                self.connect_failed_for(i, Failure::Parse, fault, now);
            } else {
                self.connection_lost_for(i, Failure::Parse, Some(fault), now);
            }
            return false;
        }
        if c.sock.is_none() {
            return false;
        }
        c.rbuf.copy_within(at..c.rlen, 0);
        c.rlen -= at;
        if closed_streams {
            self.after_streams_closed(i, now);
        }
        matches!(self.conns[i].state, ConnState::Settings | ConnState::Open)
    }

    /// Streams of connection `i` closed: after a GOAWAY, the last one closes the connection (and
    /// requests waiting for a stream connect again); otherwise waiting requests may open one.
    fn after_streams_closed(&mut self, i: usize, now: u64) {
        let c = &self.conns[i];
        if c.goaway && c.active.is_empty() {
            close(&mut self.conns[i], &self.poll);
            self.core.connection_down(i, None, now);
            if self.core.carried_at(i, 0).is_some() && self.core.may_connect(i, now) {
                self.start_connect(i, now);
            }
        } else {
            self.open_streams(i, now);
        }
    }

    /// A connection failed before it was open: every request waiting on it fails with `kind`.
    fn connect_failed(&mut self, i: usize, kind: Failure, now: u64) {
        let fault = match (kind, self.conns[i].state) {
            (Failure::Timeout, _) => Fault::ConnectTimeout,
            (_, ConnState::Handshaking) => Fault::Tls,
            (_, ConnState::Settings) => Fault::Closed,
            _ => Fault::Refused,
        };
        self.connect_failed_for(i, kind, fault, now);
    }

    /// [`Driver::connect_failed`] for a known `fault`; the connection's back-off starts.
    pub(super) fn connect_failed_for(&mut self, i: usize, kind: Failure, fault: Fault, now: u64) {
        close(&mut self.conns[i], &self.poll);
        for s in 0..self.streams.len() {
            if self.core.conn_of(s) == i {
                self.streams[s].id = 0;
            }
        }
        self.core.fail_connection(i, kind, now);
        self.core.connection_down(i, Some(fault), now);
    }

    /// An open connection broke: the requests on its streams fail with `kind`; those still
    /// waiting for a stream connect again (they were never sent), after its back-off.
    fn connection_lost(&mut self, i: usize, kind: Failure, now: u64) {
        let fault = match kind {
            Failure::Write => Fault::Reset,
            Failure::Parse => Fault::Malformed,
            _ => Fault::Closed,
        };
        // With nothing outstanding, a close is no fault (an idle connection closed by the
        // server); bytes that break the protocol always are.
        let outstanding = self.core.carried_at(i, 0).is_some();
        let fault = (outstanding || kind == Failure::Parse).then_some(fault);
        self.connection_lost_for(i, kind, fault, now);
    }

    fn connection_lost_for(&mut self, i: usize, kind: Failure, fault: Option<Fault>, now: u64) {
        close(&mut self.conns[i], &self.poll);
        let mut k = 0;
        while let Some(slot) = self.core.carried_at(i, k) {
            if self.streams[slot].id != 0 {
                self.streams[slot].id = 0;
                self.core.fail(slot, kind, now);
            } else {
                k += 1;
            }
        }
        self.core.connection_down(i, fault, now);
        if k > 0 && !self.core.stopping() && self.core.may_connect(i, now) {
            self.start_connect(i, now);
        }
    }

    fn finish(mut self, pacing: candor_core::PaceStats) -> [PhaseAcc; 2] {
        if self.saw_zero_stream_limit {
            self.core.ledger_mut().phases[1].warnings.push(
                "the server allowed no HTTP/2 streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0) during the run: \
                 requests that waited for a stream then could not be sent (counted as failed or never sent)"
                    .into(),
            );
        }
        let phases = crate::engine::driver::final_phases(&mut self.core, &self.halt, pacing);
        for c in &mut self.conns {
            if let Some(sock) = c.sock.as_mut() {
                frame::put_goaway(&mut c.wbuf, frame::NO_ERROR);
                let _ = sock.write(&c.wbuf[c.woff..]);
                let _ = sock.flush();
            }
            close(c, &self.poll);
        }
        phases
    }
}

#[cfg(test)]
mod h2_sim;

/// Closes a connection's socket and forgets its protocol state (not its books: the core's).
fn close(c: &mut Conn, poll: &Poll) {
    socket_steps::release(&mut c.sock, poll);
    c.state = ConnState::Down;
    c.rlen = 0;
    c.wbuf.clear();
    c.woff = 0;
    c.next_id = 1;
    c.max_streams = usize::MAX;
    c.initial_window = frame::DEFAULT_WINDOW;
    c.max_frame = frame::DEFAULT_MAX_FRAME;
    c.send_window = frame::DEFAULT_WINDOW;
    c.unacked = 0;
    c.decoder = hpack::Decoder::default();
    c.block.clear();
    c.block_stream = 0;
    c.goaway = false;
    c.active.clear();
}
