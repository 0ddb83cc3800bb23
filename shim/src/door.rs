//! Which door records a call: the one rule that makes every API call recorded exactly once.
//!
//! * The layer door records, unless an exported symbol further up *this thread's* stack is
//!   already recording the same call (then the call reached the loader through our own export,
//!   and the loader handed it to our layer: recording it again would double it).
//! * The export door records only while no layer of ours serves the loader the exports forward
//!   to. Once such a layer is initialised, exports are a plain jump to the next definition and
//!   the layer records.
//!
//! Both rules only ever lose a call to the *other* door, never to nobody: when unsure, the export
//! records, and the thread-local scope keeps the layer from recording it a second time.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

const UNDECIDED: u8 = 0;
const PASS: u8 = 1;
const RECORD: u8 = 2;

/// Cached decision for the export door; reset to `UNDECIDED` when a layer comes up.
static EXPORT_MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
/// Load address of the loader that initialised our layer (0 = no layer).
static LAYER_LOADER: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static EXPORT_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether an exported entry point must record (true) or only forward (false).
///
/// The fast path is one relaxed load: this is all that `CLTRAP_CAPTURE=off` costs per call.
#[inline]
pub fn exports_record() -> bool {
    match EXPORT_MODE.load(Ordering::Relaxed) {
        PASS => false,
        RECORD => true,
        _ => decide(),
    }
}

#[cold]
fn decide() -> bool {
    let record = crate::state::capture_on() && {
        let layer = LAYER_LOADER.load(Ordering::Acquire);
        layer == 0 || layer != crate::preload::loader_base()
    };
    EXPORT_MODE.store(if record { RECORD } else { PASS }, Ordering::Relaxed);
    record
}

/// Called by `clInitLayer`: from now on the layer serving `loader_base` records.
pub fn layer_initialised(loader_base: usize) {
    LAYER_LOADER.store(loader_base, Ordering::Release);
    EXPORT_MODE.store(UNDECIDED, Ordering::Relaxed);
}

/// Marks "an export on this thread is recording" for as long as it lives.
pub struct ExportScope(());

impl ExportScope {
    /// Enters the scope (nests).
    pub fn enter() -> ExportScope {
        let _ = EXPORT_DEPTH.try_with(|d| d.set(d.get() + 1));
        ExportScope(())
    }
}

impl Drop for ExportScope {
    fn drop(&mut self) {
        let _ = EXPORT_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Whether the layer must stay out of this call because an export up the stack records it.
#[inline]
pub fn export_recording_here() -> bool {
    EXPORT_DEPTH.try_with(|d| d.get() > 0).unwrap_or(true)
}

/// Runs `f`, turning a panic into `None`, so no panic ever crosses the C boundary.
///
/// Used around everything the shim does *besides* forwarding the app's call: the forward itself
/// happens outside, exactly once, whatever the recording code does.
pub fn quietly<R>(f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(_) => {
            crate::say::report_once("internal error while recording; this call was not recorded");
            None
        }
    }
}
