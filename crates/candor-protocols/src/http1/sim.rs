//! HTTP/1.1 on the one driver, its decisions on simulated time (the engine's `driver::rig`: the
//! real driver over loopback sockets this test opened, a manual clock, a scripted peer), so what
//! it books is asserted exactly: pipelining order, stray bytes, a protocol error failing exactly
//! what the connection carried, the server's close with or without requests outstanding, the
//! back-off of reconnects, timeouts, a write the socket does not take, an early response; and in
//! `sim/streams.rs` the response observer's checks and streamed responses.

use super::ResponseParser;
use candor_core::workload_results::FailedCheck;
use candor_engine::backoff::Fault;
use candor_engine::driver::rig::{fault, faults, Rig, Shape, MS, START, US};
use candor_engine::driver::ConnState;
use candor_engine::shared::FailureClass;

pub(crate) mod streams;

pub(crate) fn http(shape: Shape) -> Rig<ResponseParser> {
    let unit = std::sync::Arc::new(super::unit::Http1 {
        pipeline: shape.pipeline,
    });
    Rig::new(shape, unit, || ResponseParser::new(false))
}

pub(crate) const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

#[test]
fn an_answer_completes_its_request_at_the_instant_it_is_read() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    let sent = r.peer.read_until(0, 1).len();
    assert!(sent > 0);
    assert!(r.answer(0, OK, START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.intended, p.counts.completed), (1, 1));
    assert_eq!(p.rec.response.count_at(3 * MS), 1);
    assert_eq!(p.counts.bytes_read, OK.len() as u64);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_response_split_over_two_reads_completes_at_the_second() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, &OK[..20], START + MS));
    assert!(r.answer(0, &OK[20..], START + 4 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(4 * MS), 1);
}

#[test]
fn the_first_byte_is_the_read_that_brought_the_head_not_the_one_that_ended_the_body() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, &OK[..5], START + MS));
    assert!(r.answer(0, &OK[5..20], START + 2 * MS));
    assert!(r.answer(0, &OK[20..], START + 4 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.response.count_at(4 * MS), 1);
    assert_eq!(p.rec.first_byte.len(), 1);
    assert_eq!(p.rec.first_byte.count_at(MS), 1);
}

#[test]
fn a_pipelined_response_begun_in_the_read_that_ended_the_one_before_starts_there() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS);
    // The first response and the head of the second in one read at 3 ms, its end at 7 ms.
    let mut bytes = OK.to_vec();
    bytes.extend_from_slice(&OK[..10]);
    assert!(r.answer(0, &bytes, START + 3 * MS));
    assert!(r.answer(0, &OK[10..], START + 7 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 2);
    // Intended at 0 and 1 ms: first bytes 3 and 2 ms after, last bytes 3 and 6 ms.
    let fb = &p.rec.first_byte;
    assert_eq!(
        (fb.len(), fb.count_at(3 * MS), fb.count_at(2 * MS)),
        (2, 1, 1)
    );
    let rt = &p.rec.response;
    assert_eq!((rt.count_at(3 * MS), rt.count_at(6 * MS)), (1, 1));
}

#[test]
fn a_response_cut_off_after_its_first_byte_records_it_and_fails_as_read() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, &OK[..20], START + 2 * MS));
    r.close(0, START + 5 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (0, 1));
    assert_eq!(p.rec.first_byte.count_at(2 * MS), 1);
}

#[test]
fn pipelined_responses_answer_their_requests_oldest_first() {
    let mut shape = Shape::new(3);
    shape.pipeline = 3;
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS).at(START + 2 * MS);
    assert_eq!(r.d.conns[0].written, 3);
    // Two responses in one read: the first two requests, in order, both at that instant.
    let two = [OK, OK].concat();
    assert!(r.answer(0, &two, START + 5 * MS));
    assert_eq!(r.d.conns[0].written, 1);
    assert!(r.answer(0, OK, START + 6 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 3);
    // Intended at 0, 1 and 2 ms; answered at 5, 5 and 6 ms.
    let rt = &p.rec.response;
    assert_eq!((rt.count_at(5 * MS), rt.count_at(4 * MS)), (1, 2));
}

#[test]
fn a_partial_response_is_kept_while_the_next_one_is_awaited() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS);
    let mut bytes = OK.to_vec();
    bytes.extend_from_slice(&OK[..10]);
    assert!(r.answer(0, &bytes, START + 2 * MS));
    assert_eq!(r.d.conns[0].buf_len, 10);
    assert!(r.answer(0, &OK[10..], START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 2);
    assert_eq!(p.rec.response.count_at(2 * MS), 2);
}

