//! The spool: where the application's process puts large contents, raw, for a `cltrap`
//! process to compact later.
//!
//! Why: cutting a content into chunks (FastCDC), hashing the chunks and compressing them
//! (zstd) is compute-bound, about 2 GB/s on 8 threads; done inside the application's process
//! it made applications that rewrite large buffers at every launch wait for it (a 1-D stencil
//! with `clFinish` per step ran 8× slower). Appending the raw bytes to a file costs what the
//! page cache costs; the digest is already known (the shim computed it to name the content).
//! Compaction into packs happens in the `cltrap` process (the analyzer's `compact` module),
//! which the shim does not link.
//!
//! Layout: `spool/` in the capture folder holds *segments* `spool/<pid>-<ns>-<n>.spool`, each
//! written by one process only, as a sequence of records: [`MAGIC`], the content's digest
//! (64 lower-case hex digits), its length (u64, little-endian), then its bytes. A writer holds
//! an exclusive `flock` on the segment it appends to; a segment nobody holds is *sealed* (its
//! writer moved on to a new one, exited or died) and may be compacted. The writer of a
//! launch record appends the contents it names before the record, so a record's contents are
//! always whole in a segment or in the store: a spooled content is valid content, and a
//! capture is readable at every moment. A record cut off at a segment's end (its writer died
//! mid-write) names no launch and is dropped with its segment.
//!
//! A compactor holds an exclusive `flock` on `spool/compactor.lock` while it runs; the
//! writer's back-pressure ([`SpoolWriter::put`]) waits for room only while one does (an
//! application under a bare `LD_PRELOAD` has nobody to wait for: its spool is bounded by the
//! disk budget instead, and compacted by the first `cltrap` command that opens it).
//!
//! Readers ([`crate::reader`]) find a content whole, chunked, or else in the spool, by
//! scanning the segments' record headers ([`scan`]); a segment is untrusted input like any
//! file of a capture: opened without following links ([`crate::safe_open`]), every length
//! checked against the file, every content checked against its digest.

use crate::writer_fs::{self, Access};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The spool's folder inside a capture folder.
pub const SPOOL_DIR: &str = "spool";
/// How a segment's name ends.
pub const SEGMENT_SUFFIX: &str = ".spool";
/// The file a compactor holds an exclusive lock on while it runs (inside [`SPOOL_DIR`]).
pub const COMPACTOR_LOCK: &str = "compactor.lock";
/// The first bytes of every record.
pub const MAGIC: &[u8; 8] = b"cltspl01";
/// Bytes of a record's header: magic, digest in hex, length.
pub const HEADER: usize = 8 + 64 + 8;
/// Most bytes one segment takes before its writer starts another (so compaction can take the
/// sealed one while the application runs).
pub const SEGMENT_MAX: u64 = 64 << 20;

/// One whole record of a segment: a content's digest and where its bytes lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub hash: String,
    /// Offset of the content's first byte in the segment.
    pub offset: u64,
    pub len: u64,
}

/// How a segment's records end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// After its last whole record, the file ends.
    Clean,
    /// The last record claims more bytes than the file has (its writer died mid-write, is
    /// writing it now, or the file was cut or forged).
    Cut {
        hash: String,
        at: u64,
        claimed: u64,
        have: u64,
    },
    /// At `at` no record starts (no magic, or a digest that is not hex).
    Bad { at: u64 },
}

/// The records of one segment, in order, and how they end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub records: Vec<Record>,
    pub tail: Tail,
}

impl Tail {
    /// What is wrong, as a sentence part, or None for a clean end.
    pub fn problem(&self) -> Option<String> {
        match self {
            Tail::Clean => None,
            Tail::Cut {
                hash,
                at,
                claimed,
                have,
            } => Some(format!(
                "the record of content {hash} at byte {at} claims {claimed} bytes but only {have} follow (cut off or forged)"
            )),
            Tail::Bad { at } => Some(format!("no spool record starts at byte {at}")),
        }
    }
}

