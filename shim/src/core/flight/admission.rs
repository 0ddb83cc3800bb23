//! Admission: on the application's thread, a launch with reads reserves room among the
//! launches in flight ([`admit`]), and is then handed over ([`submit`]) with a ticket, a
//! place in its queue's lane and, on out-of-order queues, a completion callback.
//!
//! Job: the entry of completion tracking. It must not land or write records, and never blocks
//! the application's thread on disk: over a cap it waits (bounded) for the writer, and never
//! while a user event is unset (that could deadlock the application).
//!
//! Invariants:
//! * Host memory reserved for reads in flight stays under
//!   [`MAX_INFLIGHT_BYTES`](super::registry::MAX_INFLIGHT_BYTES), device memory reserved for
//!   snapshots under the digest engine's cap (a share of the device's memory, never less than
//!   the host cap), launches in flight under
//!   [`MAX_INFLIGHT_LAUNCHES`](super::registry::MAX_INFLIGHT_LAUNCHES) (over the launch cap with
//!   a user event unset: read anyway, the byte cap still holds).
//! * The completion callback runs on a driver thread: it only marks its launch done and wakes
//!   the writer; no OpenCL call and no heavy work ever runs in it.
//! * The writer thread is started with the first submitted launch.

use super::handoff::{Flight, Reservation, WAIT_ON_WRITER};
use super::registry::{
    flush, queues_of, wait_progress, wake_idle_writer, wake_writer, Slot, MAX_INFLIGHT_BYTES,
    MAX_INFLIGHT_LAUNCHES, REGISTRY, TICKETS,
};
use super::writer::start;
use crate::core::track::{lock, tables};
use crate::Next;
use libc::c_void;
use opencl_sys::*;
use std::sync::atomic::Ordering;
use std::sync::Once;
use std::time::{Duration, Instant};

/// Once over the launch cap, a launch waits until in-flight launches are down to this many,
/// so the application waits once per batch of written launches, not once per launch.
const RESUME_LAUNCHES: usize = MAX_INFLIGHT_LAUNCHES * 3 / 4;

/// Launches of ours enqueued on one queue between our own `clFlush` calls on it.
pub(in crate::core) const FLUSH_EVERY: usize = 64;

/// How long a launch over the memory cap waits for older launches before giving up on its
/// contents.
const ADMIT_WAIT: Duration = Duration::from_secs(30);

/// Starts the writer thread once, with the first submitted launch.
static START: Once = Once::new();

/// Why [`admit`] refused a launch's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::core) enum Full {
    /// Reads in flight held [`MAX_INFLIGHT_BYTES`] of host memory, or snapshots in flight
    /// their device's cap.
    Bytes,
    /// [`MAX_INFLIGHT_LAUNCHES`] launches were in flight.
    Launches,
}

/// Reserves host and device memory (and a place among the launches in flight) for a launch's
/// reads; `device_cap`: the most snapshot bytes its device may hold in flight. Over a cap it
/// flushes the queues with launches in flight and waits (bounded) for older launches to be
/// written. Err: the contents must not be read (over a cap, and waiting is impossible or did
/// not help).
pub(in crate::core) fn admit(bytes: Reservation, device_cap: usize) -> Result<(), Full> {
    let _admit = crate::core::stats::span(crate::core::stats::Phase::Admit);
    let reg = &*REGISTRY;
    let deadline = Instant::now() + ADMIT_WAIT;
    let mut st = lock(&reg.state);
    let mut waiting = false;
    let verdict = loop {
        // The device part only for a launch that reserves some: snapshots in flight (of any
        // device: one total, under the admitting device's cap) never hold back a launch
        // without any.
        let device_ok =
            bytes.device == 0 || st.device_bytes.saturating_add(bytes.device) <= device_cap;
        let bytes_ok = (st.bytes.saturating_add(bytes.host) <= MAX_INFLIGHT_BYTES && device_ok)
            || st.slots.is_empty();
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
        st.bytes += bytes.host;
        st.device_bytes += bytes.device;
    }
    verdict
}

/// Gives back memory reserved by [`admit`] for a launch that will not be submitted.
pub(in crate::core) fn unreserve(bytes: Reservation) {
    let mut st = lock(&REGISTRY.state);
    st.give_back(bytes);
}

/// Hands a launch over. With `final_event`, it is written once that event completes (the
/// event is one of the flight's own); a `rider` once a later event of its queue answers for
/// it ([`rides`](super::riders::rides)); with neither, at once (after earlier launches of its
/// queue). `thread`: the
/// launching thread (an event answers for the riders of its own thread).
pub(in crate::core) fn submit(
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
pub(super) unsafe extern "C" fn completed(
    _event: cl_event,
    status: cl_int,
    user_data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| mark_done(user_data as usize as u64, status));
}

/// Marks launch `ticket` done with `status` (from its completion callback, or because none
/// will come) and wakes the writer; a late callback of a launch written already lets its final
/// event go.
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
