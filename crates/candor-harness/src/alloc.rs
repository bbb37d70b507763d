//! Allocation counting: candor's one counting global allocator. It counts, per thread, what the
//! code on that thread allocates (the harness derives its per-run statistics for the measured
//! code from these), and process-wide, all threads' and marked threads' allocator calls (the
//! zero-allocation tests of the engine read these through `candor-testkit`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A [`GlobalAlloc`] that forwards to the system allocator and counts, per thread, allocations,
/// reallocations and the bytes they asked for. Install it in the benchmark's binary:
///
/// ```
/// #[global_allocator]
/// static ALLOC: candor_harness::CountingAllocator = candor_harness::CountingAllocator::new();
/// # fn main() {
/// let before = candor_harness::CountingAllocator::thread_counts();
/// let v = std::hint::black_box(vec![0u8; 100]);
/// let after = candor_harness::CountingAllocator::thread_counts();
/// assert_eq!(after.since(before).allocations, 1);
/// assert_eq!(after.since(before).bytes, 100);
/// # drop(v);
/// # }
/// ```
///
/// The harness then reports allocations per iteration beside the latency (see
/// [`RunData::allocations`](crate::RunData::allocations)). Counting costs a few thread-local
/// increments and one uncontended atomic increment per allocation; the per-thread counters are
/// per thread, so other threads (a jitter monitor, a logger, libtest's workers) never show up in
/// the benchmark thread's numbers.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

/// Allocator calls on every thread since the process started.
static TOTAL: AtomicU64 = AtomicU64::new(0);
/// Allocator calls on threads that called [`CountingAllocator::mark_this_thread`].
static MARKED: AtomicU64 = AtomicU64::new(0);

impl CountingAllocator {
    /// `const`, so that it can initialise the `static` that `#[global_allocator]` needs.
    pub const fn new() -> Self {
        CountingAllocator
    }

    /// From now on, the calling thread's allocator calls also count in
    /// [`marked_calls`](Self::marked_calls) (an engine's worker threads, marked from their start
    /// hook, read from the test's thread).
    pub fn mark_this_thread() {
        COUNTS.with(|c| c.marked.set(true));
    }

    /// Allocator calls (allocations and reallocations) on every thread since the process
    /// started (zero if this allocator is not the global allocator).
    pub fn total_calls() -> u64 {
        TOTAL.load(Ordering::SeqCst)
    }

    /// Allocator calls on marked threads since the process started.
    pub fn marked_calls() -> u64 {
        MARKED.load(Ordering::SeqCst)
    }

    /// The calling thread's counters since it started (all zero if this allocator is not the
    /// global allocator). Subtract two readings with [`AllocCounts::since`].
    #[inline]
    pub fn thread_counts() -> AllocCounts {
        COUNTS.with(|c| AllocCounts {
            allocations: c.allocations.get(),
            reallocations: c.reallocations.get(),
            bytes: c.bytes.get(),
        })
    }

    /// Whether this allocator is the process's global allocator: makes one small allocation and
    /// looks whether the calling thread's counter moved.
    pub fn is_installed() -> bool {
        let before = Self::thread_counts();
        drop(std::hint::black_box(Box::new(std::hint::black_box(0u64))));
        Self::thread_counts().allocations != before.allocations
    }
}

/// One thread's allocation counters (or the difference of two readings).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AllocCounts {
    /// `alloc` and `alloc_zeroed` calls.
    pub allocations: u64,
    /// `realloc` calls (a `Vec` or `String` growing).
    pub reallocations: u64,
    /// Bytes requested: the size of each allocation, the new size of each reallocation.
    pub bytes: u64,
}

impl AllocCounts {
    /// Calls into the allocator that may take a lock or a page fault: allocations plus
    /// reallocations. This is what "allocations per iteration" counts.
    #[inline]
    pub fn calls(&self) -> u64 {
        self.allocations + self.reallocations
    }
    /// The counts between `earlier` and `self` (both from the same thread).
    #[inline]
    pub fn since(&self, earlier: AllocCounts) -> AllocCounts {
        AllocCounts {
            allocations: self.allocations.wrapping_sub(earlier.allocations),
            reallocations: self.reallocations.wrapping_sub(earlier.reallocations),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
        }
    }
}

struct Counts {
    allocations: Cell<u64>,
    reallocations: Cell<u64>,
    bytes: Cell<u64>,
    marked: Cell<bool>,
}

