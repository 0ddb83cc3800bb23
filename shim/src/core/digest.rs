//! Device-side digests (`CLTRAP_DEVICE_DIGEST`): instead of reading a buffer argument back over
//! the bus, the capture enqueues the `dd128` kernel of [`cltrap_capture::devdigest`] over it in
//! the application's queue and reads back only the per-group partials (at most 4 KiB) from a
//! slot of a small buffer of ours. In `full` mode the buffer is also copied, on the device, into
//! a snapshot buffer of ours; the writer reads the snapshot back only when the capture has not
//! stored contents with that digest yet ([`known_blob`]), so unchanged contents never cross
//! the bus again.
//!
//! Why an engine per (context, device): the program is built for the queue's device in the
//! application's context (through the door's `next` table, never libOpenCL). Its objects —
//! program, kernel, slot buffer, a private in-order queue (snapshot reads), pooled snapshot
//! buffers — count in the context's reference count, so they must not outlive the
//! application's use of it. The table holds an engine while the application holds the
//! context ([`super::lifetime`]: a reference of its own or a queue in it); when it no longer
//! does, [`retire`] takes the engine out of the table, and each launch in flight that digests
//! with it holds it (an `Arc` in its [`super::flight::DevItem`], its slots and snapshots) until
//! the writer wrote it: the last one dropped releases the objects ([`Engine`]'s `Drop`), so
//! the context is destroyed as without the shim. A context the shim does not see held gets no
//! engine (its launches read back). Pooled snapshots not used for [`IDLE`] are released by
//! the writer thread ([`trim`]). A device where the program does not build (or that is not
//! little-endian) gets no engine: its launches are read back as before (said once on stderr
//! when `CLTRAP_DEVICE_DIGEST=on`; `CLTRAP_TEST_DIGEST_BUILD=fail` makes the build fail on
//! purpose, for the test of that path).

mod mapped;
mod ready;
mod snapshot;

pub(super) use snapshot::Snapshot;

use super::device::QueueFacts;
use super::held::{Child, Hold};
use super::readahead::Ahead;
use super::track::lock;
use crate::Next;
use cltrap_capture::devdigest::{self, GROUP_SIZE, KERNEL_NAME, KERNEL_SOURCE, SLOT_BYTES};
use cltrap_capture::{DeviceDigest, Hash, Settings};
use libc::c_void;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Buffers smaller than this are read back under `auto`: a read of a few kilobytes costs a
/// driver about what the digest kernel's enqueue does (BENCHMARKS.md, "Driver costs behind the design").
pub const AUTO_MIN_BYTES: usize = 64 << 10;
/// Digests in flight per engine (each holds one slot of [`SLOT_BYTES`] on the device).
const SLOTS: usize = 2048;
/// Pooled snapshots of an engine not used for this long are released.
const IDLE: Duration = Duration::from_secs(2);
/// Snapshot bytes an engine keeps pooled for reuse.
const POOLED_SNAPSHOT_BYTES: usize = 256 << 20;
/// Launches in flight hold snapshots of at most a sixteenth of their device's memory
/// ([`Engine::snapshot_cap`]), and never less than [`SNAPSHOT_CAP_MIN`].
const SNAPSHOT_SHARE: u64 = 16;
/// The least snapshot bytes in flight: the same as the host's cap of reads in flight.
const SNAPSHOT_CAP_MIN: usize = 512 << 20;

/// The entry points an engine needs after the launch call returned.
#[derive(Clone, Copy)]
struct Calls {
    set_arg: clSetKernelArg_t,
    enqueue_kernel: clEnqueueNDRangeKernel_t,
    copy: clEnqueueCopyBuffer_t,
    read: clEnqueueReadBuffer_t,
    map: clEnqueueMapBuffer_t,
    unmap: clEnqueueUnmapMemObject_t,
    create_buffer: clCreateBuffer_t,
    finish: clFinish_t,
    release_mem: clReleaseMemObject_t,
    release_kernel: clReleaseKernel_t,
    release_program: clReleaseProgram_t,
    release_queue: clReleaseCommandQueue_t,
}

