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
//! written by one process only, as a sequence of records of two kinds. A *whole* record:
//! [`MAGIC`], the content's digest (64 lower-case hex digits), its length (u64,
//! little-endian), then its bytes. A *patch* record ([`PATCH_MAGIC`], format version 5): the
//! content's digest, the digest of its *base* (an earlier version of the same buffer that
//! this capture holds, spooled or stored), the content's length, the number of ranges where
//! it differs from the base and the bytes they hold (three u64, little-endian), a table of
//! the ranges (offset and length, two u64 each, ascending, not overlapping), then the ranges'
//! bytes. Why: an application that rewrites a slice of a large buffer at every launch spooled
//! the whole buffer each time, and one that rewrites an anti-diagonal of a matrix (a
//! wavefront) changes a few bytes of every row: ranges of [`RANGE_BLOCK`] bytes hold what
//! changed. A writer writes a patch only on a base it wrote itself, at most
//! [`PATCH_CHAIN_MAX`] patches deep (then a whole record again), so a reader rebuilds any
//! content from at most that many records; readers refuse longer chains, cycles, missing
//! bases and ranges past the content's end with one sentence each. A *part* record
//! ([`PART_MAGIC`], format version 7): the content's length, the offset and length of the
//! part (three u64, little-endian), the part's bytes, then the content's digest (64 hex
//! digits, last: a writer may start copying a part before the digest is known, and hash the
//! content meanwhile); the parts of one
//! content lie in segments of different lanes, so that several threads copy one large
//! content into the page cache at once (one thread copying into one file ran at 3.3–4.9 GB/s
//! on an H200 host, four threads into four files at 16 GB/s), and the content is found once
//! parts cover it without a gap. Its parts may be written in any order and after a patch on
//! the content; a reader that finds them incomplete does not have the content (no launch
//! record names it before every part is written), and a compactor that finds them
//! incomplete while a writer lives compacts that segment later. A writer holds
//! an exclusive `flock` on each segment it appends to (one per *lane*, [`LANES`]: records
//! planned on one thread may be written on others, each lane's in order); a segment nobody
//! holds is *sealed* (its writer moved on to a new one, exited or died) and may be
//! compacted. A child forked without exec lets go of its parent's segments at once
//! (`held.rs`: the lock goes with the open file, which the fork shares). The writer of a launch record appends the contents it names before the
//! record, so a record's contents are always whole in a segment or in the store: a spooled
//! content is valid content, and a capture is readable at every moment. A record cut off at
//! a segment's end (its writer died mid-write) names no launch and is dropped with its
//! segment.
//!
//! A compactor holds an exclusive `flock` on `spool/compactor.lock` while it runs; the
//! writer's back-pressure ([`SpoolWriter::write_planned`]) waits for room only while one
//! does (an application under a bare `LD_PRELOAD` has nobody to wait for: its spool is
//! bounded by the disk budget instead, and compacted by the first `cltrap` command that
//! opens it).
//!
//! Readers ([`crate::reader`]) find a content whole, chunked, or else in the spool, by
//! scanning the segments' record headers ([`scan`]); a segment is untrusted input like any
//! file of a capture: opened without following links ([`crate::safe_open`]), every length
//! checked against the file, every content checked against its digest.

mod held;
mod ranges;
mod record;
mod writer;

pub use ranges::{changed_ranges, mostly_changed, patch_small_enough, SAMPLED_BLOCKS};
pub use record::{scan, scan_at_most, scan_from, Part, Patch, Record, Scan, Tail, RECORDS_MAX};
pub use writer::{Planned, SpoolStats, SpoolWriter, LANES};

