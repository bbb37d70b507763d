//! The core's decisions when things go wrong, on simulated time: timeouts, dropped and refused
//! connections and their back-off, stops, early ends and the drain, HTTP/2 stream limits.

use super::*;

#[test]
fn a_timeout_records_the_age_and_frees_the_connection() {
    let mut shape = Shape::new();
    shape.timeout_ns = 25 * MS;
    shape.duration_ns = 40 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((0, Answer::Never));
    let phases = sim.run_to_end();
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.intended, c.completed, c.failed), (40, 39, 1), "{c:?}");
    assert_eq!(c.errors.timeout, 1);
    // Scans run every 10 ms from the start: at 30 ms request 0 (sent at 0) is 30 ms old, past
    // the 25 ms limit; its age is recorded as its response and service time.
    assert_eq!(sim.expired, [0]);
    // (The backlog behind it has response times near it, but none at 30.0 ms.)
    assert_eq!(p.rec.response.count_at(30 * MS), 1);
    assert!(p.rec.service.equivalent(p.rec.service.max(), 30 * MS));
    // The connection was closed and the next request reconnects it (1 ms), so request 1 (due
    // at 1 ms, waiting since) goes out at 31 ms: freed at 30 ms, plus the connect.
    assert_eq!(sim.sends[1].seq, 1);
    assert_eq!(sim.sends[1].at, START + 31 * MS);
    assert_eq!(c.connections_opened, 2, "the initial one and the reconnect");
}

#[test]
fn a_request_waiting_for_its_connection_times_out_from_its_intended_time() {
    let mut shape = Shape::new();
    shape.timeout_ns = 15 * MS;
    shape.duration_ns = 5 * MS;
    let mut sim = Sim::new(shape);
    // The connection never comes up.
    sim.up_at = vec![u64::MAX];
    sim.connect_ns = u64::MAX / 2;
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Request 0 is due at 0 and waits for the connect; the scan at 20 ms finds it 20 ms old
    // (10 ms is not yet 15). Each later one waits in the schedule for the slot, is given it when
    // the previous attempt is given up, starts a connect then, and is timed from there: the
    // attempts end at 20, 40, 60, 80 and 100 ms, and each records its age from its intended time.
    assert_eq!(c.intended, 5);
    assert_eq!(c.errors.timeout, 5);
    assert_eq!(sim.expired, [0; 5]);
    assert_eq!(sim.sends.len(), 0);
    let rt = &measured(&phases).rec.response;
    assert!(rt.equivalent(rt.min(), 20 * MS), "{}", rt.min());
    assert!(rt.equivalent(rt.max(), 96 * MS), "{}", rt.max());
}

#[test]
fn a_drop_fails_exactly_the_requests_in_flight_on_it() {
    // Two connections pipelining three requests each; the server holds every answer for 50 ms.
    let mut shape = Shape::new();
    shape.connections = 2;
    shape.slots_per_connection = 3;
    shape.duration_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(50 * MS, 200);
    // At 4.5 ms requests 0..=4 are out: 0, 2, 4 on connection 0 and 1, 3 on connection 1.
    sim.run_until(START + 4 * MS + 500 * US);
    assert_eq!(sim.core.carried(0).count(), 3);
    assert_eq!(sim.core.carried(1).count(), 2);
    sim.drop_connection(0);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!(c.failed, 3, "exactly what connection 0 carried: {c:?}");
    assert_eq!(c.errors.read, 3);
    assert_eq!((c.intended, c.completed + c.failed), (10, 10));
    assert!(c.balanced());
}

