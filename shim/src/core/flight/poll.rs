//! Polling: which launches in flight the writer asks the driver about ([`probes`]), how it
//! asks ([`poll`]: bisection over an in-order lane, one by one in out-of-order queues), and
//! when it asks next ([`Pacing`]).
//!
//! Why polling on in-order queues and not callbacks: NVIDIA runs callbacks one at a time on
//! its event thread, and under a launch storm the capture crawled at a few hundred launches
//! per second. Polls come every [`LANE_POLL_MIN`] while they find completions and back off to
//! [`LANE_POLL_MAX`] while they do not.
//!
//! Job: find completions. It must not change the registry itself (the caller records what was
//! found) and must not land or write records.
//!
//! Invariants:
//! * [`poll`] runs without the registry's lock, by the holder of the turn: none of the events
//!   asked about is released meanwhile.
//! * In an in-order lane, one completed launch means every older one completed; those older
//!   ones are marked *inferred*, and their own status is asked before they are written.

use super::handoff::finished;
use super::registry::{State, MAX_INFLIGHT_LAUNCHES, POLL};
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::time::{Duration, Instant};

/// The shortest and longest pause between two polls of in-order queues (their launches get no
/// callback; see [`submit`](super::admission::submit)): the pause doubles while polls find nothing
/// new, and starts short
/// again when one did.
const LANE_POLL_MIN: Duration = Duration::from_micros(200);

/// See [`LANE_POLL_MIN`].
pub(super) const LANE_POLL_MAX: Duration = Duration::from_millis(20);

/// Polls that found nothing in a row before the writer flushes the queues it waits on (an
/// application that enqueues a few launches and never flushes must still be recorded).
const FLUSH_AFTER_IDLE_POLLS: u32 = 4;

/// The pause while a thread waits for launches to be written (over a cap, `clFinish`, exit).
const POLL_BUSY: Duration = Duration::from_micros(200);

/// Launches per out-of-order queue whose status one poll asks about (the oldest).
const POLL_PER_LANE: usize = 16;

/// The same while a thread waits for launches to be written (a quarter of the launch cap:
/// one poll asks about a batch, not about every launch in flight).
const POLL_PER_LANE_BUSY: usize = MAX_INFLIGHT_LAUNCHES / 4;

/// When the writer asks the driver next: in-order queues are polled often while polls find
/// completions and less often while they do not; out-of-order queues (which have callbacks)
/// only after [`POLL`] without any, or while a thread waits.
pub(super) struct Pacing {
    pause: Duration,
    idle_polls: u32,
    out_of_order_polled: Instant,
}

impl Pacing {
    pub(super) fn new() -> Pacing {
        Pacing {
            pause: LANE_POLL_MIN,
            idle_polls: 0,
            out_of_order_polled: Instant::now(),
        }
    }

    pub(super) fn pause(&self, busy: bool, lanes: bool) -> Duration {
        match (busy, lanes) {
            (true, _) => POLL_BUSY,
            (false, true) => self.pause,
            (false, false) => POLL,
        }
    }

    /// Whether this poll also asks about out-of-order queues' launches.
    pub(super) fn out_of_order_due(&mut self, busy: bool) -> bool {
        let due = busy || self.out_of_order_polled.elapsed() >= POLL;
        if due {
            self.out_of_order_polled = Instant::now();
        }
        due
    }

    /// Notes a poll's outcome; true when the queues in flight should be flushed.
    pub(super) fn polled(&mut self, found: bool) -> bool {
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
pub(super) fn lanes_to_poll(st: &State) -> bool {
    st.lanes.values().any(|l| {
        l.iter()
            .filter_map(|t| st.slots.get(t))
            .any(|s| s.done.is_none() && !s.callback && (s.final_event != 0 || s.rider))
    })
}

/// The launches of one queue that the writer asks the driver about.
pub(super) struct Probe {
    /// In order: one launch completing means every older one of the queue completed.
    in_order: bool,
    info: clGetEventInfo_t,
    /// (ticket, final event), oldest first.
    pending: Vec<(u64, usize)>,
}

/// What to ask the driver: every pending launch of in-order queues (polled as a whole), and,
/// when `out_of_order` is due, the oldest pending launches of out-of-order queues.
pub(super) fn probes(st: &State, busy: bool, out_of_order: bool) -> Vec<Probe> {
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

/// Asks the driver which launches finished: (ticket, final status, inferred). In an in-order
/// queue the newest finished launch is found by bisection (O(log n) questions), and every
/// older one is inferred finished; out-of-order launches are asked about one by one.
pub(super) fn poll(probes: &[Probe]) -> Vec<(u64, cl_int, bool)> {
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
