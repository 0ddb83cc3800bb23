//! The blob store: each distinct content written once per capture, small ones as blobs, large
//! ones into the spool (when on) or as chunks in packs (see [`crate::chunks`]).

use super::{blob_path, digest, index_path, WriteError};
use crate::model::Hash;
use crate::writer_fs::{self, Access};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How [`BlobStore::put_content_planned`] stored a content.
#[derive(Debug)]
pub enum Put {
    /// Stored now or before: the bytes written, and whether this call stored a large content.
    Done(u64, bool),
    /// A large new content planned as a spool record and counted as stored: the caller
    /// writes it ([`BlobStore::write_planned`]) before any record naming it is appended.
    Planned(crate::spool::Planned),
}

/// An earlier version of a content that [`BlobStore::put_content_spooled`] is given: the
/// content's next version differs from it only in `region` (first byte, one past the last:
/// [`crate::parallel::changed_region`]).
#[derive(Debug, Clone, Copy)]
pub struct Like<'a> {
    /// Digest of the earlier version (stored or spooled already): the base of a spooled
    /// patch record ([`crate::spool`]).
    pub base: &'a str,
    pub region: (usize, usize),
    /// Its bytes when the caller has them (else empty): a spooled patch then holds only the
    /// ranges of the region that changed ([`crate::spool::changed_ranges`]), not all of it.
    pub old: &'a [u8],
}

/// Content-addressed byte storage; each distinct content is written once per capture.
pub struct BlobStore {
    dir: PathBuf,
    known: Mutex<HashSet<Hash>>,
    /// Chunks this process stored, and where (see [`crate::chunks`]): a chunk of a later
    /// content names the same place instead of being stored again (only a compacting
    /// build stores chunks).
    #[cfg_attr(not(feature = "compact"), allow(dead_code))]
    known_chunks: Mutex<HashMap<Hash, crate::chunks::PackSlot>>,
    /// Chunks found in the capture's packs before this process stored anything
    /// ([`BlobStore::learn_stored_chunks`]), not trusted yet: a chunk joins `known_chunks`
    /// once its stored bytes were read back and found equal to the bytes about to reuse it
    /// (a damaged or forged pack would otherwise make every later content that shares the
    /// chunk unreadable), else it is stored again.
    learned_chunks: Mutex<HashMap<Hash, crate::chunks::PackSlot>>,
    bytes_written: AtomicU64,
    /// Of `bytes_written`, the spool's; and the whole sizes of the contents spooled (see
    /// [`BlobStore::content_bytes`]).
    spooled_written: AtomicU64,
    spooled_whole: AtomicU64,
    /// Who may read the files and folders this store makes.
    pub(super) access: Access,
    /// Folders below the capture folder that this store made or checked (real folders of
    /// this user, [`writer_fs::ensure_subdirs`]), so each is checked once.
    checked_dirs: Mutex<HashSet<PathBuf>>,
    /// Where large contents go raw when the spool is on ([`BlobStore::enable_spool`]),
    /// instead of being cut and compressed here.
    spool: std::sync::OnceLock<crate::spool::SpoolWriter>,
    /// Files this store wrote since [`BlobStore::take_written`] last emptied it, when asked to
    /// keep the list ([`BlobStore::track_written`]).
    written: Mutex<Option<Vec<PathBuf>>>,
}

impl BlobStore {
    /// A store rooted at capture directory `dir` (blobs go to `dir/blobs`), whose files only
    /// this user may read.
    pub fn new(dir: &Path) -> Self {
        Self::with_access(dir, Access::PRIVATE)
    }

    /// [`BlobStore::new`], making files and folders as `access` says.
    pub fn with_access(dir: &Path, access: Access) -> Self {
        BlobStore {
            dir: dir.to_path_buf(),
            known: Mutex::new(HashSet::new()),
            known_chunks: Mutex::new(HashMap::new()),
            learned_chunks: Mutex::new(HashMap::new()),
            bytes_written: AtomicU64::new(0),
            spooled_written: AtomicU64::new(0),
            spooled_whole: AtomicU64::new(0),
            access,
            checked_dirs: Mutex::new(HashSet::new()),
            spool: std::sync::OnceLock::new(),
            written: Mutex::new(None),
        }
    }

