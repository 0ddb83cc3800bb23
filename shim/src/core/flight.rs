//! Launches in flight: recorded launches whose in-queue reads have not completed yet, and the
//! one writer thread that turns them into capture records once they have.
//!
//! Why a separate thread: the application must never wait for the capture. The launch path
//! only enqueues non-blocking reads; the writer learns when they completed, hashes or stores
//! the bytes, appends the record and releases our events, temporaries and queue references.
//!
//! How the writer learns of completions:
//! * In-order queues: by polling. It asks the driver for the status of the newest pending
//!   launch of each queue (and bisects when that one is not done yet): in an in-order queue
//!   one completed launch means every older one completed, so a few questions cover a whole
//!   queue. Polls come every [`LANE_POLL_MIN`] while they find completions and back off to
//!   [`LANE_POLL_MAX`] while they do not. Why not callbacks: NVIDIA runs them one at a time
//!   on its event thread, and under a launch storm the capture crawled at a few hundred
//!   launches per second (our callback also takes this module's lock, so a busy lock stalled
//!   the driver's event thread). A launch found complete only by inference has its own status
//!   asked before it is written.
//! * Riders ([`rides`]): on in-order queues most launches get no event at all; the last read
//!   of every 32nd launch has one. A completed event answers for the riders of the same
//!   application thread before it in the queue (only there is the order of the driver's
//!   enqueues known); a `clFinish` or blocking read for every launch submitted before it; and
//!   when riders wait with nothing after them (the application stopped launching without
//!   waiting, or a thread waits for records), the writer enqueues a marker of its own in the
//!   queue, whose completion answers for every launch there when it was enqueued. A rider's
//!   status is that of what answered for it. Why: on NVIDIA each event the capture creates,
//!   polls and releases on this thread cost the launching thread about 6 µs.
//! * Out-of-order queues: a completion callback (a driver thread) marks the launch done and
//!   wakes the writer; no OpenCL call and no heavy work ever runs in it. When no callback came
//!   for [`POLL`] ([`POLL_BUSY`] while a thread waits for launches to be written), the writer
//!   asks the driver about the oldest launches in flight, and keeps such a launch's final
//!   event until its callback came.
//!
//! Order: launches of one in-order queue are written in the order they were enqueued (which
//! also lets a launch take its pre-launch contents from the previous one, see
//! [`super::known`]); launches of out-of-order queues as they finish.
//!
//! Bounds: host memory for reads in flight is capped ([`MAX_INFLIGHT_BYTES`]), and so is the
//! number of launches in flight ([`MAX_INFLIGHT_LAUNCHES`]): each holds driver resources
//! (events, reads, a queue reference) until written, and NVIDIA's driver stopped making
//! progress with tens of thousands of them outstanding. Over either cap a launch flushes the
//! queues with launches in flight and waits for older ones (never while a user event is
//! unset: that could deadlock the application) or, failing that, is recorded without contents
//! (over the launch cap with a user event unset: read anyway, the byte cap still holds). Every
//! [`FLUSH_EVERY`] launches of ours on a queue, the queue is flushed, because some drivers do
//! not start work that was never flushed; the writer also flushes the queues it waits on after
//! [`FLUSH_AFTER_IDLE_POLLS`] fruitless polls. At exit, pending launches are waited for
//! (bounded) so a normally ending application leaves a complete capture.
//!
//! Synchronisation points ([`super::sync`]): after the application's `clFinish` the queue is
//! idle, so the launches it finished are written right there, on the application's thread
//! ([`finished_queue`]), instead of waiting for the writer's next poll; a capture is then
//! complete up to the last `clFinish` even if the application crashes. One writer at a time
//! ([`Turn`]) keeps each queue's records in order. After a blocking read or map on an in-order
//! queue, the launches before it are handed to the writer as complete ([`completed_upto`]);
//! after `clWaitForEvents` the writer polls at once ([`nudge`]). With nothing in flight the
//! writer naps ([`DEEP_SLEEP_AFTER`]) rather than being woken by every new launch.

use super::contents;
use super::track::{lock, tables};
use crate::handles::HandleMap;
use crate::Next;
use cltrap_capture::{ArgRecord, CaptureWriter, Content, LaunchRecord};
use libc::c_void;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

/// Host bytes that reads in flight may hold before a new launch waits for older ones.
pub const MAX_INFLIGHT_BYTES: usize = 512 << 20;
/// Launches in flight (enqueued, not yet written) before a new launch with reads waits for
/// older ones to be written. Why a count and not only bytes: tiny launches hold almost no
/// memory but each holds driver events, callbacks and commands.
pub const MAX_INFLIGHT_LAUNCHES: usize = 1024;
/// Once over the launch cap, a launch waits until in-flight launches are down to this many,
/// so the application waits once per batch of written launches, not once per launch.
const RESUME_LAUNCHES: usize = MAX_INFLIGHT_LAUNCHES * 3 / 4;
/// Launches of ours enqueued on one queue between our own `clFlush` calls on it.
pub const FLUSH_EVERY: usize = 64;
/// Rider launches (no event of their own, see [`rides`]) in a row on one in-order queue
/// before a launch gets an event again.
const RIDERS_PER_EVENT: u32 = 31;
/// Launches after a waiting rider in its queue before the writer puts a marker there even
/// though launches keep coming (see [`markers_wanted`]).
const RIDERS_BEHIND: usize = 4 * (RIDERS_PER_EVENT as usize + 1);
/// How long a launch over the memory cap waits for older launches before giving up on its
/// contents.
const ADMIT_WAIT: Duration = Duration::from_secs(30);
/// How long the application's `clFinish` waits for the writer to finish a batch it is writing
/// before writing the launches the `clFinish` finished itself (normally a batch takes
/// microseconds; a writer stuck on a driver call must not hold the application).
const FINISH_WAIT: Duration = Duration::from_secs(10);
/// At exit: give up when no launch completed for this long.
const EXIT_STALL: Duration = Duration::from_secs(5);
/// How long the writer waits for a completion callback (out-of-order queues) before asking
/// the driver itself about the oldest launches in flight (callbacks that come late or never
/// must not stall capture).
const POLL: Duration = Duration::from_millis(100);
/// The shortest and longest pause between two polls of in-order queues (their launches get no
/// callback; see [`submit`]): the pause doubles while polls find nothing new, and starts short
/// again when one did.
const LANE_POLL_MIN: Duration = Duration::from_micros(200);
/// See [`LANE_POLL_MIN`].
const LANE_POLL_MAX: Duration = Duration::from_millis(20);
/// Polls that found nothing in a row before the writer flushes the queues it waits on (an
/// application that enqueues a few launches and never flushes must still be recorded).
const FLUSH_AFTER_IDLE_POLLS: u32 = 4;
/// The pause while a thread waits for launches to be written (over a cap, `clFinish`, exit).
const POLL_BUSY: Duration = Duration::from_micros(200);
/// Launches per out-of-order queue whose status one poll asks about (the oldest).
const POLL_PER_LANE: usize = 16;
/// The same while a thread waits for launches to be written.
const POLL_PER_LANE_BUSY: usize = MAX_INFLIGHT_LAUNCHES;
/// How long the writer, with nothing in flight, keeps napping for [`LANE_POLL_MAX`] at a time
/// before it sleeps until woken. While it naps, a new launch does not wake it: an application
/// that launches and waits (`clFinish`) in a loop writes its launches itself, and a wake-up per
/// launch (a futex call, and a thread switch on a busy machine) cost it more than the launch.
const DEEP_SLEEP_AFTER: Duration = Duration::from_secs(1);
/// How often the writer gives back pinned memory that is no longer used.
const TRIM_EVERY: Duration = Duration::from_secs(1);
/// How often the writer moves the capture's journal into the launch log (records appended
/// at a `clFinish` go into the journal, a file mapped into memory: see
/// `cltrap_capture::journal`).
const JOURNAL_EVERY: Duration = Duration::from_millis(20);
/// How long the writer lets completions gather before writing them.
const NAP: Duration = Duration::from_millis(1);
/// Status meaning "the completion callback could not be registered: the writer must wait for
/// the event itself".
const WAIT_ON_WRITER: cl_int = cl_int::MIN;

/// Where one read lands: host memory with room for the object's bytes, filled by the driver.
pub(super) struct Landing {
    room: Room,
    /// Why the read could not even be enqueued (None: enqueued).
    pub err: Option<String>,
}

impl Drop for Landing {
    /// A large heap landing goes back to [`spare`] for the next launch's read.
    fn drop(&mut self) {
        if let Room::Heap(v) = &mut self.room {
            spare::give(std::mem::take(v));
        }
    }
}

/// Large heap landings kept for reuse. Why: a read of a multi-megabyte buffer into fresh
/// memory page-faults on every page as the driver writes it (the kernel zeroes each one
/// first): a tenth of the capture's time for a 16 MB buffer read at every launch on a CPU
/// device. Bounded ([`spare::MAX_BYTES`]) and given back when unused for [`TRIM_EVERY`].
pub(super) mod spare {
    use super::super::track::lock;
    use std::sync::Mutex;
    use std::time::Instant;

    /// Landings smaller than this are not kept (the allocator serves them well).
    const MIN_BYTES: usize = 1 << 20;
    /// Most bytes kept.
    pub(super) const MAX_BYTES: usize = 256 << 20;

