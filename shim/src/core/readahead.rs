//! Reading a batch's device-side snapshots back on a thread of their own, in the order the
//! writer will store them, while the writer stores the ones already read.
//!
//! Why: a `full` capture on a GPU reads each content it has not stored yet back from its
//! device-side snapshot (a `Snapshot` of [`super::digest`], read through [`ReadBack`]), then
//! stores it (hash, cut, compress,
//! write). One after the other on the writer thread, the reads were a fifth of buffer-heavy's
//! capture time on the H200 (about 130 µs per launch against 500 µs of stores); the bus and
//! the cores can do both at once.
//!
//! Invariants:
//! * A snapshot taken into a read-ahead is owned by it until the read-ahead is dropped, which
//!   happens only after its reader thread ended: no snapshot goes back to its engine's pool
//!   while a read of it may run.
//! * Each read runs at most once (reads the batch no longer needs are cancelled), by the
//!   reader or, when the reader has not claimed it yet (or could not start), by the thread
//!   that needs it: a side never waits for a read that nobody will do, also when a read
//!   panics (its result is then an error).
//! * Only launches known complete are read ahead: a completion inferred from a later launch
//!   of the queue is confirmed by the launch's own event first (the landing stage's
//!   `read_ahead`).
//! * It knows nothing of digests or launches: what it reads is anything that can be read
//!   back ([`ReadBack`]), so the device-digest module uses it and not the other way round.
//! * At most [`AHEAD_MAX`] bytes are read ahead per batch; later snapshots are read when
//!   needed, as before.

use super::landed::Landed;
use super::room::spare;
use super::track::lock;
use opencl_sys::cl_int;
use std::sync::{Arc, Condvar, Mutex};

/// The most bytes of snapshots one batch reads ahead (host memory they take at once).
pub(super) const AHEAD_MAX: usize = 256 << 20;

/// Something a read-ahead can read back: a device-side snapshot of the capture's own.
pub(super) trait ReadBack {
    /// Reads the whole contents back (blocking), or says which OpenCL error stopped it.
    fn read(&self) -> Result<Landed, cl_int>;
}

/// A batch's snapshots to read, in order, and what became of each read.
pub(super) struct ReadAhead<S: ReadBack> {
    snapshots: Vec<S>,
    states: Mutex<Vec<State>>,
    changed: Condvar,
}

enum State {
    Waiting,
    Reading,
    Done(Result<Landed, cl_int>),
    Taken,
}

/// A side's place in a read-ahead: [`Ahead::take`] gives its contents.
pub(super) struct Ahead<S: ReadBack> {
    of: Arc<ReadAhead<S>>,
    index: usize,
}

impl<S: ReadBack> ReadAhead<S> {
    /// A read-ahead of `snapshots` (in the order they will be needed), and each one's place.
    pub fn new(snapshots: Vec<S>) -> (Arc<ReadAhead<S>>, Vec<Ahead<S>>) {
        let n = snapshots.len();
        super::stats::add(&super::stats::SNAPSHOTS_READ_AHEAD, n as u64);
        let of = Arc::new(ReadAhead {
            snapshots,
            states: Mutex::new((0..n).map(|_| State::Waiting).collect()),
            changed: Condvar::new(),
        });
        let places = (0..n)
            .map(|index| Ahead {
                of: of.clone(),
                index,
            })
            .collect();
        (of, places)
    }

    /// The reader: reads every snapshot nobody claimed yet, in order. Run on a thread of its
    /// own; returns when all are claimed.
    pub fn read_all(&self) {
        loop {
            let next = {
                let mut st = lock(&self.states);
                let Some(i) = st.iter().position(|s| matches!(s, State::Waiting)) else {
                    return;
                };
                st[i] = State::Reading;
                i
            };
            self.read(next);
        }
    }

    /// Claims every read not claimed yet (the batch has no more use for them): the reader
    /// stops after the read it is doing.
    pub fn cancel_rest(&self) {
        for s in lock(&self.states).iter_mut() {
            if matches!(s, State::Waiting) {
                *s = State::Taken;
            }
        }
    }

    /// Reads snapshot `i` (claimed by this thread) and publishes the result (an error when
    /// the read panicked, so no side waits for it forever).
    fn read(&self, i: usize) {
        let s = &self.snapshots[i];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.read()))
            .unwrap_or(Err(opencl_sys::CL_OUT_OF_HOST_MEMORY));
        lock(&self.states)[i] = State::Done(r);
        self.changed.notify_all();
    }
}

impl<S: ReadBack> Ahead<S> {
    /// The snapshot's contents: read by the reader (waiting for it while it reads), or read
    /// here when the reader has not come to it.
    pub fn take(self) -> Result<Landed, cl_int> {
        let _wait = super::stats::span(super::stats::Phase::SnapshotWait);
        let ra = &self.of;
        let mut st = lock(&ra.states);
        loop {
            match std::mem::replace(&mut st[self.index], State::Taken) {
                State::Waiting => {
                    st[self.index] = State::Reading;
                    drop(st);
                    ra.read(self.index);
                    st = lock(&ra.states);
                }
                State::Reading => {
                    st[self.index] = State::Reading;
                    st = ra.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                State::Done(r) => return r,
                State::Taken => return Err(opencl_sys::CL_INVALID_OPERATION),
            }
        }
    }
}

impl<S: ReadBack> Drop for ReadAhead<S> {
    fn drop(&mut self) {
        // Contents read and never taken (a side the record did not use) go back as spare room.
        let states = self.states.get_mut().unwrap_or_else(|e| e.into_inner());
        for s in states.drain(..) {
            if let State::Done(Ok(v)) = s {
                // Held memory goes back to its holder as it drops.
                if let Some(v) = v.into_vec() {
                    spare::give(v);
                }
            }
        }
    }
}