    /// From now on, keeps the list of the files this store writes, for
    /// [`BlobStore::take_written`]. Why: a compactor makes exactly those durable before it
    /// deletes the spool segments they came from; syncing the whole filesystem also wrote the
    /// gigabytes of spool pages about to be deleted (3 of a compaction's 4.4 s on an H200
    /// host, for a 6 GB spool).
    pub fn track_written(&self) {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        w.get_or_insert_with(Vec::new);
    }

    /// The files written since the last call (empty when the list is not kept).
    pub fn take_written(&self) -> Vec<PathBuf> {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        w.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// From now on, large contents ([`BlobStore::put_content`]) are appended raw to the
    /// capture's spool ([`crate::spool`]) instead of being cut into chunks and compressed in
    /// this process; a `cltrap` process compacts them later. `bound`: bytes the spool may hold
    /// while a compactor runs before a store waits for it (0: no bound).
    pub fn enable_spool(&self, bound: u64) -> Result<(), WriteError> {
        if self.spool.get().is_some() {
            return Ok(());
        }
        let spool =
            crate::spool::SpoolWriter::new(&self.dir, self.access, bound).map_err(|source| {
                WriteError::Write {
                    path: self.dir.join(crate::spool::SPOOL_DIR),
                    source,
                }
            })?;
        let _ = self.spool.set(spool);
        Ok(())
    }

    /// What the spool cost so far (None: the spool is off).
    pub fn spool_stats(&self) -> Option<crate::spool::SpoolStats> {
        self.spool.get().map(|s| s.stats())
    }

    /// Writes part record `planned` ([`crate::spool::Planned::unnamed_parts`]) of content
    /// `bytes` to the spool's `lane`, its digest given by `name` once its bytes are written
    /// ([`crate::spool::SpoolWriter::write_part_named`]). Until it returns, no launch record
    /// may name the content.
    pub fn write_part_named(
        &self,
        lane: usize,
        planned: &crate::spool::Planned,
        bytes: &[u8],
        name: impl FnOnce() -> String,
    ) -> Result<(), WriteError> {
        self.with_spool(|spool| spool.write_part_named(lane, planned, bytes, name))
    }

    /// Counts a content of `len` bytes spooled as unnamed parts of `record_bytes` in all, now
    /// that its digest `hash` is known (what [`BlobStore::put_content_planned`] counts when it
    /// plans a record), so the disk budget, the derive threshold and later patches on it see
    /// it as any spooled content.
    pub fn spooled_as(&self, hash: &str, len: u64, record_bytes: u64) {
        if let Some(s) = self.spool.get() {
            s.learn_whole(hash);
        }
        self.bytes_written
            .fetch_add(record_bytes, Ordering::Relaxed);
        self.spooled_written
            .fetch_add(record_bytes, Ordering::Relaxed);
        self.spooled_whole.fetch_add(len, Ordering::Relaxed);
        self.remember(hash);
    }

    /// Runs a write on the spool, its failure (or a spool that is off) as a [`WriteError`]
    /// naming the spool's folder.
    fn with_spool(
        &self,
        write: impl FnOnce(&crate::spool::SpoolWriter) -> std::io::Result<u64>,
    ) -> Result<(), WriteError> {
        let source = match self.spool.get() {
            Some(spool) => match write(spool) {
                Ok(_) => return Ok(()),
                Err(e) => e,
            },
            None => std::io::Error::other("the capture's spool is off"),
        };
        Err(WriteError::Write {
            path: self.dir.join(crate::spool::SPOOL_DIR),
            source,
        })
    }

    /// Whether new large contents go to the spool (it could be opened).
    pub fn spooling(&self) -> bool {
        self.spool.get().is_some()
    }

    /// Waits, when the spool is on, until it has room for `bytes` more
    /// ([`crate::spool::SpoolWriter::make_room`]): what whoever cuts a planned record into
    /// parts does once for all of them, before handing them to lanes.
    pub fn make_spool_room(&self, bytes: u64) {
        if let Some(s) = self.spool.get() {
            s.make_room(bytes);
        }
    }

    /// Learns where the chunks of the contents already stored in packs lie (their indexes),
    /// so that storing a content reuses them instead of writing them again: what a compactor
    /// does before compacting into a capture that holds packs already. Unreadable indexes
    /// are skipped (their chunks are only stored again); a chunk learned is reused only once
    /// its stored bytes proved equal to the new content's (`learned_chunks`).
    pub fn learn_stored_chunks(&self) {
        // A `blobs` that is a link (a capture from elsewhere) names chunks outside it: none
        // learned (reads and writes below refuse it too).
        let blobs = self.dir.join("blobs");
        if !fs::symlink_metadata(&blobs).is_ok_and(|m| m.is_dir()) {
            return;
        }
        let Ok(prefixes) = fs::read_dir(blobs) else {
            return;
        };
        let mut known = self
            .learned_chunks
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for prefix in prefixes.filter_map(|e| e.ok()) {
            // A compactor's heartbeat while it reads a large store's indexes (a writer
            // waiting for room counts it as progress).
            crate::spool::heartbeat(&self.dir);
            if !prefix.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = fs::read_dir(prefix.path()) else {
                continue;
            };
            for f in files.filter_map(|e| e.ok()) {
                let name = f.file_name();
                let Some(name) = name.to_str() else { continue };
                if !name.ends_with(".chunks") || name.starts_with('.') {
                    continue;
                }
                let Ok(text) = writer_fs::read_regular(&f.path(), 1 << 26) else {
                    continue;
                };
                let Ok(text) = String::from_utf8(text) else {
                    continue;
                };
                let Ok((_, chunks)) = crate::chunks::parse_index(&text) else {
                    continue;
                };
                for c in chunks {
                    if let Some(at) = c.at {
                        known.entry(c.hash).or_insert(at);
                    }
                }
            }
        }
    }

    /// Stores `bytes` (unless already stored) and returns their digest.
    pub fn put(&self, bytes: &[u8]) -> Result<Hash, WriteError> {
        let hash = digest(bytes);
        self.put_with_hash(&hash, bytes)?;
        Ok(hash)
    }

    /// Stores `bytes` under an already computed digest, whole (one file named by the digest).
    pub fn put_with_hash(&self, hash: &str, bytes: &[u8]) -> Result<(), WriteError> {
        if self.is_known(hash) {
            return Ok(());
        }
        let path = blob_path(&self.dir, hash);
        if !writer_fs::is_regular(&path) {
            self.write_new(&path, bytes)?;
        }
        self.remember(hash);
        Ok(())
    }

    /// Stores buffer or image contents whose digest is `hash` without cutting or compressing
    /// them: spooled raw ([`crate::spool`]) where the spool is on (given an earlier version,
    /// `like`, only the ranges that changed, as a patch on it), else stored whole in one blob
    /// file. What the shim stores with: cutting and compressing (`BlobStore::put_content`)
    /// belongs to compaction, in a `cltrap` process, and is not even built into the shim (the
    /// `compact` feature). Returns the bytes written and whether this call stored a large
    /// content (the caller's version of the buffer then moves on to this one).
    pub fn put_content_spooled(
        &self,
        hash: &str,
        bytes: &[u8],
        like: Option<Like<'_>>,
    ) -> Result<(u64, bool), WriteError> {
        let put = self.put_content_planned(hash, bytes, like)?;
        self.write_now(put, bytes)
    }

    /// [`BlobStore::put_uncut`], a spool record written at once (lane 0): the bytes written
    /// and whether this call stored a large content; None as there.
    #[cfg(feature = "compact")]
    fn put_uncut_now(
        &self,
        hash: &str,
        bytes: &[u8],
        like: Option<Like<'_>>,
    ) -> Result<Option<(u64, bool)>, WriteError> {
        self.put_uncut(hash, bytes, like)?
            .map(|put| self.write_now(put, bytes))
            .transpose()
    }

    /// Finishes a [`Put`] on this thread: a planned spool record of `bytes` is written now
    /// (lane 0). Returns the bytes written and whether a large content was stored.
    fn write_now(&self, put: Put, bytes: &[u8]) -> Result<(u64, bool), WriteError> {
        match put {
            Put::Done(written, large) => Ok((written, large)),
            Put::Planned(planned) => {
                self.write_planned(0, &planned, bytes)?;
                Ok((planned.bytes(), true))
            }
        }
    }

    /// [`BlobStore::put_content_spooled`], except that a large new content the spool takes is
    /// only planned ([`Put::Planned`]): counted as stored from now on, for the caller to write
    /// with [`BlobStore::write_planned`] on a thread of its own. Why: copying gigabytes into
    /// the page cache is one thread's work per file, and an application that rewrites large
    /// buffers waited for it.
    pub fn put_content_planned(
        &self,
        hash: &str,
        bytes: &[u8],
        like: Option<Like<'_>>,
    ) -> Result<Put, WriteError> {
        match self.put_uncut(hash, bytes, like)? {
            Some(put) => Ok(put),
            None => {
                let before = self.bytes_written();
                self.put_with_hash(hash, bytes)?;
                Ok(Put::Done(self.bytes_written() - before, true))
            }
        }
    }

    /// Writes a record [`BlobStore::put_content_planned`] planned, for the same `bytes`, to
    /// the spool's `lane` ([`crate::spool::LANES`]). Until it returns, no launch record may
    /// name the content (a reader would not find it).
    pub fn write_planned(
        &self,
        lane: usize,
        planned: &crate::spool::Planned,
        bytes: &[u8],
    ) -> Result<(), WriteError> {
        self.with_spool(|spool| spool.write_planned(lane, planned, bytes))
    }

    /// What storing a content does before cutting it: a small content is stored whole, a
    /// content stored already costs nothing, and with the spool on a large one is planned as
    /// a spool record (counted as written). None: the content is large and new, and no spool
    /// takes it (the caller cuts it, or stores it whole).
    fn put_uncut(
        &self,
        hash: &str,
        bytes: &[u8],
        like: Option<Like<'_>>,
    ) -> Result<Option<Put>, WriteError> {
        if bytes.len() < crate::chunks::MIN_CHUNKED {
            let before = self.bytes_written();
            self.put_with_hash(hash, bytes)?;
            return Ok(Some(Put::Done(self.bytes_written() - before, false)));
        }
        if self.is_known(hash) {
            return Ok(Some(Put::Done(0, false)));
        }
        let index = index_path(&self.dir, hash);
        if writer_fs::is_regular(&index) || writer_fs::is_regular(&blob_path(&self.dir, hash)) {
            self.remember(hash);
            return Ok(Some(Put::Done(0, false)));
        }
        if let Some(spool) = self.spool.get() {
            // The next version of a content this writer spooled: only the changed region.
            // Changed nearly everywhere: a whole record, without finding every range.
            let like = like.filter(|l| !crate::spool::mostly_changed(bytes, l.old, l.region));
            let ranges = like.map(|l| {
                let (lo, hi) = l.region;
                let ranges = if l.old.len() == bytes.len() {
                    crate::spool::changed_ranges(bytes, l.old, l.region)
                } else {
                    vec![(lo, hi.saturating_sub(lo))]
                };
                (l.base, ranges)
            });
            let version = ranges.as_ref().map(|(base, r)| (*base, r.as_slice()));
            let planned = spool
                .plan(hash, bytes, version)
                .map_err(|source| WriteError::Write {
                    path: self.dir.join(crate::spool::SPOOL_DIR),
                    source,
                })?;
            let written = planned.bytes();
            self.bytes_written.fetch_add(written, Ordering::Relaxed);
            self.spooled_written.fetch_add(written, Ordering::Relaxed);
            self.spooled_whole
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.remember(hash);
            return Ok(Some(Put::Planned(planned)));
        }
        Ok(None)
    }

    /// Writes a file that does not exist yet under a temporary name and renames it into
    /// place, so a reader never sees half of it; counts its bytes. Its folder inside the
    /// capture is made (or checked, once) to be a real folder of this user, never a link.
    fn write_new(&self, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        self.ensure_dir(&parent)?;
        let tracked = self
            .written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        // A compactor makes what it wrote durable before it drops the spool: starting each
        // file's write-back as soon as it is written lets the disk work while the compactor
        // cuts and compresses the next contents, so that sync finds little left to write.
        let start_writeback = |f: &std::fs::File| {
            if tracked {
                use std::os::fd::AsRawFd;
                // SAFETY: an asynchronous write-back request over the whole of a file we own;
                // failing (a filesystem without it) only leaves the work to the later sync.
                unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
            }
        };
        writer_fs::write_new_then(path, bytes, self.access, start_writeback).map_err(|source| {
            WriteError::Write {
                path: path.to_path_buf(),
                source,
            }
        })?;
        self.bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if let Some(w) = self
            .written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            w.push(path.to_path_buf());
        }
        Ok(())
    }

