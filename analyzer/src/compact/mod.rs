//! Compaction: turning a capture's spool ([`cltrap_capture::spool`]) into the store's
//! compressed, deduplicated chunks, in the `cltrap` process, never in the application's.
//!
//! Why here: FastCDC chunking, dedup and zstd are compute-bound; in the application's process
//! they made applications that rewrite large buffers wait (see the spool module). The shim
//! only appends raw contents to the spool; `cltrap run` compacts concurrently from its own
//! threads while the application runs ([`Background`]) and finishes after it exits,
//! `cltrap compact DIR` compacts a capture made with a bare `LD_PRELOAD`, and the first
//! other command that opens a capture with a spool compacts it once ([`implicit`]).
//!
//! Crash safety: a segment is compacted only when no writer holds it (sealed); each of its
//! contents is checked against its digest, stored as packs and then its chunk index (the
//! store's own order: an index exists only once its chunks do), the files the pass wrote are
//! made durable ([`sync_written`]: their data written out in parallel, each `fdatasync`ed, then
//! their folders `fsync`ed; not `syncfs`, which also wrote back the spool's gigabytes about to
//! be deleted), and only then are the pass's segments deleted. Each file's write-back starts
//! as soon as it is written (the store does that for a compactor), so the disk works while
//! the next contents are cut and compressed: on an H200 host that made compacting FDTD's
//! 1.6 GB spool 1.31 s → 0.87 s and Gaussian elimination's 592 MB 1.12 s → 0.80 s. A
//! compaction killed at any point leaves every
//! content in the spool or in the store (both, at worst); the next one skips contents whose
//! index (or whole blob) is there and reads as the content (`Compactor::stored_whole`; a
//! damaged or planted one is replaced) and drops the segment, so compacting again is
//! idempotent. Half-written
//! packs (temporary names) of a killed compactor are left behind, unnamed by any index.
//! A content whose bytes do not match its digest (damage, or a forged spool) is not stored
//! and its segment is kept; a record cut off at a segment's end (its writer died while
//! writing it: no launch names it) is dropped with its segment; the compaction says which.
//!
//! Work split: a pass's chains (below) go to the worker pool in runs of consecutive
//! chains, about four runs per thread (on every core for `cltrap compact` and the implicit
//! compaction, where no application runs beside it; for `cltrap run`'s, at most 8 while
//! the application runs beside it, then every core once it exited); each run gathers its new chunks into packs of about 2 MB (a large content encoded 16 MiB at a time)
//! ([`writer::PackBatch`]) and writes its indexes once their pack exists, so a segment of
//! many small contents makes a pack per run, not one per content. Chunks zstd would shrink
//! by less than a tenth are stored raw ([`cltrap_capture::chunks`]). A chain being one
//! thread's work, a compacting process splits each version's hashing and encoding over the
//! pool from 256 KiB of work on ([`parallel::split_finer`]; the shim, from 1 MiB).
//!
//! Patch records (a changed region on an earlier version, see the spool module): a pass's
//! records are compacted in chains across its segments (a patch after its base, on one
//! thread), and a patch record is rebuilt from the version stored just before it when that
//! is its base (kept in memory with its blake3 leaves and chunks,
//! so only the region is hashed, cut and compressed again), else from its base read from the
//! store or the spool (chains checked as any reader checks them). A segment is dropped only
//! once every content it holds is in the store and synced (or was there already), so a
//! patch record in a segment not compacted yet always finds its base, in the store or in a
//! segment still there; a patch whose base cannot be read keeps its segment.

mod background;
mod chains;
mod durable;

pub use background::{Background, NICE, THREAD_NAME};
use chains::{chains, groups};
use durable::sync_written;

use cltrap_capture::parallel;
use cltrap_capture::reader::Contents;
use cltrap_capture::spool::{self, SPOOL_DIR};
use cltrap_capture::writer::{self, BlobStore};
use cltrap_capture::writer_fs::Access;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a capture could not be compacted.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("cannot compact {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot compact {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: cltrap_capture::WriteError,
    },
}

/// What a compaction did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// Segments compacted and dropped.
    pub segments: usize,
    /// Contents stored from the spool (not counting those the store had already).
    pub contents: usize,
    /// Bytes of spooled records read, and bytes written to the store for them.
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// Of the contents, those spooled as patch records, and the bytes they were rebuilt to.
    pub patches: usize,
    pub rebuilt_bytes: u64,
    /// Of the patch records, those whose base was read back (from the store or the spool),
    /// not found among the versions kept in memory.
    pub bases_read: usize,
    /// Seconds spent compacting (not waiting for segments).
    pub busy_secs: f64,
    /// The most bytes seen in the spool at the start of a pass.
    pub peak_spool_bytes: u64,
    /// Contents left in the spool because they are damaged, each as one sentence.
    pub problems: Vec<String>,
    /// Set when compaction left contents in the spool to keep the free space it leaves on
    /// the capture's filesystem ([`KeepFree`]).
    pub short_of_space: Option<ShortOfSpace>,
}

/// Why compaction left contents in the spool for lack of room ([`KeepFree`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortOfSpace {
    /// Bytes free on the capture's filesystem then.
    pub free: u64,
    /// The free space compaction leaves ([`KeepFree`]).
    pub keep: u64,
    /// The largest content left for its size alone (free space above `keep`, but not
    /// enough for it); None: the free space had fallen below `keep`, and compaction stopped.
    pub need: Option<u64>,
}

