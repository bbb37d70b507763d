//! The allocator of a load thread's Lua state: freed small blocks are kept on lists by exact
//! size and handed out again, so a script that builds strings and tables on every request
//! reuses the same few blocks (hot in the cache) instead of asking the process allocator.
//!
//! Written here because the job is narrow and no crate does it: LuaJIT gives every free its
//! block's size, so the lists need no headers and no search, and each block is a block the
//! process allocator made with exactly that size. That is what makes the swap safe at any
//! time: a block mlua's own allocator made before [`LuaHeap::install`] may be freed here, and
//! one made here may be freed by mlua's after [`LuaHeap::uninstall`]. By callgrind the process
//! allocator took ~13% of a dynamic `request()` call's instructions (docs/benchmarks.md).
//!
//! It also keeps the state's heap limit (`--script-memory`): a counter of the bytes the state
//! holds, set from mlua's own count at the swap, and an allocation that would pass the limit
//! fails (Lua raises `not enough memory` in the callback that asked).

use mlua::ffi::{self, lua_Alloc};
use mlua::Lua;
use std::alloc::Layout;
use std::os::raw::c_void;
use std::ptr;

/// Blocks up to this size are kept when freed; larger ones go back at once.
const MAX_KEPT_SIZE: usize = 512;

/// Larger blocks up to this size are kept too, a few of them ([`LARGE_KEPT`]): LuaJIT's string
/// table shrinks after each collection and grows again during the next, between two sizes.
const MAX_LARGE_KEPT_SIZE: usize = 64 * 1024;
const LARGE_KEPT: usize = 8;

/// Most bytes kept on the lists: a state whose garbage is briefly large (a big table of
/// strings) gives the excess back instead of holding it for the rest of the run.
const MAX_KEPT_BYTES: usize = 512 * 1024;

/// The alignment every block has (what Lua's allocator contract asks of malloc, and what mlua's
/// allocator uses, so that blocks from either can be freed by the other).
const ALIGN: usize = ffi::SYS_MIN_ALIGN;

/// One state's lists. Boxed and owned by the state's [`crate::ThreadScript`], which uninstalls
/// it before the state can be closed.
pub(crate) struct LuaHeap {
    /// `free[n]` is a list of free blocks of exactly `n` bytes, linked through their first word.
    free: [*mut u8; MAX_KEPT_SIZE + 1],
    /// Kept larger blocks and their sizes (a null block is an empty place).
    large: [(*mut u8, usize); LARGE_KEPT],
    kept_bytes: usize,
    /// Bytes the state holds (kept blocks excluded: they are the heap's, not the state's).
    used: usize,
    /// Most bytes the state may hold.
    limit: usize,
    /// The allocator this one replaced, put back by [`LuaHeap::uninstall`].
    previous: Option<(lua_Alloc, *mut c_void)>,
}

// SAFETY: the lists hold blocks no one else refers to, and the heap is touched only by its
// state's allocations (made under mlua's lock of that state, from whichever thread holds it)
// and by install/uninstall, which take the same lock.
unsafe impl Send for LuaHeap {}

impl LuaHeap {
    pub(crate) fn new(limit: usize) -> Box<LuaHeap> {
        Box::new(LuaHeap {
            free: [ptr::null_mut(); MAX_KEPT_SIZE + 1],
            large: [(ptr::null_mut(), 0); LARGE_KEPT],
            kept_bytes: 0,
            used: 0,
            limit,
            previous: None,
        })
    }

    /// Makes this heap the allocator of `lua` from now on. `self` must stay where it is (it is
    /// boxed) until [`LuaHeap::uninstall`].
    pub(crate) fn install(&mut self, lua: &Lua) -> mlua::Result<()> {
        // mlua's allocator made every block so far and counted them.
        self.used = lua.used_memory();
        let heap: *mut LuaHeap = self;
        // SAFETY: exec_raw gives the state on its own thread; swapping the allocator between
        // two allocations is allowed by the Lua API, and blocks stay interchangeable (above).
        unsafe {
            lua.exec_raw::<()>((), |state| {
                let mut ud = ptr::null_mut();
                let previous = ffi::lua_getallocf(state, &mut ud);
                (*heap).previous = Some((previous, ud));
                ffi::lua_setallocf(state, allocate, heap.cast());
            })
        }
    }