#[derive(Default)]
struct EngineState {
    free_slots: Vec<u32>,
    /// Snapshot buffers not in use: (bytes, buffer).
    free_snapshots: Vec<(usize, usize)>,
    /// Mapped host memory not in use ([`mapped`]): (bytes, buffer, mapped pointer).
    free_mapped: Vec<(usize, usize, usize)>,
    /// Mapped host memory made and not released (in use and pooled).
    mapped_bytes: usize,
    in_use: usize,
    last_used: Option<Instant>,
    closed: bool,
}

/// The digest kernel of one (context, device), with its slots.
pub(super) struct Engine {
    context: usize,
    /// The device it digests on (its objects' holds of the context are registered in
    /// [`super::held`] under it).
    device: usize,
    queue: usize,
    program: usize,
    kernel: usize,
    slots: usize,
    /// Work-items per group (a power of two the kernel allows on this device).
    group: usize,
    /// Snapshot bytes launches in flight may hold ([`Engine::snapshot_cap`]).
    snapshot_cap: usize,
    calls: Calls,
    state: Mutex<EngineState>,
    /// One enqueue at a time: arguments of the shared kernel object are set, then enqueued.
    enqueue: Mutex<()>,
}

// SAFETY: OpenCL handles, thread-safe; the kernel's arguments are only set under `enqueue`.
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

/// A slot of the engine's partials buffer, given back when dropped (after the read of it
/// completed, or never used).
pub(super) struct Slot {
    engine: Arc<Engine>,
    index: u32,
    /// A command of ours may still write into it: never handed out again.
    abandoned: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut st = lock(&self.engine.state);
        if !self.abandoned {
            st.free_slots.push(self.index);
        }
        st.in_use = st.in_use.saturating_sub(1);
        st.last_used = Some(Instant::now());
    }
}

/// One side (before or after) of one buffer digested on the device: where its partials go,
/// and its snapshot when the capture may need the contents.
pub(super) struct Side {
    pub slot: Slot,
    pub snapshot: Option<Snapshot>,
    /// Its snapshot, moved into a read-ahead of the batch being written
    /// ([`super::readahead`]): the contents come from there.
    pub ahead: Option<Ahead<Snapshot>>,
}

impl Side {
    /// Partials the digest of a buffer of `bytes` wrote (groups of its engine's kernel).
    pub fn slot_groups(&self, bytes: usize) -> usize {
        self.slot.engine.groups(bytes)
    }

    /// Lets go of a side whose commands failed to enqueue part way: commands already
    /// enqueued may still use its slot and snapshot, so neither is reused, but its hold of
    /// the engine goes (the driver's own retains keep what those commands use alive).
    pub fn abandon(mut self) {
        self.slot.abandoned = true;
        if let Some(s) = &mut self.snapshot {
            s.abandoned = true;
        }
    }
}

/// Per (context, device): its engine, or None where there is none (asked once).
type Engines = HashMap<(usize, usize), Option<Arc<Engine>>>;
static ENGINES: once_cell::sync::Lazy<Mutex<Engines>> =
    once_cell::sync::Lazy::new(Default::default);
static FALLBACK_SAID: AtomicBool = AtomicBool::new(false);

/// The engine for launches on a queue with `facts` whose buffers of `bytes` are to be digested
/// on the device under the settings (None: read them back).
pub(super) fn engine_for(
    next: &Next,
    settings: &Settings,
    facts: QueueFacts,
) -> Option<Arc<Engine>> {
    engine_built_for(next, settings, facts).0
}

