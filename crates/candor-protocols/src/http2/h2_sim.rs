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
use crate::driver_sim::header_and_body_checks;
use candor_core::workload_results::FailedCheck;
use candor_engine::backoff::FaultTally;
use candor_engine::driver::rig::{Peer, Shape, MS, START, US};
use candor_engine::driver::{ConnState, Driver};
use candor_engine::shared::PhaseAcc;

struct Rig {
    d: Driver<Http2>,
    peer: Peer,
    /// Where the next unread frame the driver sent starts, per accepted connection (after the
    /// preface).
    seen: Vec<usize>,
}

/// A frame the driver sent: kind, flags, stream, payload.
type Sent = (u8, u8, u32, Vec<u8>);

const STATUS_200: &[u8] = &[0x88];
const STATUS_404: &[u8] = &[0x8d];

fn h2(mut shape: Shape) -> Rig {
    shape.http2 = true;
    let peer = Peer::new();
    let setup = shape.setup(&peer.listener);
    let (tls, make) = connections(&setup).unwrap();
    let mut d = Driver::new(setup, tls, make).unwrap();
    d.core.begin_at(START, Some(shape.schedule()), 0);
    Rig {
        d,
        peer,
        seen: Vec::new(),
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::put_header(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, value) in pairs {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&value.to_be_bytes());
    }
    frame(frame::SETTINGS, 0, 0, &p)
}

fn headers(stream: u32, block: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
    frame(frame::HEADERS, flags, stream, block)
}

fn data(stream: u32, bytes: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = if end_stream { frame::END_STREAM } else { 0 };
    frame(frame::DATA, flags, stream, bytes)
}

fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    frame(frame::GOAWAY, 0, 0, &p)
}

fn window_update(stream: u32, inc: u32) -> Vec<u8> {
    frame(frame::WINDOW_UPDATE, 0, stream, &inc.to_be_bytes())
}

fn max_streams(n: u32) -> Vec<u8> {
    settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, n)])
}

impl Rig {
    /// Connects connection `i` at `now`: the preface goes out, the server's SETTINGS are
    /// awaited.
    fn connect(&mut self, i: usize, now: u64) {
        self.d.start_connect(i, now);
        self.peer.accept();
        self.seen.push(frame::PREFACE.len());
        self.d.finish_connect(i, now);
        assert_eq!(self.d.conns[i].state, ConnState::Greeting);
    }

    /// Connects every connection before the start and opens it with the server's SETTINGS
    /// (`limit` streams at a time).
    fn open_all(&mut self, limit: u32) -> &mut Self {
        for i in 0..self.d.conns.len() {
            self.connect(i, START - MS);
            assert!(self.feed(i, &max_streams(limit), START - MS));
            assert_eq!(self.d.conns[i].state, ConnState::Open);
        }
        self
    }

    fn at(&mut self, now: u64) -> &mut Self {
        self.d.turn(now);
        self
    }

    /// The server's bytes on connection `i`, read at `now`; false if the connection closed.
    fn feed(&mut self, i: usize, bytes: &[u8], now: u64) -> bool {
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
    fn expect(&mut self, k: usize, want: impl Fn(&Sent) -> bool) -> Sent {
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
    fn stream_of(&self, slot: usize) -> u32 {
        self.stream(slot).id
    }

    /// The stream slot `slot`'s connection keeps for it.
    fn stream(&self, slot: usize) -> &Stream {
        let n = self.d.conns.len();
        &self.d.conns[slot % n].protocol.streams[slot / n]
    }

    /// Connection `i`'s HTTP/2 state.
    fn h2(&self, i: usize) -> &Http2 {
        &self.d.conns[i].protocol
    }

    fn finish(&mut self, now: u64) -> PhaseAcc {
        // As the real driver's finish: streams under way keep what they delivered.
        self.d.book_unfinished_streams();
        let [_, measured] = self.d.core.finish(now, &|| now, &|| false);
        let c = &measured.counts;
        assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
        measured
    }
}

fn faults(p: &PhaseAcc) -> Vec<(String, u64)> {
    p.faults.by_cause().into_iter().collect()
}

fn fault(f: Fault) -> Vec<(String, u64)> {
    let mut t = FaultTally::default();
    t.count(f);
    t.by_cause().into_iter().collect()
}

fn streams(n: usize, count: u64) -> Shape {
    let mut s = Shape::new(count);
    s.streams = n;
    s
}

#[test]
fn the_servers_settings_open_the_connection_and_the_waiting_request_gets_stream_1() {
    let mut r = h2(Shape::new(1));
    r.connect(0, START - MS);
    r.at(START);
    // Due, but the server has not spoken: the request waits on its connection.
    assert_eq!(r.stream_of(0), 0);
    assert!(r.feed(0, &settings(&[]), START + 2 * MS));
    assert_eq!(r.stream_of(0), 1);
    assert_eq!(r.d.core.exchange(0).sent, START + 2 * MS);
    let ack = r.expect(0, |f| f.0 == frame::SETTINGS && f.1 == frame::ACK);
    assert_eq!(ack.2, 0);
    r.expect(0, |f| f.0 == frame::HEADERS && f.2 == 1);
}

#[test]
fn headers_that_end_the_stream_complete_it_at_that_instant() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(3 * MS), 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_body_completes_the_response_with_its_last_data_frame() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, b"part", false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"end", true), START + 4 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(4 * MS), 1);
    // The first byte is the HEADERS frame's.
    assert_eq!(p.rec.first_byte.len(), 1);
    assert_eq!(p.rec.first_byte.count_at(MS), 1);
}

