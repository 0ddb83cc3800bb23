//! Batches: taking the completed launches out of the registry in the order they must be
//! written ([`take_batch`], [`take_finished_lane`]), handing them to the landing stage, and
//! forgetting them once their records are appended ([`write_batch`]).
//!
//! Job: the seam between completion tracking and landing. It runs only on the holder of the
//! [`Turn`](super::registry::Turn) and must not ask the driver about completions.
//!
//! Invariants:
//! * Within an in-order lane, launches are taken from its front while they are done, so a lane
//!   is written in ticket order; out-of-order launches as they finish.
//! * A launch found complete by a poll whose completion callback may still come keeps its
//!   final event (in the registry's `late`) until the callback came.
//! * A written launch's reserved host memory goes back as soon as it is landed, so a launch
//!   waiting for room goes on while the rest of the batch is stored.

use super::landing::{land_all, Batch};
use super::registry::{progress_made, Registry, Slot, State};
use crate::core::track::lock;
use crate::handles::HandleMap;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;

/// Takes the completed flights that may be written now, in the order they must be written.
/// Costs O(taken + ready): lanes are walked from their front, once per batch.
pub(super) fn take_batch(st: &mut State) -> Batch {
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

/// Takes the launches of `lane` before ticket `upto`, oldest first, marking those nobody
/// reported yet as complete (the caller knows the queue is idle; [`land`](super::landing::land)
/// still asks each
/// launch's own status, since a failed command also ends a `clFinish`).
pub(super) fn take_finished_lane(st: &mut State, lane: usize, upto: u64) -> Batch {
    let State {
        slots, late, lanes, ..
    } = st;
    let Some(lane) = lanes.get(&lane) else {
        return Batch::new();
    };
    let mut batch = Batch::with_capacity(lane.len());
    for &t in lane.iter().take_while(|t| **t < upto) {
        let Some(s) = slots.get_mut(&t) else { break };
        s.finished_by_idle_queue();
        if !take_one(slots, late, t, &mut batch) {
            break;
        }
    }
    batch
}

/// Lands a batch of completed flights, appends their records in one write and forgets them.
/// The caller holds the [`Turn`](super::registry::Turn).
pub(super) fn write_batch(reg: &Registry, batch: Batch) {
    if batch.is_empty() {
        return;
    }
    // Its reads' memory is free once a launch is landed: a launch waiting for room goes on
    // while the rest of the batch is stored (given back at the batch's end, a CPU device sat
    // idle while the writer stored a batch, and the writer while the device ran the next).
    let written = land_all(batch, |reserved| {
        let mut st = lock(&reg.state);
        st.give_back(reserved);
        progress_made(reg, &st);
    });
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
