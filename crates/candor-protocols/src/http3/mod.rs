//! HTTP/3 as a framed [`Protocol`] of the one driver (`engine/driver.rs`), over QUIC on a UDP
//! socket (the driver's datagram transport). QUIC is quinn-proto's sans-IO state machine
//! (`quic.rs`): the driver hands it each datagram read, writes the datagrams it puts in the
//! connection's out buffer, and wakes it when its timers (loss detection, acks, idle) are due
//! ([`Protocol::WAKES`]). Every decision about requests is the core's, as for HTTP/2: which due
//! request goes on which slot (a slot is a request stream, `--streams` per connection), timeouts
//! (a stream that times out is reset with H3_REQUEST_CANCELLED and its connection carries on),
//! `generator_late`, stop, drain and the census.
//!
//! This folder speaks HTTP/3 (RFC 9114): the client's control stream with SETTINGS that give
//! QPACK a dynamic table of 0 (`qpack.rs`: static table and literals, Huffman decoded), one
//! bidirectional stream per request (HEADERS, DATA, FIN: `request.rs`), the server's control
//! stream (SETTINGS first, GOAWAY), its QPACK streams read and dropped (nothing can be inserted
//! in a table of 0), push refused (no MAX_PUSH_ID is ever sent), and the faults by cause and
//! code (`faults.rs`). Frames are read by `frames.rs` without keeping more than a frame header
//! and one field section (64 KiB), so a peer that lies in a frame length cannot grow memory.

pub mod faults;
mod frames;
pub mod probe;
mod qpack;
mod quic;
mod receive;
mod request;
pub mod unit;

use candor_engine::config::{LoadConfig, Scheme};
use candor_engine::seam::link::outgoing;
use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::{
    Broken, Carriage, Fitting, Greeting, Link, Protocol, Received, Transport,
};
use candor_engine::shared::{FailureClass, WorkerError, WorkerSetup};
use candor_engine::transport::tls::TlsError;
use candor_workload::script_source::ScriptJudge;
use frames::FrameReader;
use quic::{Quic, QuicSetup};
use quinn_proto::{Dir, StreamId, VarInt};
use std::sync::Arc;
use std::time::Duration;

/// Receive windows: large enough that a response body never waits for a MAX_STREAM_DATA round
/// trip (as HTTP/2's windows here).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;
/// Unidirectional streams the server may hold open at once (it needs 3: control and QPACK's
/// two); its streams past this wait, so their bookkeeping is bounded.
const PEER_UNI_STREAMS: u32 = 8;

/// Why an HTTP/3 load thread cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Http3Error {
    /// The registry refuses `--h3` without `https://`; a thread says it too.
    #[error("HTTP/3 needs an https:// target")]
    NeedsHttps,
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The TLS configuration has no TLS 1.3 cipher suite QUIC can start with.
    #[error("the TLS configuration cannot carry QUIC (no TLS 1.3 initial cipher suite)")]
    NoQuicSuite,
    /// A prepared request has no HTTP/3 form.
    #[error("a request cannot be sent over HTTP/3")]
    CannotEncode,
}

impl From<Http3Error> for WorkerError {
    fn from(e: Http3Error) -> Self {
        WorkerError::Protocol(Box::new(e))
    }
}

/// A prepared request's HEADERS frame and DATA header, made once.
struct Fixed {
    head: Vec<u8>,
    body_at: usize,
}

/// What a thread's connections share.
struct Shared {
    quic: QuicSetup,
    fixed: Vec<Fixed>,
}

/// One slot's request stream (a slot carries one request at a time).
struct Lane {
    /// `None`: no stream (the request waits for its connection or for a stream).
    id: Option<StreamId>,
    slot: usize,
    /// The request's HEADERS frame and DATA header (a filled request's, or a copy of its
    /// prepared one), and how much of it, then of its body, QUIC has taken.
    head: Vec<u8>,
    head_sent: usize,
    body_at: usize,
    body_sent: usize,
    /// Its FIN is sent.
    finished: bool,
    reader: FrameReader,
    /// The final response's status (0: no final head yet).
    status: u16,
}

/// One of the server's unidirectional streams.
struct PeerStream {
    id: StreamId,
    /// Its type, once its first integer has arrived.
    kind: Option<u64>,
    type_bytes: [u8; 8],
    type_len: usize,
    reader: FrameReader,
    /// Control stream: SETTINGS has arrived.
    settled: bool,
}

