//! Multi-turn conversations on simulated time: the schedule starts conversations, each
//! follow-up is intended at its previous turn's completion plus the think time, exactly, and
//! every conversation ends one way while the census holds.

use super::*;
use candor_core::results::Conversations;
use candor_workload::conversation::{ConversationPlan, ConversationSource};
use candor_workload::think::ThinkTime;

/// Conversations of 3 turns (requests 0, 1, 2 and 3, 4, 5), started at 0, 10 and 20 ms (the
/// third is the first conversation again, round robin), a server that answers in 3 ms, two
/// connections, a think time of 1 ms.
fn conversation_sim(duration_ns: u64, follow_ups: usize, think_ns: u64) -> Sim {
    sim_of(
        duration_ns,
        follow_ups,
        ThinkTime::Fixed(think_ns),
        0,
        1_000 * MS,
    )
}

/// [`conversation_sim`] with intervals of `interval_ns`.
fn conversation_sim_of(
    duration_ns: u64,
    follow_ups: usize,
    think_ns: u64,
    interval_ns: u64,
) -> Sim {
    sim_of(
        duration_ns,
        follow_ups,
        ThinkTime::Fixed(think_ns),
        0,
        interval_ns,
    )
}

/// [`conversation_sim`] with think times drawn from `think` under `seed`.
fn drawn_sim(duration_ns: u64, follow_ups: usize, think: ThinkTime, seed: u64) -> Sim {
    sim_of(duration_ns, follow_ups, think, seed, 1_000 * MS)
}

/// The conversation scenario with a think time drawn from `think` under `seed`, and
/// intervals of `interval_ns`.
fn sim_of(
    duration_ns: u64,
    follow_ups: usize,
    think: ThinkTime,
    seed: u64,
    interval_ns: u64,
) -> Sim {
    let mut shape = Shape::new();
    shape.rate = Some(100.0);
    shape.duration_ns = duration_ns;
    shape.connections = 2;
    shape.follow_ups = follow_ups;
    shape.think = think;
    shape.think_seed = seed;
    shape.interval_ns = interval_ns;
    let mut sim = Sim::new(shape);
    let plan = Arc::new(ConversationPlan::new(&[1, 2, 3, 1, 2, 3]));
    sim.core
        .set_source(Box::new(ConversationSource::new(plan, false, 0)));
    sim.default_answer = Answer::After(3 * MS, 200);
    sim
}

/// The measured phase's conversations, once the intervals' are checked to sum to the phases'.
fn conversations(sim: &Sim, phases: &[PhaseAcc; 2]) -> Conversations {
    let mut by_phase = Conversations::default();
    for p in phases {
        if let Some(s) = &p.stream {
            by_phase.add(&s.conversations);
        }
    }
    let mut by_interval = Conversations::default();
    for (_, c) in &sim.interval_conversations {
        by_interval.add(c);
    }
    assert_eq!(
        by_interval, by_phase,
        "the intervals hold the phases' conversations"
    );
    measured(phases).stream.as_ref().unwrap().conversations
}

/// (seq, request, intended, sent), in ms from the start, of every send.
fn sends(sim: &Sim) -> Vec<(u64, u32, u64, u64)> {
    sim.sends
        .iter()
        .map(|s| {
            (
                s.seq,
                s.request,
                (s.intended - START) / MS,
                (s.at - START) / MS,
            )
        })
        .collect()
}

