//! Writing a capture: content-addressed blobs plus an append-only launch log.
//!
//! Both types are `Sync`: the shim records launches from many application threads at once.

use crate::model::{Hash, LaunchRecord, Manifest};
use crate::writer_fs::{self, Access, Open};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Why a capture could not be written. The shim reports the first one and carries on.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot create capture directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode record: {0}")]
    Encode(#[from] serde_json::Error),
    /// The folder holds something this writer must not continue: a manifest of another
    /// format or of a version it cannot write (its launches would be unreadable after ours).
    #[error("{path} is not a capture this writer can continue ({why}); it is left as it is")]
    Foreign { path: PathBuf, why: String },
}

/// The digest cltrap uses for every blob: blake3, lower-case hex (of a large content, on
/// several threads: [`crate::parallel::digest`]).
pub fn digest(bytes: &[u8]) -> Hash {
    crate::parallel::digest(bytes)
}

/// Path of a blob inside a capture directory (`blobs/ab/abcdef...`).
pub fn blob_path(dir: &Path, hash: &str) -> PathBuf {
    let prefix = hash.get(..2).unwrap_or("xx");
    dir.join("blobs").join(prefix).join(hash)
}

/// Path of the chunk index of a content stored in chunks (`blobs/ab/abcdef....chunks`).
pub fn index_path(dir: &Path, hash: &str) -> PathBuf {
    with_suffix(blob_path(dir, hash), ".chunks")
}

/// Path of one compressed chunk in a file of its own (`blobs/cd/cdef01....chunk`, index
/// version 1: what format versions 2 and 3 wrote), named by the digest of its uncompressed
/// bytes.
pub fn chunk_path(dir: &Path, chunk_hash: &str) -> PathBuf {
    with_suffix(blob_path(dir, chunk_hash), ".chunk")
}

/// Path of a pack of compressed chunks (`blobs/ef/ef0123....pack`), named by the digest of
/// the whole file.
pub fn pack_path(dir: &Path, pack_hash: &str) -> PathBuf {
    with_suffix(blob_path(dir, pack_hash), ".pack")
}