#[test]
fn streams_answered_out_of_order_are_each_booked_to_their_own_request() {
    let mut r = h2(streams(2, 2));
    r.open_all(100).at(START).at(START + MS);
    let (a, b) = (r.stream_of(0), r.stream_of(1));
    assert_eq!((a, b), (1, 3));
    assert!(r.feed(0, &headers(3, STATUS_404, true), START + 2 * MS));
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + 5 * MS));
    let p = r.finish(START + 10 * MS);
    // The second request (intended at 1 ms) got the 404 after 1 ms; the first the 200 after 5.
    assert_eq!((p.counts.completed, p.counts.failed), (1, 1));
    assert_eq!(p.rec.response.count_at(MS), 1);
    assert_eq!(p.rec.response.count_at(5 * MS), 1);
    assert_eq!(p.counts.status.s4xx, 1);
}

#[test]
fn rst_stream_fails_only_its_stream_and_the_connection_carries_on() {
    let mut r = h2(streams(2, 2));
    r.open_all(100).at(START).at(START + MS);
    let code = 0x2u32.to_be_bytes();
    assert!(r.feed(0, &frame(frame::RST_STREAM, 0, 1, &code), START + 2 * MS));
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    assert!(r.feed(0, &headers(3, STATUS_200, true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (1, 1));
    assert!(faults(&p).is_empty());
}

#[test]
fn goaway_fails_the_streams_above_its_last_and_lets_the_others_finish() {
    let mut r = h2(streams(3, 3));
    r.open_all(100).at(START).at(START + MS).at(START + 2 * MS);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + 3 * MS));
    // Stream 1 was taken; 3 and 5 were never processed: they fail, and are not retried.
    assert!(r.feed(0, &goaway(1, frame::NO_ERROR), START + 3 * MS));
    assert!(r.h2(0).goaway);
    assert_eq!(r.h2(0).active.len(), 1);
    // The last stream done, the connection closes: no fault, the server asked politely.
    assert!(!r.feed(0, &data(1, b"", true), START + 4 * MS));
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (1, 2));
    assert!(faults(&p).is_empty());
}

#[test]
fn after_goaway_a_request_waiting_for_a_stream_is_sent_on_a_new_connection() {
    let mut r = h2(streams(2, 3));
    r.open_all(1).at(START).at(START + MS);
    // Limit 1: the second request waits for a stream.
    assert_eq!((r.stream_of(0), r.stream_of(1)), (1, 0));
    assert!(r.feed(0, &goaway(1, frame::NO_ERROR), START + 2 * MS));
    assert!(!r.feed(0, &headers(1, STATUS_200, true), START + 3 * MS));
    // Stream 1 done: the connection closes and is connected again at once for the waiter.
    assert_eq!(r.d.conns[0].state, ConnState::Connecting);
    assert_eq!(r.d.conns[0].connect_called, START + 3 * MS);
    let p = r.finish(START + 10 * MS);
    assert!(faults(&p).is_empty());
    assert_eq!(p.counts.failed, 0);
}

#[test]
fn goaway_before_any_answer_is_booked_with_its_code_and_backs_off() {
    let mut r = h2(Shape::new(3));
    r.open_all(100).at(START);
    let calm = 0xb;
    assert!(!r.feed(0, &goaway(0, calm), START + MS / 2));
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    // 1 ms of back-off: the request due at 1 ms waits until 1.5 ms.
    r.at(START + MS);
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    r.at(START + MS + MS / 2);
    assert_eq!(r.d.conns[0].connect_called, START + MS + MS / 2);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, 1);
    assert_eq!(faults(&p), fault(Fault::GoAway(calm)));
}

#[test]
fn a_lowered_stream_limit_holds_new_streams_until_enough_have_closed() {
    let mut r = h2(streams(4, 3));
    r.open_all(4).at(START).at(START + MS);
    assert_eq!((r.stream_of(0), r.stream_of(1)), (1, 3));
    assert!(r.feed(0, &max_streams(1), START + MS + MS / 2));
    r.at(START + 2 * MS);
    let third = r.d.core.carried_at(0, 2).unwrap();
    assert_eq!(r.stream_of(third), 0);
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + 3 * MS));
    // Still one open (stream 3): at the limit.
    assert_eq!(r.stream_of(third), 0);
    assert!(r.feed(0, &headers(3, STATUS_200, true), START + 4 * MS));
    assert_eq!(r.stream_of(third), 5);
    assert_eq!(r.d.core.exchange(third).sent, START + 4 * MS);
}

#[test]
fn a_raised_stream_limit_opens_the_waiting_streams_at_once() {
    let mut r = h2(streams(4, 3));
    r.open_all(1).at(START).at(START + MS).at(START + 2 * MS);
    assert_eq!(r.h2(0).active.len(), 1);
    assert!(r.feed(0, &max_streams(10), START + 2 * MS + MS / 2));
    assert_eq!(r.h2(0).active.len(), 3);
    for k in 1..3 {
        let slot = r.d.core.carried_at(0, k).unwrap();
        assert_eq!(r.d.core.exchange(slot).sent, START + 2 * MS + MS / 2);
    }
}