impl Report {
    fn add(&mut self, other: Report) {
        self.segments += other.segments;
        self.contents += other.contents;
        self.raw_bytes += other.raw_bytes;
        self.stored_bytes += other.stored_bytes;
        self.patches += other.patches;
        self.rebuilt_bytes += other.rebuilt_bytes;
        self.bases_read += other.bases_read;
        self.busy_secs += other.busy_secs;
        self.peak_spool_bytes = self.peak_spool_bytes.max(other.peak_spool_bytes);
        self.short_of_space = match (self.short_of_space, other.short_of_space) {
            // A stop (no `need`) says more than a content left for its size.
            (Some(a), Some(_)) if a.need.is_none() => Some(a),
            (a, b) => b.or(a),
        };
        let mut said: std::collections::HashSet<String> = self.problems.iter().cloned().collect();
        for p in other.problems {
            if said.insert(p.clone()) {
                self.problems.push(p);
            }
        }
    }

    /// Whether there is anything to say on stderr: work done, a problem, or a stop.
    pub fn said(&self) -> bool {
        self.contents > 0
            || self.segments > 0
            || !self.problems.is_empty()
            || self.short_of_space.is_some()
    }

    /// Compaction throughput in MB/s of spooled bytes (0 when nothing was compacted).
    pub fn throughput_mb_s(&self) -> f64 {
        if self.busy_secs > 0.0 {
            self.raw_bytes as f64 / (1 << 20) as f64 / self.busy_secs
        } else {
            0.0
        }
    }

    /// One line for stderr.
    pub fn line(&self, dir: &Path) -> String {
        let mut line = format!(
            "compacted the spool of {}: {} content(s), {:.1} MB spooled into {:.1} MB stored, {:.2} s ({:.0} MB/s), spool peak {:.1} MB",
            dir.display(),
            self.contents,
            self.raw_bytes as f64 / (1 << 20) as f64,
            self.stored_bytes as f64 / (1 << 20) as f64,
            self.busy_secs,
            self.throughput_mb_s(),
            self.peak_spool_bytes as f64 / (1 << 20) as f64,
        );
        if self.patches > 0 {
            line.push_str(&format!(
                "; {} patch record(s) rebuilt into {:.1} MB of contents",
                self.patches,
                self.rebuilt_bytes as f64 / (1 << 20) as f64
            ));
        }
        if let Some(s) = self.short_of_space {
            let what = match s.need {
                None => "stopped".to_string(),
                Some(need) => format!("left a content of {} MB in the spool", need >> 20),
            };
            line.push_str(&format!(
                "; {what}: {} MB free on the capture's filesystem, and compaction leaves at least {} MB ({KEEP_FREE_ENV}); what is left stays in the spool, readable as it is, and `cltrap compact` goes on once there is room",
                s.free >> 20,
                s.keep >> 20
            ));
        }
        line
    }
}

/// The variable that sets [`KeepFree`], in MB.
pub const KEEP_FREE_ENV: &str = "CLTRAP_COMPACT_KEEP_FREE_MB";

/// The free space compaction leaves on the capture's filesystem (512 MB unless
/// [`KEEP_FREE_ENV`] says otherwise). Why: what compaction writes is not bounded by what the
/// spool holds: each range a patch record changes costs at least the chunks it overlaps, so
/// a spool of many small patches over large contents grows many times when compacted, and a
/// hostile one could fill the disk. Before it stores a content (rebuilt and checked against
/// its digest), compaction checks the free space: below this it stops and leaves the rest in
/// the spool, which readers read as it is; above it but without room for the content's
/// whole size as well (what its chunks may take at most), it leaves that content (and its
/// segment) in the spool and goes on with the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepFree(pub u64);

