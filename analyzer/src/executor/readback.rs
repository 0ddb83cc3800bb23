//! Reading a run's outputs back in the same trip to the device as the kernel.
//!
//! Why: a replay reads back every buffer a launch may have changed. Waiting for the kernel
//! and then issuing one blocking read per buffer costs the host a round trip to the device
//! (a wake-up, a driver submission) per command; on a long in-order replay of small launches
//! those round trips, not the bytes, are most of the time. [`Batch`] enqueues the reads behind
//! the kernel in the session's in-order queue before anything is waited for, so the device
//! runs them back to back, and the host waits once ([`Batch::wait`]: one wait for the kernel
//! and every read). Whoever rides along in the same trip (the digests of outputs verified on
//! the device, [`super::devverify`]) enqueues its commands behind the reads and its own reads
//! with [`Batch::extra`], so verifying a launch on the device adds no wait either.
//!
//! What stays as with blocking reads: the kernel's failure is reported first (as
//! [`ExecError::Execution`]), then a read's, each in the words a blocking read used; every
//! destination is filled whole before it is handed out. Whatever fails, the queue is drained
//! before the destinations can be dropped, so no read is left writing into freed memory.

use super::cl::{Event, Mem};
use super::{cl_err, ExecError, Session};
use opencl_sys::cl_event;
use std::ffi::c_void;

/// Where the bytes of a read go once the trip has landed.
#[derive(Debug, Clone, Copy)]
enum Dest {
    /// The contents of the run's memory object in this slot.
    Object(usize),
    /// The `n`th read added with [`Batch::extra`].
    Extra(usize),
}

/// A read enqueued into an allocation that is not yet initialised.
struct Pending {
    into: Dest,
    /// Capacity for `len` bytes; its length is set once the read completed.
    out: Vec<u8>,
    len: usize,
    /// What the read is, for its error.
    what: String,
    event: Event,
    /// Where it lands in the batch's staging lease (None: in `out` itself).
    staged: Option<usize>,
}

/// The reads of one run's outputs, enqueued behind its kernel.
pub(super) struct Batch<'s> {
    session: &'s Session,
    pending: Vec<Pending>,
    /// Empty reads, which need no command.
    done: Vec<(Dest, Vec<u8>)>,
    /// Reads added with [`Batch::extra`] so far.
    extras: usize,
    /// The session's pinned staging area while this batch reads into it (taken at its first
    /// read; given back after [`Batch::drop`] drained what may still write into it).
    lease: Option<super::staging::Lease<'s>>,
}

/// What a trip brought back ([`Batch::wait`]).
pub(super) struct Landed {
    /// The contents of the objects read, by slot.
    pub(super) objects: Vec<(usize, Vec<u8>)>,
    /// The reads added with [`Batch::extra`], by the number it gave them.
    pub(super) extras: Vec<Vec<u8>>,
}

/// An allocation for `len` bytes, from `spare` when one is large enough (its pages are mapped
/// already), else a fresh one; `index` names the argument when it cannot be had.
fn allocation(len: usize, index: usize, spare: &mut Vec<Vec<u8>>) -> Result<Vec<u8>, ExecError> {
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
    Ok(out)
}

