//! HTTP/2 as a framed [`Protocol`] of the one driver (`engine/driver.rs`), plain or TLS with
//! ALPN `h2`. Every decision is the core's, as for the other protocols: which due request goes
//! on which slot (a slot is a stream of a connection, `--streams` per connection), whether a
//! stream may open under the server's SETTINGS_MAX_CONCURRENT_STREAMS, timeouts (a stream that
//! times out is reset with RST_STREAM and its connection carries on), `generator_late`, stop,
//! drain and the census. The driver owns the sockets and writes what this protocol puts in a
//! connection's out buffer.
//!
//! This folder speaks the protocol: the preface, SETTINGS and their acks, PING acks, flow control
//! both ways (a WINDOW_UPDATE for every half window received; request bodies wait for the
//! server's windows), GOAWAY (streams above its last stream id fail as `read`: they were sent
//! and never processed, and candor never retries behind the user's back; streams below it
//! finish, then the connection closes and the requests waiting for a stream reconnect),
//! RST_STREAM, HEADERS with CONTINUATION; floods of any of them (pending acks, frames that move
//! no response) are bounded by `flood.rs` and end the connection with ENHANCE_YOUR_CALM. Requests are encoded by `frame.rs` as HPACK literals
//! (once per fixed request before the run, per request into a prepared buffer for a filled
//! one); responses are decoded by `hpack.rs`, which hands each header over without copying it
//! (after the first response, constant headers come from its dynamic table), and only
//! `:status` and what the response checks need are looked at. Nothing allocates per request in
//! steady state (`tests/h2.rs` counts).
//!
//! Why not the `h2` crate: see docs/protocols.md (it allocated ~5 times per request and cost
//! 0.6x h2load's requests per CPU-second).

pub mod calls;
pub mod faults;
mod flood;
pub mod frame;
pub mod grpc_status;
mod hpack;
pub mod probe;
mod receive;
pub mod unit;

use candor_engine::config::{LoadConfig, Scheme};
use candor_engine::seam::link::outgoing;
use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::{
    AlpnAnswer, Broken, Carriage, Fitting, Greeting, Link, Protocol, Received,
};
use candor_engine::shared::{FailureClass, WorkerError, WorkerSetup};
use candor_engine::transport::tls::TlsError;
use candor_workload::script_source::ScriptJudge;
use frame::FrameHeader;
use std::sync::Arc;

/// Receive windows: large enough that a response body never waits for a WINDOW_UPDATE round
/// trip (the protocol's default of 64 KiB would make big bodies measure the window).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;

/// Why an HTTP/2 load thread cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Http2Error {
    /// `LoadConfig::validate` refuses `--h2` with `tcp://`; a thread says it too.
    #[error("HTTP/2 needs an http:// or https:// target")]
    NeedsHttpTarget,
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A prepared request has no HTTP/2 form (`frame::encode_request` refused its head).
    #[error("a request cannot be sent over HTTP/2")]
    CannotEncode,
    /// The server answered ALPN `h2` with something else: the run would not measure HTTP/2.
    #[error(
        "{url} does not speak HTTP/2 over TLS: candor offered 'h2' by ALPN and the server {answer}; \
         drop --h2 to test it with HTTP/1.1"
    )]
    NotH2 { url: String, answer: AlpnRefusal },
}

impl From<Http2Error> for WorkerError {
    fn from(e: Http2Error) -> Self {
        WorkerError::Protocol(Box::new(e))
    }
}

/// What a server that does not speak HTTP/2 answered to ALPN `h2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlpnRefusal {
    /// A `no_application_protocol` alert.
    Alert,
    /// The handshake ended with no protocol chosen.
    ChoseNone,
    /// The handshake ended with this protocol chosen.
    Chose(String),
}

impl std::fmt::Display for AlpnRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlpnRefusal::Alert => f.write_str("refused it (no_application_protocol alert)"),
            AlpnRefusal::ChoseNone => f.write_str("chose no protocol"),
            AlpnRefusal::Chose(p) => write!(f, "chose '{p}'"),
        }
    }
}