#[test]
fn a_stop_leaves_exactly_the_expected_census() {
    // 1,000/s, one slot, and a server that never answers: request 0 holds the slot and the
    // rest of what falls due waits. An interrupt at 7.5 ms ends the schedule there.
    let mut shape = Shape::new();
    shape.duration_ns = 1_000 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::Never;
    sim.run_until(START + 7 * MS + 500 * US);
    sim.halt = HaltState {
        aborting: true,
        requested_at: None,
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // Entries 0..=7 were due by 7.5 ms: one sent and unanswered, seven never sent; the other
    // 992 were never due and are not counted.
    assert_eq!(c.intended, 8, "{c:?}");
    assert_eq!((c.completed, c.failed), (0, 0));
    assert_eq!(c.in_flight_at_end, 8);
    assert_eq!((c.sent_unanswered, c.queued_unsent), (1, 7));
    assert!(c.balanced());
    assert_eq!(measured(&phases).unfinished.len(), 8);
    assert_eq!(sim.now, START + 7 * MS + 500 * US, "no drain after a stop");
}

#[test]
fn an_early_end_drains_and_counts_only_what_was_due() {
    // Answers take 3 ms; an early end (precision reached) asked for at 5.5 ms: nothing due
    // after it is sent, what is out is awaited in the drain.
    let mut shape = Shape::new();
    shape.slots_per_connection = 8;
    shape.duration_ns = 1_000 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::After(3 * MS, 200);
    sim.run_until(START + 5 * MS + 500 * US);
    sim.halt = HaltState {
        aborting: false,
        requested_at: Some(START + 5 * MS + 500 * US),
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!(
        (c.intended, c.completed, c.in_flight_at_end),
        (6, 6, 0),
        "{c:?}"
    );
    // The last one (due at 5 ms) came back at 8 ms, and the run ended then.
    assert_eq!(sim.now, START + 8 * MS);
}

#[test]
fn the_drain_ends_at_its_deadline_with_the_rest_unfinished() {
    let mut shape = Shape::new();
    shape.duration_ns = 3 * MS;
    shape.slots_per_connection = 4;
    shape.drain_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((2, Answer::After(50 * MS, 200)));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    // 0 and 1 come back; 2 is still out when the drain ends at 3 + 10 ms.
    assert_eq!(
        (c.intended, c.completed, c.in_flight_at_end),
        (3, 2, 1),
        "{c:?}"
    );
    assert_eq!(c.sent_unanswered, 1);
    assert_eq!(sim.now, START + 13 * MS);
    let u = &measured(&phases).unfinished;
    assert!(
        u.equivalent(u.max(), 11 * MS),
        "aged from its intended time (2 ms)"
    );
}

#[test]
fn the_http2_stream_limit_holds_and_the_wait_is_send_lag() {
    // One connection offering 4 streams; the server allows 2 at once and answers after 1 ms.
    let mut shape = Shape::new();
    shape.rate = Some(10_000.0);
    shape.duration_ns = 400 * US;
    shape.slots_per_connection = 4;
    shape.scope = TimeoutScope::Stream;
    let mut sim = Sim::new(shape);
    sim.stream_limit = 2;
    sim.default_answer = Answer::After(MS, 200);
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed), (4, 4));
    assert_eq!(sim.max_open_streams, 2, "never more than the server allows");
    // 0 and 1 go when due; 2 and 3 wait for the streams 0 and 1 free at 1 ms and 1.1 ms.
    let at: Vec<u64> = sim.sends.iter().map(|s| s.at - START).collect();
    assert_eq!(at, [0, 100 * US, MS, 1_100 * US]);
    // The wait is send lag (before the request went out), not service time.
    let r = &measured(&phases).rec;
    assert!(r.send_lag.equivalent(r.send_lag.max(), 800 * US));
    assert!(r.service.equivalent(r.service.max(), MS));
}

#[test]
fn an_http2_timeout_resets_one_stream_and_the_connection_carries_on() {
    let mut shape = Shape::new();
    shape.slots_per_connection = 4;
    shape.scope = TimeoutScope::Stream;
    shape.timeout_ns = 15 * MS;
    shape.duration_ns = 30 * MS;
    let mut sim = Sim::new(shape);
    sim.script.push((1, Answer::Never));
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed, c.errors.timeout), (30, 29, 1));
    // The scan at 20 ms finds request 1 (sent at 1 ms) 19 ms old; the expired slot is its.
    assert_eq!(sim.expired.len(), 1);
    assert_eq!(c.connections_opened, 1, "no reconnect");
    let rt = &measured(&phases).rec.response;
    assert!(rt.equivalent(rt.max(), 19 * MS));
}

#[test]
fn a_pipelined_connection_that_times_out_fails_everything_it_carried() {
    // Three requests pipelined on one connection, none answered: the oldest times out (HTTP/1.1
    // answers in order, so nothing behind it can come back), and the connection with it.
    let mut shape = Shape::new();
    shape.slots_per_connection = 3;
    shape.duration_ns = 3 * MS;
    shape.timeout_ns = 25 * MS;
    let mut sim = Sim::new(shape);
    sim.default_answer = Answer::Never;
    let phases = sim.run_to_end();
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.intended, c.failed, c.errors.timeout), (3, 3, 3), "{c:?}");
    assert_eq!(sim.expired, [0], "one connection closed, once");
    // The scan at 30 ms: each records its own age, 30, 29 and 28 ms.
    assert_eq!(p.rec.response.len(), 3);
    assert!(p.rec.response.equivalent(p.rec.response.min(), 28 * MS));
    assert!(p.rec.response.equivalent(p.rec.response.max(), 30 * MS));
    assert_eq!(sim.now, START + 30 * MS, "nothing left to drain");
}