#[test]
fn a_zero_stream_limit_is_named_in_the_results() {
    let mut r = h2(Shape::new(1));
    r.open_all(0).at(START);
    assert_eq!(r.stream_of(0), 0);
    assert!(r.h2(0).saw_zero_stream_limit);
    let phases = r.d.finish(candor_core::PaceStats::default());
    assert!(phases[1]
        .warnings
        .iter()
        .any(|w| w.contains("SETTINGS_MAX_CONCURRENT_STREAMS = 0")));
}

#[test]
fn frames_before_the_servers_settings_break_the_protocol() {
    let mut r = h2(Shape::new(1));
    r.connect(0, START - MS);
    r.at(START);
    let ping = frame(frame::PING, 0, 0, &[0; 8]);
    assert!(!r.feed(0, &ping, START + MS));
    let g = r.expect(0, |f| f.0 == frame::GOAWAY);
    assert_eq!(&g.3[4..8], &frame::PROTOCOL_ERROR.to_be_bytes());
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, 1);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::PROTOCOL_ERROR)));
}

#[test]
fn an_oversized_frame_is_a_frame_size_error_of_the_connection() {
    let mut r = h2(streams(2, 2));
    r.open_all(100).at(START).at(START + MS);
    let mut big = Vec::new();
    frame::put_header(&mut big, frame::DEFAULT_MAX_FRAME + 1, frame::DATA, 0, 1);
    assert!(!r.feed(0, &big, START + 2 * MS));
    let g = r.expect(0, |f| f.0 == frame::GOAWAY);
    assert_eq!(&g.3[4..8], &frame::FRAME_SIZE_ERROR.to_be_bytes());
    let p = r.finish(START + 10 * MS);
    // Both streams the connection carried fail, as parse.
    assert_eq!(p.counts.errors.parse, 2);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::FRAME_SIZE_ERROR)));
}

#[test]
fn a_zero_window_update_of_the_connection_is_a_protocol_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!r.feed(0, &window_update(0, 0), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::PROTOCOL_ERROR)));
}

#[test]
fn a_connection_window_past_its_maximum_is_a_flow_control_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!r.feed(0, &window_update(0, 0x7fff_ffff), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::FLOW_CONTROL_ERROR)));
}

#[test]
fn a_zero_window_update_of_a_stream_resets_that_stream_alone() {
    let mut r = h2(streams(2, 2));
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &window_update(1, 0), START + 2 * MS));
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!(
        (rst.2, &rst.3[..]),
        (1, &frame::PROTOCOL_ERROR.to_be_bytes()[..])
    );
    assert!(r.feed(0, &headers(3, STATUS_200, true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (1, 1));
    assert!(faults(&p).is_empty());
}

#[test]
fn a_ping_is_answered_with_its_payload() {
    let mut r = h2(Shape::new(1));
    r.open_all(100);
    let payload = *b"12345678";
    assert!(r.feed(0, &frame(frame::PING, 0, 0, &payload), START - MS / 2));
    let pong = r.expect(0, |f| f.0 == frame::PING);
    assert_eq!((pong.1, &pong.3[..]), (frame::ACK, &payload[..]));
}

#[test]
fn an_interim_response_is_followed_by_the_final_one() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let continue_100 = [0x08, 0x03, b'1', b'0', b'0'];
    assert!(r.feed(0, &headers(1, &continue_100, false), START + MS));
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + 2 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(2 * MS), 1);
}

#[test]
fn an_interim_response_that_ends_its_stream_is_malformed() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let continue_100 = [0x08, 0x03, b'1', b'0', b'0'];
    assert!(r.feed(0, &headers(1, &continue_100, true), START + MS));
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!(&rst.3[..], &frame::CANCEL.to_be_bytes());
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, 1);
    assert_eq!(r.d.conns[0].state, ConnState::Open);
}

#[test]
fn a_response_without_a_status_is_malformed() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let only_x = [0x00, 0x01, b'x', 0x01, b'y'];
    assert!(r.feed(0, &headers(1, &only_x, true), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (0, 1));
}

#[test]
fn a_header_block_continued_over_frames_completes_when_it_ends() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let only_x = [0x00, 0x01, b'x', 0x01, b'y'];
    let first = frame(frame::HEADERS, frame::END_STREAM, 1, &only_x);
    assert!(r.feed(0, &first, START + MS));
    let rest = frame(frame::CONTINUATION, frame::END_HEADERS, 1, STATUS_200);
    assert!(r.feed(0, &rest, START + 2 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(2 * MS), 1);
}

#[test]
fn another_frame_inside_a_header_block_is_a_protocol_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let first = frame(frame::HEADERS, frame::END_STREAM, 1, STATUS_200);
    assert!(r.feed(0, &first, START + MS));
    assert!(!r.feed(0, &frame(frame::PING, 0, 0, &[0; 8]), START + 2 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::PROTOCOL_ERROR)));
}

#[test]
fn an_undecodable_header_block_is_a_compression_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    // Index 62: the first dynamic entry, and the table is empty.
    assert!(!r.feed(0, &headers(1, &[0xbe], true), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, 1);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::COMPRESSION_ERROR)));
}

