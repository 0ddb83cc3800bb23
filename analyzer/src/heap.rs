//! The `cltrap` process's allocator settings (never the application's: the shim does not
//! call this, and `mallopt` does not outlive an `exec`), applied when a session opens on a
//! device whose kernels run outside this process (a GPU): [`session_opened`].
//!
//! Analyses allocate and free buffers of the same large sizes launch after launch (restored
//! inputs, read-back outputs, guard zones, expected contents: hundreds of kB to MBs). With
//! glibc's defaults such a block is its own `mmap`, unmapped again at `free`, or heap that
//! `free` trims back to the kernel, so every launch paid the page faults and the kernel's
//! zeroing of its memory anew: two thirds of a `check` worker's time on a 798-launch
//! Gaussian elimination on PoCL, where the run itself is milliseconds. Serving blocks up to
//! glibc's largest mmap threshold (32 MiB) from the heap, and keeping up to 256 MiB of freed
//! heap, lets the next launch reuse pages already mapped (`tests/heap_faults_pocl.rs` counts
//! the page faults of a `check`).
//!
//! Not where a CPU device's kernels run in this process (PoCL): there a kernel's stray write
//! past a `__local` array (which has no guard zone) lands in memory the allocator placed.
//! With glibc's defaults PoCL's per-thread local memory is a mapping of its own and such a
//! write hits nothing that matters; served from the heap it can corrupt the heap, and a
//! mutant's overflow then crashed the *next* mutant run in the same worker.

/// Blocks at least this large are still mapped on their own (glibc's maximum on 64-bit).
pub const MMAP_THRESHOLD: i32 = 32 << 20;
/// Freed heap kept mapped at its top before `free` returns memory to the kernel.
pub const TRIM_THRESHOLD: i32 = 256 << 20;

/// Applies the settings above to this process; `false` when the C library refused one of
/// them (another C library, or limits changed), in which case the defaults stay: slower, not
/// wrong.
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes the allocator's parameters; both values are within
        // the ranges glibc documents.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// For tests only: when set, [`session_opened`] applies the settings on a CPU device too.
pub const TEST_KNOB: &str = "CLTRAP_TEST_KEEP_FREED_MEMORY";

static CPU_IN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static APPLIED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a session on a CPU device (whose buffers live in this process's memory) has
/// opened in this process.
pub fn cpu_in_process() -> bool {
    CPU_IN_PROCESS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Called when a session opens: applies [`keep_freed_memory`] for a device whose kernels run
/// elsewhere, unless a session on a CPU device has opened in this process. A CPU session
/// opened after the settings were applied puts glibc's initial thresholds back (128 KiB), so
/// what that device allocates from then on is mapped on its own again. Returns whether the
/// settings were applied by this call.
pub fn session_opened(runs_in_this_process: bool) -> bool {
    use std::sync::atomic::Ordering;
    if runs_in_this_process && std::env::var_os(TEST_KNOB).is_none() {
        CPU_IN_PROCESS.store(true, Ordering::SeqCst);
        if APPLIED.swap(false, Ordering::SeqCst) {
            restore_defaults();
        }
        return false;
    }
    let applied = !CPU_IN_PROCESS.load(Ordering::SeqCst) && keep_freed_memory();
    APPLIED.fetch_or(applied, Ordering::SeqCst);
    applied
}

/// glibc's initial thresholds (its dynamic adjustment of them stays off once set).
fn restore_defaults() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as in keep_freed_memory.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
    }
}
