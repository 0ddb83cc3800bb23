//! A snapshot: a device-side copy of a buffer's contents in a buffer of the digest engine's,
//! read back only when the capture has not stored that content yet, then given back to the
//! engine's pool.

use super::{mapped, Engine, POOLED_SNAPSHOT_BYTES};
use crate::core::held::Child;
use crate::core::landed::Landed;
use crate::core::readahead::ReadBack;
use crate::core::room::spare;
use crate::core::stats;
use crate::core::track::lock;
use opencl_sys::*;
use std::sync::Arc;
use std::time::Instant;

/// A device-side copy of a buffer's contents, given back to the engine's pool when dropped.
pub(in crate::core) struct Snapshot {
    pub(super) engine: Arc<Engine>,
    pub(super) mem: usize,
    pub(super) bytes: usize,
    /// A command of ours may still use it: released (the driver keeps it for that command),
    /// never pooled.
    pub(super) abandoned: bool,
}

impl Snapshot {
    /// Reads the snapshot back (blocking, on the engine's own queue: never the application's),
    /// into the engine's mapped host memory ([`mapped`]); a large one that finds none of its
    /// size through two mapped stages into the heap ([`Engine::read_staged`]); else into heap
    /// memory whose pages are mapped already ([`spare::mapped`]).
    /// Why mapped memory for every read, not only for those an application's `clFinish` waits
    /// for: side by side on the H200 host (3 rounds, 2026-11-29), reads ahead on the writer's
    /// side into mapped memory made a DP wavefront's whole capture 12% shorter and left the
    /// other benchmark patterns as they were (the engine's pool is reused, so its cost of
    /// making mapped memory is paid about once per buffer).
    pub(in crate::core) fn read(&self) -> Result<Landed, cl_int> {
        let _read = stats::span(stats::Phase::SnapshotRead);
        if let Some(mut m) = self.engine.mapped(self.bytes) {
            // SAFETY: mapped memory of `bytes` bytes, ours until dropped.
            unsafe { self.read_into(m.as_mut_ptr()) }?;
            stats::add(&stats::SNAPSHOT_READS_MAPPED, 1);
            return Ok(Landed::Held(Box::new(m)));
        }
        if self.bytes >= mapped::STAGED_MIN {
            if let Some(done) = self.read_through_stages() {
                return done;
            }
        }
        let room = stats::span(stats::Phase::SnapshotRoom);
        let mut v = spare::mapped(self.bytes);
        drop(room);
        v.clear();
        v.reserve_exact(self.bytes);
        // SAFETY: `v` has room for `bytes` bytes.
        unsafe { self.read_into(v.as_mut_ptr()) }?;
        // SAFETY: the read wrote all of them.
        unsafe { v.set_len(self.bytes) };
        Ok(Landed::Heap(v))
    }

    /// Reads the snapshot through two mapped stages ([`Engine::read_staged`]) into heap room
    /// whose pages the copies touch first (a kept vector when there is one); None when the
    /// engine has no two stages to spare. The room goes back to the kept ones unless returned.
    fn read_through_stages(&self) -> Option<Result<Landed, cl_int>> {
        let mut v = spare::take(self.bytes).unwrap_or_default();
        v.reserve_exact(self.bytes);
        // SAFETY: our own snapshot buffer of `bytes` bytes; `v` has room for them.
        let done = unsafe {
            self.engine
                .read_staged(self.mem, self.bytes, v.as_mut_ptr())
        };
        match done {
            Some(Ok(())) => {
                // SAFETY: the staged read wrote all of them.
                unsafe { v.set_len(self.bytes) };
                self.counted();
                stats::add(&stats::SNAPSHOT_READS_STAGED, 1);
                Some(Ok(Landed::Heap(v)))
            }
            Some(Err(e)) => {
                spare::give(v);
                Some(Err(e))
            }
            None => {
                spare::give(v);
                None
            }
        }
    }

    /// Counts one snapshot read back, of `bytes` bytes.
    fn counted(&self) {
        stats::add(&stats::SNAPSHOT_READS, 1);
        stats::add(&stats::SNAPSHOT_READ_BYTES, self.bytes as u64);
    }

    /// Reads the snapshot's `bytes` bytes into `dst` (blocking, on the engine's own queue) and
    /// counts them.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `bytes` bytes, used by nothing else meanwhile.
    unsafe fn read_into(&self, dst: *mut u8) -> Result<(), cl_int> {
        let read = self.engine.calls.read.ok_or(CL_INVALID_OPERATION)?;
        // SAFETY: our own buffer of `bytes` bytes, our own queue, into room for that many
        // (the caller's promise); a blocking read that succeeded wrote all of them.
        let r = unsafe {
            read(
                self.engine.queue as cl_command_queue,
                self.mem as cl_mem,
                CL_TRUE,
                0,
                self.bytes,
                dst.cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        if r != CL_SUCCESS {
            return Err(r);
        }
        self.counted();
        Ok(())
    }
}

impl ReadBack for Snapshot {
    fn read(&self) -> Result<Landed, cl_int> {
        Snapshot::read(self)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let e = &self.engine;
        let mut st = lock(&e.state);
        st.in_use = st.in_use.saturating_sub(1);
        st.last_used = Some(Instant::now());
        let pooled: usize = st.free_snapshots.iter().map(|(b, _)| *b).sum();
        if !self.abandoned && !st.closed && pooled + self.bytes <= POOLED_SNAPSHOT_BYTES {
            st.free_snapshots.push((self.bytes, self.mem));
            return;
        }
        drop(st);
        if let Some(rel) = e.calls.release_mem {
            // SAFETY: our own buffer; the commands using it completed (see `Digest`).
            e.gone(Child::Buffer, || unsafe {
                rel(self.mem as cl_mem);
            });
        }
    }
}