#[test]
fn bytes_before_any_request_fail_the_next_request_as_parse() {
    let mut r = http(Shape::new(1));
    r.open_all();
    // The server speaks first: nobody asked. The connection is closed and the fault booked;
    // the request given to it next is the one charged.
    assert!(!r.answer(0, b"hello", START - MS / 2));
    assert_eq!(r.state(0), ConnState::Down);
    assert!(r.d.conns[0].stray);
    r.at(START);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.parse), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Malformed, 1));
}

#[test]
fn a_second_response_to_one_request_makes_that_exchange_a_parse_failure() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, OK, START + MS));
    assert!(!r.answer(0, OK, START + 2 * MS));
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!(
        (p.counts.completed, p.counts.failed, p.counts.errors.parse),
        (0, 1, 1)
    );
    assert_eq!(faults(&p), fault(Fault::Malformed, 1));
}

#[test]
fn a_malformed_response_fails_exactly_what_its_connection_carried() {
    let mut shape = Shape::new(4);
    shape.connections = 2;
    shape.pipeline = 2;
    let mut r = http(shape);
    r.open_all();
    for k in 0..4 {
        r.at(START + k * MS);
    }
    let carried = r.d.conns[0].written;
    assert_eq!(carried + r.d.conns[1].written, 4);
    assert!(!r.answer(0, b"HTTP/1.1 abc\r\n\r\n", START + 5 * MS));
    for _ in 0..r.d.conns[1].written {
        assert!(r.answer(1, OK, START + 6 * MS));
    }
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.errors.parse, carried as u64);
    assert_eq!(p.counts.completed, 4 - carried as u64);
    assert_eq!(faults(&p), fault(Fault::Malformed, 1));
}

#[test]
fn a_closing_response_cuts_off_the_pipelined_request_behind_it() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS);
    let closing = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert!(!r.answer(0, closing, START + 2 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(
        (p.counts.completed, p.counts.failed, p.counts.errors.read),
        (1, 1, 1)
    );
    // Issue 36: named by its cause (not "closed or reset by the server before the full
    // response"), and the request cut off kept as an example with the closing response's status.
    assert_eq!(faults(&p), fault(Fault::PipelinedClose, 1));
    let kept = p.failures.sorted();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (kept[0].seq, kept[0].status, kept[0].check, kept[0].body()),
        (1, 200, FailedCheck::PipelinedClose, None)
    );
}

#[test]
fn a_close_with_nothing_outstanding_is_no_fault_and_reconnects_at_once() {
    let mut r = http(Shape::new(2));
    r.open_all().at(START);
    assert!(r.answer(0, OK, START + MS / 2));
    r.close(0, START + MS / 2);
    assert_eq!(r.state(0), ConnState::Down);
    // No back-off after a clean close: the next request connects when it falls due.
    r.at(START + MS);
    assert_eq!(r.connect_called(0), START + MS);
    assert_eq!(r.state(0), ConnState::Connecting);
    let p = r.finish(START + 10 * MS);
    assert!(faults(&p).is_empty());
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.counts.failed, 0);
}

#[test]
fn a_close_with_a_request_outstanding_fails_it_as_read_and_backs_off() {
    let mut r = http(Shape::new(2));
    r.open_all().at(START);
    r.close(0, START + MS / 2);
    // The fault starts a back-off of 1 ms: the request due at +1 ms waits for it.
    r.at(START + MS);
    assert_eq!(r.state(0), ConnState::Down);
    r.at(START + MS + MS / 2);
    assert_eq!(r.state(0), ConnState::Connecting);
    assert_eq!(r.connect_called(0), START + MS + MS / 2);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.read, p.counts.failed), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Closed, 1));
}

#[test]
fn a_close_completes_a_response_delimited_by_the_close() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, b"HTTP/1.1 200 OK\r\n\r\nuntil the end", START + MS));
    r.close(0, START + 2 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 0));
    assert_eq!(p.rec.response.count_at(2 * MS), 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_close_in_the_middle_of_a_head_is_a_read_failure() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    assert!(r.answer(0, b"HTTP/1.1 200 OK\r\nContent-Le", START + MS));
    r.close(0, START + 2 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (0, 1));
    assert_eq!(faults(&p), fault(Fault::Closed, 1));
}

#[test]
fn the_back_off_doubles_while_the_connection_keeps_failing() {
    let mut r = http(Shape::new(20));
    r.open_all();
    // Each connect is refused at once by a malformed greeting: the waits grow 1, 2, 4 ms.
    let mut now = START;
    r.at(now);
    let mut connects = Vec::new();
    for _ in 0..3 {
        assert!(!r.answer(0, b"garbage\r\n\r\n", now));
        let down = now;
        let mut t = down;
        while r.state(0) == ConnState::Down {
            t += 100 * US;
            r.at(t);
        }
        connects.push(r.connect_called(0) - down);
        r.peer.accept();
        r.d.finish_connect(0, t);
        now = t;
    }
    assert_eq!(connects, vec![MS, 2 * MS, 4 * MS]);
}

