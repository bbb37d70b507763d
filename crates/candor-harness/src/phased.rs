//! Double-buffered histograms written by one thread and collected by another without locks:
//! HdrHistogram's WriterReaderPhaser, per writer.
//!
//! The writer enters a critical section with one `fetch_add` on `start_epoch` (whose sign says
//! which of the two buffers is active), records into that buffer with plain writes, and leaves
//! with one `fetch_add` on the end counter of the same buffer: wait-free, no CAS loop, no lock.
//! The collector swaps `start_epoch` to the other buffer's initial value; the value it swapped out
//! is the number of writers that ever entered the old phase, so once the old phase's end counter
//! reaches it, no writer is (or can again be) inside the old buffer, which may then be read and
//! reset. Writers never wait for the collector; the collector waits at most for one record.

use candor_core::hist::{new_histogram, record_clamped, Histo};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Histograms recorded together: index 0 and 1 are end-to-end (from the intended start) and
/// service time (from the actual start), then one per probe, in probe order.
pub(crate) struct HistSet {
    pub hists: Vec<Histo>,
    /// Values above one hour, recorded as one hour.
    pub clamped: u64,
    /// Samples whose probe id did not belong to this harness (dropped, reported as a warning).
    pub misrouted: u64,
}

pub(crate) const E2E: usize = 0;
pub(crate) const SERVICE: usize = 1;
pub(crate) const FIRST_PROBE: usize = 2;

impl HistSet {
    pub fn new(n: usize) -> Self {
        HistSet {
            hists: (0..n).map(|_| new_histogram()).collect(),
            clamped: 0,
            misrouted: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, index: usize, value_ns: u64) {
        match self.hists.get_mut(index) {
            Some(h) => self.clamped += record_clamped(h, value_ns) as u64,
            None => self.misrouted += 1,
        }
    }

    /// Adds `other` into `self` bucket by bucket (exact). Both come from the same harness.
    pub fn add(&mut self, other: &HistSet) {
        for (into, from) in self.hists.iter_mut().zip(&other.hists) {
            // Same bounds on both sides and no auto-resize: adding cannot fail or allocate.
            let _ = into.add(from);
        }
        self.clamped += other.clamped;
        self.misrouted += other.misrouted;
    }

    pub fn reset(&mut self) {
        for h in &mut self.hists {
            h.reset();
        }
        self.clamped = 0;
        self.misrouted = 0;
    }
}

/// One writer's two buffers and the phaser guarding them.
pub(crate) struct PhasedSet {
    start_epoch: AtomicI64,
    even_end: AtomicI64,
    odd_end: AtomicI64,
    /// [even phase buffer, odd phase buffer].
    sets: [UnsafeCell<HistSet>; 2],
    /// End-to-end samples ever recorded here (all phases); written only by the single writer.
    pub e2e_count: AtomicU64,
}

// SAFETY: the buffers are only touched (a) by the single writer between `enter` and `exit` of
// the active phase, and (b) by the single collector for the inactive phase after the phaser has
// proven that no writer is inside it. See the module comment.
unsafe impl Sync for PhasedSet {}

impl PhasedSet {
    pub fn new(n: usize) -> Self {
        PhasedSet {
            start_epoch: AtomicI64::new(0),
            even_end: AtomicI64::new(0),
            odd_end: AtomicI64::new(i64::MIN),
            sets: [
                UnsafeCell::new(HistSet::new(n)),
                UnsafeCell::new(HistSet::new(n)),
            ],
            e2e_count: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the active buffer. Wait-free: two uncontended atomic increments.
    ///
    /// # Safety
    /// At most one thread may be inside `write` on the same `PhasedSet` at a time (the owning
    /// handle takes `&mut self`, and is neither `Clone` nor shared).
    #[inline]
    pub unsafe fn write<R>(&self, f: impl FnOnce(&mut HistSet) -> R) -> R {
        let entered = self.start_epoch.fetch_add(1, Ordering::SeqCst);
        let odd = entered < 0;
        // SAFETY: the collector does not touch the active buffer; we are its only writer.
        let set = unsafe { &mut *self.sets[odd as usize].get() };
        let r = f(set);
        if odd {
            self.odd_end.fetch_add(1, Ordering::Release);
        } else {
            self.even_end.fetch_add(1, Ordering::Release);
        }
        r
    }

    /// Makes the other buffer active, waits for the writer to leave the old one, adds the old
    /// one into `into` and resets it.
    ///
    /// # Safety
    /// Only one thread may collect from a given `PhasedSet` at a time.
    pub unsafe fn collect_into(&self, into: &mut HistSet) {
        let was_odd = self.start_epoch.load(Ordering::SeqCst) < 0;
        let next_initial = if was_odd { 0 } else { i64::MIN };
        let (old_end, next_end) = if was_odd {
            (&self.odd_end, &self.even_end)
        } else {
            (&self.even_end, &self.odd_end)
        };
        next_end.store(next_initial, Ordering::SeqCst);
        let entered_old = self.start_epoch.swap(next_initial, Ordering::SeqCst);
        let mut spins = 0u32;
        while old_end.load(Ordering::Acquire) != entered_old {
            // A writer inside the old buffer finishes one record; if it was descheduled there,
            // yield rather than burn the core it needs.
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        // SAFETY: every writer that entered the old phase has left it, and new writers enter the
        // new phase; we are the only collector.
        let old = unsafe { &mut *self.sets[was_odd as usize].get() };
        into.add(old);
        old.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_writer_and_collector_lose_and_duplicate_nothing() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let set = Arc::new(PhasedSet::new(3));
        const N: u64 = 200_000;
        // The writer works in batches and, after each, waits until the collector has completed
        // another pass, so the two overlap at least BATCHES times by construction (never by the
        // scheduler's luck), while inside a batch they still race freely.
        const BATCHES: u64 = 8;
        let passes = Arc::new(AtomicU64::new(0));
        let writer = {
            let set = Arc::clone(&set);
            let passes = Arc::clone(&passes);
            std::thread::spawn(move || {
                for batch in 0..BATCHES {
                    for i in (batch * N / BATCHES)..((batch + 1) * N / BATCHES) {
                        // SAFETY: this thread is the only writer.
                        unsafe { set.write(|s| s.record(E2E, 1 + i % 1000)) };
                    }
                    let seen = passes.load(Ordering::Acquire);
                    while passes.load(Ordering::Acquire) == seen {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut total = HistSet::new(3);
        while !writer.is_finished() {
            // SAFETY: this thread is the only collector.
            unsafe { set.collect_into(&mut total) };
            passes.fetch_add(1, Ordering::AcqRel);
        }
        writer.join().unwrap();
        unsafe { set.collect_into(&mut total) };
        assert!(passes.load(Ordering::Acquire) >= BATCHES);
        assert_eq!(total.hists[E2E].len(), N);
        let expected_sum: u64 = (0..N).map(|i| 1 + i % 1000).sum();
        let got_sum: u64 = total.hists[E2E]
            .iter_recorded()
            .map(|v| v.value_iterated_to() * v.count_at_value())
            .sum();
        assert_eq!(
            got_sum, expected_sum,
            "values below 1024 are exact at 3 digits"
        );
    }
}