    /// Puts the replaced allocator back and frees the kept blocks.
    pub(crate) fn uninstall(&mut self, lua: &Lua) {
        if let Some((previous, ud)) = self.previous.take() {
            // SAFETY: as in install.
            let restored =
                unsafe { lua.exec_raw::<()>((), |state| ffi::lua_setallocf(state, previous, ud)) };
            if restored.is_err() {
                // The state is unusable; leave the lists alone rather than free blocks it may
                // still hand to this heap.
                return;
            }
            // mlua's count missed what this heap did; its limit stays set (mlua protects its
            // allocations only under a limit) but can no longer be reached by a stale count.
            let _ = lua.set_memory_limit(isize::MAX as usize);
        }
        self.free_kept();
    }

    fn free_kept(&mut self) {
        for size in 1..=MAX_KEPT_SIZE {
            while let Some(block) = self.pop(size) {
                // SAFETY: every kept block was allocated with this layout.
                unsafe { std::alloc::dealloc(block, layout(size)) };
            }
        }
        for (block, size) in &mut self.large {
            if !block.is_null() {
                // SAFETY: as above.
                unsafe { std::alloc::dealloc(*block, layout(*size)) };
                *block = ptr::null_mut();
                self.kept_bytes -= *size;
            }
        }
    }

    fn pop(&mut self, size: usize) -> Option<*mut u8> {
        if size > MAX_KEPT_SIZE {
            let place = self
                .large
                .iter_mut()
                .find(|(block, kept)| !block.is_null() && *kept == size)?;
            let block = std::mem::replace(&mut place.0, ptr::null_mut());
            self.kept_bytes -= size;
            return Some(block);
        }
        let block = self.free[size];
        if block.is_null() {
            return None;
        }
        // SAFETY: a kept block's first word is the next block of its list.
        self.free[size] = unsafe { block.cast::<*mut u8>().read() };
        self.kept_bytes -= size;
        Some(block)
    }

    /// Keeps `block` of `size` bytes for reuse, or gives it back when the lists are full.
    ///
    /// # Safety
    /// `block` was allocated with `layout(size)` and is no longer used.
    unsafe fn release(&mut self, block: *mut u8, size: usize) {
        if size >= std::mem::size_of::<*mut u8>() && self.kept_bytes + size <= MAX_KEPT_BYTES {
            if size <= MAX_KEPT_SIZE {
                block.cast::<*mut u8>().write(self.free[size]);
                self.free[size] = block;
                self.kept_bytes += size;
                return;
            }
            if size <= MAX_LARGE_KEPT_SIZE {
                if let Some(place) = self.large.iter_mut().find(|(b, _)| b.is_null()) {
                    *place = (block, size);
                    self.kept_bytes += size;
                    return;
                }
            }
        }
        std::alloc::dealloc(block, layout(size));
    }

    fn obtain(&mut self, size: usize) -> *mut u8 {
        if let Some(block) = self.pop(size) {
            return block;
        }
        // SAFETY: size is not zero (Lua frees with a zero size, it never allocates one).
        unsafe { std::alloc::alloc(layout(size)) }
    }
}

fn layout(size: usize) -> Layout {
    // SAFETY: ALIGN is a power of two and Lua's sizes are far below isize::MAX.
    unsafe { Layout::from_size_align_unchecked(size, ALIGN) }
}