#[test]
fn a_stop_while_a_start_ahead_is_awaited_ends_the_run_at_once() {
    // A start an hour ahead (--start-at): the core wakes every timeout-scan period while it
    // waits, so a stop asked for meanwhile is seen within that period, and it ends the run there
    // with empty books instead of waiting for the start.
    let mut sim = Sim::new(Shape::new());
    let start = START + 3_600_000 * MS;
    let schedule = Schedule::new(start, 1000.0, ArrivalKind::Constant, 0, 1);
    sim.core.begin_at(start, Some(schedule), 0);
    match sim.core.plan(sim.now) {
        Plan::Wait { wake, .. } => assert!(wake <= sim.now + TIMEOUT_SCAN_NS, "wake {wake}"),
        Plan::Done => panic!("done before the start"),
    }
    let stop_at = START + 25 * MS;
    sim.run_until(stop_at);
    sim.halt = HaltState {
        aborting: true,
        requested_at: None,
    };
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert!(sim.now < stop_at + TIMEOUT_SCAN_NS, "ended at {}", sim.now);
    assert_eq!((c.intended, c.in_flight_at_end), (0, 0), "{c:?}");
    assert!(c.balanced());
    assert!(sim.sends.is_empty());
}

#[test]
fn a_refusing_server_is_retried_on_the_back_off_schedule_and_every_request_is_booked() {
    // 1,000/s for 1 s on one connection that is refused every time (a connect takes 1 ms to
    // fail): each attempt fails the one request that waited on it, and the next is made only
    // when the back-off (1 ms doubling to 1 s) has run out; the rest waits in the schedule.
    let mut shape = Shape::new();
    shape.duration_ns = 1_000 * MS;
    shape.drain_ns = 0;
    let mut sim = Sim::new(shape);
    sim.up_at = vec![u64::MAX];
    sim.refuse = u32::MAX;
    let phases = sim.run_to_end();
    // The attempts the schedule allows: the first at the start, each next one when the
    // previous failed (1 ms later) plus its back-off, while the schedule runs.
    let mut expected = Vec::new();
    let (mut at, mut streak) = (START, 0);
    while at < START + 1_000 * MS {
        expected.push(at);
        streak += 1;
        at += MS + Backoff::delay_ns(streak);
    }
    assert_eq!(sim.connects, expected);
    assert_eq!(expected.len(), 10, "{expected:?}");
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!(c.errors.connect, expected.len() as u64, "{c:?}");
    assert_eq!(c.failed, c.errors.connect);
    assert_eq!(c.intended, 1_000);
    assert!(c.balanced(), "{c:?}");
    assert_eq!(p.faults.total(), expected.len() as u64);
    assert_eq!(
        p.faults.by_cause().into_iter().collect::<Vec<_>>(),
        vec![(
            "connect refused or failed".to_string(),
            expected.len() as u64
        )]
    );
}

#[test]
fn a_connection_that_answered_is_reconnected_at_once() {
    // 500/s; the server closes the connection after each answer (a connect takes 1 ms, an
    // answer 100 us): it answered, so the next request reconnects when it is due (no back-off),
    // and nothing is booked as a fault.
    let mut shape = Shape::new();
    shape.rate = Some(500.0);
    shape.duration_ns = 20 * MS;
    let mut sim = Sim::new(shape);
    for k in 0..10 {
        let answered = if k == 0 {
            500 * US
        } else {
            2 * k * MS + 1_500 * US
        };
        sim.run_until(START + answered);
        assert!(!sim.core.is_busy(0), "request {k} was answered");
        sim.core.connection_down(0, None, sim.now);
        sim.up_at[0] = u64::MAX;
    }
    let phases = sim.run_to_end();
    let c = &measured(&phases).counts;
    assert_eq!((c.completed, c.failed), (10, 0), "{c:?}");
    assert_eq!(
        sim.connects,
        (1..10).map(|k| START + 2 * k * MS).collect::<Vec<_>>()
    );
    assert_eq!(measured(&phases).faults.total(), 0);
}

#[test]
fn the_back_off_wait_is_the_waiting_request_s_send_lag() {
    // 1,000/s on one connection, down at the start; the server refuses the first two connects
    // (a connect takes 1 ms). Request 0 connects at 0 ms and fails at 1 ms (back-off 1 ms);
    // request 1, due at 1 ms, connects at 2 ms and fails at 3 ms (back-off 2 ms); request 2,
    // due at 2 ms, waits for the connect at 5 ms, goes out at 6 ms: 4 ms of send lag.
    let mut shape = Shape::new();
    shape.duration_ns = 10 * MS;
    let mut sim = Sim::new(shape);
    sim.up_at = vec![u64::MAX];
    sim.refuse = 2;
    let phases = sim.run_to_end();
    assert_eq!(sim.connects, vec![START, START + 2 * MS, START + 5 * MS]);
    assert_eq!(sim.sends[0].seq, 2);
    assert_eq!(sim.sends[0].at - sim.sends[0].intended, 4 * MS);
    let p = measured(&phases);
    let c = &p.counts;
    assert_eq!((c.errors.connect, c.completed), (2, 8), "{c:?}");
    assert!(c.balanced());
    assert_eq!(
        p.rec.send_lag.max(),
        p.rec.send_lag.highest_equivalent(4 * MS)
    );
}
