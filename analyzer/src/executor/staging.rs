//! Pinned host memory that the reads of one run's trip land in on a GPU, copied out once the
//! trip landed ([`super::readback::Batch`]).
//!
//! Why: NVIDIA's driver copies a read into ordinary (pageable) host memory through a staging
//! buffer of its own, a round trip per chunk; into pinned memory it copies straight from the
//! device. The capture measured 30–40 µs per small read into pageable memory against 5–6 µs
//! into pinned memory on an H100 (`shim/src/core/pinned.rs`), and an in-order replay of a
//! stencil on the H200 spent 77 µs per launch enqueuing its reads (the partials of two
//! outputs digested on the device) for a 16 µs kernel. Only small reads are staged: for a
//! read of megabytes the driver overlaps its own staging copies with the transfer, and a copy
//! out of pinned memory after the transfer made a replay of 16 MB outputs slower (H200:
//! 3.9 s before, 4.2 s staged). A CPU device gains nothing (its "device" memory is host
//! memory), so a session on one never makes a staging area.
//!
//! Invariants:
//! * One mapped `CL_MEM_ALLOC_HOST_PTR` buffer per session, made at the first trip that reads
//!   something and kept until the session closes, when it is unmapped (and the queue drained)
//!   before it is released.
//! * One batch at a time holds it ([`Staging::lease`]); a read lands in it only while it fits
//!   (else in its own allocation, as before), and nobody reads its bytes before the read
//!   completed: the batch copies them out after its one wait, and a batch given up on drains
//!   the queue before its lease goes.

use super::cl::Mem;
use opencl_sys::{cl_command_queue, cl_context};
use std::cell::Cell;
use std::ffi::c_void;

/// Bytes of pinned memory per session (reads larger than what is left go to their own
/// allocation).
pub(super) const STAGING_BYTES: usize = 8 << 20;

/// The largest read staged (larger ones land in their own allocation).
pub(super) const MAX_STAGED_READ: usize = 1 << 20;

/// Where reads in a staging area start (a multiple of any transfer alignment a driver wants).
const ALIGN: usize = 256;

/// A session's pinned staging area: a mapped buffer of [`STAGING_BYTES`].
pub(super) struct Staging {
    buffer: Mem,
    base: *mut u8,
    queue: cl_command_queue,
    busy: Cell<bool>,
}

impl Staging {
    /// Makes and maps the staging area in `context` (blocking, on `queue`); None when the
    /// driver refuses either (reads then go to their own allocations).
    pub(super) fn open(context: cl_context, queue: cl_command_queue) -> Option<Staging> {
        // SAFETY: a buffer of ours with no host pointer.
        let raw = unsafe {
            cl3::memory::create_buffer(
                context,
                opencl_sys::CL_MEM_READ_WRITE | opencl_sys::CL_MEM_ALLOC_HOST_PTR,
                STAGING_BYTES,
                std::ptr::null_mut(),
            )
        }
        .ok()?;
        let buffer = Mem(raw);
        // cl3 hands the mapped pointer back typed as a `cl_mem`.
        let mut base: opencl_sys::cl_mem = std::ptr::null_mut();
        // SAFETY: a blocking map of our own buffer, whole; `base` receives the pointer.
        let mapped = unsafe {
            cl3::command_queue::enqueue_map_buffer(
                queue,
                buffer.raw(),
                opencl_sys::CL_TRUE,
                opencl_sys::CL_MAP_READ | opencl_sys::CL_MAP_WRITE,
                0,
                STAGING_BYTES,
                &mut base,
                0,
                std::ptr::null(),
            )
        };
        if let Ok(ev) = mapped {
            drop(super::cl::Event(ev));
        }
        if mapped.is_err() || base.is_null() {
            return None;
        }
        Some(Staging {
            buffer,
            base: base.cast::<u8>(),
            queue,
            busy: Cell::new(false),
        })
    }

    /// The area for one batch, when no other batch holds it.
    pub(super) fn lease(&self) -> Option<Lease<'_>> {
        if self.busy.replace(true) {
            return None;
        }
        Some(Lease {
            staging: self,
            used: 0,
        })
    }
}

impl Drop for Staging {
    /// Unmapped, and the queue drained, before the buffer is released.
    fn drop(&mut self) {
        // SAFETY: our own mapping of our own buffer; no batch holds it (a lease borrows it).
        let unmapped = unsafe {
            cl3::command_queue::enqueue_unmap_mem_object(
                self.queue,
                self.buffer.raw(),
                self.base.cast::<c_void>(),
                0,
                std::ptr::null(),
            )
        };
        if let Ok(ev) = unmapped {
            drop(super::cl::Event(ev));
        }
        let _ = cl3::command_queue::finish(self.queue);
    }
}

/// One batch's hold on the staging area: the bytes it handed out so far.
pub(super) struct Lease<'s> {
    staging: &'s Staging,
    used: usize,
}

impl Lease<'_> {
    /// Room for a read of `len` bytes: its offset, or None when it does not fit or is larger
    /// than [`MAX_STAGED_READ`].
    pub(super) fn take(&mut self, len: usize) -> Option<usize> {
        if len > MAX_STAGED_READ {
            return None;
        }
        let at = self.used.next_multiple_of(ALIGN);
        let end = at.checked_add(len).filter(|e| *e <= STAGING_BYTES)?;
        self.used = end;
        Some(at)
    }

    /// Where the room at `at` starts (for the read to write into).
    pub(super) fn at(&self, at: usize) -> *mut u8 {
        // SAFETY (of the offset): `at` came from `take`, inside the mapping.
        unsafe { self.staging.base.add(at) }
    }

    /// Copies the `len` bytes at `at` into `out` (capacity for them) and sets its length.
    ///
    /// # Safety
    /// The read into `at..at + len` completed.
    pub(super) unsafe fn copy_out(&self, at: usize, len: usize, out: &mut Vec<u8>) {
        debug_assert!(out.capacity() >= len);
        // SAFETY: the caller says the read completed, so those bytes are initialised; `out`
        // has capacity for `len` and does not overlap the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(self.at(at), out.as_mut_ptr(), len);
            out.set_len(len);
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.staging.busy.set(false);
    }
}