impl KeepFree {
    /// From [`KEEP_FREE_ENV`] (a whole number of MB; unset or anything else: 512).
    pub fn from_env() -> KeepFree {
        let mb = std::env::var(KEEP_FREE_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(512);
        KeepFree(mb.saturating_mul(1 << 20))
    }
}

/// Who may read what compaction writes: as the capture folder itself (shared when others
/// may read it).
fn access_of(dir: &Path) -> Access {
    match std::fs::metadata(dir) {
        Ok(m) if m.mode() & 0o044 != 0 => Access::SHARED,
        _ => Access::PRIVATE,
    }
}

/// A compactor of one capture: the store it writes into, knowing the chunks stored already.
struct Compactor {
    dir: PathBuf,
    store: BlobStore,
    /// The capture's contents, for the bases of patch records not in `recent`.
    contents: Contents,
    /// The last versions stored, the bases of the patch records that follow them.
    recent: Recent,
    /// This pass's verdicts on contents spooled in parts ([`Judged`]).
    judged: Judged,
    keep_free: KeepFree,
    /// The free bytes seen when the free space fell below [`KeepFree`] (u64::MAX: not
    /// stopped); once stopped it stays stopped.
    stopped: std::sync::atomic::AtomicU64,
    /// The free space, and the largest content left in the spool for its size alone.
    left: std::sync::Mutex<Option<(u64, u64)>>,
    /// Records a scan reads of one segment ([`spool::RECORDS_MAX`]; fewer in tests).
    segment_records_max: usize,
}

/// What a pass found about contents spooled in parts, by content digest: whether their parts
/// leave a gap, and which could not be put together or did not match their digest. Why: every
/// part record names its whole content, and judging it again at each of them put the content
/// together once per part, and looked for gaps over all of its parts once per part: a spool
/// of 20 000 part records of one damaged content took compaction over 120 s. Within a segment
/// only the first part record of a content is compacted ([`Compactor::segment`]); across the
/// pass's segments (compacted one after another) these verdicts are reused. Neither depends
/// on whether a segment's writer lives, which decides per segment what a gap means. No lock
/// of it is held while a content is read or stored.
#[derive(Default)]
struct Judged {
    gaps: std::sync::Mutex<std::collections::HashMap<String, bool>>,
    damaged: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Judged {
    fn clear(&self) {
        lock(&self.gaps).clear();
        lock(&self.damaged).clear();
    }
}

/// Locks segment `file` alone, trying again for a few milliseconds while a reader holds it
/// shared (a reader holds it only to see whether a writer does). False: not locked.
fn lock_alone(file: &std::fs::File) -> bool {
    for _ in 0..20 {
        match file.try_lock() {
            Ok(()) => return true,
            Err(_) if file.try_lock_shared().is_ok() => {
                // Only readers: they let go at once.
                let _ = file.unlock();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(_) => return false,
        }
    }
    false
}

/// A lock of this module's, its holder never panics with it held: a poisoned one is taken.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A segment a pass took: locked alone (no writer holds it), with whether its writer lives
/// ([`Compactor::pass`]) and its length.
struct Sealed {
    path: PathBuf,
    file: std::fs::File,
    name: String,
    live: bool,
    bytes: u64,
}

/// What a pass's rounds learn for the rounds after them.
#[derive(Default)]
struct Rounds {
    /// Segments a round kept (damaged, or parts not all written): the next round takes
    /// others, so damage never holds back the segments after it.
    kept: std::collections::HashSet<String>,
    /// Segments past a round's share found sealed (no writer holds them): not opened again
    /// to ask, so a backlog of segments is opened once per pass, not once per round.
    unheld: std::collections::HashSet<String>,
}

/// Most segments one round of a pass takes (each stays open, locked, until the round drops
/// it; a pass goes on in rounds while segments were left: [`Compactor::pass`]): a
/// compactor that fell behind writers sealing a segment every [`spool::SEGMENT_AGE`] must
/// not run out of file descriptors (1 024 by default).
const SEGMENTS_PER_PASS: usize = 256;

/// Most bytes of segments a pass compacts together, in chains across them
/// ([`Compactor::segments`]); the next ones follow, the versions kept in memory carrying
/// the chains on. Why a bound: every record header of the segments taken together is held
/// at once, and a forged spool may hold millions of tiny records.
const TOGETHER_MAX: u64 = 256 << 20;

/// Where a record stands in its chain ([`Compactor::record`]).
#[derive(Clone, Copy)]
struct Placed {
    /// It may be the base of a patch record to come: kept in memory once stored.
    base: bool,
    /// A patch record whose base another patch record of the segment names after it.
    again: bool,
    /// The segment's writer lives ([`Compactor::pass`]).
    live: bool,
}

/// A content as compaction rebuilt it, checked against its digest.
struct Rebuilt {
    bytes: Vec<u8>,
    /// Its blake3 leaves (None for a content of one leaf or less).
    leaves: Option<Vec<parallel::ChainingValue>>,
    /// Its base's digest, the base's chunks and the region where the two differ, when the
    /// base was stored by this compactor: only the region is cut again.
    like: Option<(String, Vec<parallel::Cut>, (usize, usize))>,
}

/// A content this compactor stored, kept as the base of the patch record that follows it.
struct Version {
    hash: String,
    bytes: Vec<u8>,
    leaves: Vec<parallel::ChainingValue>,
    cuts: Vec<parallel::Cut>,
}

impl Version {
    fn copy(&self) -> Version {
        Version {
            hash: self.hash.clone(),
            bytes: self.bytes.clone(),
            leaves: self.leaves.clone(),
            cuts: self.cuts.clone(),
        }
    }
}

/// The last versions stored ([`RECENT_MAX`] bytes at most, oldest dropped first): a patch
/// record's base is usually the content stored just before it for the same buffer, so its
/// rebuild copies no more than the region, its digest hashes only the region's leaves, and
/// only the region is cut into chunks again.
#[derive(Default)]
struct Recent(std::sync::Mutex<std::collections::VecDeque<Version>>);

/// Most bytes of versions a compactor keeps.
const RECENT_MAX: usize = 256 << 20;

impl Recent {
    /// Takes the version `hash` out, or a copy of it when `again` (another patch record
    /// will be rebuilt from it).
    fn take(&self, hash: &str, again: bool) -> Option<Version> {
        let mut list = lock(&self.0);
        let i = list.iter().position(|v| v.hash == hash)?;
        let v = list.remove(i)?;
        if !again {
            return Some(v);
        }
        // Kept as the newest: the versions rebuilt from it do not push it out first.
        let copy = v.copy();
        list.push_back(v);
        Some(copy)
    }

    /// Keeps `v` ([`Recent::keep`]) and returns a copy of it, under one lock (None: too large
    /// to keep).
    fn keep_copy(&self, v: Version) -> Option<Version> {
        let copy = (v.bytes.len() <= RECENT_MAX).then(|| v.copy())?;
        self.keep(v).then_some(copy)
    }

    /// Keeps `v`, dropping the oldest versions past [`RECENT_MAX`] (false: too large to keep).
    fn keep(&self, v: Version) -> bool {
        if v.bytes.len() > RECENT_MAX {
            return false;
        }
        let mut list = lock(&self.0);
        let mut held: usize = list.iter().map(|v| v.bytes.len()).sum();
        while held + v.bytes.len() > RECENT_MAX {
            match list.pop_front() {
                Some(old) => held -= old.bytes.len(),
                None => break,
            }
        }
        list.push_back(v);
        true
    }
}

impl Compactor {
    fn new(dir: &Path) -> Compactor {
        // A chain of versions is one thread's work: its versions' steps are split finer.
        parallel::split_finer();
        let store = BlobStore::with_access(dir, access_of(dir));
        store.learn_stored_chunks();
        store.track_written();
        Compactor {
            dir: dir.to_path_buf(),
            store,
            contents: Contents::new(dir),
            recent: Recent::default(),
            judged: Judged::default(),
            keep_free: KeepFree::from_env(),
            stopped: std::sync::atomic::AtomicU64::new(u64::MAX),
            left: std::sync::Mutex::new(None),
            segment_records_max: spool::RECORDS_MAX,
        }
    }

    /// Says that this compactor is at work ([`spool::heartbeat`]): a writer waiting for room
    /// counts it as progress while a pass has freed nothing yet.
    fn beat(&self) {
        spool::heartbeat(&self.dir);
    }

    /// Whether the capture's filesystem has room for a content of `bytes` and the free space
    /// compaction leaves ([`KeepFree`]). Below that free space, compaction stops for good
    /// ([`Compactor::stopped`]); with too little room for this content alone, it is left (and
    /// remembered for the report). A filesystem whose free space is not known has room.
    fn room_for(&self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering;
        if self.stopped() {
            return false;
        }
        let Some(free) = spool::free_bytes(&self.dir) else {
            return true;
        };
        if free < self.keep_free.0 {
            let _ =
                self.stopped
                    .compare_exchange(u64::MAX, free, Ordering::Relaxed, Ordering::Relaxed);
            return false;
        }
        if free < self.keep_free.0.saturating_add(bytes) {
            let mut left = lock(&self.left);
            if left.is_none_or(|(_, need)| need < bytes) {
                *left = Some((free, bytes));
            }
            return false;
        }
        true
    }

    /// Whether the free space fell below [`KeepFree`]: nothing more is compacted.
    fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed) != u64::MAX
    }

