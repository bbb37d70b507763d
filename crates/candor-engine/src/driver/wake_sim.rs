//! The driver's protocol timer ([`Protocol::WAKES`]) on simulated time, with a protocol written
//! for these tests whose answers come from its own timer (as QUIC's acks, retransmissions and
//! idle timeout do): it is woken when its time comes and not before, what it completes then is
//! timed by that wake-up, the earliest wake of the open connections bounds the loop's sleep,
//! and a wake-up that gives up on the connection books its fault and fails what was on the wire.

use super::rig::{Peer, Shape, MS, START};
use super::*;
use crate::backoff::Fault;
use crate::seam::{Broken, Greeting, Link, Received};

/// Opens at the server's `OK`; sends `REQ`; its timer, `delay` after the send, answers the
/// request with 200, or (with `give_up`) ends the connection.
struct Timed {
    delay: u64,
    give_up: bool,
    due: u64,
    slot: Option<usize>,
}

impl Protocol for Timed {
    const CARRIAGE: Carriage = Carriage::Framed;
    const WAKES: bool = true;

    fn reset(&mut self) {
        self.due = u64::MAX;
        self.slot = None;
    }

    fn greet(&mut self, link: &mut Link<'_>) -> Greeting {
        link.out.extend_from_slice(b"HELLO\n");
        Greeting::AwaitPeer
    }

    fn send(&mut self, link: &mut Link<'_>) {
        if let (None, Some(slot)) = (self.slot, link.carried_at(0)) {
            link.out.extend_from_slice(b"REQ\n");
            link.sent(slot);
            link.written(slot, 4);
            self.slot = Some(slot);
            self.due = link.now + self.delay;
        }
    }

    fn receive(&mut self, link: &mut Link<'_>, input: &[u8]) -> Result<Received, Broken> {
        if input == b"OK\n" {
            link.opened();
        }
        Ok(Received {
            consumed: input.len(),
            freed: true,
        })
    }

    fn wake_at(&self) -> u64 {
        self.due
    }

    fn woken(&mut self, link: &mut Link<'_>) -> Result<Received, Broken> {
        self.due = u64::MAX;
        if self.give_up {
            return Err(Broken::Closed(Fault::Closed));
        }
        if let Some(slot) = self.slot.take() {
            link.complete(slot, 200, None, None);
        }
        Ok(Received {
            consumed: 0,
            freed: true,
        })
    }
}

fn rig(delay: u64, give_up: bool) -> (Driver<Timed>, Peer) {
    let peer = Peer::new();
    let unit = Arc::new(crate::seam::unit::testing::Framed { streams: 1 });
    let setup = Shape::new(1).setup(&peer.listener, unit);
    let make = move || Timed {
        delay,
        give_up,
        due: u64::MAX,
        slot: None,
    };
    let mut d = Driver::new(setup, None, make).unwrap();
    d.core.begin_at(START, Some(Shape::new(1).schedule()), 0);
    (d, peer)
}

/// Connects and opens connection 0 before the start.
fn open(d: &mut Driver<Timed>, peer: &mut Peer) {
    d.start_connect(0, START - MS);
    peer.accept();
    d.finish_connect(0, START - MS);
    let ok = b"OK\n";
    d.conns[0].buf[..ok.len()].copy_from_slice(ok);
    assert!(d.received(0, ok.len(), START - MS));
    assert_eq!(d.conns[0].state, ConnState::Open);
}

#[test]
fn a_protocols_timer_is_woken_when_due_and_not_before_and_bounds_the_sleep() {
    let (mut d, mut peer) = rig(5 * MS, false);
    open(&mut d, &mut peer);
    assert_eq!(d.protocol_wake(), u64::MAX);
    d.turn(START);
    assert_eq!(d.core.exchange(0).sent, START);
    assert_eq!(d.protocol_wake(), START + 5 * MS);
    d.turn(START + 5 * MS - 1);
    assert_eq!(
        d.core.exchange(0).sent,
        START,
        "not woken early: still carried"
    );
    d.turn(START + 5 * MS);
    assert_eq!(d.protocol_wake(), u64::MAX);
    let [_, p] = d
        .core
        .finish(START + 10 * MS, &|| START + 10 * MS, &|| false);
    assert_eq!(p.counts.completed, 1);
    // Sent on time, answered by the wake-up 5 ms later: that is its response time.
    assert_eq!(p.rec.response.count_at(5 * MS), 1);
}

#[test]
fn a_wake_up_that_gives_up_books_its_fault_and_fails_what_was_on_the_wire() {
    let (mut d, mut peer) = rig(3 * MS, true);
    open(&mut d, &mut peer);
    d.turn(START);
    d.turn(START + 3 * MS);
    assert_eq!(d.conns[0].state, ConnState::Down);
    let [_, p] = d
        .core
        .finish(START + 10 * MS, &|| START + 10 * MS, &|| false);
    let c = &p.counts;
    assert_eq!((c.completed, c.failed), (0, 1));
    assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
    assert_eq!(p.faults.total(), 1);
}