    struct Spares {
        vecs: Vec<Vec<u8>>,
        bytes: usize,
        used: Option<Instant>,
    }

    static SPARES: Mutex<Spares> = Mutex::new(Spares {
        vecs: Vec::new(),
        bytes: 0,
        used: None,
    });

    /// An empty vector with room for `n` bytes: a kept one, else fresh room whose pages
    /// several threads touched first. Why: a driver copies a read into pageable memory on
    /// one thread, and in fresh memory every page faults there first (on the H200,
    /// buffer-heavy's snapshots came back at about 2.6 GB/s, where a read into mapped memory
    /// runs at 10–12 GB/s). For the threads that write the capture (the writer, a snapshot
    /// reader, an application's thread inside its `clFinish`), never for a launching thread:
    /// the touching would cost it what it saves the driver.
    pub(in crate::core) fn mapped(n: usize) -> Vec<u8> {
        use cltrap_capture::parallel::{map_each, PARALLEL_MIN};
        const PIECE: usize = 1 << 20;
        if let Some(v) = take(n) {
            return v;
        }
        let mut v: Vec<u8> = Vec::with_capacity(n);
        let base = v.as_mut_ptr() as usize;
        map_each(n.div_ceil(PIECE), n >= PARALLEL_MIN, |i| {
            let at = i * PIECE;
            // SAFETY: bytes `at..at + len` lie in `v`'s allocation of `n` bytes; each piece
            // is written by one thread.
            unsafe { std::ptr::write_bytes((base + at) as *mut u8, 0, PIECE.min(n - at)) };
        });
        v
    }

    /// An empty vector with room for `n` bytes (at most twice that), when one is kept.
    pub(super) fn take(n: usize) -> Option<Vec<u8>> {
        if n < MIN_BYTES {
            return None;
        }
        let mut s = lock(&SPARES);
        let i = (0..s.vecs.len())
            .filter(|i| (n..=n.saturating_mul(2)).contains(&s.vecs[*i].capacity()))
            .min_by_key(|i| s.vecs[*i].capacity())?;
        let v = s.vecs.swap_remove(i);
        s.bytes -= v.capacity();
        s.used = Some(Instant::now());
        Some(v)
    }

    /// Keeps `v` for a later landing when it is large and there is room.
    pub(in crate::core) fn give(mut v: Vec<u8>) {
        let cap = v.capacity();
        if cap < MIN_BYTES {
            return;
        }
        v.clear();
        let mut s = lock(&SPARES);
        if s.bytes + cap <= MAX_BYTES {
            s.bytes += cap;
            s.vecs.push(v);
        }
    }

    /// Gives every kept landing back when none was taken for `idle`.
    pub(super) fn trim(idle: std::time::Duration) {
        let freed = {
            let mut s = lock(&SPARES);
            if s.used.is_some_and(|t| t.elapsed() < idle) {
                return;
            }
            s.bytes = 0;
            std::mem::take(&mut s.vecs)
        };
        drop(freed);
    }
}

/// Pinned memory where the driver profits from it ([`super::pinned`]), else the heap.
enum Room {
    /// Capacity = the object's size; the length is set once the read completed.
    Heap(Vec<u8>),
    Pinned(super::pinned::Chunk),
}

impl Landing {
    /// Room for `n` bytes (not initialised: the driver writes all of them before we look),
    /// from `pool` when it has some.
    pub fn with_room(n: usize, pool: Option<&std::sync::Arc<super::pinned::Pool>>) -> Landing {
        let room = match pool.and_then(|p| p.take(n)) {
            Some(chunk) => Room::Pinned(chunk),
            None => Room::Heap(spare::take(n).unwrap_or_else(|| Vec::with_capacity(n))),
        };
        Landing { room, err: None }
    }

    /// Where the driver writes.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match &mut self.room {
            Room::Heap(v) => v.as_mut_ptr(),
            Room::Pinned(c) => c.as_mut_ptr(),
        }
    }

    /// The heap memory holding the `n` bytes the read wrote, taken out (None: pinned memory,
    /// which goes back to its pool).
    ///
    /// # Safety
    /// A read of `n` bytes into this landing has completed.
    unsafe fn take_filled(&mut self, n: usize) -> Option<Vec<u8>> {
        match &mut self.room {
            Room::Heap(v) => {
                // SAFETY: the caller's read of `n` bytes (at most the capacity) completed.
                unsafe { v.set_len(n) };
                Some(std::mem::take(v))
            }
            Room::Pinned(_) => None,
        }
    }

    /// The `n` bytes the read wrote.
    ///
    /// # Safety
    /// A read of `n` bytes into this landing has completed.
    unsafe fn filled(&mut self, n: usize) -> &[u8] {
        match &mut self.room {
            Room::Heap(v) => {
                // SAFETY: the caller's read of `n` bytes (the capacity) completed.
                unsafe { v.set_len(n) };
                v
            }
            // SAFETY: as above.
            Room::Pinned(c) => unsafe { c.bytes(n) },
        }
    }
}

/// One memory object of a launch: its contents before and after the kernel.
pub(super) struct Item {
    pub mem: usize,
    /// What is read of it (its size in bytes: `shape.bytes()`).
    pub shape: super::contents::Shape,
    pub pre: Landing,
    pub post: Landing,
    /// The kernel cannot change the object: contents after = before (not read again).
    pub post_is_pre: bool,
    /// Contents before are those an earlier launch left (not read; see [`super::known`]).
    pub reuse: Option<super::known::Reuse>,
    /// A write slipped in between deciding on `reuse` and the launch: contents before unknown.
    pub raced: bool,
    /// Where the contents after go for later launches that reuse them.
    pub cell: super::known::Cell,
    /// Digested on the device ([`super::digest`]): the landings hold the digest's partials.
    pub dev: Option<DevItem>,
}

/// A buffer digested on the device: the engine, and per side (None: that side is not read)
/// its slot and snapshot.
pub(super) struct DevItem {
    pub engine: std::sync::Arc<super::digest::Engine>,
    pub pre: Option<super::digest::Side>,
    pub post: Option<super::digest::Side>,
}

/// A recorded launch whose reads are in the application's queue.
pub(super) struct Flight {
    /// None: the enqueue failed; only our resources are released.
    pub record: Option<LaunchRecord>,
    pub slots: Vec<Option<usize>>,
    pub items: Vec<Item>,
    /// Note for contents that were not read at all.
    pub missing: String,
    /// Our events (released by the writer) and temporaries (staging buffers).
    pub events: Vec<cl_event>,
    pub temps: Vec<cl_mem>,
    /// The application's queue, held ([`super::queue_ref`]) while our commands are in it (null:
    /// nothing enqueued, or no reference could be had).
    pub queue: cl_command_queue,
    pub writer: &'static CaptureWriter,
    pub mode: contents::Keep,
    /// Host bytes reserved by [`admit`].
    pub reserved: usize,
    /// The driver calls the writer needs to clean up.
    pub calls: Calls,
}

impl Drop for Flight {
    /// The flight no longer needs its queue (written, or dropped on any other path, a panic
    /// while landing included): the shim's hold on it goes ([`super::queue_ref`]).
    fn drop(&mut self) {
        if !self.queue.is_null() {
            super::queue_ref::done(self.queue);
        }
    }
}

/// The few driver entry points used after the launch call returned (function pointers, so
/// they outlive whatever `next` table the launch came through).
#[derive(Clone, Copy)]
pub(super) struct Calls {
    flush: clFlush_t,
    wait: clWaitForEvents_t,
    release_event: clReleaseEvent_t,
    release_mem: clReleaseMemObject_t,
    event_info: clGetEventInfo_t,
    marker: clEnqueueMarkerWithWaitList_t,
}