/// [`engine_for`], and whether this call built the engine.
pub(super) fn engine_built_for(
    next: &Next,
    settings: &Settings,
    facts: QueueFacts,
) -> (Option<Arc<Engine>>, bool) {
    let dd128 = matches!(
        settings.device_digest,
        DeviceDigest::Auto | DeviceDigest::On
    );
    if !dd128 || facts.context == 0 || facts.device == 0 {
        return (None, false);
    }
    let key = (facts.context, facts.device);
    if let Some(e) = lock(&ENGINES).get(&key) {
        return (e.clone(), false);
    }
    // No program is built inside an application's callback (undefined there), nor does such a
    // launch wait for another thread's build: it reads back, a later launch builds.
    if super::callback::inside() {
        return (None, false);
    }
    // One build at a time (a launch's, or [`super::prepare`]'s ahead of the launches): a
    // second thread meanwhile waits for it and takes it, so no engine is ever made twice and
    // thrown away.
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = lock(&BUILDING);
    if let Some(e) = lock(&ENGINES).get(&key) {
        return (e.clone(), false);
    }
    // Nothing of ours goes into a context the application is not seen to hold: nothing
    // would ever give it back.
    if !super::refcount::context_held(facts.context) {
        return (None, false);
    }
    // Under `auto` a CPU device (or one that does not say) gets no engine: its digests are
    // computed in place or its buffers read back.
    let auto = settings.device_digest == DeviceDigest::Auto;
    let made = if auto && super::device::is_cpu(next, facts.device).unwrap_or(true) {
        None
    } else {
        match Engine::build(next, facts, settings.test_digest_build_fails) {
            Ok(e) => Some(Arc::new(e)),
            Err(why) => {
                if settings.device_digest == DeviceDigest::On
                    && !FALLBACK_SAID.swap(true, Ordering::Relaxed)
                {
                    crate::say::say(&format!(
                        "device-side digests are not available on this device ({why}); buffer contents are read back instead"
                    ));
                }
                None
            }
        }
    };
    let mut engines = lock(&ENGINES);
    // Checked again under the table's lock, which [`retire`] takes after the count went to
    // zero: a context released during the build gets no entry (this launch still uses the
    // engine, which goes with it).
    if super::refcount::context_held(facts.context) {
        engines.insert(key, made.clone());
    }
    let built = made.is_some();
    (made, built)
}

/// The application is done with `context` ([`super::lifetime`]): its engines leave the
/// table, and each is released once the last launch in flight that uses it is written (at
/// once when none is). Called with no lock of ours held: releasing the last engine may
/// destroy the context, and the driver calls the application's destructor callback here.
pub(super) fn retire(context: usize) {
    let gone: Vec<Option<Arc<Engine>>> = {
        let mut engines = lock(&ENGINES);
        let keys: Vec<(usize, usize)> = engines
            .keys()
            .filter(|(c, _)| *c == context)
            .copied()
            .collect();
        keys.iter().filter_map(|k| engines.remove(k)).collect()
    };
    drop(gone);
}

/// Whether a buffer of `bytes` is digested on the device (or, on a device that computes in
/// host memory, in place: [`super::inplace`]) under the settings.
pub(super) fn wanted(settings: &Settings, bytes: usize) -> bool {
    match settings.device_digest {
        DeviceDigest::Off => false,
        DeviceDigest::On | DeviceDigest::Host => true,
        DeviceDigest::Auto => bytes >= AUTO_MIN_BYTES,
    }
}

impl Engine {
    /// Device bytes the snapshots of launches in flight may hold: a sixteenth of the device's
    /// memory, at least 512 MB. Why a share of the device's memory: snapshots are device
    /// memory the application did not ask for, and too many of them would make its own
    /// allocations fail where they would not without the capture.
    pub fn snapshot_cap(&self) -> usize {
        self.snapshot_cap
    }

