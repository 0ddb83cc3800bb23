//! What the launch hook hands over to the capture pipeline: a recorded launch whose in-queue
//! reads are enqueued ([`Flight`]), its memory objects ([`Item`], [`DevItem`]) and the few
//! driver entry points needed after the launch call returned ([`Calls`]).
//!
//! Job: the data that travels from the application's thread (the plan and its reads) to the
//! writer (completion tracking and landing). It must not track completions, take the
//! registry's lock or write anything to the capture.
//!
//! Invariants:
//! * A [`Flight`] is built on the application's thread and, once submitted, used only by the
//!   thread that holds the registry's turn (the writer, or an application thread inside its
//!   `clFinish`): hence `Send`, and nothing in it is shared.
//! * A flight holds its queue ([`crate::core::queue_ref`]) from its enqueue until it is dropped,
//!   on every path (a panic while landing included).
//! * [`Calls`] are copied function pointers: they outlive the door's `next` table, and the
//!   modules they live in are kept loaded ([`Calls::of`]).

use crate::core::contents;
use crate::core::room::Landing;
use crate::Next;
use cltrap_capture::{CaptureWriter, LaunchRecord};
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Status meaning "the completion callback could not be registered: the writer must wait for
/// the event itself".
pub(super) const WAIT_ON_WRITER: cl_int = cl_int::MIN;

/// One memory object of a launch: its contents before and after the kernel.
pub(in crate::core) struct Item {
    pub mem: usize,
    /// What is read of it (its size in bytes: `shape.bytes()`).
    pub shape: crate::core::contents::Shape,
    pub pre: Landing,
    pub post: Landing,
    /// The kernel cannot change the object: contents after = before (not read again).
    pub post_is_pre: bool,
    /// Contents before are those an earlier launch left (not read; see [`crate::core::known`]).
    pub reuse: Option<crate::core::known::Reuse>,
    /// A write slipped in between deciding on `reuse` and the launch: contents before unknown.
    pub raced: bool,
    /// Where the contents after go for later launches that reuse them.
    pub cell: crate::core::known::Cell,
    /// Digested on the device ([`crate::core::digest`]): the landings hold the digest's partials.
    pub dev: Option<DevItem>,
}

/// A buffer digested on the device: the engine, and per side (None: that side is not read)
/// its slot and snapshot.
pub(in crate::core) struct DevItem {
    pub engine: std::sync::Arc<crate::core::digest::Engine>,
    pub pre: Option<crate::core::digest::Side>,
    pub post: Option<crate::core::digest::Side>,
}

/// A recorded launch whose reads are in the application's queue.
pub(in crate::core) struct Flight {
    /// None: the enqueue failed; only our resources are released.
    pub record: Option<LaunchRecord>,
    pub slots: Vec<Option<usize>>,
    pub items: Vec<Item>,
    /// Note for contents that were not read at all.
    pub missing: String,
    /// Our events (released by the writer) and temporaries (staging buffers).
    pub events: Vec<cl_event>,
    pub temps: Vec<cl_mem>,
    /// The application's queue, held ([`crate::core::queue_ref`]) while our commands are in it
    /// (null:
    /// nothing enqueued, or no reference could be had).
    pub queue: cl_command_queue,
    pub writer: &'static CaptureWriter,
    pub mode: contents::Keep,
    /// Memory reserved by [`admit`](super::admission::admit).
    pub reserved: Reservation,
    /// The driver calls the writer needs to clean up.
    pub calls: Calls,
}

impl Drop for Flight {
    /// The flight no longer needs its queue (written, or dropped on any other path, a panic
    /// while landing included): the shim's hold on it goes ([`crate::core::queue_ref`]).
    fn drop(&mut self) {
        if !self.queue.is_null() {
            crate::core::queue_ref::done(self.queue);
        }
    }
}

/// The few driver entry points used after the launch call returned (function pointers, so
/// they outlive whatever `next` table the launch came through).
#[derive(Clone, Copy)]
pub(in crate::core) struct Calls {
    pub(super) flush: clFlush_t,
    pub(super) wait: clWaitForEvents_t,
    pub(super) release_event: clReleaseEvent_t,
    pub(super) release_mem: clReleaseMemObject_t,
    pub(super) event_info: clGetEventInfo_t,
    pub(super) marker: clEnqueueMarkerWithWaitList_t,
}

