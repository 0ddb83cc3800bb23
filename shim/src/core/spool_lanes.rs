//! Spool lanes: threads that copy large planned contents into the spool's segments
//! ([`cltrap_capture::spool::LANES`]), so that the thread landing launches goes on hashing
//! the next content while the last ones are written, and several are written at once.
//!
//! Why: landing one launch after another, the writer spent most of its time copying contents
//! into the page cache, one thread at 2–4 GB/s (FDTD's first gigabyte of contents on an H200
//! host: 441 ms of its 641 ms), and the application waited for it. Writers to separate files
//! scale with their number (two made 7.5 GB/s there, four 13.9 GB/s).
//!
//! Job: write records [`BlobStore::put_content_planned`](cltrap_capture::BlobStore) planned,
//! and tell a lander when every record planned before it asked is written ([`settle`]). It
//! knows nothing of launches or records; a write that fails stops the capture
//! ([`crate::sink::fail`]), as a failed write on the landing thread does.
//!
//! A large new whole record (two [`PART_MIN`](cltrap_capture::spool::PART_MIN) or more)
//! goes as part records to as many lanes, the first on the object's lane: one thread copies
//! into one file at a few GB/s, several into several files scale (an application's
//! `clFinish` that waits for a 4 MB content waited for that copy). A content read back from
//! a device snapshot goes there before it is hashed ([`submit_unnamed`]): each lane copies its
//! part, then waits for the digest the lander gives ([`Naming`]), which it writes last.
//!
//! Invariants:
//! * A record is written only after every record of the same memory object submitted
//!   before it (a patch after its base), parts other than the first excepted: while one of
//!   an object's records waits or is being written, its next ones go to the same lane, whose
//!   records are written in order. Each object has a lane of its own otherwise too (given in
//!   turn), so that its versions follow each other in one segment, as compaction rebuilds
//!   patches fastest. A patch may so be written before the other parts of its base: no
//!   launch record names it before [`settle`], and a compactor leaves a segment whose
//!   content it cannot rebuild yet for a later pass while a writer lives.
//! * Room in the spool ([`cltrap_capture::spool::SpoolWriter::make_room`]) is made by the
//!   submitting thread, for a record or all of its parts, before it is queued; a lane never
//!   waits for it (it could hold up a part that a compactor waits for, behind a record
//!   waiting for the room that compacting that part would free).
//! * No log line names a content before its record is written: the one place that appends
//!   records ([`super::flight`]'s landing) calls [`settle`] first.
//! * Bounded: submitting waits while [`PENDING_MAX`] bytes of contents are waiting.
//! * Only the process that started the threads submits to them (a forked child writes on
//!   its own thread, as without lanes).

use super::landed::Landed;
use super::track::lock;
use cltrap_capture::spool::Planned;
use cltrap_capture::CaptureWriter;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

/// Most bytes of contents waiting for (or being written by) a lane; past it, submitting
/// waits. The contents are the versions the landing keeps anyway (shared, not copied).
pub const PENDING_MAX: usize = 512 << 20;

/// One record to write.
struct Job {
    writer: &'static CaptureWriter,
    planned: Planned,
    bytes: Arc<Landed>,
    /// The memory object it was read from (0: a part other than the first, which no chain
    /// counts).
    mem: usize,
    /// Bytes it counts as pending (the content's, or a part's own).
    size: usize,
    /// For a part whose digest is given after its bytes ([`submit_unnamed`]).
    name: Option<Arc<Name>>,
}

/// One lane: its queue, and how many records were submitted to it and written.
#[derive(Default)]
struct Lane {
    queue: VecDeque<Job>,
    submitted: u64,
    written: u64,
    /// Bytes queued or being written.
    bytes: usize,
}

struct Lanes {
    lanes: Vec<Lane>,
    /// The process that started the lanes' threads (0: not started).
    pid: u32,
    /// (memory object, its lane, its records waiting or being written): the objects with
    /// records not written yet (a few: at most [`PENDING_MAX`] over the smallest large
    /// content).
    chains: Vec<(usize, usize, usize)>,
    /// (memory object, its lane): the lane each object's records go to, so that its versions
    /// stay in one segment after another and compaction rebuilds each patch from the version
    /// just before it, kept in memory (spread over lanes, compaction read each base back from
    /// the store: Gaussian elimination and a wavefront captured slower on the H200 host).
    /// Bounded ([`HOMES_MAX`]: then it starts over).
    homes: Vec<(usize, usize)>,
    /// The lane given to the last object seen first.
    turn: usize,
}

/// Most memory objects whose lane [`Lanes::homes`] remembers.
const HOMES_MAX: usize = 1024;

static LANES: Mutex<Lanes> = Mutex::new(Lanes {
    lanes: Vec::new(),
    pid: 0,
    chains: Vec::new(),
    homes: Vec::new(),
    turn: 0,
});
static CHANGED: Condvar = Condvar::new();

