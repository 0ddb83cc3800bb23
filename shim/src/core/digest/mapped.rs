//! Mapped host memory of an engine: `CL_MEM_ALLOC_HOST_PTR` buffers of the engine's context,
//! mapped once, that a snapshot is read into.
//!
//! Why: a read into ordinary memory goes through the driver's own staging buffer and a copy on
//! the reading thread. On the H200 host a 16 MB read came back at 7–13 GB/s into ordinary
//! memory and at 49–54 GB/s into mapped memory (`bench/dev`-style measurement of
//! `clEnqueueReadBuffer`, 2026-11-29); the capture's snapshot reads ran at 4–5 GB/s while the
//! spool lanes and the hashing used the same memory bus. Read into mapped memory, a content
//! costs the bus and no copy; it then stays there as the version kept for the next launch's
//! comparison and while a spool lane writes it ([`crate::core::landed`]).
//!
//! A snapshot larger than the mapped memory an engine may hold is read through two *stages*
//! of it ([`Engine::read_staged`]): each piece is read into one stage at the bus's speed while
//! the worker threads copy the piece before it out of the other. Read straight into the heap,
//! a 2 GiB snapshot of Debian's clpeak `--global-bandwidth` came back at about 5.5 GB/s after
//! its pages were touched first (another 0.18 s per 2 GiB), on the H200 host.
//!
//! Invariants:
//! * A [`Mapped`] holds its engine (an `Arc`), like a snapshot: the engine's objects, and with
//!   them its hold of the application's context, go only after the last one is dropped.
//! * Mapped memory is made only while the engine holds less than [`MAPPED_MAX`]; past it a
//!   snapshot is read into the heap, as before.
//! * Each buffer is mapped once, when made, and unmapped (on the engine's own queue) right
//!   before it is released; dropped memory goes back to the engine's pool, which gives back
//!   what it did not use for [`super::IDLE`] ([`super::trim`]).

use super::{Child, Engine};
use opencl_sys::*;
use std::sync::Arc;
use std::time::Instant;

/// Mapped host memory an engine may hold in all (in use and pooled). Small: making and
/// releasing mapped memory costs the driver about 0.4 ms per MB on the H200 host (pinning its
/// pages), two to four times what a read into the heap costs, and pays only where it is used
/// again; the buffers that rewrite at every launch are few (a stencil's two, an FDTD's three).
/// 256 MB made none of the benchmark patterns faster on the H200 host (2026-11-29).
pub(super) const MAPPED_MAX: usize = 64 << 20;

/// Snapshots at least this large that find no mapped memory of their size are read through
/// two stages ([`Engine::read_staged`]).
pub(super) const STAGED_MIN: usize = 32 << 20;
/// Bytes of one stage, and of one piece of a staged read.
const STAGE: usize = 16 << 20;
/// Bytes one worker copies out of a stage at a time.
const STAGE_COPY: usize = 1 << 20;

/// A mapped buffer of an engine (of `cap` bytes) holding `bytes` bytes of contents read back.
pub(in crate::core) struct Mapped {
    engine: Arc<Engine>,
    mem: usize,
    ptr: usize,
    bytes: usize,
    cap: usize,
}

// SAFETY: the mapped pointer is written only by the read that filled it, before the value is
// shared; after that it is only read.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Where a read of `bytes` bytes lands.
    pub(super) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

impl crate::core::landed::Held for Mapped {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `bytes` bytes mapped at `ptr` while this value lives (see the `Send` note).
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.bytes) }
    }
    fn footprint(&self) -> usize {
        // The pooled buffer it holds (best fit: possibly larger than the contents).
        self.cap
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let e = &self.engine;
        let mut st = crate::core::track::lock(&e.state);
        st.last_used = Some(Instant::now());
        // Pooled whole (each release costs the driver; the writer's trim gives back what
        // stays unused): the engine holds at most `MAPPED_MAX` in all.
        if !st.closed {
            st.free_mapped.push((self.cap, self.mem, self.ptr));
            return;
        }
        st.mapped_bytes = st.mapped_bytes.saturating_sub(self.cap);
        drop(st);
        e.unmap_and_release(self.mem, self.ptr);
    }
}

/// Finishes an engine's queue (`.0`, with its `clFinish`, `.1`) when dropped: what a staged
/// read leaves behind if its copy unwinds.
struct Finish(usize, opencl_sys::cl_function_types::clFinish_t);

impl Drop for Finish {
    fn drop(&mut self) {
        if let Some(finish) = self.1 {
            // SAFETY: the engine's own queue, alive while the engine is.
            unsafe { finish(self.0 as cl_command_queue) };
        }
    }
}

impl Engine {
    /// Mapped memory for `bytes` bytes: pooled, or made and mapped now (None: the engine holds
    /// [`MAPPED_MAX`] already, or it could not be made).
    pub(super) fn mapped(self: &Arc<Engine>, bytes: usize) -> Option<Mapped> {
        let mut st = crate::core::track::lock(&self.state);
        if st.closed {
            return None;
        }
        // The smallest pooled buffer with room for it: contents of several sizes (a 16 MB
        // output, then a 4 MB one) share the pool instead of each size making its own. Side
        // by side with exact-size reuse on the H200 host (4 rounds, 2026-11-29): buffer-heavy
        // read 19-20 of its 27 new contents into mapped memory instead of 14-15, its loop
        // 0.076-0.088 s against 0.084-0.093 s (one outlier round of the other aside).
        let fit = (st.free_mapped.iter().enumerate())
            .filter(|(_, m)| m.0 >= bytes)
            .min_by_key(|(_, m)| m.0)
            .map(|(i, _)| i);
        if let Some(i) = fit {
            let (cap, mem, ptr) = st.free_mapped.swap_remove(i);
            return Some(Mapped {
                engine: self.clone(),
                mem,
                ptr,
                bytes,
                cap,
            });
        }
        drop(st);
        self.mapped_new(bytes)
    }

