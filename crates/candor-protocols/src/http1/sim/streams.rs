//! HTTP/1.1 responses read by the observer on simulated time: header and body checks across
//! reads, streamed responses and their event timeouts, goodput, an endless response that cannot
//! hold the driver, and streams cut by the timeout or the run's end.

use super::http;
use crate::http1::ResponseParser;
use candor_core::workload_results::FailedCheck;
use candor_engine::driver::rig::{faults, Rig, Shape, MS, START};
use candor_engine::driver::{ConnState, READS_PER_PASS};
use candor_workload::check::{BodyNeedle, HeaderCheck, ResponseChecks};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
    candor_stream::tap::StreamSettings {
        kind,
        llm,
        counter: None,
        whole: false,
        embeddings: None,
    }
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
fn with_a_stream_timeout_the_timeout_bounds_only_the_wait_for_the_first_event() {
    // Truth: -T 15 ms, --stream-timeout 35 ms; a scan at the first step 10 ms or more after
    // the previous one (here at 12, 22 and 32 ms, then due at 42). The request (sent at 0):
    // its head at 1 ms and tokens every 5 ms from 2 to 32 ms: past 15 ms it is bounded by
    // 35 ms from its send, so the 22 and 32 ms scans keep it and the one at 42 ms fails it, in
    // class `timeout` with its 7 tokens' events counted. Without the stream bound the 22 ms
    // scan would have failed it, as in the test above.
    let mut shape = Shape::new(1);
    shape.stream = sse(None, true);
    shape.timeout_ns = 15 * MS;
    shape.stream_timeout_ns = 35 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    let token = chunk(b"data: {\"choices\":[{\"delta\":{\"content\":\"t\"}}]}\n\n");
    for k in 0..7u64 {
        r.at(START + (2 + 5 * k) * MS);
        assert!(r.answer(0, &token, START + (2 + 5 * k) * MS));
        assert_eq!(r.state(0), ConnState::Open, "token {k}");
    }
    r.at(START + 41 * MS);
    assert_eq!(r.state(0), ConnState::Open, "no scan between 32 and 42 ms");
    r.at(START + 42 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 50 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.timeout), (1, 1));
    let s = p.stream.as_ref().unwrap();
    assert_eq!((s.events, s.responses), (7, 1));
}

#[test]
fn with_a_stream_timeout_a_silent_first_event_is_still_bounded_by_the_timeout() {
    // Truth: the head at 1 ms and no event: -T 15 ms ends it at the 20 ms scan, however long
    // --stream-timeout (1 s) would allow a stream that had begun.
    let mut shape = Shape::new(1);
    shape.stream = sse(None, true);
    shape.timeout_ns = 15 * MS;
    shape.stream_timeout_ns = 1_000 * MS;
    let mut r = http(shape);
    r.open_all().at(START);
    assert!(r.answer(0, SSE_HEAD, START + MS));
    r.at(START + 10 * MS);
    assert_eq!(r.state(0), ConnState::Open);
    r.at(START + 20 * MS);
    assert_eq!(r.state(0), ConnState::Down);
    let p = r.finish(START + 30 * MS);
    assert_eq!((p.counts.failed, p.counts.errors.timeout), (1, 1));
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
