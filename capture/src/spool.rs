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
//! compacted. The writer of a launch record appends the contents it names before the
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
/// Most bytes of contents one segment names (a patch record names its whole content) per
/// byte it may take ([`SEGMENT_MAX`] or the writer's own): compaction rebuilds, hashes and
/// cuts every content it names. Why: a wavefront whose launches each change one
/// anti-diagonal of a 16 MB matrix spooled 155 patch records in 36 MB, one segment sealed
/// only at exit, so all 2.5 GB of their contents were compacted after the application ended
/// (0.62 s on the H200, as long as the application's own run).
pub const SEGMENT_CONTENT_FACTOR: u64 = 4;

/// One whole record of a segment: a content's digest and where its bytes lie (for a patch
/// record, the bytes of its ranges, one after the other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub hash: String,
    /// Offset of the content's (or the first range's) first byte in the segment.
    pub offset: u64,
    /// Bytes the record holds: the content's length, or its ranges' for a patch.
    pub len: u64,
    /// Set for a patch record: the content is its base with its ranges' bytes written over.
    pub patch: Option<Patch>,
    /// Set for a part record: the record holds `len` bytes of the content from `at` on.
    pub part: Option<Part>,
}

/// Where a part record's bytes lie in its content (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Bytes of the whole content.
    pub total: u64,
    /// Offset of the part's first byte in the content.
    pub at: u64,
}

/// What a patch record says besides its ranges' bytes (see the module doc). Not checked by
/// [`scan`] beyond its syntax: [`Patch::problem`] says what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Digest of the content the ranges are written over.
    pub base: String,
    /// Bytes of the content (and of its base).
    pub total: u64,
    /// (offset in the content, length) of each range, in the order their bytes follow.
    pub ranges: Vec<(u64, u64)>,
}

impl Record {
    /// Bytes of the content this record names (whole or rebuilt).
    pub fn content_len(&self) -> u64 {
        match (&self.patch, &self.part) {
            (Some(p), _) => p.total,
            (None, Some(p)) => p.total,
            (None, None) => self.len,
        }
    }
}

impl Patch {
    /// What is wrong with the patch record of content `hash` holding `len` bytes of ranges,
    /// as a sentence part, or None: its base is itself, a range ends past the content, the
    /// ranges overlap or are out of order, or they do not hold `len` bytes.
    pub fn problem(&self, hash: &str, len: u64) -> Option<String> {
        if self.base == hash {
            return Some(format!(
                "the patch record of content {hash} names itself as its base"
            ));
        }
        let mut from = 0u64;
        let mut sum = 0u64;
        for &(at, n) in &self.ranges {
            let Some(end) = at.checked_add(n).filter(|e| *e <= self.total) else {
                return Some(format!(
                    "the patch record of content {hash} places {n} bytes at offset {at} of a content of {} bytes (past its end)",
                    self.total
                ));
            };
            if at < from {
                return Some(format!(
                    "the ranges of the patch record of content {hash} overlap or are out of order"
                ));
            }
            from = end;
            sum += n;
        }
        if sum != len {
            return Some(format!(
                "the ranges of the patch record of content {hash} hold {sum} bytes, not the {len} it has"
            ));
        }
        None
    }

    /// Writes the ranges' bytes `data` (as the record holds them) over `bytes`, the base;
    /// Err: why not (checked first with [`Patch::problem`], so only a base of another length).
    pub fn apply(&self, bytes: &mut [u8], data: &[u8]) -> Result<(), String> {
        if bytes.len() as u64 != self.total {
            return Err(format!(
                "its base holds {} bytes, not {}",
                bytes.len(),
                self.total
            ));
        }
        let mut from = 0usize;
        for &(at, n) in &self.ranges {
            let (at, n) = (at as usize, n as usize);
            let (Some(end), Some(to)) = (at.checked_add(n), from.checked_add(n)) else {
                return Err("a range lies past its end".into());
            };
            let (Some(dst), Some(src)) = (bytes.get_mut(at..end), data.get(from..to)) else {
                return Err("a range lies past its end".into());
            };
            dst.copy_from_slice(src);
            from += n;
        }
        Ok(())
    }