fn with_suffix(path: PathBuf, suffix: &str) -> PathBuf {
    let mut s = path.into_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

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
    /// content names the same place instead of being stored again.
    known_chunks: Mutex<HashMap<Hash, crate::chunks::PackSlot>>,
    bytes_written: AtomicU64,
    /// Of `bytes_written`, the spool's; and the whole sizes of the contents spooled (see
    /// [`BlobStore::content_bytes`]).
    spooled_written: AtomicU64,
    spooled_whole: AtomicU64,
    /// Who may read the files and folders this store makes.
    access: Access,
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
    /// are skipped (their chunks are only stored again).
    pub fn learn_stored_chunks(&self) {
        let Ok(prefixes) = fs::read_dir(self.dir.join("blobs")) else {
            return;
        };
        let mut known = self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
        for prefix in prefixes.filter_map(|e| e.ok()) {
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
    fn ensure_dir(&self, dir: &Path) -> Result<(), WriteError> {
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

/// Name of the file holding the next launch id no process has reserved yet (decimal text).
/// Processes writing one capture at the same time (a test suite, a forking server) reserve
/// ids from it in blocks of [`ID_BLOCK`] under an exclusive `flock` on it, so their ids never
/// collide; readers ignore it (a capture without it continues after its log's largest id).
pub const IDS_FILE: &str = "ids";
/// Name of the file every live writer holds a shared `flock` on: a writer that gets it
/// exclusively knows no other is appending, so a partial last line can only be a dead
/// writer's and is cut off.
pub const WRITERS_FILE: &str = ".writers.lock";
/// Launch ids a process reserves at a time. Alone it numbers its launches 0, 1, 2, ...; two
/// at once interleave blocks; at exit a process gives back the rest of its last block unless
/// another reserved ids after it.
pub const ID_BLOCK: u64 = 1024;

/// The launch log and, when enabled, its journal ([`crate::journal`]).
struct Log {
    file: File,
    journal: Option<crate::journal::Journal>,
}

impl Log {
    /// Writes `lines` (whole records) after everything written before: into the journal
    /// when there is one with room (moving it into the log first when full), else to the log.
    fn write(&mut self, lines: &[u8]) -> std::io::Result<()> {
        if let Some(j) = self.journal.as_mut() {
            if j.append(lines) {
                return Ok(());
            }
            j.drain_into(&mut self.file)?;
            if j.append(lines) {
                return Ok(());
            }
        }
        self.file.write_all(lines)
    }
}

/// The ids this process may hand out: `next..end`.
struct IdBlock {
    next: u64,
    end: u64,
}

/// An open capture being written: manifest, blobs and the launch log.
pub struct CaptureWriter {
    dir: PathBuf,
    /// Where sources, programs and buffer contents go.
    pub blobs: BlobStore,
    log: Mutex<Log>,
    ids: Mutex<IdBlock>,
    /// The [`IDS_FILE`], locked while a block is reserved.
    id_file: File,
    /// The [`WRITERS_FILE`], held with a shared lock while this writer lives.
    _writers: File,
    /// Per kernel: the last launch this writer appended with [`CaptureWriter::append_numbered`]
    /// (its record), the base its next launch is written as a change of.
    bases: Mutex<HashMap<String, LaunchRecord>>,
}

impl CaptureWriter {
    /// Creates (or continues) a capture in `dir` and writes its manifest; its files and
    /// folders only this user may read ([`CaptureWriter::create_with`]).
    ///
    /// An existing capture of the same format is appended to, with ids continuing after its
    /// last launch, so several processes of one run (e.g. a shell script) share one capture.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self, WriteError> {
        Self::create_with(dir, manifest, Access::PRIVATE)
    }

    /// [`CaptureWriter::create`], making files and folders as `access` says.
    ///
    /// Refused (nothing written): a folder of another user or one this user cannot read
    /// back ([`writer_fs::ensure_capture_dir`]), a manifest that is not this format at a
    /// version this writer can write, and any file of the capture that is a link, a FIFO
    /// or anything but a regular file.
    pub fn create_with(
        dir: &Path,
        manifest: &Manifest,
        access: Access,
    ) -> Result<Self, WriteError> {
        writer_fs::ensure_capture_dir(dir, access).map_err(|source| WriteError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let manifest_path = dir.join("manifest.json");
        let write_manifest = |text: Vec<u8>| {
            writer_fs::write_new(&manifest_path, &text, access).map_err(|source| {
                WriteError::Write {
                    path: manifest_path.clone(),
                    source,
                }
            })
        };
        let present = fs::symlink_metadata(&manifest_path).is_ok();
        if !present {
            write_manifest(serde_json::to_vec_pretty(manifest)?)?;
        } else {
            // An older capture continued by this writer becomes the current version; a
            // newer version, another format or damage is refused: appending would leave
            // launches no reader can read.
            upgrade_manifest(dir, access)?;
        }
        let blobs = BlobStore::with_access(dir, access);
        blobs.ensure_dir(&dir.join("blobs"))?;
        let log_path = dir.join(crate::LAUNCHES_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WriteError::Write { path, source }
        };
        let open_rw = |path: &Path| writer_fs::open_regular(path, Open::ReadWrite, access);
        let writers_path = dir.join(WRITERS_FILE);
        let writers = open_rw(&writers_path).map_err(io(&writers_path))?;
        // Alone (no live writer holds its shared lock): a partial last line is a dead
        // writer's and is cut off. Else it may be a line being written right now: left alone.
        if writers.try_lock().is_ok() {
            drop_partial_last_line(&log_path).map_err(io(&log_path))?;
            // Journals of dead writers (every one, when this writer is alone) go into the log.
            crate::journal::fold_dead(dir, &log_path).map_err(io(&log_path))?;
            writers.unlock().map_err(io(&writers_path))?;
        }
        writers.lock_shared().map_err(io(&writers_path))?;
        let log =
            writer_fs::open_regular(&log_path, Open::Append, access).map_err(io(&log_path))?;
        let ids_path = dir.join(IDS_FILE);
        let id_file = open_rw(&ids_path).map_err(io(&ids_path))?;
        Ok(CaptureWriter {
            dir: dir.to_path_buf(),
            blobs,
            log: Mutex::new(Log {
                file: log,
                journal: None,
            }),
            ids: Mutex::new(IdBlock { next: 0, end: 0 }),
            id_file,
            _writers: writers,
            bases: Mutex::new(HashMap::new()),
        })
    }

    /// Reads the [`IDS_FILE`]'s counter (`None`: absent or unreadable) and, when `change`
    /// returns a new value, writes it; all under an exclusive lock on the file, so processes
    /// sharing the capture see each other's updates whole. Returns the value read.
    fn update_counter(
        &self,
        change: impl FnOnce(Option<u64>) -> Option<u64>,
    ) -> Result<Option<u64>, WriteError> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = &self.id_file;
        let io = |source| WriteError::Write {
            path: self.dir.join(IDS_FILE),
            source,
        };
        f.lock().map_err(io)?;
        let updated = (|| -> std::io::Result<Option<u64>> {
            let mut text = String::new();
            f.seek(SeekFrom::Start(0))?;
            f.read_to_string(&mut text)?;
            let current = text.trim().parse::<u64>().ok();
            if let Some(new) = change(current) {
                f.set_len(0)?;
                f.seek(SeekFrom::Start(0))?;
                f.write_all(format!("{new}\n").as_bytes())?;
            }
            Ok(current)
        })();
        let unlocked = f.unlock();
        let current = updated.map_err(io)?;
        unlocked.map_err(io)?;
        Ok(current)
    }

    /// Gives the unused rest of this process's id block back, when no other process reserved
    /// ids after it, so the next process appending to the capture continues right after this
    /// one's last launch. Call when no more launches will be numbered (at exit).
    pub fn release_unused_ids(&self) -> Result<(), WriteError> {
        let mut block = match self.ids.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        };
        if block.next >= block.end {
            return Ok(());
        }
        let (next, end) = (block.next, block.end);
        if self.update_counter(|c| (c == Some(end)).then_some(next))? == Some(end) {
            block.end = next;
        }
        Ok(())
    }

    /// The next id, reserving a new block from the [`IDS_FILE`] when this one is spent (a
    /// capture without the file, an older one, continues after the log's largest id).
    fn next_id(&self) -> Result<u64, WriteError> {
        let mut block = match self.ids.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        };
        if block.next >= block.end {
            let mut start = 0;
            self.update_counter(|c| {
                start = c.unwrap_or_else(|| next_free_id(&self.dir.join(crate::LAUNCHES_FILE)));
                Some(start.saturating_add(ID_BLOCK))
            })?;
            *block = IdBlock {
                next: start,
                end: start.saturating_add(ID_BLOCK),
            };
        }
        let id = block.next;
        block.next += 1;
        Ok(id)
    }

    /// The capture directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one launch; assigns its `id`. The blobs it names must already be stored.
    ///
    /// The id is taken and the line written under one lock, so ids in the log are in order.
    pub fn append(&self, mut record: LaunchRecord) -> Result<u64, WriteError> {
        let path = self.dir.join(crate::LAUNCHES_FILE);
        let mut log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        let id = self.next_id()?;
        record.id = id;
        let mut line = serde_json::to_vec(&record)?;
        line.push(b'\n');
        log.write(&line)
            .map_err(|source| WriteError::Write { path, source })?;
        Ok(id)
    }

    /// From now on, appended records go into a journal mapped into memory
    /// ([`crate::journal`]) and reach the log in batches ([`CaptureWriter::flush_journal`]):
    /// appending costs no system call, and the records survive the process dying all the
    /// same. Err: the journal could not be made (records keep going to the log).
    pub fn enable_journal(&self) -> Result<(), WriteError> {
        let journal =
            crate::journal::Journal::create(&self.dir, self.blobs.access).map_err(|source| {
                WriteError::Write {
                    path: self.dir.join(crate::journal::JOURNAL_PREFIX),
                    source,
                }
            })?;
        let mut log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        if log.journal.is_none() {
            log.journal = Some(journal);
        }
        Ok(())
    }

    /// Bytes in the journal that the log does not have yet (0 without a journal).
    pub fn journal_pending(&self) -> usize {
        match self.log.lock() {
            Ok(l) => l.journal.as_ref().map_or(0, |j| j.committed()),
            Err(p) => p.into_inner().journal.as_ref().map_or(0, |j| j.committed()),
        }
    }

    /// Moves the journal's records into the log (one write). `close`: and deletes the
    /// journal (at exit); later records go straight to the log.
    pub fn flush_journal(&self, close: bool) -> Result<(), WriteError> {
        let path = self.dir.join(crate::LAUNCHES_FILE);
        let mut log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        let Log { file, journal } = &mut *log;
        if let Some(j) = journal.as_mut() {
            j.drain_into(file)
                .map_err(|source| WriteError::Write { path, source })?;
        }
        if close {
            // Dropped empty: deleted.
            *journal = None;
        }
        Ok(())
    }

    /// Takes the next launch id without writing anything: for writers that number launches
    /// in the order the application enqueued them but write them as they complete (with
    /// [`CaptureWriter::append_numbered`]). Readers sort by id. Fails only when a new block of
    /// ids cannot be reserved (the [`IDS_FILE`] cannot be written).
    pub fn take_id(&self) -> Result<u64, WriteError> {
        self.next_id()
    }

    /// Appends launches whose ids were taken with [`CaptureWriter::take_id`], in one write
    /// (a crash mid-write leaves complete records plus at most one partial last line).
    ///
    /// A launch of a kernel this writer appended before is written as the change from that
    /// launch (see [`crate::delta`]): its base is always a whole line earlier in the log, so
    /// every prefix of the log that ends in a whole line reads back.
    ///
    /// The records are taken by value: each becomes its kernel's base for the next one
    /// without a copy.
    pub fn append_numbered(&self, records: Vec<LaunchRecord>) -> Result<(), WriteError> {
        if records.is_empty() {
            return Ok(());
        }
        let path = || self.dir.join(crate::LAUNCHES_FILE);
        // Taken out while in use: a concurrent call finds no bases and writes whole records.
        let mut bases = std::mem::take(&mut *match self.bases.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        });
        // Room for a storm's patch per record up front (growing from nothing reallocated
        // five times per launch).
        let mut lines = Vec::with_capacity(256 * records.len());
        for record in records {
            // A storm's change (seq, scalars, contents) is written directly; anything else
            // as a JSON value (the same bytes: `crate::fastpatch`).
            if let Some(base) = bases.get(&record.kernel) {
                let start = lines.len();
                patch_head(&mut lines, record.id, base.id);
                if crate::fastpatch::write_storm_patch(base, &record, &mut lines) {
                    lines.extend_from_slice(b"}\n");
                    if let Some(b) = bases.get_mut(&record.kernel) {
                        *b = record;
                    }
                    continue;
                }
                lines.truncate(start);
            }
            let patch = bases
                .get(&record.kernel)
                .and_then(|base| Some((base.id, crate::delta::record_patch(base, &record).ok()?)));
            match patch {
                Some((base, patch)) => {
                    patch_head(&mut lines, record.id, base);
                    serde_json::to_writer(&mut lines, &patch)?;
                    lines.push(b'}');
                }
                None => serde_json::to_writer(&mut lines, &record)?,
            }
            lines.push(b'\n');
            match bases.get_mut(&record.kernel) {
                Some(b) => *b = record,
                None => {
                    bases.insert(record.kernel.clone(), record);
                }
            }
        }
        let mut log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        log.write(&lines).map_err(|source| WriteError::Write {
            path: path(),
            source,
        })?;
        drop(log);
        // Only launches that are in the log may be bases (after a failed write: none).
        if let Ok(mut b) = self.bases.lock() {
            *b = bases;
        }
        Ok(())
    }
}