    /// New mapped memory for `bytes` bytes, made and mapped now whatever the pool holds (None:
    /// the engine holds [`MAPPED_MAX`] already, or it could not be made).
    pub(super) fn mapped_new(self: &Arc<Engine>, bytes: usize) -> Option<Mapped> {
        let mut st = crate::core::track::lock(&self.state);
        if st.closed || st.mapped_bytes + bytes > MAPPED_MAX {
            return None;
        }
        st.mapped_bytes += bytes;
        drop(st);
        let made = self.make_mapped(bytes);
        if made.is_none() {
            let mut st = crate::core::track::lock(&self.state);
            st.mapped_bytes = st.mapped_bytes.saturating_sub(bytes);
        }
        let (mem, ptr) = made?;
        Some(Mapped {
            engine: self.clone(),
            mem,
            ptr,
            bytes,
            cap: bytes,
        })
    }

    /// Reads `bytes` bytes of our buffer `mem` into `dst` through two mapped stages of
    /// [`STAGE`] bytes: piece `k + 1` is read (not blocking) into one stage while the workers
    /// copy piece `k` out of the other (the copy also touches `dst`'s fresh pages, on several
    /// threads), then the engine's queue is finished. None, with nothing read, when the engine
    /// has no two stages to spare; Err: the driver's error for a read or the finish.
    ///
    /// # Safety
    /// `mem` is our own buffer of at least `bytes` bytes, on this engine's context; `dst` is
    /// valid for writes of `bytes` bytes, used by nothing else meanwhile.
    pub(super) unsafe fn read_staged(
        self: &Arc<Engine>,
        mem: usize,
        bytes: usize,
        dst: *mut u8,
    ) -> Option<Result<(), cl_int>> {
        if bytes == 0 {
            return None;
        }
        let (read, finish) = (self.calls.read?, self.calls.finish?);
        let mut stages = [self.mapped(STAGE)?, self.mapped(STAGE)?];
        // (Both go back to the engine's pool when dropped, after the last piece was copied.)
        let at = [
            stages[0].as_mut_ptr() as usize,
            stages[1].as_mut_ptr() as usize,
        ];
        let pieces = bytes.div_ceil(STAGE);
        let piece = |k: usize| (k * STAGE, STAGE.min(bytes - k * STAGE));
        let enqueue = |k: usize, blocking: cl_bool| {
            let (offset, len) = piece(k);
            // SAFETY: our own buffer (the caller's promise) read at `offset..offset + len`,
            // within its `bytes`, into a stage of STAGE bytes no other command uses.
            unsafe {
                read(
                    self.queue as cl_command_queue,
                    mem as cl_mem,
                    blocking,
                    offset,
                    len,
                    at[k % 2] as *mut libc::c_void,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            }
        };
        let r = enqueue(0, CL_TRUE);
        if r != CL_SUCCESS {
            return Some(Err(r));
        }
        for k in 0..pieces {
            let next = k + 1 < pieces;
            if next {
                let r = enqueue(k + 1, CL_FALSE);
                if r != CL_SUCCESS {
                    // Nothing of ours is pending: piece k's read completed.
                    return Some(Err(r));
                }
            }
            let (offset, len) = piece(k);
            let (src, to) = (at[k % 2], dst as usize + offset);
            // Should the copy unwind, the read into the other stage is waited for first, so
            // the stages never go back to the pool with a read of ours in flight.
            let pending = next.then(|| Finish(self.queue, self.calls.finish));
            // SAFETY: piece k was read into its stage (blocking, or finished below in the
            // round before); `to..to + len` lies within `dst`'s `bytes` (the caller's promise).
            unsafe {
                crate::core::room::copy_in_pieces(
                    src as *const u8,
                    to as *mut u8,
                    len,
                    STAGE_COPY,
                    len > STAGE_COPY,
                )
            };
            std::mem::forget(pending);
            if next {
                // SAFETY: the engine's own queue.
                let r = unsafe { finish(self.queue as cl_command_queue) };
                if r != CL_SUCCESS {
                    // The read into the other stage may still be running: neither stage goes
                    // back to the pool (kept, with the engine, for good).
                    std::mem::forget(stages);
                    return Some(Err(r));
                }
            }
        }
        Some(Ok(()))
    }

    /// A new `CL_MEM_ALLOC_HOST_PTR` buffer of `bytes` in the engine's context, mapped on the
    /// engine's queue: (buffer, mapped pointer).
    fn make_mapped(&self, bytes: usize) -> Option<(usize, usize)> {
        let c = &self.calls;
        let calls = (c.create_buffer, c.map, c.release_mem);
        crate::core::pinned::map_host_buffer(calls, self.context, self.device, self.queue, bytes)
    }

    /// Unmaps (when `ptr` is not 0) and releases a mapped buffer of ours.
    pub(super) fn unmap_and_release(&self, mem: usize, ptr: usize) {
        // SAFETY: our own buffer and its mapping; nothing of ours uses either any more (the
        // read that filled it completed, the value holding it was dropped).
        unsafe {
            if let (Some(unmap), true) = (self.calls.unmap, ptr != 0) {
                unmap(
                    self.queue as cl_command_queue,
                    mem as cl_mem,
                    ptr as *mut libc::c_void,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                );
            }
            if let Some(rel) = self.calls.release_mem {
                self.gone(Child::Buffer, || {
                    rel(mem as cl_mem);
                });
            }
        }
    }
}