impl<'s> Batch<'s> {
    /// No reads yet.
    pub(super) fn new(session: &'s Session) -> Batch<'s> {
        Batch {
            session,
            pending: Vec::new(),
            done: Vec::new(),
            extras: 0,
            lease: None,
        }
    }

    /// Enqueues, without waiting, a read of `len` bytes into `out` (capacity for them) with
    /// `enqueue` (given the destination, it returns the read's event).
    fn enqueue(
        &mut self,
        into: Dest,
        mut out: Vec<u8>,
        len: usize,
        what: String,
        enqueue: impl FnOnce(*mut c_void) -> Result<cl_event, i32>,
    ) -> Result<(), ExecError> {
        if len == 0 {
            // Nothing to read (an empty read is not a valid OpenCL command).
            self.done.push((into, out));
            return Ok(());
        }
        if self.lease.is_none() {
            self.lease = self.session.staging().and_then(|s| s.lease());
        }
        let staged = self.lease.as_mut().and_then(|l| l.take(len));
        let dst = match (staged, &self.lease) {
            (Some(at), Some(lease)) => lease.at(at),
            _ => out.as_mut_ptr(),
        };
        let event = enqueue(dst.cast::<c_void>()).map_err(cl_err(what.clone()))?;
        // `out` (or the lease's room) is kept, unmoved and untouched, in `self.pending` until
        // the read completed ([`Batch::wait`], or the queue drained by [`Batch::drop`]).
        self.pending.push(Pending {
            into,
            out,
            len,
            what,
            event: Event(event),
            staged,
        });
        Ok(())
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
        let out = allocation(len, index, spare)?;
        self.enqueue_buffer(
            Dest::Object(slot),
            mem,
            len,
            out,
            format!("reading back argument {index}"),
        )
    }

    /// Enqueues, without waiting, a read of the first `len` bytes of buffer `mem` into `out`
    /// (capacity for them), landing in `into`.
    fn enqueue_buffer(
        &mut self,
        into: Dest,
        mem: &Mem,
        len: usize,
        out: Vec<u8>,
        what: String,
    ) -> Result<(), ExecError> {
        let queue = self.session.queue.raw();
        // SAFETY: the destination has capacity for `len` bytes and stays allocated and
        // untouched until the read completed ([`Batch::enqueue`]).
        self.enqueue(into, out, len, what, |dst| unsafe {
            cl3::command_queue::enqueue_read_buffer(
                queue,
                mem.raw(),
                opencl_sys::CL_FALSE,
                0,
                len,
                dst,
                0,
                std::ptr::null(),
            )
        })
    }

    /// Enqueues a read of image `mem` (argument `index`, object `slot`) without waiting: its
    /// `region` (width, height, depth in pixels), tightly packed into `len` bytes.
    pub(super) fn read_image(
        &mut self,
        slot: usize,
        mem: &Mem,
        region: [usize; 3],
        len: usize,
        index: usize,
    ) -> Result<(), ExecError> {
        let out = allocation(len, index, &mut Vec::new())?;
        let queue = self.session.queue.raw();
        let what = format!("reading back argument {index}");
        let origin = [0usize; 3];
        // SAFETY: the destination has capacity for the `len` bytes of the tightly packed
        // region and stays allocated and untouched until the read completed; `origin` and
        // `region` are read by the call.
        self.enqueue(Dest::Object(slot), out, len, what, |dst| unsafe {
            cl3::command_queue::enqueue_read_image(
                queue,
                mem.raw(),
                opencl_sys::CL_FALSE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                dst,
                0,
                std::ptr::null(),
            )
        })
    }

    /// Enqueues a read of the first `len` bytes of buffer `mem` behind everything enqueued so
    /// far, for whoever rides along in the trip (`what` says what it is, for its error). Its
    /// number: where [`Landed::extras`] will have its bytes.
    pub(super) fn extra(&mut self, mem: &Mem, len: usize, what: &str) -> Result<usize, ExecError> {
        let n = self.extras;
        let out = allocation(len, 0, &mut Vec::new())
            .map_err(|_| ExecError::NotReplayable(format!("{what}: no memory for {len} bytes")))?;
        self.enqueue_buffer(Dest::Extra(n), mem, len, out, what.to_string())?;
        self.extras += 1;
        Ok(n)
    }

    /// Waits once for `kernel` (the command the reads are behind, if the caller enqueued one)
    /// and every read, and returns what they brought back. `kernel`'s failure is reported
    /// first, as the run's ([`ExecError::Execution`]); then the first read's that failed.
    pub(super) fn wait(mut self, kernel: Option<&Event>) -> Result<Landed, ExecError> {
        let events: Vec<cl_event> = kernel
            .into_iter()
            .chain(self.pending.iter().map(|p| &p.event))
            .map(Event::raw)
            .collect();
        if !events.is_empty() {
            self.session.note_wait();
            let waited = cl3::event::wait_for_events(&events);
            let failed = |e: &Event| e.status().filter(|s| *s < 0);
            if let Some(s) = kernel.and_then(failed) {
                // Reads behind it may still be pending: [`Batch::drop`] drains them.
                return Err(super::fault::failed(s));
            }
            for p in &self.pending {
                if let Some(s) = failed(&p.event) {
                    super::fault::note();
                    return Err(cl_err(p.what.clone())(s));
                }
            }
            if let Err(c) = waited {
                return Err(match (kernel, self.pending.first()) {
                    (Some(_), _) | (None, None) => super::fault::failed(c),
                    (None, Some(p)) => {
                        super::fault::note();
                        cl_err(p.what.clone())(c)
                    }
                });
            }
        }
        let mut landed = Landed {
            objects: Vec::new(),
            extras: vec![Vec::new(); self.extras],
        };
        let done = std::mem::take(&mut self.done);
        let pending = std::mem::take(&mut self.pending);
        let lease = self.lease.as_ref();
        let finished = pending.into_iter().map(|mut p| {
            // SAFETY: the read of `len` bytes into `out` (or into the lease's room, then
            // copied into `out`) completed successfully (its status is not an error and the
            // wait for it returned), so all `len` bytes are initialised.
            match (p.staged, lease) {
                (Some(at), Some(lease)) => unsafe { lease.copy_out(at, p.len, &mut p.out) },
                _ => unsafe { p.out.set_len(p.len) },
            }
            (p.into, p.out)
        });
        for (into, out) in done.into_iter().chain(finished) {
            match into {
                Dest::Object(slot) => landed.objects.push((slot, out)),
                Dest::Extra(n) => {
                    if let Some(e) = landed.extras.get_mut(n) {
                        *e = out;
                    }
                }
            }
        }
        Ok(landed)
    }
}

impl Drop for Batch<'_> {
    /// A batch given up on (an error before or in [`Batch::wait`]) drains the queue first:
    /// its reads may still be writing into their allocations.
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
    let mut out = allocation(len, index, &mut Vec::new())?;
    if len == 0 {
        return Ok(out);
    }
    // SAFETY: `out` has capacity for `len` bytes, and the read is blocking.
    unsafe {
        session.read_raw(
            mem,
            0,
            out.as_mut_ptr(),
            len,
            format!("reading back argument {index}"),
        )?;
        out.set_len(len);
    }
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

