//! Digests computed in place on devices that compute in host memory (a CPU device such as
//! PoCL's): instead of reading a buffer back, the capture enqueues a *native kernel*
//! (`clEnqueueNativeKernel`) in the application's queue, which the device runs on the host
//! with the buffer's own memory; it hashes the bytes where they are (blake3, on the capture's
//! hashing threads: [`cltrap_capture::writer::digest`], the digest the writer would have
//! computed from a read) and leaves the digest in the side's [`DigestSlot`].
//!
//! Why: on such a device a read back is a copy of the whole buffer in the application's queue
//! (PoCL copies on one thread), which every later command of the queue waits for, and the
//! writer then hashes the copy. A wavefront that changes one anti-diagonal of a 4 MB matrix per
//! launch paid a 4 MB copy per launch. Hashing in place makes no copy and spreads the hashing
//! over several cores while the queue waits for it.
//!
//! Used only for sides whose bytes the launch does not store (`hash` mode, and the derived
//! launches of `full`): a digest is all such a side records. Only under `--device-digest auto`
//! (`off` reads back, `on` runs the `dd128` kernel of [`super::digest`] on every device), for
//! buffers of [`super::digest::AUTO_MIN_BYTES`] or more, on CPU devices that say they run
//! native kernels.
//!
//! Must not: block the driver's thread on anything but hashing, or let a panic reach it.
//!
//! Invariants:
//! * The callback holds a reference of its own to the slot (given at the enqueue, taken back
//!   by the callback), so the slot outlives it whatever happens to the launch; a native kernel
//!   the driver never runs (a failed launch before it) keeps one slot alive for good.
//! * The landing reads a slot only after the launch's final event completed, which follows the
//!   native kernel in queue order (or by its wait list); an empty slot then is a side whose
//!   digest was not computed, recorded as missing.

use super::room::DigestSlot;
use super::track::lock;
use crate::Next;
use libc::c_void;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Per device: whether it computes in host memory and runs native kernels (asked once).
static USABLE: once_cell::sync::Lazy<Mutex<HashMap<usize, bool>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Whether `device` can have its buffers digested in place: a CPU device that runs native
/// kernels, behind a door that forwards `clEnqueueNativeKernel`.
pub(super) fn usable(next: &Next, device: usize) -> bool {
    if device == 0 || next.clEnqueueNativeKernel.is_none() {
        return false;
    }
    if let Some(known) = lock(&USABLE).get(&device) {
        return *known;
    }
    let Some(f) = next.clGetDeviceInfo else {
        return false;
    };
    let dev = device as cl_device_id;
    // SAFETY: standard info queries on the application's live device.
    let kind =
        super::info::value::<cl_device_type>(|s, p, r| unsafe { f(dev, CL_DEVICE_TYPE, s, p, r) });
    // SAFETY: as above.
    let exec = super::info::value::<cl_device_exec_capabilities>(|s, p, r| unsafe {
        f(dev, CL_DEVICE_EXECUTION_CAPABILITIES, s, p, r)
    });
    let yes = kind.is_some_and(|k| k & CL_DEVICE_TYPE_CPU != 0)
        && exec.is_some_and(|e| e & CL_EXEC_NATIVE_KERNEL != 0);
    lock(&USABLE).insert(device, yes);
    yes
}

/// What the native kernel is given: the runtime copies it and puts the buffer's host address
/// where `mem` is.
#[repr(C)]
struct Args {
    mem: cl_mem,
    /// Where the bytes start in `mem` (a sub-buffer's origin in its parent).
    offset: usize,
    len: usize,
    slot: *const std::sync::OnceLock<cltrap_capture::Hash>,
}

/// Enqueues the digest of the `bytes` bytes of buffer `mem` into `slot`, after `wait`;
/// returns its event when `want_event`, or the enqueue's error.
pub(super) fn enqueue(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    bytes: usize,
    slot: &DigestSlot,
    wait: &[cl_event],
    want_event: bool,
) -> Result<cl_event, cl_int> {
    let Some(f) = next.clEnqueueNativeKernel else {
        return Err(CL_INVALID_OPERATION);
    };
    let (target, offset) = parent_of(next, mem);
    let given = Arc::into_raw(slot.clone());
    let mut args = Args {
        mem: target,
        offset,
        len: bytes,
        slot: given,
    };
    let mems = [target];
    let mut locs = [std::ptr::addr_of!(args.mem).cast::<c_void>()];
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

/// The buffer a native kernel is given for `mem`, and where `mem`'s bytes start in it: a
/// sub-buffer's parent and origin. Why not the sub-buffer itself: PoCL 3.1 hands a native
/// kernel its parent's address for a sub-buffer (its digest came out of the parent's first
/// bytes); the parent's address plus the origin is right whichever address a driver gives.
fn parent_of(next: &Next, mem: cl_mem) -> (cl_mem, usize) {
    let Some(f) = next.clGetMemObjectInfo else {
        return (mem, 0);
    };
    // SAFETY: standard info queries on the application's live buffer.
    let parent = super::info::value::<cl_mem>(|s, p, r| unsafe {
        f(mem, CL_MEM_ASSOCIATED_MEMOBJECT, s, p, r)
    });
    let Some(parent) = parent.filter(|p| !p.is_null()) else {
        return (mem, 0);
    };
    // SAFETY: as above.
    match super::info::value::<usize>(|s, p, r| unsafe { f(mem, CL_MEM_OFFSET, s, p, r) }) {
        Some(offset) => (parent, offset),
        None => (mem, 0),
    }
}

/// The native kernel: hashes the buffer where it is and fills the slot.
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
        // SAFETY: the runtime put the address of the buffer in host memory where the handle
        // was, and its bytes `offset..offset + len` are the ones digested; the queue runs
        // nothing else on it until this returns.
        let bytes = unsafe {
            let at = a.mem.cast::<u8>().cast_const().add(a.offset);
            std::slice::from_raw_parts(at, a.len)
        };
        let _ = slot.set(cltrap_capture::writer::digest(bytes));
    });
}
