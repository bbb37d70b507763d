//! The driver's own decisions for in-order protocols on simulated time: the real [`Driver`] over loopback
//! sockets this test opened, with a manual clock (every step is handed its `now`) and a scripted
//! peer (the server's bytes are put in the connection's buffer as a read would, its close is an
//! end of stream), so what it books is asserted exactly: pipelining order, stray bytes, a
//! protocol error failing exactly what the connection carried, the server's close with or without
//! requests outstanding, the back-off of reconnects, timeouts, a write the socket does not take.

use crate::http1::ResponseParser;
use crate::tcp::TcpFramer;
use candor_core::workload_results::FailedCheck;
use candor_engine::backoff::Fault;
use candor_engine::config::Framing;
use candor_engine::driver::rig::{Rig, Shape, MS, START, US};
use candor_engine::driver::{ConnState, READS_PER_PASS};
use candor_engine::shared::{Failure, PhaseAcc};
use candor_workload::check::{BodyNeedle, HeaderCheck, ResponseChecks};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn http(shape: Shape) -> Rig<ResponseParser> {
    Rig::new(shape, || ResponseParser::new(false))
}

fn tcp(shape: Shape) -> Rig<TcpFramer> {
    let framing = shape.framing.clone().unwrap();
    Rig::new(shape, move || TcpFramer::new(framing.clone()))
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn faults(p: &PhaseAcc) -> Vec<(String, u64)> {
    p.faults.by_cause().into_iter().collect()
}

fn fault(f: Fault, n: u64) -> Vec<(String, u64)> {
    let mut t = candor_engine::backoff::FaultTally::default();
    for _ in 0..n {
        t.count(f);
    }
    t.by_cause().into_iter().collect()
}

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
    r.d.fail_connection(0, Failure::Write, START + MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.errors.write, p.counts.failed), (1, 1));
    assert_eq!(faults(&p), fault(Fault::Reset, 1));
}