    /// The smallest region holding every range (first byte, one past the last), for
    /// [`crate::parallel::leaves_like`] and [`crate::parallel::cut_and_hash_like`].
    pub fn hull(&self) -> Option<(usize, usize)> {
        let first = self.ranges.first()?;
        let last = self.ranges.last()?;
        Some((first.0 as usize, (last.0 + last.1) as usize))
    }
}

/// Whether a sample of the 64-byte blocks of `hull` ([`SAMPLED_BLOCKS`] of them, at
/// pseudo-random places) says that nearly all of them changed (all but one in sixteen), and the hull holds
/// more than three quarters of the content: then the ranges would hold more than
/// [`SpoolWriter::plan`] takes for a patch, and the next version is written whole without
/// comparing every block. Why: a stencil that rewrites all of a 4 MB buffer at each launch
/// compared both versions block by block (8 MB read) only to learn that. Where at most three
/// quarters of the blocks changed, 240 of 256 random ones changed has a chance below
/// 1e-12; a wrong guess would only make a whole record where a patch would have been
/// smaller, never a wrong content.
pub fn mostly_changed(new: &[u8], old: &[u8], hull: (usize, usize)) -> bool {
    let (lo, hi) = hull;
    if new.len() != old.len() || hi > new.len() || lo >= hi || (hi - lo) * 4 <= new.len() * 3 {
        return false;
    }
    let blocks = (hi - lo) / RANGE_BLOCK;
    if blocks < SAMPLED_BLOCKS {
        return false;
    }
    // Blocks at pseudo-random places (a fixed sequence): evenly spaced ones would all fall
    // on the same column of a grid whose rows are a multiple of the spacing.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let changed = (0..SAMPLED_BLOCKS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (x % blocks as u64) as usize * RANGE_BLOCK
        })
        .filter(|&at| new[at..at + RANGE_BLOCK] != old[at..at + RANGE_BLOCK])
        .count();
    changed * 16 >= SAMPLED_BLOCKS * 15
}

/// Blocks [`mostly_changed`] looks at.
pub const SAMPLED_BLOCKS: usize = 256;

/// The ranges where `new` differs from `old` (of the same length) inside `hull` (from
/// [`crate::parallel::changed_region`]), in blocks of [`RANGE_BLOCK`] bytes, adjacent ones
/// merged; at most [`RANGES_MAX`] (past it, the whole hull). Compared on several threads
/// for a large hull.
pub fn changed_ranges(new: &[u8], old: &[u8], hull: (usize, usize)) -> Vec<(usize, usize)> {
    let (lo, hi) = hull;
    if new.len() != old.len() || lo >= hi || hi > new.len() {
        return vec![(lo, hi.saturating_sub(lo))];
    }
    // Parts of whole blocks (from `lo`), compared on threads for a large hull.
    let part = (crate::parallel::PARALLEL_MIN / 4).max(RANGE_BLOCK);
    let parts = (hi - lo).div_ceil(part);
    let found = crate::parallel::map_each(parts, hi - lo >= crate::parallel::PARALLEL_MIN, |j| {
        let (a, b) = (lo + j * part, (lo + (j + 1) * part).min(hi));
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut at = a;
        while at < b {
            let end = (at + RANGE_BLOCK).min(b);
            if new[at..end] != old[at..end] {
                match out.last_mut() {
                    Some(last) if last.0 + last.1 == at => last.1 += end - at,
                    _ => out.push((at, end - at)),
                }
            }
            at = end;
        }
        out
    });
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for r in found.into_iter().flatten() {
        match ranges.last_mut() {
            Some(last) if last.0 + last.1 == r.0 => last.1 += r.1,
            _ => ranges.push(r),
        }
    }
    if ranges.len() as u64 > RANGES_MAX || ranges.is_empty() {
        return vec![(lo, hi - lo)];
    }
    ranges
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
    /// Where the records read end: a later scan of the same segment may start here
    /// ([`scan_from`]) to find only the records appended since.
    pub end: u64,
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
    scan_from(file, 0)
}