impl Lanes {
    /// Bytes of contents waiting for (or being written by) a lane.
    fn pending(&self) -> usize {
        self.lanes.iter().map(|q| q.bytes).sum()
    }
}

/// How many lane threads the capture gets (`CLTRAP_SPOOL_LANES`; `auto`: a quarter of the
/// machine's cores, one to `LANES - 1`: lane 0 is the landing thread's own).
fn threads() -> usize {
    let most = cltrap_capture::spool::LANES - 1;
    match crate::state::settings().and_then(|s| s.spool_lanes) {
        Some(n) => n.min(most),
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / 4).clamp(1, most)
        }
    }
}

/// The lanes, their threads started by the first caller; None where no lane thread can run
/// (none could be started, or this is a forked child).
fn started() -> Option<std::sync::MutexGuard<'static, Lanes>> {
    let pid = std::process::id();
    let mut l = lock(&LANES);
    if l.pid == 0 {
        l.pid = pid;
        let n = threads();
        let mut started = 0;
        for i in 0..n {
            let spawned = std::thread::Builder::new()
                .name(format!("cltrap-spool{}", i + 1))
                .spawn(move || run(i));
            if spawned.is_ok() {
                started += 1;
            } else {
                break;
            }
        }
        l.lanes = (0..started).map(|_| Lane::default()).collect();
    }
    (l.pid == pid && !l.lanes.is_empty()).then_some(l)
}

/// Has the record `planned` (of content `bytes`, read from memory object `mem`) written by
/// a lane; the content counts as stored from now on. Where no lane thread can run (none
/// could be started, or this is a forked child), writes it now on this thread.
pub fn submit(writer: &'static CaptureWriter, mem: usize, planned: Planned, bytes: Arc<Landed>) {
    let Some(l) = started() else {
        let size = bytes.len();
        let job = Job {
            writer,
            planned,
            bytes,
            mem,
            size,
            name: None,
        };
        write_on(0, &job);
        return;
    };
    // A large whole record goes as parts to several lanes, written at once. Room in the
    // spool is made here, for all of it: a lane never waits for room (it could hold up a
    // part that a compactor waits for, behind a record waiting for the room it would free).
    let parts = planned.parts(l.lanes.len());
    drop(l);
    writer.blobs.make_spool_room(planned.bytes());
    let jobs = match parts {
        Some(parts) => parts,
        None => vec![planned.room_made()],
    };
    queue(lock(&LANES), writer, mem, jobs, bytes, None);
}

/// Has new content `bytes` (read from memory object `mem`), whose digest is not known yet,
/// written by several lanes as parts ([`Planned::unnamed_parts`]) while the caller hashes it:
/// each lane copies its part, then waits for the digest the returned [`Naming`] gives.
/// Returns it with the bytes the records take, or None (nothing submitted) where the lanes
/// cannot take it: fewer than two lane threads, a forked child, a content too small for two
/// parts. Why: an application's `clFinish` that waits for a large new content waited for
/// the hash, then for the copy; now for the longer of the two.
pub fn submit_unnamed(
    writer: &'static CaptureWriter,
    mem: usize,
    bytes: &Arc<Landed>,
) -> Option<(Naming, u64)> {
    let l = started()?;
    if l.lanes.len() < 2 || !writer.blobs.spooling() {
        return None;
    }
    let parts = Planned::unnamed_parts(bytes.len() as u64, l.lanes.len())?;
    let total: u64 = parts.iter().map(Planned::bytes).sum();
    drop(l);
    writer.blobs.make_spool_room(total);
    let name = Arc::new(Name::default());
    queue(lock(&LANES), writer, mem, parts, bytes.clone(), Some(&name));
    Some((Naming(name), total))
}

/// Queues the records of one content (`jobs`: one record, or its parts) on lanes: the first
/// on the lane of memory object `mem` (counted in its chain), the others on the next lanes
/// in turn; waits first while the lanes hold [`PENDING_MAX`] bytes.
fn queue(
    mut l: std::sync::MutexGuard<'static, Lanes>,
    writer: &'static CaptureWriter,
    mem: usize,
    jobs: Vec<Planned>,
    bytes: Arc<Landed>,
    name: Option<&Arc<Name>>,
) {
    let size = bytes.len();
    let room = super::stats::span(super::stats::Phase::LaneRoom);
    while l.pending() > 0 && l.pending() + size > PENDING_MAX {
        l = CHANGED.wait(l).unwrap_or_else(|p| p.into_inner());
    }
    drop(room);
    // While records of `mem` wait, its next one follows them on their lane; else it goes to
    // the object's own lane, given in turn when it is first seen.
    let lane = match l.chains.iter_mut().find(|c| c.0 == mem) {
        Some(chain) => {
            chain.2 += 1;
            chain.1
        }
        None => {
            let lane = match l.homes.iter().find(|h| h.0 == mem) {
                Some(h) => h.1,
                None => {
                    if l.homes.len() >= HOMES_MAX {
                        l.homes.clear();
                    }
                    l.turn = (l.turn + 1) % l.lanes.len();
                    let lane = l.turn;
                    l.homes.push((mem, lane));
                    lane
                }
            };
            l.chains.push((mem, lane, 1));
            lane
        }
    };
    let n = l.lanes.len();
    let parts = jobs.len() > 1;
    for (i, planned) in jobs.into_iter().enumerate() {
        let first = i == 0;
        // A part counts its own bytes, released as it is written.
        let size = if parts {
            planned.bytes() as usize
        } else {
            size
        };
        let job = Job {
            writer,
            planned,
            bytes: bytes.clone(),
            mem: if first { mem } else { 0 },
            size,
            name: name.cloned(),
        };
        let q = &mut l.lanes[(lane + i) % n];
        q.bytes += job.size;
        q.submitted += 1;
        q.queue.push_back(job);
    }
    drop(l);
    CHANGED.notify_all();
}

