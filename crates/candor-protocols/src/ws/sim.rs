//! WebSocket on the one driver, its decisions on simulated time: the real driver running
//! [`WebSocket`] over loopback sockets this test opened, a manual clock and a scripted server
//! whose bytes are put in the connection's buffer as a read would, so what is booked and what
//! is answered is asserted exactly: the upgrade opening the connection, replies in order and by
//! number, a late reply to a timed-out message, replies matching nothing (class `protocol`),
//! pings, the server's close.

use super::carrier::{Shared, WsConnection, MAX_PENDING_PONGS};
use super::frames::Opcode;
use super::handshake;
use candor_engine::backoff::{Fault, FaultTally};
use candor_engine::driver::rig::{Peer, Shape, MS, START};
use candor_engine::driver::READS_PER_PASS;
use candor_engine::driver::{ConnState, Driver};
use candor_engine::seam::unit::RequestForm;
use candor_engine::shared::PhaseAcc;
use candor_wire::target::Target;
use std::sync::Arc;

struct Rig {
    d: Driver<WsConnection>,
    peer: Peer,
    /// Where the next unread frame the driver sent starts, per accepted connection.
    seen: Vec<usize>,
}

fn ws(shape: Shape, matching: &str, body: &[u8]) -> Rig {
    let peer = Peer::new();
    let unit = super::unit::WebSocket {
        streams: shape.streams,
        matching: matching.parse().unwrap(),
        binary: false,
    };
    let mut setup = shape.setup(&peer.listener, Arc::new(unit.clone()));
    let port = peer.listener.local_addr().unwrap().port();
    let mut config = (*setup.config).clone();
    config.target = Target::parse(&format!("ws://127.0.0.1:{port}/chat")).unwrap();
    config.method = "GET".into();
    config.body = body.to_vec();
    config.threads = 1;
    config.validate(&unit).unwrap();
    setup.requests = candor_engine::request_plan::prepare_requests(&config, RequestForm::Http);
    setup.config = Arc::new(config);
    let settings = super::carrier::Settings {
        streams: unit.streams,
        matching: unit.matching.clone(),
        binary: unit.binary,
    };
    let shared = Arc::new(Shared::new(&setup.config, &settings, &setup.requests));
    let mut d = Driver::new(setup, None, move || WsConnection::new(shared.clone(), 7)).unwrap();
    d.core.begin_at(START, Some(shape.schedule()), 0);
    Rig {
        d,
        peer,
        seen: Vec::new(),
    }
}

/// A server frame (unmasked, final).
fn server_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut v = vec![0x80 | opcode, payload.len() as u8];
    v.extend_from_slice(payload);
    v
}

fn text(payload: &str) -> Vec<u8> {
    server_frame(Opcode::Text as u8, payload.as_bytes())
}

