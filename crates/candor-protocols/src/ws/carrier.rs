//! WebSocket as a framed [`Protocol`] of the one driver (`engine/driver.rs`), over `ws://` or
//! `wss://`: the upgrade is the greeting (the connection opens, and its connect time ends, at
//! the server's valid `101`; any other answer is a failed connect, its fault naming why: a
//! status not 101, a wrong `Sec-WebSocket-Accept`, or no valid 101 at all), then each request
//! the core gives a connection goes out as one masked frame carrying its body, and each
//! message the server sends completes the request it answers (`--ws-match`: the oldest
//! unanswered one, or the one whose number it carries). Every decision of time stays the
//! core's: a message is timed from its intended send, waits for one of the connection's
//! `--streams` places, and times out alone (timeouts are per message).
//!
//! What the server says besides replies: a ping is answered with a pong, up to
//! [`MAX_PENDING_PONGS`] not yet written out, beyond which the pings are a flood (close 1008,
//! what was on the wire fails in class `parse`, fault "WebSocket ping flood"); a text reply that
//! is not UTF-8 ends the connection with close 1007 (class `parse`); a close frame is
//! answered with a close, fails what the connection had on the wire (class `read`, fault
//! "server closed the WebSocket") and the connection is opened again after its back-off; frames
//! that break RFC 6455 end the connection as a protocol error (class `parse`, fault "response
//! broke the protocol"). A reply that matches no message sent (in order: one with nothing on
//! the wire; by number: one without the field, or with a number this connection never wrote)
//! is never pinned on a message it may not answer: the connection is ended with close code
//! 1002, what it had on the wire fails in class `protocol`, the reply is booked as the fault
//! "WebSocket reply matched no message sent", and the connection reopens after its back-off.
//! The connection is not kept: a server that speaks out of turn puts every later pairing in
//! doubt (in order, the next reply may be another stray; by number, a server that does not
//! carry the number back leaves the messages on the wire unanswerable). A reply to a message
//! that already timed out is dropped (its message was counted as a timeout): in order, a
//! timed-out message keeps its place in the queue, so the replies after it still find theirs.

use super::faults;
use super::frames::{self, FrameDecoder, Opcode, WsEvent};
use super::handshake;
use super::matching::WsMatch;
use candor_engine::backoff::Fault;
use candor_engine::config::LoadConfig;
use candor_engine::pool::GateTicket;
use candor_engine::schedule::Schedule;
use candor_engine::seam::link::outgoing;
use candor_engine::seam::{Broken, Carriage, Fitting, Greeting, Link, Protocol, Received};
use candor_engine::shared::{FailureClass, PhaseAcc, Prepared, WorkerError, WorkerSetup};
use std::collections::VecDeque;
use std::sync::Arc;

/// The first bytes of each reply kept for `--ws-match json:FIELD` (the field must begin in
/// them, as servers that echo or answer with an id put it near the front).
const MATCH_PREFIX: usize = 4096;
/// A reply over this many bytes is a protocol error (candor reads and drops reply bodies, so
/// this bounds a broken length, not memory).
const MAX_MESSAGE: u64 = 1 << 40;
/// Close code: normal closure (RFC 6455 section 7.4.1), said at the end of the run.
const CLOSE_NORMAL: u16 = 1000;
/// Close code: protocol error, said when the server's frames broke RFC 6455.
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
/// Close code: a text message that is not UTF-8 (RFC 6455 sections 7.4.1 and 8.1).
const CLOSE_INVALID_DATA: u16 = 1007;
/// Close code: policy violation, said to a server that floods pings.
const CLOSE_POLICY: u16 = 1008;
/// Pongs owed (queued since the out buffer was last written out whole) beyond which the
/// server's pings are a flood: the connection ends. As nghttp2 bounds its queued PING ACKs
/// (1000): a server that pings as keep-alive owes one or two; one that pings faster than it
/// reads its answers would otherwise grow the buffer without bound (a pong per 2-byte ping).
pub(super) const MAX_PENDING_PONGS: u32 = 1000;

/// What every connection of a load thread shares: the upgrade's request line and headers, and
/// where each prepared request's message (its body) starts.
pub(super) struct Shared {
    host: String,
    path: String,
    headers: Vec<(String, String)>,
    body_at: Vec<usize>,
    /// The largest prepared message.
    max_body: usize,
    opcode: Opcode,
    matching: WsMatch,
    lanes: usize,
}

