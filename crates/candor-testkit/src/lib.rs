//! Test support shared by candor's crates: a counting global allocator for the tests that prove
//! hot paths allocate nothing. A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;
//! ```
//!
//! and then reads [`total_allocations`] (every thread of the process) or
//! [`marked_allocations`] (only threads that called [`mark_this_thread`], e.g. from an
//! engine's worker start hook) at two instants in steady state.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Forwards to the system allocator and counts every allocation and reallocation.
pub struct CountingAllocator;

static TOTAL: AtomicU64 = AtomicU64::new(0);
static MARKED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and `Copy`: no lazy initialisation and no destructor, so it is safe to read from
    // inside the allocator.
    static MARK: Cell<bool> = const { Cell::new(false) };
}

#[inline]
fn count() {
    TOTAL.fetch_add(1, Ordering::SeqCst);
    if MARK.with(|m| m.get()) {
        MARKED.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches only atomics and
// a const thread-local, neither of which allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// From now on, allocations on the calling thread also count in [`marked_allocations`].
pub fn mark_this_thread() {
    MARK.with(|m| m.set(true));
}

/// Allocations on every thread since the process started (needs [`CountingAllocator`] installed).
pub fn total_allocations() -> u64 {
    TOTAL.load(Ordering::SeqCst)
}

/// Allocations on marked threads since the process started.
pub fn marked_allocations() -> u64 {
    MARKED.load(Ordering::SeqCst)
}

#[cfg(feature = "ws")]
pub mod ws_server;
