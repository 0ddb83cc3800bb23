//! The registry of launches in flight: every submitted launch's slot, each queue's lane of
//! tickets in submission order, the riders and markers per lane, and the turn to write.
//!
//! Job: the shared state of completion tracking, behind one lock, with the few operations
//! every stage needs on it (waiting for progress, waking the writer, taking the turn). It
//! must not call into the driver while the lock is held, and must not land or write records.
//!
//! Invariants:
//! * One lock ([`Registry::state`]); no OpenCL call is made while it is held (a driver's
//!   callback thread takes it too, see the admission stage's completion callback).
//! * Launches of one lane are written in ticket order; only the holder of the [`Turn`] takes
//!   launches out of the slots and removes them, so whoever writes (the writer thread or an
//!   application thread after `clFinish`) keeps that order.
//! * A ticket smaller than [`current_ticket`] belongs to a launch whose commands were
//!   enqueued before the call that read it.
//! * In a child forked after the writer started ([`available`] false) nothing is recorded.

use super::handoff::{writer_may_flush, Flight, Reservation};
use crate::core::track::lock;
use crate::handles::HandleMap;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

/// Host bytes that reads in flight may hold before a new launch waits for older ones.
pub(in crate::core) const MAX_INFLIGHT_BYTES: usize = 512 << 20;

/// Launches in flight (enqueued, not yet written) before a new launch with reads waits for
/// older ones to be written. Why a count and not only bytes: tiny launches hold almost no
/// memory but each holds driver events, callbacks and commands (NVIDIA's driver stopped
/// making progress with tens of thousands outstanding). Why this many: an application that
/// enqueues a few thousand launches before its `clFinish` (Gaussian elimination's 2 046,
/// `bench/gauss.c`) then waits once, at its `clFinish`, not at every launch past the cap;
/// the measurements are in BENCHMARKS.md.
pub(in crate::core) const MAX_INFLIGHT_LAUNCHES: usize = 4096;

/// How long the writer waits for a completion callback (out-of-order queues) before asking
/// the driver itself about the oldest launches in flight (callbacks that come late or never
/// must not stall capture).
pub(super) const POLL: Duration = Duration::from_millis(100);

/// One submitted launch, from [`submit`](super::admission::submit) until it is written.
pub(super) struct Slot {
    pub(super) flight: Option<Flight>,
    pub(super) lane: usize,
    pub(super) in_order: bool,
    pub(super) done: Option<cl_int>,
    pub(super) final_event: usize,
    /// Found complete by [`poll`](super::poll::poll), so its callback may still come: the final
    /// event is
    /// released only after it did (a driver may use the event while calling back).
    pub(super) polled: bool,
    /// A completion callback was registered (out-of-order queues only).
    pub(super) callback: bool,
    /// Taken for complete because a later launch of its in-order queue completed: the writer
    /// asks for its own status before trusting it.
    pub(super) inferred: bool,
    /// A rider: no event of its own (in-order queues only); complete once a later event of
    /// its queue that answers for it completed (see [`rides`](super::riders::rides)).
    pub(super) rider: bool,
    /// The application thread that enqueued it (an event answers for the riders of its own
    /// thread only: only there is the order of the driver's enqueues known).
    pub(super) thread: u64,
}

/// A marker the writer put into an in-order queue whose riders had nothing after them to
/// answer for them: its completion means every launch in the lane when it was enqueued
/// completed.
pub(super) struct Marker {
    pub(super) event: usize,
    /// The tickets of the lane when the marker was enqueued.
    pub(super) covers: Vec<u64>,
    pub(super) info: clGetEventInfo_t,
    pub(super) release: clReleaseEvent_t,
}