/// One slot's stream (a slot carries one request at a time).
#[derive(Clone, Copy, Default)]
struct Stream {
    /// 0: no stream (the request waits for its connection or for a stream).
    id: u32,
    send_window: i64,
    /// The body: where it starts in the request's HTTP/1.1 bytes (or in the lane's gRPC
    /// message, `grpc_body`), its length, how much is sent.
    grpc_body: bool,
    body_at: usize,
    body_len: usize,
    body_sent: usize,
    /// Receive-window bytes not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    status: u16,
    /// gRPC: the call streams its response (the time to its first message is taken).
    grpc_streaming: bool,
    /// gRPC: the `grpc-status` of the response's trailers (or of a trailers-only response).
    grpc_status: Option<candor_grpc::Code>,
    /// gRPC: the response's head said `content-type: application/grpc[+...]`, and a
    /// `grpc-encoding` other than `identity`.
    grpc_typed: bool,
    grpc_encoded: bool,
    /// gRPC: the first flaw of the response's length-prefixed messages.
    grpc_framing: Option<candor_grpc::MessageStreamError>,
}

/// Why a gRPC call its server ended with `grpc-status: 0` is INTERNAL all the same, as grpc-go's
/// client judges it: the reply was not gRPC, or its messages were not what their prefixes said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GrpcLie {
    NotGrpc,
    Framing(candor_grpc::MessageStreamError),
    CompressedUnannounced,
}

impl std::fmt::Display for GrpcLie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrpcLie::NotGrpc => f.write_str("the response's content-type is not application/grpc"),
            GrpcLie::Framing(e) => e.fmt(f),
            GrpcLie::CompressedUnannounced => {
                f.write_str("a message flagged compressed without a grpc-encoding")
            }
        }
    }
}

/// The most of a server's `grpc-message` kept for the failure examples.
const GRPC_MESSAGE_KEPT: usize = 256;

/// One HTTP/2 connection's protocol state: the server's SETTINGS and windows, the HPACK
/// decoder, the open streams, and per slot of the connection (its lane) the stream and the
/// observer of its response.
pub(crate) struct H2Connection {
    https: bool,
    /// The prepared requests' HEADERS blocks (shared by the thread's connections).
    fixed: Arc<[Fixed]>,
    /// The HEADERS block of a filled request, encoded per request.
    scratch: Vec<u8>,
    /// Per lane (slot of this connection), its stream and the observer of its response (checks,
    /// the excerpt of a failing body).
    streams: Vec<Stream>,
    observers: Vec<ResponseObserver>,
    /// The server's SETTINGS arrived: the connection is open.
    settled: bool,
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
    /// A request waited for a stream on a connection whose server allowed none.
    saw_zero_stream_limit: bool,
    /// A gRPC run: a response ends at its trailers and is judged by their `grpc-status`.
    grpc: bool,
    /// gRPC: the `grpc-status` codes that count as success (`--check-status`).
    grpc_accept: candor_grpc::CodeSet,
    /// gRPC server streaming: per request, whether its call streams; per lane, the messages of
    /// its response counted as they arrive (for the time to the first one); empty when no call
    /// streams.
    grpc_streaming: Arc<[bool]>,
    grpc_messages: Vec<candor_grpc::MessageCounter>,
    /// gRPC with templated messages: per request its encoder (`None`: encoded once), and per
    /// lane the message encoded from the filled JSON (sent instead of the request's body);
    /// empty when no message is a template.
    grpc_encoders: Arc<[Option<candor_grpc::RequestEncoder>]>,
    grpc_bodies: Vec<Vec<u8>>,
    /// gRPC: per lane the server's `grpc-message` (decoded, its first bytes), and what a failed
    /// call's example says (`NOT_FOUND: no such key`, `INTERNAL: <why>`).
    grpc_messages_said: Vec<Vec<u8>>,
    grpc_said: Vec<u8>,
    /// What the server asked for or sent while no response moved (`flood.rs`).
    floods: flood::Floods,
}

/// A prepared request's HEADERS block, encoded once before the run.
pub(crate) struct Fixed {
    block: Vec<u8>,
    body_at: usize,
}

