//! A counting global allocator with a per-input budget: the "no allocation
//! past a stated bound" check of every fuzz target.
//!
//! libFuzzer's own `-malloc_limit_mb` needs a sanitizer runtime; the targets
//! run without one (see `xtask/src/fuzz.rs`), so the bound is enforced
//! here, on Rust allocations only: [`bounded`] lets the harness run a
//! decoder with at most `budget` bytes live beyond what was live before it
//! started (one huge allocation and a pile of small ones alike); going past
//! it prints the sizes and aborts, which libFuzzer records as a crash with
//! its input. C allocations (tree-sitter's) are not seen here; libFuzzer's
//! `-rss_limit_mb` covers them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes live (Rust heap) now.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Abort when `LIVE` would pass this (`usize::MAX`: no limit).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Highest `LIVE` seen since the last [`bounded`] started.
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn charge(bytes: usize) {
    let live = LIVE
        .fetch_add(bytes, Ordering::Relaxed)
        .saturating_add(bytes);
    PEAK.fetch_max(live, Ordering::Relaxed);
    let limit = LIMIT.load(Ordering::Relaxed);
    if live > limit {
        // No more limit while reporting (printing must not recurse here).
        LIMIT.store(usize::MAX, Ordering::Relaxed);
        eprintln!(
            "codegloss-fuzz: allocation budget exceeded: {live} bytes live, limit {limit} (asked for {bytes} more)\n{}",
            std::backtrace::Backtrace::force_capture()
        );
        std::process::abort();
    }
}

fn release(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters are plain atomics and never touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        // SAFETY: forwarded as given.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        release(layout.size());
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            charge(new_size - layout.size());
        } else {
            release(layout.size() - new_size);
        }
        // SAFETY: forwarded as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Run `f` with at most `budget` bytes of Rust heap live beyond what is live
/// now; past it the process aborts with a message. Returns `f`'s value and
/// the peak extra bytes it had live.
pub fn bounded<T>(budget: usize, f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    LIMIT.store(base.saturating_add(budget), Ordering::Relaxed);
    let out = f();
    LIMIT.store(usize::MAX, Ordering::Relaxed);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    (out, peak)
}