impl Marker {
    /// Releases the marker's event (it may still be running: the driver keeps it until done).
    pub(super) fn give_back(self) {
        if let Some(release) = self.release {
            // SAFETY: our own marker event, released once.
            unsafe { release(self.event as cl_event) };
        }
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) slots: HandleMap<u64, Slot>,
    /// Tickets per queue, in submission order, until written.
    pub(super) lanes: HandleMap<usize, VecDeque<u64>>,
    /// Completed tickets the writer has not looked at yet.
    pub(super) ready: Vec<u64>,
    /// Host bytes launches in flight reserved ([`Reservation::host`]).
    pub(super) bytes: usize,
    /// Device bytes of their snapshots ([`Reservation::device`]).
    pub(super) device_bytes: usize,
    pub(super) writer_sleeping: bool,
    /// Threads waiting for records to be written (clFinish, exit, memory cap): while there
    /// are any, the writer does not nap.
    pub(super) waiters: usize,
    /// Per queue: launches with reads of ours enqueued since we last flushed it.
    pub(super) unflushed: HandleMap<usize, usize>,
    /// A wait in [`admit`](super::admission::admit) timed out and nothing was written since: later
    /// launches do not
    /// wait again (one stall must not cost every following launch the full wait).
    pub(super) stalled: bool,
    /// Written launches found complete by [`poll`](super::poll::poll) whose callback has not come
    /// yet: ticket →
    /// (final event, its release), released once the callback came.
    pub(super) late: HandleMap<u64, (usize, clReleaseEvent_t)>,
    /// Final events whose late callback came: the writer releases them (outside the lock).
    pub(super) to_release: Vec<(usize, clReleaseEvent_t)>,
    /// Someone (the writer thread, or an application thread right after its `clFinish`) is
    /// turning completed launches into records, from taking them out of the slots until they
    /// are removed: one at a time, so launches of one queue are written in order whoever
    /// writes them. See [`Turn`].
    pub(super) writing: bool,
    /// The application waited for events: the writer polls at once (see
    /// [`nudge`](super::sync_points::nudge)).
    pub(super) poll_now: bool,
    /// Per in-order queue and launching thread: riders submitted since that thread's last
    /// launch with an event there.
    pub(super) riders: HandleMap<usize, Vec<(u64, u32)>>,
    /// In-order queues where the writer's marker was refused: no more riders there.
    pub(super) no_markers: crate::handles::HandleSet<usize>,
    /// Per in-order queue: the writer's marker there, while it has not completed.
    pub(super) markers: HandleMap<usize, Marker>,
    /// Threads in [`wait_progress`].
    pub(super) progress_waiters: usize,
    /// The writer sleeps deeply: nothing was in flight for
    /// [`DEEP_SLEEP_AFTER`](super::writer::DEEP_SLEEP_AFTER), so only a
    /// wake-up brings it back (see [`wake_idle_writer`]).
    pub(super) writer_deep: bool,
}

/// The state of completion tracking and the two condition variables that wait on it.
pub(super) struct Registry {
    pub(super) state: Mutex<State>,
    /// Wakes the writer.
    pub(super) work: Condvar,
    /// Wakes those waiting for launches to be written (clFinish, exit, memory cap).
    pub(super) progress: Condvar,
}

/// The one registry of the process.
pub(super) static REGISTRY: once_cell::sync::Lazy<Registry> =
    once_cell::sync::Lazy::new(|| Registry {
        state: Mutex::new(State::default()),
        work: Condvar::new(),
        progress: Condvar::new(),
    });

/// The next launch's ticket (see [`current_ticket`]).
pub(super) static TICKETS: AtomicU64 = AtomicU64::new(1);

