//! A load thread's driver on simulated time, for tests of the driver's decisions with any
//! protocol: the real [`Driver`] over loopback sockets the test opened, a manual clock (every
//! step is handed its `now`) and a scripted peer (the server's bytes are put in the connection's
//! buffer as a read would; its close is an end of stream). Built in this crate's tests and, with
//! the feature `sim`, for the protocols' tests.

use super::*;
use crate::config::Target;
use crate::schedule::{ArrivalKind, Schedule};
use crate::seam::unit::{ProtocolUnit, RequestForm};
use candor_workload::check::ResponseChecks;
use std::io::Read;
use std::net::{TcpListener, TcpStream as PeerStream};
use std::sync::atomic::AtomicBool;

pub const MS: u64 = 1_000_000;
pub const US: u64 = 1_000;
/// The first intended send; far from 0, since 0 means "not sent" to the books.
pub const START: u64 = 1_000 * MS;

/// A load thread's setting for a rig: `count` requests at 1,000 a second from [`START`].
pub struct Shape {
    pub count: u64,
    pub connections: usize,
    pub pipeline: usize,
    pub streams: usize,
    pub timeout_ns: u64,
    pub body: Vec<u8>,
    /// `--check-header` and `--check-body`.
    pub checks: ResponseChecks,
    /// `--stream`/`--llm`, `--event-timeout` and `--goodput`.
    pub stream: candor_stream::tap::StreamSettings,
    pub event_timeout_ns: u64,
    /// `--stream-timeout`.
    pub stream_timeout_ns: u64,
    pub goodput: Option<candor_stream::goodput::GoodputSlo>,
    /// The request's header lines (`-H`).
    pub headers: Vec<String>,
}

impl Shape {
    pub fn new(count: u64) -> Shape {
        Shape {
            count,
            connections: 1,
            pipeline: 1,
            streams: 1,
            timeout_ns: 2_000 * MS,
            body: Vec::new(),
            checks: ResponseChecks::default(),
            stream: Default::default(),
            event_timeout_ns: 0,
            stream_timeout_ns: 0,
            goodput: None,
            headers: Vec::new(),
        }
    }

    /// The thread's setup against `listener` speaking `protocol`, its requests prepared as a run
    /// prepares them.
    pub fn setup(&self, listener: &TcpListener, protocol: Arc<dyn ProtocolUnit>) -> WorkerSetup {
        let port = listener.local_addr().unwrap().port();
        let url = match protocol.request_form() {
            RequestForm::Payload(_) => format!("tcp://127.0.0.1:{port}"),
            RequestForm::Http => format!("http://127.0.0.1:{port}/"),
        };
        let mut config = LoadConfig::new(Target::parse(&url).unwrap());
        config.shape = crate::shape::LoadShape::constant(1000.0);
        config.duration_ns = self.count * MS;
        config.warmup_ns = 0;
        config.timeout_ns = self.timeout_ns;
        config.drain_ns = 2_000 * MS;
        config.connections = self.connections;
        config.workload.checks = self.checks.clone();
        config.stream = self.stream;
        config.event_timeout_ns = self.event_timeout_ns;
        config.stream_timeout_ns = self.stream_timeout_ns;
        config.goodput = self.goodput;
        config.headers = self.headers.clone();
        if !self.body.is_empty() {
            config.method = "POST".into();
            config.body = self.body.clone();
        }
        let requests = crate::request_plan::prepare_requests(&config, protocol.request_form());
        let (to_collector, _) = crossbeam_channel::unbounded();
        let (_, pool) = crossbeam_channel::unbounded();
        let compiled = crate::request_plan::compile_for(&config, &*protocol).unwrap();
        WorkerSetup {
            config: Arc::new(config),
            requests,
            compiled,
            requests_are: protocol.requests_are(),
            slots: protocol.slots(),
            connections: self.connections,
            start_ns: crate::pool::UNKNOWN_START_NS,
            schedule: None,
            to_collector,
            pool,
            stop: Arc::new(AtomicBool::new(false)),
            end: Arc::default(),
            on_start: None,
            seq_lane: 0,
            seq_stride: 1,
        }
    }

    /// The schedule the run would set at [`START`].
    pub fn schedule(&self) -> Schedule {
        Schedule::new(START, 1000.0, ArrivalKind::Constant, 0, 1)
    }
}

/// The server's side of the rig's connections: accepts them and reads what the driver wrote.
pub struct Peer {
    pub listener: TcpListener,
    pub conns: Vec<PeerStream>,
    /// Everything each connection received so far.
    pub got: Vec<Vec<u8>>,
}

impl Default for Peer {
    fn default() -> Self {
        Self::new()
    }
}

impl Peer {
    pub fn new() -> Peer {
        Peer {
            listener: TcpListener::bind("127.0.0.1:0").unwrap(),
            conns: Vec::new(),
            got: Vec::new(),
        }
    }