/// A protocol error on a connection: a GOAWAY with its code is sent (as far as the socket takes
/// it at once), the connection is closed, and its streams fail with `Failure::Parse`; or the
/// server refused the connection with its own GOAWAY before answering anything.
#[derive(Clone, Copy, Debug)]
enum ProtocolError {
    Code(u32),
    Refused(u32),
    /// A flood past its bound: GOAWAY ENHANCE_YOUR_CALM, booked by its kind.
    Flood(flood::H2Flood),
}

impl From<flood::H2Flood> for ProtocolError {
    fn from(kind: flood::H2Flood) -> Self {
        ProtocolError::Flood(kind)
    }
}

impl ProtocolError {
    const PROTOCOL: ProtocolError = ProtocolError::Code(frame::PROTOCOL_ERROR);
    const FLOW_CONTROL: ProtocolError = ProtocolError::Code(frame::FLOW_CONTROL_ERROR);
    const FRAME_SIZE: ProtocolError = ProtocolError::Code(frame::FRAME_SIZE_ERROR);
    const COMPRESSION: ProtocolError = ProtocolError::Code(frame::COMPRESSION_ERROR);
}

/// Runs one HTTP/2 load thread on the one driver: its TLS configuration (ALPN `h2`) and its
/// requests' HEADERS blocks are made here, in the thread, so that what refuses them is named
/// by the thread that met it.
pub fn run_worker(
    setup: WorkerSetup,
    streams: usize,
    grpc: Option<&calls::GrpcConfig>,
    ticket: candor_engine::pool::GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<candor_engine::schedule::Schedule>, WorkerError>,
) -> Result<[candor_engine::shared::PhaseAcc; 2], WorkerError> {
    let (tls, make) = connections(&setup, streams, grpc)?;
    candor_engine::driver::run_worker(setup, tls, ticket, schedule_at, make)
}

/// The TLS configuration of an HTTP/2 thread, and how each of its connections' protocol is
/// made.
pub(crate) fn connections(
    setup: &WorkerSetup,
    streams: usize,
    grpc: Option<&calls::GrpcConfig>,
) -> Result<(Option<Arc<rustls::ClientConfig>>, impl Fn() -> H2Connection), Http2Error> {
    let config = &setup.config;
    let https = match config.target.scheme {
        Scheme::Https => true,
        Scheme::Http => false,
        _ => return Err(Http2Error::NeedsHttpTarget),
    };
    let tls = if https {
        Some(candor_engine::transport::tls::client_config(
            &config.tls,
            &[b"h2"],
        )?)
    } else {
        None
    };
    let mut fixed = Vec::with_capacity(setup.requests.len());
    for r in setup.requests.iter() {
        let mut block = Vec::new();
        let body_at = frame::encode_request(&r.bytes, https, &mut block)
            .map_err(|_| Http2Error::CannotEncode)?;
        fixed.push(Fixed { block, body_at });
    }
    let fixed: Arc<[Fixed]> = fixed.into();
    let lanes = streams.max(1);
    let grpc = grpc.cloned();
    Ok((tls, move || {
        H2Connection::new(https, fixed.clone(), lanes, grpc.as_ref())
    }))
}