#[test]
fn a_push_promise_is_a_protocol_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let push = frame(frame::PUSH_PROMISE, frame::END_HEADERS, 1, &[0, 0, 0, 2]);
    assert!(!r.feed(0, &push, START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(faults(&p), fault(Fault::H2Error(frame::PROTOCOL_ERROR)));
}

#[test]
fn a_server_close_with_streams_open_fails_them_as_read() {
    let mut r = h2(streams(2, 2));
    r.open_all(100).at(START).at(START + MS);
    r.d.end_of_stream(0, START + 2 * MS);
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.read, 2);
    assert_eq!(faults(&p), fault(Fault::Closed));
}

#[test]
fn a_server_close_with_nothing_outstanding_is_no_fault() {
    let mut r = h2(Shape::new(2));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + MS / 2));
    r.d.end_of_stream(0, START + MS / 2);
    // Connected again at once, for the next request.
    r.at(START + MS);
    assert_eq!(r.d.conns[0].connect_called, START + MS);
    let p = r.finish(START + 10 * MS);
    assert!(faults(&p).is_empty());
    assert_eq!(p.counts.failed, 0);
}

#[test]
fn a_close_before_the_servers_settings_is_a_failed_connect() {
    let mut r = h2(Shape::new(1));
    r.connect(0, START - MS);
    r.at(START);
    r.d.end_of_stream(0, START + MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.connect, 1);
    assert_eq!(faults(&p), fault(Fault::Closed));
}

#[test]
fn a_connect_that_outlasts_the_timeout_fails_as_a_connect_timeout() {
    let mut shape = Shape::new(1);
    shape.timeout_ns = 3 * MS;
    let mut r = h2(shape);
    r.connect(0, START - MS);
    r.at(START);
    // The server never sends its SETTINGS.
    let mut t = START;
    while r.d.conns[0].state != ConnState::Down {
        t += 500 * US;
        r.at(t);
    }
    assert!(t >= START + 2 * MS);
    let p = r.finish(t);
    assert_eq!(faults(&p), fault(Fault::ConnectTimeout));
}

#[test]
fn a_stream_that_times_out_is_reset_and_its_connection_carries_on() {
    let mut shape = Shape::new(20);
    shape.timeout_ns = 2 * MS;
    let mut r = h2(shape);
    r.open_all(100).at(START);
    let mut t = START;
    while r.stream_of(0) == 1 {
        t += 250 * US;
        r.at(t);
    }
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!((rst.2, &rst.3[..]), (1, &frame::CANCEL.to_be_bytes()[..]));
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    // A late answer for the reset stream is ignored; the next request takes stream 3.
    assert!(r.feed(0, &headers(1, STATUS_200, true), t));
    r.at(t);
    assert_eq!(r.stream_of(0), 3);
    let p = r.finish(t);
    assert_eq!((p.counts.errors.timeout, p.counts.completed), (1, 0));
    assert!(faults(&p).is_empty());
}

#[test]
fn a_request_body_waits_for_the_servers_window() {
    let mut shape = Shape::new(1);
    shape.body = vec![b'b'; 100_000];
    let mut r = h2(shape);
    r.open_all(100).at(START);
    // The default windows (65,535 bytes) hold the rest back.
    assert_eq!(r.stream(0).body_sent, 65_535);
    assert!(r.feed(0, &window_update(0, 50_000), START + MS));
    assert_eq!(r.stream(0).body_sent, 65_535);
    assert!(r.feed(0, &window_update(1, 50_000), START + MS));
    assert_eq!(r.stream(0).body_sent, 100_000);
    let last = r.expect(0, |f| f.0 == frame::DATA && f.1 & frame::END_STREAM != 0);
    assert_eq!(last.2, 1);
}

#[test]
fn a_raised_initial_window_lets_a_waiting_body_go_on() {
    let mut shape = Shape::new(1);
    shape.body = vec![b'b'; 70_000];
    let mut r = h2(shape);
    r.open_all(100).at(START);
    assert!(r.feed(0, &window_update(0, 100_000), START + MS));
    assert_eq!(r.stream(0).body_sent, 65_535);
    let raise = settings(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 80_000)]);
    assert!(r.feed(0, &raise, START + 2 * MS));
    assert_eq!(r.stream(0).body_sent, 70_000);
}

#[test]
fn an_answer_before_the_whole_body_was_sent_resets_the_stream() {
    let mut shape = Shape::new(1);
    shape.body = vec![b'b'; 100_000];
    let mut r = h2(shape);
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + MS));
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!((rst.2, &rst.3[..]), (1, &frame::CANCEL.to_be_bytes()[..]));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
}

/// `:status 200` and `x-ok: yes` (literals without indexing), then `:status 200` alone.
const STATUS_200_X_OK: &[u8] = &[
    0x88, 0x00, 0x04, b'x', b'-', b'o', b'k', 0x03, b'y', b'e', b's',
];

#[test]
fn the_observer_is_handed_the_headers_of_a_stream_with_header_checks() {
    let mut shape = streams(2, 2);
    shape.checks = header_and_body_checks();
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200_X_OK, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"needle", true), START + 2 * MS));
    // Stream 3 lacks the header: a header failure, its body kept for the report.
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, b"needle too", true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    let kept = p.failures.sorted();
    assert_eq!(kept[0].check, FailedCheck::Header);
    assert_eq!(kept[0].body(), Some(&b"needle too"[..]));
}