    /// Builds the digest program for the queue's device, its kernel, slots and own queue
    /// (`break_build`: with a line that cannot compile, for the test of the fallback).
    fn build(next: &Next, facts: QueueFacts, break_build: bool) -> Result<Engine, String> {
        let missing = || "an entry point is missing".to_string();
        let ctx = facts.context as cl_context;
        let dev = facts.device as cl_device_id;
        let little = next.clGetDeviceInfo.and_then(|f| {
            // SAFETY: a standard info query.
            super::info::value::<cl_bool>(|s, p, r| unsafe {
                f(dev, CL_DEVICE_ENDIAN_LITTLE, s, p, r)
            })
        });
        if little != Some(CL_TRUE) {
            return Err("the device is not little-endian".into());
        }
        let memory = next.clGetDeviceInfo.and_then(|f| {
            // SAFETY: a standard info query.
            super::info::value::<cl_ulong>(|s, p, r| unsafe {
                f(dev, CL_DEVICE_GLOBAL_MEM_SIZE, s, p, r)
            })
        });
        let share = usize::try_from(memory.unwrap_or(0) / SNAPSHOT_SHARE).unwrap_or(usize::MAX);
        let calls = Calls {
            set_arg: next.clSetKernelArg,
            enqueue_kernel: next.clEnqueueNDRangeKernel,
            copy: next.clEnqueueCopyBuffer,
            read: next.clEnqueueReadBuffer,
            map: next.clEnqueueMapBuffer,
            unmap: next.clEnqueueUnmapMemObject,
            create_buffer: next.clCreateBuffer,
            finish: next.clFinish,
            release_mem: next.clReleaseMemObject,
            release_kernel: next.clReleaseKernel,
            release_program: next.clReleaseProgram,
            release_queue: next.clReleaseCommandQueue,
        };
        let create_program = next.clCreateProgramWithSource.ok_or_else(missing)?;
        let build = next.clBuildProgram.ok_or_else(missing)?;
        let create_kernel = next.clCreateKernel.ok_or_else(missing)?;
        let create_queue = next.clCreateCommandQueue.ok_or_else(missing)?;
        let create_buffer = calls.create_buffer.ok_or_else(missing)?;
        let mut e = Engine {
            context: facts.context,
            device: facts.device,
            queue: 0,
            program: 0,
            kernel: 0,
            slots: 0,
            group: 1,
            snapshot_cap: share.max(SNAPSHOT_CAP_MIN),
            calls,
            state: Mutex::new(EngineState {
                free_slots: (0..SLOTS as u32).rev().collect(),
                last_used: Some(Instant::now()),
                ..Default::default()
            }),
            enqueue: Mutex::new(()),
        };
        let mut err = CL_SUCCESS;
        let source = if break_build {
            format!("{KERNEL_SOURCE}\n#error CLTRAP_TEST_DIGEST_BUILD=fail\n")
        } else {
            KERNEL_SOURCE.to_string()
        };
        let src = source.as_ptr() as *const libc::c_char;
        let len = source.len();
        // SAFETY: our own program from one source string of `len` bytes.
        let program = e
            .made(Child::Program, || unsafe {
                create_program(ctx, 1, &src as *const _ as *mut _, &len, &mut err)
            })
            .unwrap_or(std::ptr::null_mut());
        if program.is_null() {
            return Err(format!("creating its program failed (OpenCL error {err})"));
        }
        e.program = program as usize;
        // SAFETY: build for the one device, no options, synchronously.
        let r = unsafe { build(program, 1, &dev, c"".as_ptr(), None, std::ptr::null_mut()) };
        if r != CL_SUCCESS {
            return Err(format!("its program did not build (OpenCL error {r})"));
        }
        let name = std::ffi::CString::new(KERNEL_NAME).map_err(|_| missing())?;
        // SAFETY: a kernel of our built program.
        let kernel = unsafe { create_kernel(program, name.as_ptr(), &mut err) };
        if kernel.is_null() {
            return Err(format!("creating its kernel failed (OpenCL error {err})"));
        }
        e.kernel = kernel as usize;
        let allowed = next
            .clGetKernelWorkGroupInfo
            .and_then(|f| {
                // SAFETY: a standard info query on our kernel.
                super::info::value::<usize>(|s, p, r| unsafe {
                    f(kernel, dev, CL_KERNEL_WORK_GROUP_SIZE, s, p, r)
                })
            })
            .unwrap_or(1);
        let mut group = GROUP_SIZE;
        while group > allowed.max(1) {
            group /= 2;
        }
        e.group = group.max(1);
        // SAFETY: a buffer of ours in the application's live context.
        let slots = e
            .made(Child::Buffer, || unsafe {
                create_buffer(
                    ctx,
                    CL_MEM_READ_WRITE,
                    SLOTS * SLOT_BYTES,
                    std::ptr::null_mut(),
                    &mut err,
                )
            })
            .unwrap_or(std::ptr::null_mut());
        if slots.is_null() {
            return Err(format!("creating its buffer failed (OpenCL error {err})"));
        }
        e.slots = slots as usize;
        // The arguments that never change, set once: each `clSetKernelArg` is a driver call
        // on the launching thread ([`Engine::enqueue`] sets the other three per digest).
        let set_arg = next.clSetKernelArg.ok_or_else(missing)?;
        let scratch = e.group * 16;
        // SAFETY: our own kernel; argument sizes as the kernel declares them.
        let set = unsafe {
            [
                set_arg(
                    kernel,
                    2,
                    size_of::<cl_mem>(),
                    (&slots as *const cl_mem).cast(),
                ),
                set_arg(kernel, 4, scratch, std::ptr::null()),
            ]
        };
        if let Some(bad) = set.iter().find(|r| **r != CL_SUCCESS) {
            return Err(format!(
                "setting its kernel's arguments failed (OpenCL error {bad})"
            ));
        }
        // SAFETY: a plain in-order queue of ours in the application's context.
        let q = e
            .made(Child::Queue, || unsafe {
                create_queue(ctx, dev, 0, &mut err)
            })
            .unwrap_or(std::ptr::null_mut());
        if q.is_null() {
            return Err(format!("creating its queue failed (OpenCL error {err})"));
        }
        e.queue = q as usize;
        // Idle from now on, not from before the build (a first build may take a while).
        lock(&e.state).last_used = Some(Instant::now());
        super::stats::add(&super::stats::ENGINES_BUILT, 1);
        Ok(e)
    }

