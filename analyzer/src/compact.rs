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
//! store's own order: an index exists only once its chunks do), the filesystem is synced
//! once per pass (`syncfs`: a `fsync` per file written was three times slower), and only then
//! are the pass's segments deleted. A compaction killed at any point leaves every
//! content in the spool or in the store (both, at worst); the next one skips contents whose
//! index exists and drops the segment, so compacting again is idempotent. Half-written
//! packs (temporary names) of a killed compactor are left behind, unnamed by any index.
//! A content whose bytes do not match its digest (damage, or a forged spool) is not stored
//! and its segment is kept; a record cut off at a segment's end (its writer died while
//! writing it: no launch names it) is dropped with its segment; the compaction says which.

use cltrap_capture::spool::{self, SPOOL_DIR};
use cltrap_capture::writer::{self, BlobStore};
use cltrap_capture::writer_fs::Access;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Bytes of spooled contents read, and bytes written to the store for them.
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    /// Seconds spent compacting (not waiting for segments).
    pub busy_secs: f64,
    /// The most bytes seen in the spool at the start of a pass.
    pub peak_spool_bytes: u64,
    /// Contents left in the spool because they are damaged, each as one sentence.
    pub problems: Vec<String>,
}

impl Report {
    fn add(&mut self, other: Report) {
        self.segments += other.segments;
        self.contents += other.contents;
        self.raw_bytes += other.raw_bytes;
        self.stored_bytes += other.stored_bytes;
        self.busy_secs += other.busy_secs;
        self.peak_spool_bytes = self.peak_spool_bytes.max(other.peak_spool_bytes);
        for p in other.problems {
            if !self.problems.contains(&p) {
                self.problems.push(p);
            }
        }
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
        format!(
            "compacted the spool of {}: {} content(s), {:.1} MB spooled into {:.1} MB stored, {:.2} s ({:.0} MB/s), spool peak {:.1} MB",
            dir.display(),
            self.contents,
            self.raw_bytes as f64 / (1 << 20) as f64,
            self.stored_bytes as f64 / (1 << 20) as f64,
            self.busy_secs,
            self.throughput_mb_s(),
            self.peak_spool_bytes as f64 / (1 << 20) as f64,
        )
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
}

impl Compactor {
    fn new(dir: &Path) -> Compactor {
        let store = BlobStore::with_access(dir, access_of(dir));
        store.learn_stored_chunks();
        Compactor {
            dir: dir.to_path_buf(),
            store,
        }
    }

    /// Compacts every sealed segment once (segments a writer holds are left for later).
    fn pass(&self) -> Result<Report, CompactError> {
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
        for name in spool::segments(&self.dir).map_err(io(&spool_dir))? {
            let path = spool_dir.join(&name);
            let file = match cltrap_capture::reader::open_inside(&self.dir, &[SPOOL_DIR, &name], u64::MAX) {
                Ok(f) => f,
                Err(cltrap_capture::reader::OpenError::NotFound) => continue,
                Err(cltrap_capture::reader::OpenError::Refused(why)) => {
                    report.problems.push(format!("{} is refused: {why}", path.display()));
                    continue;
                }
                Err(cltrap_capture::reader::OpenError::Io(e)) => return Err(io(&path)(e)),
            };
            // Held by a live writer: not sealed yet.
            if file.try_lock().is_err() {
                continue;
            }
            let started = Instant::now();
            if self.segment(&path, &file, &mut report)? {
                // Kept locked (no other compactor takes it) until it is dropped below.
                done.push((path, file));
            }
            report.busy_secs += started.elapsed().as_secs_f64();
        }
        if !done.is_empty() {
            // Everything they hold is in the store: flush it to disk (once per pass: one
            // `syncfs` costs less than a `fsync` per file written), then drop the segments.
            let started = Instant::now();
            sync_filesystem(&self.dir).map_err(io(&self.dir))?;
            for (path, _file) in &done {
                std::fs::remove_file(path).map_err(io(path))?;
            }
            if let Ok(d) = std::fs::File::open(&spool_dir) {
                let _ = d.sync_all();
            }
            report.segments += done.len();
            report.busy_secs += started.elapsed().as_secs_f64();
        }
        Ok(report)
    }