#[test]
fn the_observer_searches_a_body_across_data_frames() {
    let mut shape = streams(2, 2);
    shape.checks = header_and_body_checks();
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200_X_OK, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"a nee", false), START + 2 * MS));
    assert!(r.feed(0, &data(1, b"dle b", true), START + 2 * MS));
    assert!(r.feed(0, &headers(3, STATUS_200_X_OK, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, b"no needl e", true), START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    assert_eq!(p.failures.sorted()[0].check, FailedCheck::Body);
}

/// An OpenAI-compatible chunk carrying `text`, as one SSE event.
fn token(text: &str) -> Vec<u8> {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n").into_bytes()
}

fn llm(n: usize, count: u64) -> Shape {
    let mut s = streams(n, count);
    s.stream = candor_stream::tap::StreamSettings {
        kind: None,
        llm: true,
    };
    s
}

#[test]
fn llm_streams_over_http2_are_read_from_their_data_frames_each_on_its_own() {
    // Two streams on one connection, their DATA frames interleaved: stream 1 (intended at 0)
    // gets tokens at 2 and 5 ms, stream 3 (intended at 1 ms) at 3 and 4 ms; each ends with
    // [DONE]. TTFT 2 ms each, ITL 3 and 1 ms, two tokens each (counted chunks).
    let mut r = h2(llm(2, 2));
    r.open_all(100).at(START).at(START + MS);
    assert_eq!((r.stream_of(0), r.stream_of(1)), (1, 3));
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(0, &data(3, &token("b"), false), START + 3 * MS));
    assert!(r.feed(0, &data(3, &token("c"), false), START + 4 * MS));
    assert!(r.feed(0, &data(1, &token("d"), false), START + 5 * MS));
    assert!(r.feed(0, &data(3, b"data: [DONE]\n\n", true), START + 6 * MS));
    assert!(r.feed(0, &data(1, b"data: [DONE]\n\n", true), START + 7 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (2, 0));
    let s = p.stream.as_ref().unwrap();
    assert_eq!(s.ttft.count_at(2 * MS), 2);
    assert_eq!((s.itl.count_at(3 * MS), s.itl.count_at(MS)), (1, 1));
    assert_eq!((s.output_tokens, s.tokens_from_chunks, s.events), (4, 2, 6));
    assert_eq!(s.failures.iter().sum::<u64>(), 0);
}

#[test]
fn an_http2_stream_past_its_event_timeout_is_reset_and_fails_alone() {
    // Stream 1 has one token at 2 ms, then nothing; stream 3 keeps its tokens coming. With an
    // 8 ms bound the first scan (10 ms) finds stream 1 waiting 8 ms: the bound is reached, so
    // it is reset with CANCEL then, its event counted, and the connection carries stream 3
    // (last event at 9 ms) to its end.
    let mut shape = llm(2, 2);
    shape.event_timeout_ns = 8 * MS;
    let mut r = h2(shape);
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(0, &headers(3, STATUS_200, false), START + 3 * MS));
    assert!(r.feed(0, &data(3, &token("b"), false), START + 3 * MS));
    r.at(START + 9 * MS);
    assert!(r.feed(0, &data(3, &token("c"), false), START + 9 * MS));
    r.at(START + 10 * MS);
    let rst = r.expect(0, |f| f.0 == frame::RST_STREAM);
    assert_eq!(
        (rst.2, rst.3.as_slice()),
        (1, &frame::CANCEL.to_be_bytes()[..])
    );
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    assert!(r.feed(0, &data(3, b"data: [DONE]\n\n", true), START + 12 * MS));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 1));
    assert_eq!(p.counts.errors.stream, 1);
    let s = p.stream.as_ref().unwrap();
    let timeouts = s.failures[candor_stream::openai::LlmFailure::EventTimeout.index()];
    assert_eq!(timeouts, 1);
    // Stream 1's one event and stream 3's three.
    assert_eq!((s.events, s.responses), (4, 2));
    assert!(faults(&p).is_empty());
}

#[test]
fn a_stream_reset_by_the_server_after_its_events_fails_as_cut_with_them_counted() {
    let mut r = h2(llm(1, 1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    assert!(r.feed(
        0,
        &frame(frame::RST_STREAM, 0, 1, &frame::CANCEL.to_be_bytes()),
        START + 3 * MS
    ));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.stream, p.counts.errors.read), (1, 0));
    let s = p.stream.as_ref().unwrap();
    let cut = s.failures[candor_stream::openai::LlmFailure::Cut.index()];
    assert_eq!((cut, s.events), (1, 1));
}

#[test]
fn a_server_close_after_events_fails_that_stream_as_cut_and_the_silent_one_as_read() {
    let mut r = h2(llm(2, 2));
    r.open_all(100).at(START).at(START + MS);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    r.d.end_of_stream(0, START + 3 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.stream, p.counts.errors.read), (1, 1));
    let s = p.stream.as_ref().unwrap();
    let cut = s.failures[candor_stream::openai::LlmFailure::Cut.index()];
    assert_eq!((cut, s.events), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Closed));
}

/// A header block of literal fields (HPACK "without indexing", new name).
fn literals(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, value) in fields {
        b.push(0x00);
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b.push(value.len() as u8);
        b.extend_from_slice(value.as_bytes());
    }
    b
}