use crate::writer_fs::{self, Access};
use std::fs::File;
use std::path::Path;
use std::sync::Mutex;

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
/// The first bytes of every patch record (see the module doc).
pub const PATCH_MAGIC: &[u8; 8] = b"cltspl02";
/// Bytes of a patch record's header (before its table of ranges): magic, digest and base
/// digest in hex, the content's length, the number of ranges and the bytes they hold.
pub const PATCH_HEADER: usize = 8 + 64 + 64 + 3 * 8;
/// The first bytes of every part record (see the module doc).
pub const PART_MAGIC: &[u8; 8] = b"cltspl03";
/// Bytes of a part record's header: magic, the content's length, the part's offset in it
/// and its length. The part's bytes follow, then [`PART_TRAILER`].
pub const PART_HEADER: usize = 8 + 3 * 8;
/// Bytes after a part's: the content's digest in hex.
pub const PART_TRAILER: usize = 64;
/// Least bytes of one part: a content is cut into parts only where each holds at least
/// this much (a smaller part costs a record and a write more than it saves).
pub const PART_MIN: usize = 1 << 20;
/// Most ranges one patch record has (a writer merges ranges past it).
pub const RANGES_MAX: u64 = 1 << 16;
/// Granularity of the ranges a writer finds: bytes compared and spooled as one.
pub const RANGE_BLOCK: usize = 64;
/// Most patch records between a content and the whole record (or stored content) it is
/// rebuilt from: a writer writes a whole record past it, a reader refuses a longer chain.
/// Why 256: a reader reads one whole content and copies the ranges of each link (a
/// compactor usually has the base in memory), while a writer that rewrites a few bytes of a
/// 4 MB matrix at every launch spooled more whole copies than ranges at 64.
pub const PATCH_CHAIN_MAX: usize = 256;
/// Most bytes one segment takes before its writer starts another (so compaction can take the
/// sealed one while the application runs).
pub const SEGMENT_MAX: u64 = 64 << 20;
/// How long a segment stays open while a compactor is attached (`cltrap run`) before its
/// writer seals it at its next record, however little it holds. Why: segments sealed only
/// by size ([`SEGMENT_MAX`], [`SEGMENT_CONTENT_FACTOR`]) were sealed only at exit where an
/// application spools less than that per lane (Gaussian elimination's 115 MB of patch
/// records over four lanes), so all of its compaction came after the application ended.
pub const SEGMENT_AGE: std::time::Duration = std::time::Duration::from_millis(100);
/// Most bytes of contents one segment names (a patch record names its whole content) per
/// byte it may take ([`SEGMENT_MAX`] or the writer's own): compaction rebuilds, hashes and
/// cuts every content it names. Why: a wavefront whose launches each change one
/// anti-diagonal of a 16 MB matrix spooled 155 patch records in 36 MB, one segment sealed
/// only at exit, so all 2.5 GB of their contents were compacted after the application ended
/// (0.62 s on the H200, as long as the application's own run).
pub const SEGMENT_CONTENT_FACTOR: u64 = 4;

