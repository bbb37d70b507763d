//! Test support shared by candor's crates: the counting global allocator (candor-harness's, the
//! one in the project) for the tests that prove hot paths allocate nothing. A test binary
//! installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;
//! ```
//!
//! and then reads [`total_allocations`] (every thread of the process),
//! [`marked_allocations`] (only threads that called [`mark_this_thread`], e.g. from an
//! engine's worker start hook) or [`this_thread_allocations`] (the calling thread: for work that
//! runs on the test's own thread) at two instants in steady state.

pub use candor_harness::CountingAllocator;

/// From now on, allocations on the calling thread also count in [`marked_allocations`].
pub fn mark_this_thread() {
    CountingAllocator::mark_this_thread();
}

/// Allocations (and reallocations) on every thread since the process started (needs
/// [`CountingAllocator`] installed).
pub fn total_allocations() -> u64 {
    CountingAllocator::total_calls()
}

/// Allocations (and reallocations) on the calling thread since it started. Work that runs on
/// the test's own thread is counted with this: the test harness's other threads (another test
/// finishing, its report) allocate at any time, and on a busy machine inside the window.
pub fn this_thread_allocations() -> u64 {
    CountingAllocator::thread_counts().calls()
}

/// Allocations (and reallocations) on marked threads since the process started.
pub fn marked_allocations() -> u64 {
    CountingAllocator::marked_calls()
}

#[cfg(feature = "ws")]
pub mod ws_server;