/// Reads the record headers of an open segment (one `pread` per record, the contents are
/// not read), up to the file's current length.
pub fn scan(file: &File) -> std::io::Result<Scan> {
    let len = file.metadata()?.len();
    let mut records = Vec::new();
    let mut at = 0u64;
    let mut header = [0u8; HEADER];
    let tail = loop {
        if at == len {
            break Tail::Clean;
        }
        if len - at < HEADER as u64 {
            break Tail::Cut {
                hash: String::new(),
                at,
                claimed: HEADER as u64,
                have: len - at,
            };
        }
        file.read_exact_at(&mut header, at)?;
        let hash = &header[8..72];
        if &header[..8] != MAGIC || !hash.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
            break Tail::Bad { at };
        }
        let hash = String::from_utf8_lossy(hash).into_owned();
        let mut n = [0u8; 8];
        n.copy_from_slice(&header[72..80]);
        let claimed = u64::from_le_bytes(n);
        let offset = at + HEADER as u64;
        if claimed > len - offset {
            break Tail::Cut {
                hash,
                at,
                claimed,
                have: len - offset,
            };
        }
        records.push(Record {
            hash,
            offset,
            len: claimed,
        });
        at = offset + claimed;
    };
    Ok(Scan { records, tail })
}

/// Whether `name` is a segment's name as writers make them (plain, no leading dot).
pub fn is_segment_name(name: &str) -> bool {
    name.strip_suffix(SEGMENT_SUFFIX).is_some_and(|stem| {
        !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// The names of the segments in the capture folder `dir`, sorted (empty when it has no
/// spool). Err: `spool` is not a real folder (a link is refused, never followed).
pub fn segments(dir: &Path) -> std::io::Result<Vec<String>> {
    let spool = dir.join(SPOOL_DIR);
    match std::fs::symlink_metadata(&spool) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
        Ok(m) if !m.file_type().is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a folder (a symbolic link or a file)", spool.display()),
            ))
        }
        Ok(_) => {}
    }
    let mut names: Vec<String> = std::fs::read_dir(&spool)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_segment_name(n))
        .collect();
    names.sort();
    Ok(names)
}

/// Bytes the spool of capture folder `dir` holds now (its segments' lengths).
pub fn live_bytes(dir: &Path) -> u64 {
    let spool = dir.join(SPOOL_DIR);
    segments(dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| std::fs::symlink_metadata(spool.join(n)).ok())
        .map(|m| m.len())
        .sum()
}

/// The compactor's lock of a capture, held while a compactor runs (see the module doc).
pub struct CompactorLock {
    _file: File,
}

/// Opens (creating) the compactor lock file of capture folder `dir`.
fn compactor_file(dir: &Path, access: Access) -> std::io::Result<File> {
    writer_fs::ensure_subdirs(dir, Path::new(SPOOL_DIR), access)?;
    writer_fs::open_regular(
        &dir.join(SPOOL_DIR).join(COMPACTOR_LOCK),
        writer_fs::Open::ReadWrite,
        access,
    )
}

/// Takes the compactor lock of capture folder `dir` without waiting: None when another
/// compactor holds it.
pub fn try_lock_compactor(dir: &Path, access: Access) -> std::io::Result<Option<CompactorLock>> {
    let file = compactor_file(dir, access)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(CompactorLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the compactor lock of capture folder `dir`, waiting for another compactor to finish.
pub fn lock_compactor(dir: &Path, access: Access) -> std::io::Result<CompactorLock> {
    let file = compactor_file(dir, access)?;
    file.lock()?;
    Ok(CompactorLock { _file: file })
}

/// Whether a compactor holds the lock of capture folder `dir` now.
pub fn compactor_attached(dir: &Path) -> bool {
    let path = dir.join(SPOOL_DIR).join(COMPACTOR_LOCK);
    let Ok(file) = writer_fs::open_regular(&path, writer_fs::Open::Read, Access::PRIVATE) else {
        return false;
    };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// Free bytes (for this user) of the filesystem that holds `path`, or of the nearest folder
/// above it that exists (a capture folder is made at the first launch). None: not known.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let mut at = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    loop {
        if let Ok(c) = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()) {
            // SAFETY: statvfs fills the struct for a NUL-terminated path.
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0 {
                return Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64));
            }
        }
        if !at.pop() {
            return None;
        }
    }
}