/// A gRPC response's head: `:status: 200`, `content-type: application/grpc`.
fn grpc_head() -> Vec<u8> {
    let mut head = STATUS_200.to_vec();
    head.extend(literals(&[("content-type", "application/grpc")]));
    head
}

/// A gRPC run of `count` unary calls on `n` streams of one connection, `accept`ing these codes.
fn grpc(n: usize, count: u64, accept: &str) -> Rig {
    let mut shape = streams(n, count);
    shape.grpc = Some(candor_engine::config::GrpcConfig {
        call: "candor.bench.Bench/Echo".into(),
        accept: accept.parse().unwrap(),
        calls: vec![candor_engine::config::GrpcCall {
            kind: candor_grpc::CallKind::Unary,
            templated: None,
        }],
    });
    h2(shape)
}

#[test]
fn a_grpc_call_ends_at_its_trailers_or_a_trailers_only_answer_judged_by_grpc_status() {
    use candor_grpc::Code;
    let mut r = grpc(3, 3, "OK,NOT_FOUND");
    r.open_all(100).at(START).at(START + MS).at(START + 2 * MS);
    assert_eq!((r.stream_of(0), r.stream_of(1), r.stream_of(2)), (1, 3, 5));
    // A whole answer: HEADERS, one message, the trailers with grpc-status 0 end it.
    assert!(r.feed(0, &headers(1, &grpc_head(), false), START + 3 * MS));
    assert!(r.feed(0, &data(1, &[0, 0, 0, 0, 2, 8, 1], false), START + 4 * MS));
    assert_eq!(r.stream_of(0), 1, "a message is not the end of the call");
    let ok = literals(&[("grpc-status", "0")]);
    assert!(r.feed(0, &headers(1, &ok, true), START + 6 * MS));
    // Trailers-only answers: NOT_FOUND is accepted, UNAVAILABLE is not.
    let mut not_found = STATUS_200.to_vec();
    not_found.extend(literals(&[("grpc-status", "5"), ("grpc-message", "no")]));
    assert!(r.feed(0, &headers(3, &not_found, true), START + 7 * MS));
    let mut unavailable = STATUS_200.to_vec();
    unavailable.extend(literals(&[("grpc-status", "14")]));
    assert!(r.feed(0, &headers(5, &unavailable, true), START + 9 * MS));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (2, 1));
    assert_eq!(p.counts.errors.grpc, 1);
    assert_eq!(p.grpc_codes.get(Code::Ok), 1);
    assert_eq!(p.grpc_codes.get(Code::NotFound), 1);
    assert_eq!(p.grpc_codes.get(Code::Unavailable), 1);
    // Each is timed to the end of its call, the failed one included (the server answered).
    // OK at 6 ms of its intended time, NOT_FOUND at 7 - 1 = 6 ms, UNAVAILABLE at 9 - 2 = 7 ms.
    assert_eq!(p.rec.response.count_at(6 * MS), 2);
    assert_eq!(p.rec.response.count_at(7 * MS), 1);
    assert_eq!(p.rec.response.len(), 3);
    assert_eq!(r.d.conns[0].state, ConnState::Open);
}

#[test]
fn a_grpc_answer_without_grpc_status_is_a_parse_failure_and_a_reset_call_a_read_failure() {
    let mut r = grpc(2, 2, "OK");
    r.open_all(100).at(START).at(START + MS);
    // HTTP 200 and the stream ended, but no grpc-status: the call broke the protocol.
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + 2 * MS));
    assert!(r.feed(0, &data(1, &[0, 0, 0, 0, 0], true), START + 3 * MS));
    // The server resets the other call: it fails as read, the connection carries on.
    // INTERNAL_ERROR.
    let code = 0x2u32.to_be_bytes();
    assert!(r.feed(0, &frame(frame::RST_STREAM, 0, 3, &code), START + 4 * MS));
    assert_eq!(r.d.conns[0].state, ConnState::Open);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.failed, 2);
    assert_eq!((p.counts.errors.parse, p.counts.errors.read), (1, 1));
    assert_eq!(p.grpc_codes.get(candor_grpc::Code::Ok), 0);
}

#[test]
fn an_http2_stream_that_runs_into_the_timeout_keeps_its_first_token_and_events() {
    // One stream, its head at 1 ms and one token at 2 ms, then nothing; -T 15 ms: the scan at
    // 20 ms fails it in class `timeout` and resets it; its token is measured (TTFT 2 ms, one
    // event in one response) and its stream named `timeout`.
    let mut shape = llm(1, 1);
    shape.timeout_ns = 15 * MS;
    let mut r = h2(shape);
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    r.at(START + 10 * MS);
    r.at(START + 20 * MS);
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.timeout), (1, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.ttft.count_at(2 * MS)), (1, 1));
    assert_eq!((s.events, s.responses), (1, 1));
    assert_eq!(
        s.failures[candor_stream::openai::LlmFailure::Timeout.index()],
        1
    );
}

#[test]
fn an_http2_stream_the_run_ends_keeps_its_first_token_and_stays_unfinished() {
    let mut r = h2(llm(1, 1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &headers(1, STATUS_200, false), START + MS));
    assert!(r.feed(0, &data(1, &token("a"), false), START + 2 * MS));
    let p = r.finish(START + 5 * MS);
    assert_eq!((p.counts.failed, p.counts.in_flight_at_end), (0, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.events, s.responses), (1, 1, 1));
    assert_eq!(s.failures.iter().sum::<u64>(), 0);
}