impl H2Connection {
    fn new(
        https: bool,
        fixed: Arc<[Fixed]>,
        lanes: usize,
        grpc: Option<&calls::GrpcConfig>,
    ) -> H2Connection {
        let scratch_len = fixed.iter().map(|f| f.block.len()).max().unwrap_or(0);
        let calls = grpc.map_or(&[][..], |g| &g.calls[..]);
        let streaming: Arc<[bool]> = calls
            .iter()
            .map(|c| c.kind == candor_grpc::CallKind::ServerStreaming)
            .collect();
        let any_streaming = streaming.iter().any(|&s| s);
        let any_templated = calls.iter().any(|c| c.templated.is_some());
        let grpc_lanes = if grpc.is_some() { lanes } else { 0 };
        H2Connection {
            grpc: grpc.is_some(),
            grpc_accept: grpc.map_or(candor_grpc::CodeSet::OK_ONLY, |g| g.accept),
            grpc_messages_said: vec![Vec::with_capacity(4 * GRPC_MESSAGE_KEPT); grpc_lanes],
            grpc_said: Vec::with_capacity(if grpc.is_some() {
                5 * GRPC_MESSAGE_KEPT
            } else {
                0
            }),
            // Every gRPC response's messages are framed as their prefixes say, or the call is
            // INTERNAL.
            grpc_messages: if grpc.is_some() {
                vec![candor_grpc::MessageCounter::default(); lanes]
            } else {
                Vec::new()
            },
            grpc_streaming: if any_streaming {
                streaming
            } else {
                Arc::new([])
            },
            grpc_bodies: if any_templated {
                vec![Vec::with_capacity(scratch_len); lanes]
            } else {
                Vec::new()
            },
            grpc_encoders: if any_templated {
                calls.iter().map(|c| c.templated.clone()).collect()
            } else {
                Arc::new([])
            },
            https,
            fixed,
            scratch: Vec::with_capacity(scratch_len),
            streams: vec![Stream::default(); lanes],
            observers: vec![ResponseObserver::default(); lanes],
            settled: false,
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
            active: Vec::with_capacity(lanes),
            saw_zero_stream_limit: false,
            floods: flood::Floods::default(),
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

    /// Opens a stream for every request the connection carries that has none, in order, while
    /// the server's limit allows.
    fn open_streams(&mut self, link: &mut Link<'_>) {
        if !self.settled {
            return;
        }
        let mut k = 0;
        while !self.goaway {
            let Some(slot) = link.carried_at(k) else {
                break;
            };
            k += 1;
            if self.streams[link.lane(slot)].id != 0 {
                continue;
            }
            let limit = self.max_streams;
            if !link.may_open(slot, limit) {
                if limit == 0 {
                    self.saw_zero_stream_limit = true;
                }
                break;
            }
            if !self.start_stream(link, slot) {
                k -= 1;
            }
        }
    }

    /// Writes slot `slot`'s HEADERS (and as much body as the windows allow). False if the
    /// request failed instead (it cannot be sent over HTTP/2).
    fn start_stream(&mut self, link: &mut Link<'_>, slot: usize) -> bool {
        if !self.grpc_encoders.is_empty() {
            let encoders = self.grpc_encoders.clone();
            if let Some(encoder) = &encoders[link.core.exchange(slot).request as usize] {
                // A templated gRPC message: the filled JSON is encoded here, per request.
                return self.start_grpc_stream(link, slot, encoder);
            }
        }
        let request = outgoing(link.core, link.requests, slot);
        let bytes = request.bytes;
        let (block, body_at): (&[u8], usize) = if request.filled {
            match frame::encode_request(bytes, self.https, &mut self.scratch) {
                Ok(at) => (&self.scratch, at),
                Err(_) => {
                    link.fail(slot, FailureClass::Write);
                    return false;
                }
            }
        } else {
            let f = &self.fixed[request.index];
            (&f.block, f.body_at)
        };
        let id = self.next_id;
        // Stream ids run out after 2^30 streams: then the connection is used up, like a GOAWAY.
        self.next_id += 2;
        if self.next_id > 0x7fff_ffff {
            self.goaway = true;
        }
        let body_len = bytes.len() - body_at;
        let before = link.out.len();
        frame::put_headers(link.out, id, block, body_len == 0, self.max_frame);
        let written = link.out.len() - before;
        let lane = link.lane(slot);
        self.streams[lane] = Stream {
            id,
            send_window: self.initial_window,
            body_at,
            body_len,
            ..Stream::default()
        };
        self.opened(link, slot, id, written);
        true
    }

    /// [`Http2::start_stream`] of a gRPC call whose message is a template: the filled JSON
    /// (the body of the slot's filled request) encoded as the framed protobuf the stream sends;
    /// a JSON the fill broke (a data value with a quote, say) fails the request in class
    /// `template`, unsent.
    fn start_grpc_stream(
        &mut self,
        link: &mut Link<'_>,
        slot: usize,
        encoder: &candor_grpc::RequestEncoder,
    ) -> bool {
        let bytes = outgoing(link.core, link.requests, slot).bytes;
        let Ok(body_at) = frame::encode_request_reencoded(bytes, self.https, &mut self.scratch)
        else {
            link.fail(slot, FailureClass::Write);
            return false;
        };
        let lane = link.lane(slot);
        let message = &mut self.grpc_bodies[lane];
        message.clear();
        if encoder.encode_framed(&bytes[body_at..], message).is_err() {
            link.fail(slot, FailureClass::Template);
            return false;
        }
        let body_len = message.len();
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > 0x7fff_ffff {
            self.goaway = true;
        }
        let before = link.out.len();
        frame::put_headers(link.out, id, &self.scratch, body_len == 0, self.max_frame);
        let written = link.out.len() - before;
        self.streams[lane] = Stream {
            id,
            send_window: self.initial_window,
            grpc_body: true,
            body_len,
            ..Stream::default()
        };
        self.opened(link, slot, id, written);
        true
    }

    /// Stream `id` carries slot `slot`'s request, its HEADERS (`written` bytes) buffered now:
    /// booked, and its body sent as far as the windows allow.
    fn opened(&mut self, link: &mut Link<'_>, slot: usize, id: u32, written: usize) {
        let lane = link.lane(slot);
        let index = link.core.exchange(slot).request as usize;
        self.active.push((id, slot));
        self.observers[lane].begin(index);
        let streaming = self.grpc_streaming.get(index).copied().unwrap_or(false);
        self.streams[lane].grpc_streaming = streaming;
        if let Some(m) = self.grpc_messages.get_mut(lane) {
            m.reset();
            self.grpc_messages_said[lane].clear();
        }
        link.sent(slot);
        link.written(slot, written);
        if self.streams[lane].body_len > 0 {
            self.send_body(link, slot);
        }
    }

    /// Sends as much of slot `slot`'s body as the windows and the frame size allow.
    fn send_body(&mut self, link: &mut Link<'_>, slot: usize) {
        let lane = link.lane(slot);
        let s = &mut self.streams[lane];
        let bytes = if s.grpc_body {
            &self.grpc_bodies[lane]
        } else {
            outgoing(link.core, link.requests, slot).bytes
        };
        let before = link.out.len();
        while s.body_sent < s.body_len {
            let n = (s.body_len - s.body_sent)
                .min(self.max_frame)
                .min(s.send_window.max(0) as usize)
                .min(self.send_window.max(0) as usize);
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
            frame::put_header(link.out, n, frame::DATA, flags, s.id);
            link.out.extend_from_slice(&bytes[from..from + n]);
            s.send_window -= n as i64;
            self.send_window -= n as i64;
        }
        let written = link.out.len() - before;
        if written > 0 {
            link.written(slot, written);
            self.floods.progress();
        }
    }

    /// Windows opened: bodies that waited go on.
    fn resume_bodies(&mut self, link: &mut Link<'_>) {
        for k in 0..self.active.len() {
            let slot = self.active[k].1;
            let s = &self.streams[link.lane(slot)];
            if s.body_sent < s.body_len {
                self.send_body(link, slot);
            }
        }
    }

    /// What a protocol error means for the connection: the server is told why (RFC 9113
    /// §5.4.1) unless it refused the connection itself.
    fn broken(link: &mut Link<'_>, error: ProtocolError) -> Broken {
        match error {
            ProtocolError::Code(code) => {
                frame::put_goaway(link.out, code);
                Broken::Protocol(faults::broke(code))
            }
            ProtocolError::Refused(code) => {
                Broken::Refused(faults::goaway(code), FailureClass::Parse)
            }
            ProtocolError::Flood(kind) => {
                frame::put_goaway(link.out, frame::ENHANCE_YOUR_CALM);
                Broken::Protocol(faults::flood(kind))
            }
        }
    }
}

impl Protocol for H2Connection {
    const CARRIAGE: Carriage = Carriage::Framed;

    fn alpn(&self, answer: AlpnAnswer<'_>, config: &LoadConfig) -> Result<(), WorkerError> {
        let refusal = match answer {
            AlpnAnswer::Chose(Some(b"h2")) => return Ok(()),
            AlpnAnswer::Refused => AlpnRefusal::Alert,
            AlpnAnswer::Chose(None) => AlpnRefusal::ChoseNone,
            AlpnAnswer::Chose(Some(p)) => AlpnRefusal::Chose(String::from_utf8_lossy(p).into()),
        };
        Err(Http2Error::NotH2 {
            url: config.target.url.clone(),
            answer: refusal,
        }
        .into())
    }

    fn fit(&mut self, fitting: &Fitting) {
        for o in &mut self.observers {
            o.keep_excerpts(fitting.accept.clone());
            // This client never raises SETTINGS_MAX_FRAME_SIZE: a DATA frame is at most the
            // default, and each is read whole.
            o.set_stream_frames(fitting.stream, frame::DEFAULT_MAX_FRAME);
            if let Some(table) = &fitting.checks {
                o.set_checks(table.clone());
            }
        }
        if let Some(max) = fitting.max_filled_bytes {
            // A filled request's block is never longer than its HTTP/1.1 bytes plus a few
            // bytes of lengths per header; twice the largest is ample.
            let want = 2 * max + 64;
            self.scratch
                .reserve(want.saturating_sub(self.scratch.len()));
        }
    }

    fn set_script(&mut self, judge: &mut dyn FnMut() -> Option<ScriptJudge>) {
        for o in &mut self.observers {
            if let Some(j) = judge() {
                o.set_script(j);
            }
        }
    }

    fn reset(&mut self) {
        self.settled = false;
        self.next_id = 1;
        self.max_streams = usize::MAX;
        self.initial_window = frame::DEFAULT_WINDOW;
        self.max_frame = frame::DEFAULT_MAX_FRAME;
        self.send_window = frame::DEFAULT_WINDOW;
        self.unacked = 0;
        self.decoder = hpack::Decoder::default();
        self.block.clear();
        self.block_stream = 0;
        self.goaway = false;
        self.active.clear();
        self.floods = flood::Floods::default();
        for s in &mut self.streams {
            s.id = 0;
        }
    }

    fn greet(&mut self, link: &mut Link<'_>) -> Greeting {
        frame::put_preface(link.out, STREAM_WINDOW, CONNECTION_WINDOW);
        Greeting::AwaitPeer
    }

    fn send(&mut self, link: &mut Link<'_>) {
        self.open_streams(link);
    }

    fn receive(&mut self, link: &mut Link<'_>, input: &[u8]) -> Result<Received, Broken> {
        let mut at = 0;
        let mut freed = false;
        while input.len() - at >= frame::HEADER_LEN {
            let h = FrameHeader::parse(&input[at..]);
            if h.len > frame::DEFAULT_MAX_FRAME {
                return Err(H2Connection::broken(link, ProtocolError::FRAME_SIZE));
            }
            if input.len() - at < frame::HEADER_LEN + h.len {
                break;
            }
            let payload = &input[at + frame::HEADER_LEN..at + frame::HEADER_LEN + h.len];
            at += frame::HEADER_LEN + h.len;
            match self.frame(link, h, payload) {
                Ok(closed) => freed |= closed,
                Err(e) => return Err(H2Connection::broken(link, e)),
            }
        }
        Ok(Received {
            consumed: at,
            freed,
        })
    }

    fn expired(&mut self, link: &mut Link<'_>, slot: usize) {
        let id = std::mem::take(&mut self.streams[link.lane(slot)].id);
        if id != 0 {
            self.forget(id);
            frame::put_rst_stream(link.out, id, frame::CANCEL);
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
        self.expired(link, slot);
    }

    fn spent(&self) -> bool {
        self.goaway && self.active.is_empty()
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) {
        frame::put_goaway(out, frame::NO_ERROR);
    }

    fn end_warning(&self) -> Option<&'static str> {
        self.saw_zero_stream_limit.then_some(
            "the server allowed no HTTP/2 streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0) during the run: \
             requests that waited for a stream then could not be sent (counted as failed or never sent)",
        )
    }
}

#[cfg(test)]
mod sim;