/// [`scan`] from offset `from`, where an earlier scan ended ([`Scan::end`]). Why: a reader
/// looking for a content spooled since its last scan (a compactor, for the parts of each new
/// content) read every header of every segment again each time.
pub fn scan_from(file: &File, from: u64) -> std::io::Result<Scan> {
    let len = file.metadata()?.len();
    let mut records = Vec::new();
    let mut at = from.min(len);
    let mut header = [0u8; PATCH_HEADER];
    let is_hex = |h: &[u8]| {
        h.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let u64_at = |h: &[u8], i: usize| {
        let mut n = [0u8; 8];
        n.copy_from_slice(&h[i..i + 8]);
        u64::from_le_bytes(n)
    };
    let tail = loop {
        if at == len {
            break Tail::Clean;
        }
        // The magic says which header follows.
        let mut magic = [0u8; 8];
        if len - at < 8 {
            break Tail::Cut {
                hash: String::new(),
                at,
                claimed: HEADER as u64,
                have: len - at,
            };
        }
        file.read_exact_at(&mut magic, at)?;
        let size = match &magic {
            m if m == MAGIC => HEADER,
            m if m == PATCH_MAGIC => PATCH_HEADER,
            m if m == PART_MAGIC => PART_HEADER,
            _ => break Tail::Bad { at },
        };
        if len - at < size as u64 {
            break Tail::Cut {
                hash: String::new(),
                at,
                claimed: size as u64,
                have: len - at,
            };
        }
        let header = &mut header[..size];
        file.read_exact_at(header, at)?;
        if size == PART_HEADER {
            let (total, from, n) = (u64_at(header, 8), u64_at(header, 16), u64_at(header, 24));
            // A part inside its content, not empty: else no record starts here.
            if n == 0 || from.checked_add(n).is_none_or(|end| end > total) {
                break Tail::Bad { at };
            }
            let offset = at + size as u64;
            let claimed = n.saturating_add(PART_TRAILER as u64);
            if claimed > len - offset {
                break Tail::Cut {
                    hash: String::new(),
                    at,
                    claimed,
                    have: len - offset,
                };
            }
            let mut digest = [0u8; PART_TRAILER];
            file.read_exact_at(&mut digest, offset + n)?;
            if !is_hex(&digest) {
                break Tail::Bad { at: offset + n };
            }
            records.push(Record {
                hash: String::from_utf8_lossy(&digest).into_owned(),
                offset,
                len: n,
                patch: None,
                part: Some(Part { total, at: from }),
            });
            at = offset + claimed;
            continue;
        }
        let hash = &header[8..72];
        if !is_hex(hash) {
            break Tail::Bad { at };
        }
        let hash = String::from_utf8_lossy(hash).into_owned();
        let mut offset = at + size as u64;
        let (claimed, patch) = if size == HEADER {
            (u64_at(header, 72), None)
        } else {
            let base = &header[72..136];
            if !is_hex(base) {
                break Tail::Bad { at };
            }
            let count = u64_at(header, 144);
            if count == 0 || count > RANGES_MAX {
                break Tail::Bad { at };
            }
            let table = count * 16;
            if table > len - offset {
                break Tail::Cut {
                    hash,
                    at,
                    claimed: table,
                    have: len - offset,
                };
            }
            let mut raw = vec![0u8; table as usize];
            file.read_exact_at(&mut raw, offset)?;
            let ranges = raw
                .chunks_exact(16)
                .map(|e| (u64_at(e, 0), u64_at(e, 8)))
                .collect();
            offset += table;
            let patch = Patch {
                base: String::from_utf8_lossy(base).into_owned(),
                total: u64_at(header, 136),
                ranges,
            };
            (u64_at(header, 152), Some(patch))
        };
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
            patch,
            part: None,
        });
        at = offset + claimed;
    };
    Ok(Scan {
        records,
        tail,
        end: at,
    })
}