/// Feeds `n` copies of frame `f` to connection 0 at `now`, as many to a read as the read buffer
/// holds; whether the connection is still open after them.
fn flood(r: &mut Rig, f: &[u8], n: usize, now: u64) -> bool {
    let per_read = 64 * 1024 / f.len();
    let mut left = n;
    while left > 0 {
        let k = left.min(per_read);
        if !r.feed(0, &f.repeat(k), now) {
            return false;
        }
        left -= k;
    }
    true
}

/// The connection ended with GOAWAY ENHANCE_YOUR_CALM, the request it carried failed as parse
/// and the flood is booked under its kind.
fn assert_flood(r: &mut Rig, kind: candor_engine::backoff::H2Flood) {
    let g = r.expect(0, |f| f.0 == frame::GOAWAY);
    assert_eq!(&g.3[4..8], &frame::ENHANCE_YOUR_CALM.to_be_bytes());
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.parse), (1, 1));
    assert_eq!(faults(&p), fault(Fault::H2Flood(kind)));
}

#[test]
fn more_pending_ping_acks_than_the_bound_is_a_ping_flood() {
    use candor_engine::backoff::H2Flood;
    use flood::MAX_PENDING_ACKS;
    let ping = frame(frame::PING, 0, 0, b"12345678");
    // As many as the bound in one read: each answered, the connection carries on.
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(flood(&mut r, &ping, MAX_PENDING_ACKS as usize, START + MS));
    assert_eq!(r.h2(0).floods, {
        let mut f = flood::Floods::default();
        for k in 0..MAX_PENDING_ACKS {
            f.ack(H2Flood::Ping, k == 0).unwrap();
        }
        f
    });
    // One more in one read than acks may be pending: a flood.
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!flood(
        &mut r,
        &ping,
        MAX_PENDING_ACKS as usize + 1,
        START + MS
    ));
    assert_flood(&mut r, H2Flood::Ping);
}

#[test]
fn pings_acked_in_time_are_a_flood_when_no_response_moves_between_them() {
    use candor_engine::backoff::H2Flood;
    use flood::{MAX_IDLE_FRAMES, MAX_PENDING_ACKS};
    let ping = frame(frame::PING, 0, 0, b"12345678");
    let mut r = h2(Shape::new(2));
    r.open_all(100).at(START);
    let reads = (MAX_IDLE_FRAMES / MAX_PENDING_ACKS) as usize;
    for _ in 0..reads - 1 {
        assert!(r.feed(0, &ping.repeat(MAX_PENDING_ACKS as usize), START + MS));
    }
    // A response moves: the count starts again.
    assert!(r.feed(0, &headers(1, STATUS_200, true), START + 2 * MS));
    for _ in 0..reads {
        assert!(r.feed(0, &ping.repeat(MAX_PENDING_ACKS as usize), START + 3 * MS));
    }
    r.at(START + 10 * MS);
    assert!(!r.feed(0, &ping, START + 11 * MS));
    let g = r.expect(0, |f| f.0 == frame::GOAWAY);
    assert_eq!(&g.3[4..8], &frame::ENHANCE_YOUR_CALM.to_be_bytes());
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (1, 1));
    assert_eq!(faults(&p), fault(Fault::H2Flood(H2Flood::Ping)));
}

#[test]
fn a_settings_flood_is_bounded_like_a_ping_flood() {
    use candor_engine::backoff::H2Flood;
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!flood(
        &mut r,
        &settings(&[]),
        flood::MAX_PENDING_ACKS as usize + 1,
        START + MS
    ));
    assert_flood(&mut r, H2Flood::Settings);
}

/// Each kind of frame that moves no response: the bound is taken, one more is a flood of that
/// kind.
fn idle_flood(f: &[u8], before: &[u8], kind: candor_engine::backoff::H2Flood) {
    let n = flood::MAX_IDLE_FRAMES as usize;
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(before.is_empty() || r.feed(0, before, START + MS));
    assert!(flood(&mut r, f, n, START + MS), "{kind:?}");
    assert!(!flood(&mut r, f, 1, START + 2 * MS), "{kind:?}");
    assert_flood(&mut r, kind);
}

#[test]
fn window_update_empty_data_rst_stream_continuation_and_priority_floods_are_each_bounded() {
    use candor_engine::backoff::H2Flood;
    idle_flood(&window_update(0, 1), &[], H2Flood::WindowUpdate);
    idle_flood(&window_update(1, 1), &[], H2Flood::WindowUpdate);
    idle_flood(&data(1, &[], false), &[], H2Flood::Data);
    // Bytes on a stream this client does not have (never opened, or reset) go nowhere.
    idle_flood(&data(7, b"x", false), &[], H2Flood::Data);
    let cancel = frame::CANCEL.to_be_bytes();
    idle_flood(
        &frame(frame::RST_STREAM, 0, 9, &cancel),
        &[],
        H2Flood::RstStream,
    );
    let open_block = frame(frame::HEADERS, 0, 1, STATUS_200);
    idle_flood(
        &frame(frame::CONTINUATION, 0, 1, &[]),
        &open_block,
        H2Flood::Continuation,
    );
    idle_flood(
        &frame(frame::PING, frame::ACK, 0, &[0; 8]),
        &[],
        H2Flood::Ping,
    );
    idle_flood(
        &frame(frame::SETTINGS, frame::ACK, 0, &[]),
        &[],
        H2Flood::Settings,
    );
    idle_flood(&frame(2, 0, 1, &[0, 0, 0, 0, 16]), &[], H2Flood::Other);
    idle_flood(&frame(0xfa, 0, 0, b"?"), &[], H2Flood::Other);
}

