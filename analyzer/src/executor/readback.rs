//! Reading a run's buffer outputs back in the same trip to the device as the kernel.
//!
//! Why: a replay reads back every buffer a launch may have changed. Waiting for the kernel
//! and then issuing one blocking read per buffer costs the host a round trip to the device
//! (a wake-up, a driver submission) per command; on a long in-order replay of small launches
//! those round trips, not the bytes, are most of the time. [`Batch`] enqueues the reads behind
//! the kernel in the session's in-order queue before anything is waited for, so the device
//! runs them back to back, and the host waits once.
//!
//! What stays as with blocking reads: the kernel's failure is reported first (as
//! [`ExecError::Execution`]), then a read's, each in the words a blocking read used; every
//! destination is filled whole before it is handed out. Whatever fails, the queue is drained
//! before the destinations can be dropped, so no read is left writing into freed memory.

use super::cl::{Event, Mem};
use super::{cl_err, ExecError, Session};
use std::ffi::c_void;

/// A read enqueued into an allocation that is not yet initialised.
struct Pending {
    slot: usize,
    /// Capacity for `len` bytes; its length is set once the read completed.
    out: Vec<u8>,
    len: usize,
    index: usize,
    event: Event,
}

/// The reads of one run's buffers, enqueued behind its kernel.
pub(super) struct Batch<'s> {
    session: &'s Session,
    pending: Vec<Pending>,
    /// Empty buffers, which need no read.
    done: Vec<(usize, Vec<u8>)>,
}