impl Rig {
    /// Connects connection `i` at `now` and answers its upgrade with a valid 101 at `open`.
    fn open(&mut self, i: usize, now: u64, open: u64) {
        self.d.start_connect(i, now);
        let k = self.peer.accept();
        self.d.finish_connect(i, now);
        assert_eq!(self.d.conns[i].state, ConnState::Greeting);
        let head_end = loop {
            if let Some(p) = self.peer.got[k].windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let n = self.peer.got[k].len() + 1;
            self.peer.read_until(k, n);
        };
        let head = String::from_utf8(self.peer.got[k][..head_end].to_vec()).unwrap();
        assert!(head.starts_with("GET /chat HTTP/1.1\r\n"), "{head}");
        let key = head
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .unwrap();
        let accept = handshake::accept_for(key.as_bytes());
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
            std::str::from_utf8(&accept).unwrap()
        );
        self.seen.push(head_end);
        assert!(self.feed(i, answer.as_bytes(), open));
        assert_eq!(self.d.conns[i].state, ConnState::Open);
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
        if self.d.conns[i].sock.is_some() {
            self.d.flush(i, now);
        }
        open
    }

    /// The next frame the driver sent on accepted connection `k`: its first byte and its
    /// unmasked payload (every client frame must be masked).
    fn next_frame(&mut self, k: usize) -> (u8, Vec<u8>) {
        let at = self.seen[k];
        self.peer.read_until(k, at + 2);
        let b1 = self.peer.got[k][at + 1];
        assert_eq!(b1 & 0x80, 0x80, "a client frame is masked");
        let len = (b1 & 0x7f) as usize;
        assert!(len < 126);
        self.peer.read_until(k, at + 6 + len);
        let got = &self.peer.got[k];
        let mask = [got[at + 2], got[at + 3], got[at + 4], got[at + 5]];
        let payload = got[at + 6..at + 6 + len]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        self.seen[k] = at + 6 + len;
        (got[at], payload)
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
fn the_upgrade_opens_the_connection_and_a_message_is_timed_from_its_intended_send() {
    let mut r = ws(Shape::new(1), "order", b"hello");
    r.d.start_connect(0, START - MS);
    r.peer.accept();
    r.d.finish_connect(0, START - MS);
    // Due before the server answered the upgrade: the message waits on its connection.
    r.at(START);
    assert_eq!(r.d.core.exchange(0).sent, 0);
    drop(r);
    // The same with the 101 arriving 2 ms after the due time.
    let mut r = ws(Shape::new(1), "order", b"hello");
    r.open(0, START - MS, START + 2 * MS);
    r.at(START + 2 * MS);
    assert_eq!(r.d.core.exchange(0).sent, START + 2 * MS);
    let (b0, payload) = r.next_frame(0);
    assert_eq!((b0, payload.as_slice()), (0x81, b"hello".as_slice()));
    assert!(r.feed(0, &text("hello"), START + 5 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    // From the intended send (START), not from the send 2 ms later.
    assert_eq!(p.rec.response.count_at(5 * MS), 1);
    assert_eq!(p.rec.service.count_at(3 * MS), 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn in_order_a_late_reply_to_a_timed_out_message_is_dropped_not_pinned_on_the_next() {
    let mut shape = streams(4, 2);
    shape.timeout_ns = 20 * MS;
    let mut r = ws(shape, "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START).at(START + MS);
    // At 20.5 ms message 0 has waited past its 20 ms; message 1 (sent at 1 ms) has not.
    r.at(START + 20 * MS + MS / 2);
    assert_eq!(
        r.d.conns[0].state,
        ConnState::Open,
        "a timeout is the message's alone"
    );
    // The reply to message 0 comes late, then message 1's.
    assert!(r.feed(0, &text("m"), START + 22 * MS));
    assert!(r.feed(0, &text("m"), START + 23 * MS));
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.timeout), (1, 1));
    assert_eq!(
        p.rec.response.count_at(22 * MS),
        1,
        "message 1: 1 ms to 23 ms"
    );
}

#[test]
fn json_numbers_match_replies_in_any_order_and_a_foreign_one_fails_the_rest_as_protocol() {
    let mut r = ws(streams(4, 3), "json:id", br#"{"op":"x"}"#);
    r.open(0, START - MS, START - MS);
    r.at(START).at(START + MS).at(START + 2 * MS);
    for want in 1..=3 {
        let (_, payload) = r.next_frame(0);
        let v: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(v, serde_json::json!({"id": want, "op": "x"}));
    }
    // The second message's reply first, then the first's; then one carrying a number never sent.
    assert!(r.feed(0, &text(r#"{"id":2,"ok":true}"#), START + 4 * MS));
    assert!(r.feed(0, &text(r#"{"id":1,"ok":true}"#), START + 6 * MS));
    assert!(!r.feed(0, &text(r#"{"id":99}"#), START + 7 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 2);
    assert_eq!(
        p.rec.response.count_at(3 * MS),
        1,
        "message 2: 1 ms to 4 ms"
    );
    assert_eq!(p.rec.response.count_at(6 * MS), 1, "message 1: 0 to 6 ms");
    // Message 3 was on the wire when the foreign reply came: it fails in class `protocol`,
    // and the reply is booked as the connection's fault.
    assert_eq!((p.counts.errors.protocol, p.counts.failed), (1, 1));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::UNMATCHED))
    );
}

#[test]
fn a_reply_without_the_number_is_matched_to_nothing_and_the_connection_says_1002() {
    let mut r = ws(streams(4, 2), "json:id", br#"{"op":"x"}"#);
    r.open(0, START - MS, START - MS);
    r.at(START).at(START + MS);
    r.next_frame(0);
    r.next_frame(0);
    // The server answers without carrying the number back: neither message can be told.
    assert!(!r.feed(0, &text(r#"{"ok":true}"#), START + 2 * MS));
    let (b0, payload) = r.next_frame(0);
    assert_eq!(
        (b0, payload.as_slice()),
        (0x88, 1002u16.to_be_bytes().as_slice())
    );
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.protocol), (0, 2));
    assert_eq!(p.counts.errors.parse, 0);
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::UNMATCHED))
    );
}

#[test]
fn in_order_a_reply_with_nothing_on_the_wire_ends_the_connection_and_fails_nothing() {
    let mut r = ws(streams(4, 2), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    assert!(r.feed(0, &text("m"), START + MS / 2));
    // A message the server sends of its own: nothing is on the wire for it to answer.
    assert!(!r.feed(0, &text("news"), START + MS / 2 + 1));
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + MS / 2 + 2);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 0));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::UNMATCHED))
    );
}

#[test]
fn pings_are_answered_and_a_close_fails_what_was_on_the_wire() {
    let mut r = ws(streams(4, 2), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START).at(START + MS);
    r.next_frame(0);
    r.next_frame(0);
    assert!(r.feed(0, &server_frame(Opcode::Ping as u8, b"p!"), START + 2 * MS));
    let (b0, payload) = r.next_frame(0);
    assert_eq!((b0, payload.as_slice()), (0x8A, b"p!".as_slice()));
    assert!(r.feed(0, &text("m"), START + 3 * MS));
    assert!(!r.feed(
        0,
        &server_frame(Opcode::Close as u8, &1011u16.to_be_bytes()),
        START + 4 * MS
    ));
    // The closing handshake: the server's code is echoed.
    let (b0, payload) = r.next_frame(0);
    assert_eq!(
        (b0, payload.as_slice()),
        (0x88, 1011u16.to_be_bytes().as_slice())
    );
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (1, 1));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::CLOSE))
    );
}

#[test]
fn after_a_close_the_connection_reopens_when_its_back_off_ends() {
    let mut r = ws(streams(4, 2), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    // The server closes with message 0 on the wire: it fails, and a back-off of 1 ms starts.
    let going_away = server_frame(Opcode::Close as u8, &1001u16.to_be_bytes());
    assert!(!r.feed(0, &going_away, START + MS / 2));
    // Message 1 falls due at +1 ms, inside the back-off: the connection stays down until it ends.
    r.at(START + MS);
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    r.at(START + MS + MS / 2);
    assert_eq!(r.d.conns[0].state, ConnState::Connecting);
    assert_eq!(r.d.conns[0].connect_called, START + MS + MS / 2);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.read, p.counts.failed), (1, 1));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::CLOSE))
    );
}