/// The digest of a content whose parts lanes copy while another thread hashes it: None
/// until given; then Some(digest), or Some(None) when whoever hashed gave up (the lane then
/// hashes the content itself, so its records stay whole).
#[derive(Default)]
pub struct Name {
    digest: Mutex<Option<Option<String>>>,
    given: Condvar,
}

impl Name {
    /// The digest, once given (or, given up, computed here from `bytes`).
    fn wait(&self, bytes: &[u8]) -> String {
        let mut d = lock(&self.digest);
        while d.is_none() {
            d = self.given.wait(d).unwrap_or_else(|p| p.into_inner());
        }
        match d.clone().flatten() {
            Some(digest) => digest,
            None => {
                drop(d);
                cltrap_capture::parallel::digest(bytes)
            }
        }
    }

    fn give(&self, digest: Option<String>) {
        let mut d = lock(&self.digest);
        if d.is_none() {
            *d = Some(digest);
        }
        drop(d);
        self.given.notify_all();
    }
}

/// What the caller of [`submit_unnamed`] gives its lanes the digest with; dropped without
/// [`Naming::set`] (a panic while hashing), it lets them hash the content themselves.
pub struct Naming(Arc<Name>);

impl Naming {
    /// Gives the lanes the content's digest.
    pub fn set(self, digest: &str) {
        self.0.give(Some(digest.to_string()));
    }
}

impl Drop for Naming {
    fn drop(&mut self) {
        self.0.give(None);
    }
}

/// Waits until every record submitted before this call is written (or failed, which
/// stopped the capture). Returns at once when none waits.
pub fn settle() {
    let mut l = lock(&LANES);
    if l.pid != std::process::id() {
        return;
    }
    let targets: Vec<u64> = l.lanes.iter().map(|q| q.submitted).collect();
    while l.lanes.iter().zip(&targets).any(|(q, &t)| q.written < t) {
        l = CHANGED.wait(l).unwrap_or_else(|p| p.into_inner());
    }
}

/// Lane `i`'s thread: writes its queue's records in order, forever.
fn run(i: usize) {
    let lane = i + 1;
    loop {
        let job = {
            let mut l = lock(&LANES);
            loop {
                if let Some(job) = l.lanes.get_mut(i).and_then(|q| q.queue.pop_front()) {
                    break job;
                }
                l = CHANGED.wait(l).unwrap_or_else(|p| p.into_inner());
            }
        };
        {
            let _span = super::stats::span(super::stats::Phase::LaneWrite);
            write_on(lane, &job);
        }
        let size = job.size;
        let mem = job.mem;
        let mut l = lock(&LANES);
        if let Some(q) = l.lanes.get_mut(i) {
            q.written += 1;
            q.bytes -= size;
        }
        if let Some(at) = l.chains.iter().position(|c| mem != 0 && c.0 == mem) {
            l.chains[at].2 -= 1;
            if l.chains[at].2 == 0 {
                l.chains.swap_remove(at);
            }
        }
        drop(l);
        CHANGED.notify_all();
        // Only now: its bytes may be the last hold of a digest engine, whose release may run
        // the application's context destructor on this thread, which must not keep a lander
        // waiting in `settle`.
        drop(job);
    }
}

/// Writes a job's record on `lane`; a failure stops the capture, said once.
fn write_on(lane: usize, job: &Job) {
    if !crate::sink::healthy() {
        return;
    }
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job.name {
        Some(name) => job
            .writer
            .blobs
            .write_part_named(lane, &job.planned, &job.bytes, || name.wait(&job.bytes)),
        None => job
            .writer
            .blobs
            .write_planned(lane, &job.planned, &job.bytes),
    }));
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => crate::sink::fail(&e),
        Err(_) => crate::sink::fail(&cltrap_capture::WriteError::Write {
            path: job.writer.dir().join(cltrap_capture::spool::SPOOL_DIR),
            source: std::io::Error::other("writing a spool record panicked"),
        }),
    }
}