thread_local! {
    // `const`-initialised and without a destructor: no lazy initialisation and no registration,
    // so reading it from inside the allocator can neither allocate nor recurse, on any thread, at
    // any point of its life.
    static COUNTS: Counts = const {
        Counts {
            allocations: Cell::new(0),
            reallocations: Cell::new(0),
            bytes: Cell::new(0),
            marked: Cell::new(false),
        }
    };
}

#[inline]
fn bump(cell: fn(&Counts) -> &Cell<u64>, bytes: usize) {
    COUNTS.with(|c| {
        let n = cell(c);
        n.set(n.get().wrapping_add(1));
        c.bytes.set(c.bytes.get().wrapping_add(bytes as u64));
        TOTAL.fetch_add(1, Ordering::SeqCst);
        if c.marked.get() {
            MARKED.fetch_add(1, Ordering::SeqCst);
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches only a const
// thread-local of `Cell`s and two atomics, none of which allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump(|c| &c.allocations, layout.size());
        unsafe { System.alloc(layout) }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump(|c| &c.allocations, layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump(|c| &c.reallocations, new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What the measured code of one run allocated on the benchmark thread, iteration by iteration
/// (from just before the benchmark's `run` to just after it returns; the harness's own pacing and
/// recording are outside that window).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AllocStats {
    /// Iterations counted.
    pub iterations: u64,
    /// Allocator calls (allocations + reallocations) over all iterations.
    pub calls: u64,
    /// Reallocations among them.
    pub reallocations: u64,
    /// Bytes requested over all iterations.
    pub bytes: u64,
    /// Most allocator calls in one iteration.
    pub max_per_iteration: u64,
    /// Iterations that made at least one allocator call.
    pub iterations_allocating: u64,
    /// The first iteration (0-based index within the run) whose calls exceeded
    /// `max_allocations_per_iteration`, and its count.
    pub first_over_limit: Option<(u64, u64)>,
}

impl AllocStats {
    /// Adds one iteration's counts; `limit` is `max_allocations_per_iteration`, if set.
    #[inline]
    pub(crate) fn record(&mut self, index: u64, c: AllocCounts, limit: Option<u64>) {
        let calls = c.calls();
        self.iterations += 1;
        self.calls += calls;
        self.reallocations += c.reallocations;
        self.bytes += c.bytes;
        if calls > 0 {
            self.iterations_allocating += 1;
            self.max_per_iteration = self.max_per_iteration.max(calls);
            if self.first_over_limit.is_none() && limit.is_some_and(|l| calls > l) {
                self.first_over_limit = Some((index, calls));
            }
        }
    }

    /// Sums runs (the first-over-limit of the earliest run that had one is kept).
    pub fn merge<'a>(all: impl IntoIterator<Item = &'a AllocStats>) -> AllocStats {
        let mut m = AllocStats::default();
        for s in all {
            m.iterations += s.iterations;
            m.calls += s.calls;
            m.reallocations += s.reallocations;
            m.bytes += s.bytes;
            m.max_per_iteration = m.max_per_iteration.max(s.max_per_iteration);
            m.iterations_allocating += s.iterations_allocating;
            if m.first_over_limit.is_none() {
                m.first_over_limit = s.first_over_limit;
            }
        }
        m
    }

    /// Mean allocator calls per iteration.
    pub fn per_iteration_mean(&self) -> f64 {
        ratio(self.calls, self.iterations)
    }
    /// Mean bytes requested per iteration.
    pub fn bytes_per_iteration_mean(&self) -> f64 {
        ratio(self.bytes, self.iterations)
    }
    /// Share (0..=1) of iterations that allocated at least once.
    pub fn allocating_share(&self) -> f64 {
        ratio(self.iterations_allocating, self.iterations)
    }

    /// The JSON object of docs/formats.md (`allocations`, and each entry of its `runs`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "counted": true,
            "iterations": self.iterations,
            "per_iteration_mean": self.per_iteration_mean(),
            "per_iteration_max": self.max_per_iteration,
            "bytes_per_iteration_mean": self.bytes_per_iteration_mean(),
            "iterations_allocating": self.allocating_share(),
            "iterations_allocating_count": self.iterations_allocating,
            "reallocations": self.reallocations,
        })
    }

    /// One line for the text report.
    pub fn text(&self) -> String {
        format!(
            "Allocations (measured code, per iteration): mean {}, max {}, bytes mean {}, {} of {} \
             iterations allocated ({:.2}%)",
            fmt_mean(self.per_iteration_mean()),
            self.max_per_iteration,
            fmt_mean(self.bytes_per_iteration_mean()),
            self.iterations_allocating,
            self.iterations,
            self.allocating_share() * 100.0
        )
    }
}

/// The first iteration of a run whose measured code made more allocator calls than
/// `max_allocations_per_iteration` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AllocationFailure {
    /// Run number, from 1.
    pub run: u32,
    /// 0-based index of the iteration within the run.
    pub iteration: u64,
    /// Allocator calls it made.
    pub allocations: u64,
    /// The limit it broke.
    pub limit: u64,
}