/// Runs one WebSocket load thread on the one driver.
pub fn run_worker(
    setup: WorkerSetup,
    ws: Settings,
    tls: Option<Arc<rustls::ClientConfig>>,
    ticket: GateTicket,
    schedule_at: impl FnOnce(u64) -> Result<Option<Schedule>, WorkerError>,
) -> Result<[PhaseAcc; 2], WorkerError> {
    let shared = Arc::new(Shared::new(&setup.config, &ws, &setup.requests));
    let seeds = std::cell::Cell::new(seed());
    candor_engine::driver::run_worker(setup, tls, ticket, schedule_at, move || {
        let s = splitmix(seeds.get());
        seeds.set(s);
        WsConnection::new(shared.clone(), s)
    })
}

/// A seed for the connections' keys and masks, from the system's randomness (the clock if
/// that fails: masks defeat proxy cache poisoning, not an adversary of a load test).
fn seed() -> u64 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 8];
    match ring::rand::SystemRandom::new().fill(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => candor_core::now_ns(),
    }
}

/// One step of splitmix64: a well-mixed 64-bit value per call.
fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A WebSocket run's own settings, as its connections use them.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Messages in flight per connection.
    pub streams: usize,
    pub matching: WsMatch,
    /// Messages go as binary frames, not text.
    pub binary: bool,
}

impl Shared {
    pub(super) fn new(config: &LoadConfig, ws: &Settings, requests: &[Prepared]) -> Shared {
        let headers = config
            .headers
            .iter()
            .filter_map(|h| h.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        Shared {
            host: config.target.host_header.clone(),
            path: config.target.path.clone(),
            headers,
            body_at: requests.iter().map(|r| body_at(&r.bytes)).collect(),
            max_body: requests
                .iter()
                .map(|r| r.bytes.len() - body_at(&r.bytes))
                .max()
                .unwrap_or(0),
            opcode: if ws.binary {
                Opcode::Binary
            } else {
                Opcode::Text
            },
            matching: ws.matching.clone(),
            lanes: ws.streams.max(1),
        }
    }
}

/// Where the body of a request's HTTP/1.1 bytes starts (after its head).
fn body_at(bytes: &[u8]) -> usize {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(bytes.len(), |p| p + 4)
}

/// A reply that matches no message on the wire.
struct Unmatched;

/// One place of a connection (a slot of the core): the message it has on the wire.
#[derive(Clone, Copy, Default)]
struct Lane {
    on_wire: bool,
    /// `--ws-match json:FIELD`: the number its message carries (0: none).
    seq: u64,
}

/// One WebSocket connection's protocol state.
pub(crate) struct WsConnection {
    shared: Arc<Shared>,
    rng: u64,
    key: [u8; 24],
    upgraded: bool,
    decoder: FrameDecoder,
    lanes: Vec<Lane>,
    /// In order: the messages on the wire, oldest first; `None` for one that timed out (its
    /// reply, if it comes, is dropped), bounded by its capacity (twice the lanes).
    order: VecDeque<Option<usize>>,
    order_cap: usize,
    /// `json:FIELD`: the next number written (numbers below it were used on this thread's
    /// connection, so a reply carrying one is late, not foreign).
    next_seq: u64,
    /// A message with the number written in.
    scratch: Vec<u8>,
    /// The server closed the connection; nothing more goes out but the answering close.
    closing: bool,
    /// Pongs put in the out buffer since it was last seen empty (see [`MAX_PENDING_PONGS`]).
    pongs_pending: u32,
}

impl WsConnection {
    pub(super) fn new(shared: Arc<Shared>, rng: u64) -> WsConnection {
        let lanes = shared.lanes;
        let json = matches!(shared.matching, WsMatch::JsonField(_));
        // Room for the largest message with its number (a field name and 20 digits).
        let scratch = if json { shared.max_body + 64 } else { 0 };
        WsConnection {
            shared,
            rng,
            key: [0; 24],
            upgraded: false,
            decoder: FrameDecoder::new(if json { MATCH_PREFIX } else { 0 }, MAX_MESSAGE),
            lanes: vec![Lane::default(); lanes],
            order: VecDeque::with_capacity(if json { 0 } else { 2 * lanes }),
            order_cap: if json { 0 } else { 2 * lanes },
            next_seq: 1,
            scratch: Vec::with_capacity(scratch),
            closing: false,
            pongs_pending: 0,
        }
    }

    fn mask(&mut self) -> [u8; 4] {
        self.rng = splitmix(self.rng);
        (self.rng as u32).to_le_bytes()
    }

    /// Appends a close frame with `code`.
    fn put_close(&mut self, out: &mut Vec<u8>, code: u16) {
        let mask = self.mask();
        frames::write_client_frame(out, Opcode::Close, &code.to_be_bytes(), mask);
    }