    /// One wait for a failed command and the reads behind it: the command's failure is the
    /// run's ([`ExecError::Execution`]), and the reads are done with before their memory goes.
    #[test]
    fn a_failed_kernel_is_reported_first_from_the_one_wait() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        // A user event set to an error stands for a kernel that faulted on the device.
        let raw = cl3::event::create_user_event(session.context.raw()).expect("a user event");
        let failed = super::Event(raw);
        cl3::event::set_user_event_status(raw, opencl_sys::CL_OUT_OF_RESOURCES).expect("set");
        let bytes = ints(&[1, 2, 3, 4]);
        let mem = buffer(&session, &bytes);
        let waits = session.device_waits();
        let mut trip = super::Batch::new(&session);
        trip.read(0, &mem, bytes.len(), 0, &mut Vec::new())
            .expect("read enqueued");
        let n = trip.extra(&mem, 8, "a read riding along").expect("extra");
        assert_eq!(n, 0);
        let err = trip.wait(Some(&failed)).err().expect("the failure");
        assert!(matches!(err, super::ExecError::Execution { .. }), "{err}");
        // The one wait, and the queue drained behind it.
        assert_eq!(session.device_waits() - waits, 2);
        // Without a failure, the same trip brings back each read where it belongs.
        let mut trip = super::Batch::new(&session);
        trip.read(3, &mem, bytes.len(), 0, &mut Vec::new())
            .expect("read enqueued");
        trip.extra(&mem, 8, "a read riding along").expect("extra");
        let landed = trip.wait(None).expect("landed");
        assert_eq!(landed.objects, vec![(3, bytes.clone())]);
        assert_eq!(landed.extras, vec![bytes[..8].to_vec()]);
    }

    /// Reads staged in pinned memory land as unstaged ones do: each where it belongs, whole;
    /// a read larger than a staged read may be, or one that no longer fits in the staging
    /// area, lands in its own allocation; the area is free again for the next trip, also
    /// after a trip given up on.
    #[test]
    fn staged_reads_land_whole_and_a_read_past_the_area_goes_direct() {
        let Ok(mut session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        session.stage_on_cpu = true;
        use super::super::staging::{MAX_STAGED_READ, STAGING_BYTES};
        let big: Vec<u8> = (0..MAX_STAGED_READ + 1)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let small = ints(&[5, 6, 7, 8, 9]);
        let (big_mem, small_mem) = (buffer(&session, &big), buffer(&session, &small));
        for _ in 0..2 {
            let mut trip = super::Batch::new(&session);
            trip.read(1, &small_mem, small.len(), 1, &mut Vec::new())
                .expect("read enqueued");
            // Larger than a staged read: its own allocation.
            trip.read(0, &big_mem, big.len(), 0, &mut Vec::new())
                .expect("read enqueued");
            trip.extra(&small_mem, 8, "a read riding along")
                .expect("extra");
            // Staged reads until the area is full, then their own allocations.
            let fill = STAGING_BYTES / MAX_STAGED_READ;
            for _ in 0..fill {
                trip.extra(&big_mem, MAX_STAGED_READ, "a read filling the area")
                    .expect("extra");
            }
            let staged: Vec<bool> = trip.pending.iter().map(|p| p.staged.is_some()).collect();
            let mut want = vec![true, false, true];
            want.extend((0..fill).map(|i| i + 1 < fill));
            assert_eq!(staged, want);
            let mut landed = trip.wait(None).expect("landed");
            landed.objects.sort_by_key(|(slot, _)| *slot);
            assert_eq!(landed.objects, vec![(0, big.clone()), (1, small.clone())]);
            assert_eq!(landed.extras[0], small[..8].to_vec());
            for e in &landed.extras[1..] {
                assert_eq!(e, &big[..MAX_STAGED_READ]);
            }
        }
        // A trip given up on gives the area back.
        let mut trip = super::Batch::new(&session);
        trip.read(1, &small_mem, small.len(), 1, &mut Vec::new())
            .expect("read enqueued");
        drop(trip);
        let mut trip = super::Batch::new(&session);
        trip.read(1, &small_mem, small.len(), 1, &mut Vec::new())
            .expect("read enqueued");
        assert!(
            trip.pending[0].staged.is_some(),
            "the area was not given back"
        );
        assert_eq!(trip.wait(None).expect("landed").objects, vec![(1, small)]);
    }

    /// A buffer of `session` initialised from `bytes`.
    fn buffer(session: &Session, bytes: &[u8]) -> super::Mem {
        super::Mem(
            // SAFETY: a buffer of ours initialised from `bytes`, copied at creation.
            unsafe {
                cl3::memory::create_buffer(
                    session.context.raw(),
                    CL_MEM_READ_WRITE | opencl_sys::CL_MEM_COPY_HOST_PTR,
                    bytes.len(),
                    bytes.as_ptr() as *mut std::ffi::c_void,
                )
            }
            .expect("buffer"),
        )
    }

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