/// Starts a launch written as a change of `base`: `{"id":ID,"base":BASE,"patch":` (what
/// `write!` wrote, without the formatting machinery: it ran at every launch's landing).
fn patch_head(lines: &mut Vec<u8>, id: u64, base: u64) {
    lines.extend_from_slice(b"{\"id\":");
    crate::fastpatch::push_u64(lines, id);
    lines.extend_from_slice(b",\"base\":");
    crate::fastpatch::push_u64(lines, base);
    lines.extend_from_slice(b",\"patch\":");
}

impl Drop for CaptureWriter {
    /// A writer that goes away moves its journal into the log and gives back the ids it did
    /// not use (see [`CaptureWriter::release_unused_ids`]); the shim's writer lives until exit
    /// and does both in its exit handler.
    fn drop(&mut self) {
        let _ = self.flush_journal(true);
        let _ = self.release_unused_ids();
    }
}

/// The most bytes a manifest the writer continues may have (its own are a few hundred).
const MANIFEST_MAX: u64 = 1 << 20;

/// The format version of the manifest `text` when this writer may append to its capture
/// (this format, a version it reads and writes or upgrades); else why not, in words.
/// Rewrites an older capture's manifest to [`crate::FORMAT_VERSION`]: for
/// [`CaptureWriter::create_with`] when it continues a capture, and for a compactor that
/// stores into a capture without continuing it (what it stores, raw chunks of version 6,
/// must not sit under a manifest whose version an older reader takes for one it reads
/// whole). Everything version 1 holds is valid version 2 (which adds chunked contents and
/// deltas), version 2 valid version 3 (the digest kind of `Content::Digest`), version 3
/// valid version 4 (packs of chunks), version 4 valid version 5 (the spool), version 5
/// valid version 6 (raw chunks), and version 6 valid version 7 (part records in the spool).
/// Refused: a manifest of another format, a newer version, or damage; no manifest at all
/// (a bare spool folder) is left as it is.
pub fn upgrade_manifest(dir: &Path, access: Access) -> Result<(), WriteError> {
    let path = dir.join("manifest.json");
    let io = |source| WriteError::Write {
        path: path.clone(),
        source,
    };
    let text = match writer_fs::read_regular(&path, MANIFEST_MAX) {
        Ok(t) => t,
        // No manifest, no version to keep true (a bare spool folder).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    let version = continuable_version(&text).map_err(|why| WriteError::Foreign {
        path: path.clone(),
        why,
    })?;
    if version < crate::FORMAT_VERSION {
        let mut old = serde_json::from_slice::<serde_json::Value>(&text)?;
        old["version"] = crate::FORMAT_VERSION.into();
        writer_fs::write_new(&path, &serde_json::to_vec_pretty(&old)?, access).map_err(io)?;
    }
    Ok(())
}