    /// Why contents were left in the spool for lack of room (None: none were).
    fn short_of_space(&self) -> Option<ShortOfSpace> {
        let keep = self.keep_free.0;
        let stopped = self.stopped.load(std::sync::atomic::Ordering::Relaxed);
        if stopped != u64::MAX {
            return Some(ShortOfSpace {
                free: stopped,
                keep,
                need: None,
            });
        }
        (*lock(&self.left)).map(|(free, need)| ShortOfSpace {
            free,
            keep,
            need: Some(need),
        })
    }

    /// Compacts every sealed segment once (segments a writer holds are left for later), in
    /// rounds of at most [`SEGMENTS_PER_PASS`], as long as a round left sealed segments it
    /// did not take.
    fn pass(&self) -> Result<Report, CompactError> {
        self.pass_until(&std::sync::atomic::AtomicBool::new(false))
    }

    /// [`Compactor::pass`], ending after the round in which `stop` is set: what is left goes
    /// to the next pass. Why: writers that seal segments as fast as rounds take them would
    /// otherwise hold a pass, and `cltrap run`'s low-priority compactor, past the
    /// application's exit ([`background`]).
    fn pass_until(&self, stop: &std::sync::atomic::AtomicBool) -> Result<Report, CompactError> {
        let mut total = Report::default();
        let mut rounds = Rounds::default();
        loop {
            let (r, more) = self.pass_some(&mut rounds)?;
            total.add(r);
            if !more || self.stopped() || stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(total);
            }
        }
    }