/// Whether `name` is a segment's name as writers make them (plain, no leading dot).
pub fn is_segment_name(name: &str) -> bool {
    name.strip_suffix(SEGMENT_SUFFIX).is_some_and(|stem| {
        !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// Whether the process that named segment `name` (`<pid>-…`) still runs, other than this
/// one (a `cltrap` process compacts; it never writes segments of its own). Why: a live
/// writer may hold none of its segments for a moment (it sealed them all for a compactor,
/// or between two), and a content whose parts it has not all written yet is then no damage.
/// A reused pid or a forged name only makes a compactor leave a segment for later.
pub fn writer_alive(name: &str) -> bool {
    let Some(pid) = name
        .split('-')
        .next()
        .and_then(|p| p.parse::<i32>().ok())
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
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
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
    /// Of the records, patch records (a changed region on an earlier version).
    pub patches: u64,
    /// Of the records, part records ([`Planned::parts`]).
    pub parts: u64,
    /// Times the application waited for compaction (the spool past its bound), and how long.
    pub waits: u64,
    pub wait_ns: u64,
    /// The most bytes this writer saw in the spool (its own estimate: measured when near the
    /// bound, counted between).
    pub peak_bytes: u64,
    /// The bound ([`crate::Settings::spool_max_bytes`]).
    pub bound: u64,
}

/// A spooled content's digest must be 64 hex digits (it names a record).
fn check_digest(hash: &str) -> std::io::Result<()> {
    if hash.len() != 64
        || !hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a spooled content is named by a 64-digit digest",
        ));
    }
    Ok(())
}

/// Most contents whose patch depth a writer remembers (a few MB): past it, it starts over.
const DEPTHS_MAX: usize = 1 << 16;

/// Segments a writer may have open at once: lane 0 for the records written on the thread that
/// planned them, and one per thread that writes records planned elsewhere
/// ([`SpoolWriter::write_planned`]). Why several: one thread
/// copies into the page cache at 2–4 GB/s, and on an H200 host two writers to separate files
/// made 7.5 GB/s, four 13.9 GB/s (writers to one file queue on its inode's lock).
pub const LANES: usize = 5;

/// A record planned by [`SpoolWriter::plan`]: its header, and which of the content's bytes
/// its body holds. Planning decides whole record or patch, and counts the content as spooled
/// by this writer (a later version may be planned as a patch on it before it is written);
/// [`SpoolWriter::write_planned`] then writes it, on any lane.
#[derive(Debug, Clone)]
pub struct Planned {
    header: Vec<u8>,
    /// The ranges of the content the body holds, in order; None: all of it.
    ranges: Option<Vec<(usize, usize)>>,
    /// The content's whole size.
    content: u64,
    /// A part record ([`Planned::parts`]): written without waiting for room, which
    /// whoever cut the parts made for all of them ([`SpoolWriter::make_room`]).
    part: bool,
    /// A part's digest, written after its bytes (None: not known yet, given when it is
    /// written: [`SpoolWriter::write_part_named`]).
    digest: Option<String>,
}

impl Planned {
    /// The part records of a new whole content of `total` bytes whose digest is not known
    /// yet, as [`Planned::parts`] cuts them: their bytes can be copied while the content is
    /// hashed, and the digest written after each ([`SpoolWriter::write_part_named`]). None
    /// where it is too small for two parts.
    pub fn unnamed_parts(total: u64, n: usize) -> Option<Vec<Planned>> {
        Self::cut(total, n, None)
    }