impl std::fmt::Display for AllocationFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {}, iteration {}: {} allocation{}, above max_allocations_per_iteration {}",
            self.run,
            self.iteration,
            self.allocations,
            if self.allocations == 1 { "" } else { "s" },
            self.limit
        )
    }
}

/// The text-report line when nothing was counted.
pub(crate) const NOT_COUNTED: &str = "Allocations: not counted (install \
     candor_harness::CountingAllocator as the #[global_allocator] to count them)";

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn fmt_mean(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The lib's unit-test binary installs the allocator (lib.rs), so these read real counts; the
    // counters are per thread, so libtest's other threads cannot disturb them.

    #[test]
    fn counts_allocations_reallocations_and_bytes_of_this_thread() {
        assert!(CountingAllocator::is_installed());
        let before = CountingAllocator::thread_counts();
        let mut v: Vec<u8> = Vec::with_capacity(10);
        v.extend_from_slice(&[1; 10]);
        v.reserve_exact(30); // grows in place or moves: one realloc either way
        let b = Box::new([0u8; 24]);
        std::hint::black_box((&v, &b));
        let d = CountingAllocator::thread_counts().since(before);
        drop((v, b));
        assert_eq!(d.allocations, 2);
        assert_eq!(d.reallocations, 1);
        assert_eq!(d.calls(), 3);
        assert_eq!(d.bytes, 10 + 40 + 24);
    }

    #[test]
    fn other_threads_do_not_count_here() {
        let before = CountingAllocator::thread_counts();
        std::thread::scope(|s| {
            s.spawn(|| {
                let here = CountingAllocator::thread_counts();
                std::hint::black_box(vec![0u64; 1000]);
                assert_eq!(
                    CountingAllocator::thread_counts().since(here).allocations,
                    1
                );
            });
        });
        // Spawning a thread allocates on this thread (its handle); the 8,000 bytes of the
        // other thread's Vec must not appear.
        let d = CountingAllocator::thread_counts().since(before);
        assert!(d.bytes < 8_000, "{d:?}");
    }

    #[test]
    fn marked_threads_count_process_wide_and_unmarked_ones_only_in_the_total() {
        let (total, marked) = (
            CountingAllocator::total_calls(),
            CountingAllocator::marked_calls(),
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                CountingAllocator::mark_this_thread();
                for _ in 0..100 {
                    std::hint::black_box(Box::new(0u64));
                }
            });
        });
        // Other tests' threads may allocate meanwhile, and may be marked: at least ours counted.
        assert!(CountingAllocator::marked_calls() - marked >= 100);
        assert!(CountingAllocator::total_calls() - total >= 100);
        let unmarked = CountingAllocator::thread_counts();
        std::hint::black_box(Box::new(0u64));
        assert_eq!(
            CountingAllocator::thread_counts()
                .since(unmarked)
                .allocations,
            1
        );
    }

    #[test]
    fn stats_sum_iterations_and_find_the_first_over_limit() {
        let mut s = AllocStats::default();
        let c = |allocations, bytes| AllocCounts {
            allocations,
            reallocations: 0,
            bytes,
        };
        s.record(0, c(0, 0), Some(1));
        s.record(1, c(1, 16), Some(1));
        s.record(2, c(3, 48), Some(1));
        s.record(3, c(5, 80), Some(1));
        assert_eq!(s.iterations, 4);
        assert_eq!(s.calls, 9);
        assert_eq!(s.bytes, 144);
        assert_eq!(s.max_per_iteration, 5);
        assert_eq!(s.iterations_allocating, 3);
        assert_eq!(s.first_over_limit, Some((2, 3)));
        assert_eq!(s.per_iteration_mean(), 2.25);
        assert_eq!(s.bytes_per_iteration_mean(), 36.0);
        assert_eq!(s.allocating_share(), 0.75);

        let mut t = AllocStats::default();
        t.record(0, c(7, 7), None);
        let m = AllocStats::merge([&s, &t]);
        assert_eq!(m.iterations, 5);
        assert_eq!(m.calls, 16);
        assert_eq!(m.max_per_iteration, 7);
        assert_eq!(m.iterations_allocating, 4);
        assert_eq!(m.first_over_limit, Some((2, 3)));
    }
}
