//! The connection on simulated time: the server's SETTINGS and stream limits, GOAWAY, stream
//! resets, protocol and flow-control errors, closes, timeouts and request bodies held by windows.

use super::*;

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
    assert_eq!(faults(&p), fault(crate::http2::faults::goaway(calm)));
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
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::PROTOCOL_ERROR))
    );
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
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::FRAME_SIZE_ERROR))
    );
}

#[test]
fn a_zero_window_update_of_the_connection_is_a_protocol_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!r.feed(0, &window_update(0, 0), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::PROTOCOL_ERROR))
    );
}

#[test]
fn a_connection_window_past_its_maximum_is_a_flow_control_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    assert!(!r.feed(0, &window_update(0, 0x7fff_ffff), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::FLOW_CONTROL_ERROR))
    );
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
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::PROTOCOL_ERROR))
    );
}

#[test]
fn an_undecodable_header_block_is_a_compression_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    // Index 62: the first dynamic entry, and the table is empty.
    assert!(!r.feed(0, &headers(1, &[0xbe], true), START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, 1);
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::COMPRESSION_ERROR))
    );
}

#[test]
fn a_push_promise_is_a_protocol_error() {
    let mut r = h2(Shape::new(1));
    r.open_all(100).at(START);
    let push = frame(frame::PUSH_PROMISE, frame::END_HEADERS, 1, &[0, 0, 0, 2]);
    assert!(!r.feed(0, &push, START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(
        faults(&p),
        fault(crate::http2::faults::broke(frame::PROTOCOL_ERROR))
    );
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