/// One HTTP/3 connection of a load thread.
pub struct H3Connection {
    shared: Arc<Shared>,
    quic: Option<Quic>,
    handshaking: bool,
    lanes: Vec<Lane>,
    observers: Vec<ResponseObserver>,
    peers: Vec<PeerStream>,
    /// The server's GOAWAY: the first request stream id it will not process.
    goaway: Option<u64>,
    /// QUIC closed the connection without a fault while it carried nothing
    /// (`faults::quiet_close`): spent.
    quiet: bool,
    /// quinn-proto's packets sent and lost on this connection, as last counted.
    packets: (u64, u64),
    /// QPACK's Huffman scratch (names, values) and a filled request's field section.
    names: Vec<u8>,
    values: Vec<u8>,
    section: Vec<u8>,
}

/// Runs one HTTP/3 load thread on the one driver: its QUIC client configuration (TLS 1.3 with
/// ALPN `h3`, the run's `--ca`/`--insecure`) and its requests' HEADERS frames are made here.
pub fn run_worker(
    setup: WorkerSetup,
    streams: usize,
    ticket: candor_engine::pool::GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<candor_engine::schedule::Schedule>, WorkerError>,
) -> Result<[candor_engine::shared::PhaseAcc; 2], WorkerError> {
    let make = connections(&setup, streams)?;
    candor_engine::driver::run_worker(setup, None, ticket, schedule_at, make)
}

/// The QUIC client configuration of a run (`--ca`, `--insecure`, ALPN `h3`): the transport's
/// windows, and at most [`PEER_UNI_STREAMS`] streams from the server, none bidirectional.
pub(crate) fn client_config(config: &LoadConfig) -> Result<quinn_proto::ClientConfig, Http3Error> {
    let tls = candor_engine::transport::tls::client_config(&config.tls, &[b"h3"])?;
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|_| Http3Error::NoQuicSuite)?;
    let mut transport = quinn_proto::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(0))
        .max_concurrent_uni_streams(VarInt::from_u32(PEER_UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONNECTION_WINDOW));
    // A connection quiet for the run's timeout is gone (at least QUIC's usual 30 s).
    let idle = Duration::from_nanos(config.timeout_ns).max(Duration::from_secs(30));
    if let Ok(idle) = quinn_proto::IdleTimeout::try_from(idle) {
        transport.max_idle_timeout(Some(idle));
    }
    let mut client = quinn_proto::ClientConfig::new(Arc::new(crypto));
    client.transport_config(Arc::new(transport));
    Ok(client)
}

/// How each connection of an HTTP/3 thread is made.
pub(crate) fn connections(
    setup: &WorkerSetup,
    streams: usize,
) -> Result<impl Fn() -> H3Connection, Http3Error> {
    let config = &setup.config;
    if config.target.scheme != Scheme::Https {
        return Err(Http3Error::NeedsHttps);
    }
    let client = client_config(config)?;
    let mut fixed = Vec::with_capacity(setup.requests.len());
    let mut section = Vec::new();
    for r in setup.requests.iter() {
        let mut head = Vec::new();
        let body_at = request::encode(&r.bytes, &mut head, &mut section)
            .map_err(|_| Http3Error::CannotEncode)?;
        fixed.push(Fixed { head, body_at });
    }
    let shared = Arc::new(Shared {
        quic: QuicSetup {
            client,
            endpoint: Arc::new(quinn_proto::EndpointConfig::default()),
            peer: config.target.addr,
            server_name: config.target.host.clone(),
        },
        fixed,
    });
    let lanes = streams.max(1);
    Ok(move || H3Connection::new(shared.clone(), lanes))
}

impl H3Connection {
    fn new(shared: Arc<Shared>, lanes: usize) -> H3Connection {
        H3Connection {
            shared,
            quic: None,
            handshaking: false,
            lanes: (0..lanes)
                .map(|_| Lane {
                    id: None,
                    slot: 0,
                    head: Vec::new(),
                    head_sent: 0,
                    body_at: 0,
                    body_sent: 0,
                    finished: false,
                    reader: FrameReader::new(frames::MAX_FIELD_SECTION),
                    status: 0,
                })
                .collect(),
            observers: (0..lanes).map(|_| ResponseObserver::default()).collect(),
            peers: Vec::with_capacity(PEER_UNI_STREAMS as usize),
            goaway: None,
            quiet: false,
            packets: (0, 0),
            names: Vec::new(),
            values: Vec::new(),
            section: Vec::new(),
        }
    }

