//! The application's synchronisation points, as completion tracking learns them: after its
//! `clFinish` the queue is idle, so the launches it finished are written right there, on the
//! application's thread ([`finished_queue`]), or handed to the writer as complete
//! ([`finished_queue_handed`], `--at-finish hand`); after a blocking read or map on an in-order
//! queue the launches before it are handed over as complete ([`completed_upto`]); after
//! `clWaitForEvents` the writer polls at once ([`nudge`]); before the application reads a
//! reference count, completed launches are written so the shim no longer holds their events
//! ([`settle`]).
//!
//! Job: turn what the application's own waits prove into completions. It must not enqueue
//! anything in the application's queues.
//!
//! Invariants:
//! * Only launches submitted before the call began (tickets below
//!   [`current_ticket`](super::registry::current_ticket) taken before the driver's call) are
//!   covered by it.
//! * The application waits for the writer's turn at most [`FINISH_WAIT`]: a writer stuck on a
//!   driver call must not hold the application.

use super::batch::{take_batch, take_finished_lane, write_batch};
use super::poll::{poll, probes};
use super::registry::{available, wake_writer, Slot, State, Turn, REGISTRY};
use super::riders::prove_riders;
use crate::core::track::lock;
use opencl_sys::*;
use std::time::{Duration, Instant};

/// How long the application's `clFinish` waits for the writer to finish a batch it is writing
/// before writing the launches the `clFinish` finished itself (normally a batch takes
/// microseconds; a writer stuck on a driver call must not hold the application).
const FINISH_WAIT: Duration = Duration::from_secs(10);

/// After the application's `clFinish(queue)` returned: every command enqueued on `queue`
/// before it has completed, our reads included, so the launches submitted on `queue` before
/// ticket `upto` ([`current_ticket`](super::registry::current_ticket) when the call began) are
/// written right here, on the application's thread, instead of waiting for
/// the writer thread to notice them (its next poll could be up to
/// [`LANE_POLL_MAX`](super::poll::LANE_POLL_MAX) away, and
/// every hand-over costs two thread wake-ups). When the writer is busy with earlier launches
/// of the same queue, this waits for that batch only (it is being written, not polled).
/// Returns once those launches are in the capture, so it is complete up to the application's
/// last `clFinish` even if the application then crashes.
pub(in crate::core) fn finished_queue(queue: cl_command_queue, upto: u64) {
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
    crate::core::stats::add(&crate::core::stats::FINISH_WRITTEN, batch.len() as u64);
    write_batch(reg, batch);
    drop(turn);
}

/// [`finished_queue`] under `--at-finish hand`: the same launches are marked complete and
/// handed to the writer, which writes them at its next turn (within [`NAP`](super::writer::NAP)
/// while it keeps
/// up with the application); the application's thread does not write them. Why: on the H200
/// writing the record was a third of what the capture added to a launch followed by
/// `clFinish`.
pub(in crate::core) fn finished_queue_handed(queue: cl_command_queue, upto: u64) {
    hand_to_writer(queue, upto, |s| {
        let marked = s.finished_by_idle_queue();
        if marked {
            crate::core::stats::add(&crate::core::stats::FINISH_HANDED, 1);
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

/// After a blocking command on `queue` returned: on an in-order queue every launch submitted
/// on it before ticket `upto` ([`current_ticket`](super::registry::current_ticket) when the call
/// began) completed. They are handed to the writer as complete at once,
/// without a driver question or a poll (their own status is still asked before they are
/// written); the caller does not wait for them to be written.
pub(in crate::core) fn completed_upto(queue: cl_command_queue, upto: u64) {
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
pub(in crate::core) fn nudge() {
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
pub(in crate::core) fn settle() {
    if !available() || Turn::held_here() {
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
    st.found_complete(&finished);
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