/// Waits on [`Registry::progress`] for at most `dur`, counted in
/// [`State::progress_waiters`] so that writing a batch wakes nobody (a futex call per
/// `clFinish`) when nobody waits.
pub(super) fn wait_progress(
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

impl State {
    /// Records what a poll found: each launch (ticket, final status, completion inferred from
    /// a later launch of its lane) not known complete yet is now, and is ready to be written.
    /// Found by a poll, its completion callback (out-of-order queues) may still come.
    pub(super) fn found_complete(&mut self, finished: &[(u64, cl_int, bool)]) {
        for (ticket, status, inferred) in finished {
            if let Some(slot) = self.slots.get_mut(ticket) {
                if slot.done.is_none() {
                    slot.done = Some(*status);
                    slot.polled = slot.callback;
                    slot.inferred = *inferred;
                    self.ready.push(*ticket);
                }
            }
        }
    }
}

/// Wakes the threads waiting for progress, if any (the caller holds the state lock).
pub(super) fn progress_made(reg: &Registry, st: &State) {
    if st.progress_waiters > 0 {
        reg.progress.notify_all();
    }
}

/// Wakes the writer if it sleeps (the caller holds the state lock).
pub(super) fn wake_writer(reg: &Registry, st: &mut State) {
    if st.writer_sleeping {
        st.writer_sleeping = false;
        reg.work.notify_one();
    }
}

/// A launch was submitted: wakes the writer only from a deep sleep (it notices launches within
/// [`LANE_POLL_MAX`](super::poll::LANE_POLL_MAX) otherwise).
pub(super) fn wake_idle_writer(reg: &Registry, st: &mut State) {
    if st.writer_deep {
        wake_writer(reg, st);
    }
}

/// The right to write records (see [`State::writing`]), given back when dropped.
pub(super) struct Turn(&'static Registry);

thread_local! {
    /// This thread holds the [`Turn`] (an application callback the driver runs on it while it
    /// releases our objects must not wait for the turn: [`settle`](super::sync_points::settle)
    /// skips).
    static HOLDS_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Turn {
    /// Takes the turn at once; the caller holds the state lock and saw nobody writing.
    pub(super) fn claim(reg: &'static Registry, st: &mut State) -> Turn {
        st.writing = true;
        HOLDS_TURN.with(|h| h.set(true));
        Turn(reg)
    }

    /// Whether this thread holds the turn.
    pub(super) fn held_here() -> bool {
        HOLDS_TURN.with(|h| h.get())
    }

    /// Waits for the turn (until `deadline`, when given: None then) and returns it with the
    /// state still locked.
    pub(super) fn take(
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

impl Slot {
    /// Marks a launch of a queue the application found idle (`clFinish` returned) complete;
    /// false when it was known complete already. Its own status is still asked when it is
    /// landed: a failed command also ends a `clFinish`.
    pub(super) fn finished_by_idle_queue(&mut self) -> bool {
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

/// The ticket the next launch will get: every launch with a smaller one was submitted, so its
/// commands were enqueued, before this call. A synchronisation point takes it *before* the
/// driver's call and covers the launches with smaller tickets only.
pub(in crate::core) fn current_ticket() -> u64 {
    TICKETS.load(Ordering::Acquire)
}

/// Bytes launches in flight have reserved for their reads (host memory, and the device
/// snapshots of buffers digested there): contents they may store once written, which the
/// disk budget counts before they are ([`crate::core::contents::plan`]).
pub(in crate::core) fn in_flight_bytes() -> u64 {
    let st = lock(&REGISTRY.state);
    st.bytes.saturating_add(st.device_bytes) as u64
}

impl State {
    /// Gives back what a launch reserved in [`admit`](super::admission::admit).
    pub(super) fn give_back(&mut self, r: Reservation) {
        self.bytes = self.bytes.saturating_sub(r.host);
        self.device_bytes = self.device_bytes.saturating_sub(r.device);
    }
}

/// The queues with launches in flight that the writer may flush, with their `clFlush`.
pub(super) fn queues_of(st: &State) -> Vec<(usize, clFlush_t)> {
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

/// Flushes `queues` (no lock held: a call into the driver).
pub(super) fn flush(queues: &[(usize, clFlush_t)]) {
    for (q, flush) in queues {
        if let Some(f) = flush {
            // SAFETY: a queue we retained for the flight that uses it.
            unsafe { f(*q as cl_command_queue) };
        }
    }
}

/// Set in a child process forked after the writer started: it has no writer thread (and the
/// parent's launches in flight are not its own), so it records nothing.
static FORKED: AtomicBool = AtomicBool::new(false);

/// The `pthread_atfork` child handler (see [`FORKED`]).
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
pub(in crate::core) fn available() -> bool {
    !FORKED.load(Ordering::Relaxed)
}
