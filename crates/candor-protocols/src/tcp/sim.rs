//! Raw TCP on the one driver, its decisions on simulated time: frames answer requests in order,
//! a frame nobody asked for breaks the protocol, a close completes no frame.

use super::Framing;
use super::TcpFramer;
use candor_engine::backoff::Fault;
use candor_engine::driver::rig::{fault, faults, Rig, Shape, MS, START};

fn tcp(shape: Shape, framing: Framing) -> Rig<TcpFramer> {
    let unit = std::sync::Arc::new(super::unit::Tcp {
        pipeline: shape.pipeline,
        payload: b"ping".to_vec(),
        framing: framing.clone(),
    });
    Rig::new(shape, unit, move || TcpFramer::new(framing.clone()))
}

#[test]
fn raw_tcp_frames_answer_their_requests_in_order() {
    let mut shape = Shape::new(2);
    shape.pipeline = 2;
    let mut r = tcp(shape, Framing::ExpectBytes(3));
    r.open_all().at(START).at(START + MS);
    assert!(r.answer(0, b"abcde", START + 2 * MS));
    assert!(r.answer(0, b"f", START + 3 * MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!(p.counts.completed, 2);
    assert_eq!(p.rec.response.count_at(2 * MS), 2);
}

#[test]
fn raw_tcp_a_frame_nobody_asked_for_is_a_protocol_error() {
    let shape = Shape::new(1);
    let mut r = tcp(shape, Framing::Delimiter(b"\n".to_vec()));
    r.open_all().at(START);
    assert!(!r.answer(0, b"one\ntwo\n", START + MS));
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.parse), (0, 1));
    assert_eq!(faults(&p), fault(Fault::Malformed, 1));
}

#[test]
fn raw_tcp_a_close_completes_no_frame() {
    let shape = Shape::new(1);
    let mut r = tcp(shape, Framing::Delimiter(b"\n".to_vec()));
    r.open_all().at(START);
    assert!(r.answer(0, b"no delimiter yet", START + MS));
    r.close(0, START + 2 * MS);
    let p = r.finish(START + 10 * MS);
    assert_eq!((p.counts.completed, p.counts.errors.read), (0, 1));
}