impl Calls {
    /// Copies the entry points out of the door's table, and keeps the modules they (and the
    /// writer thread's own code) live in loaded: an application that `dlclose`s its loader
    /// right after its last launch must not pull code from under the writer.
    pub fn of(next: &Next) -> Calls {
        static PINNED: AtomicUsize = AtomicUsize::new(0);
        let key = next.clReleaseEvent.map_or(0, |f| f as usize);
        // Read before swapping: every launch comes here, and an unconditional swap would be a
        // write to one shared cache line per launch from every launching thread.
        if key != 0
            && PINNED.load(Ordering::Relaxed) != key
            && PINNED.swap(key, Ordering::Relaxed) != key
        {
            pin_module(key);
            pin_module(writer_loop as *const () as usize);
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

struct Slot {
    flight: Option<Flight>,
    lane: usize,
    in_order: bool,
    done: Option<cl_int>,
    final_event: usize,
    /// Found complete by [`poll`], so its callback may still come: the final event is
    /// released only after it did (a driver may use the event while calling back).
    polled: bool,
    /// A completion callback was registered (out-of-order queues only).
    callback: bool,
    /// Taken for complete because a later launch of its in-order queue completed: the writer
    /// asks for its own status before trusting it.
    inferred: bool,
    /// A rider: no event of its own (in-order queues only); complete once a later event of
    /// its queue that answers for it completed (see [`rides`]).
    rider: bool,
    /// The application thread that enqueued it (an event answers for the riders of its own
    /// thread only: only there is the order of the driver's enqueues known).
    thread: u64,
}

/// A marker the writer put into an in-order queue whose riders had nothing after them to
/// answer for them: its completion means every launch in the lane when it was enqueued
/// completed.
struct Marker {
    event: usize,
    /// The tickets of the lane when the marker was enqueued.
    covers: Vec<u64>,
    info: clGetEventInfo_t,
    release: clReleaseEvent_t,
}

#[derive(Default)]
struct State {
    slots: HandleMap<u64, Slot>,
    /// Tickets per queue, in submission order, until written.
    lanes: HandleMap<usize, VecDeque<u64>>,
    /// Completed tickets the writer has not looked at yet.
    ready: Vec<u64>,
    bytes: usize,
    writer_sleeping: bool,
    /// Threads waiting for records to be written (clFinish, exit, memory cap): while there
    /// are any, the writer does not nap.
    waiters: usize,
    /// Per queue: launches with reads of ours enqueued since we last flushed it.
    unflushed: HandleMap<usize, usize>,
    /// A wait in [`admit`] timed out and nothing was written since: later launches do not
    /// wait again (one stall must not cost every following launch the full wait).
    stalled: bool,
    /// Written launches found complete by [`poll`] whose callback has not come yet: ticket →
    /// (final event, its release), released once the callback came.
    late: HandleMap<u64, (usize, clReleaseEvent_t)>,
    /// Final events whose late callback came: the writer releases them (outside the lock).
    to_release: Vec<(usize, clReleaseEvent_t)>,
    /// Someone (the writer thread, or an application thread right after its `clFinish`) is
    /// turning completed launches into records, from taking them out of the slots until they
    /// are removed: one at a time, so launches of one queue are written in order whoever
    /// writes them. See [`Turn`].
    writing: bool,
    /// The application waited for events: the writer polls at once (see [`nudge`]).
    poll_now: bool,
    /// Per in-order queue and launching thread: riders submitted since that thread's last
    /// launch with an event there.
    riders: HandleMap<usize, Vec<(u64, u32)>>,
    /// In-order queues where the writer's marker was refused: no more riders there.
    no_markers: crate::handles::HandleSet<usize>,
    /// Per in-order queue: the writer's marker there, while it has not completed.
    markers: HandleMap<usize, Marker>,
    /// Threads in [`wait_progress`].
    progress_waiters: usize,
    /// The writer sleeps deeply: nothing was in flight for [`DEEP_SLEEP_AFTER`], so only a
    /// wake-up brings it back (see [`wake_idle_writer`]).
    writer_deep: bool,
}

/// Waits on [`Registry::progress`] for at most `dur`, counted in
/// [`State::progress_waiters`] so that writing a batch wakes nobody (a futex call per
/// `clFinish`) when nobody waits.
fn wait_progress(
    reg: &'static Registry,
    mut st: std::sync::MutexGuard<'static, State>,
    dur: Duration,
) -> std::sync::MutexGuard<'static, State> {
    st.progress_waiters += 1;
    let mut st = reg
        .progress
        .wait_timeout(st, dur)
        .map(|(g, _)| g)
        .unwrap_or_else(|p| p.into_inner().0);
    st.progress_waiters -= 1;
    st
}

/// Wakes the threads waiting for progress, if any (the caller holds the state lock).
fn progress_made(reg: &Registry, st: &State) {
    if st.progress_waiters > 0 {
        reg.progress.notify_all();
    }
}

struct Registry {
    state: Mutex<State>,
    /// Wakes the writer.
    work: Condvar,
    /// Wakes those waiting for launches to be written (clFinish, exit, memory cap).
    progress: Condvar,
}

static REGISTRY: once_cell::sync::Lazy<Registry> = once_cell::sync::Lazy::new(|| Registry {
    state: Mutex::new(State::default()),
    work: Condvar::new(),
    progress: Condvar::new(),
});
static TICKETS: AtomicU64 = AtomicU64::new(1);
static START: Once = Once::new();

/// Why [`admit`] refused a launch's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// Reads in flight held [`MAX_INFLIGHT_BYTES`] of host memory.
    Bytes,
    /// [`MAX_INFLIGHT_LAUNCHES`] launches were in flight.
    Launches,
}

/// Reserves host memory (and a place among the launches in flight) for a launch's reads.
/// Over a cap it flushes the queues with launches in flight and waits (bounded) for older
/// launches to be written. Err: the contents must not be read (over a cap, and waiting is
/// impossible or did not help).
pub(super) fn admit(bytes: usize) -> Result<(), Full> {
    let _admit = super::stats::span(super::stats::Phase::Admit);
    let reg = &*REGISTRY;
    let deadline = Instant::now() + ADMIT_WAIT;
    let mut st = lock(&reg.state);
    let mut waiting = false;
    let verdict = loop {
        let bytes_ok = st.bytes.saturating_add(bytes) <= MAX_INFLIGHT_BYTES || st.slots.is_empty();
        // Once waiting for the launch cap, wait for a batch to be written (hysteresis).
        let launch_cap = if waiting {
            RESUME_LAUNCHES
        } else {
            MAX_INFLIGHT_LAUNCHES - 1
        };
        let launches_ok = st.slots.len() <= launch_cap;
        if bytes_ok && launches_ok {
            break Ok(());
        }
        if tables().user_events_pending() {
            // An unset user event may hold the launches in flight back: never wait. Over the
            // launch cap only, read anyway (the byte cap still bounds the memory).
            break if bytes_ok { Ok(()) } else { Err(Full::Bytes) };
        }
        if st.stalled || Instant::now() >= deadline {
            st.stalled = true;
            break Err(if bytes_ok {
                Full::Launches
            } else {
                Full::Bytes
            });
        }
        if !waiting {
            // While someone waits, the writer does not nap.
            waiting = true;
            st.waiters += 1;
            reg.work.notify_one();
        }
        let queues = queues_of(&st);
        drop(st);
        // No lock held while calling into the driver.
        flush(&queues);
        st = lock(&reg.state);
        st = wait_progress(reg, st, Duration::from_millis(50));
    };
    if waiting {
        st.waiters = st.waiters.saturating_sub(1);
    }
    if verdict.is_ok() {
        st.bytes += bytes;
    }
    verdict
}

/// Gives back memory reserved by [`admit`] for a launch that will not be submitted.
pub(super) fn unreserve(bytes: usize) {
    let mut st = lock(&REGISTRY.state);
    st.bytes = st.bytes.saturating_sub(bytes);
}

/// Whether the next launch on in-order `queue` (of a device on `platform`) rides: enqueues
/// its reads without any event. Why: on NVIDIA every event the capture creates, asks about
/// and releases on the writer thread costs the launching thread about 6 µs (the driver's
/// calls contend), as much as the launch itself (`bench/read_storm.c`); with an event on
/// every [`RIDERS_PER_EVENT`] + 1-th launch only, one completed event answers for the
/// riders of its thread before it, a `clFinish` or blocking read for every launch before
/// it, and the writer puts a marker of its own after riders nothing else answers for.
/// Never on platforms where the writer may not flush (the marker would not run).
/// Counted per queue and launching thread (an event answers for the riders of its own thread
/// only); never where the writer could not put a marker (no `clEnqueueMarkerWithWaitList`, or
/// one was refused in that queue).
pub(super) fn rides(next: &Next, queue: cl_command_queue, platform: &str, thread: u64) -> bool {
    if FLUSH_RUNS_ON_CALLER.contains(&platform) || next.clEnqueueMarkerWithWaitList.is_none() {
        return false;
    }
    let mut st = lock(&REGISTRY.state);
    if st.no_markers.contains(&(queue as usize)) {
        return false;
    }
    let counts = st.riders.entry(queue as usize).or_default();
    let i = match counts.iter().position(|(t, _)| *t == thread) {
        Some(i) => i,
        None => {
            counts.push((thread, 0));
            counts.len() - 1
        }
    };
    let n = &mut counts[i].1;
    if *n >= RIDERS_PER_EVENT {
        *n = 0;
        return false;
    }
    *n += 1;
    true
}

/// Hands a launch over. With `final_event`, it is written once that event completes (the
/// event is one of the flight's own); a `rider` once a later event of its queue answers for
/// it ([`rides`]); with neither, at once (after earlier launches of its queue). `thread`: the
/// launching thread (an event answers for the riders of its own thread).
pub(super) fn submit(
    next: &Next,
    flight: Flight,
    queue: cl_command_queue,
    in_order: bool,
    final_event: cl_event,
    rider: bool,
    thread: u64,
) {
    START.call_once(start);
    // Release: a thread that sees this ticket taken (`current_ticket`) also sees the enqueues
    // this launch made before it.
    let ticket = TICKETS.fetch_add(1, Ordering::AcqRel);
    let reg = &*REGISTRY;
    // In-order queues: no callback. A driver may deliver callbacks late or one at a time
    // under a storm (NVIDIA: the capture crawled at a few hundred launches per second); the
    // writer polls the newest launch of each in-order queue instead, which answers for all
    // older ones at once.
    let callback = !in_order;
    let flush_now = {
        let mut st = lock(&reg.state);
        let was_idle = st.slots.is_empty();
        let untracked = final_event.is_null() && !rider;
        st.slots.insert(
            ticket,
            Slot {
                flight: Some(flight),
                lane: queue as usize,
                in_order,
                done: untracked.then_some(CL_COMPLETE),
                final_event: final_event as usize,
                polled: false,
                callback: callback && !final_event.is_null(),
                inferred: false,
                rider,
                thread,
            },
        );
        st.lanes
            .entry(queue as usize)
            .or_default()
            .push_back(ticket);
        if untracked {
            st.ready.push(ticket);
            wake_idle_writer(reg, &mut st);
            false
        } else {
            if !callback && was_idle {
                wake_idle_writer(reg, &mut st);
            }
            let n = st.unflushed.entry(queue as usize).or_insert(0);
            *n += 1;
            let due = *n >= FLUSH_EVERY;
            if due {
                *n = 0;
            }
            due
        }
    };
    if untracked_now(final_event, rider) {
        return;
    }
    if callback && !final_event.is_null() {
        register_callback(next, final_event, ticket);
    }
    if flush_now {
        // Some drivers start unflushed work late or never: make ours (and what the
        // application enqueued before it) run, so it completes. No lock held.
        if let Some(f) = next.clFlush {
            // SAFETY: the application's live queue (we hold a reference for this launch).
            unsafe { f(queue) };
        }
    }
}

/// A launch with neither an event nor a rider's place: written at once.
fn untracked_now(final_event: cl_event, rider: bool) -> bool {
    final_event.is_null() && !rider
}

/// Asks for a completion callback on `final_event` (or, failing that, has the writer wait for
/// the event itself).
fn register_callback(next: &Next, final_event: cl_event, ticket: u64) {
    // SAFETY: our own live event; the callback only reads `user_data` as a ticket number.
    let registered = next.clSetEventCallback.map(|f| unsafe {
        f(
            final_event,
            CL_COMPLETE,
            Some(completed),
            ticket as usize as *mut c_void,
        )
    });
    if registered != Some(CL_SUCCESS) {
        mark_done(ticket, WAIT_ON_WRITER);
    }
}

/// The completion callback: runs on a driver thread, so it only marks the launch done.
unsafe extern "C" fn completed(_event: cl_event, status: cl_int, user_data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| mark_done(user_data as usize as u64, status));
}

