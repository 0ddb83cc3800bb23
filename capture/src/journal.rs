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
//! Layout: [`MAGIC`], then the committed length (u64, little-endian), then the records as in
//! the log (whole JSON lines). A record is copied first and committed after (a release store
//! of the length), so a reader never sees part of one. The writer moves the journal into the
//! log from time to time ([`Journal::drain_into`]) and at exit, then deletes it. A process
//! that died leaves its journal: readers read every journal before the log (a record can then
//! be in both, when the process died between moving the journal into the log and emptying
//! it: readers keep the first copy of each id), and the next writer that is alone on the
//! capture moves dead journals into the log ([`fold_dead`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Journal files are named `<this><pid>.<n>` in the capture directory.
pub const JOURNAL_PREFIX: &str = "launches.pending.";
/// The first bytes of a journal.
const MAGIC: &[u8; 8] = b"cltrapj1";
/// Magic and committed length.
const HEADER: usize = 16;
/// Bytes of records one journal holds (a writer moves it into the log when it is full).
pub const CAPACITY: usize = 4 << 20;

/// A journal being written by this process (see the module documentation).
pub struct Journal {
    path: PathBuf,
    /// Keeps the mapping's file open.
    _file: File,
    map: *mut u8,
}

// SAFETY: the mapping is owned by the journal and only reached through `&mut self` (writes)
// or `&self` (reads of committed bytes); the writer keeps the journal behind its log mutex.
unsafe impl Send for Journal {}
// SAFETY: as above.
unsafe impl Sync for Journal {}

impl Journal {
    /// Creates this process's next journal in capture directory `dir`.
    pub fn create(dir: &Path) -> std::io::Result<Journal> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{JOURNAL_PREFIX}{}.{n}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        file.set_len((HEADER + CAPACITY) as u64)?;
        use std::os::unix::io::AsRawFd;
        // SAFETY: a fresh shared mapping of the whole file, which stays open while mapped.
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
            let e = std::io::Error::last_os_error();
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        let map = map.cast::<u8>();
        // SAFETY: the mapping has HEADER + CAPACITY bytes.
        unsafe { std::ptr::copy_nonoverlapping(MAGIC.as_ptr(), map, MAGIC.len()) };
        let j = Journal {
            path,
            _file: file,
            map,
        };
        j.length().store(0, Ordering::Release);
        Ok(j)
    }

    /// The committed length, in the mapping.
    fn length(&self) -> &AtomicU64 {
        // SAFETY: offset 8 of a page-aligned mapping is aligned for a u64 and inside it; the
        // mapping lives as long as `self`.
        unsafe { &*self.map.add(MAGIC.len()).cast::<AtomicU64>() }
    }

    /// Bytes committed and not yet moved into the log.
    pub fn committed(&self) -> usize {
        self.length().load(Ordering::Acquire) as usize
    }

    /// Appends whole records; false (nothing appended) when they do not fit.
    pub fn append(&mut self, records: &[u8]) -> bool {
        let at = self.committed();
        if records.len() > CAPACITY - at {
            return false;
        }
        // SAFETY: `HEADER + at + records.len() <= HEADER + CAPACITY`, inside the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(
                records.as_ptr(),
                self.map.add(HEADER + at),
                records.len(),
            )
        };
        self.length()
            .store((at + records.len()) as u64, Ordering::Release);
        true
    }

    /// Moves the committed records into the log (one `write`), then empties the journal.
    /// When the write fails part way (a full disk), the log is cut back to where it was, so
    /// it never holds part of a record in the middle, and the records stay in the journal,
    /// where readers find them.
    pub fn drain_into(&mut self, log: &mut File) -> std::io::Result<()> {
        let n = self.committed();
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the committed bytes, inside the mapping.
        let bytes = unsafe { std::slice::from_raw_parts(self.map.add(HEADER), n) };
        let before = log.metadata()?.len();
        if let Err(e) = log.write_all(bytes) {
            let _ = log.set_len(before);
            return Err(e);
        }
        self.length().store(0, Ordering::Release);
        Ok(())
    }
}

impl Drop for Journal {
    /// Unmaps the journal; deletes it when it holds nothing the log lacks.
    fn drop(&mut self) {
        let empty = self.committed() == 0;
        // SAFETY: the mapping made in `create`, unmapped once.
        unsafe { libc::munmap(self.map.cast(), HEADER + CAPACITY) };
        if empty {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The journals in capture directory `dir` (any process's), oldest name first.
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

/// The committed records of the journal at `path` (empty when it is not one: a reader never
/// fails on a journal, it only loses what a damaged one held).
pub fn committed_records(path: &Path) -> Vec<u8> {
    let Ok(bytes) = fs::read(path) else {
        return Vec::new();
    };
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        return Vec::new();
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[MAGIC.len()..HEADER]);
    let n = (u64::from_le_bytes(len) as usize).min(bytes.len() - HEADER);
    let mut records = bytes[HEADER..HEADER + n].to_vec();
    // Only whole lines (the length is committed after whole records, but a file cut short
    // by a full disk may end inside one).
    let keep = records
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    records.truncate(keep);
    records
}

/// Moves every journal in `dir` into the log `log` and deletes it. Only for a writer alone on
/// the capture (it holds the writers' lock exclusively): every journal is then a dead
/// process's.
pub fn fold_dead(dir: &Path, log: &Path) -> std::io::Result<()> {
    for path in journals(dir) {
        let records = committed_records(&path);
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
        assert_eq!(committed_records(&found[0]), b"{\"id\":0}\n{\"id\":1}\n");
        j.drain_into(&mut log).unwrap();
        assert_eq!(j.committed(), 0);
        assert_eq!(committed_records(&found[0]), b"");
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
        fs::write(d.join(format!("{JOURNAL_PREFIX}1.0")), b"not a journal").unwrap();
        fold_dead(&d, &log_path).unwrap();
        assert!(journals(&d).is_empty());
        assert_eq!(fs::read(&log_path).unwrap(), b"{\"id\":0}\n{\"id\":1}\n");
    }
}