/// What the spool cost the application, for `CLTRAP_STATS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpoolStats {
    /// Records appended and their bytes (headers included).
    pub records: u64,
    pub bytes: u64,
    /// Times the application waited for compaction (the spool past its bound), and how long.
    pub waits: u64,
    pub wait_ns: u64,
    /// The most bytes this writer saw in the spool (its own estimate: measured when near the
    /// bound, counted between).
    pub peak_bytes: u64,
    /// The bound ([`crate::Settings::spool_max_bytes`]).
    pub bound: u64,
}

/// The segment a writer appends to.
struct Segment {
    file: File,
    len: u64,
}

/// A process's side of the spool: appends contents to its own segment, waiting for a
/// compactor while the spool is past its bound. `Sync`: the shim stores from several threads.
pub struct SpoolWriter {
    dir: PathBuf,
    access: Access,
    bound: u64,
    segment_max: u64,
    current: Mutex<Option<Segment>>,
    /// Bytes believed in the spool: measured ([`live_bytes`]) when near the bound, plus what
    /// this writer appended since.
    estimate: Mutex<u64>,
    made: AtomicU64,
    records: AtomicU64,
    bytes: AtomicU64,
    waits: AtomicU64,
    wait_ns: AtomicU64,
    peak: AtomicU64,
}

impl SpoolWriter {
    /// The spool of capture folder `dir` (its folder made now), bounded to `bound` bytes
    /// while a compactor runs (0: no bound).
    pub fn new(dir: &Path, access: Access, bound: u64) -> std::io::Result<SpoolWriter> {
        writer_fs::ensure_subdirs(dir, Path::new(SPOOL_DIR), access)?;
        let segment_max = if bound == 0 {
            SEGMENT_MAX
        } else {
            (bound / 4).clamp(1 << 20, SEGMENT_MAX)
        };
        Ok(SpoolWriter {
            dir: dir.to_path_buf(),
            access,
            bound,
            segment_max,
            current: Mutex::new(None),
            estimate: Mutex::new(live_bytes(dir)),
            made: AtomicU64::new(0),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        })
    }

