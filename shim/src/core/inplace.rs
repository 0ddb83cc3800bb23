//! Digests computed in place on devices that compute in host memory (a CPU device such as
//! PoCL's): instead of reading a buffer back, the capture enqueues a *native kernel*
//! (`clEnqueueNativeKernel`) in the application's queue, which the device runs on the host
//! with the buffer's own memory; it hashes the bytes where they are (blake3, on the capture's
//! hashing threads: [`cltrap_capture::writer::digest`], the digest the writer would have
//! computed from a read) and leaves the digest in the side's [`DigestSlot`].
//!
//! Why: on such a device a read back is a copy of the whole buffer in the application's queue
//! (PoCL copies on one thread), which every later command of the queue waits for, and the
//! writer then hashes the copy, even of contents the capture holds already. A wavefront that changes one anti-diagonal of a 4 MB matrix per
//! launch paid a 4 MB copy per launch. Hashing in place copies only new contents a launch
//! stores and spreads the hashing over several cores while the queue waits for it.
//!
//! A side the launch does not store (`hash` mode, and the derived launches of `full`) records
//! only the digest; a side it stores is copied too, by the same native kernel and threads, when
//! the capture does not hold a content with that digest yet (unchanged contents are never
//! copied, as on a GPU they are never read back). Under `--device-digest auto`
//! for buffers of [`super::digest::AUTO_MIN_BYTES`] or more, under `host` for every buffer
//! (`off` reads back, `on` runs the `dd128` kernel of [`super::digest`] on every device); on
//! CPU devices that say they run native kernels, alone in their context ([`usable`]); never
//! for sub-buffers and the buffers they are cut from ([`alone`]). A device that refuses the
//! native kernel is read back from then on ([`refuse`]).
//!
//! Must not: block the driver's thread on anything but hashing and copying (the capture's
//! hashing threads never wait for a driver; the locks it takes are held for map lookups only),
//! or let a panic reach it.
//!
//! Invariants:
//! * The callback holds a reference of its own to the slot (given at the enqueue, taken back
//!   by the callback), so the slot outlives it whatever happens to the launch; a native kernel
//!   the driver never runs (a failed launch before it) keeps one slot alive for good.
//! * The landing takes a slot only after the launch's final event completed, which follows the
//!   native kernel in queue order (or by its wait list); an empty slot then is a side whose
//!   digest was not computed, recorded as missing. Host memory for a copy is reserved against
//!   the in-flight cap like a read's ([`super::inqueue`]).

use super::room::{DigestSlot, InPlaced};
use super::track::lock;
use crate::Next;
use libc::c_void;
use opencl_sys::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

/// Per (context, device): whether buffers there can be digested in place (asked once; a
/// refused enqueue turns it off).
static USABLE: once_cell::sync::Lazy<Mutex<HashMap<(usize, usize), bool>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Memory objects that are, or have, a sub-buffer or an image made from them: read back,
/// never digested in place. Why: PoCL (since 4.0) gives a native kernel a buffer that has
/// sub-buffers as the pieces its sub-buffers cut it into, one address per piece written into
/// an array sized for the one buffer it was given, and PoCL 3.1 gives a sub-buffer its
/// parent's address (its digest came out of the parent's first bytes).
static RELATED: once_cell::sync::Lazy<Mutex<HashSet<usize>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Copies of new contents made in place and not landed yet, by digest: a later launch that
/// leaves the same content before the first one's record is written shares the copy instead
/// of making another (launches enqueued back to back all run before the writer stores any).
static PENDING: once_cell::sync::Lazy<Mutex<HashMap<cltrap_capture::Hash, Weak<Vec<u8>>>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Copies [`PENDING`] may name before the ones already landed are dropped from it.
const PENDING_PRUNE: usize = 256;

/// A copy of the new content `bytes` whose digest is `hash`: one a launch in flight made
/// already, else a fresh one.
fn copy_pending(hash: &cltrap_capture::Hash, bytes: &[u8]) -> Arc<Vec<u8>> {
    if let Some(v) = lock(&PENDING).get(hash).and_then(Weak::upgrade) {
        return v;
    }
    super::stats::add(&super::stats::COPIED_IN_PLACE, 1);
    let v = Arc::new(copy_of(bytes));
    let mut p = lock(&PENDING);
    if p.len() >= PENDING_PRUNE {
        p.retain(|_, w| w.strong_count() > 0);
    }
    p.insert(hash.clone(), Arc::downgrade(&v));
    v
}

/// Whether the queue's device in its context can have buffers digested in place: a CPU
/// device that runs native kernels, the only device of its context (a native kernel counts
/// as a writer of its buffers, and a context of several devices would then move them between
/// devices where the application's own commands did not), behind a door that forwards
/// `clEnqueueNativeKernel`. Asked on the application's thread, which also starts the
/// capture's hashing threads here when it is yes (they inherit the CPU affinity of the thread
/// that starts them, and a driver's thread may be pinned to one core).
pub(super) fn usable(next: &Next, context: usize, device: usize) -> bool {
    if context == 0 || device == 0 || next.clEnqueueNativeKernel.is_none() {
        return false;
    }
    if let Some(known) = lock(&USABLE).get(&(context, device)) {
        return *known;
    }
    let (Some(dev_info), Some(ctx_info)) = (next.clGetDeviceInfo, next.clGetContextInfo) else {
        return false;
    };
    let dev = device as cl_device_id;
    // SAFETY: standard info queries on the application's live device and context.
    let exec = super::info::value::<cl_device_exec_capabilities>(|s, p, r| unsafe {
        dev_info(dev, CL_DEVICE_EXECUTION_CAPABILITIES, s, p, r)
    });
    // SAFETY: as above.
    let devices = super::info::value::<cl_uint>(|s, p, r| unsafe {
        ctx_info(context as cl_context, CL_CONTEXT_NUM_DEVICES, s, p, r)
    });
    let yes = super::device::is_cpu(next, device) == Some(true)
        && exec.is_some_and(|e| e & CL_EXEC_NATIVE_KERNEL != 0)
        && devices == Some(1);
    if yes {
        cltrap_capture::parallel::start_pool();
    }
    lock(&USABLE).insert((context, device), yes);
    yes
}