impl Calls {
    /// Copies the entry points out of the door's table, and keeps the modules they (and the
    /// writer thread's own code) live in loaded: an application that `dlclose`s its loader
    /// right after its last launch must not pull code from under the writer.
    pub(in crate::core) fn of(next: &Next) -> Calls {
        static PINNED: AtomicUsize = AtomicUsize::new(0);
        let key = next.clReleaseEvent.map_or(0, |f| f as usize);
        // Read before swapping: every launch comes here, and an unconditional swap would be a
        // write to one shared cache line per launch from every launching thread.
        if key != 0
            && PINNED.load(Ordering::Relaxed) != key
            && PINNED.swap(key, Ordering::Relaxed) != key
        {
            pin_module(key);
            // The shim's own library, where the writer thread's code lives.
            pin_module(Calls::of as *const () as usize);
        }
        Calls {
            flush: next.clFlush,
            wait: next.clWaitForEvents,
            release_event: next.clReleaseEvent,
            release_mem: next.clReleaseMemObject,
            event_info: next.clGetEventInfo,
            marker: next.clEnqueueMarkerWithWaitList,
        }
    }
}

// SAFETY: the raw OpenCL handles inside are only used by the writer thread after the
// launch path handed the flight over, and OpenCL handles are thread-safe.
unsafe impl Send for Flight {}

/// Platforms whose `clFlush` runs the queued commands on the calling thread instead of
/// handing them to the device: a flush from the writer thread would run a kernel while the
/// application's own thread runs another (Oclgrind 21.10 aborts on
/// `m_kernelInvocation == NULL`), so the writer never flushes their queues; the application's
/// own `clFinish` / blocking calls run our reads there.
pub(super) const FLUSH_RUNS_ON_CALLER: &[&str] = &["Oclgrind"];

/// True when the writer thread may flush the queue of this flight (see [`FLUSH_RUNS_ON_CALLER`]).
pub(super) fn writer_may_flush(f: &Flight) -> bool {
    f.record
        .as_ref()
        .is_none_or(|r| !FLUSH_RUNS_ON_CALLER.contains(&r.device.platform.as_str()))
}

/// The final status of `ev` if it finished (complete or failed), without waiting.
pub(super) fn finished(info: clGetEventInfo_t, ev: usize) -> Option<cl_int> {
    let info = info?;
    let mut status: cl_int = CL_QUEUED;
    // SAFETY: our own live event (only the writer, the caller, releases it); a standard info
    // query into a cl_int.
    let r = unsafe {
        info(
            ev as cl_event,
            CL_EVENT_COMMAND_EXECUTION_STATUS,
            std::mem::size_of::<cl_int>(),
            (&mut status as *mut cl_int).cast(),
            std::ptr::null_mut(),
        )
    };
    (r == CL_SUCCESS && status <= CL_COMPLETE).then_some(status)
}

/// Marks the module containing `addr` `RTLD_NODELETE` (it was loaded already; this only
/// keeps a later `dlclose` from unmapping it).
fn pin_module(addr: usize) {
    let Some(path) = crate::site::module_path(addr) else {
        return;
    };
    let Ok(path) = std::ffi::CString::new(path) else {
        return;
    };
    // SAFETY: RTLD_NOLOAD never loads anything new; the handle is kept on purpose.
    unsafe {
        libc::dlopen(
            path.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
}

/// What a launch reserves while it is in flight ([`admit`](super::admission::admit)), given
/// back once it is landed. Why two amounts: a launch whose buffers are digested on the device holds device-side
/// snapshots of them, not host memory; counted against the host's cap alone, one launch of
/// clpeak's `--compute-sp` (a 264 MiB output, snapshots before and after) filled it, so every
/// launch waited until the one before was landed (49% of the capture's run in `admit` on
/// the H200).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::core) struct Reservation {
    /// Host memory of reads back and digest partials.
    pub host: usize,
    /// Device memory of snapshots.
    pub device: usize,
}

impl Reservation {
    /// Whether it reserves anything.
    pub fn is_empty(&self) -> bool {
        self.host == 0 && self.device == 0
    }
}
