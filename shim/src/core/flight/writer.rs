//! The writer thread: waits for completions (callbacks, polls, markers), writes completed
//! launches in batches, moves the capture's journal into its log, gives back memory nobody
//! uses, and at exit waits (bounded) for the launches still in flight.
//!
//! Why a thread of its own: the application must never wait for the capture. The launch path
//! only enqueues non-blocking reads; this thread learns when they completed and has them
//! landed.
//!
//! Job: the loop that drives completion tracking and landing. It must not run anything on the
//! application's threads.
//!
//! Invariants:
//! * Started once, at the first submitted launch ([`start`]); an `atexit` handler then drains
//!   what is in flight, so a normally ending application leaves a complete capture.
//! * With nothing in flight it naps, then sleeps deeply ([`DEEP_SLEEP_AFTER`]) until woken;
//!   while a thread waits for records it never naps.
//! * It asks the driver only while holding the turn and not the registry's lock.

use super::batch::{take_batch, write_batch};
use super::handoff::finished;
use super::poll::{lanes_to_poll, poll, probes, Pacing, LANE_POLL_MAX};
use super::registry::{
    available, flush, queues_of, wait_progress, watch_forks, Registry, State, Turn, REGISTRY,
};
use super::riders::{markers_wanted, place_markers, prove_riders, settle_marker};
use crate::core::room::spare;
use crate::core::track::lock;
use crate::handles::HandleMap;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

/// At exit: give up when no launch completed for this long.
const EXIT_STALL: Duration = Duration::from_secs(5);

/// How long the writer, with nothing in flight, keeps napping for [`LANE_POLL_MAX`] at a time
/// before it sleeps until woken. While it naps, a new launch does not wake it: an application
/// that launches and waits (`clFinish`) in a loop writes its launches itself, and a wake-up per
/// launch (a futex call, and a thread switch on a busy machine) cost it more than the launch.
pub(super) const DEEP_SLEEP_AFTER: Duration = Duration::from_secs(1);

/// How often the writer gives back pinned memory that is no longer used.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// How often the writer moves the capture's journal into the launch log (records appended
/// at a `clFinish` go into the journal, a file mapped into memory: see
/// `cltrap_capture::journal`).
const JOURNAL_EVERY: Duration = Duration::from_millis(20);

/// How long the writer lets completions gather before writing them.
pub(super) const NAP: Duration = Duration::from_millis(1);

/// Starts the writer thread and registers the exit handler that drains the launches in flight.
pub(super) fn start() {
    watch_forks();
    let spawned = std::thread::Builder::new()
        .name("cltrap-writer".into())
        .spawn(writer_loop);
    if spawned.is_err() {
        crate::say::report_once("could not start the capture writer thread");
    }
    // SAFETY: registering a plain extern "C" function. Registered at the first recorded
    // launch, i.e. after the driver initialised, so it runs before the driver's own exit
    // handlers and the driver is still usable while it drains.
    unsafe { libc::atexit(at_exit) };
}

/// At exit: waits for the launches in flight, writes the statistics when asked, and moves the
/// journal into the log.
extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        drain();
        if let Some(path) = crate::state::settings().and_then(|s| s.stats.as_ref()) {
            crate::core::stats::write(path);
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
pub(super) fn drain() {
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
            crate::say::say(&format!(
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

/// The writer thread: waits for completions, asks the driver when none were reported, puts
/// markers behind waiting riders, and writes what completed in batches.
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
            crate::core::pinned::trim();
            crate::core::digest::trim();
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
                        crate::core::pinned::trim();
                        crate::core::digest::trim();
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
                // Nothing reported: ask the driver, with the turn (see `ask_driver`); not
                // while someone else holds it.
                if st.writing {
                    continue;
                }
                st = ask_driver(reg, st, &mut pacing, &mut tails);
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
            let _batch = (!batch.is_empty())
                .then(|| crate::core::stats::span(crate::core::stats::Phase::WriterBatch));
            write_batch(reg, batch);
            drop(turn);
        }
    }
}

/// One round of asking the driver, by the writer while nothing was reported: which launches
/// in flight completed ([`poll`]), which of its markers completed, and where riders need a
/// marker now; records what was found and flushes the queues after fruitless rounds. Holds
/// the turn while asking (no lock held): an application thread's `clFinish` writes launches,
/// and releases their events, only with the turn, so none of the events asked about is
/// released meanwhile (that raced: PoCL aborted on a released event's lock).
fn ask_driver(
    reg: &'static Registry,
    mut st: MutexGuard<'static, State>,
    pacing: &mut Pacing,
    tails: &mut HandleMap<usize, u64>,
) -> MutexGuard<'static, State> {
    let busy = st.waiters > 0;
    let probes = probes(&st, busy, pacing.out_of_order_due(busy));
    let marks: Vec<(usize, usize, clGetEventInfo_t)> = st
        .markers
        .iter()
        .map(|(lane, m)| (*lane, m.event, m.info))
        .collect();
    let want = markers_wanted(&st, busy, tails);
    let turn = Turn::claim(reg, &mut st);
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
    st.found_complete(&finished);
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
    st
}