#[test]
fn an_answer_resets_the_back_off() {
    let mut r = http(Shape::new(20));
    r.open_all().at(START);
    assert!(!r.answer(0, b"garbage\r\n\r\n", START));
    r.at(START + MS);
    assert_eq!(r.connect_called(0), START + MS);
    r.peer.accept();
    r.d.finish_connect(0, START + MS);
    assert!(r.answer(0, OK, START + MS + 100 * US));
    r.at(START + 2 * MS);
    // It had answered since it reconnected: after this fault it is connected again at once,
    // for the next request (due at 3 ms).
    assert!(!r.answer(0, b"garbage\r\n\r\n", START + 2 * MS + 100 * US));
    r.at(START + 3 * MS);
    assert_eq!(r.connect_called(0), START + 3 * MS);
    r.peer.accept();
    r.d.finish_connect(0, START + 3 * MS);
    // And the next fault without an answer waits the first step again, 1 ms (not 2).
    assert!(!r.answer(0, b"garbage\r\n\r\n", START + 3 * MS + 100 * US));
    r.at(START + 4 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    r.at(START + 4 * MS + 100 * US);
    assert_eq!(r.connect_called(0), START + 4 * MS + 100 * US);
}

#[test]
fn a_request_that_waits_for_a_back_off_is_sent_when_it_ends_and_its_wait_is_send_lag() {
    let mut r = http(Shape::new(2));
    r.open_all().at(START);
    assert!(!r.answer(0, b"garbage\r\n\r\n", START + MS / 2));
    r.at(START + MS);
    r.at(START + MS + MS / 2);
    r.peer.accept();
    r.d.finish_connect(0, START + MS + MS / 2);
    assert!(r.answer(0, OK, START + 2 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 1);
    assert_eq!(p.rec.send_lag.count_at(MS / 2), 1);
    assert_eq!(p.rec.response.count_at(MS), 1);
    assert_eq!(p.rec.service.count_at(MS / 2), 1);
}

#[test]
fn a_timeout_fails_the_request_closes_the_connection_and_books_no_fault() {
    let mut shape = Shape::new(3);
    shape.timeout_ns = 5 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    let mut t = START;
    while r.state(0) == ConnState::Open && t < START + 20 * MS {
        t += 250 * US;
        r.at(t);
    }
    assert!(t >= START + 5 * MS, "timed out at {t}");
    let p = r.finish(t);
    assert_eq!(p.counts.errors.timeout, 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_timed_out_connection_reconnects_for_the_next_request_without_back_off() {
    let mut shape = Shape::new(30);
    shape.timeout_ns = 2 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    let mut t = START;
    while r.state(0) == ConnState::Open {
        t += 250 * US;
        r.at(t);
    }
    // Requests queued behind the one that timed out are due: the loop's next pass (at once)
    // connects again, with no back-off (a timeout is bounded by --timeout, not a fault).
    r.at(t);
    assert_eq!(r.state(0), ConnState::Connecting);
    assert_eq!(r.connect_called(0), t);
    let p = r.finish(t);
    assert_eq!(p.counts.errors.timeout, 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_write_failure_fails_what_the_connection_carried_as_write_and_books_a_reset() {
    let mut shape = Shape::new(1);
    shape.pipeline = 1;
    let mut r = http(shape);
    r.open_all().at(START);
    r.d.fail_connection(0, FailureClass::Write, START + MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.write, p.counts.failed), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Reset, 1));
}

#[test]
fn a_failed_connect_is_a_refusal_and_a_failed_handshake_a_tls_fault() {
    let mut r = http(Shape::new(2));
    r.d.start_connect(0, START - MS);
    r.d.fail_connection(0, FailureClass::Connect, START - MS);
    r.open(0, START - MS / 2);
    r.d.conns[0].state = ConnState::Handshaking;
    r.d.fail_connection(0, FailureClass::Connect, START - MS / 4);
    let p = r.finish(START);
    let mut want = fault(Fault::Refused, 1);
    want.extend(fault(Fault::Tls, 1));
    want.sort();
    assert_eq!(faults(&p), want);
}

#[test]
fn a_request_that_could_not_be_filled_books_no_fault() {
    let mut r = http(Shape::new(1));
    r.open_all().at(START);
    r.d.fail_connection(0, FailureClass::Template, START + MS);
    let p = r.finish(START + 10 * MS);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_request_the_socket_does_not_take_at_once_is_finished_when_it_turns_writable() {
    let mut shape = Shape::new(1);
    // Far more than a loopback socket's buffers hold while the server reads nothing.
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START);
    let len = r.d.requests[0].bytes.len();
    assert_eq!(r.d.conns[0].written, 0);
    assert!(r.d.conns[0].write_off > 0 && r.d.conns[0].write_off < len);
    assert!(r.d.socket_owed);
    // The server drains its side; each writable event resumes the write where it stopped.
    let mut t = START;
    let mut got = 0;
    while r.d.conns[0].written == 0 {
        got = r.peer.read_until(0, got + 1).len();
        t += 10 * US;
        r.d.write_requests(0, t);
    }
    // Sent when its first byte left, at the intended time, however long the rest took.
    assert_eq!(r.d.core.exchange(0).sent, START);
    let p = r.finish(t);
    assert_eq!(p.counts.bytes_written, len as u64);
    assert_eq!(p.counts.sent_unanswered, 1);
}

#[test]
fn a_request_cut_off_part_way_counts_the_bytes_that_went_out() {
    // Issue 36: a 100 MB body the server answered (and closed) before reading it all read
    // bytes_written 0, as if nothing had been sent.
    let mut shape = Shape::new(1);
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START);
    let out = r.d.conns[0].write_off;
    assert!(out > 0 && out < r.d.requests[0].bytes.len());
    r.close(0, START + MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.bytes_written, out as u64);
    assert_eq!((p.counts.failed, p.counts.errors.read), (1, 1));
}

const TOO_LARGE: &[u8] = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";

#[test]
fn a_response_before_the_body_is_all_out_answers_it_and_ends_the_connection() {
    // RFC 9112 section 9.5: a server may answer (here 413) a body it has not read. Candor
    // took that answer for stray bytes and failed the request as `parse`.
    let mut shape = Shape::new(1);
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START);
    let out = r.d.conns[0].write_off;
    assert!(out > 0 && out < r.d.requests[0].bytes.len());
    // The rest of the body cannot be skipped: the connection is closed, with no fault.
    assert!(!r.answer(0, TOO_LARGE, START + 3 * MS));
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (0, 1));
    assert_eq!((p.counts.errors.status, p.counts.errors.parse), (1, 0));
    assert_eq!(p.counts.status.s4xx, 1);
    assert_eq!(p.rec.response.count_at(3 * MS), 1);
    assert_eq!(p.counts.bytes_written, out as u64);
    assert!(faults(&p).is_empty(), "{:?}", faults(&p));
}

#[test]
fn an_early_response_split_over_reads_and_ended_by_the_close_answers_its_request() {
    let mut shape = Shape::new(1);
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START);
    // No length: the server's close ends the body.
    assert!(r.answer(0, b"HTTP/1.1 413 Payload Too Large\r\n", START + MS));
    assert!(r.answer(0, b"Connection: close\r\n\r\ntoo big", START + 2 * MS));
    r.close(0, START + 4 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.status), (0, 1));
    assert_eq!(p.counts.failed, 1);
    assert_eq!(p.rec.first_byte.count_at(MS), 1);
    assert_eq!(p.rec.response.count_at(4 * MS), 1);
    assert!(faults(&p).is_empty(), "{:?}", faults(&p));
}