    /// A whole reply arrived: the message it answers is complete, or it is dropped (its message
    /// timed out), or it answers nothing (`Err`: the connection ends).
    fn reply(&mut self, link: &mut Link<'_>, prefix: &[u8]) -> Result<bool, Unmatched> {
        let slot = match &self.shared.matching {
            WsMatch::InOrder => match self.order.pop_front() {
                None => return Err(Unmatched),
                Some(None) => return Ok(false),
                Some(Some(slot)) => slot,
            },
            WsMatch::JsonField(field) => {
                let n = field.number_in(prefix).ok_or(Unmatched)?;
                let mut k = 0;
                let found = loop {
                    let Some(slot) = link.carried_at(k) else {
                        break None;
                    };
                    k += 1;
                    let lane = self.lanes[link.lane(slot)];
                    if lane.on_wire && lane.seq == n {
                        break Some(slot);
                    }
                };
                match found {
                    Some(slot) => slot,
                    // A number this connection used: its message timed out (or was answered).
                    None if n > 0 && n < self.next_seq => return Ok(false),
                    None => return Err(Unmatched),
                }
            }
        };
        self.lanes[link.lane(slot)] = Lane::default();
        link.complete(slot, 0, None, None);
        Ok(true)
    }
}

impl Protocol for WsConnection {
    const CARRIAGE: Carriage = Carriage::Framed;

    fn fit(&mut self, fitting: &Fitting) {
        if let WsMatch::JsonField(_) = self.shared.matching {
            // A filled message with its number, as for a prepared one.
            let largest = fitting.max_filled_bytes.unwrap_or(0);
            self.scratch
                .reserve((largest + 64).saturating_sub(self.scratch.len()));
        }
    }

    fn reset(&mut self) {
        self.upgraded = false;
        self.closing = false;
        self.pongs_pending = 0;
        self.decoder.reset();
        self.order.clear();
        self.lanes.fill(Lane::default());
    }

    fn greet(&mut self, link: &mut Link<'_>) -> Greeting {
        self.rng = splitmix(self.rng);
        let a = self.rng.to_le_bytes();
        self.rng = splitmix(self.rng);
        let b = self.rng.to_le_bytes();
        let mut random = [0u8; 16];
        random[..8].copy_from_slice(&a);
        random[8..].copy_from_slice(&b);
        self.key = handshake::key_from(random);
        // The upgrade request is written into a buffer of its own, then appended: `write_request`
        // clears what it is given.
        let mut request = Vec::new();
        let s = &self.shared;
        handshake::write_request(&mut request, &s.host, &s.path, &self.key, &s.headers);
        link.out.extend_from_slice(&request);
        Greeting::AwaitPeer
    }

    fn send(&mut self, link: &mut Link<'_>) {
        if !self.upgraded || self.closing {
            return;
        }
        let in_order = matches!(self.shared.matching, WsMatch::InOrder);
        let mut k = 0;
        while let Some(slot) = link.carried_at(k) {
            k += 1;
            let lane = link.lane(slot);
            if self.lanes[lane].on_wire {
                continue;
            }
            if in_order && self.order.len() == self.order_cap {
                // Timed-out messages fill the queue: the connection is reopened once what is
                // live is done (`spent`).
                break;
            }
            let mask = self.mask();
            let request = outgoing(link.core, link.requests, slot);
            let body = if request.filled {
                &request.bytes[body_at(request.bytes)..]
            } else {
                &request.bytes[self.shared.body_at[request.index]..]
            };
            let before = link.out.len();
            let mut seq = 0;
            match &self.shared.matching {
                WsMatch::InOrder => {
                    frames::write_client_frame(link.out, self.shared.opcode, body, mask);
                    self.order.push_back(Some(slot));
                }
                WsMatch::JsonField(field) => {
                    seq = self.next_seq;
                    self.next_seq += 1;
                    self.scratch.clear();
                    field.write_with_number(&mut self.scratch, body, seq);
                    frames::write_client_frame(link.out, self.shared.opcode, &self.scratch, mask);
                }
            }
            let written = link.out.len() - before;
            self.lanes[lane] = Lane { on_wire: true, seq };
            link.sent(slot);
            link.written(slot, written);
        }
    }

