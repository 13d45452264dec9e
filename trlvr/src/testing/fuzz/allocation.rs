//! The allocator that fuzzing test binaries install: it measures each input's largest
//! allocation and refuses one large enough to take the machine down.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The largest allocation made on this thread since the last [`reset_largest`].
pub(super) fn largest() -> usize {
    LARGEST.with(Cell::get)
}

pub(super) fn reset_largest() {
    LARGEST.with(|l| l.set(0));
}

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, measuring each thread's largest allocation and refusing any
/// above 1 GiB (the process then aborts, the input saved, instead of swapping the machine
/// to a halt). Install it in a test binary that fuzzes:
///
/// ```ignore
/// #[global_allocator]
/// static GUARD: trlvr::testing::fuzz::AllocationGuard = trlvr::testing::fuzz::AllocationGuard;
/// ```
#[derive(Debug)]
pub struct AllocationGuard;

const REFUSED_ABOVE: usize = 1 << 30;

/// Set by a refused allocation; the watchdog of a running [`fuzz`](super::fuzz) then saves
/// the input.
pub(super) static REFUSED: AtomicBool = AtomicBool::new(false);
/// Set by the watchdog once the input is saved.
pub(super) static SAVED: AtomicBool = AtomicBool::new(false);

impl AllocationGuard {
    fn admit(size: usize) -> bool {
        if size > REFUSED_ABOVE {
            use std::io::Write;
            // No allocation here: a fixed message, written unbuffered, then a short wait
            // for the watchdog to save the input before the process aborts.
            let _ = std::io::stderr().write_all(b"\nfuzz: an allocation above 1 GiB was refused; aborting\n");
            REFUSED.store(true, Ordering::SeqCst);
            for _ in 0..40 {
                if SAVED.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            return false;
        }
        // `try_with`: thread-local storage may already be gone while a thread exits.
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        true
    }
}

// SAFETY: every call is forwarded to `System` unchanged, or refused with a null pointer,
// which `GlobalAlloc` allows.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for AllocationGuard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Self::admit(layout.size()) { unsafe { System.alloc(layout) } } else { std::ptr::null_mut() }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Self::admit(layout.size()) { unsafe { System.alloc_zeroed(layout) } } else { std::ptr::null_mut() }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if Self::admit(new_size) {
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            std::ptr::null_mut()
        }
    }
}