    /// Opens a stream for every request the connection carries that has none, as far as the
    /// server's stream limit allows, and writes it.
    fn open_streams(&mut self, link: &mut Link<'_>) {
        if self.handshaking || self.goaway.is_some() {
            return;
        }
        let mut k = 0;
        while let Some(slot) = link.carried_at(k) {
            k += 1;
            let lane = link.lane(slot);
            if self.lanes[lane].id.is_some() {
                continue;
            }
            let Some(quic) = self.quic.as_mut() else {
                return;
            };
            let Some(id) = quic.conn.streams().open(Dir::Bi) else {
                // The server's stream limit: it waits for a stream (its wait is send lag).
                return;
            };
            let out = outgoing(link.core, link.requests, slot);
            let l = &mut self.lanes[lane];
            if out.filled {
                match request::encode(out.bytes, &mut l.head, &mut self.section) {
                    Ok(at) => l.body_at = at,
                    Err(_) => {
                        let _ = quic.conn.send_stream(id).reset(VarInt::from_u32(0x10c));
                        link.fail(slot, FailureClass::Template);
                        continue;
                    }
                }
            } else {
                let f = &self.shared.fixed[out.index];
                l.head.clear();
                l.head.extend_from_slice(&f.head);
                l.body_at = f.body_at;
            }
            l.id = Some(id);
            l.slot = slot;
            l.head_sent = 0;
            l.body_sent = 0;
            l.finished = false;
            l.status = 0;
            l.reader.reset();
            self.observers[lane].begin(out.index);
            link.sent(slot);
            self.write_lane(link, lane);
        }
    }

    /// Hands QUIC what it will take of lane `lane`'s request (its head, then its body), and its
    /// FIN once all of it is taken; the rest waits for the stream to be writable again.
    fn write_lane(&mut self, link: &mut Link<'_>, lane: usize) {
        let Some(quic) = self.quic.as_mut() else {
            return;
        };
        let l = &mut self.lanes[lane];
        let Some(id) = l.id else {
            return;
        };
        if l.finished {
            return;
        }
        let request = outgoing(link.core, link.requests, l.slot);
        let body = &request.bytes[l.body_at.min(request.bytes.len())..];
        let mut stream = quic.conn.send_stream(id);
        let mut wrote = 0;
        while l.head_sent < l.head.len() {
            match stream.write(&l.head[l.head_sent..]) {
                Ok(n) if n > 0 => {
                    l.head_sent += n;
                    wrote += n;
                }
                _ => break,
            }
        }
        while l.head_sent == l.head.len() && l.body_sent < body.len() {
            match stream.write(&body[l.body_sent..]) {
                Ok(n) if n > 0 => {
                    l.body_sent += n;
                    wrote += n;
                }
                _ => break,
            }
        }
        if l.head_sent == l.head.len() && l.body_sent == body.len() && stream.finish().is_ok() {
            l.finished = true;
        }
        if wrote > 0 {
            link.written(l.slot, wrote);
        }
    }

    /// Writes what QUIC has to send now into the connection's out buffer.
    fn transmit(&mut self, link: &mut Link<'_>) {
        if let Some(q) = self.quic.as_mut() {
            q.transmit(link.out, link.now);
            // quinn-proto resends a lost packet's frames in new packets: lost is what was sent
            // again (it counts no retransmissions apart).
            let (sent, lost) = q.packets();
            link.count("quic_packets_sent", sent.saturating_sub(self.packets.0));
            link.count("quic_packets_lost", lost.saturating_sub(self.packets.1));
            self.packets = (sent, lost);
        }
    }

    /// Closes the connection with HTTP/3 code `code` (the server broke the protocol): the close
    /// is in the out buffer, and the driver fails what it carried as `parse`.
    fn broke(&mut self, link: &mut Link<'_>, code: u64) -> Broken {
        if let Some(q) = self.quic.as_mut() {
            let at = q.instant(link.now);
            let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(0x101));
            q.conn.close(at, code, bytes::Bytes::new());
        }
        self.transmit(link);
        Broken::Protocol(faults::h3_broke(code))
    }

    /// Forgets lane `lane`'s stream (its request is done, or failed).
    fn forget(&mut self, lane: usize) {
        let l = &mut self.lanes[lane];
        l.id = None;
        l.status = 0;
        l.reader.reset();
    }
}

impl Protocol for H3Connection {
    const CARRIAGE: Carriage = Carriage::Framed;
    const TRANSPORT: Transport = Transport::Datagram;
    const WAKES: bool = true;