/// Whether `name` is a segment's name as writers make them (plain, no leading dot).
pub fn is_segment_name(name: &str) -> bool {
    name.strip_suffix(SEGMENT_SUFFIX).is_some_and(|stem| {
        !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// The writer a segment's name says (its leading `<pid>`, as text): segments of one writer
/// share it.
pub fn segment_writer(name: &str) -> &str {
    name.split('-').next().unwrap_or("")
}

/// Whether the process that named segment `name` (`<pid>-…`) still runs, other than this
/// one (a `cltrap` process compacts; it never writes segments of its own). Why: a live
/// writer may hold none of its segments for a moment (it sealed them all for a compactor,
/// or between two), and a content whose parts it has not all written yet is then no damage.
/// A reused pid or a forged name only makes a compactor leave a segment for later.
pub fn writer_alive(name: &str) -> bool {
    let Some(pid) = segment_writer(name)
        .parse::<i32>()
        .ok()
        .filter(|p| *p > 0 && *p as u32 != std::process::id())
    else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
                format!(
                    "{} is not a folder (a symbolic link or a file)",
                    spool.display()
                ),
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

/// How many times [`try_lock_compactor`] tries again while only writers' looks
/// ([`compactor_attached`]: a shared lock held for a few microseconds) hold the lock.
const LOOKS_WAITED: u32 = 1000;

/// Takes the compactor lock of capture folder `dir` without waiting for another compactor:
/// None when one holds it. A writer that looks whether a compactor is attached holds the
/// lock shared for a moment; such a look is waited out (up to [`LOOKS_WAITED`] tries 1 ms
/// apart), so that it does not pass for a compactor at work and the first command that opens
/// a capture does not skip its compaction for it.
pub fn try_lock_compactor(dir: &Path, access: Access) -> std::io::Result<Option<CompactorLock>> {
    use std::fs::TryLockError;
    let file = compactor_file(dir, access)?;
    // A second open file of the lock (a lock belongs to the open file): opened when needed.
    let mut probe: Option<File> = None;
    for _ in 0..LOOKS_WAITED {
        match file.try_lock() {
            Ok(()) => return Ok(Some(CompactorLock { _file: file })),
            Err(TryLockError::Error(e)) => return Err(e),
            Err(TryLockError::WouldBlock) => {}
        }
        // Held: exclusively by a compactor (a shared lock cannot be had), or shared by looks.
        let look = match probe.take() {
            Some(f) => f,
            None => compactor_file(dir, access)?,
        };
        match look.try_lock_shared() {
            Ok(()) => look.unlock()?,
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        probe = Some(look);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(None)
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
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Says that a compactor of capture folder `dir` is at work: sets the modification time of
/// its lock file to now (the file itself, never through a link), at most every 100 ms in
/// this process, so callers beat wherever work is done without timing it themselves. Why: a
/// writer past the spool's bound waits for room only while a compactor makes progress
/// ([`SpoolWriter`]'s stall check, 10 s), and a pass frees its segments only at
/// its end, after making what it wrote durable, which may take longer than that check waits.
pub fn heartbeat(dir: &Path) {
    static LAST: Mutex<Option<std::time::Instant>> = Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < std::time::Duration::from_millis(100)) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    let path = dir.join(SPOOL_DIR).join(COMPACTOR_LOCK);
    let Ok(c) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
    else {
        return;
    };
    // SAFETY: a NUL-terminated path; null times mean now; AT_SYMLINK_NOFOLLOW: the link itself.
    unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            std::ptr::null(),
            libc::AT_SYMLINK_NOFOLLOW,
        );
    }
}

/// The last [`heartbeat`] of capture folder `dir`'s compactor (None: no lock file).
pub fn last_heartbeat(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::symlink_metadata(dir.join(SPOOL_DIR).join(COMPACTOR_LOCK))
        .and_then(|m| m.modified())
        .ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::unix::fs::FileExt;

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
        assert_eq!(
            (s.records[1].hash.as_str(), s.records[1].len),
            (b.as_str(), 5000)
        );
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(s.records[1].offset + 10).unwrap();
        let s = scan(&File::open(&path).unwrap()).unwrap();
        assert_eq!(s.records.len(), 1);
        assert!(
            matches!(
                s.tail,
                Tail::Cut {
                    claimed: 5000,
                    have: 10,
                    ..
                }
            ),
            "{:?}",
            s.tail
        );
        assert!(s.tail.problem().unwrap().contains(&b));
    }

    /// A segment of more records than a scan reads ends crowded where the first record not
    /// read starts, and says so; one of that many records exactly is clean.
    #[test]
    fn a_segment_of_more_records_than_a_scan_reads_ends_crowded() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        for i in 0..5u8 {
            let bytes = [i; 100];
            w.put(&crate::writer::digest(&bytes), &bytes).unwrap();
        }
        drop(w);
        let name = segments(t.path()).unwrap().remove(0);
        let f = File::open(t.path().join(SPOOL_DIR).join(name)).unwrap();
        let all = scan(&f).unwrap();
        assert_eq!((all.records.len(), &all.tail), (5, &Tail::Clean));
        let exact = record::scan_at_most(&f, 0, 5).unwrap();
        assert_eq!(exact.tail, Tail::Clean);
        let crowded = record::scan_at_most(&f, 0, 3).unwrap();
        assert_eq!(crowded.records.len(), 3);
        assert_eq!(
            crowded.tail,
            Tail::Crowded {
                at: all.records[3].offset - HEADER as u64
            }
        );
        assert!(crowded.tail.problem().unwrap().contains("more than"));
    }

    /// A writer's look at the compactor lock (a shared lock for a moment) is waited out, not
    /// taken for a compactor at work; a compactor's exclusive lock is not.
    #[test]
    fn a_writers_look_does_not_pass_for_a_compactor() {
        // (A child another test forks meanwhile would hold the lock files open too.)
        let _one = crate::FORKS.lock().unwrap_or_else(|p| p.into_inner());
        let t = tempfile::tempdir().unwrap();
        let held = try_lock_compactor(t.path(), Access::PRIVATE).unwrap();
        assert!(held.is_some());
        assert!(compactor_attached(t.path()));
        assert!(try_lock_compactor(t.path(), Access::PRIVATE)
            .unwrap()
            .is_none());
        drop(held);
        assert!(!compactor_attached(t.path()));
        // A look held for 20 ms: the lock is had once it goes.
        let look = compactor_file(t.path(), Access::PRIVATE).unwrap();
        look.try_lock_shared().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let lets_go = std::thread::spawn(move || {
            rx.recv().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(look);
        });
        tx.send(()).unwrap();
        let lock = try_lock_compactor(t.path(), Access::PRIVATE).unwrap();
        lets_go.join().unwrap();
        assert!(lock.is_some(), "a look passed for a compactor at work");
    }

    /// A segment open for [`SEGMENT_AGE`] is sealed at the next record while a compactor is
    /// attached, however little it holds, and only then: without one, records go on into it.
    #[test]
    fn a_segment_is_sealed_for_its_age_only_while_a_compactor_is_attached() {
        for attached in [false, true] {
            let t = tempfile::tempdir().unwrap();
            let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
            let _lock = attached.then(|| {
                try_lock_compactor(t.path(), Access::PRIVATE)
                    .unwrap()
                    .expect("the compactor lock")
            });
            let put = |byte: u8| {
                let bytes = [byte; 100];
                w.put(&crate::writer::digest(&bytes), &bytes).unwrap();
            };
            put(1);
            std::thread::sleep(SEGMENT_AGE + std::time::Duration::from_millis(20));
            put(2);
            let names = segments(t.path()).unwrap();
            let counts: Vec<usize> = names
                .iter()
                .map(|n| {
                    let f = File::open(t.path().join(SPOOL_DIR).join(n)).unwrap();
                    scan(&f).unwrap().records.len()
                })
                .collect();
            let want = if attached { vec![1, 1] } else { vec![2] };
            assert_eq!(counts, want, "attached {attached}: {names:?}");
        }
    }

    #[test]
    fn zero_blocks_of_a_large_record_are_holes_and_read_back_as_zeros() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        // Data, 8 MiB of zeros, data, zeros up to a tail of zeros (always written).
        let mut bytes = vec![0u8; 10 << 20];
        for (i, b) in bytes[..100_000].iter_mut().enumerate() {
            *b = (i % 251) as u8 + 1;
        }
        bytes[(8 << 20) + 100_000 + 7] = 42;
        let hash = crate::writer::digest(&bytes);
        w.put(&hash, &bytes).unwrap();
        drop(w);
        let path = t
            .path()
            .join(SPOOL_DIR)
            .join(&segments(t.path()).unwrap()[0]);
        let f = File::open(&path).unwrap();
        let s = scan(&f).unwrap();
        assert_eq!(s.tail, Tail::Clean);
        assert_eq!(s.records.len(), 1);
        let r = &s.records[0];
        assert_eq!(
            (r.hash.as_str(), r.len),
            (hash.as_str(), bytes.len() as u64)
        );
        let mut back = vec![1u8; bytes.len()];
        f.read_exact_at(&mut back, r.offset).unwrap();
        assert!(back == bytes);
        // Of its 10 MiB, under 3 MiB take room on disk.
        let m = f.metadata().unwrap();
        assert!(m.len() > 10 << 20);
        assert!(
            m.blocks() * 512 < 3 << 20,
            "{} bytes allocated",
            m.blocks() * 512
        );
    }

    #[test]
    fn a_large_whole_record_is_cut_into_parts_of_whole_pages_and_scanned_back() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let bytes: Vec<u8> = (0..(5u32 << 20) + 123).map(|i| (i % 251) as u8).collect();
        let hash = crate::writer::digest(&bytes);
        let planned = w.plan(&hash, &bytes, None).unwrap();
        // At most one part per PART_MIN bytes; none for a small content or a part.
        assert!(planned.parts(1).is_none());
        let parts = planned.parts(8).unwrap();
        assert_eq!(parts.len(), 5);
        assert!(parts[0].parts(2).is_none());
        let small = w
            .plan(&crate::writer::digest(&[1u8; 4096]), &[1u8; 4096], None)
            .unwrap();
        assert!(small.parts(4).is_none());
        for p in parts.iter().rev() {
            w.write_planned(0, p, &bytes).unwrap();
        }
        assert_eq!(w.stats().parts, 5);
        drop(w);
        let path = t
            .path()
            .join(SPOOL_DIR)
            .join(&segments(t.path()).unwrap()[0]);
        let s = scan(&File::open(&path).unwrap()).unwrap();
        assert_eq!(s.tail, Tail::Clean);
        let mut covered: Vec<(u64, u64)> = s
            .records
            .iter()
            .map(|r| {
                let p = r.part.expect("a part record");
                assert_eq!(
                    (r.hash.as_str(), p.total),
                    (hash.as_str(), bytes.len() as u64)
                );
                assert_eq!(p.at % 4096, 0);
                (p.at, r.len)
            })
            .collect();
        covered.sort();
        let mut end = 0;
        for (at, len) in covered {
            assert_eq!(at, end);
            end += len;
        }
        assert_eq!(end, bytes.len() as u64);
        // A part that claims to end past its content: no record starts there.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&(1u64 << 40).to_le_bytes(), 24).unwrap();
        let s = scan(&File::open(&path).unwrap()).unwrap();
        assert_eq!((s.records.len(), s.tail), (0, Tail::Bad { at: 0 }));
    }

    #[test]
    fn parts_copied_before_their_digest_is_known_are_named_after_their_bytes() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let bytes: Vec<u8> = (0..3u32 << 20).map(|i| (i % 241) as u8).collect();
        let hash = crate::writer::digest(&bytes);
        assert!(Planned::unnamed_parts(PART_MIN as u64, 4).is_none());
        let parts = Planned::unnamed_parts(bytes.len() as u64, 4).unwrap();
        assert_eq!(parts.len(), 3);
        // Unnamed, a part cannot be written as a planned record.
        assert!(w.write_planned(1, &parts[0], &bytes).is_err());
        for (i, p) in parts.iter().enumerate() {
            w.write_part_named(1 + i, p, &bytes, || hash.clone())
                .unwrap();
        }
        // A digest that is no digest: refused, and its segment sealed behind the cut record.
        let again = Planned::unnamed_parts(bytes.len() as u64, 2).unwrap();
        assert!(w
            .write_part_named(4, &again[0], &bytes, || "nope".into())
            .is_err());
        drop(w);
        let mut found = 0;
        for name in segments(t.path()).unwrap() {
            let s = scan(&File::open(t.path().join(SPOOL_DIR).join(name)).unwrap()).unwrap();
            for r in &s.records {
                assert_eq!(r.hash, hash);
                found += 1;
            }
            if s.records.is_empty() {
                assert!(matches!(s.tail, Tail::Cut { .. }), "{:?}", s.tail);
            }
        }
        assert_eq!(found, 3);
        let read = crate::reader::Contents::new(t.path())
            .blob_of_size(&hash, bytes.len() as u64)
            .unwrap();
        assert!(read == bytes);
    }

    #[test]
    fn a_version_changed_nearly_everywhere_is_told_apart_by_a_sample() {
        let old: Vec<u8> = (0..4u32 << 20).map(|i| (i % 253) as u8).collect();
        let all: Vec<u8> = old.iter().map(|b| b ^ 1).collect();
        let whole = (0, old.len());
        assert!(mostly_changed(&all, &old, whole));
        // One block in eight changed (an anti-diagonal, a row in eight): ranges are found.
        let mut sparse = old.clone();
        for at in (0..old.len()).step_by(8 * RANGE_BLOCK) {
            sparse[at] ^= 1;
        }
        assert!(!mostly_changed(&sparse, &old, whole));
        // One column of a grid of 4 KiB rows: evenly spaced samples would all see it.
        let mut column = old.clone();
        for at in (0..old.len()).step_by(4096) {
            column[at] ^= 1;
        }
        assert!(!mostly_changed(&column, &old, whole));
        // All of a hull that is not more than three quarters of the content.
        let mut part = old.clone();
        for b in &mut part[..3 << 20] {
            *b ^= 1;
        }
        assert!(!mostly_changed(&part, &old, (0, 3 << 20)));
        // Small contents and other lengths are never sampled.
        assert!(!mostly_changed(&all[..4096], &old[..4096], (0, 4096)));
        assert!(!mostly_changed(&all, &old[1..], whole));
    }

    #[test]
    fn a_segment_names_a_running_writer_by_its_pid() {
        // This process, a process that runs (init), one that cannot exist, and no pid.
        assert!(!writer_alive(&format!("{}-1-0.spool", std::process::id())));
        assert!(writer_alive("1-1-0.spool"));
        assert!(!writer_alive("2147483647-1-0.spool"));
        assert!(!writer_alive("x-1-0.spool"));
        assert!(!writer_alive("0-1-0.spool"));
    }

    #[test]
    fn a_content_cut_into_parts_twice_reads_back_from_the_copy_that_is_whole() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let bytes: Vec<u8> = (0..3u32 << 20).map(|i| (i % 239) as u8).collect();
        let hash = crate::writer::digest(&bytes);
        // The first part of a copy in two parts (the rest never written), then a whole copy
        // in three: the first part found at offset 0 leads nowhere.
        let two = Planned::unnamed_parts(bytes.len() as u64, 2).unwrap();
        w.write_part_named(1, &two[0], &bytes, || hash.clone())
            .unwrap();
        for p in Planned::unnamed_parts(bytes.len() as u64, 3).unwrap() {
            w.write_part_named(1, &p, &bytes, || hash.clone()).unwrap();
        }
        drop(w);
        let read = crate::reader::Contents::new(t.path())
            .blob_of_size(&hash, bytes.len() as u64)
            .unwrap();
        assert!(read == bytes);
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
        assert_eq!(
            names,
            segments(t.path()).unwrap(),
            "a hidden file was left behind"
        );
        let seg = File::open(t.path().join(SPOOL_DIR).join(&names[0])).unwrap();
        assert!(
            seg.try_lock().is_err(),
            "the writer's segment is not locked"
        );
        drop(w);
        assert!(
            seg.try_lock().is_ok(),
            "a segment its writer let go stays locked"
        );
    }

    /// `n` versions of a 256 KiB buffer, each changing 4 KiB at a different place.
    fn versions(n: usize) -> Vec<Vec<u8>> {
        let mut v: Vec<u8> = (0..(1u32 << 18) + 4321)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let mut out = vec![v.clone()];
        for k in 1..n {
            let at = (k * 40_000) % (v.len() - 4096);
            for b in &mut v[at..at + 4096] {
                *b = b.wrapping_add(k as u8 | 1);
            }
            out.push(v.clone());
        }
        out
    }

    #[test]
    fn the_next_version_is_spooled_as_its_region_and_reads_back() {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let vs = versions(PATCH_CHAIN_MAX + 3);
        let hashes: Vec<String> = vs.iter().map(|v| crate::writer::digest(v)).collect();
        w.put(&hashes[0], &vs[0]).unwrap();
        for k in 1..vs.len() {
            let region = crate::parallel::changed_region(&vs[k], &vs[k - 1]).unwrap();
            let ranges = changed_ranges(&vs[k], &vs[k - 1], region);
            let took = w
                .put_version(&hashes[k], &vs[k], &hashes[k - 1], &ranges)
                .unwrap();
            assert!(
                took < vs[k].len() as u64 / 2 || k == PATCH_CHAIN_MAX + 1,
                "{k}: {took}"
            );
        }
        // A base this writer did not spool: a whole record.
        let other = crate::writer::digest(b"elsewhere");
        let mut last = vs[1].clone();
        last[0] ^= 0xff;
        let h = crate::writer::digest(&last);
        assert!(w.put_version(&h, &last, &other, &[(0, 4096)]).unwrap() > last.len() as u64);
        drop(w);
        let stats_records: Vec<Record> = segments(t.path())
            .unwrap()
            .iter()
            .flat_map(|n| {
                scan(&File::open(t.path().join(SPOOL_DIR).join(n)).unwrap())
                    .unwrap()
                    .records
            })
            .collect();
        // The chain is cut after PATCH_CHAIN_MAX patches: that version is whole again.
        let whole: Vec<usize> = stats_records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.patch.is_none())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(whole, vec![0, PATCH_CHAIN_MAX + 1, vs.len()]);
        let contents = crate::reader::Contents::new(t.path());
        for (v, h) in vs.iter().zip(&hashes) {
            assert_eq!(&contents.blob_of_size(h, v.len() as u64).unwrap(), v);
        }
    }

    #[test]
    fn a_few_bytes_changed_in_every_row_are_spooled_as_ranges() {
        // An anti-diagonal of a 2048 x 2048 matrix of floats (a wavefront step): 4 bytes
        // changed in each 8 KiB row, the changed region spanning nearly all of it.
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        let a: Vec<u8> = (0..16u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 9) as u8)
            .collect();
        let mut b = a.clone();
        for row in 0..2048 {
            let at = row * 8192 + (2047 - row) * 4;
            b[at..at + 4].copy_from_slice(&[1, 2, 3, 4]);
        }
        let (ha, hb) = (crate::writer::digest(&a), crate::writer::digest(&b));
        w.put(&ha, &a).unwrap();
        let hull = crate::parallel::changed_region(&b, &a).unwrap();
        assert!(hull.1 - hull.0 > a.len() / 2, "{hull:?}");
        let ranges = changed_ranges(&b, &a, hull);
        assert_eq!(ranges.len(), 2048);
        let took = w.put_version(&hb, &b, &ha, &ranges).unwrap();
        assert!(
            took < (2048 * (RANGE_BLOCK + 16) + PATCH_HEADER) as u64,
            "{took}"
        );
        drop(w);
        let contents = crate::reader::Contents::new(t.path());
        assert_eq!(contents.blob_of_size(&hb, b.len() as u64).unwrap(), b);
    }

    #[test]
    fn a_segment_is_sealed_by_the_contents_it_names_not_only_its_bytes() {
        // A 4 MiB bound: segments of at most 1 MiB, naming at most 4 MiB of contents. Forty
        // versions of a 260 KiB buffer spooled as 4 KiB patches take 170 KiB (one segment by
        // bytes), but name 10 MiB of contents: compaction must be able to take them while
        // the application runs.
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 4 << 20).unwrap();
        let vs = versions(40);
        let hashes: Vec<String> = vs.iter().map(|v| crate::writer::digest(v)).collect();
        w.put(&hashes[0], &vs[0]).unwrap();
        for k in 1..vs.len() {
            let region = crate::parallel::changed_region(&vs[k], &vs[k - 1]).unwrap();
            let ranges = changed_ranges(&vs[k], &vs[k - 1], region);
            w.put_version(&hashes[k], &vs[k], &hashes[k - 1], &ranges)
                .unwrap();
        }
        drop(w);
        let names = segments(t.path()).unwrap();
        let mut named = Vec::new();
        for n in &names {
            let scan = scan(&File::open(t.path().join(SPOOL_DIR).join(n)).unwrap()).unwrap();
            let bytes: u64 = scan.records.iter().map(|r| r.content_len()).sum();
            assert!(bytes <= 4 << 20, "{n} names {bytes} bytes of contents");
            named.push(bytes);
        }
        assert!(names.len() >= 3, "{named:?}");
        // Every version still reads back across segments.
        let contents = crate::reader::Contents::new(t.path());
        for (v, h) in vs.iter().zip(&hashes) {
            assert_eq!(&contents.blob_of_size(h, v.len() as u64).unwrap(), v);
        }
    }

    #[test]
    fn only_plain_segment_names_count() {
        assert!(is_segment_name("12-34-0.spool"));
        for n in [
            ".tmp.spool",
            "../x.spool",
            ".spool",
            "a b.spool",
            "x.spool.bak",
            COMPACTOR_LOCK,
        ] {
            assert!(!is_segment_name(n), "{n}");
        }
    }
}