    fn receive(&mut self, link: &mut Link<'_>, input: &[u8]) -> Result<Received, Broken> {
        let mut at = 0;
        let mut freed = false;
        if !self.upgraded {
            match handshake::read_response(input, &self.key) {
                Ok(None) => {
                    return Ok(Received {
                        consumed: 0,
                        freed: false,
                    })
                }
                Ok(Some(head)) => {
                    self.upgraded = true;
                    link.opened();
                    at = head;
                    freed = true;
                }
                Err(handshake::UpgradeError::Status(_)) => {
                    return Err(Broken::Refused(
                        faults::fault(&faults::UPGRADE_STATUS),
                        FailureClass::Connect,
                    ))
                }
                Err(handshake::UpgradeError::BadAccept) => {
                    return Err(Broken::Refused(
                        faults::fault(&faults::UPGRADE_ACCEPT),
                        FailureClass::Connect,
                    ))
                }
                Err(_) => {
                    return Err(Broken::Refused(
                        faults::fault(&faults::UPGRADE),
                        FailureClass::Connect,
                    ))
                }
            }
        }
        if link.out.is_empty() {
            // Everything owed was written: the pongs before were taken.
            self.pongs_pending = 0;
        }
        let mut broken: Option<Broken> = None;
        // The decoder hands over events while it borrows itself; it is taken out for the call.
        let mut decoder = std::mem::replace(&mut self.decoder, FrameDecoder::new(0, 0));
        let fed = decoder.feed(&input[at..], |event| {
            if broken.is_some() {
                return;
            }
            match event {
                WsEvent::Message { prefix, .. } => match self.reply(link, prefix) {
                    Ok(done) => freed |= done,
                    Err(Unmatched) => {
                        self.put_close(link.out, CLOSE_PROTOCOL_ERROR);
                        broken = Some(Broken::Unmatched(faults::fault(&faults::UNMATCHED)));
                    }
                },
                WsEvent::Ping(_) if self.pongs_pending >= MAX_PENDING_PONGS => {
                    self.put_close(link.out, CLOSE_POLICY);
                    broken = Some(Broken::Protocol(faults::fault(&faults::PING_FLOOD)));
                }
                WsEvent::Ping(payload) => {
                    let mask = self.mask();
                    frames::write_client_frame(link.out, Opcode::Pong, payload, mask);
                    self.pongs_pending += 1;
                }
                WsEvent::Pong => {}
                WsEvent::Close(code) => {
                    // The closing handshake: the server's code is echoed (RFC 6455 5.5.1).
                    self.put_close(link.out, code.unwrap_or(CLOSE_NORMAL));
                    self.closing = true;
                    broken = Some(Broken::Closed(faults::fault(&faults::CLOSE)));
                }
            }
        });
        self.decoder = decoder;
        if let Some(b) = broken {
            return Err(b);
        }
        match fed {
            Ok(()) => {}
            Err(frames::FrameError::InvalidUtf8) => {
                self.put_close(link.out, CLOSE_INVALID_DATA);
                return Err(Broken::Protocol(faults::fault(&faults::INVALID_UTF8)));
            }
            Err(_) => {
                self.put_close(link.out, CLOSE_PROTOCOL_ERROR);
                return Err(Broken::Protocol(Fault::Malformed));
            }
        }
        Ok(Received {
            consumed: input.len(),
            freed,
        })
    }

    fn expired(&mut self, link: &mut Link<'_>, slot: usize) {
        let lane = link.lane(slot);
        if !self.lanes[lane].on_wire {
            return;
        }
        self.lanes[lane] = Lane::default();
        if let Some(entry) = self.order.iter_mut().find(|e| **e == Some(slot)) {
            *entry = None;
        }
    }

    fn spent(&self) -> bool {
        // In order, a queue full of timed-out messages whose replies never came: nothing live
        // is left, and only a new connection lets messages go again.
        !self.order.is_empty()
            && self.order.len() == self.order_cap
            && self.order.iter().all(Option::is_none)
    }

    fn goodbye(&mut self, out: &mut Vec<u8>) {
        if self.upgraded && !self.closing {
            self.put_close(out, CLOSE_NORMAL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_starts_after_the_head() {
        assert_eq!(body_at(b"GET / HTTP/1.1\r\nA: b\r\n\r\nhello"), 24);
        assert_eq!(body_at(b"GET / HTTP/1.1\r\n\r\n"), 18);
        assert_eq!(body_at(b"no head"), 7);
    }

    #[test]
    fn masks_differ_from_frame_to_frame() {
        let mut seen = std::collections::HashSet::new();
        let mut s = 1;
        for _ in 0..1000 {
            s = splitmix(s);
            seen.insert(s as u32);
        }
        assert_eq!(seen.len(), 1000);
    }
}