    /// Makes `dir`, a folder inside the capture, once per store (see
    /// [`writer_fs::ensure_subdirs`]).
    pub(super) fn ensure_dir(&self, dir: &Path) -> Result<(), WriteError> {
        let lock = || self.checked_dirs.lock().unwrap_or_else(|p| p.into_inner());
        if lock().contains(dir) {
            return Ok(());
        }
        let made = match dir.strip_prefix(&self.dir) {
            Ok(rel) => writer_fs::ensure_subdirs(&self.dir, rel, self.access),
            Err(_) => writer_fs::ensure_capture_dir(dir, self.access),
        };
        made.map_err(|source| WriteError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        lock().insert(dir.to_path_buf());
        Ok(())
    }

    fn remember(&self, hash: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.insert(hash.to_string());
        }
    }

    /// Whether this store already holds `hash` (written by this process).
    pub fn is_known(&self, hash: &str) -> bool {
        self.known.lock().map(|k| k.contains(hash)).unwrap_or(false)
    }

    /// Bytes this process actually wrote to disk for blobs, indexes and compressed chunks
    /// (what the disk budget counts; duplicates not counted).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    /// [`BlobStore::bytes_written`], but a content that went to the spool counts at its whole
    /// size even where the spool holds only the ranges that changed since its base: the bytes
    /// compaction will rebuild, cut and compress. What the derive threshold counts, so a
    /// capture whose buffers change a little per launch starts deriving after as many
    /// contents as one that spools them whole (else compaction after the application's exit
    /// grows with every version kept).
    pub fn content_bytes(&self) -> u64 {
        let spooled = self.spooled_written.load(Ordering::Relaxed);
        let whole = self.spooled_whole.load(Ordering::Relaxed);
        self.bytes_written().saturating_sub(spooled) + whole
    }
}

