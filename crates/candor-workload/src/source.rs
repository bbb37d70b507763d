//! What to send next: the one seam a load thread's core asks, for every schedule entry, which
//! request it sends and (for sources that make their bytes) to put those bytes in the buffer of
//! the slot that carries it.
//!
//! Sources today: the prepared requests (one static request, or a request set in round robin or
//! uniform random order: [`PreparedSource`]), and the workload's maker (weighted choice,
//! templates filled from data, a replayed trace's records: [`super::runtime::RequestMaker`]).
//! Both choose with the one chooser, [`Picker::choose`], a pure function of the seed and `seq`,
//! so every thread, shard and target's worker agrees on the request of an entry.
//!
//! A script source (wrk's Lua `request()`) plugs in here as one more implementation: before the
//! run it gets a buffer per slot sized for its longest request; in [`RequestSource::next`] it
//! runs the script for entry `seq`, writes the encoded request into slot `slot`'s buffer (or
//! several pipelined requests back to back, as wrk's `pipeline` does; the slot then carries them
//! as one write) and answers with the index of a name it registered before the run (rows of the
//! per-request breakdown, `by_request`, are kept per index, allocated before the run), and
//! [`RequestSource::made`] hands the driver those bytes. A script that cannot make a request
//! answers `sendable: false`: the entry fails in class `template` before a byte is written, or,
//! when a stop of the run kept it from being made ([`RequestSource::unmade_by_stop`]), ends
//! unfinished, never sent. Like
//! every source it must not allocate per request (`tests/no_alloc.rs`).

use super::pick::Picker;

/// What a source decided for one schedule entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Next {
    /// The request's index: its prepared bytes when the source made none, its name in the
    /// per-request books, its accepted statuses and checks.
    pub request: u32,
    /// False when the source could not make the request (a filled value that cannot stand
    /// where it goes): it is booked and fails before anything is written.
    pub sendable: bool,
}

/// What to send next, as the core asks it. Implementations allocate nothing per request.
pub trait RequestSource: Send {
    /// The request of the schedule entry `seq`, carried by slot `slot`. `taken` is the request
    /// the schedule itself holds for the entry (a replayed trace's record, encoded, and whether
    /// it is a HEAD request); a source that makes bytes puts them in the slot's buffer.
    fn next(&mut self, slot: usize, seq: u64, taken: Option<(&[u8], bool)>) -> Next;

    /// The bytes slot `slot` carries and whether its request is a HEAD request, when this
    /// source made them (`None`: the driver sends prepared request `Next::request`).
    fn made(&self, slot: usize) -> Option<(&[u8], bool)>;

    /// The driver offers `offered_ns` ns before the schedule's next entry is sent by a slot
    /// free for it (nothing is due within them, and spending them neither delays a send nor
    /// turns the thread's sleep into a spin): a source may make requests ahead now, within
    /// that time, so that the send at its instant is a copy. `due(n)` says whether the entry `n` past the next one
    /// is due within the horizon of making ahead (`due(0)` is always true: the next is due): a
    /// source that holds `n` requests made ahead asks it before making one more. True when it
    /// did something (the caller looks at the clock again and offers again).
    fn prepare(&mut self, _offered_ns: u64, _due: &mut dyn FnMut(usize) -> bool) -> bool {
        false
    }

    /// After a [`Next`] with `sendable: false`: true when the request was not made because the
    /// run is stopping (a script's `request()` ended by `os.exit`, the run's end or a signal),
    /// not because it could not be: the entry is then unfinished, never sent, rather than
    /// failed in class `template`.
    fn unmade_by_stop(&self) -> bool {
        false
    }

    /// True once the source itself ended the run (a script's error or `thread:stop()`): the
    /// core then stops as on an abort, taking no more entries from it, not even in the pass of
    /// sends that saw it end (where the run's end that it asked for is not yet seen).
    fn halted(&self) -> bool {
        false
    }

    /// Closed loop: how long (ns) a slot that has just come free waits before its next request
    /// (a script's `delay()`, wrk's think time between a response and the next request). Asked
    /// once per freed slot; 0 for sources that have no such wait.
    fn hold_ns(&mut self) -> u64 {
        0
    }

    /// Multi-turn conversations: the request of the turn that follows request `request` in its
    /// conversation (sent when `request` completes, see [`crate::conversation`]); `None` for a
    /// last turn and for sources without conversations.
    fn follow_up(&self, _request: u32) -> Option<u32> {
        None
    }
}

/// The prepared requests, encoded once before the run, chosen by `seq`: no bytes are made.
#[derive(Debug, Clone)]
pub struct PreparedSource {
    picker: Picker,
    seed: u64,
}

impl PreparedSource {
    /// A choice among the requests `picker` ranges over, seeded by `seed` (`--seed`).
    pub fn new(picker: Picker, seed: u64) -> PreparedSource {
        PreparedSource { picker, seed }
    }
}

impl RequestSource for PreparedSource {
    #[inline]
    fn next(&mut self, _slot: usize, seq: u64, _taken: Option<(&[u8], bool)>) -> Next {
        Next {
            request: self.picker.choose(self.seed, seq),
            sendable: true,
        }
    }

    #[inline]
    fn made(&self, _slot: usize) -> Option<(&[u8], bool)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_requests_are_chosen_by_seq_alone() {
        let mut one = PreparedSource::new(Picker::RoundRobin { n: 1 }, 0);
        assert!((0..5).all(|seq| one.next(0, seq, None).request == 0));
        assert_eq!(one.made(0), None);
        let mut rr = PreparedSource::new(Picker::RoundRobin { n: 3 }, 0);
        let picks: Vec<u32> = (0..6).map(|seq| rr.next(0, seq, None).request).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        // Uniform: the same seq gives the same request whichever slot or thread asks, and
        // every request comes up.
        let (mut a, mut b) = (
            PreparedSource::new(Picker::Uniform { n: 3 }, 7),
            PreparedSource::new(Picker::Uniform { n: 3 }, 7),
        );
        let xs: Vec<u32> = (0..300).map(|seq| a.next(0, seq, None).request).collect();
        let ys: Vec<u32> = (0..300).map(|seq| b.next(5, seq, None).request).collect();
        assert_eq!(xs, ys);
        assert!((0..3).all(|r| xs.contains(&r)));
        let mut other_seed = PreparedSource::new(Picker::Uniform { n: 3 }, 8);
        let zs: Vec<u32> = (0..300)
            .map(|seq| other_seed.next(0, seq, None).request)
            .collect();
        assert_ne!(xs, zs, "the seed decides the draws");
    }
}