    /// [`Compactor::pass`] over the first [`SEGMENTS_PER_PASS`] sealed segments not in
    /// `rounds.kept`, adding those it keeps to it; true when others were left for the next
    /// round.
    fn pass_some(&self, rounds: &mut Rounds) -> Result<(Report, bool), CompactError> {
        // Parts written since the last pass may fill a gap.
        self.judged.clear();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CompactError::Io { path, source }
        };
        let spool_dir = self.dir.join(SPOOL_DIR);
        let mut report = Report {
            peak_spool_bytes: spool::live_bytes(&self.dir),
            ..Report::default()
        };
        let mut done = Vec::new();
        let segments = spool::segments(&self.dir).map_err(io(&spool_dir))?;
        if !segments.is_empty() {
            // What compaction stores may need the current format version (raw chunks).
            cltrap_capture::writer::upgrade_manifest(&self.dir, access_of(&self.dir)).map_err(
                |source| CompactError::Store {
                    dir: self.dir.clone(),
                    source,
                },
            )?;
        }
        // The sealed segments, locked (no other compactor takes them) until dropped below,
        // each with whether its writer lives: it holds another segment still, or its process
        // (the pid the segment is named after) runs. A content it spooled in parts not all
        // written yet may then still be completed (its segment waits for a later pass).
        let mut sealed = Vec::new();
        let mut more = false;
        let mut holding = std::collections::HashSet::new();
        for name in segments {
            if rounds.kept.contains(&name) {
                continue;
            }
            if sealed.len() >= SEGMENTS_PER_PASS {
                // Enough for this round (each taken stays open until the round ends): the
                // others wait for the next. Only whether a writer holds one counts now, and
                // only for a writer of a segment taken that is not seen alive otherwise:
                // opened for that alone, so that a backlog is not opened at every round.
                more = true;
                let writer = spool::segment_writer(&name);
                let asked = rounds.unheld.contains(&name)
                    || holding.contains(writer)
                    || !sealed
                        .iter()
                        .any(|(_, _, n): &(PathBuf, std::fs::File, String)| {
                            spool::segment_writer(n) == writer
                        })
                    || spool::writer_alive(&name);
                if asked {
                    continue;
                }
            }
            let path = spool_dir.join(&name);
            let file =
                match cltrap_capture::reader::open_inside(&self.dir, &[SPOOL_DIR, &name], u64::MAX)
                {
                    Ok(f) => f,
                    Err(cltrap_capture::reader::OpenError::NotFound) => continue,
                    Err(cltrap_capture::reader::OpenError::Refused(why)) => {
                        report
                            .problems
                            .push(format!("{} is refused: {why}", path.display()));
                        continue;
                    }
                    Err(cltrap_capture::reader::OpenError::Io(e)) => return Err(io(&path)(e)),
                };
            if sealed.len() >= SEGMENTS_PER_PASS {
                if file.try_lock_shared().is_err() {
                    holding.insert(spool::segment_writer(&name).to_string());
                } else {
                    // Sealed: a writer never locks a segment again once it let go of it.
                    let _ = file.unlock();
                    rounds.unheld.insert(name);
                }
                continue;
            }
            // Held by a live writer: not sealed yet. A reader's shared lock is held only
            // for a moment: tried again, and never taken for a writer's.
            if !lock_alone(&file) {
                if file.try_lock_shared().is_err() {
                    holding.insert(spool::segment_writer(&name).to_string());
                } else {
                    let _ = file.unlock();
                }
                continue;
            }
            sealed.push((path, file, name));
        }
        // Sealed for good: this compactor's reader need not look at them again (it cannot
        // tell by their locks, which this pass holds).
        self.contents
            .settle(sealed.iter().map(|(_, _, name)| name.as_str()));
        let mut sealed = sealed
            .into_iter()
            .map(|(path, file, name)| {
                let live =
                    holding.contains(spool::segment_writer(&name)) || spool::writer_alive(&name);
                let bytes = file.metadata().map_or(0, |m| m.len());
                Sealed {
                    path,
                    file,
                    name,
                    live,
                    bytes,
                }
            })
            .peekable();
        while sealed.peek().is_some() && !self.stopped() {
            // Segments taken together: up to TOGETHER_MAX bytes of them, at least one.
            let mut together: Vec<Sealed> = Vec::new();
            let mut bytes = 0u64;
            while let Some(seg) = sealed
                .next_if(|s| together.is_empty() || bytes.saturating_add(s.bytes) <= TOGETHER_MAX)
            {
                bytes = bytes.saturating_add(seg.bytes);
                together.push(seg);
            }
            let started = Instant::now();
            let whole = self.segments(&together, &mut report)?;
            for (seg, whole) in together.into_iter().zip(whole) {
                if whole {
                    // Kept locked (no other compactor takes it) until it is dropped below.
                    done.push((seg.path, seg.file));
                } else {
                    rounds.kept.insert(seg.name);
                }
            }
            report.busy_secs += started.elapsed().as_secs_f64();
        }
        if !done.is_empty() {
            // Everything they hold is in the store: make what this pass wrote durable, then
            // drop the segments (their pages, never written back, go with them).
            let started = Instant::now();
            sync_written(&self.dir, self.store.take_written())?;
            for (path, _file) in &done {
                std::fs::remove_file(path).map_err(io(path))?;
            }
            if let Ok(d) = std::fs::File::open(&spool_dir) {
                let _ = d.sync_all();
            }
            report.segments += done.len();
            report.busy_secs += started.elapsed().as_secs_f64();
        }
        report.short_of_space = self.short_of_space();
        Ok((report, more))
    }

    /// Stores the contents of locked segments `sealed` (in the order their writers made
    /// them); for each, whether it may go: false when a content of it is damaged, or (its
    /// writer lives) spooled in parts not all written yet: it stays.
    ///
    /// Chains of versions run across the segments ([`chains`]): a patch record goes after
    /// its base (a lane's segments, sealed every [`spool::SEGMENT_AGE`] while a compactor
    /// runs, split one buffer's versions), and a record of a content an earlier record names
    /// too (another copy, another part) after it, on the same thread; chains are independent
    /// and compacted on several threads (the store is shared: each chunk is stored once).
    /// Why across segments: compacted one segment after another, the versions of two buffers
    /// spooled by two lanes (Gaussian elimination's matrix and its multipliers) were never
    /// compacted side by side.
    fn segments(&self, sealed: &[Sealed], report: &mut Report) -> Result<Vec<bool>, CompactError> {
        let mut whole = vec![true; sealed.len()];
        let mut scans = Vec::with_capacity(sealed.len());
        for (k, seg) in sealed.iter().enumerate() {
            let mut scan =
                spool::scan_at_most(&seg.file, 0, self.segment_records_max).map_err(|source| {
                    CompactError::Io {
                        path: seg.path.clone(),
                        source,
                    }
                })?;
            match scan.tail {
                spool::Tail::Clean => {}
                spool::Tail::Bad { .. } | spool::Tail::Crowded { .. } => {
                    report.problems.push(format!(
                        "{}: {}; the segment is kept",
                        seg.path.display(),
                        scan.tail.problem().unwrap_or_default()
                    ));
                    whole[k] = false;
                    // A crowded one is forged: nothing a writer made is in it, nothing of it
                    // is taken.
                    if matches!(scan.tail, spool::Tail::Crowded { .. }) {
                        scan.records.clear();
                    }
                }
                // Its writer died while writing it (or the file was damaged): the bytes are
                // not there to store. Said, and dropped with the segment.
                spool::Tail::Cut { .. } => report.problems.push(format!(
                    "{}: {}; the cut record is dropped with the segment",
                    seg.path.display(),
                    scan.tail.problem().unwrap_or_default()
                )),
            }
            scans.push(scan);
        }
        // Each record with its segment's index, in the order written. A content in parts is
        // compacted at its first part record in each segment: the others there name the same
        // content, and would come out the same ([`Judged`]). Each segment still compacts it
        // once, so a segment whose part is not all there yet stays.
        let mut parted: std::collections::HashSet<(usize, &str)> = Default::default();
        let records: Vec<(usize, &spool::Record)> = scans
            .iter()
            .enumerate()
            .flat_map(|(k, scan)| scan.records.iter().map(move |r| (k, r)))
            .filter(|(k, r)| r.part.is_none() || parted.insert((*k, r.hash.as_str())))
            .collect();
        let chains = chains(&records);
        // Patch records still to come of each base, over the whole pass: a base that several
        // name (buffers that started as one content) is kept in memory and copied for all but
        // the last, not read back from the store for each.
        let mut to_come: std::collections::HashMap<&str, usize> = Default::default();
        for p in scans
            .iter()
            .flat_map(|s| &s.records)
            .filter_map(|r| r.patch.as_ref())
        {
            *to_come.entry(p.base.as_str()).or_default() += 1;
        }
        let to_come = std::sync::Mutex::new(to_come);
        let store_error = |source| CompactError::Store {
            dir: self.dir.clone(),
            source,
        };
        let groups = groups(&chains, parallel::threads());
        let done = parallel::for_each(groups.len(), groups.len() > 1, |g| {
            let mut part = Report::default();
            // The segments with a content that must stay.
            let mut kept = Vec::new();
            // The group's new chunks share packs; its indexes are written once their pack is.
            let mut batch = writer::PackBatch::default();
            for chain in &chains[groups[g].clone()] {
                let patches = chain.iter().any(|(_, r)| r.patch.is_some());
                for (i, &(k, r)) in chain.iter().enumerate() {
                    // Kept in memory as a base: a record of the chain follows it, or the
                    // chain is one of patches and may go on in the next pass.
                    let base = i + 1 < chain.len() || patches;
                    let again = r.patch.as_ref().is_some_and(|p| {
                        let mut to_come = lock(&to_come);
                        let n = to_come.entry(p.base.as_str()).or_default();
                        *n = n.saturating_sub(1);
                        *n > 0
                    });
                    let seg = &sealed[k];
                    let at = Placed {
                        base,
                        again,
                        live: seg.live,
                    };
                    if !self.record(&seg.path, &seg.file, r, at, &mut batch, &mut part)? {
                        kept.push(k);
                    }
                }
            }
            part.stored_bytes += self.store.flush_batch(&mut batch).map_err(store_error)?;
            Ok::<_, CompactError>((part, kept))
        })?;
        for (part, kept) in done {
            for k in kept {
                whole[k] = false;
            }
            report.contents += part.contents;
            report.raw_bytes += part.raw_bytes;
            report.stored_bytes += part.stored_bytes;
            report.patches += part.patches;
            report.rebuilt_bytes += part.rebuilt_bytes;
            report.bases_read += part.bases_read;
            report.problems.extend(part.problems);
        }
        Ok(whole)
    }

    /// Stores the content of record `r` of segment `file` (unless the store has it), and
    /// keeps it in memory when it may be the `base` of a patch record to come; false when it
    /// is damaged (said in `report`), or is (or patches) a content spooled in parts not all
    /// written yet while its writer is `live` (a later pass takes it). Such parts left by a
    /// writer that died name no launch (every part is written before a launch record names
    /// its content): said, and dropped with the segment, as a cut record is.
    fn record(
        &self,
        path: &Path,
        file: &std::fs::File,
        r: &spool::Record,
        at: Placed,
        batch: &mut writer::PackBatch,
        report: &mut Report,
    ) -> Result<bool, CompactError> {
        let Placed { base, again, live } = at;
        // (Stored by this thread a moment ago: its index waits for its pack.)
        if batch.holds(&r.hash) || self.stored_whole(&r.hash, r.content_len()) {
            return Ok(true);
        }
        // Out of room: the segment stays (its contents are read from the spool).
        if self.stopped() {
            return Ok(false);
        }
        let problem = |what: String| {
            format!(
                "{}: content {} at byte {}: {what}",
                path.display(),
                r.hash,
                r.offset
            )
        };
        // The content, or the base a patch is rebuilt from, spooled in parts that do not
        // cover it (and not stored: a compacted part's segment is gone once it is).
        let in_parts = match (&r.part, &r.patch) {
            (Some(_), _) => Some(r.hash.as_str()),
            (None, Some(p)) if !self.stored(&p.base) => Some(p.base.as_str()),
            _ => None,
        };
        if let Some(h) = in_parts {
            let known = lock(&self.judged.gaps).get(h).copied();
            let gap = match known {
                Some(gap) => gap,
                None => {
                    let gap = matches!(self.contents.parts_missing(h), Ok(true));
                    lock(&self.judged.gaps).insert(h.to_string(), gap);
                    gap
                }
            };
            if gap {
                if live {
                    return Ok(false);
                }
                report.problems.push(problem(format!(
                    "content {h} is spooled in parts that do not cover it (their writer died while it wrote them; no launch names it); dropped with the segment"
                )));
                return Ok(true);
            }
        }
        // Found damaged in an earlier segment of this pass: said there.
        if r.part.is_some() && lock(&self.judged.damaged).contains(&r.hash) {
            return Ok(false);
        }
        self.beat();
        let mut rebuilt = match self.rebuild(file, r, again, report) {
            Ok(v) => v,
            Err(why) => {
                if r.part.is_some() {
                    lock(&self.judged.damaged).insert(r.hash.clone());
                }
                report
                    .problems
                    .push(problem(format!("{why}; the segment is kept")));
                return Ok(false);
            }
        };
        // Room for it, at the size it proved to have: the segment stays when there is none.
        if !self.room_for(rebuilt.bytes.len() as u64) {
            return Ok(false);
        }
        // A content put together from parts is hashed here only when a patch may follow it
        // (kept as the base that patch is rebuilt from).
        if base && rebuilt.leaves.is_none() && rebuilt.bytes.len() > parallel::LEAF {
            rebuilt.leaves = Some(parallel::leaves(&rebuilt.bytes));
        }
        // Cut (only the changed region again, when the base is the version kept here).
        let cuts = (rebuilt.bytes.len() >= cltrap_capture::chunks::MIN_CHUNKED).then(|| {
            rebuilt
                .like
                .as_ref()
                .and_then(|(_, cuts, region)| {
                    parallel::cut_and_hash_like(&rebuilt.bytes, cuts, *region)
                })
                .unwrap_or_else(|| parallel::cut_and_hash(&rebuilt.bytes))
        });
        // A file of its name that is no good copy (damaged, or planted: `stored_whole` said so)
        // goes, so that the store writes the content instead of taking that file for it.
        for bad in [
            writer::index_path(&self.dir, &r.hash),
            writer::blob_path(&self.dir, &r.hash),
        ]
        .into_iter()
        .filter(|_| !self.store.is_known(&r.hash))
        {
            if std::fs::symlink_metadata(&bad).is_ok() {
                let _ = std::fs::remove_file(&bad);
            }
        }
        let written = self
            .store
            .put_content_batched(
                batch,
                &r.hash,
                &rebuilt.bytes,
                cuts.as_deref().unwrap_or(&[]),
            )
            .map_err(|source| CompactError::Store {
                dir: self.dir.clone(),
                source,
            })?;
        report.contents += 1;
        self.beat();
        // A content in parts is stored once, from all of its parts' bytes.
        report.raw_bytes += if r.part.is_some() {
            r.content_len()
        } else {
            r.len
        };
        report.stored_bytes += written;
        if r.patch.is_some() {
            report.patches += 1;
            report.rebuilt_bytes += r.content_len();
        }
        if let (true, Some(cuts), Some(leaves)) = (base, cuts, rebuilt.leaves) {
            self.recent.keep(Version {
                hash: r.hash.clone(),
                bytes: rebuilt.bytes,
                leaves,
                cuts,
            });
        }
        Ok(true)
    }

    /// The content of record `r` of segment `file`, checked against its digest: read whole,
    /// or rebuilt from its base (the last version this compactor stored when it is that
    /// one, else read from the store or the spool) and its region. Err: why not, as a
    /// sentence part.
    fn rebuild(
        &self,
        file: &std::fs::File,
        r: &spool::Record,
        again: bool,
        report: &mut Report,
    ) -> Result<Rebuilt, String> {
        let read = |len: u64, offset: u64| -> Result<Vec<u8>, String> {
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            let mut bytes = cltrap_capture::bulk::zeroed(len)
                .ok_or_else(|| format!("its record claims {len} bytes, more than fit in memory"))?;
            cltrap_capture::bulk::read_exact_at(file, &mut bytes, offset)
                .map_err(|e| format!("its bytes cannot be read ({e})"))?;
            Ok(bytes)
        };
        if let Some(part) = r.part {
            // Put together from every part (this one and those in other segments), checked.
            let bytes = self
                .contents
                .blob_of_size(&r.hash, part.total)
                .map_err(|e| format!("it is spooled in parts, and they cannot be read: {e}"))?;
            return Ok(Rebuilt {
                bytes,
                leaves: None,
                like: None,
            });
        }
        let Some(p) = &r.patch else {
            let bytes = read(r.len, r.offset)?;
            let leaves = (bytes.len() > parallel::LEAF).then(|| parallel::leaves(&bytes));
            let hash = match &leaves {
                Some(l) => parallel::root(l, bytes.len()),
                None => writer::digest(&bytes),
            };
            if hash != r.hash {
                return Err("it does not match its digest (damaged)".into());
            }
            return Ok(Rebuilt {
                bytes,
                leaves,
                like: None,
            });
        };
        if let Some(why) = p.problem(&r.hash, r.len) {
            return Err(why);
        }
        let total = usize::try_from(p.total)
            .map_err(|_| "its length does not fit in memory".to_string())?;
        let data = read(r.len, r.offset)?;
        let (at, end) = p.hull().ok_or_else(|| "it has no ranges".to_string())?;
        let mut kept = self.recent.take(&p.base, again);
        // (Only a base the versions rebuilt from it leave room for in memory.)
        if kept.is_none() && again && total > parallel::LEAF && total <= RECENT_MAX / 2 {
            // Read back once, and kept for the other patch records of the chain on it.
            report.bases_read += 1;
            let bytes = self
                .contents
                .blob_of_size(&p.base, p.total)
                .map_err(|e| format!("its base, content {}, cannot be read: {e}", p.base))?;
            let v = Version {
                hash: p.base.clone(),
                leaves: parallel::leaves(&bytes),
                cuts: parallel::cut_and_hash(&bytes),
                bytes,
            };
            kept = self.recent.keep_copy(v);
        }
        let (mut bytes, old) = match kept.filter(|v| v.bytes.len() == total) {
            Some(v) => (v.bytes, Some((v.leaves, v.cuts))),
            None => {
                report.bases_read += 1;
                let base = self
                    .contents
                    .blob_of_size(&p.base, p.total)
                    .map_err(|e| format!("its base, content {}, cannot be read: {e}", p.base))?;
                (base, None)
            }
        };
        p.apply(&mut bytes, &data)?;
        let leaves = (bytes.len() > parallel::LEAF).then(|| match &old {
            // Only the leaves the ranges touch are hashed again.
            Some((leaves, _)) => {
                let ranges: Vec<(usize, usize)> = p
                    .ranges
                    .iter()
                    .map(|&(a, n)| (a as usize, a.saturating_add(n) as usize))
                    .collect();
                let mut leaves = leaves.clone();
                if parallel::rehash_leaves(&bytes, &mut leaves, &ranges) {
                    leaves
                } else {
                    parallel::leaves(&bytes)
                }
            }
            None => parallel::leaves(&bytes),
        });
        let hash = match &leaves {
            Some(l) => parallel::root(l, bytes.len()),
            None => writer::digest(&bytes),
        };
        if hash != r.hash {
            return Err(format!(
                "rebuilt from its base, content {}, it does not match its digest (damaged)",
                p.base
            ));
        }
        let like = old
            .map(|(_, cuts)| cuts)
            .filter(|c| !c.is_empty() && at < end)
            .map(|cuts| (p.base.clone(), cuts, (at, end)));
        Ok(Rebuilt {
            bytes,
            leaves,
            like,
        })
    }

    /// Whether the store holds content `hash` of `len` bytes already, so that its spooled
    /// copy may go: stored by this compactor, or found on disk as a whole blob with that
    /// digest, or (no blob of its name) a chunk index that parses for that length, each of its
    /// chunks within a pack or chunk file that is there. Why not the index's name alone: a damaged or planted
    /// index of that name (a capture from elsewhere) would have the spool's good copy
    /// deleted and the content lost. (The chunks' bytes are not read again here: that costs
    /// reading every content a capture appended to holds once more.)
    fn stored_whole(&self, hash: &str, len: u64) -> bool {
        if self.store.is_known(hash) {
            return true;
        }
        let regular_len = |p: &Path| {
            std::fs::symlink_metadata(p)
                .ok()
                .filter(|m| m.file_type().is_file())
                .map(|m| m.len())
        };
        // A whole blob is what readers try first: it must be the content (its digest checked),
        // and anything else at its name (of another length, damaged, not a file) means no.
        let blob = writer::blob_path(&self.dir, hash);
        if std::fs::symlink_metadata(&blob).is_ok() {
            return regular_len(&blob) == Some(len)
                && cltrap_capture::safe_open::read_regular(&blob, len)
                    .is_ok_and(|bytes| writer::digest(&bytes) == hash);
        }
        let Ok(text) =
            cltrap_capture::safe_open::read_regular(&writer::index_path(&self.dir, hash), 1 << 26)
        else {
            return false;
        };
        let Some((size, chunks)) = std::str::from_utf8(&text)
            .ok()
            .and_then(|t| cltrap_capture::chunks::parse_index(t).ok())
        else {
            return false;
        };
        let total: u64 = chunks.iter().map(|c| c.len as u64).sum();
        size == len
            && total == len
            && chunks.iter().all(|c| match &c.at {
                Some(at) => regular_len(&writer::pack_path(&self.dir, &at.pack))
                    .is_some_and(|n| at.offset.saturating_add(at.stored as u64) <= n),
                None => regular_len(&writer::chunk_path(&self.dir, &c.hash)).is_some(),
            })
    }

    /// Whether the store holds content `hash` already (whole, or its chunk index).
    fn stored(&self, hash: &str) -> bool {
        let is = |p: PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
        self.store.is_known(hash)
            || is(writer::index_path(&self.dir, hash))
            || is(writer::blob_path(&self.dir, hash))
    }
}