#[test]
fn each_follow_up_is_intended_at_the_previous_turns_completion_plus_the_think_time() {
    let mut sim = conversation_sim(25 * MS, 64, MS);
    let phases = sim.run_to_end();
    // Conversation 0: 0 -> 3, then 4 -> 7, then 8 -> 11. Conversation 1 (requests 3..5): 10,
    // 14, 18. The third start (conversation 0 again) at 20 -> 23, its second turn at 24 (before
    // the end at 25), and its third would be due at 28: past the end, not sent.
    assert_eq!(
        sends(&sim),
        [
            (0, 0, 0, 0),
            (0, 1, 4, 4),
            (0, 2, 8, 8),
            (1, 3, 10, 10),
            (1, 4, 14, 14),
            (1, 5, 18, 18),
            (2, 0, 20, 20),
            (2, 1, 24, 24),
        ]
    );
    // Exactly: each follow-up's intended send is the instant its previous turn completed
    // (3 ms after it was sent) plus 1 ms.
    for w in sim.sends.windows(2) {
        if w[1].seq == w[0].seq {
            assert_eq!(w[1].intended, w[0].at + 3 * MS + MS);
        }
    }
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed, c.failed), (8, 8, 0), "{c:?}");
    assert_eq!(
        conversations(&sim, &phases),
        Conversations {
            started: 3,
            completed: 2,
            past_end: 1,
            turns: 8,
            ..Default::default()
        }
    );
    // Every response is timed from its own intended send: 3 ms each, no send lag.
    let rec = &measured(&phases).rec;
    assert!(rec.response.equivalent(rec.response.max(), 3 * MS));
    assert!(rec.response.equivalent(rec.response.min(), 3 * MS));
    // No send lag (a lag of 0 is recorded as the histogram's lowest value, 1 ns).
    assert!(rec.send_lag.max() <= 1);
}

#[test]
fn drawn_think_times_send_a_later_completed_turns_follow_up_first() {
    // A seed under which conversation 0's second turn (request 1) thinks more than 12 ms
    // longer than conversation 1's (request 4): conversation 0's first turn completes at 3 ms,
    // conversation 1's at 13, so conversation 1's follow-up is due first.
    let think = ThinkTime::Uniform {
        lo: MS,
        hi: 30 * MS,
    };
    let seed = (0..)
        .find(|&s| think.draw(s, 0, 1) > think.draw(s, 1, 4) + 12 * MS)
        .unwrap();
    let mut sim = drawn_sim(60 * MS, 64, think, seed);
    let phases = sim.run_to_end();
    let at = |seq: u64, request: u32| {
        sim.sends
            .iter()
            .position(|s| (s.seq, s.request) == (seq, request))
            .unwrap()
    };
    assert!(at(1, 4) < at(0, 1), "{:?}", sends(&sim));
    // Exactly: each follow-up is intended at its previous turn's completion (3 ms after its
    // send) plus its own drawn think time.
    let mut follow_ups = 0;
    for (k, s) in sim.sends.iter().enumerate() {
        let Some(prev) = sim.sends[..k].iter().rev().find(|p| p.seq == s.seq) else {
            continue;
        };
        let thought = think.draw(seed, s.seq, s.request);
        assert!((MS..=30 * MS).contains(&thought));
        assert_eq!(s.intended, prev.at + 3 * MS + thought, "{s:?}");
        follow_ups += 1;
    }
    assert!(follow_ups >= 4, "{:?}", sends(&sim));
    let c = &measured(&phases).counts;
    assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
    assert_eq!(c.intended, sim.sends.len() as u64);
    let conv = conversations(&sim, &phases);
    assert_eq!(conv.turns, c.intended);
    assert_eq!(conv.started, 6, "a start every 10 ms for 60 ms");
    assert_eq!(
        conv.started,
        conv.completed + conv.cut + conv.unqueued + conv.past_end
    );
}

#[test]
fn a_failed_or_unfinished_turn_cuts_its_conversation_and_the_census_holds() {
    let mut sim = conversation_sim(25 * MS, 64, MS);
    // Conversation 1's second turn fails; conversation 0's second turn is never answered.
    sim.by_request.push((4, Answer::After(3 * MS, 500)));
    sim.by_request.push((1, Answer::Never));
    let phases = sim.run_to_end();
    assert_eq!(
        sends(&sim),
        [
            (0, 0, 0, 0),
            (0, 1, 4, 4),
            (1, 3, 10, 10),
            (1, 4, 14, 14),
            (2, 0, 20, 20),
            (2, 1, 24, 24),
        ],
        "no turn follows a failed or unanswered one"
    );
    // Conversation 0's second turn (sent at 4 ms) times out after the 2 s timeout, inside the
    // drain; the third start's (sent at 24 ms) is still unanswered when the drain ends at
    // 2,025 ms (its timeout would come at the scan of 2,030 ms).
    let c = &measured(&phases).counts;
    assert_eq!(c.intended, 6);
    assert_eq!(
        (c.completed, c.failed, c.in_flight_at_end),
        (3, 2, 1),
        "{c:?}"
    );
    assert_eq!((c.errors.status, c.errors.timeout), (1, 1));
    assert_eq!(c.intended, c.completed + c.failed + c.in_flight_at_end);
    assert_eq!(
        conversations(&sim, &phases),
        Conversations {
            started: 3,
            cut: 3,
            turns: 6,
            ..Default::default()
        }
    );
}