fn continuable_version(text: &[u8]) -> Result<u32, String> {
    let v: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("the manifest does not parse: {e}"))?;
    let format = v.get("format").and_then(|f| f.as_str());
    if format != Some(crate::FORMAT_NAME) {
        return Err(match format {
            Some(f) => format!("format {f:?}, not {:?}", crate::FORMAT_NAME),
            None => "the manifest names no format".into(),
        });
    }
    let version = v
        .get("version")
        .and_then(|v| v.as_u64())
        .ok_or("the manifest names no version")?;
    match u32::try_from(version) {
        Ok(n) if crate::READABLE_VERSIONS.contains(&n) && n <= crate::FORMAT_VERSION => Ok(n),
        _ => Err(format!(
            "format version {version}; this writer writes version {}",
            crate::FORMAT_VERSION
        )),
    }
}

/// The most bytes of a launch log the writer reads to continue it (for the largest id and a
/// partial last line); past it, numbering starts after the journals' ids and nothing is cut.
const LOG_READ_MAX: u64 = 1 << 34;

/// The id after the largest one in the log and its journals. Ids are taken at enqueue time,
/// so a log can have holes (launches still running when their process exited); counting
/// lines would reuse ids.
fn next_free_id(path: &Path) -> u64 {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: u64,
    }
    let mut bytes = writer_fs::read_regular(path, LOG_READ_MAX).unwrap_or_default();
    if let Some(dir) = path.parent() {
        bytes.extend(crate::journal::pending_records(dir).unwrap_or_default());
    }
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<IdOnly>(line).ok())
        .map(|r| r.id + 1)
        .max()
        .unwrap_or(0)
}