#[test]
fn an_interim_response_while_the_body_goes_out_keeps_the_connection() {
    // `100 Continue` (a request sent with `Expect: 100-continue`) may come while the body is
    // still being written: it is no answer, the body goes on and the final response answers.
    // It was stray bytes, failing the request as `parse`.
    let mut shape = Shape::new(1);
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START);
    assert_eq!(r.d.conns[0].written, 0);
    assert!(r.answer(0, b"HTTP/1.1 100 Continue\r\n\r\n", START + MS));
    assert_eq!(r.state(0), ConnState::Open);
    let (mut t, mut got) = (START + MS, 0);
    while r.d.conns[0].written == 0 {
        got = r.peer.read_until(0, got + 1).len();
        t += 10 * US;
        r.d.write_requests(0, t);
    }
    let len = r.d.requests[0].bytes.len();
    assert!(r.answer(0, OK, t + MS));
    assert_eq!(r.state(0), ConnState::Open);
    let p = r.finish(t + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 0));
    assert_eq!(p.counts.bytes_written, len as u64);
    assert!(faults(&p).is_empty());
}

#[test]
fn requests_behind_an_early_response_fail_with_its_connection() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    shape.body = vec![b'x'; 32 << 20];
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS);
    // The second request is given to the connection, not yet written: the first is not out.
    assert_eq!(r.d.core.carried(0).len(), 2);
    assert_eq!(r.d.conns[0].written, 0);
    assert!(!r.answer(0, TOO_LARGE, START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (0, 2));
    assert_eq!((p.counts.errors.status, p.counts.errors.write), (1, 1));
    assert_eq!(p.counts.errors.parse, 0);
    assert_eq!(faults(&p), fault(Fault::Reset, 1));
}