fn mark_done(ticket: u64, status: cl_int) {
    let reg = &*REGISTRY;
    let mut st = lock(&reg.state);
    if let Some(slot) = st.slots.get_mut(&ticket) {
        // The callback came (or none will): nothing to keep for it.
        slot.polled = false;
        if slot.done.is_none() {
            slot.done = Some(status);
            st.ready.push(ticket);
            wake_writer(reg, &mut st);
        }
    }
    // Written already after a poll found it complete: its final event can go now.
    if let Some(ev) = st.late.remove(&ticket) {
        st.to_release.push(ev);
    }
}

fn wake_writer(reg: &Registry, st: &mut State) {
    if st.writer_sleeping {
        st.writer_sleeping = false;
        reg.work.notify_one();
    }
}

/// A launch was submitted: wakes the writer only from a deep sleep (it notices launches within
/// [`LANE_POLL_MAX`] otherwise).
fn wake_idle_writer(reg: &Registry, st: &mut State) {
    if st.writer_deep {
        wake_writer(reg, st);
    }
}

/// After the application's `clFinish(queue)` returned: every command enqueued on `queue`
/// before it has completed, our reads included, so the launches submitted on `queue` before
/// ticket `upto` ([`current_ticket`] when the call began) are written right here, on the application's thread, instead of waiting for
/// the writer thread to notice them (its next poll could be up to [`LANE_POLL_MAX`] away, and
/// every hand-over costs two thread wake-ups). When the writer is busy with earlier launches
/// of the same queue, this waits for that batch only (it is being written, not polled).
/// Returns once those launches are in the capture, so it is complete up to the application's
/// last `clFinish` even if the application then crashes.
pub(super) fn finished_queue(queue: cl_command_queue, upto: u64) {
    if !available() {
        return;
    }
    let reg = &*REGISTRY;
    let lane = queue as usize;
    {
        let st = lock(&reg.state);
        let pending = st.lanes.get(&lane).and_then(|l| l.front());
        if pending.is_none_or(|t| *t >= upto) {
            return;
        }
    }
    let deadline = Instant::now() + FINISH_WAIT;
    let Some((turn, mut st)) = Turn::take(reg, Some(deadline)) else {
        return;
    };
    let batch = take_finished_lane(&mut st, lane, upto);
    drop(st);
    super::stats::add(&super::stats::FINISH_WRITTEN, batch.len() as u64);
    write_batch(reg, batch);
    drop(turn);
}

/// [`finished_queue`] under `--at-finish hand`: the same launches are marked complete and
/// handed to the writer, which writes them at its next turn (within [`NAP`] while it keeps
/// up with the application); the application's thread does not write them. Why: on the H200
/// writing the record was a third of what the capture added to a launch followed by
/// `clFinish`.
pub(super) fn finished_queue_handed(queue: cl_command_queue, upto: u64) {
    hand_to_writer(queue, upto, |s| {
        let marked = s.finished_by_idle_queue();
        if marked {
            super::stats::add(&super::stats::FINISH_HANDED, 1);
        }
        Some(marked)
    });
}

/// Hands the launches of `queue` before ticket `upto` that `mark` marked complete to the
/// writer and wakes it. `mark` says whether it marked its launch, or None to stop there
/// without waking the writer (a launch whose completion the caller cannot vouch for).
fn hand_to_writer(queue: cl_command_queue, upto: u64, mark: impl Fn(&mut Slot) -> Option<bool>) {
    if !available() {
        return;
    }
    let reg = &*REGISTRY;
    let mut st = lock(&reg.state);
    let State {
        slots,
        lanes,
        ready,
        ..
    } = &mut *st;
    let Some(lane) = lanes.get(&(queue as usize)) else {
        return;
    };
    let mut any = false;
    for &t in lane.iter().take_while(|t| **t < upto) {
        let Some(s) = slots.get_mut(&t) else { continue };
        let Some(marked) = mark(s) else { return };
        if marked {
            ready.push(t);
            any = true;
        }
    }
    if any {
        wake_writer(reg, &mut st);
    }
}

