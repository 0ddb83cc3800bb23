//! Writing a capture: content-addressed blobs plus an append-only launch log.
//!
//! Both types are `Sync`: the shim records launches from many application threads at once.

use crate::model::{Hash, LaunchRecord, Manifest};
use crate::writer_fs::{self, Access, Open};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
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

mod store;
pub use store::{BlobStore, Like, Put};
#[cfg(feature = "compact")]
pub use store::{PackBatch, BATCH_MAX, GROUP_RAW_MAX};

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
mod tests;
