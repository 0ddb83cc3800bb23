//! The launch log's journal: a file of the capture, mapped into the writing process's memory,
//! where a writer appends records instead of calling `write` on the log each time.
//!
//! Why: the shim writes the launches a `clFinish` finished right there, on the application's
//! thread, so the capture is complete up to the application's last `clFinish` even if it
//! then crashes. The `write` call was 3 µs of a 10 µs launch + `clFinish` on an NVIDIA
//! machine and 6–7 µs on PoCL. Bytes copied into a shared file mapping are in the page cache
//! at once: they survive the process dying in any way (`SIGKILL` included), as bytes written
//! with `write` do, without a system call.
//!
//! Layout: [`MAGIC`], the committed length and the generation (u64s, little-endian), 8
//! reserved bytes, then the records as in the log (whole JSON lines). A record is copied
//! first and committed after (a release store of the length), so a reader never sees part of
//! one; emptying the journal bumps the generation, and a reader that finds it changed while
//! it copied the records drops them (they are in the log, which it reads after). The writer moves the journal into the
//! log from time to time ([`Journal::drain_into`]) and at exit, then deletes it. A process
//! that died leaves its journal: readers read every journal before the log (a record can then
//! be in both, when the process died between moving the journal into the log and emptying
//! it: readers keep the first copy of each id), and the next writer that is alone on the
//! capture moves dead journals into the log ([`fold_dead`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Journal files are named `<this><pid>.<n>.<nanoseconds>` in the capture directory.
pub const JOURNAL_PREFIX: &str = "launches.pending.";
/// The first bytes of a journal.
const MAGIC: &[u8; 8] = b"cltrapj1";
/// Magic, committed length, generation (bumped each time the journal is emptied), reserved.
const HEADER: usize = 32;
/// Offset of the committed length (u64, little-endian).
const LENGTH_AT: usize = 8;
/// Offset of the generation (u64, little-endian).
const GENERATION_AT: usize = 16;
/// Bytes of records one journal holds (a writer moves it into the log when it is full).
pub const CAPACITY: usize = 4 << 20;

/// A journal being written by this process (see the module documentation).
pub struct Journal {
    path: PathBuf,
    map: *mut u8,
    /// Committed bytes: the truth is here; the mapping's copy is for readers (another
    /// process could write the file, so this process never trusts it).
    len: usize,
    generation: u64,
    /// Moving the records into the log failed once (a full disk): they stay here, where
    /// readers find them, and no later move is tried (it could land after other writers'
    /// lines and duplicate part of a batch).
    failed: bool,
}

// SAFETY: the mapping is owned by the journal and only reached through `&mut self` (writes)
// or `&self` (reads of committed bytes); the writer keeps the journal behind its log mutex.
unsafe impl Send for Journal {}
// SAFETY: as above.
unsafe impl Sync for Journal {}

impl Journal {
    /// Creates a new journal in capture directory `dir`: a fresh file (never one that exists,
    /// whatever process or container made it), its space allocated (a full disk fails here,
    /// not as a fault when a page is first written).
    pub fn create(dir: &Path) -> std::io::Result<Journal> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let (file, path) = loop {
            let n = N.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let path = dir.join(format!(
                "{JOURNAL_PREFIX}{}.{n}.{nanos}",
                std::process::id()
            ));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(f) => break (f, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let made = Self::map(&file, &path);
        if made.is_err() {
            let _ = fs::remove_file(&path);
        }
        made
    }

    fn map(file: &File, path: &Path) -> std::io::Result<Journal> {
        use std::os::unix::io::AsRawFd;
        let total = (HEADER + CAPACITY) as libc::off_t;
        // SAFETY: a plain call on our own open file.
        let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, total) };
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r));
        }
        // SAFETY: a fresh shared mapping of the whole (allocated) file; the mapping stays
        // valid after the file is closed.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                HEADER + CAPACITY,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let map = map.cast::<u8>();
        // SAFETY: the mapping has HEADER + CAPACITY bytes.
        unsafe { std::ptr::copy_nonoverlapping(MAGIC.as_ptr(), map, MAGIC.len()) };
        let j = Journal {
            path: path.to_path_buf(),
            map,
            len: 0,
            generation: 0,
            failed: false,
        };
        j.field(LENGTH_AT).store(0, Ordering::Release);
        j.field(GENERATION_AT).store(0, Ordering::Release);
        Ok(j)
    }

    /// A u64 of the header, in the mapping.
    fn field(&self, at: usize) -> &AtomicU64 {
        // SAFETY: offsets 8 and 16 of a page-aligned mapping are aligned for a u64 and inside
        // it; the mapping lives as long as `self`.
        unsafe { &*self.map.add(at).cast::<AtomicU64>() }
    }

    /// Bytes committed and not yet moved into the log.
    pub fn committed(&self) -> usize {
        self.len
    }

    /// Appends whole records; false (nothing appended) when they do not fit.
    pub fn append(&mut self, records: &[u8]) -> bool {
        if records.len() > CAPACITY - self.len {
            return false;
        }
        // SAFETY: `HEADER + len + records.len() <= HEADER + CAPACITY`, inside the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(
                records.as_ptr(),
                self.map.add(HEADER + self.len),
                records.len(),
            )
        };
        self.len += records.len();
        // Release: a reader that sees this length sees the bytes before it.
        self.field(LENGTH_AT)
            .store(self.len as u64, Ordering::Release);
        true
    }

    /// Moves the committed records into the log (one `write`), then empties the journal and
    /// starts its next generation. When the write fails (a full disk), the records stay in
    /// the journal and no later move is tried (Err from then on).
    pub fn drain_into(&mut self, log: &mut File) -> std::io::Result<()> {
        if self.failed {
            return Err(std::io::Error::other(
                "an earlier move of the journal into the launch log failed",
            ));
        }
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: the committed bytes, inside the mapping.
        let bytes = unsafe { std::slice::from_raw_parts(self.map.add(HEADER), self.len) };
        if let Err(e) = log.write_all(bytes) {
            self.failed = true;
            return Err(e);
        }
        self.len = 0;
        self.field(LENGTH_AT).store(0, Ordering::Release);
        // A reader that copied records of the old generation while they were being
        // overwritten sees the generation change and drops them (they are in the log).
        self.generation += 1;
        self.field(GENERATION_AT)
            .store(self.generation, Ordering::Release);
        Ok(())
    }
}

