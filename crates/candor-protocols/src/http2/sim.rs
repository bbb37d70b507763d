//! HTTP/2 on the one driver, its decisions on simulated time: the real driver running [`Http2`]
//! over loopback sockets this test opened, a manual clock (every step is handed its `now`) and a scripted
//! server whose frames are put in the connection's buffer as a read would, so what it books and
//! what it answers are asserted exactly: the server's SETTINGS opening the connection, streams
//! answered out of order, RST_STREAM, GOAWAY (after answers, and before any), stream limit
//! changes, protocol errors closing the connection with the code candor sent, flow control,
//! interim responses, CONTINUATION, the server's close, stream timeouts; and gRPC calls judged
//! by `grpc-status` in their trailers or a trailers-only response, a call without one, a call
//! the server resets, and OK replies whose framing or type lie (INTERNAL); floods of every kind
//! of frame, each ended with GOAWAY ENHANCE_YOUR_CALM at its exact bound.

use super::*;
use crate::http1::sim::streams::header_and_body_checks;
use candor_core::workload_results::FailedCheck;
pub(super) use candor_engine::backoff::{Fault, FaultTally};
use candor_engine::driver::rig::{Peer, Shape, MS, START, US};
use candor_engine::driver::{ConnState, Driver};
use candor_engine::shared::PhaseAcc;

pub(super) struct Rig {
    d: Driver<H2Connection>,
    peer: Peer,
    /// Where the next unread frame the driver sent starts, per accepted connection (after the
    /// preface).
    seen: Vec<usize>,
}

/// A frame the driver sent: kind, flags, stream, payload.
type Sent = (u8, u8, u32, Vec<u8>);

pub(super) const STATUS_200: &[u8] = &[0x88];
pub(super) const STATUS_404: &[u8] = &[0x8d];

pub(super) fn h2(shape: Shape) -> Rig {
    h2_calling(shape, None)
}

/// [`h2`] of a gRPC run making `grpc`'s calls.
pub(super) fn h2_calling(shape: Shape, grpc: Option<super::calls::GrpcConfig>) -> Rig {
    let peer = Peer::new();
    let grpc = grpc.map(std::sync::Arc::new);
    let unit = std::sync::Arc::new(super::unit::Http2 {
        streams: shape.streams,
        grpc: grpc.clone(),
    });
    let setup = shape.setup(&peer.listener, unit);
    let (tls, make) = connections(&setup, shape.streams, grpc.as_deref()).unwrap();
    let mut d = Driver::new(setup, tls, make).unwrap();
    d.core.begin_at(START, Some(shape.schedule()), 0);
    Rig {
        d,
        peer,
        seen: Vec::new(),
    }
}

pub(super) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::put_header(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

pub(super) fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, value) in pairs {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&value.to_be_bytes());
    }
    frame(frame::SETTINGS, 0, 0, &p)
}

pub(super) fn headers(stream: u32, block: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
    frame(frame::HEADERS, flags, stream, block)
}

pub(super) fn data(stream: u32, bytes: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = if end_stream { frame::END_STREAM } else { 0 };
    frame(frame::DATA, flags, stream, bytes)
}

pub(super) fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    frame(frame::GOAWAY, 0, 0, &p)
}

pub(super) fn window_update(stream: u32, inc: u32) -> Vec<u8> {
    frame(frame::WINDOW_UPDATE, 0, stream, &inc.to_be_bytes())
}

pub(super) fn max_streams(n: u32) -> Vec<u8> {
    settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, n)])
}

impl Rig {
    /// Connects connection `i` at `now`: the preface goes out, the server's SETTINGS are
    /// awaited.
    pub(super) fn connect(&mut self, i: usize, now: u64) {
        self.d.start_connect(i, now);
        self.peer.accept();
        self.seen.push(frame::PREFACE.len());
        self.d.finish_connect(i, now);
        assert_eq!(self.d.conns[i].state, ConnState::Greeting);
    }

    /// Connects every connection before the start and opens it with the server's SETTINGS
    /// (`limit` streams at a time).
    pub(super) fn open_all(&mut self, limit: u32) -> &mut Self {
        for i in 0..self.d.conns.len() {
            self.connect(i, START - MS);
            assert!(self.feed(i, &max_streams(limit), START - MS));
            assert_eq!(self.d.conns[i].state, ConnState::Open);
        }
        self
    }

    pub(super) fn at(&mut self, now: u64) -> &mut Self {
        self.d.turn(now);
        self
    }

    /// The server's bytes on connection `i`, read at `now`; false if the connection closed.
    pub(super) fn feed(&mut self, i: usize, bytes: &[u8], now: u64) -> bool {
        let c = &mut self.d.conns[i];
        let at = c.buf_len;
        c.buf[at..at + bytes.len()].copy_from_slice(bytes);
        let open = self.d.received(i, bytes.len(), now);
        // What the frames asked for (acks, window updates, new streams) leaves as the read
        // loop sends it.
        if self.d.conns[i].sock.is_some() {
            self.d.flush(i, now);
        }
        open
    }

    /// Reads what accepted connection `k` sent until a frame `want` accepts; that frame.
    pub(super) fn expect(&mut self, k: usize, want: impl Fn(&Sent) -> bool) -> Sent {
        loop {
            let got = &self.peer.got[k];
            while got.len() >= self.seen[k] + frame::HEADER_LEN {
                let h = FrameHeader::parse(&got[self.seen[k]..]);
                let end = self.seen[k] + frame::HEADER_LEN + h.len;
                if got.len() < end {
                    break;
                }
                let f = (
                    h.kind,
                    h.flags,
                    h.stream,
                    got[self.seen[k] + frame::HEADER_LEN..end].to_vec(),
                );
                self.seen[k] = end;
                if want(&f) {
                    return f;
                }
            }
            let n = self.peer.got[k].len() + 1;
            self.peer.read_until(k, n);
        }
    }

    /// The stream id of the request slot `slot` carries (0: none).
    pub(super) fn stream_of(&self, slot: usize) -> u32 {
        self.stream(slot).id
    }

    /// The stream slot `slot`'s connection keeps for it.
    pub(super) fn stream(&self, slot: usize) -> &Stream {
        let n = self.d.conns.len();
        &self.d.conns[slot % n].protocol.streams[slot / n]
    }

    /// Connection `i`'s HTTP/2 state.
    pub(super) fn h2(&self, i: usize) -> &H2Connection {
        &self.d.conns[i].protocol
    }

    pub(super) fn finish(&mut self, now: u64) -> PhaseAcc {
        // As the real driver's finish: streams under way keep what they delivered.
        self.d.book_unfinished_streams();
        let [_, measured] = self.d.core.finish(now, &|| now, &|| false);
        let c = &measured.counts;
        assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
        measured
    }
}

pub(super) fn faults(p: &PhaseAcc) -> Vec<(String, u64)> {
    p.faults.by_cause().into_iter().collect()
}

pub(super) fn fault(f: Fault) -> Vec<(String, u64)> {
    let mut t = FaultTally::default();
    t.count(f);
    t.by_cause().into_iter().collect()
}

pub(super) fn streams(n: usize, count: u64) -> Shape {
    let mut s = Shape::new(count);
    s.streams = n;
    s
}

mod connection;
mod floods;
mod responses;
