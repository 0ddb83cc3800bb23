//! The capture path, from a recorded launch to its record in the capture, as stages whose
//! imports point one way (each stage uses only those after it):
//!
//! 1. *plan* ([`crate::core::plan`], on the application's thread: what to read) and *in-queue
//!    reads / device digests* ([`crate::core::inqueue`], [`crate::core::digest`]) build a
//!    [`Flight`] ([`handoff`]);
//! 2. *completion tracking*: [`admission`] hands it over on the application's thread,
//!    [`registry`] holds it, [`poll`] and [`riders`] find out when its commands completed,
//!    [`sync_points`] learns it from the application's own waits, and the [`writer`] thread
//!    drives all this; [`batch`] takes the completed launches out in the order they are written;
//! 3. *landing* ([`landing`]): their contents go to the capture writer and their records are
//!    appended; what they held is released.
//!
//! The reads land in host memory of [`crate::core::room`].
//!
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
//!   queue. Polls come every [`LANE_POLL_MIN`](poll::LANE_POLL_MIN) while they find completions
//! and back off to
//!   [`LANE_POLL_MAX`](poll::LANE_POLL_MAX) while they do not. Why not callbacks: NVIDIA runs them
//! one at a time
//!   on its event thread, and under a launch storm the capture crawled at a few hundred
//!   launches per second (our callback also takes this module's lock, so a busy lock stalled
//!   the driver's event thread). A launch found complete only by inference has its own status
//!   asked before it is written.
//! * Riders ([`rides`](riders::rides)): on in-order queues most launches get no event at all; the
//!   last read
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
//!   for [`POLL`](registry::POLL) ([`POLL_BUSY`](poll::POLL_BUSY) while a thread waits for
//! launches to be written), the writer
//!   asks the driver about the oldest launches in flight, and keeps such a launch's final
//!   event until its callback came.
//!
//! Order: launches of one in-order queue are written in the order they were enqueued (which
//! also lets a launch take its pre-launch contents from the previous one, see
//! [`super::known`]); launches of out-of-order queues as they finish.
//!
//! Bounds: host memory for reads in flight is capped
//! ([`MAX_INFLIGHT_BYTES`](registry::MAX_INFLIGHT_BYTES)), and so is the
//! number of launches in flight ([`MAX_INFLIGHT_LAUNCHES`](registry::MAX_INFLIGHT_LAUNCHES)): each
//! holds driver resources
//! (events, reads, a queue reference) until written, and NVIDIA's driver stopped making
//! progress with tens of thousands of them outstanding. Over either cap a launch flushes the
//! queues with launches in flight and waits for older ones (never while a user event is
//! unset: that could deadlock the application) or, failing that, is recorded without contents
//! (over the launch cap with a user event unset: read anyway, the byte cap still holds). Every
//! [`FLUSH_EVERY`](admission::FLUSH_EVERY) launches of ours on a queue, the queue is flushed,
//! because some drivers do
//! not start work that was never flushed; the writer also flushes the queues it waits on after
//! [`FLUSH_AFTER_IDLE_POLLS`](poll::FLUSH_AFTER_IDLE_POLLS) fruitless polls. At exit, pending
//! launches are waited for
//! (bounded) so a normally ending application leaves a complete capture.
//!
//! Synchronisation points ([`super::sync`]): after the application's `clFinish` the queue is
//! idle, so the launches it finished are written right there, on the application's thread
//! ([`finished_queue`](sync_points::finished_queue)), instead of waiting for the writer's next
//! poll; a capture is then
//! complete up to the last `clFinish` even if the application crashes. One writer at a time
//! ([`Turn`](registry::Turn)) keeps each queue's records in order. After a blocking read or map on
//! an in-order
//! queue, the launches before it are handed to the writer as complete
//! ([`completed_upto`](sync_points::completed_upto));
//! after `clWaitForEvents` the writer polls at once ([`nudge`](sync_points::nudge)). With nothing
//! in flight the
//! writer naps ([`DEEP_SLEEP_AFTER`](writer::DEEP_SLEEP_AFTER)) rather than being woken by every
//! new launch.

mod admission;
mod batch;
mod handoff;
mod landing;
mod poll;
mod registry;
mod riders;
mod sync_points;
mod writer;

// What the launch, synchronisation and info hooks use of the capture path.
pub(in crate::core) use admission::{admit, submit, unreserve, Full};
pub(in crate::core) use handoff::{Calls, DevItem, Flight, Item, Reservation};
pub(crate) use registry::watch_forks;
pub(in crate::core) use registry::{
    available, current_ticket, in_flight_bytes, MAX_INFLIGHT_BYTES, MAX_INFLIGHT_LAUNCHES,
};
pub(in crate::core) use riders::rides;
pub(in crate::core) use sync_points::{
    completed_upto, finished_queue, finished_queue_handed, nudge, settle,
};