    /// Accepts the connection the driver just started (loopback: it is connected on return).
    pub fn accept(&mut self) -> usize {
        let (s, _) = self.listener.accept().unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        self.conns.push(s);
        self.got.push(Vec::new());
        self.conns.len() - 1
    }

    /// Reads from accepted connection `k` until it has received `n` bytes in all.
    pub fn read_until(&mut self, k: usize, n: usize) -> &[u8] {
        let mut buf = [0u8; 64 * 1024];
        while self.got[k].len() < n {
            let r = self.conns[k].read(&mut buf).unwrap();
            assert!(r > 0, "the driver closed connection {k}");
            self.got[k].extend_from_slice(&buf[..r]);
        }
        &self.got[k]
    }

    /// Accepted connection `k` writes `bytes` and closes its side; returns once `sock` (the
    /// driver's end) has all of it and the close, as one edge-triggered read-closed event
    /// would announce them. The driver's end must take them unread (the close leaves only once
    /// the window has room for it): up to 200 KB where the kernel keeps its default limits
    /// (`SO_RCVBUF` is raised to that, and doubled by the kernel, here); a kernel that took
    /// less fails the write or the wait after 5 s instead of hanging the test.
    pub fn send_and_close(&mut self, k: usize, bytes: &[u8], sock: &mut Sock) {
        use std::io::Write;
        let fd = sock.as_raw_fd();
        let rcvbuf: libc::c_int = 200_000;
        // SAFETY: the driver's open socket, an int option of the size given.
        let set = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&rcvbuf as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(set, 0);
        let s = &mut self.conns[k];
        s.set_write_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.write_all(bytes).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN | libc::POLLRDHUP,
                revents: 0,
            };
            // SAFETY: one valid pollfd, the driver's open socket.
            let n = unsafe { libc::poll(&mut p, 1, 10) };
            if n == 1 && p.revents & libc::POLLRDHUP != 0 {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the close never arrived"
            );
        }
    }
}

/// One load thread's driver over protocol `P` and the peer of its connections.
pub struct Rig<P: Protocol> {
    pub d: Driver<P>,
    pub peer: Peer,
}

impl<P: Protocol> Rig<P> {
    /// The driver of `shape`'s load thread, its connections speaking what `make` makes, begun at
    /// [`START`].
    pub fn new(
        shape: Shape,
        protocol: Arc<dyn ProtocolUnit>,
        make: impl Fn() -> P + 'static,
    ) -> Self {
        let peer = Peer::new();
        let setup = shape.setup(&peer.listener, protocol);
        let mut d = Driver::new(setup, None, make).unwrap();
        d.core.begin_at(START, Some(shape.schedule()), 0);
        Rig { d, peer }
    }

    /// Connects connection `i` at `now` (the peer accepts it): open, and written to at once.
    pub fn open(&mut self, i: usize, now: u64) {
        self.d.start_connect(i, now);
        assert_eq!(self.d.conns[i].state, ConnState::Connecting);
        self.peer.accept();
        self.d.finish_connect(i, now);
        assert_eq!(self.d.conns[i].state, ConnState::Open);
    }

    /// Connects every connection before the start, as the pool does.
    pub fn open_all(&mut self) -> &mut Self {
        for i in 0..self.d.conns.len() {
            self.open(i, START - MS);
        }
        self
    }

    /// One pass of the loop's decisions at `now`.
    pub fn at(&mut self, now: u64) -> &mut Self {
        self.d.turn(now);
        self
    }

    /// The server's `bytes` on connection `i`, read at `now`; false if the connection closed.
    pub fn answer(&mut self, i: usize, bytes: &[u8], now: u64) -> bool {
        let c = &mut self.d.conns[i];
        let at = c.buf_len;
        c.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.d.received(i, bytes.len(), now)
    }

    /// The server closes connection `i`; its end of stream is read at `now`.
    pub fn close(&mut self, i: usize, now: u64) {
        self.d.end_of_stream(i, now);
    }

    pub fn state(&self, i: usize) -> ConnState {
        self.d.conns[i].state
    }

    /// When connection `i`'s latest connect was started.
    pub fn connect_called(&self, i: usize) -> u64 {
        self.d.conns[i].connect_called
    }

    /// The books at `now`, after checking that nothing vanished from them.
    pub fn finish(&mut self, now: u64) -> PhaseAcc {
        // As the real driver's finish: streams under way keep what they delivered.
        self.d.book_unfinished_streams();
        let [_, measured] = self.d.core.finish(now, &|| now, &|| false);
        let c = &measured.counts;
        assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
        measured
    }
}

/// The faults `p` booked, by cause.
pub fn faults(p: &PhaseAcc) -> Vec<(String, u64)> {
    p.faults.by_cause().into_iter().collect()
}

/// `n` faults of `f`, by cause, as [`faults`] reads them.
pub fn fault(f: crate::backoff::Fault, n: u64) -> Vec<(String, u64)> {
    let mut t = crate::backoff::FaultTally::default();
    for _ in 0..n {
        t.count(f);
    }
    t.by_cause().into_iter().collect()
}