    fn fit(&mut self, fitting: &Fitting) {
        for o in &mut self.observers {
            o.keep_excerpts(fitting.accept.clone());
            // A DATA frame's bytes come in pieces of any length (QUIC's stream chunks): the
            // stream reader keeps HTTP/1.1's bound on pending gaps.
            o.set_stream(fitting.stream);
            if let Some(table) = &fitting.checks {
                o.set_checks(table.clone());
            }
        }
    }

    fn reset(&mut self) {
        self.quic = None;
        self.quiet = false;
        self.packets = (0, 0);
        self.handshaking = false;
        self.goaway = None;
        self.peers.clear();
        for lane in 0..self.lanes.len() {
            self.forget(lane);
            self.observers[lane].forget();
        }
    }

    fn greet(&mut self, link: &mut Link<'_>) -> Greeting {
        match Quic::connect(&self.shared.quic, link.now) {
            Ok(mut q) => {
                if let Some(id) = q.conn.streams().open(Dir::Uni) {
                    let mut preface = Vec::with_capacity(16);
                    frames::put_control_preface(&mut preface);
                    let _ = q.conn.send_stream(id).write(&preface);
                }
                self.quic = Some(q);
                self.handshaking = true;
                self.transmit(link);
            }
            // No connection can be made to this address: the first wake-up says so.
            Err(_) => self.quic = None,
        }
        Greeting::AwaitPeer
    }

    fn send(&mut self, link: &mut Link<'_>) {
        self.open_streams(link);
        self.transmit(link);
    }

    fn receive(&mut self, link: &mut Link<'_>, input: &[u8]) -> Result<Received, Broken> {
        if let Some(q) = self.quic.as_mut() {
            q.receive(input, link.now);
        }
        let freed = self.events(link)?;
        self.transmit(link);
        Ok(Received {
            consumed: input.len(),
            freed,
        })
    }

    fn wake_at(&self) -> u64 {
        match &self.quic {
            Some(q) => q.wake_at(),
            // A connection that could not be made is failed at once.
            None => 0,
        }
    }

    fn woken(&mut self, link: &mut Link<'_>) -> Result<Received, Broken> {
        let Some(q) = self.quic.as_mut() else {
            return Err(Broken::Refused(
                candor_engine::backoff::Fault::Refused,
                FailureClass::Connect,
            ));
        };
        q.timeout(link.now);
        let freed = self.events(link)?;
        self.transmit(link);
        Ok(Received { consumed: 0, freed })
    }

    fn expired(&mut self, link: &mut Link<'_>, slot: usize) {
        let lane = link.lane(slot);
        if let (Some(id), Some(q)) = (self.lanes[lane].id, self.quic.as_mut()) {
            let code =
                VarInt::from_u64(faults::H3_REQUEST_CANCELLED).unwrap_or(VarInt::from_u32(0));
            let _ = q.conn.send_stream(id).reset(code);
            let _ = q.conn.recv_stream(id).stop(code);
        }
        self.forget(lane);
        self.observers[lane].forget();
        self.transmit(link);
    }

    fn set_script(&mut self, judge: &mut dyn FnMut() -> Option<ScriptJudge>) {
        // One judge per lane: its streams' responses interleave, as over HTTP/2.
        for o in &mut self.observers {
            if let Some(j) = judge() {
                o.set_script(j);
            }
        }
    }

    fn cut_stream(&mut self, lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        self.observers.get_mut(lane)?.cut()
    }

    fn timed_out_stream(&mut self, lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        self.observers.get_mut(lane)?.timed_out()
    }

    fn unfinished_stream(&mut self, lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        self.observers.get_mut(lane)?.unfinished()
    }

    fn stalled(&mut self, link: &mut Link<'_>, slot: usize) {
        let lane = link.lane(slot);
        if let Some(outcome) = self.observers[lane].stalled() {
            link.stream_outcome(slot, &outcome);
        }
        link.fail(slot, FailureClass::Stream);
        // The server is told as for a timeout: the stream is reset with H3_REQUEST_CANCELLED.
        self.expired(link, slot);
    }

    fn spent(&self) -> bool {
        (self.quiet || self.goaway.is_some()) && self.lanes.iter().all(|l| l.id.is_none())
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) {
        if let Some(q) = self.quic.as_mut() {
            let now = candor_core::now_ns();
            let code = VarInt::from_u64(faults::H3_NO_ERROR).unwrap_or(VarInt::from_u32(0));
            q.conn.close(q.instant(now), code, bytes::Bytes::new());
            q.transmit(out, now);
        }
    }
}