/// A native kernel could not be enqueued there: its buffers are read back from now on.
pub(super) fn refuse(context: usize, device: usize) {
    lock(&USABLE).insert((context, device), false);
}

/// The application released `context`: its answers go (the handle may name another one).
pub(super) fn retire(context: usize) {
    lock(&USABLE).retain(|(c, _), _| *c != context);
}

/// A memory object `mem` was made from `parent` (a sub-buffer, an image from a buffer):
/// neither is digested in place.
pub(super) fn related(mem: usize, parent: usize) {
    let mut r = lock(&RELATED);
    r.insert(mem);
    r.insert(parent);
}

/// The application released `mem` for good.
pub(super) fn forget(mem: usize) {
    lock(&RELATED).remove(&mem);
}

/// Whether `mem` may be digested in place (not a sub-buffer, nor the parent of one).
pub(super) fn alone(mem: usize) -> bool {
    !lock(&RELATED).contains(&mem)
}

/// What the native kernel is given: the runtime copies it and puts the buffer's host address
/// where `mem` is.
#[repr(C)]
struct Args {
    mem: cl_mem,
    len: usize,
    /// Copy the bytes when the capture does not hold them yet.
    copy_new: bool,
    slot: *const Mutex<Option<InPlaced>>,
}

/// Enqueues the digest of the `bytes` bytes of buffer `mem` into the slot of `to` (and, where
/// its flag says so, a copy of new bytes), after `wait`; returns its event when
/// `want_event`, or the enqueue's error.
pub(super) fn enqueue(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    bytes: usize,
    to: (&DigestSlot, bool),
    wait: &[cl_event],
    want_event: bool,
) -> Result<cl_event, cl_int> {
    let Some(f) = next.clEnqueueNativeKernel else {
        return Err(CL_INVALID_OPERATION);
    };
    let (slot, copy_new) = to;
    let given = Arc::into_raw(slot.clone());
    let mut args = Args {
        mem,
        len: bytes,
        copy_new,
        slot: given,
    };
    let mems = [mem];
    let mut locs = [std::ptr::addr_of_mut!(args.mem)
        .cast::<c_void>()
        .cast_const()];
    let args_ptr = std::ptr::addr_of_mut!(args).cast::<c_void>();
    // SAFETY: the application's queue and buffer; `args` (copied by the runtime before the
    // call returns) holds `mem` at the one location named; the callback never unwinds.
    let r = super::contents::enqueued(wait, want_event, |n, list, ev| unsafe {
        f(
            queue,
            Some(digest_here),
            args_ptr,
            std::mem::size_of::<Args>(),
            1,
            mems.as_ptr(),
            locs.as_mut_ptr(),
            n,
            list,
            ev,
        )
    });
    match r {
        Ok(ev) => {
            super::stats::add(&super::stats::DIGESTS_IN_PLACE, 1);
            super::stats::add(&super::stats::DIGESTED_IN_PLACE_BYTES, bytes as u64);
            Ok(ev)
        }
        Err(e) => {
            // SAFETY: not enqueued: the callback will never take the reference given to it.
            drop(unsafe { Arc::from_raw(given) });
            Err(e)
        }
    }
}

/// A copy of `bytes` made by the capture's hashing threads, a piece each (fresh memory
/// faults in on several cores, not one).
fn copy_of(bytes: &[u8]) -> Vec<u8> {
    use cltrap_capture::parallel::PARALLEL_MIN;
    let n = bytes.len();
    let mut v = super::room::spare::take(n).unwrap_or_else(|| Vec::with_capacity(n));
    // SAFETY: `v` has room for `n` bytes, written here only.
    unsafe {
        super::room::copy_in_pieces(
            bytes.as_ptr(),
            v.as_mut_ptr(),
            n,
            256 << 10,
            n >= PARALLEL_MIN,
        )
    };
    // SAFETY: all `n` bytes were written above.
    unsafe { v.set_len(n) };
    v
}

/// The native kernel: hashes the buffer where it is and fills the slot (with a copy of the
/// bytes when asked and the capture does not hold them yet).
unsafe extern "C" fn digest_here(args: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        let _span = super::stats::span(super::stats::Phase::InPlace);
        if args.is_null() {
            return;
        }
        // SAFETY: the runtime's copy of our `Args` (it may be unaligned for the struct).
        let a = unsafe { std::ptr::read_unaligned(args.cast::<Args>()) };
        // SAFETY: the reference given at the enqueue, taken back once, here.
        let slot = unsafe { Arc::from_raw(a.slot) };
        if a.mem.is_null() {
            return;
        }
        // SAFETY: the runtime put the address of the buffer's `len` bytes in host memory
        // where the handle was; the queue runs nothing else on it until this returns.
        let bytes = unsafe { std::slice::from_raw_parts(a.mem.cast::<u8>().cast_const(), a.len) };
        let hash = cltrap_capture::writer::digest(bytes);
        let held = || crate::sink::existing_writer().is_some_and(|w| w.blobs.is_known(&hash));
        let bytes = (a.copy_new && !held()).then(|| copy_pending(&hash, bytes));
        *lock(&slot) = Some(InPlaced { hash, bytes });
    });
}