    /// Creates an object of ours in the application's context with `f` (None: not made),
    /// registering its hold of the context ([`super::held`]).
    fn made<T>(&self, kind: Child, f: impl FnOnce() -> *mut T) -> Option<*mut T> {
        super::held::take(self.context, Hold::Child(kind, self.device), || {
            let o = f();
            (!o.is_null()).then_some(o)
        })
    }

    /// Releases an object of ours in the application's context with `f`, forgetting its hold.
    fn gone(&self, kind: Child, f: impl FnOnce()) {
        super::held::give(self.context, Hold::Child(kind, self.device), f);
    }

    /// Groups the kernel runs for `bytes` (each writes one 16-byte partial).
    pub fn groups(&self, bytes: usize) -> usize {
        devdigest::groups_for(bytes as u64, self.group)
    }

    /// A free slot (None: all in flight; read back instead).
    pub fn slot(self: &Arc<Engine>) -> Option<Slot> {
        let mut st = lock(&self.state);
        if st.closed {
            return None;
        }
        let index = st.free_slots.pop()?;
        st.in_use += 1;
        st.last_used = Some(Instant::now());
        Some(Slot {
            engine: self.clone(),
            index,
            abandoned: false,
        })
    }

    /// A snapshot buffer of `bytes` (pooled, or made).
    pub fn snapshot(self: &Arc<Engine>, bytes: usize) -> Option<Snapshot> {
        let mut st = lock(&self.state);
        if st.closed {
            return None;
        }
        let pooled = st
            .free_snapshots
            .iter()
            .position(|(b, _)| *b == bytes)
            .map(|i| st.free_snapshots.swap_remove(i).1);
        st.in_use += 1;
        drop(st);
        let mem = match pooled {
            Some(m) => m,
            None => {
                let mut err = CL_SUCCESS;
                let made = self.calls.create_buffer.and_then(|f| {
                    // SAFETY: a buffer of ours in the application's live context.
                    self.made(Child::Buffer, || unsafe {
                        f(
                            self.context as cl_context,
                            CL_MEM_READ_WRITE,
                            bytes.max(1),
                            std::ptr::null_mut(),
                            &mut err,
                        )
                    })
                });
                match made {
                    Some(m) if !m.is_null() => m as usize,
                    _ => {
                        let mut st = lock(&self.state);
                        st.in_use = st.in_use.saturating_sub(1);
                        return None;
                    }
                }
            }
        };
        Some(Snapshot {
            engine: self.clone(),
            mem,
            bytes,
            abandoned: false,
        })
    }