#[test]
fn a_failed_connect_is_a_refusal_and_a_failed_handshake_a_tls_fault() {
    let mut r = http(Shape::new(2));
    r.d.start_connect(0, START - MS);
    r.d.fail_connection(0, Failure::Connect, START - MS);
    r.open(0, START - MS / 2);
    r.d.conns[0].state = ConnState::Handshaking;
    r.d.fail_connection(0, Failure::Connect, START - MS / 4);
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
    r.d.fail_connection(0, Failure::Template, START + MS);
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

#[test]
fn raw_tcp_frames_answer_their_requests_in_order() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    shape.framing = Some(Framing::ExpectBytes(3));
    let mut r = tcp(shape);
    r.open_all().at(START).at(START + MS);
    assert!(r.answer(0, b"abcde", START + 2 * MS));
    assert!(r.answer(0, b"f", START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 2);
    assert_eq!(p.rec.response.count_at(2 * MS), 2);
}

#[test]
fn raw_tcp_a_frame_nobody_asked_for_is_a_protocol_error() {
    let mut shape = Shape::new(1);
    shape.framing = Some(Framing::Delimiter(b"\n".to_vec()));
    let mut r = tcp(shape);
    r.open_all().at(START);
    assert!(!r.answer(0, b"one\ntwo\n", START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (0, 1));
    assert_eq!(faults(&p), fault(Fault::Malformed, 1));
}

#[test]
fn raw_tcp_a_close_completes_no_frame() {
    let mut shape = Shape::new(1);
    shape.framing = Some(Framing::Delimiter(b"\n".to_vec()));
    let mut r = tcp(shape);
    r.open_all().at(START);
    assert!(r.answer(0, b"no delimiter yet", START + MS));
    r.close(0, START + 2 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (0, 1));
}

/// `--check-header 'X-Ok: yes'` and `--check-body needle`.
pub(crate) fn header_and_body_checks() -> ResponseChecks {
    ResponseChecks {
        body: Some(BodyNeedle::new(b"needle").unwrap()),
        headers: vec![HeaderCheck::parse("X-Ok: yes").unwrap()],
    }
}

#[test]
fn the_observer_fails_a_response_without_the_checked_header_and_keeps_its_body() {
    let mut shape = Shape::new(1);
    shape.checks = header_and_body_checks();
    let mut r = http(shape);
    r.open_all().at(START);
    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nneedle here";
    assert!(r.answer(0, answer, START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (0, 1));
    let kept = p.failures.sorted();
    assert_eq!(kept[0].check, FailedCheck::Header);
    assert_eq!(kept[0].body(), Some(&b"needle here"[..]));
}

#[test]
fn the_observer_finds_a_checked_body_split_over_reads() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    shape.checks = header_and_body_checks();
    let mut r = http(shape);
    r.open_all().at(START).at(START + MS);
    let head = b"HTTP/1.1 200 OK\r\nX-Ok:  yes \r\nContent-Length: 10\r\n\r\n";
    let mut first = head.to_vec();
    first.extend_from_slice(b"a nee");
    assert!(r.answer(0, &first, START + 2 * MS));
    let mut rest = b"dle b".to_vec();
    // The second response has the header but not the body: a body failure.
    rest.extend_from_slice(head);
    rest.extend_from_slice(b"no needl e");
    assert!(r.answer(0, &rest, START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    assert_eq!(p.failures.sorted()[0].check, FailedCheck::Body);
}

/// A server-sent events response head, its body chunked.
const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

/// One chunk of `data` (an event's bytes).
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", data.len()).into_bytes();
    v.extend_from_slice(data);
    v.extend_from_slice(b"\r\n");
    v
}

fn sse(kind: Option<candor_stream::StreamKind>, llm: bool) -> candor_stream::tap::StreamSettings {
    candor_stream::tap::StreamSettings { kind, llm }
}

#[test]
fn a_stream_whose_next_event_is_late_fails_at_the_scan_after_its_event_timeout() {
    // Truth: events at 2 and 4 ms, --event-timeout 8 ms, scans every 10 ms from the start:
    // at 10 ms the wait is 6 ms (kept), at 20 ms it is 16 ms: the stream fails then, as
    // `event_timeout` in class `stream`, its 2 events counted, and its connection is closed
    // without a fault (a timeout, as --timeout's). Before the first event only --timeout
    // bounds the wait: the head alone at 1 ms starts no event clock.
    let mut shape = Shape::new(1);
    shape.stream = sse(Some(candor_stream::StreamKind::Sse), false);
    shape.event_timeout_ns = 8 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    r.at(START + 2 * MS);
    assert!(r.answer(0, &chunk(b"data: a\n\n"), START + 2 * MS));
    assert!(r.answer(0, &chunk(b"data: b\n\n"), START + 4 * MS));
    r.at(START + 10 * MS);
    assert_eq!(r.state(0), ConnState::Open, "6 ms since the last event");
    r.at(START + 19 * MS);
    assert_eq!(r.state(0), ConnState::Open, "no scan between 10 and 20 ms");
    r.at(START + 20 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (0, 1));
    assert_eq!((p.counts.errors.stream, p.counts.errors.timeout), (1, 0));
    let s = p.stream.as_ref().unwrap();
    let timeouts = s.failures[candor_stream::openai::LlmFailure::EventTimeout.index()];
    assert_eq!((s.events, s.responses, timeouts), (2, 1, 1));
    assert_eq!(s.first_event.count_at(2 * MS), 1);
    assert_eq!(s.event_gap.count_at(2 * MS), 1);
    assert!(faults(&p).is_empty());
}

#[test]
fn a_stream_that_keeps_its_events_coming_is_not_cut_by_the_event_timeout() {
    // Events every 6 ms under an 8 ms bound for 40 ms, then the end: it completes, though it
    // lasted five times the bound.
    let mut shape = Shape::new(1);
    shape.stream = sse(Some(candor_stream::StreamKind::Sse), false);
    shape.event_timeout_ns = 8 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    for k in 1..=7u64 {
        r.at(START + 6 * k * MS);
        assert!(r.answer(0, &chunk(b"data: x\n\n"), START + 6 * k * MS));
    }
    r.at(START + 45 * MS);
    assert!(r.answer(0, b"0\r\n\r\n", START + 45 * MS));
    let p = r.finish(START + 60 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 0));
    assert_eq!(p.stream.as_ref().unwrap().events, 7);
}

#[test]
fn goodput_counts_the_completed_requests_that_meet_every_per_request_bound() {
    // Three LLM streams, intended at 0, 1 and 2 ms, answered in turn on one connection:
    // each sent when the one before ends (at 0, 4 and 10 ms), first tokens at 3, 9 and 14 ms:
    // TTFT 3, 8 and 12 ms from the intended send, 3, 5 and 4 ms from the actual send; two
    // tokens each, 1 ms apart (TPOT 1 ms). With ttft<10ms the first two are good from the
    // intended send; from the actual send all three are.
    let mut shape = Shape::new(3);
    shape.stream = sse(None, true);
    shape.goodput = Some(candor_stream::goodput::GoodputSlo::parse("ttft<10ms,tpot<=1ms").unwrap());
    let mut r = http(shape);
    r.open_all();
    let token = |t: &str| {
        chunk(
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n").as_bytes(),
        )
    };
    let done = [chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n".to_vec()].concat();
    let mut now = START;
    for first in [3u64, 9, 14] {
        r.at(now);
        let sent = r.d.core.exchange(r.d.core.oldest(0).unwrap()).sent;
        assert_eq!(sent, now);
        assert!(r.answer(0, SSE_HEAD, START + first * MS));
        assert!(r.answer(0, &token("a"), START + first * MS));
        assert!(r.answer(0, &token("b"), START + (first + 1) * MS));
        assert!(r.answer(0, &done, START + (first + 1) * MS));
        now = START + (first + 1) * MS;
    }
    let p = r.finish(START + 30 * MS);
    assert_eq!(p.counts.completed, 3);
    let s = p.stream.as_ref().unwrap();
    assert_eq!(s.ttft.count_at(12 * MS), 1);
    assert_eq!((s.good, s.good_service), (2, 3));
}

#[test]
fn a_stream_that_fails_its_body_check_adds_no_output_tokens() {
    // Two LLM streams of two tokens each under --check-body needle: the first says it, the
    // second does not and fails in class `check`. Only the first's tokens are output: the
    // second's were booked before the check's verdict and counted in tokens/s.
    let mut shape = Shape::new(2);
    shape.stream = sse(None, true);
    shape.checks = ResponseChecks {
        body: Some(BodyNeedle::new(b"needle").unwrap()),
        headers: Vec::new(),
    };
    let mut r = http(shape);
    r.open_all();
    let token = |t: &str| {
        chunk(
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n").as_bytes(),
        )
    };
    let done = [chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n".to_vec()].concat();
    let mut now = START;
    for first in ["needle", "hay"] {
        r.at(now);
        assert!(r.answer(0, SSE_HEAD, now + MS));
        assert!(r.answer(0, &token(first), now + 2 * MS));
        assert!(r.answer(0, &token("b"), now + 3 * MS));
        assert!(r.answer(0, &done, now + 3 * MS));
        now += 4 * MS;
    }
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.check), (1, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.responses, s.output_tokens), (2, 2));
    // The failed stream's measures are still recorded: both first tokens.
    assert_eq!(s.ttft.len(), 2);
}

/// A server whose response never ends (a chunk-less body of 2^60 bytes, written without pause
/// by a thread) cannot hold an in-order connection's reads: one call reads at most
/// `READS_PER_PASS` buffers and leaves the connection owed a read, the next pass reads on, and
/// the timeout scan still fails the request at its timeout (connection scope: the connection
/// closes). Before, the reads ran while they came back full, and the loop's clock with them.
#[test]
fn an_endless_response_cannot_hold_the_driver_in_its_reads() {
    use std::io::Write;
    let mut shape = Shape::new(1);
    shape.timeout_ns = 100 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    let mut s = r.peer.conns[0].try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let writer = std::thread::spawn(move || {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1152921504606846976\r\n\r\n");
        let zeros = vec![0u8; 1 << 20];
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            if s.write_all(&zeros).is_err() {
                return;
            }
        }
    });
    let budget = (READS_PER_PASS * r.d.conns[0].buf.len()) as u64;
    let read = |r: &Rig<ResponseParser>| r.d.core.ledger().phases[1].counts.bytes_read;
    // Enough waiting to fill every read of a pass (the writer is ahead by several passes).
    std::thread::sleep(std::time::Duration::from_millis(200));
    r.d.read_responses(0, true);
    let first = read(&r);
    assert!(first > 0 && first <= budget, "{first} bytes in one call");
    assert_eq!(r.d.unread, vec![0]);
    r.at(START + 50 * MS);
    let second = read(&r) - first;
    assert!(second > 0 && second <= budget, "{second}");
    r.at(START + 100 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let p = r.finish(START + 200 * MS);
    drop(r);
    writer.join().unwrap();
    assert_eq!((p.counts.completed, p.counts.errors.timeout), (0, 1));
}

/// A response whose body ends at the server's close, over [`READS_PER_PASS`] buffers in all,
/// queued with the close before the driver reads: the one read-closed event's reads stop at
/// the budget, and the next pass must read on to the end of stream (the event does not come
/// again), where the response completes. Before, the next pass took its first short read for
/// "drained" and never read the close: the request waited for its timeout.
#[test]
fn a_response_ended_by_the_close_completes_when_its_reads_were_cut_short() {
    let mut shape = Shape::new(1);
    shape.timeout_ns = 100 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    r.peer.read_until(0, 1);
    // Reads of 4 KiB (a budget of 64 KiB), so that all of it fits the socket unread (see
    // `send_and_close`); the head still fits a read, and nothing else depends on the size.
    r.d.conns[0].buf = vec![0; 4096].into_boxed_slice();
    // The budget and half a buffer more: the second pass ends in a short read.
    let body = READS_PER_PASS * r.d.conns[0].buf.len() + r.d.conns[0].buf.len() / 2;
    let mut bytes = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
    bytes.resize(bytes.len() + body, b'x');
    let sock = r.d.conns[0].sock.as_mut().unwrap();
    r.peer.send_and_close(0, &bytes, sock);
    r.d.read_responses(0, true);
    assert_eq!(r.d.unread, vec![0]);
    assert_eq!(r.state(0), ConnState::Open);
    // A few passes, each 1 ms apart, far from the 100 ms timeout.
    for k in 1..=3 {
        r.at(START + k * MS);
    }
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 200 * MS);
    assert_eq!((p.counts.completed, p.counts.failed), (1, 0));
    assert_eq!(p.counts.bytes_read, bytes.len() as u64);
}

#[test]
fn a_stream_that_runs_into_the_timeout_keeps_its_first_token_and_events() {
    // Truth: sent at 0, the head at 1 ms, tokens at 2 and 4 ms, then nothing; -T 15 ms and a
    // scan every 10 ms: at 10 ms it has waited 10 ms (kept), at 20 ms 20 ms: it fails then in
    // class `timeout`. What its stream delivered is measured as it would be had the stream
    // been cut: TTFT 2 ms, first event 2 ms, one ITL of 2 ms, two events in one response,
    // named `timeout` among the failed streams; a failed request's tokens are not output.
    let mut shape = Shape::new(1);
    shape.stream = sse(None, true);
    shape.timeout_ns = 15 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    let token = |t: &str| {
        chunk(
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n").as_bytes(),
        )
    };
    assert!(r.answer(0, &token("a"), START + 2 * MS));
    assert!(r.answer(0, &token("b"), START + 4 * MS));
    r.at(START + 10 * MS);
    assert_eq!(r.state(0), ConnState::Open);
    r.at(START + 20 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.timeout), (1, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.ttft.count_at(2 * MS)), (1, 1));
    assert_eq!(s.first_event.count_at(2 * MS), 1);
    assert_eq!(s.itl.count_at(2 * MS), 1);
    assert_eq!((s.events, s.responses), (2, 1));
    let timeouts = s.failures[candor_stream::openai::LlmFailure::Timeout.index()];
    assert_eq!((timeouts, s.output_tokens), (1, 0));
}

#[test]
fn a_stream_the_run_ends_keeps_its_first_token_and_events_and_stays_unfinished() {
    // The head at 1 ms and one token at 2 ms, then the run ends at 5 ms (-T 2 s far off): the
    // request is unfinished (not failed), and its stream's TTFT (2 ms), first event and event
    // are measured all the same; no failure is named and no token is output.
    let mut shape = Shape::new(1);
    shape.stream = sse(None, true);
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    let token = chunk(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
    assert!(r.answer(0, &token, START + 2 * MS));
    let p = r.finish(START + 5 * MS);
    assert_eq!((p.counts.failed, p.counts.in_flight_at_end), (0, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.ttft.len(), s.ttft.count_at(2 * MS)), (1, 1));
    assert_eq!(s.first_event.count_at(2 * MS), 1);
    assert_eq!((s.events, s.responses, s.output_tokens), (1, 1, 0));
    assert_eq!(s.failures.iter().sum::<u64>(), 0);
}
