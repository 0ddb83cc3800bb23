//! Landing: turning completed launches into capture records and handing their contents to the
//! capture writer. A launch's own status is confirmed, each read's bytes are hashed or stored
//! ([`crate::core::contents`]; device-side digests are looked up and their snapshots read back
//! only when the capture has not stored those contents yet), its record is filled, the batch is
//! appended in one write, and the launch's events, temporaries and queue reference are released.
//!
//! Job: the last stage of the capture path. It knows nothing of the registry of launches in
//! flight (the caller took the batch out of it, and puts it back in order), and must not run
//! on a launching thread: it runs on the writer thread, or on an application thread inside its
//! own `clFinish` (where the capture is then complete up to that point).
//!
//! Invariants:
//! * Nothing of a read is looked at before the launch's status said it completed; a launch
//!   whose completion was inferred from a later one has its own event asked (and waited for,
//!   when the driver broke the queue's order) first.
//! * A panic while landing one launch loses that launch's record only; its resources are
//!   still released (the flight's `Drop`).
//! * Snapshots are read ahead ([`crate::core::readahead`]) only for launches known complete,
//!   and the reader thread has ended before the batch's read-ahead is dropped.

use super::handoff::{finished, Flight, WAIT_ON_WRITER};
use crate::core::contents;
use crate::core::digest::Snapshot;
use crate::core::readahead::ReadAhead;
use crate::core::room::{spare, Landing};
use cltrap_capture::{ArgRecord, Content, LaunchRecord};
use opencl_sys::*;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Completed launches taken out of the registry, in the order they are written: (ticket, lane,
/// flight, status, final event, completion inferred from a later launch of the lane).
pub(super) type Batch = Vec<(u64, usize, Flight, cl_int, usize, bool)>;

/// Lands a batch of completed flights (see [`land`]) and appends their records in one write.
/// `freed(reserved)` is called as soon as a landed flight's reserved host and device memory
/// is no longer used (only when it reserved some).
/// Returns each flight's (ticket, lane), in batch order, for the caller to forget them.
pub(super) fn land_all(
    batch: Batch,
    mut freed: impl FnMut(super::handoff::Reservation),
) -> Vec<(u64, usize)> {
    let mut batch = batch;
    let ahead = read_ahead(&mut batch);
    let mut written = Vec::with_capacity(batch.len());
    let mut records = Vec::with_capacity(batch.len());
    let mut writer = None;
    for (ticket, lane, flight, status, event, inferred) in batch {
        let reserved = flight.reserved;
        writer = Some(flight.writer);
        let landed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _land = crate::core::stats::span(crate::core::stats::Phase::Land);
            land(flight, status, event as cl_event, inferred)
        }));
        if let Ok(Some(record)) = landed {
            records.push(record);
        }
        if !reserved.is_empty() {
            freed(reserved);
        }
        written.push((ticket, lane));
    }
    if let Some((ra, _)) = &ahead {
        ra.cancel_rest();
    }
    // One write for the whole batch, once the contents its records name are written.
    if let Some(w) = writer {
        {
            let _settle = crate::core::stats::span(crate::core::stats::Phase::LaneSettle);
            crate::core::spool_lanes::settle();
        }
        if crate::sink::healthy() {
            let _append = crate::core::stats::span(crate::core::stats::Phase::Append);
            if let Err(e) = w.append_numbered(records) {
                crate::sink::fail(&e);
            }
        }
    }
    // The reader ends after the read it was doing (no longer needed by anyone).
    if let Some((_, Some(reader))) = ahead {
        let _ = reader.join();
    }
    written
}

/// A batch's read-ahead and the thread reading it (None: it could not be started).
type Reading = (Arc<ReadAhead<Snapshot>>, Option<JoinHandle<()>>);