    /// `total` bytes in `n` parts (fewer where too small), each naming `digest`.
    fn cut(total: u64, n: usize, digest: Option<String>) -> Option<Vec<Planned>> {
        let size = usize::try_from(total).ok()?;
        let n = n.min(size / PART_MIN);
        if n < 2 {
            return None;
        }
        // Parts of whole pages, the last one taking the rest.
        let step = (size / n) & !4095;
        Some(
            (0..n)
                .map(|i| {
                    let at = i * step;
                    let len = if i + 1 == n { size - at } else { step };
                    let mut header = Vec::with_capacity(PART_HEADER);
                    header.extend_from_slice(PART_MAGIC);
                    for v in [size, at, len] {
                        header.extend_from_slice(&(v as u64).to_le_bytes());
                    }
                    Planned {
                        header,
                        ranges: Some(vec![(at, len)]),
                        content: total,
                        part: true,
                        digest: digest.clone(),
                    }
                })
                .collect(),
        )
    }

    /// This whole record as `n` part records of at least [`PART_MIN`] bytes each (fewer
    /// where the content is too small for `n`), to be written on different lanes; None for a
    /// patch record, a part, or a content too small for two parts. Why: one thread copies
    /// into one file at a few GB/s, and an application's `clFinish` that waits for a large new
    /// content waits for that copy.
    pub fn parts(&self, n: usize) -> Option<Vec<Planned>> {
        if self.ranges.is_some() || self.part {
            return None;
        }
        let digest = String::from_utf8_lossy(&self.header[8..72]).into_owned();
        Self::cut(self.content, n, Some(digest))
    }

    /// The bytes the record takes in the spool, header included.
    pub fn bytes(&self) -> u64 {
        let body = match &self.ranges {
            None => self.content,
            Some(ranges) => ranges.iter().map(|&(_, n)| n as u64).sum(),
        };
        let trailer = if self.part { PART_TRAILER as u64 } else { 0 };
        self.header.len() as u64 + body + trailer
    }
}

/// The segment a writer appends to.
struct Segment {
    file: File,
    len: u64,
    /// Bytes of the contents its records name (see [`SEGMENT_CONTENT_FACTOR`]).
    content: u64,
}