#[test]
fn a_full_queue_of_follow_ups_is_counted_never_intended() {
    // Room for one waiting follow-up, a think time of 15 ms, the end at 30 ms: conversation 0's
    // second turn waits (due 18); conversation 1's first turn completes at 13 with the queue
    // full, so its second turn is never intended.
    let mut sim = conversation_sim(30 * MS, 1, 15 * MS);
    let phases = sim.run_to_end();
    assert_eq!(
        sends(&sim),
        [(0, 0, 0, 0), (1, 3, 10, 10), (0, 1, 18, 18), (2, 0, 20, 20)]
    );
    let c = &measured(&phases).counts;
    assert_eq!((c.intended, c.completed), (4, 4), "{c:?}");
    // Conversation 0's third turn (due 36) and the third start's second (due 38) are past
    // the end.
    assert_eq!(
        conversations(&sim, &phases),
        Conversations {
            started: 3,
            unqueued: 1,
            past_end: 2,
            turns: 4,
            ..Default::default()
        }
    );
}

#[test]
fn a_follow_up_still_waiting_at_the_end_is_intended_and_unfinished() {
    // One slot, starts every ms for 5 ms, no drain: the schedule's earlier entries go before
    // conversation 0's second turn (due at 3), which is still waiting when the run ends.
    let mut shape = Shape::new();
    shape.duration_ns = 5 * MS;
    shape.drain_ns = 0;
    shape.follow_ups = 8;
    let mut sim = Sim::new(shape);
    let plan = Arc::new(ConversationPlan::new(&[1, 2, 1, 2]));
    sim.core
        .set_source(Box::new(ConversationSource::new(plan, false, 0)));
    sim.default_answer = Answer::After(3 * MS, 200);
    let phases = sim.run_to_end();
    assert_eq!(sends(&sim), [(0, 0, 0, 0), (1, 2, 1, 3)]);
    let c = &measured(&phases).counts;
    // Intended: the two starts sent, the waiting follow-up, the three starts never sent.
    assert_eq!(c.intended, 6);
    assert_eq!((c.completed, c.in_flight_at_end), (1, 5), "{c:?}");
    assert_eq!((c.sent_unanswered, c.queued_unsent), (1, 4));
    assert_eq!(
        conversations(&sim, &phases),
        Conversations {
            started: 2,
            cut: 2,
            turns: 2,
            ..Default::default()
        }
    );
}

#[test]
fn each_interval_holds_the_conversations_decided_in_it_and_together_the_phases() {
    // The first test's run with 5 ms intervals: a turn is booked when it is taken (at its
    // intended send here, no lag), an end when it is decided (its last turn's completion, 3 ms
    // after its send): conversation 0 sends at 0, 4, 8 and completes at 11; conversation 1 at
    // 10, 14, 18 and completes at 21; the third start at 20, 24, its end (the follow-up due at
    // 28, past the end at 25) decided at 27.
    let mut sim = conversation_sim_of(25 * MS, 64, MS, 5 * MS);
    let phases = sim.run_to_end();
    let run = conversations(&sim, &phases);
    assert_eq!(
        (run.started, run.completed, run.past_end, run.turns),
        (3, 2, 1, 8)
    );
    let c = |started, turns, completed, past_end| Conversations {
        started,
        turns,
        completed,
        past_end,
        ..Default::default()
    };
    let by_index: Vec<(u64, Conversations)> = sim
        .interval_conversations
        .iter()
        .copied()
        .filter(|(_, c)| *c != Conversations::default())
        .collect();
    assert_eq!(
        by_index,
        [
            (0, c(1, 2, 0, 0)),
            (1, c(0, 1, 0, 0)),
            (2, c(1, 2, 1, 0)),
            (3, c(0, 1, 0, 0)),
            (4, c(1, 2, 1, 0)),
            (5, c(0, 0, 0, 1)),
        ]
    );
}