#[test]
fn a_header_block_past_its_byte_bound_is_a_continuation_flood() {
    use candor_engine::backoff::H2Flood;
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(r.feed(0, &frame(frame::HEADERS, 0, 1, STATUS_200), START + MS));
    let piece = frame(frame::CONTINUATION, 0, 1, &[0x88; frame::DEFAULT_MAX_FRAME]);
    // 256 KiB in 16 KiB frames, one byte of HEADERS before them.
    assert!(flood(&mut r, &piece, 15, START + MS));
    assert!(!r.feed(0, &piece, START + 2 * MS));
    assert_flood(&mut r, H2Flood::Continuation);
}

#[test]
fn window_updates_that_let_a_waiting_body_go_on_are_no_flood() {
    // A body of 20,000 bytes, sent 1 byte per WINDOW_UPDATE of the server's: each one moves it.
    let mut shape = Shape::new(1);
    shape.body = vec![b'b'; 20_000];
    let mut r = h2(shape);
    for i in 0..r.d.conns.len() {
        r.connect(i, START - MS);
        let zero = settings(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 0)]);
        assert!(r.feed(i, &zero, START - MS));
    }
    r.at(START);
    assert!(flood(&mut r, &window_update(1, 1), 15_000, START + MS));
    assert_eq!(r.stream(0).body_sent, 15_000);
    assert_eq!(r.d.conns[0].state, ConnState::Open);
}

/// Replies on streams 1, 3, 5, ... of a gRPC run that each end with `grpc-status: 0` but lie:
/// each is INTERNAL (class `grpc`) with why in its failure example, as grpc-go's client judges
/// them; an honest one beside them is OK.
#[test]
fn grpc_replies_whose_framing_or_type_lie_are_internal_with_the_reason_kept() {
    use candor_grpc::Code;
    let lies: Vec<(Vec<u8>, Vec<u8>, &str)> = vec![
        // A prefix that claims 16 bytes, 4 delivered.
        (
            grpc_head(),
            vec![0, 0, 0, 0, 16, 1, 2, 3, 4],
            "INTERNAL: gRPC response ended inside a message (12 bytes missing)",
        ),
        // A prefix that claims 4 GiB, 4 delivered.
        (
            grpc_head(),
            vec![0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4],
            "INTERNAL: gRPC message of 4294967295 bytes exceeds the limit of 4194304 bytes",
        ),
        // Compressed, with no grpc-encoding to say how.
        (
            grpc_head(),
            vec![1, 0, 0, 0, 2, 8, 1],
            "INTERNAL: a message flagged compressed without a grpc-encoding",
        ),
        // Not gRPC at all.
        (
            STATUS_200.to_vec(),
            vec![0, 0, 0, 0, 2, 8, 1],
            "INTERNAL: the response's content-type is not application/grpc",
        ),
    ];
    let n = lies.len() + 2;
    let mut r = grpc(n, n as u64, "OK");
    r.open_all(100);
    for k in 0..n as u64 {
        r.at(START + k * MS);
    }
    let ok = literals(&[("grpc-status", "0")]);
    let at = START + 10 * MS;
    for (k, (head, body, _)) in lies.iter().enumerate() {
        let id = 1 + 2 * k as u32;
        assert!(r.feed(0, &headers(id, head, false), at));
        assert!(r.feed(0, &data(id, body, false), at));
        assert!(r.feed(0, &headers(id, &ok, true), at));
    }
    // Honest: one message, compressed with the encoding named.
    let id = 1 + 2 * lies.len() as u32;
    let mut gzip = grpc_head();
    gzip.extend(literals(&[("grpc-encoding", "gzip")]));
    assert!(r.feed(0, &headers(id, &gzip, false), at));
    assert!(r.feed(0, &data(id, &[1, 0, 0, 0, 2, 8, 1], false), at));
    assert!(r.feed(0, &headers(id, &ok, true), at));
    // A failing status keeps the server's grpc-message, percent-decoded.
    let mut denied = grpc_head();
    denied.extend(literals(&[
        ("grpc-status", "7"),
        ("grpc-message", "no%20entry"),
    ]));
    assert!(r.feed(0, &headers(id + 2, &denied, true), at));
    let p = r.finish(START + 20 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 5));
    assert_eq!(p.counts.errors.grpc, 5);
    assert_eq!(p.grpc_codes.get(Code::Internal), 4);
    assert_eq!(p.grpc_codes.get(Code::Ok), 1);
    assert_eq!(p.grpc_codes.get(Code::PermissionDenied), 1);
    let said: Vec<String> = p
        .failures
        .sorted()
        .iter()
        .map(|f| String::from_utf8_lossy(f.body().unwrap()).into_owned())
        .collect();
    let mut want: Vec<String> = lies.iter().map(|l| l.2.to_string()).collect();
    want.push("PERMISSION_DENIED: no entry".into());
    assert_eq!(said, want);
}