/// A process's side of the spool: appends contents to its own segment, waiting for a
/// compactor while the spool is past its bound. `Sync`: the shim stores from several threads.
pub struct SpoolWriter {
    dir: PathBuf,
    access: Access,
    bound: u64,
    segment_max: u64,
    /// The open segment of each lane ([`LANES`]).
    lanes: Vec<Mutex<Option<Segment>>>,
    /// Bytes believed in the spool: measured ([`live_bytes`]) when near the bound, plus what
    /// this writer appended since.
    estimate: Mutex<u64>,
    made: AtomicU64,
    /// Contents this writer spooled, with how many patch records each is from a whole one.
    depths: Mutex<std::collections::HashMap<String, usize>>,
    records: AtomicU64,
    patches: AtomicU64,
    parts: AtomicU64,
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
            lanes: (0..LANES).map(|_| Mutex::new(None)).collect(),
            estimate: Mutex::new(live_bytes(dir)),
            made: AtomicU64::new(0),
            depths: Mutex::new(std::collections::HashMap::new()),
            records: AtomicU64::new(0),
            patches: AtomicU64::new(0),
            parts: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        })
    }

    /// Plans the record of content `bytes` whose digest is `hash`: whole, or given
    /// `version` (`base`, `ranges`: the next version of content `base`, differing from it only
    /// in `ranges`, ascending: [`changed_ranges`]) a patch record when this writer wrote `base`
    /// itself, at most [`PATCH_CHAIN_MAX`] patches deep, and the ranges hold at most three
    /// quarters of the content (else a whole record); and counts it as spooled by this writer
    /// from now on. Whoever plans a patch must have it written after its base's record (one
    /// lane, in order, or after the base's write returned): a reader rebuilds a patch from its
    /// base.
    pub fn plan(
        &self,
        hash: &str,
        bytes: &[u8],
        version: Option<(&str, &[(usize, usize)])>,
    ) -> std::io::Result<Planned> {
        check_digest(hash)?;
        let patch = version.and_then(|(base, ranges)| {
            let depth = self.depth_of(base)?;
            let mut held = 0usize;
            let mut from = 0usize;
            let mut valid = !ranges.is_empty() && ranges.len() as u64 <= RANGES_MAX;
            for &(at, n) in ranges {
                valid &= at >= from && n > 0 && at.checked_add(n).is_some_and(|e| e <= bytes.len());
                from = at.saturating_add(n);
                held += n;
            }
            let small = valid && held * 4 <= bytes.len() * 3;
            (small && depth < PATCH_CHAIN_MAX && base != hash)
                .then_some((base, ranges, depth, held))
        });
        let Some((base, ranges, depth, held)) = patch else {
            let mut header = vec![0u8; HEADER];
            header[..8].copy_from_slice(MAGIC);
            header[8..72].copy_from_slice(hash.as_bytes());
            header[72..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            self.learn(hash, 0);
            return Ok(Planned {
                header,
                ranges: None,
                content: bytes.len() as u64,
                part: false,
                digest: None,
            });
        };
        check_digest(base)?;
        let mut header = Vec::with_capacity(PATCH_HEADER + ranges.len() * 16);
        header.extend_from_slice(PATCH_MAGIC);
        header.extend_from_slice(hash.as_bytes());
        header.extend_from_slice(base.as_bytes());
        header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        header.extend_from_slice(&(ranges.len() as u64).to_le_bytes());
        header.extend_from_slice(&(held as u64).to_le_bytes());
        for &(at, n) in ranges {
            header.extend_from_slice(&(at as u64).to_le_bytes());
            header.extend_from_slice(&(n as u64).to_le_bytes());
        }
        self.learn(hash, depth + 1);
        Ok(Planned {
            header,
            ranges: Some(ranges.to_vec()),
            content: bytes.len() as u64,
            part: false,
            digest: None,
        })
    }

    /// Writes a record [`SpoolWriter::plan`] planned for the same `bytes` to the segment of
    /// `lane` (below [`LANES`]; each lane's records are appended in the order written): when
    /// the spool would pass its bound and a compactor runs, first seals this writer's
    /// segments and waits until compaction made room (counted in [`SpoolStats`]). When this
    /// returns, the record is whole in the page cache: it survives the process dying in any
    /// way. Returns the bytes it took.
    pub fn write_planned(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
    ) -> std::io::Result<u64> {
        match (planned.part, &planned.digest) {
            (true, Some(digest)) => {
                let digest = digest.clone();
                self.write_part_named(lane, planned, bytes, move || digest)
            }
            (true, None) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a part whose digest is not known is written with write_part_named",
            )),
            (false, _) => self.write(lane, planned, bytes, None),
        }
    }

    /// Writes part record `planned` (of [`Planned::parts`] or [`Planned::unnamed_parts`])
    /// of content `bytes` to the segment of `lane`: its bytes first, then the digest that
    /// `name` gives (it may wait for whoever hashes the content meanwhile). A digest that is
    /// not 64 hex digits fails the write and seals the lane's segment, so that the record it
    /// leaves cut off is its last. Returns the bytes it took.
    pub fn write_part_named(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
        name: impl FnOnce() -> String,
    ) -> std::io::Result<u64> {
        if !planned.part {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "only a part record is written with write_part_named",
            ));
        }
        let mut name = Some(name);
        let mut trailer = || -> std::io::Result<Vec<u8>> {
            let digest = name.take().map(|n| n()).unwrap_or_default();
            check_digest(&digest)?;
            Ok(digest.into_bytes())
        };
        self.write(lane, planned, bytes, Some(&mut trailer))
    }

    /// [`SpoolWriter::write_planned`], with a part's `trailer`.
    fn write(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
        trailer: Option<&mut dyn FnMut() -> std::io::Result<Vec<u8>>>,
    ) -> std::io::Result<u64> {
        if bytes.len() as u64 != planned.content || lane >= LANES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a planned spool record is written with the content it was planned for",
            ));
        }
        let body: std::borrow::Cow<[u8]> = match planned.ranges.as_deref() {
            None => std::borrow::Cow::Borrowed(bytes),
            Some([(at, n)]) => std::borrow::Cow::Borrowed(&bytes[*at..at + n]),
            Some(ranges) => {
                let mut data = Vec::with_capacity(ranges.iter().map(|&(_, n)| n).sum());
                for &(at, n) in ranges {
                    data.extend_from_slice(&bytes[at..at + n]);
                }
                std::borrow::Cow::Owned(data)
            }
        };
        // A part names its share of the content (compaction reads the others from their own
        // segments), and its room was made before the parts were cut.
        let (content, room) = match planned.part {
            true => (body.len() as u64, false),
            false => (planned.content, true),
        };
        let need = self.append(lane, &planned.header, &body, content, room, trailer)?;
        if planned.part {
            self.parts.fetch_add(1, Ordering::Relaxed);
        } else if planned.ranges.is_some() {
            self.patches.fetch_add(1, Ordering::Relaxed);
        }
        Ok(need)
    }

    /// Seals this writer's segments now (the next record starts a new one): a compactor may
    /// take them.
    pub fn seal(&self) {
        for lane in &self.lanes {
            *lane.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Remembers that this writer spooled content `hash` whole (in parts whose digest was
    /// given after their bytes: [`Planned::unnamed_parts`]), so its next version may be a
    /// patch on it.
    pub fn learn_whole(&self, hash: &str) {
        self.learn(hash, 0);
    }

    /// How many patch records content `hash` is from a whole record, when this writer
    /// wrote it.
    fn depth_of(&self, hash: &str) -> Option<usize> {
        self.depths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash)
            .copied()
    }

    /// Remembers that this writer spooled content `hash`, `depth` patches from a whole
    /// record. Bounded: past [`DEPTHS_MAX`] contents the table starts over (the next
    /// versions are whole records).
    fn learn(&self, hash: &str, depth: usize) {
        let mut d = self.depths.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() >= DEPTHS_MAX {
            d.clear();
        }
        d.entry(hash.to_string()).or_insert(depth);
    }

    /// Appends one record (`header` then `body`) of a content of `content` bytes to the
    /// segment of `lane`, after waiting for room; returns its bytes. A segment is sealed
    /// before it passes its bytes or the contents it may name ([`SEGMENT_CONTENT_FACTOR`]).
    fn append(
        &self,
        lane: usize,
        header: &[u8],
        body: &[u8],
        content: u64,
        room: bool,
        trailer: Option<&mut dyn FnMut() -> std::io::Result<Vec<u8>>>,
    ) -> std::io::Result<u64> {
        let extra = if trailer.is_some() { PART_TRAILER } else { 0 };
        let need = (header.len() + body.len() + extra) as u64;
        if room {
            self.make_room(need);
        }
        let mut current = self.lanes[lane].lock().unwrap_or_else(|p| p.into_inner());
        let content_max = self.segment_max.saturating_mul(SEGMENT_CONTENT_FACTOR);
        if current.as_ref().is_some_and(|s| {
            s.len > 0
                && (s.len + need > self.segment_max
                    || s.content.saturating_add(content) > content_max)
        }) {
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
        // One write for both (a short write is completed by `write_all`).
        let mut record = Vec::with_capacity(0);
        let buf: &[u8] = if body.len() <= 1 << 16 {
            record.reserve_exact(header.len() + body.len());
            record.extend_from_slice(header);
            record.extend_from_slice(body);
            &record
        } else {
            seg.file.write_all(header)?;
            body
        };
        seg.file.write_all(buf)?;
        if let Some(trailer) = trailer {
            // Nothing may follow a record left without its digest: the segment is sealed.
            match trailer() {
                Ok(t) if t.len() == PART_TRAILER => seg.file.write_all(&t)?,
                Ok(_) => {
                    *current = None;
                    return Err(std::io::Error::other(
                        "a part's digest has the wrong length",
                    ));
                }
                Err(e) => {
                    *current = None;
                    return Err(e);
                }
            }
        }
        seg.len += need;
        seg.content = seg.content.saturating_add(content);
        drop(current);
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(need, Ordering::Relaxed);
        let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
        *est += need;
        self.peak.fetch_max(*est, Ordering::Relaxed);
        Ok(need)
    }

    /// Waits while the spool holds more than its bound minus `need` and a compactor runs,
    /// sealing this writer's segments first so that the compactor can take them. Called by
    /// [`SpoolWriter::write_planned`] for a whole or patch record, and by whoever cuts a
    /// record into [`Planned::parts`] for all of them before any is written: a part never
    /// waits for room, since a compactor cannot take a content before all its parts are
    /// written.
    pub fn make_room(&self, need: u64) {
        if self.bound == 0 {
            return;
        }
        if *self.estimate.lock().unwrap_or_else(|p| p.into_inner()) + need <= self.bound {
            return;
        }
        let start = Instant::now();
        let mut waited = false;
        loop {
            // Every segment sealed again (another lane may have opened one meanwhile), so a
            // compactor can take all that is there; the estimate is not held while sealing or
            // sleeping (a lane takes its segment's lock, then the estimate's).
            self.seal();
            let live = live_bytes(&self.dir);
            *self.estimate.lock().unwrap_or_else(|p| p.into_inner()) = live;
            if live == 0 || live + need <= self.bound || !compactor_attached(&self.dir) {
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
        Ok(Segment {
            file,
            len: 0,
            content: 0,
        })
    }

    /// What the spool cost so far.
    pub fn stats(&self) -> SpoolStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SpoolStats {
            records: get(&self.records),
            bytes: get(&self.bytes),
            patches: get(&self.patches),
            parts: get(&self.parts),
            waits: get(&self.waits),
            wait_ns: get(&self.wait_ns),
            peak_bytes: get(&self.peak),
            bound: self.bound,
        }
    }
}

/// Records planned and written at once, on lane 0: what the tests (here and the compactor's)
/// spool with (the store plans records and writes them, on lane 0 or a lane thread:
/// [`SpoolWriter::plan`], [`SpoolWriter::write_planned`]).
impl SpoolWriter {
    /// Appends the content `bytes` whose digest is `hash` (computed by the caller) as one
    /// record; returns the bytes it took. When the spool would pass its bound and a
    /// compactor runs, first seals this writer's segment and waits until compaction made
    /// room (counted in [`SpoolStats`]). When this returns, the record is whole in the page
    /// cache: it survives the process dying in any way.
    pub fn put(&self, hash: &str, bytes: &[u8]) -> std::io::Result<u64> {
        let planned = self.plan(hash, bytes, None)?;
        self.write_planned(0, &planned, bytes)
    }

    /// Appends the content `bytes` whose digest is `hash`, the next version of content
    /// `base` that differs from it only in `ranges` ((offset, length), ascending:
    /// [`changed_ranges`]), as a patch record of those ranges when this writer wrote `base`
    /// itself, at most [`PATCH_CHAIN_MAX`] patches deep, and the ranges hold at most three
    /// quarters of the content; else as a whole record ([`SpoolWriter::put`]). Returns the
    /// bytes it took.
    pub fn put_version(
        &self,
        hash: &str,
        bytes: &[u8],
        base: &str,
        ranges: &[(usize, usize)],
    ) -> std::io::Result<u64> {
        let planned = self.plan(hash, bytes, Some((base, ranges)))?;
        self.write_planned(0, &planned, bytes)
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
