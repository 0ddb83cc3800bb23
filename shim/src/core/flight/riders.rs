//! Riders and markers on in-order queues: which launches enqueue their reads without an event
//! of their own ([`rides`]), which completed event or marker answers for them
//! ([`prove_riders`], [`settle_marker`]), and where the writer puts a marker of its own
//! ([`markers_wanted`], [`place_markers`]).
//!
//! Why: on NVIDIA each event the capture creates, polls and releases on the writer thread cost
//! the launching thread about 6 µs; with an event on every [`RIDERS_PER_EVENT`] + 1-th launch
//! only, one completed event answers for the riders of its thread before it.
//!
//! Job: decide riding and prove riders complete. It must not land or write records.
//!
//! Invariants:
//! * An event answers only for riders of the same application thread before it in the lane
//!   (only there is the order of the driver's enqueues known), and only when the driver itself
//!   said it completed (not inferred from the lane's order).
//! * A rider's status is that of what answered for it.
//! * Markers are enqueued by the holder of the turn only, so the flights holding their queues
//!   are not written (and the queues not released) meanwhile; no rider where a marker could
//!   not be put (no `clEnqueueMarkerWithWaitList`, a refused marker, a platform whose flush
//!   runs on the caller).

use super::handoff::{Calls, FLUSH_RUNS_ON_CALLER};
use super::registry::{Marker, State, REGISTRY};
use crate::core::track::lock;
use crate::handles::HandleMap;
use crate::Next;
use opencl_sys::*;

/// Rider launches (no event of their own, see [`rides`]) in a row on one in-order queue
/// before a launch gets an event again.
const RIDERS_PER_EVENT: u32 = 31;

/// Launches after a waiting rider in its queue before the writer puts a marker there even
/// though launches keep coming (see [`markers_wanted`]).
const RIDERS_BEHIND: usize = 4 * (RIDERS_PER_EVENT as usize + 1);

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
pub(in crate::core) fn rides(
    next: &Next,
    queue: cl_command_queue,
    platform: &str,
    thread: u64,
) -> bool {
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

/// After a poll: every rider of an in-order lane that a completed launch with an event of the
/// same thread, later in the lane, answers for is complete (with that launch's status when it
/// failed).
pub(super) fn prove_riders(st: &mut State, finished: &[(u64, cl_int, bool)]) {
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
pub(super) fn settle_marker(st: &mut State, marker: &Marker, status: cl_int) {
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
pub(super) fn markers_wanted(
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
/// The caller holds the [`Turn`](super::registry::Turn), so the flights holding these queues are
/// not written (and
/// the queues not released) meanwhile.
pub(super) fn place_markers(
    want: Vec<(usize, Calls, Vec<u64>)>,
) -> (Vec<(usize, Marker)>, Vec<usize>) {
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
        crate::core::stats::add(&crate::core::stats::EVENTS, 1);
        crate::core::stats::add(&crate::core::stats::MARKERS, 1);
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