#[test]
fn a_masked_server_frame_breaks_the_protocol_and_is_answered_with_1002() {
    let mut r = ws(streams(4, 1), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    // RFC 6455 5.1: a client closes the connection on a masked frame from the server.
    assert!(!r.feed(0, &[0x81, 0x81, 1, 2, 3, 4, b'm' ^ 1], START + MS));
    let (b0, payload) = r.next_frame(0);
    assert_eq!(
        (b0, payload.as_slice()),
        (0x88, 1002u16.to_be_bytes().as_slice())
    );
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.parse, p.counts.errors.protocol), (1, 0));
    assert_eq!(faults(&p), fault(Fault::Malformed));
}

#[test]
fn a_refused_upgrade_is_a_failed_connect_named_by_its_reason() {
    let answers: [(&[u8], Fault); 3] = [
        (
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
            super::faults::fault(&super::faults::UPGRADE_STATUS),
        ),
        (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n",
            super::faults::fault(&super::faults::UPGRADE_ACCEPT),
        ),
        (
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n",
            super::faults::fault(&super::faults::UPGRADE),
        ),
    ];
    for (answer, want) in answers {
        let mut r = ws(Shape::new(1), "order", b"m");
        r.d.start_connect(0, START - MS);
        r.peer.accept();
        r.d.finish_connect(0, START - MS);
        r.at(START);
        assert!(!r.feed(0, answer, START + MS));
        let p = r.finish(START + 10 * MS);
        // The connection never opened: a connect failure (not `parse`, the class of a server
        // that broke a protocol it spoke), its fault naming the refusal.
        assert_eq!((p.counts.failed, p.counts.errors.connect), (1, 1));
        assert_eq!(p.counts.errors.parse, 0);
        assert_eq!(faults(&p), fault(want));
    }
}