    /// Enqueues, in `queue` after `wait`: the digest of `mem` (`bytes` long) into `side`'s
    /// slot, the copy into its snapshot if any, and the read of the partials into `dst`
    /// (room for `groups(bytes)` × 16 bytes). Returns the read's event when `want_event`
    /// (its completion means all three completed). In an `in_order` queue the three follow
    /// each other without events of their own: on NVIDIA every event the capture creates and
    /// releases costs the launching thread microseconds (see `flight`'s riders), as much as a
    /// stencil step's launch. On an error, commands already enqueued may still use the side's
    /// slot and snapshot: the caller must forget them, not free them.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &self,
        queue: cl_command_queue,
        in_order: bool,
        mem: cl_mem,
        bytes: usize,
        side: &Side,
        dst: *mut c_void,
        wait: &[cl_event],
        want_event: bool,
        events: &mut Vec<cl_event>,
    ) -> Result<cl_event, cl_int> {
        let Some(run) = self.calls.enqueue_kernel else {
            return Err(CL_INVALID_OPERATION);
        };
        let groups = self.groups(bytes);
        let global = groups * self.group;
        let local = self.group;
        let len = bytes as u64;
        let out = self.slots as cl_mem;
        let index = side.slot.index;
        let kernel = self.kernel as cl_kernel;
        let chained = |r: Result<cl_event, cl_int>, events: &mut Vec<cl_event>| {
            r.inspect(|ev| {
                if !ev.is_null() {
                    events.push(*ev);
                }
            })
        };
        let digest_ev = {
            let r = self.with_digest_args(mem, len, index, || {
                super::contents::enqueued(wait, !in_order, |n, list, ev| unsafe {
                    // SAFETY: our kernel over the application's buffer in its own queue.
                    run(
                        queue,
                        kernel,
                        1,
                        std::ptr::null(),
                        &global,
                        &local,
                        n,
                        list,
                        ev,
                    )
                })
            })?;
            let ev = chained(r, events)?;
            super::stats::add(&super::stats::DEVICE_DIGESTS, 1);
            super::stats::add(&super::stats::PARTIAL_BYTES, (groups * 16) as u64);
            ev
        };
        // What the next command waits for: nothing in an in-order queue.
        let after = |ev: cl_event| if ev.is_null() { Vec::new() } else { vec![ev] };
        let mut last = digest_ev;
        if let Some(snap) = &side.snapshot {
            let copy = self.calls.copy.ok_or(CL_INVALID_OPERATION)?;
            let r = super::contents::enqueued(&after(last), !in_order, |n, list, ev| unsafe {
                // SAFETY: device-side copy of the whole buffer into our snapshot of its size.
                copy(queue, mem, snap.mem as cl_mem, 0, 0, bytes, n, list, ev)
            });
            last = chained(r, events)?;
        }
        let read = self.calls.read.ok_or(CL_INVALID_OPERATION)?;
        let offset = index as usize * SLOT_BYTES;
        let r = super::contents::enqueued(&after(last), want_event, |n, list, ev| unsafe {
            // SAFETY: `dst` has room for `groups` partials and stays allocated until the read
            // completed (the flight owns it); our own slots buffer.
            read(queue, out, CL_FALSE, offset, groups * 16, dst, n, list, ev)
        });
        match r {
            Ok(ev) => Ok(ev),
            Err(e) => Err(e),
        }
    }

    /// Under the one-enqueue-at-a-time lock: sets the kernel's per-digest arguments (the
    /// buffer `mem`, its length `len`, the slot `index`), runs `f` (the enqueue), then sets the
    /// buffer argument back to NULL, so our kernel object keeps no hold of the buffer.
    /// Err: the driver refused an argument (`f` did not run).
    fn with_digest_args<R>(
        &self,
        mem: cl_mem,
        len: u64,
        index: u32,
        f: impl FnOnce() -> R,
    ) -> Result<R, cl_int> {
        let Some(set_arg) = self.calls.set_arg else {
            return Err(CL_INVALID_OPERATION);
        };
        let kernel = self.kernel as cl_kernel;
        let _one = lock(&self.enqueue);
        // SAFETY: our own kernel; argument sizes as the kernel declares them (arguments 2 and
        // 4, the slots and the local scratch, were set once when it was built).
        let set = unsafe {
            [
                set_arg(
                    kernel,
                    0,
                    size_of::<cl_mem>(),
                    (&mem as *const cl_mem).cast(),
                ),
                set_arg(kernel, 1, size_of::<u64>(), (&len as *const u64).cast()),
                set_arg(kernel, 3, size_of::<u32>(), (&index as *const u32).cast()),
            ]
        };
        if let Some(bad) = set.iter().find(|r| **r != CL_SUCCESS) {
            return Err(*bad);
        }
        let r = f();
        let null: cl_mem = std::ptr::null_mut();
        // SAFETY: a NULL buffer argument is valid for a global pointer.
        unsafe {
            set_arg(
                kernel,
                0,
                size_of::<cl_mem>(),
                (&null as *const cl_mem).cast(),
            )
        };
        Ok(r)
    }

    /// Releases every object of the engine once (nothing of it may be in use: called when
    /// the last holder let go).
    fn close(&mut self) {
        let (snapshots, mapped) = {
            let mut st = lock(&self.state);
            st.closed = true;
            (
                std::mem::take(&mut st.free_snapshots),
                std::mem::take(&mut st.free_mapped),
            )
        };
        // Unmapped on the queue before it is finished and released.
        for (_, mem, ptr) in mapped {
            self.unmap_and_release(mem, ptr);
        }
        let c = self.calls;
        let (queue, kernel, program, slots) = (
            std::mem::take(&mut self.queue),
            std::mem::take(&mut self.kernel),
            std::mem::take(&mut self.program),
            std::mem::take(&mut self.slots),
        );
        // SAFETY: our own objects, no command of ours using them is pending (callers check).
        // The kernel (which names the slots buffer as an argument) goes before the buffers.
        unsafe {
            if queue != 0 {
                if let Some(f) = c.finish {
                    f(queue as cl_command_queue);
                }
            }
            if let (Some(rel), true) = (c.release_kernel, kernel != 0) {
                rel(kernel as cl_kernel);
            }
            if let (Some(rel), true) = (c.release_program, program != 0) {
                self.gone(Child::Program, || {
                    rel(program as cl_program);
                });
            }
            if let Some(rel) = c.release_mem {
                for (_, m) in snapshots {
                    self.gone(Child::Buffer, || {
                        rel(m as cl_mem);
                    });
                }
                if slots != 0 {
                    self.gone(Child::Buffer, || {
                        rel(slots as cl_mem);
                    });
                }
            }
            if let (Some(rel), true) = (c.release_queue, queue != 0) {
                self.gone(Child::Queue, || {
                    rel(queue as cl_command_queue);
                });
            }
        }
        // The queue is made last: an engine with one was built (and counted so).
        if queue != 0 {
            super::stats::add(&super::stats::ENGINES_RELEASED, 1);
        }
    }
}