/// The right to write records (see [`State::writing`]), given back when dropped.
struct Turn(&'static Registry);

thread_local! {
    /// This thread holds the [`Turn`] (an application callback the driver runs on it while it
    /// releases our objects must not wait for the turn: [`settle`] skips).
    static HOLDS_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Turn {
    /// Waits for the turn (until `deadline`, when given: None then) and returns it with the
    /// state still locked.
    fn take(
        reg: &'static Registry,
        deadline: Option<Instant>,
    ) -> Option<(Turn, std::sync::MutexGuard<'static, State>)> {
        let mut st = lock(&reg.state);
        while st.writing {
            let wait = match deadline {
                Some(d) => d.checked_duration_since(Instant::now())?,
                None => POLL,
            };
            st = wait_progress(reg, st, wait);
        }
        st.writing = true;
        HOLDS_TURN.with(|h| h.set(true));
        Some((Turn(reg), st))
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        HOLDS_TURN.with(|h| h.set(false));
        let mut st = lock(&self.0.state);
        st.writing = false;
        progress_made(self.0, &st);
    }
}
/// After a blocking command on `queue` returned: on an in-order queue every launch submitted
/// on it before ticket `upto` ([`current_ticket`] when the call began) completed. They are handed to the writer as complete at once,
/// without a driver question or a poll (their own status is still asked before they are
/// written); the caller does not wait for them to be written.
pub(super) fn completed_upto(queue: cl_command_queue, upto: u64) {
    hand_to_writer(queue, upto, |s| {
        if !s.in_order {
            return None;
        }
        let marked = s.done.is_none() && (s.final_event != 0 || s.rider);
        if marked {
            s.done = Some(CL_COMPLETE);
            s.inferred = !s.rider;
        }
        Some(marked)
    });
}

/// After the application waited for events: some launches in flight may have completed, so
/// the writer asks the driver now instead of at its next (backed-off) poll.
pub(super) fn nudge() {
    if !available() {
        return;
    }
    let reg = &*REGISTRY;
    let mut st = lock(&reg.state);
    if st.slots.is_empty() {
        return;
    }
    st.poll_now = true;
    wake_writer(reg, &mut st);
}

/// Before the application reads a reference count: waits for a batch the writer is writing,
/// then asks the driver which launches in flight completed and writes them on the caller's
/// thread, so the shim no longer holds their events or anything else of theirs (drivers
/// count an event in its queue's references). Launches whose commands have not completed
/// keep theirs. Waits for the turn at most [`FINISH_WAIT`], as `clFinish` does.
pub(super) fn settle() {
    if !available() || HOLDS_TURN.with(|h| h.get()) {
        return;
    }
    let reg = &*REGISTRY;
    {
        let st = lock(&reg.state);
        if st.slots.is_empty() && !st.writing && st.to_release.is_empty() {
            return;
        }
    }
    let deadline = Instant::now() + FINISH_WAIT;
    let Some((turn, st)) = Turn::take(reg, Some(deadline)) else {
        return;
    };
    let probes = probes(&st, true, true);
    drop(st);
    let finished = poll(&probes);
    let mut st = lock(&reg.state);
    for (ticket, status, inferred) in &finished {
        if let Some(slot) = st.slots.get_mut(ticket) {
            if slot.done.is_none() {
                slot.done = Some(*status);
                slot.polled = slot.callback;
                slot.inferred = *inferred;
                st.ready.push(*ticket);
            }
        }
    }
    prove_riders(&mut st, &finished);
    let batch = take_batch(&mut st);
    let late = std::mem::take(&mut st.to_release);
    drop(st);
    write_batch(reg, batch);
    for (ev, release) in late {
        if let Some(rel) = release {
            // SAFETY: our own final event, kept until its late callback came.
            unsafe { rel(ev as cl_event) };
        }
    }
    drop(turn);
}

/// Takes the launches of `lane` before ticket `upto`, oldest first, marking those nobody
/// reported yet as complete (the caller knows the queue is idle; [`land`] still asks each
/// launch's own status, since a failed command also ends a `clFinish`).
fn take_finished_lane(st: &mut State, lane: usize, upto: u64) -> Batch {
    let State {
        slots, late, lanes, ..
    } = st;
    let Some(lane) = lanes.get(&lane) else {
        return Batch::new();
    };
    let mut batch = Batch::new();
    for &t in lane.iter().take_while(|t| **t < upto) {
        let Some(s) = slots.get_mut(&t) else { break };
        s.finished_by_idle_queue();
        if !take_one(slots, late, t, &mut batch) {
            break;
        }
    }
    batch
}

impl Slot {
    /// Marks a launch of a queue the application found idle (`clFinish` returned) complete;
    /// false when it was known complete already. Its own status is still asked when it is
    /// landed: a failed command also ends a `clFinish`.
    fn finished_by_idle_queue(&mut self) -> bool {
        if self.done.is_some() {
            return false;
        }
        self.done = Some(CL_COMPLETE);
        // Its callback (out-of-order queues) may still come: keep its final event.
        self.polled = self.callback;
        // A rider has no status of its own to ask.
        self.inferred = !self.rider;
        true
    }
}

/// Lands a batch of completed flights, appends their records in one write and forgets them.
/// The caller holds the [`Turn`].
fn write_batch(reg: &Registry, batch: Batch) {
    if batch.is_empty() {
        return;
    }
    let mut batch = batch;
    let ahead = read_ahead(&mut batch);
    let mut written = Vec::with_capacity(batch.len());
    let mut records = Vec::with_capacity(batch.len());
    let mut writer = None;
    for (ticket, lane, flight, status, event, inferred) in batch {
        let reserved = flight.reserved;
        writer = Some(flight.writer);
        let landed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _land = super::stats::span(super::stats::Phase::Land);
            land(flight, status, event as cl_event, inferred)
        }));
        if let Ok(Some(record)) = landed {
            records.push(record);
        }
        // Its reads' memory is free now: a launch waiting for room goes on while the rest
        // of the batch is stored (given back at the batch's end, a CPU device sat idle
        // while the writer stored a batch, and the writer while the device ran the next).
        if reserved > 0 {
            let mut st = lock(&reg.state);
            st.bytes = st.bytes.saturating_sub(reserved);
            progress_made(reg, &st);
        }
        written.push((ticket, lane));
    }
    if let Some((ra, _)) = &ahead {
        ra.cancel_rest();
    }
    // One write for the whole batch.
    if let Some(w) = writer {
        if crate::sink::healthy() {
            let _append = super::stats::span(super::stats::Phase::Append);
            if let Err(e) = w.append_numbered(records) {
                crate::sink::fail(&e);
            }
        }
    }
    // The reader ends after the read it was doing (no longer needed by anyone).
    if let Some((_, Some(reader))) = ahead {
        let _ = reader.join();
    }
    let mut st = lock(&reg.state);
    st.stalled = false;
    let mut spent = Vec::new();
    for (ticket, lane) in written {
        st.slots.remove(&ticket);
        if let Some(l) = st.lanes.get_mut(&lane) {
            if l.front() == Some(&ticket) {
                l.pop_front();
            } else if let Some(i) = l.iter().position(|t| *t == ticket) {
                l.remove(i);
            }
            if l.is_empty() {
                st.lanes.remove(&lane);
                st.unflushed.remove(&lane);
                st.riders.remove(&lane);
                // Nothing left for the writer's marker to answer for.
                spent.extend(st.markers.remove(&lane));
            }
        }
    }
    progress_made(reg, &st);
    drop(st);
    for m in spent {
        m.give_back();
    }
}

