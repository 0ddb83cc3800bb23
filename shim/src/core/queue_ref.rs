//! The shim's own reference to an application queue that has commands of ours in it.
//!
//! Why a reference at all: a launch in flight names its queue (the writer flushes it, see
//! [`super::flight`]), and the application may release the queue right after its enqueue.
//! Why one per queue and not one per launch: `clReleaseCommandQueue` implies a flush, and on
//! NVIDIA a retain/release pair per launch cost the writer thread about 10 µs per launch of a
//! launch storm, where the writer is what the application ends up waiting for.
//!
//! A queue the application created through a hooked entry point (counted by
//! [`super::lifetime`]) keeps the shim's reference until the application released it for good
//! and the last launch of ours in it was written, so a launch + `clFinish` loop takes no
//! reference per launch. A queue the shim never saw created (its release would never be
//! seen) keeps the reference only while launches of ours are in flight in it.

use super::held::Hold;
use super::track::lock;
use crate::handles::HandleMap;
use crate::Next;
use opencl_sys::cl_function_types::clReleaseCommandQueue_t;
use opencl_sys::*;
use std::sync::Mutex;

/// A queue the shim holds a reference to.
struct Held {
    /// Launches of ours in flight in it (each called [`hold`] and will call [`done`]).
    in_flight: usize,
    release: clReleaseCommandQueue_t,
}

static HELD: once_cell::sync::Lazy<Mutex<HandleMap<usize, Held>>> =
    once_cell::sync::Lazy::new(Default::default);

/// A launch of ours goes in flight in `queue`: makes sure the shim holds a reference to it
/// (taken now if it held none). False: no reference could be taken (the launch must not name
/// the queue after its enqueue).
pub(super) fn hold(next: &Next, queue: cl_command_queue) -> bool {
    if queue.is_null() {
        return false;
    }
    let mut held = lock(&HELD);
    if let Some(h) = held.get_mut(&(queue as usize)) {
        h.in_flight += 1;
        return true;
    }
    let Some(retain) = next.clRetainCommandQueue else {
        return false;
    };
    // SAFETY: the application's live queue (it just enqueued in it). Registered as the
    // shim's, so the count the application reads leaves it out.
    let taken = super::held::take(queue as usize, Hold::Retain, || {
        (unsafe { retain(queue) } == CL_SUCCESS).then_some(())
    });
    if taken.is_none() {
        return false;
    }
    held.insert(
        queue as usize,
        Held {
            in_flight: 1,
            release: next.clReleaseCommandQueue,
        },
    );
    true
}

/// A launch that [`hold`] `queue` was written: its commands are done with it.
pub(super) fn done(queue: cl_command_queue) {
    let mut held = lock(&HELD);
    let Some(h) = held.get_mut(&(queue as usize)) else {
        return;
    };
    h.in_flight = h.in_flight.saturating_sub(1);
    // Kept while the application holds the queue, as far as `lifetime` counts it (a queue
    // never seen created, or released for good, is not counted).
    if h.in_flight == 0 && !super::refcount::counts_queue(queue as usize) {
        let release = held.remove(&(queue as usize)).and_then(|h| h.release);
        drop(held);
        give_back(release, queue);
    }
}

/// The application released `queue` for good: the shim's reference goes too, at once or when
/// its last launch in flight there was written.
pub(super) fn app_released(queue: usize) {
    let mut held = lock(&HELD);
    let Some(h) = held.get(&queue) else {
        return;
    };
    if h.in_flight == 0 {
        let release = held.remove(&queue).and_then(|h| h.release);
        drop(held);
        give_back(release, queue as cl_command_queue);
    }
}

/// Releases the shim's reference (no lock of ours held: the release may destroy the queue and,
/// with it, the application's context).
fn give_back(release: clReleaseCommandQueue_t, queue: cl_command_queue) {
    if let Some(release) = release {
        // SAFETY: the reference `hold` took, released once.
        super::held::give(queue as usize, Hold::Retain, || unsafe {
            release(queue);
        });
    }
}