/// A writer killed mid-line leaves a partial last line; cut it off before appending so the
/// log stays one complete record per line.
fn drop_partial_last_line(path: &Path) -> std::io::Result<()> {
    let bytes = match writer_fs::read_regular(path, LOG_READ_MAX) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    writer_fs::open_regular(path, Open::ReadWrite, Access::PRIVATE)?.set_len(keep as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn manifest() -> Manifest {
        Manifest {
            format: crate::FORMAT_NAME.into(),
            version: crate::FORMAT_VERSION,
            writer: "test".into(),
            pid: 1,
            argv: vec![],
            started_unix: 0,
            buffer_mode: "full".into(),
        }
    }

    /// A store asked to keep the list names every file it wrote, once; one not asked names
    /// none.
    #[test]
    fn a_tracking_store_lists_the_files_it_wrote() {
        let t = tempfile::tempdir().unwrap();
        let quiet = BlobStore::new(t.path());
        quiet.put(b"not listed").unwrap();
        assert!(quiet.take_written().is_empty());
        let store = BlobStore::new(t.path());
        store.track_written();
        let small = store.put(b"a small blob").unwrap();
        let big: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        store.put_content(&digest(&big), &big).unwrap();
        let written = store.take_written();
        assert!(
            written.contains(&blob_path(t.path(), &small)),
            "{written:?}"
        );
        assert!(
            written.contains(&index_path(t.path(), &digest(&big))),
            "{written:?}"
        );
        assert!(
            written
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "pack")),
            "{written:?}"
        );
        assert!(written.iter().all(|p| p.is_file()), "{written:?}");
        assert!(store.take_written().is_empty(), "listed twice");
    }

    /// A content far larger than a group goes into several packs, each bounded by a group
    /// and a batch, and reads back whole: one pack per content held the whole content
    /// encoded in memory twice more.
    #[test]
    fn a_large_batched_content_is_stored_in_bounded_packs() {
        let t = tempfile::tempdir().unwrap();
        let w = CaptureWriter::create(t.path(), &manifest()).unwrap();
        let bytes = crate::chunks::tests::noise(3 * GROUP_RAW_MAX + 12345, 7);
        let hash = digest(&bytes);
        let cuts = crate::parallel::cut_and_hash(&bytes);
        let mut batch = PackBatch::default();
        w.blobs
            .put_content_batched(&mut batch, &hash, &bytes, &cuts)
            .unwrap();
        w.blobs.flush_batch(&mut batch).unwrap();
        let mut packs = Vec::new();
        for d in fs::read_dir(t.path().join("blobs")).unwrap().flatten() {
            for f in fs::read_dir(d.path()).unwrap().flatten() {
                if f.path().extension().is_some_and(|e| e == "pack") {
                    packs.push(f.metadata().unwrap().len() as usize);
                }
            }
        }
        assert!(packs.len() >= 3, "{packs:?}");
        let bound = GROUP_RAW_MAX + BATCH_MAX + crate::chunks::CHUNK_MAX + 4096;
        assert!(packs.iter().all(|&n| n <= bound), "{packs:?} over {bound}");
        drop(w);
        let c = crate::Capture::open(t.path()).unwrap();
        assert!(c.blob(&hash).unwrap() == bytes);
    }

    /// A content that repeats its chunks (a periodic signal) reads back whole, each distinct
    /// chunk decoded once; a damaged chunk it repeats is still found.
    #[test]
    fn a_content_repeating_its_chunks_reads_back_and_a_damaged_one_is_found() {
        let t = tempfile::tempdir().unwrap();
        let w = CaptureWriter::create(t.path(), &manifest()).unwrap();
        let period = crate::chunks::tests::noise(3 << 20, 11);
        let mut bytes = Vec::new();
        for _ in 0..4 {
            bytes.extend_from_slice(&period);
        }
        let hash = digest(&bytes);
        let cuts = crate::parallel::cut_and_hash(&bytes);
        let distinct: std::collections::HashSet<_> = cuts.iter().map(|c| c.hash.clone()).collect();
        assert!(
            distinct.len() * 2 < cuts.len(),
            "{} of {}",
            distinct.len(),
            cuts.len()
        );
        let mut batch = PackBatch::default();
        w.blobs
            .put_content_batched(&mut batch, &hash, &bytes, &cuts)
            .unwrap();
        w.blobs.flush_batch(&mut batch).unwrap();
        drop(w);
        let c = crate::Capture::open(t.path()).unwrap();
        assert!(c.blob(&hash).unwrap() == bytes);
        // One byte of every pack flipped in the middle: a chunk used four times is damaged.
        for d in fs::read_dir(t.path().join("blobs")).unwrap().flatten() {
            for f in fs::read_dir(d.path()).unwrap().flatten() {
                if f.path().extension().is_some_and(|e| e == "pack") {
                    let mut p = fs::read(f.path()).unwrap();
                    let mid = p.len() / 2;
                    p[mid] ^= 0x55;
                    fs::write(f.path(), p).unwrap();
                }
            }
        }
        let c = crate::Capture::open(t.path()).unwrap();
        let err = c.blob(&hash).err().expect("a damaged chunk is found");
        assert!(
            matches!(err, crate::reader::ReadError::DamagedBlob { .. }),
            "{err}"
        );
    }

    fn launch(program: &str) -> LaunchRecord {
        use crate::model::*;
        LaunchRecord {
            id: 0,
            seq: 0,
            kernel: "k".into(),
            program: program.into(),
            api: LaunchApi::NdRange,
            work_dim: 1,
            global_offset: None,
            global_size: vec![4],
            local_size: None,
            args: vec![],
            device: DeviceRecord::default(),
            queue_properties: 0,
            launch_site: None,
            thread: 0,
            status: 0,
            not_replayable: vec![],
        }
    }

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_capture_is_private_unless_shared() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cap");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        w.enable_journal().unwrap();
        let hash = w.blobs.put(b"the application's data").unwrap();
        w.blobs
            .put_content(&digest(&[7u8; 20000]), &[7u8; 20000])
            .unwrap();
        w.append(launch(&hash)).unwrap();
        for d in [
            dir.clone(),
            dir.join("blobs"),
            blob_path(&dir, &hash).parent().unwrap().to_path_buf(),
        ] {
            assert_eq!(mode(&d), 0o700, "{}", d.display());
        }
        let mut files = vec![
            dir.join("manifest.json"),
            dir.join(crate::LAUNCHES_FILE),
            blob_path(&dir, &hash),
        ];
        files.extend(crate::journal::journals(&dir));
        for f in &files {
            assert_eq!(mode(f), 0o600, "{}", f.display());
        }
        drop(w);
        let shared = t.path().join("shared");
        // SAFETY: umask only changes this process's creation mask; 022 is the usual one.
        let old = unsafe { libc::umask(0o022) };
        let w = CaptureWriter::create_with(&shared, &manifest(), Access::SHARED).unwrap();
        let hash = w.blobs.put(b"shared data").unwrap();
        unsafe { libc::umask(old) };
        assert_eq!(mode(&shared), 0o755);
        assert_eq!(mode(&blob_path(&shared, &hash)), 0o644);
    }

    #[test]
    fn a_newer_or_foreign_manifest_is_refused_and_left_alone() {
        let t = tempfile::tempdir().unwrap();
        for text in [
            r#"{"format":"cltrap-capture","version":8,"writer":"x","pid":1,"argv":[],"started_unix":0,"buffer_mode":"full"}"#,
            r#"{"format":"something-else","version":1}"#,
            "not json",
        ] {
            let dir = t.path().join(format!("cap{}", text.len()));
            fs::create_dir(&dir).unwrap();
            fs::write(dir.join("manifest.json"), text).unwrap();
            let e = CaptureWriter::create(&dir, &manifest())
                .err()
                .expect("refused");
            assert!(matches!(e, WriteError::Foreign { .. }), "{e}");
            assert!(e.to_string().contains("manifest.json"), "{e}");
            assert_eq!(fs::read_to_string(dir.join("manifest.json")).unwrap(), text);
            assert!(!dir.join(crate::LAUNCHES_FILE).exists());
            assert!(!dir.join("blobs").exists());
        }
    }

    #[test]
    fn links_and_fifos_in_the_capture_are_never_followed_or_waited_on() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        fs::write(&victim, b"precious\n").unwrap();
        for name in [
            crate::LAUNCHES_FILE,
            IDS_FILE,
            WRITERS_FILE,
            "manifest.json",
        ] {
            let dir = t.path().join(format!("link-{name}"));
            fs::create_dir(&dir).unwrap();
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
            let made = CaptureWriter::create(&dir, &manifest()).map(|w| {
                let h = w.blobs.put(b"x").unwrap();
                w.append(launch(&h)).map(|_| ())
            });
            // A manifest link is replaced by the writer's own manifest; other links refuse.
            if name != "manifest.json" {
                assert!(made.is_err(), "{name}: a link was accepted");
            }
            assert_eq!(fs::read(&victim).unwrap(), b"precious\n", "{name}");
        }
        // A FIFO as the log: refused at once (a blocking open would hang here for ever).
        let dir = t.path().join("fifo");
        fs::create_dir(&dir).unwrap();
        let c = std::ffi::CString::new(
            dir.join(crate::LAUNCHES_FILE)
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = CaptureWriter::create(&dir, &manifest())
            .err()
            .expect("refused");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // The blobs folder a link elsewhere: nothing lands there.
        let dir = t.path().join("blobs-link");
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("blobs")).unwrap();
        assert!(CaptureWriter::create(&dir, &manifest()).is_err());
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    }
}