impl<'s> Batch<'s> {
    /// No reads yet.
    pub(super) fn new(session: &'s Session) -> Batch<'s> {
        Batch {
            session,
            pending: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Enqueues a read of the first `len` bytes of buffer `mem` (argument `index`, object
    /// `slot`) without waiting, into an allocation from `spare` when one is large enough (its
    /// pages are mapped already), else a fresh one. Not zeroed first: the read writes every
    /// byte (zeroing megabytes per launch is a tenth of a long replay on a CPU device).
    pub(super) fn read(
        &mut self,
        slot: usize,
        mem: &Mem,
        len: usize,
        index: usize,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<(), ExecError> {
        let mut out: Vec<u8> = match spare.iter().position(|v| v.capacity() >= len) {
            Some(p) if len > 0 => spare.swap_remove(p),
            _ => Vec::new(),
        };
        out.clear();
        out.try_reserve_exact(len).map_err(|_| {
            ExecError::NotReplayable(format!(
                "argument {index} is a buffer of {len} bytes, more than this machine can allocate"
            ))
        })?;
        if len == 0 {
            // Nothing to read (an empty read is not a valid OpenCL command).
            self.done.push((slot, out));
            return Ok(());
        }
        // SAFETY: `out` has capacity for `len` bytes and is kept, unmoved on the heap and
        // untouched, in `self.pending` until the read completed ([`Batch::wait`], or the
        // queue drained by [`Batch::drop`]).
        let event = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                self.session.queue.raw(),
                mem.raw(),
                opencl_sys::CL_FALSE,
                0,
                len,
                out.as_mut_ptr().cast::<c_void>(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(cl_err(format!("reading back argument {index}")))?;
        self.pending.push(Pending {
            slot,
            out,
            len,
            index,
            event: Event(event),
        });
        Ok(())
    }

    /// Waits for every read (the kernel before them has been waited for by the caller) and
    /// returns the contents by object slot.
    pub(super) fn wait(mut self) -> Result<Vec<(usize, Vec<u8>)>, ExecError> {
        let pending = std::mem::take(&mut self.pending);
        let mut done = std::mem::take(&mut self.done);
        let mut failed = None;
        for p in &pending {
            if failed.is_some() {
                break;
            }
            self.session.note_wait();
            if let Err(c) = cl3::event::wait_for_events(&[p.event.raw()]) {
                failed = Some(cl_err(format!("reading back argument {}", p.index))(c));
            } else if let Some(s) = p.event.status() {
                if s < 0 {
                    failed = Some(cl_err(format!("reading back argument {}", p.index))(s));
                }
            }
        }
        if let Some(e) = failed {
            super::fault::note();
            // Later reads may still be writing: drained before their memory is freed.
            drain(self.session);
            return Err(e);
        }
        for mut p in pending {
            // SAFETY: the read of `len` bytes into `out` completed successfully, so all
            // `len` bytes are initialised.
            unsafe { p.out.set_len(p.len) };
            done.push((p.slot, p.out));
        }
        Ok(done)
    }
}

impl Drop for Batch<'_> {
    /// A batch given up on (an error before [`Batch::wait`]) drains the queue first: its reads
    /// may still be writing into their allocations.
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            drain(self.session);
        }
    }
}

/// Reads the first `len` bytes of buffer `mem` (argument `index`, for the message) back,
/// blocking, behind everything enqueued before: an output left on the device that the host
/// turns out to need (its device digest differed, or a later launch derives from it).
pub(super) fn read_whole(
    session: &Session,
    mem: &Mem,
    len: usize,
    index: usize,
) -> Result<Vec<u8>, ExecError> {
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        ExecError::NotReplayable(format!(
            "argument {index} is a buffer of {len} bytes, more than this machine can allocate"
        ))
    })?;
    if len == 0 {
        return Ok(out);
    }
    session.note_wait();
    // SAFETY: `out` has capacity for `len` bytes and outlives the blocking read.
    let event = unsafe {
        cl3::command_queue::enqueue_read_buffer(
            session.queue.raw(),
            mem.raw(),
            opencl_sys::CL_TRUE,
            0,
            len,
            out.as_mut_ptr().cast::<c_void>(),
            0,
            std::ptr::null(),
        )
    }
    .map_err(cl_err(format!("reading back argument {index}")))?;
    drop(Event(event));
    // SAFETY: the blocking read of `len` bytes into `out` succeeded.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// Waits until every command of `session`'s queue is done, whatever their outcome (an error
/// of the wait is the error already being reported).
fn drain(session: &Session) {
    session.note_wait();
    let _ = cl3::command_queue::finish(session.queue.raw());
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceSelector, InputArg, LaunchInput, Session};
    use opencl_sys::CL_MEM_READ_WRITE;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Buffers read in the kernel's trip: one object behind two arguments is read once and
    /// handed to both, a sub-buffer reads its window of the parent after the kernel wrote it,
    /// and allocations offered for reuse are filled whole.
    #[test]
    fn outputs_read_behind_the_kernel_are_its_results_for_every_argument() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        let program = session
            .build_source(
                "__kernel void k(__global int* a, __global int* b, __global int* s, __global int* c) {\n\
                 int i = get_global_id(0); a[i] += 10; s[i] *= 2; c[i] = i + 100; }",
                "",
            )
            .expect("builds");
        let buffer = |mem: u64, v: &[i32]| InputArg::Buffer {
            mem: Some(mem),
            flags: CL_MEM_READ_WRITE,
            bytes: ints(v),
        };
        let input = LaunchInput {
            kernel: "k".into(),
            work_dim: 1,
            global_offset: None,
            global_size: vec![2],
            local_size: None,
            args: vec![
                buffer(1, &[1, 2, 3, 4]),
                // The same object as argument 0.
                buffer(1, &[1, 2, 3, 4]),
                InputArg::SubBuffer {
                    mem: Some(3),
                    parent: 2,
                    origin: 0,
                    size: 8,
                    flags: CL_MEM_READ_WRITE,
                },
                buffer(2, &[5, 6, 7, 8]),
            ],
            stand_ins: Vec::new(),
        };
        // Spare allocations holding stale bytes: every byte read must overwrite them.
        let mut spare = vec![vec![0xeeu8; 64], vec![0xeeu8; 16]];
        let (out, _) = session
            .run_bound(&program, &input, &mut |_, _| None, &|_| true, &mut spare)
            .expect("runs");
        assert_eq!(out.outputs[0].as_deref(), Some(&ints(&[11, 12, 3, 4])[..]));
        assert_eq!(out.outputs[1], out.outputs[0]);
        assert_eq!(out.outputs[2].as_deref(), Some(&ints(&[100, 101])[..]));
        assert_eq!(
            out.outputs[3].as_deref(),
            Some(&ints(&[100, 101, 7, 8])[..])
        );
    }
}