/// Whether the capture folder `dir` has a spool with segments.
pub fn has_spool(dir: &Path) -> bool {
    spool::segments(dir).is_ok_and(|s| !s.is_empty())
}

/// `cltrap compact DIR`: compacts every sealed segment, waiting for a compactor already at
/// work to finish first.
pub fn compact(dir: &Path) -> Result<Report, CompactError> {
    let _lock = spool::lock_compactor(dir, access_of(dir)).map_err(|source| CompactError::Io {
        path: dir.join(SPOOL_DIR),
        source,
    })?;
    // No application runs beside it: every core, not the shim's share of them.
    parallel::allow_all_cores();
    Compactor::new(dir).pass()
}

/// What the first command that opens a capture with a spool does: compacts it, saying so in
/// one line on stderr. Quiet when there is nothing to compact, another compactor is at work,
/// or the folder cannot be written (a read-only capture is read from its spool).
pub fn implicit(dir: &Path) {
    if !has_spool(dir) {
        return;
    }
    let Ok(Some(_lock)) = spool::try_lock_compactor(dir, access_of(dir)) else {
        return;
    };
    parallel::allow_all_cores();
    match Compactor::new(dir).pass() {
        Ok(r) if r.said() => {
            eprintln!("cltrap: {}", r.line(dir));
            for p in &r.problems {
                eprintln!("cltrap: {p}");
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!("cltrap: {e}; its contents are read from the spool"),
    }
}

#[cfg(test)]
mod tests;