/// RFC 6455 section 8.1: a text reply that is not UTF-8 fails the connection with close code
/// 1007; it completes nothing, and the message on the wire fails as `parse`.
#[test]
fn a_text_reply_that_is_not_utf8_is_answered_with_1007_and_completes_nothing() {
    let mut r = ws(streams(4, 1), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    assert!(!r.feed(
        0,
        &server_frame(Opcode::Text as u8, &[0xff, 0xfe]),
        START + MS
    ));
    let (b0, payload) = r.next_frame(0);
    assert_eq!(
        (b0, payload.as_slice()),
        (0x88, 1007u16.to_be_bytes().as_slice())
    );
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (0, 1));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::INVALID_UTF8))
    );
}

/// Pings are answered while their pongs are taken; more than `MAX_PENDING_PONGS` owed at once
/// (queued since the out buffer was last written out whole) is a flood: close 1008, what was
/// on the wire fails as `parse`, the fault is named, and the pongs stop growing the buffer.
#[test]
fn a_ping_flood_ends_the_connection_at_its_bound_of_pongs_owed() {
    let ping = server_frame(Opcode::Ping as u8, b"");
    let pings = |n: usize| ping.repeat(n);
    let mut r = ws(streams(4, 1), "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    // The bound itself, in one read: answered.
    let bound = MAX_PENDING_PONGS as usize;
    assert!(r.feed(0, &pings(bound), START + MS));
    // The socket took them (the out buffer is empty again): the count starts over.
    assert!(r.d.conns[0].out.is_empty());
    assert!(r.feed(0, &pings(bound), START + 2 * MS));
    for _ in 0..2 * bound {
        assert_eq!(r.next_frame(0), (0x8A, vec![]));
    }
    // One ping more than the bound before the out buffer could be written: a flood.
    assert!(!r.feed(0, &pings(bound + 1), START + 3 * MS));
    for _ in 0..bound {
        assert_eq!(r.next_frame(0), (0x8A, vec![]));
    }
    let (b0, payload) = r.next_frame(0);
    assert_eq!(
        (b0, payload.as_slice()),
        (0x88, 1008u16.to_be_bytes().as_slice())
    );
    assert_eq!(r.d.conns[0].state, ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (0, 1));
    assert_eq!(
        faults(&p),
        fault(super::faults::fault(&super::faults::PING_FLOOD))
    );
}

/// A server that never stops sending (here one binary message of 2^39 bytes, written without
/// pause by a thread) cannot hold the driver in its reads: one call reads at most
/// `READS_PER_PASS` buffers and leaves the connection owed a read, each pass (`turn`) reads as
/// much again, and the pass's timeout scan still fails the message at its timeout. Before, the
/// read loop ran while reads came back full: `-T`, the end and SIGTERM waited on the server.
#[test]
fn a_server_that_never_stops_sending_cannot_hold_the_driver_in_its_reads() {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut shape = streams(1, 1);
    shape.timeout_ns = 100 * MS;
    let mut r = ws(shape, "order", b"m");
    r.open(0, START - MS, START - MS);
    r.at(START);
    r.next_frame(0);
    let mut s = r.peer.conns[0].try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let writer = std::thread::spawn(move || {
        let _ = s.write_all(&[0x82, 127, 0, 0, 0, 0x80, 0, 0, 0, 0]);
        let zeros = vec![0u8; 1 << 20];
        while !stopping.load(Ordering::Relaxed) {
            if s.write_all(&zeros).is_err() {
                return;
            }
        }
    });
    let budget = (READS_PER_PASS * r.d.conns[0].buf.len()) as u64;
    let read = |r: &Rig| r.d.core.ledger().phases[1].counts.bytes_read;
    // Enough waiting to fill every read of a pass (the writer is ahead by several passes).
    std::thread::sleep(std::time::Duration::from_millis(200));
    let before = read(&r);
    r.d.read_framed(0, true);
    let first = read(&r) - before;
    assert!(first <= budget, "{first} bytes in one call");
    assert_eq!(r.d.unread, vec![0]);
    // The next pass reads on, and its timeout scan fails the message at its timeout.
    r.at(START + 50 * MS);
    let second = read(&r) - before - first;
    assert!(second > 0 && second <= budget, "{second}");
    r.at(START + 100 * MS);
    stop.store(true, Ordering::Relaxed);
    let p = r.finish(START + 200 * MS);
    drop(r);
    writer.join().unwrap();
    assert_eq!((p.counts.completed, p.counts.errors.timeout), (0, 1));
}