    /// Stores the contents of one locked segment; false when one is damaged (it stays).
    fn segment(
        &self,
        path: &Path,
        file: &std::fs::File,
        report: &mut Report,
    ) -> Result<bool, CompactError> {
        let io = |source| CompactError::Io {
            path: path.to_path_buf(),
            source,
        };
        let scan = spool::scan(file).map_err(io)?;
        let mut whole = true;
        match scan.tail {
            spool::Tail::Clean => {}
            spool::Tail::Bad { .. } => {
                report.problems.push(format!(
                    "{}: {}; the segment is kept",
                    path.display(),
                    scan.tail.problem().unwrap_or_default()
                ));
                whole = false;
            }
            // Its writer died while writing it (or the file was damaged): the bytes are not
            // there to store. Said, and dropped with the segment.
            spool::Tail::Cut { .. } => report.problems.push(format!(
                "{}: {}; the cut record is dropped with the segment",
                path.display(),
                scan.tail.problem().unwrap_or_default()
            )),
        }
        let mut bytes = Vec::new();
        for r in &scan.records {
            if self.stored(&r.hash) {
                continue;
            }
            let len = usize::try_from(r.len).unwrap_or(usize::MAX);
            bytes.clear();
            if bytes.try_reserve_exact(len).is_err() {
                report.problems.push(format!(
                    "{}: the record of content {} claims {} bytes, more than fit in memory; the segment is kept",
                    path.display(),
                    r.hash,
                    r.len
                ));
                whole = false;
                continue;
            }
            bytes.resize(len, 0);
            file.read_exact_at(&mut bytes, r.offset).map_err(io)?;
            if writer::digest(&bytes) != r.hash {
                report.problems.push(format!(
                    "{}: content {} at byte {} does not match its digest (damaged); the segment is kept",
                    path.display(),
                    r.hash,
                    r.offset
                ));
                whole = false;
                continue;
            }
            let written = self
                .store
                .put_content(&r.hash, &bytes)
                .map_err(|source| CompactError::Store {
                    dir: self.dir.clone(),
                    source,
                })?;
            report.contents += 1;
            report.raw_bytes += r.len;
            report.stored_bytes += written;
        }
        Ok(whole)
    }

    /// Whether the store holds content `hash` already (whole, or its chunk index).
    fn stored(&self, hash: &str) -> bool {
        let is = |p: PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
        self.store.is_known(hash)
            || is(writer::index_path(&self.dir, hash))
            || is(writer::blob_path(&self.dir, hash))
    }
}

/// Flushes the filesystem holding `dir` (the packs and indexes just written) to disk.
fn sync_filesystem(dir: &Path) -> std::io::Result<()> {
    let d = std::fs::File::open(dir)?;
    // SAFETY: syncfs on a descriptor we own.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
    match Compactor::new(dir).pass() {
        Ok(r) if r.contents > 0 || r.segments > 0 || !r.problems.is_empty() => {
            eprintln!("cltrap: {}", r.line(dir));
            for p in &r.problems {
                eprintln!("cltrap: {p}");
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!("cltrap: {e}; its contents are read from the spool"),
    }
}

/// A compactor running on its own thread while `cltrap run`'s application runs.
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Report, CompactError>>,
}

impl Background {
    /// Starts compacting capture folder `dir` (waiting for the application to make its
    /// spool), one pass every few milliseconds.
    pub fn start(dir: &Path) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let dir = dir.to_path_buf();
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // The application makes the capture folder and its spool at its first launch.
            let lock = loop {
                if dir.join(SPOOL_DIR).is_dir() {
                    if let Ok(Some(l)) = spool::try_lock_compactor(&dir, access_of(&dir)) {
                        break Some(l);
                    }
                }
                if stopping.load(Ordering::Relaxed) {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let mut total = Report::default();
            let Some(_lock) = lock else {
                return Ok(total);
            };
            let compactor = Compactor::new(&dir);
            loop {
                let last = stopping.load(Ordering::Relaxed);
                let r = compactor.pass()?;
                let idle = r.segments == 0 && r.contents == 0;
                total.add(r);
                if last {
                    return Ok(total);
                }
                if idle {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        Background { stop, thread }
    }

    /// After the application exited: compacts what is left and returns what was done.
    pub fn finish(self) -> Result<Report, CompactError> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_else(|_| {
            Err(CompactError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other("the compaction thread panicked"),
            })
        })
    }
}