/// Starts reading the batch's device-side snapshots back on a thread of their own
/// ([`crate::core::readahead`]) when it has two or more contents to read that the capture has not
/// stored (a single one gains nothing from another thread): those whose digests are neither
/// stored nor an earlier side's of the batch, up to [`crate::core::readahead::AHEAD_MAX`] bytes.
/// Their sides then take the contents from the read-ahead. Returns it and its reader.
fn read_ahead(batch: &mut Batch) -> Option<Reading> {
    use crate::core::digest::Side;
    let mut wanted: Vec<(&mut Side, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0usize;
    for (_, _, f, status, event, inferred) in batch.iter_mut() {
        let snapshots = f.items.iter().any(|i| {
            i.dev.as_ref().is_some_and(|d| {
                [&d.pre, &d.post]
                    .into_iter()
                    .any(|s| s.as_ref().is_some_and(|s| s.snapshot.is_some()))
            })
        });
        if *status != CL_COMPLETE || f.record.is_none() || !snapshots {
            continue;
        }
        // A completion inferred from a later launch of the queue may be wrong (a driver that
        // ran the queue's commands in another order than their tickets): `land` asks the
        // launch's own event and waits for it before reading anything, so its contents are
        // read ahead only once that event says it completed (and `land` need not ask again).
        if *inferred && *event != 0 {
            if finished(f.calls.event_info, *event) != Some(CL_COMPLETE) {
                continue;
            }
            *inferred = false;
        }
        let blobs = &f.writer.blobs;
        for item in f.items.iter_mut() {
            let bytes = item.shape.bytes();
            let Some(dev) = item.dev.as_mut() else {
                continue;
            };
            let pre = (item.reuse.is_none(), &mut item.pre, dev.pre.as_mut());
            let post = (!item.post_is_pre, &mut item.post, dev.post.as_mut());
            for (read, landing, side) in [pre, post] {
                let Some(side) = side.filter(|s| read && s.snapshot.is_some()) else {
                    continue;
                };
                if landing.err.is_some() || total + bytes > crate::core::readahead::AHEAD_MAX {
                    continue;
                }
                // SAFETY: the launch completed, and with it the read of its partials.
                let partials = unsafe { landing.filled(side.slot_groups(bytes) * 16) };
                let dd = cltrap_capture::devdigest::dd128_from_partials(partials, bytes as u64);
                if crate::core::digest::stored_blob(&dd, bytes as u64, blobs).is_some()
                    || !seen.insert(dd)
                {
                    continue;
                }
                total += bytes;
                wanted.push((side, bytes));
            }
        }
    }
    if wanted.len() < 2 {
        return None;
    }
    let mut snapshots = Vec::with_capacity(wanted.len());
    for (side, _) in wanted.iter_mut() {
        snapshots.extend(side.snapshot.take());
    }
    let (ra, places) = ReadAhead::new(snapshots);
    for ((side, _), place) in wanted.into_iter().zip(places) {
        side.ahead = Some(place);
    }
    let reading = ra.clone();
    let reader = std::thread::Builder::new()
        .name("cltrap-read".into())
        .spawn(move || reading.read_all())
        .ok();
    Some((ra, reader))
}

/// Turns one completed flight into its record (None: nothing to write) and releases what it
/// held.
pub(super) fn land(
    mut f: Flight,
    status: cl_int,
    final_event: cl_event,
    inferred: bool,
) -> Option<LaunchRecord> {
    let calls = f.calls;
    let mut status = status;
    let asking = crate::core::stats::span(crate::core::stats::Phase::LandStatus);
    if inferred && !final_event.is_null() {
        // Inferred from a later launch of its queue: its own status decides (a failed
        // command), and a driver that broke the queue's order is waited for.
        status = finished(calls.event_info, final_event as usize).unwrap_or(WAIT_ON_WRITER);
    }
    if status == WAIT_ON_WRITER {
        let ev = final_event;
        // SAFETY: our own event; waiting here blocks only the writer thread.
        let r = calls.wait.map(|w| unsafe { w(1, &ev) });
        status = if r == Some(CL_SUCCESS) {
            CL_COMPLETE
        } else {
            -1
        };
    }
    drop(asking);
    let filling = crate::core::stats::span(crate::core::stats::Phase::LandFill);
    let record = f.record.take().map(|mut record| {
        fill(&mut record, &mut f, status);
        record
    });
    drop(filling);
    let _releasing = crate::core::stats::span(crate::core::stats::Phase::LandRelease);
    // SAFETY: our own events, temporaries and queue reference, each released once, after
    // every command using them completed.
    unsafe {
        if let Some(rel) = calls.release_event {
            for ev in f.events.drain(..) {
                rel(ev);
            }
        }
        if let Some(rel) = calls.release_mem {
            for m in f.temps.drain(..) {
                rel(m);
            }
        }
        if !f.queue.is_null() {
            crate::core::guard::done(calls.release_event, f.queue, final_event);
        }
    }
    record
}

/// The content of one side (before or after) of one memory object of a completed launch: stored
/// through [`contents`], or the note why it is missing.
fn content(
    f: &Flight,
    mem: usize,
    landing: &mut Landing,
    bytes: usize,
    status: cl_int,
    after: bool,
    dev: Option<&mut Option<crate::core::digest::Side>>,
) -> Content {
    if let Some(err) = landing.err.take() {
        return Content::Missing { note: err };
    }
    if status != CL_COMPLETE {
        return Content::Missing {
            note: format!("the launch or a read of the capture failed (OpenCL status {status})"),
        };
    }
    if let Some(side) = dev.and_then(Option::take) {
        return device_content(f, mem, landing, bytes, after, side);
    }
    if let Some((slot, _)) = landing.digest_slot() {
        let got = crate::core::track::lock(slot).take();
        return digested_in_place(f, mem, after, got, bytes as u64);
    }
    // SAFETY: the read of `bytes` bytes into this buffer completed (status CL_COMPLETE of
    // the event that follows every read of the launch).
    if let Some(v) = unsafe { landing.take_filled(bytes) } {
        let v = crate::core::landed::Landed::Heap(v);
        let (content, spare) = contents::store_version(f.writer, f.mode, after, v, mem, false);
        if let Some(v) = spare {
            spare::give(v);
        }
        return content;
    }
    // SAFETY: as above.
    let bytes = unsafe { landing.filled(bytes) };
    contents::store(f.writer, f.mode, after, bytes)
}

/// A copy made in place ([`crate::core::inplace`]), which launches in flight may share.
struct Shared(std::sync::Arc<Vec<u8>>);

impl crate::core::landed::Held for Shared {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
    fn footprint(&self) -> usize {
        // A spare vector taken for the copy may be larger than the contents.
        self.0.capacity()
    }
}

/// The content of a side digested in place ([`crate::core::inplace`]): the stored blob when
/// the capture holds its digest by now (as [`contents::store`] names one), else stored from
/// the copy made there, else its digest.
fn digested_in_place(
    f: &Flight,
    mem: usize,
    after: bool,
    got: Option<crate::core::room::InPlaced>,
    size: u64,
) -> Content {
    let Some(got) = got else {
        return Content::Missing {
            note: "its digest in place was not computed (the device did not run it)".into(),
        };
    };
    let hash = got.hash;
    // Stored meanwhile (another launch that left the same content landed first): named, not
    // stored again.
    if f.writer.blobs.is_known(&hash) {
        return Content::Blob { hash, size };
    }
    let Some(v) = got.bytes else {
        return Content::Digest {
            hash,
            size,
            algo: Default::default(),
        };
    };
    // Owned alone (no launch in flight shares the copy): a heap vector, which goes back to
    // the spare room once stored.
    let v = match std::sync::Arc::try_unwrap(v) {
        Ok(v) => crate::core::landed::Landed::Heap(v),
        Err(v) => crate::core::landed::Landed::Held(Box::new(Shared(v))),
    };
    let (content, spare) = contents::store_version(f.writer, f.mode, after, v, mem, true);
    if let Some(v) = spare {
        spare::give(v);
    }
    match content {
        // The copy is not the content hashed: the application wrote the buffer while the
        // launch's own commands ran (a race of its own), and the copy may be another
        // launch's that shared it.
        Content::Blob { hash: stored, .. } if stored != hash => Content::Missing {
            note: "it changed while the capture hashed and copied it (written during the launch)"
                .into(),
        },
        content => content,
    }
}

/// The content of a side digested on the device: its `dd128` digest, or (when the launch keeps
/// this side) the stored blob with that digest, read back from the snapshot only when no
/// content with that digest was stored yet.
fn device_content(
    f: &Flight,
    mem: usize,
    landing: &mut Landing,
    bytes: usize,
    after: bool,
    mut side: crate::core::digest::Side,
) -> Content {
    let groups = side.slot_groups(bytes);
    // SAFETY: the read of the partials completed (the launch's final event follows it).
    let partials = unsafe { landing.filled(groups * 16) };
    let dd = cltrap_capture::devdigest::dd128_from_partials(partials, bytes as u64);
    let size = bytes as u64;
    if side.snapshot.is_none() && side.ahead.is_none() {
        return Content::Digest {
            hash: dd,
            size,
            algo: cltrap_capture::DigestKind::Dd128,
        };
    }
    if let Some(hash) = crate::core::digest::stored_blob(&dd, size, &f.writer.blobs) {
        return Content::Blob { hash, size };
    }
    let read = match (side.ahead.take(), &side.snapshot) {
        (Some(ahead), _) => ahead.take(),
        (None, Some(snapshot)) => snapshot.read(),
        // Neither: returned above.
        (None, None) => Err(CL_INVALID_OPERATION),
    };
    match read {
        Ok(b) => {
            let (c, reusable) = contents::store_version(f.writer, f.mode, after, b, mem, true);
            if let Some(v) = reusable {
                spare::give(v);
            }
            if let Content::Blob { hash, .. } = &c {
                crate::core::digest::stored(&dd, hash, size);
            }
            c
        }
        Err(e) => Content::Missing {
            note: format!("reading its device-side copy failed (OpenCL error {e})"),
        },
    }
}

/// Fills the record's buffer and image arguments with the contents of the flight's items
/// (before and after), or the note why they are missing.
fn fill(record: &mut LaunchRecord, f: &mut Flight, status: cl_int) {
    // Per memory object: its contents before and after (a launch names a few objects, so a
    // list searched in order costs less than two hash maps made at every launch).
    let mut contents: Vec<(usize, Content, Content)> = Vec::with_capacity(f.items.len());
    let mut items = std::mem::take(&mut f.items);
    for item in items.iter_mut() {
        let bytes = item.shape.bytes();
        let (dev_pre, dev_post) = match &mut item.dev {
            Some(d) => (Some(&mut d.pre), Some(&mut d.post)),
            None => (None, None),
        };
        let pre = match &item.reuse {
            Some(_) if status != CL_COMPLETE => {
                content(f, item.mem, &mut item.pre, bytes, status, false, dev_pre)
            }
            Some(_) if item.raced => Content::Missing {
                note: "not read: it was written while the launch was being enqueued".into(),
            },
            Some(r) => r.cell.get().cloned().unwrap_or_else(|| Content::Missing {
                note: "not recorded: the earlier launch whose contents it had was not recorded"
                    .into(),
            }),
            None => content(f, item.mem, &mut item.pre, bytes, status, false, dev_pre),
        };
        let post = if item.post_is_pre {
            pre.clone()
        } else {
            content(f, item.mem, &mut item.post, bytes, status, true, dev_post)
        };
        let _ = item.cell.set(post.clone());
        contents.push((item.mem, pre, post));
    }
    if status != CL_COMPLETE && !items.is_empty() {
        record.not_replayable.push(format!(
            "buffer contents were not recorded (OpenCL status {status})"
        ));
    }
    let missing = || Content::Missing {
        note: if f.missing.is_empty() {
            "not read".to_string()
        } else {
            f.missing.clone()
        },
    };
    for (i, (arg, slot)) in record.args.iter_mut().zip(&f.slots).enumerate() {
        let Some(mem) = slot else { continue };
        let (b, a) = match arg {
            ArgRecord::Buffer { before, after, .. } | ArgRecord::Image { before, after, .. } => {
                (before, after)
            }
            _ => continue,
        };
        if !matches!(b, Content::Missing { note } if note.is_empty()) {
            continue;
        }
        let Some((_, pre, post)) = contents.iter_mut().find(|(m, _, _)| m == mem) else {
            *b = missing();
            *a = missing();
            continue;
        };
        // The last argument naming the object takes its contents (most objects are named by
        // one argument: no copy); the others copy them.
        if f.slots[i + 1..].contains(slot) {
            *b = pre.clone();
            *a = post.clone();
        } else {
            *b = std::mem::replace(
                pre,
                Content::Missing {
                    note: String::new(),
                },
            );
            *a = std::mem::replace(
                post,
                Content::Missing {
                    note: String::new(),
                },
            );
        }
    }
}