impl Drop for Journal {
    /// Unmaps the journal; deletes it when it holds nothing the log lacks.
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`, unmapped once.
        unsafe { libc::munmap(self.map.cast(), HEADER + CAPACITY) };
        if self.len == 0 && !self.failed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The journals in capture directory `dir` (any process's), by name.
pub fn journals(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(JOURNAL_PREFIX))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The committed whole records of the journal at `path`. Empty for a file that is not a
/// journal, and for a journal its writer emptied while this was reading it (its records are
/// in the log by then); Err when the file cannot be read.
pub fn committed_records(path: &Path) -> std::io::Result<Vec<u8>> {
    // A journal is a regular file of the capture: never a link followed or a FIFO waited on.
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
    else {
        return Ok(Vec::new());
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let file = match crate::reader::open_inside(dir, &[name], u64::MAX) {
        Ok(f) => f,
        Err(crate::reader::OpenError::Io(e)) => return Err(e),
        Err(crate::reader::OpenError::NotFound) => {
            return Err(std::io::ErrorKind::NotFound.into())
        }
        Err(crate::reader::OpenError::Refused(why)) => {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why))
        }
    };
    let size = file.metadata()?.len() as usize;
    if size < HEADER {
        return Ok(Vec::new());
    }
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, 0)?;
    if &header[..MAGIC.len()] != MAGIC {
        return Ok(Vec::new());
    }
    let word = |h: &[u8; HEADER], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&h[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let generation = word(&header, GENERATION_AT);
    let n = (word(&header, LENGTH_AT) as usize)
        .min(size - HEADER)
        .min(CAPACITY);
    let mut records = vec![0u8; n];
    file.read_exact_at(&mut records, HEADER as u64)?;
    file.read_exact_at(&mut header, 0)?;
    if word(&header, GENERATION_AT) != generation {
        return Ok(Vec::new());
    }
    // Only whole lines (the length covers whole records; a damaged file may not).
    let keep = records
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    records.truncate(keep);
    Ok(records)
}

/// The committed records of every journal in `dir`, one after another (Err: one could not be
/// read, named in the error's path).
pub fn pending_records(dir: &Path) -> Result<Vec<u8>, (PathBuf, std::io::Error)> {
    let mut all = Vec::new();
    for j in journals(dir) {
        match committed_records(&j) {
            Ok(records) => all.extend(records),
            Err(e) => return Err((j, e)),
        }
    }
    Ok(all)
}

/// Moves every journal in `dir` into the log `log` and deletes it (one that cannot be read
/// stays). Only for a writer alone on the capture (it holds the writers' lock exclusively):
/// every journal is then a dead process's.
pub fn fold_dead(dir: &Path, log: &Path) -> std::io::Result<()> {
    for path in journals(dir) {
        let Ok(records) = committed_records(&path) else {
            continue;
        };
        if !records.is_empty() {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)?
                .write_all(&records)?;
        }
        fs::remove_file(&path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(label: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cltrap-journal-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn records_are_readable_at_once_and_move_into_the_log() {
        let d = dir("move");
        let log_path = d.join("launches.jsonl");
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let mut j = Journal::create(&d).unwrap();
        assert!(j.append(b"{\"id\":0}\n"));
        assert!(j.append(b"{\"id\":1}\n"));
        let found = journals(&d);
        assert_eq!(found.len(), 1);
        assert_eq!(
            committed_records(&found[0]).unwrap(),
            b"{\"id\":0}\n{\"id\":1}\n"
        );
        j.drain_into(&mut log).unwrap();
        assert_eq!(j.committed(), 0);
        assert_eq!(committed_records(&found[0]).unwrap(), b"");
        assert_eq!(fs::read(&log_path).unwrap(), b"{\"id\":0}\n{\"id\":1}\n");
        // Too big for what is left: refused, nothing appended.
        assert!(!j.append(&vec![b'x'; CAPACITY + 1]));
        drop(j);
        assert!(journals(&d).is_empty(), "an empty journal is deleted");
    }

    #[test]
    fn a_dead_writers_journal_is_folded_into_the_log() {
        let d = dir("fold");
        let log_path = d.join("launches.jsonl");
        fs::write(&log_path, b"{\"id\":0}\n").unwrap();
        let mut j = Journal::create(&d).unwrap();
        assert!(j.append(b"{\"id\":1}\n"));
        // The process "dies": its journal stays with a committed record.
        drop(j);
        assert_eq!(journals(&d).len(), 1);
        // Garbage named like a journal is read as empty, and removed.
        fs::write(d.join(format!("{JOURNAL_PREFIX}1.0.0")), b"not a journal").unwrap();
        fold_dead(&d, &log_path).unwrap();
        assert!(journals(&d).is_empty());
        assert_eq!(fs::read(&log_path).unwrap(), b"{\"id\":0}\n{\"id\":1}\n");
    }
}