/// The `lua_Alloc` of Lua's contract: free when `nsize` is 0, allocate when `block` is null,
/// resize otherwise; null when memory runs out (Lua then raises its memory error).
unsafe extern "C" fn allocate(
    ud: *mut c_void,
    block: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    let heap = &mut *ud.cast::<LuaHeap>();
    let block = block.cast::<u8>();
    if nsize == 0 {
        if !block.is_null() {
            heap.release(block, osize);
            heap.used = heap.used.saturating_sub(osize);
        }
        return ptr::null_mut();
    }
    if nsize > isize::MAX as usize - ALIGN {
        return ptr::null_mut();
    }
    let held = if block.is_null() { 0 } else { osize };
    // Only growth is refused: Lua assumes that giving memory back cannot fail.
    if nsize > held && heap.used.saturating_add(nsize - held) > heap.limit {
        return ptr::null_mut();
    }
    let result = if block.is_null() {
        heap.obtain(nsize)
    } else if osize == nsize {
        block
    } else if osize > MAX_LARGE_KEPT_SIZE && nsize > MAX_LARGE_KEPT_SIZE {
        std::alloc::realloc(block, layout(osize), nsize)
    } else {
        let moved = heap.obtain(nsize);
        if !moved.is_null() {
            ptr::copy_nonoverlapping(block, moved, osize.min(nsize));
            heap.release(block, osize);
        }
        moved
    };
    if !result.is_null() {
        // Saturating as the free path is: an underflow here would panic inside an extern "C"
        // function (debug builds), which aborts the process.
        heap.used = heap.used.saturating_sub(held).saturating_add(nsize);
    }
    result.cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_handed_out_again_for_the_same_size_only() {
        let mut heap = LuaHeap::new(usize::MAX);
        let ud: *mut c_void = (&mut *heap as *mut LuaHeap).cast();
        unsafe {
            let a = allocate(ud, ptr::null_mut(), 0, 40);
            a.cast::<u8>().write_bytes(7, 40);
            allocate(ud, a, 40, 0);
            assert_eq!(heap.kept_bytes, 40);
            let other = allocate(ud, ptr::null_mut(), 0, 48);
            assert_ne!(other, a, "a 40-byte block is never handed out for 48 bytes");
            let again = allocate(ud, ptr::null_mut(), 0, 40);
            assert_eq!(again, a);
            assert_eq!(heap.kept_bytes, 0);
            again.cast::<u8>().write_bytes(7, 40);
            // Growing keeps the bytes, past the kept sizes too; resizing to the same size is
            // the same block.
            let mut block = again;
            let mut size = 40;
            for grown in [600, 100_000, 300_000] {
                block = allocate(ud, block, size, grown);
                size = grown;
                assert!(std::slice::from_raw_parts(block.cast::<u8>(), 40)
                    .iter()
                    .all(|&b| b == 7));
            }
            assert_eq!(allocate(ud, block, size, size), block);
            allocate(ud, block, size, 0);
            // The blocks moved from are kept; one beyond the kept sizes is given back.
            assert_eq!(heap.kept_bytes, 40 + 600);
            let large = allocate(ud, ptr::null_mut(), 0, 4096);
            allocate(ud, large, 4096, 0);
            assert_eq!(allocate(ud, ptr::null_mut(), 0, 4096), large);
            allocate(ud, large, 4096, 0);
            allocate(ud, other, 48, 0);
        }
        assert_eq!(heap.kept_bytes, 40 + 600 + 4096 + 48);
        heap.free_kept();
    }

    #[test]
    fn the_lists_hold_at_most_their_cap() {
        let mut heap = LuaHeap::new(usize::MAX);
        let ud: *mut c_void = (&mut *heap as *mut LuaHeap).cast();
        let blocks: Vec<_> = (0..(MAX_KEPT_BYTES / 256 + 10))
            .map(|_| unsafe { allocate(ud, ptr::null_mut(), 0, 256) })
            .collect();
        for b in blocks {
            unsafe { allocate(ud, b, 256, 0) };
        }
        assert_eq!(heap.kept_bytes, MAX_KEPT_BYTES);
        heap.free_kept();
    }

    #[test]
    fn growth_past_the_limit_fails_and_shrinking_never_does() {
        let mut heap = LuaHeap::new(100_000);
        let ud: *mut c_void = (&mut *heap as *mut LuaHeap).cast();
        unsafe {
            let a = allocate(ud, ptr::null_mut(), 0, 60_000);
            assert!(!a.is_null());
            assert_eq!(heap.used, 60_000);
            // A second block that would bring the state past its limit is refused, and so is
            // growing the first one past it; the counter is unchanged by a refusal.
            assert!(allocate(ud, ptr::null_mut(), 0, 50_000).is_null());
            assert!(allocate(ud, a, 60_000, 100_001).is_null());
            assert_eq!(heap.used, 60_000);
            let b = allocate(ud, a, 60_000, 100_000);
            assert!(!b.is_null());
            assert_eq!(heap.used, 100_000);
            let c = allocate(ud, b, 100_000, 1_000);
            assert!(!c.is_null());
            assert_eq!(heap.used, 1_000);
            allocate(ud, c, 1_000, 0);
            assert_eq!(heap.used, 0);
        }
        heap.free_kept();
    }

    #[test]
    fn a_resize_of_more_than_the_count_holds_does_not_underflow_it() {
        let mut heap = LuaHeap::new(usize::MAX);
        let ud: *mut c_void = (&mut *heap as *mut LuaHeap).cast();
        unsafe {
            let a = allocate(ud, ptr::null_mut(), 0, 1_000);
            assert!(!a.is_null());
            // A count below what a block holds (a state whose count was taken when the block
            // was smaller): shrinking the block must not wrap the count below zero.
            heap.used = 10;
            let b = allocate(ud, a, 1_000, 500);
            assert!(!b.is_null());
            assert_eq!(heap.used, 500);
            allocate(ud, b, 500, 0);
            assert_eq!(heap.used, 0);
        }
        heap.free_kept();
    }
}