/// Starts reading the batch's device-side snapshots back on a thread of their own
/// ([`super::readahead`]) when it has two or more contents to read that the capture has not
/// stored (a single one gains nothing from another thread): those whose digests are neither
/// stored nor an earlier side's of the batch, up to [`super::readahead::AHEAD_MAX`] bytes.
/// Their sides then take the contents from the read-ahead. Returns it and its reader.
fn read_ahead(
    batch: &mut Batch,
) -> Option<(
    std::sync::Arc<super::readahead::ReadAhead>,
    Option<std::thread::JoinHandle<()>>,
)> {
    use super::digest::Side;
    let mut wanted: Vec<(&mut Side, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0usize;
    for (_, _, f, status, event, inferred) in batch.iter_mut() {
        let snapshots = f.items.iter().any(|i| {
            i.dev.as_ref().is_some_and(|d| {
                [&d.pre, &d.post]
                    .into_iter()
                    .any(|s| s.as_ref().is_some_and(|s| s.snapshot.is_some()))
            })
        });
        if *status != CL_COMPLETE || f.record.is_none() || !snapshots {
            continue;
        }
        // A completion inferred from a later launch of the queue may be wrong (a driver that
        // ran the queue's commands in another order than their tickets): `land` asks the
        // launch's own event and waits for it before reading anything, so its contents are
        // read ahead only once that event says it completed (and `land` need not ask again).
        if *inferred && *event != 0 {
            if finished(f.calls.event_info, *event) != Some(CL_COMPLETE) {
                continue;
            }
            *inferred = false;
        }
        let blobs = &f.writer.blobs;
        for item in f.items.iter_mut() {
            let bytes = item.shape.bytes();
            let Some(dev) = item.dev.as_mut() else {
                continue;
            };
            let pre = (item.reuse.is_none(), &mut item.pre, dev.pre.as_mut());
            let post = (!item.post_is_pre, &mut item.post, dev.post.as_mut());
            for (read, landing, side) in [pre, post] {
                let Some(side) = side.filter(|s| read && s.snapshot.is_some()) else {
                    continue;
                };
                if landing.err.is_some() || total + bytes > super::readahead::AHEAD_MAX {
                    continue;
                }
                // SAFETY: the launch completed, and with it the read of its partials.
                let partials = unsafe { landing.filled(side.slot_groups(bytes) * 16) };
                let dd = cltrap_capture::devdigest::dd128_from_partials(partials, bytes as u64);
                if super::digest::stored_blob(&dd, bytes as u64, blobs).is_some()
                    || !seen.insert(dd)
                {
                    continue;
                }
                total += bytes;
                wanted.push((side, bytes));
            }
        }
    }
    if wanted.len() < 2 {
        return None;
    }
    let mut snapshots = Vec::with_capacity(wanted.len());
    for (side, _) in wanted.iter_mut() {
        snapshots.extend(side.snapshot.take());
    }
    let (ra, places) = super::readahead::ReadAhead::new(snapshots);
    for ((side, _), place) in wanted.into_iter().zip(places) {
        side.ahead = Some(place);
    }
    let reading = ra.clone();
    let reader = std::thread::Builder::new()
        .name("cltrap-read".into())
        .spawn(move || reading.read_all())
        .ok();
    Some((ra, reader))
}

impl Marker {
    /// Releases the marker's event (it may still be running: the driver keeps it until done).
    fn give_back(self) {
        if let Some(release) = self.release {
            // SAFETY: our own marker event, released once.
            unsafe { release(self.event as cl_event) };
        }
    }
}

/// After a poll: every rider of an in-order lane that a completed launch with an event of the
/// same thread, later in the lane, answers for is complete (with that launch's status when it
/// failed).
fn prove_riders(st: &mut State, finished: &[(u64, cl_int, bool)]) {
    let State {
        slots,
        lanes,
        ready,
        ..
    } = st;
    let mut touched: Vec<usize> = Vec::new();
    for (t, _, _) in finished {
        if let Some(s) = slots.get(t) {
            if s.in_order && !touched.contains(&s.lane) {
                touched.push(s.lane);
            }
        }
    }
    for lane in touched {
        let Some(l) = lanes.get(&lane) else { continue };
        // Walking from the newest: per thread, the status of its newest completed event.
        let mut proven: Vec<(u64, cl_int)> = Vec::new();
        for t in l.iter().rev() {
            let Some(s) = slots.get_mut(t) else { continue };
            if s.rider {
                if s.done.is_none() {
                    if let Some((_, status)) = proven.iter().find(|(th, _)| *th == s.thread) {
                        s.done = Some((*status).min(CL_COMPLETE));
                        ready.push(*t);
                    }
                }
            } else if s.final_event != 0 && !s.inferred {
                // Seen complete by the driver itself, not inferred from the lane's order (which
                // is the order threads submitted in, not the driver's).
                if let Some(status) = s.done {
                    if !proven.iter().any(|(th, _)| *th == s.thread) {
                        proven.push((s.thread, status));
                    }
                }
            }
        }
    }
}

/// A marker's event completed with `status`: every launch in its lane when it was enqueued is
/// complete (riders take the marker's status when it failed; launches with events of their
/// own have it asked, as inferred ones).
fn settle_marker(st: &mut State, marker: &Marker, status: cl_int) {
    for t in &marker.covers {
        if let Some(s) = st.slots.get_mut(t) {
            if s.done.is_none() {
                s.done = Some(if s.rider {
                    status.min(CL_COMPLETE)
                } else {
                    CL_COMPLETE
                });
                s.inferred = !s.rider && s.final_event != 0;
                st.ready.push(*t);
            }
        }
    }
}

/// In-order lanes with riders that no later launch of their own thread with an event will
/// answer for, whose newest launch is the same as at the previous poll (the application
/// stopped launching there without waiting) or far after such a rider, or any such lane
/// while a thread waits: (lane, entry points, the lane's tickets). `tails`:
/// each lane's newest ticket at the previous poll.
fn markers_wanted(
    st: &State,
    busy: bool,
    tails: &mut HandleMap<usize, u64>,
) -> Vec<(usize, Calls, Vec<u64>)> {
    let mut want = Vec::new();
    tails.retain(|lane, _| st.lanes.contains_key(lane));
    for (lane, l) in st.lanes.iter() {
        if st.markers.contains_key(lane) {
            continue;
        }
        // The oldest *orphan*: a waiting rider with no launch of its own thread after it
        // that has an event (that event, once complete, would answer for it).
        let mut with_event: Vec<u64> = Vec::new();
        let mut orphan = None;
        for (i, t) in l.iter().enumerate().rev() {
            let Some(s) = st.slots.get(t) else { continue };
            if s.rider {
                if s.done.is_none() && !with_event.contains(&s.thread) {
                    orphan = Some(i);
                }
            } else if s.final_event != 0 && !with_event.contains(&s.thread) {
                with_event.push(s.thread);
            }
        }
        let Some((tail, oldest)) = l.back().copied().zip(orphan) else {
            tails.remove(lane);
            continue;
        };
        let stale = tails.insert(*lane, tail) == Some(tail);
        // An orphan far behind the newest launch: its thread stopped launching here while
        // another one goes on.
        let behind = l.len() - oldest > RIDERS_BEHIND;
        if !(busy || stale || behind) {
            continue;
        }
        // Any flight of the lane that holds the queue has the entry points.
        let calls = l.iter().find_map(|t| {
            let f = st.slots.get(t)?.flight.as_ref()?;
            (!f.queue.is_null()).then_some(f.calls)
        });
        if let Some(calls) = calls {
            want.push((*lane, calls, l.iter().copied().collect()));
        }
    }
    want
}

/// Enqueues the writer's marker in each wanted lane (see [`markers_wanted`]) and flushes it.
/// The caller holds the [`Turn`], so the flights holding these queues are not written (and
/// the queues not released) meanwhile.
fn place_markers(want: Vec<(usize, Calls, Vec<u64>)>) -> (Vec<(usize, Marker)>, Vec<usize>) {
    let mut placed = Vec::new();
    let mut refused = Vec::new();
    for (lane, calls, covers) in want {
        let Some(enqueue) = calls.marker else {
            refused.push(lane);
            continue;
        };
        let queue = lane as cl_command_queue;
        let mut ev: cl_event = std::ptr::null_mut();
        // SAFETY: the application's queue, held by the lane's flights; our own event.
        let r = unsafe { enqueue(queue, 0, std::ptr::null(), &mut ev) };
        if r != CL_SUCCESS || ev.is_null() {
            refused.push(lane);
            continue;
        }
        super::stats::add(&super::stats::EVENTS, 1);
        super::stats::add(&super::stats::MARKERS, 1);
        if let Some(flush) = calls.flush {
            // SAFETY: as above.
            unsafe { flush(queue) };
        }
        placed.push((
            lane,
            Marker {
                event: ev as usize,
                covers,
                info: calls.event_info,
                release: calls.release_event,
            },
        ));
    }
    (placed, refused)
}

/// The ticket the next launch will get: every launch with a smaller one was submitted, so its
/// commands were enqueued, before this call. A synchronisation point takes it *before* the
/// driver's call and covers the launches with smaller tickets only.
pub(super) fn current_ticket() -> u64 {
    TICKETS.load(Ordering::Acquire)
}

/// Platforms whose `clFlush` runs the queued commands on the calling thread instead of
/// handing them to the device: a flush from the writer thread would run a kernel while the
/// application's own thread runs another (Oclgrind 21.10 aborts on
/// `m_kernelInvocation == NULL`), so the writer never flushes their queues; the application's
/// own `clFinish` / blocking calls run our reads there.
const FLUSH_RUNS_ON_CALLER: &[&str] = &["Oclgrind"];

/// True when the writer thread may flush the queue of this flight (see [`FLUSH_RUNS_ON_CALLER`]).
fn writer_may_flush(f: &Flight) -> bool {
    f.record
        .as_ref()
        .is_none_or(|r| !FLUSH_RUNS_ON_CALLER.contains(&r.device.platform.as_str()))
}

fn queues_of(st: &State) -> Vec<(usize, clFlush_t)> {
    let mut v: Vec<(usize, clFlush_t)> = Vec::new();
    for s in st.slots.values() {
        if let Some(f) = &s.flight {
            if !f.queue.is_null()
                && writer_may_flush(f)
                && !v.iter().any(|(q, _)| *q == f.queue as usize)
            {
                v.push((f.queue as usize, f.calls.flush));
            }
        }
    }
    v
}

fn flush(queues: &[(usize, clFlush_t)]) {
    for (q, flush) in queues {
        if let Some(f) = flush {
            // SAFETY: a queue we retained for the flight that uses it.
            unsafe { f(*q as cl_command_queue) };
        }
    }
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

/// Set in a child process forked after the writer started: it has no writer thread (and the
/// parent's launches in flight are not its own), so it records nothing.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Registers the handler that marks a forked child (once): at the first recorded launch, and
/// as soon as the capture writer exists (its journal is a shared mapping that a child must
/// never write or move).
pub(crate) fn watch_forks() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // SAFETY: registers a handler that only stores an atomic flag (async-signal-safe).
        unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
    });
}

/// Whether launches can be recorded in this process (false in a forked child).
pub(super) fn available() -> bool {
    !FORKED.load(Ordering::Relaxed)
}

fn start() {
    watch_forks();
    let spawned = std::thread::Builder::new()
        .name("cltrap-writer".into())
        .spawn(writer_loop);
    if spawned.is_err() {
        crate::sink::report_once("could not start the capture writer thread");
    }
    // SAFETY: registering a plain extern "C" function. Registered at the first recorded
    // launch, i.e. after the driver initialised, so it runs before the driver's own exit
    // handlers and the driver is still usable while it drains.
    unsafe { libc::atexit(at_exit) };
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        drain();
        if let Some(path) = crate::state::settings().and_then(|s| s.stats.as_ref()) {
            super::stats::write(path);
        }
        // Not in a forked child: the journal it inherited (a shared mapping) and its block of
        // ids are still its parent's, which may go on appending.
        if !available() {
            return;
        }
        if let Some(w) = crate::sink::existing_writer() {
            // The journal into the log, and deleted: a normally ending application leaves
            // only the log.
            if let Err(e) = w.flush_journal(true) {
                crate::sink::fail(&e);
            }
            // The next process appending to this capture numbers on from this one's last id.
            if let Err(e) = w.release_unused_ids() {
                crate::sink::fail(&e);
            }
        }
    });
}

/// Waits for launches in flight (as long as they keep completing) and their records.
fn drain() {
    if !available() {
        return;
    }
    let reg = &*REGISTRY;
    let mut st = lock(&reg.state);
    let queues = queues_of(&st);
    drop(st);
    flush(&queues);
    st = lock(&reg.state);
    st.waiters += 1;
    reg.work.notify_one();
    let mut last = (st.slots.len(), Instant::now());
    while !st.slots.is_empty() {
        if st.slots.len() < last.0 {
            last = (st.slots.len(), Instant::now());
        }
        let waited = last.1.elapsed();
        if waited >= EXIT_STALL {
            crate::sink::say(&format!(
                "{} launch(es) still running at exit were not recorded",
                st.slots.values().filter(|s| s.flight.is_some()).count()
            ));
            return;
        }
        st = wait_progress(reg, st, EXIT_STALL - waited);
    }
}

/// Moves the capture's journal into the log when [`JOURNAL_EVERY`] passed since the last
/// time (`now`: whatever is due).
fn flush_journal(last: &mut Instant, now: bool) {
    if !now && last.elapsed() < JOURNAL_EVERY {
        return;
    }
    *last = Instant::now();
    if !crate::sink::healthy() {
        return;
    }
    if let Some(w) = crate::sink::existing_writer() {
        if w.journal_pending() > 0 {
            if let Err(e) = w.flush_journal(false) {
                crate::sink::fail(&e);
            }
        }
    }
}

