//! Floods of frames on simulated time: each kind bounded, past its bound a GOAWAY
//! ENHANCE_YOUR_CALM and a fault named by kind.

use super::*;

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
fn assert_flood(r: &mut Rig, kind: crate::http2::faults::H2Flood) {
    let g = r.expect(0, |f| f.0 == frame::GOAWAY);
    assert_eq!(&g.3[4..8], &frame::ENHANCE_YOUR_CALM.to_be_bytes());
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.parse), (1, 1));
    assert_eq!(faults(&p), fault(crate::http2::faults::flood(kind)));
}

#[test]
fn more_pending_ping_acks_than_the_bound_is_a_ping_flood() {
    use crate::http2::faults::H2Flood;
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
    use crate::http2::faults::H2Flood;
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
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::flood(H2Flood::Ping))
    );
}

#[test]
fn a_settings_flood_is_bounded_like_a_ping_flood() {
    use crate::http2::faults::H2Flood;
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
fn idle_flood(f: &[u8], before: &[u8], kind: crate::http2::faults::H2Flood) {
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
    use crate::http2::faults::H2Flood;
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
    use crate::http2::faults::H2Flood;
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
