//! Multi-turn conversations in the core: the schedule gives the conversations' starts; when a
//! turn completes, the next turn of its conversation (the request source's
//! [`RequestSource::follow_up`]) is due at the completion plus the think time, and that instant
//! is its intended send, so that its send lag, response time and TTFT are timed from when the
//! conversation's user would have sent it. The think time is one constant or drawn per
//! follow-up (`candor_workload::think`), so completion order is not intended order: follow-ups
//! wait in a min-heap by intended send, allocated before the run and never pushed past its
//! capacity (so it never reallocates); due entries are taken earliest intended first across
//! the schedule and the heap, and of two follow-ups due at once the one whose turn completed
//! first goes first.
//!
//! Every conversation ends exactly one way ([`Conversations`]): all its turns completed; cut (a
//! turn failed, or was outstanding at the end: sent, or due and unsent, which the books count
//! as unfinished); unqueued (a turn completed while the heap was full: its follow-up was never
//! intended, so the census `intended = completed + failed + unfinished` is untouched); or past
//! the end (the follow-up would have been due after the schedule's end, and is not sent).
//!
//! [`RequestSource::follow_up`]: candor_workload::source::RequestSource::follow_up
//! [`Conversations`]: candor_core::results::Conversations

use super::{Core, FollowUp};
use crate::ledger::Exchange;
use std::cmp::Reverse;

impl Core {
    fn conversational(&self) -> bool {
        self.cfg.follow_ups > 0
    }

    /// The intended send of the earliest waiting follow-up (`u64::MAX`: none).
    #[inline]
    pub(super) fn follow_up_at(&self) -> u64 {
        self.follow_ups.peek().map_or(u64::MAX, |f| f.0.due)
    }

    /// The follow-up to send at `now`, when one is due before the schedule's end and no earlier
    /// schedule entry is (an entry intended at the same instant goes after it).
    #[inline]
    pub(super) fn due_follow_up(&self, now: u64) -> Option<FollowUp> {
        let f = self.follow_ups.peek()?.0;
        if f.due > now || f.due >= self.schedule_end_ns {
            return None;
        }
        let earlier_entry = self
            .schedule
            .as_ref()
            .is_some_and(|s| s.peek() < f.due && s.peek() < self.schedule_end_ns);
        (!earlier_entry).then_some(f)
    }

    /// A turn intended at `intended` was given to a slot: the first of its conversation
    /// (`first`, taken from the schedule) or a follow-up.
    #[inline]
    pub(super) fn turn_taken(&mut self, intended: u64, first: bool) {
        if self.conversational() {
            self.ledger.conversation(intended, |c| {
                c.turns += 1;
                c.started += u64::from(first);
            });
        }
    }

    /// Turn `e` was answered at `now`, completed (`ok`) or failed: its conversation goes on
    /// with its next turn, due after the think time, or ends.
    #[inline]
    pub(super) fn turn_answered(&mut self, e: &Exchange, ok: bool, now: u64) {
        if !self.conversational() {
            return;
        }
        if !ok {
            self.turn_cut(e);
            return;
        }
        let Some(request) = self.source.follow_up(e.request) else {
            self.ledger.conversation(e.intended, |c| c.completed += 1);
            return;
        };
        let think = self.cfg.think.draw(self.cfg.think_seed, e.seq, request);
        let due = now.saturating_add(think);
        if self.stopping || due >= self.schedule_end_ns {
            self.ledger.conversation(e.intended, |c| c.past_end += 1);
        } else if self.follow_ups.len() >= self.cfg.follow_ups {
            self.ledger.conversation(e.intended, |c| c.unqueued += 1);
        } else {
            self.follow_ups.push(Reverse(FollowUp {
                due,
                order: self.follow_ups_queued,
                seq: e.seq,
                request,
            }));
            self.follow_ups_queued += 1;
        }
    }

    /// Turn `e` failed, or was outstanding when the run ended: its conversation is cut.
    #[inline]
    pub(super) fn turn_cut(&mut self, e: &Exchange) {
        if self.conversational() {
            self.ledger.conversation(e.intended, |c| c.cut += 1);
        }
    }

    /// At the end: a follow-up due before the schedule's end was intended and never sent
    /// (unfinished, its conversation cut); one due later was never intended.
    pub(super) fn close_conversations(&mut self, now: u64) {
        while let Some(Reverse(f)) = self.follow_ups.pop() {
            if f.due < self.schedule_end_ns {
                self.ledger.never_sent(f.due, f.seq, Some(f.request), now);
                self.ledger.conversation(f.due, |c| c.cut += 1);
            } else {
                self.ledger.conversation(f.due, |c| c.past_end += 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    #[test]
    fn the_heap_gives_the_earliest_due_first_and_of_a_tie_the_first_completed() {
        let f = |due, order| FollowUp {
            due,
            order,
            // Larger seq and request on the earlier-completed ones: only (due, order) decide.
            seq: 10 - order,
            request: 10 - order as u32,
        };
        let mut heap = BinaryHeap::with_capacity(4);
        for x in [f(50, 0), f(10, 1), f(10, 2), f(5, 3)] {
            heap.push(Reverse(x));
        }
        let popped: Vec<(u64, u64)> = std::iter::from_fn(|| heap.pop())
            .map(|Reverse(x)| (x.due, x.order))
            .collect();
        assert_eq!(popped, [(5, 3), (10, 1), (10, 2), (50, 0)]);
    }
}