fn writer_loop() {
    let reg = &*REGISTRY;
    let mut journaled = Instant::now();
    let mut deep_flushed = false;
    let mut pacing = Pacing::new();
    let mut tails: HandleMap<usize, u64> = HandleMap::default();
    let mut trimmed = Instant::now();
    let mut idle_since = Instant::now();
    loop {
        if trimmed.elapsed() >= TRIM_EVERY {
            // Pinned memory of contexts that no longer record goes back (no lock held).
            super::pinned::trim();
            super::digest::trim();
            spare::trim(TRIM_EVERY);
            trimmed = Instant::now();
        }
        let late = {
            let mut st = lock(&reg.state);
            while st.ready.is_empty() {
                if journaled.elapsed() >= JOURNAL_EVERY {
                    drop(st);
                    flush_journal(&mut journaled, false);
                    st = lock(&reg.state);
                    if !st.ready.is_empty() {
                        break;
                    }
                }
                st.writer_sleeping = true;
                if st.slots.is_empty() {
                    // Lightly asleep for a while after the last launch in flight (a new
                    // launch is noticed within LANE_POLL_MAX without waking us), then deeply
                    // (a new launch wakes us).
                    let deep_now = idle_since.elapsed() >= DEEP_SLEEP_AFTER;
                    if deep_now && !deep_flushed {
                        // Nothing in the journal may wait for the next launch: moved into the
                        // log once before sleeping deeply (then everything is looked at again).
                        drop(st);
                        flush_journal(&mut journaled, true);
                        deep_flushed = true;
                        st = lock(&reg.state);
                        continue;
                    }
                    st.writer_deep = deep_now;
                    let nap = if st.writer_deep {
                        TRIM_EVERY
                    } else {
                        LANE_POLL_MAX
                    };
                    let (g, waited) = reg
                        .work
                        .wait_timeout(st, nap)
                        .unwrap_or_else(|p| p.into_inner());
                    st = g;
                    let deep = std::mem::replace(&mut st.writer_deep, false);
                    if deep && waited.timed_out() && st.slots.is_empty() {
                        drop(st);
                        super::pinned::trim();
                        super::digest::trim();
                        spare::trim(TRIM_EVERY);
                        trimmed = Instant::now();
                        st = lock(&reg.state);
                    }
                    continue;
                }
                idle_since = Instant::now();
                deep_flushed = false;
                let pause = pacing.pause(st.waiters > 0, lanes_to_poll(&st));
                let (g, waited) = reg
                    .work
                    .wait_timeout(st, pause)
                    .unwrap_or_else(|p| p.into_inner());
                st = g;
                if !st.ready.is_empty() || st.slots.is_empty() {
                    continue;
                }
                if !std::mem::take(&mut st.poll_now) && !waited.timed_out() {
                    continue;
                }
                // Nothing reported: ask the driver (no lock held while asking), holding the
                // turn: an application thread's clFinish writes launches, and releases their
                // events, only with the turn, so none of the events asked about is released
                // meanwhile (that raced: PoCL aborted on a released event's lock).
                if st.writing {
                    continue;
                }
                let busy = st.waiters > 0;
                let probes = probes(&st, busy, pacing.out_of_order_due(busy));
                let marks: Vec<(usize, usize, clGetEventInfo_t)> = st
                    .markers
                    .iter()
                    .map(|(lane, m)| (*lane, m.event, m.info))
                    .collect();
                let want = markers_wanted(&st, busy, &mut tails);
                st.writing = true;
                HOLDS_TURN.with(|h| h.set(true));
                let turn = Turn(reg);
                drop(st);
                let marked: Vec<(usize, cl_int)> = marks
                    .iter()
                    .filter_map(|(lane, ev, info)| Some((*lane, finished(*info, *ev)?)))
                    .collect();
                let (placed, refused) = place_markers(want);
                let finished = poll(&probes);
                drop(turn);
                st = lock(&reg.state);
                let found = !finished.is_empty() || !marked.is_empty();
                for (ticket, status, inferred) in &finished {
                    if let Some(slot) = st.slots.get_mut(ticket) {
                        if slot.done.is_none() {
                            slot.done = Some(*status);
                            slot.polled = slot.callback;
                            slot.inferred = *inferred;
                            st.ready.push(*ticket);
                        }
                    }
                }
                prove_riders(&mut st, &finished);
                // Riders already there wait for their thread's next launch (which has an
                // event from now on) or the application's next synchronisation.
                st.no_markers.extend(refused);
                let mut spent = Vec::new();
                for (lane, status) in marked {
                    if let Some(m) = st.markers.remove(&lane) {
                        settle_marker(&mut st, &m, status);
                        spent.push(m);
                    }
                }
                for (lane, m) in placed {
                    if st.lanes.contains_key(&lane) {
                        if let Some(old) = st.markers.insert(lane, m) {
                            spent.push(old);
                        }
                    } else {
                        spent.push(m);
                    }
                }
                if !spent.is_empty() {
                    drop(st);
                    for m in spent {
                        m.give_back();
                    }
                    st = lock(&reg.state);
                }
                if pacing.polled(found) {
                    let queues = queues_of(&st);
                    drop(st);
                    flush(&queues);
                    st = lock(&reg.state);
                }
            }
            st.writer_sleeping = false;
            // Let completions gather for a moment (one wake-up per batch, not per launch),
            // unless someone waits for them.
            if st.waiters == 0 {
                st = reg
                    .work
                    .wait_timeout_while(st, NAP, |st| st.waiters == 0)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
            std::mem::take(&mut st.to_release)
        };
        for (ev, release) in late {
            if let Some(rel) = release {
                // SAFETY: our own final event, kept until its late callback came.
                unsafe { rel(ev as cl_event) };
            }
        }
        // An application thread that just finished a queue may have written some of the
        // ready launches meanwhile (they are gone from the slots): take_batch skips them.
        if let Some((turn, mut st)) = Turn::take(reg, None) {
            let batch = take_batch(&mut st);
            drop(st);
            let _batch =
                (!batch.is_empty()).then(|| super::stats::span(super::stats::Phase::WriterBatch));
            write_batch(reg, batch);
            drop(turn);
        }
    }
}

/// When the writer asks the driver next: in-order queues are polled often while polls find
/// completions and less often while they do not; out-of-order queues (which have callbacks)
/// only after [`POLL`] without any, or while a thread waits.
struct Pacing {
    pause: Duration,
    idle_polls: u32,
    out_of_order_polled: Instant,
}

impl Pacing {
    fn new() -> Pacing {
        Pacing {
            pause: LANE_POLL_MIN,
            idle_polls: 0,
            out_of_order_polled: Instant::now(),
        }
    }

    fn pause(&self, busy: bool, lanes: bool) -> Duration {
        match (busy, lanes) {
            (true, _) => POLL_BUSY,
            (false, true) => self.pause,
            (false, false) => POLL,
        }
    }

    /// Whether this poll also asks about out-of-order queues' launches.
    fn out_of_order_due(&mut self, busy: bool) -> bool {
        let due = busy || self.out_of_order_polled.elapsed() >= POLL;
        if due {
            self.out_of_order_polled = Instant::now();
        }
        due
    }

    /// Notes a poll's outcome; true when the queues in flight should be flushed.
    fn polled(&mut self, found: bool) -> bool {
        if found {
            self.pause = LANE_POLL_MIN;
            self.idle_polls = 0;
            return false;
        }
        self.pause = (self.pause * 2).min(LANE_POLL_MAX);
        self.idle_polls += 1;
        if self.idle_polls >= FLUSH_AFTER_IDLE_POLLS {
            self.idle_polls = 0;
            return true;
        }
        false
    }
}

/// Whether some in-order queue has launches waiting for the writer to poll them.
fn lanes_to_poll(st: &State) -> bool {
    st.lanes.values().any(|l| {
        l.iter()
            .filter_map(|t| st.slots.get(t))
            .any(|s| s.done.is_none() && !s.callback && (s.final_event != 0 || s.rider))
    })
}

/// The launches of one queue that the writer asks the driver about.
struct Probe {
    /// In order: one launch completing means every older one of the queue completed.
    in_order: bool,
    info: clGetEventInfo_t,
    /// (ticket, final event), oldest first.
    pending: Vec<(u64, usize)>,
}

/// What to ask the driver: every pending launch of in-order queues (polled as a whole), and,
/// when `out_of_order` is due, the oldest pending launches of out-of-order queues.
fn probes(st: &State, busy: bool, out_of_order: bool) -> Vec<Probe> {
    let per_lane = if busy {
        POLL_PER_LANE_BUSY
    } else {
        POLL_PER_LANE
    };
    let mut v = Vec::new();
    for lane in st.lanes.values() {
        let mut info = None;
        let mut in_order = true;
        let pending: Vec<(u64, usize)> = lane
            .iter()
            .filter_map(|t| {
                let s = st.slots.get(t)?;
                let f = s.flight.as_ref()?;
                in_order = s.in_order;
                info = f.calls.event_info;
                (s.done.is_none() && s.final_event != 0).then_some((*t, s.final_event))
            })
            .collect();
        if pending.is_empty() || (!in_order && !out_of_order) {
            continue;
        }
        let pending = if in_order {
            pending
        } else {
            pending.into_iter().take(per_lane).collect()
        };
        v.push(Probe {
            in_order,
            info,
            pending,
        });
    }
    v
}

/// The final status of `ev` if it finished (complete or failed), without waiting.
fn finished(info: clGetEventInfo_t, ev: usize) -> Option<cl_int> {
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

/// Asks the driver which launches finished: (ticket, final status, inferred). In an in-order
/// queue the newest finished launch is found by bisection (O(log n) questions), and every
/// older one is inferred finished; out-of-order launches are asked about one by one.
fn poll(probes: &[Probe]) -> Vec<(u64, cl_int, bool)> {
    let mut done = Vec::new();
    for p in probes {
        let n = p.pending.len();
        if !p.in_order {
            for (t, ev) in &p.pending {
                if let Some(s) = finished(p.info, *ev) {
                    done.push((*t, s, false));
                }
            }
            continue;
        }
        let Some(last) = n.checked_sub(1) else {
            continue;
        };
        // `upto`: the newest finished launch (its status known), or none.
        let upto = if let Some(s) = finished(p.info, p.pending[last].1) {
            Some((last, s))
        } else if let Some(s) = finished(p.info, p.pending[0].1) {
            let (mut lo, mut hi, mut lo_status) = (0, last, s);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                match finished(p.info, p.pending[mid].1) {
                    Some(s) => (lo, lo_status) = (mid, s),
                    None => hi = mid,
                }
            }
            Some((lo, lo_status))
        } else {
            None
        };
        if let Some((upto, status)) = upto {
            for (i, (t, _)) in p.pending[..=upto].iter().enumerate() {
                if i == upto {
                    done.push((*t, status, false));
                } else {
                    done.push((*t, CL_COMPLETE, true));
                }
            }
        }
    }
    done
}

type Batch = Vec<(u64, usize, Flight, cl_int, usize, bool)>;

/// Takes the completed flights that may be written now, in the order they must be written.
/// Costs O(taken + ready): lanes are walked from their front, once per batch.
fn take_batch(st: &mut State) -> Batch {
    let mut ready = std::mem::take(&mut st.ready);
    ready.sort_unstable();
    let State {
        slots, lanes, late, ..
    } = st;
    let mut batch = Batch::new();
    let mut walked: Vec<usize> = Vec::new();
    for t in ready {
        let Some((lane, in_order)) = slots.get(&t).map(|s| (s.lane, s.in_order)) else {
            continue;
        };
        if !in_order {
            take_one(slots, late, t, &mut batch);
            continue;
        }
        // In order: write from the front of the lane while launches there are done.
        if walked.contains(&lane) {
            continue;
        }
        walked.push(lane);
        if let Some(l) = lanes.get(&lane) {
            for front in l.iter() {
                if !take_one(slots, late, *front, &mut batch) {
                    break;
                }
            }
        }
    }
    batch
}

/// Moves a completed flight into the batch; false when it has not completed yet.
fn take_one(
    slots: &mut HandleMap<u64, Slot>,
    late: &mut HandleMap<u64, (usize, clReleaseEvent_t)>,
    t: u64,
    batch: &mut Batch,
) -> bool {
    match slots.get_mut(&t) {
        Some(s) if s.done.is_some() => {
            if let Some(mut f) = s.flight.take() {
                if s.polled && s.final_event != 0 {
                    // Its callback may still come: keep the final event until it did.
                    f.events.retain(|e| *e as usize != s.final_event);
                    late.insert(t, (s.final_event, f.calls.release_event));
                }
                batch.push((
                    t,
                    s.lane,
                    f,
                    s.done.unwrap_or(CL_COMPLETE),
                    s.final_event,
                    s.inferred,
                ));
            }
            true
        }
        _ => false,
    }
}

/// Turns one completed flight into its record (None: nothing to write) and releases what it
/// held.
fn land(
    mut f: Flight,
    status: cl_int,
    final_event: cl_event,
    inferred: bool,
) -> Option<LaunchRecord> {
    let calls = f.calls;
    let mut status = status;
    let asking = super::stats::span(super::stats::Phase::LandStatus);
    if inferred && !final_event.is_null() {
        // Inferred from a later launch of its queue: its own status decides (a failed
        // command), and a driver that broke the queue's order is waited for.
        status = finished(calls.event_info, final_event as usize).unwrap_or(WAIT_ON_WRITER);
    }
    if status == WAIT_ON_WRITER {
        let ev = final_event;
        // SAFETY: our own event; waiting here blocks only the writer thread.
        let r = calls.wait.map(|w| unsafe { w(1, &ev) });
        status = if r == Some(CL_SUCCESS) {
            CL_COMPLETE
        } else {
            -1
        };
    }
    drop(asking);
    let filling = super::stats::span(super::stats::Phase::LandFill);
    let record = f.record.take().map(|mut record| {
        fill(&mut record, &mut f, status);
        record
    });
    drop(filling);
    let _releasing = super::stats::span(super::stats::Phase::LandRelease);
    // SAFETY: our own events, temporaries and queue reference, each released once, after
    // every command using them completed.
    unsafe {
        if let Some(rel) = calls.release_event {
            for ev in f.events.drain(..) {
                rel(ev);
            }
        }
        if let Some(rel) = calls.release_mem {
            for m in f.temps.drain(..) {
                rel(m);
            }
        }
        if !f.queue.is_null() {
            super::guard::done(calls.release_event, f.queue, final_event);
        }
    }
    record
}

fn content(
    f: &Flight,
    mem: usize,
    landing: &mut Landing,
    bytes: usize,
    status: cl_int,
    after: bool,
    dev: Option<&mut Option<super::digest::Side>>,
) -> Content {
    if let Some(err) = landing.err.take() {
        return Content::Missing { note: err };
    }
    if status != CL_COMPLETE {
        return Content::Missing {
            note: format!("the launch or a read of the capture failed (OpenCL status {status})"),
        };
    }
    if let Some(side) = dev.and_then(Option::take) {
        return device_content(f, mem, landing, bytes, after, side);
    }
    // SAFETY: the read of `bytes` bytes into this buffer completed (status CL_COMPLETE of
    // the event that follows every read of the launch).
    if let Some(v) = unsafe { landing.take_filled(bytes) } {
        let (content, spare) = contents::store_version(f.writer, f.mode, after, v, mem);
        if let Some(v) = spare {
            spare::give(v);
        }
        return content;
    }
    // SAFETY: as above.
    let bytes = unsafe { landing.filled(bytes) };
    contents::store(f.writer, f.mode, after, bytes)
}

/// The content of a side digested on the device: its `dd128` digest, or (when the launch keeps
/// this side) the stored blob with that digest, read back from the snapshot only when no
/// content with that digest was stored yet.
fn device_content(
    f: &Flight,
    mem: usize,
    landing: &mut Landing,
    bytes: usize,
    after: bool,
    mut side: super::digest::Side,
) -> Content {
    let groups = side.slot_groups(bytes);
    // SAFETY: the read of the partials completed (the launch's final event follows it).
    let partials = unsafe { landing.filled(groups * 16) };
    let dd = cltrap_capture::devdigest::dd128_from_partials(partials, bytes as u64);
    let size = bytes as u64;
    if side.snapshot.is_none() && side.ahead.is_none() {
        return Content::Digest {
            hash: dd,
            size,
            algo: cltrap_capture::DigestKind::Dd128,
        };
    }
    if let Some(hash) = super::digest::stored_blob(&dd, size, &f.writer.blobs) {
        return Content::Blob { hash, size };
    }
    let read = match (side.ahead.take(), &side.snapshot) {
        (Some(ahead), _) => ahead.take(),
        (None, Some(snapshot)) => snapshot.read(),
        // Neither: returned above.
        (None, None) => Err(CL_INVALID_OPERATION),
    };
    match read {
        Ok(b) => {
            let (c, reusable) = contents::store_version(f.writer, f.mode, after, b, mem);
            if let Some(v) = reusable {
                spare::give(v);
            }
            if let Content::Blob { hash, .. } = &c {
                super::digest::stored(&dd, hash, size);
            }
            c
        }
        Err(e) => Content::Missing {
            note: format!("reading its device-side copy failed (OpenCL error {e})"),
        },
    }
}

fn fill(record: &mut LaunchRecord, f: &mut Flight, status: cl_int) {
    let mut before: HandleMap<usize, Content> = HandleMap::default();
    let mut after: HandleMap<usize, Content> = HandleMap::default();
    let mut items = std::mem::take(&mut f.items);
    for item in items.iter_mut() {
        let bytes = item.shape.bytes();
        let (dev_pre, dev_post) = match &mut item.dev {
            Some(d) => (Some(&mut d.pre), Some(&mut d.post)),
            None => (None, None),
        };
        let pre = match &item.reuse {
            Some(_) if status != CL_COMPLETE => {
                content(f, item.mem, &mut item.pre, bytes, status, false, dev_pre)
            }
            Some(_) if item.raced => Content::Missing {
                note: "not read: it was written while the launch was being enqueued".into(),
            },
            Some(r) => r.cell.get().cloned().unwrap_or_else(|| Content::Missing {
                note: "not recorded: the earlier launch whose contents it had was not recorded"
                    .into(),
            }),
            None => content(f, item.mem, &mut item.pre, bytes, status, false, dev_pre),
        };
        let post = if item.post_is_pre {
            pre.clone()
        } else {
            content(f, item.mem, &mut item.post, bytes, status, true, dev_post)
        };
        let _ = item.cell.set(post.clone());
        before.insert(item.mem, pre);
        after.insert(item.mem, post);
    }
    if status != CL_COMPLETE && !items.is_empty() {
        record.not_replayable.push(format!(
            "buffer contents were not recorded (OpenCL status {status})"
        ));
    }
    let default_note = if f.missing.is_empty() {
        "not read".to_string()
    } else {
        f.missing.clone()
    };
    let missing = || Content::Missing {
        note: default_note.clone(),
    };
    for (arg, slot) in record.args.iter_mut().zip(&f.slots) {
        let Some(mem) = slot else { continue };
        let (b, a) = match arg {
            ArgRecord::Buffer { before, after, .. } | ArgRecord::Image { before, after, .. } => {
                (before, after)
            }
            _ => continue,
        };
        if matches!(b, Content::Missing { note } if note.is_empty()) {
            *b = before.get(mem).cloned().unwrap_or_else(missing);
            *a = after.get(mem).cloned().unwrap_or_else(missing);
        }
    }
}