#[cfg(feature = "compact")]
mod chunked;
#[cfg(feature = "compact")]
pub use chunked::{PackBatch, BATCH_MAX, GROUP_RAW_MAX};

#[cfg(test)]
mod learn_tests {
    use super::*;

    /// Chunks are learned from the capture's own `blobs` folder only: a `blobs` that is a
    /// link to another folder (a capture from elsewhere) teaches none, so nothing outside
    /// the capture is read or reused.
    #[test]
    fn chunks_are_learned_from_the_captures_own_blobs_folder_only() {
        let index = format!(
            "cltrap-chunks 2\nsize 10\npack {}\n{} 10 0 0 10\n",
            "ab".repeat(32),
            "cd".repeat(32)
        );
        let outside = tempfile::tempdir().unwrap();
        let name = format!("{}.chunks", "ef".repeat(32));
        std::fs::create_dir_all(outside.path().join("ef")).unwrap();
        std::fs::write(outside.path().join("ef").join(&name), &index).unwrap();
        for linked in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let blobs = dir.path().join("blobs");
            if linked {
                std::os::unix::fs::symlink(outside.path(), &blobs).unwrap();
            } else {
                std::fs::create_dir_all(blobs.join("ef")).unwrap();
                std::fs::write(blobs.join("ef").join(&name), &index).unwrap();
            }
            let store = BlobStore::new(dir.path());
            store.learn_stored_chunks();
            let learned = store.learned_chunks.lock().unwrap().len();
            assert_eq!(learned, usize::from(!linked), "linked {linked}");
        }
    }
}