    /// Appends the content `bytes` whose digest is `hash` (computed by the caller) as one
    /// record; returns the bytes it took. When the spool would pass its bound and a
    /// compactor runs, first seals this writer's segment and waits until compaction made
    /// room (counted in [`SpoolStats`]). When this returns, the record is whole in the page
    /// cache: it survives the process dying in any way.
    pub fn put(&self, hash: &str, bytes: &[u8]) -> std::io::Result<u64> {
        if hash.len() != 64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a spooled content is named by a 64-digit digest",
            ));
        }
        let need = (HEADER + bytes.len()) as u64;
        self.make_room(need);
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..72].copy_from_slice(hash.as_bytes());
        header[72..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current
            .as_ref()
            .is_some_and(|s| s.len > 0 && s.len + need > self.segment_max)
        {
            // Sealed: the lock goes with the descriptor, and a compactor may take it.
            *current = None;
        }
        if current.is_none() {
            *current = Some(self.new_segment()?);
            // What the spool holds now (a compactor may have taken some): the estimate and
            // the peak stay close to the truth.
            let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
            *est = live_bytes(&self.dir);
        }
        let Some(seg) = current.as_mut() else {
            return Err(std::io::Error::other("no spool segment"));
        };
        seg.file.write_all(&header)?;
        seg.file.write_all(bytes)?;
        seg.len += need;
        drop(current);
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(need, Ordering::Relaxed);
        let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
        *est += need;
        self.peak.fetch_max(*est, Ordering::Relaxed);
        Ok(need)
    }

    /// Waits while the spool holds more than its bound minus `need` and a compactor runs,
    /// sealing this writer's segment first so that the compactor can take it.
    fn make_room(&self, need: u64) {
        if self.bound == 0 {
            return;
        }
        let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
        if *est + need <= self.bound {
            return;
        }
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let start = Instant::now();
        let mut waited = false;
        loop {
            *est = live_bytes(&self.dir);
            if *est == 0 || *est + need <= self.bound || !compactor_attached(&self.dir) {
                break;
            }
            waited = true;
            std::thread::sleep(Duration::from_millis(1));
        }
        if waited {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.wait_ns
                .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// A new segment of this process, locked before it is visible: it is made under a name
    /// that is not a segment's (a leading dot), locked, then renamed. (Created under its own
    /// name, a compactor could find it unlocked, take it for sealed and empty, and delete it
    /// before this process locked it and appended contents that would then be lost.)
    fn new_segment(&self) -> std::io::Result<Segment> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-{nanos}-{n}{SEGMENT_SUFFIX}", std::process::id());
        let path = self.dir.join(SPOOL_DIR).join(&name);
        let hidden = self.dir.join(SPOOL_DIR).join(format!(".{name}"));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(self.access.file_mode())
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&hidden)?;
        let visible = file.lock().and_then(|()| std::fs::rename(&hidden, &path));
        if let Err(e) = visible {
            let _ = std::fs::remove_file(&hidden);
            return Err(e);
        }
        Ok(Segment { file, len: 0 })
    }

    /// What the spool cost so far.
    pub fn stats(&self) -> SpoolStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SpoolStats {
            records: get(&self.records),
            bytes: get(&self.bytes),
            waits: get(&self.waits),
            wait_ns: get(&self.wait_ns),
            peak_bytes: get(&self.peak),
            bound: self.bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_a_cut_tail_is_named() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let a = crate::writer::digest(b"first");
        let b = crate::writer::digest(&[9u8; 5000]);
        w.put(&a, b"first").unwrap();
        w.put(&b, &[9u8; 5000]).unwrap();
        drop(w);
        let names = segments(t.path()).unwrap();
        assert_eq!(names.len(), 1);
        let path = t.path().join(SPOOL_DIR).join(&names[0]);
        let s = scan(&File::open(&path).unwrap()).unwrap();
        assert_eq!(s.tail, Tail::Clean);
        assert_eq!(s.records.len(), 2);
        assert_eq!((s.records[1].hash.as_str(), s.records[1].len), (b.as_str(), 5000));
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(s.records[1].offset + 10).unwrap();
        let s = scan(&File::open(&path).unwrap()).unwrap();
        assert_eq!(s.records.len(), 1);
        assert!(matches!(s.tail, Tail::Cut { claimed: 5000, have: 10, .. }), "{:?}", s.tail);
        assert!(s.tail.problem().unwrap().contains(&b));
    }

    #[test]
    fn a_segment_is_locked_before_it_appears_under_a_segment_name() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let a = crate::writer::digest(b"first");
        w.put(&a, b"first").unwrap();
        // Every file of the spool folder is the segment, under its final name, and a
        // compactor cannot take its lock while the writer holds it.
        let names: Vec<String> = std::fs::read_dir(t.path().join(SPOOL_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != COMPACTOR_LOCK)
            .collect();
        assert_eq!(names, segments(t.path()).unwrap(), "a hidden file was left behind");
        let seg = File::open(t.path().join(SPOOL_DIR).join(&names[0])).unwrap();
        assert!(seg.try_lock().is_err(), "the writer's segment is not locked");
        drop(w);
        assert!(seg.try_lock().is_ok(), "a segment its writer let go stays locked");
    }

    #[test]
    fn only_plain_segment_names_count() {
        assert!(is_segment_name("12-34-0.spool"));
        for n in [".tmp.spool", "../x.spool", ".spool", "a b.spool", "x.spool.bak", COMPACTOR_LOCK] {
            assert!(!is_segment_name(n), "{n}");
        }
    }
}