impl Drop for Engine {
    /// The last holder let go (the table after [`retire`], or the last launch in flight that
    /// used the engine, or a build that failed part way): its objects go, and with them the
    /// engine's hold of the application's context.
    fn drop(&mut self) {
        self.close();
    }
}

/// Digest → blake3 name and size of contents the capture stored, so `full` mode reads back a
/// snapshot only for contents it has not stored yet.
static STORED: once_cell::sync::Lazy<Mutex<HashMap<String, (Hash, u64)>>> =
    once_cell::sync::Lazy::new(Default::default);

/// The blob with device digest `dd` and `size` bytes that `blobs` holds (None: not stored
/// yet by this writer).
pub(super) fn stored_blob(dd: &str, size: u64, blobs: &cltrap_capture::BlobStore) -> Option<Hash> {
    let (hash, s) = lock(&STORED).get(dd).cloned()?;
    (s == size && blobs.is_known(&hash)).then_some(hash)
}

/// Notes that contents with device digest `dd` are stored as blob `hash`.
pub(super) fn stored(dd: &str, hash: &str, size: u64) {
    lock(&STORED).insert(dd.to_string(), (hash.to_string(), size));
}

/// Releases the pooled snapshot buffers of engines not used for [`IDLE`] (called by the
/// writer thread). The engines themselves stay while the application holds their context
/// ([`retire`]): releasing one while the application keeps launching in its context is
/// exactly the driver traffic that coincided with a crash seen on NVIDIA, and an engine
/// costs its context only the slots buffer and a program.
pub(super) fn trim() {
    let engines: Vec<Arc<Engine>> = lock(&ENGINES).values().flatten().cloned().collect();
    for e in engines {
        let (freed, mapped) = {
            let mut st = lock(&e.state);
            if st.last_used.is_some_and(|t| t.elapsed() >= IDLE) {
                let mapped = std::mem::take(&mut st.free_mapped);
                st.mapped_bytes -= mapped.iter().map(|m| m.0).sum::<usize>();
                (std::mem::take(&mut st.free_snapshots), mapped)
            } else {
                (Vec::new(), Vec::new())
            }
        };
        for (_, mem, ptr) in mapped {
            e.unmap_and_release(mem, ptr);
        }
        if let Some(rel) = e.calls.release_mem {
            for (_, m) in &freed {
                // SAFETY: our own pooled buffers, not in use (taken out of the pool).
                e.gone(Child::Buffer, || unsafe {
                    rel(*m as cl_mem);
                });
            }
        }
        super::stats::add(&super::stats::SNAPSHOTS_RELEASED, freed.len() as u64);
    }
}
