//! Writing a capture: content-addressed blobs plus an append-only launch log.
//!
//! Both types are `Sync`: the shim records launches from many application threads at once.

use crate::model::{Hash, LaunchRecord, Manifest};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
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

/// Content-addressed byte storage; each distinct content is written once per capture.
pub struct BlobStore {
    dir: PathBuf,
    known: Mutex<HashSet<Hash>>,
    /// Chunks this process stored, and where (see [`crate::chunks`]): a chunk of a later
    /// content names the same place instead of being stored again.
    known_chunks: Mutex<HashMap<Hash, crate::chunks::PackSlot>>,
    bytes_written: AtomicU64,
    tmp_counter: AtomicU64,
}

impl BlobStore {
    /// A store rooted at capture directory `dir` (blobs go to `dir/blobs`).
    pub fn new(dir: &Path) -> Self {
        BlobStore {
            dir: dir.to_path_buf(),
            known: Mutex::new(HashSet::new()),
            known_chunks: Mutex::new(HashMap::new()),
            bytes_written: AtomicU64::new(0),
            tmp_counter: AtomicU64::new(0),
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
        if !path.exists() {
            self.write_new(&path, bytes)?;
        }
        self.remember(hash);
        Ok(())
    }

    /// Stores buffer or image contents whose digest is `hash` in content-defined chunks,
    /// compressed (see [`crate::chunks`]), so a version that differs from an earlier one in a
    /// few places costs only the chunks that changed. Small contents are stored whole.
    /// Returns the bytes this call wrote to disk (0 when the content was stored already).
    pub fn put_content(&self, hash: &str, bytes: &[u8]) -> Result<u64, WriteError> {
        self.put_content_like(hash, bytes, None)
            .map(|(written, _)| written)
    }

    /// [`BlobStore::put_content`], given an earlier version of the same buffer (`like`: its
    /// chunks and the one region where the two differ, [`crate::parallel::changed_region`]):
    /// only that region is cut and hashed again ([`crate::parallel::cut_and_hash_like`]); the
    /// chunks are the same as without it. Returns the bytes written and the content's chunks
    /// when this call cut it (None: stored whole, or stored already), for the next version.
    pub fn put_content_like(
        &self,
        hash: &str,
        bytes: &[u8],
        like: Option<(&[crate::parallel::Cut], (usize, usize))>,
    ) -> Result<(u64, Option<Vec<crate::parallel::Cut>>), WriteError> {
        if bytes.len() < crate::chunks::MIN_CHUNKED {
            let before = self.bytes_written();
            self.put_with_hash(hash, bytes)?;
            return Ok((self.bytes_written() - before, None));
        }
        if self.is_known(hash) {
            return Ok((0, None));
        }
        let index = index_path(&self.dir, hash);
        if index.exists() || blob_path(&self.dir, hash).exists() {
            self.remember(hash);
            return Ok((0, None));
        }
        let cuts = like
            .and_then(|(old_cuts, region)| {
                crate::parallel::cut_and_hash_like(bytes, old_cuts, region)
            })
            .unwrap_or_else(|| crate::parallel::cut_and_hash(bytes));
        let (mut written, slots) = self.put_chunks(bytes, &cuts)?;
        let refs: Vec<_> = cuts
            .iter()
            .zip(&slots)
            .map(|(c, at)| (c.hash.as_str(), c.len, at))
            .collect();
        // The index last: a content whose index exists has every chunk.
        let text = crate::chunks::index_text(bytes.len() as u64, &refs);
        self.write_new(&index, text.as_bytes())?;
        written += text.len() as u64;
        self.remember(hash);
        Ok((written, Some(cuts)))
    }

    /// Stores the chunks of `bytes` (cut into `cuts`) that this process has not stored yet,
    /// each once, compressed by several threads for a large content and written into pack
    /// files of at most [`crate::chunks::PACK_RAW_MAX`] uncompressed bytes each. Returns the
    /// bytes written and where each chunk of `cuts` lies (new places join `known_chunks`).
    fn put_chunks(
        &self,
        bytes: &[u8],
        cuts: &[crate::parallel::Cut],
    ) -> Result<(u64, Vec<crate::chunks::PackSlot>), WriteError> {
        let lock = || self.known_chunks.lock().unwrap_or_else(|p| p.into_inner());
        let new: Vec<&crate::parallel::Cut> = {
            let known = lock();
            let mut seen = HashSet::new();
            cuts.iter()
                .filter(|c| !known.contains_key(&c.hash) && seen.insert(c.hash.as_str()))
                .collect()
        };
        let mut written = 0;
        let mut rest = &new[..];
        while !rest.is_empty() {
            let mut raw = 0;
            let take = rest
                .iter()
                .take_while(|c| {
                    raw += c.len;
                    raw <= crate::chunks::PACK_RAW_MAX
                })
                .count()
                .max(1);
            let (group, after) = rest.split_at(take);
            rest = after;
            let parallel =
                group.iter().map(|c| c.len).sum::<usize>() >= crate::parallel::PARALLEL_MIN;
            let encoded = crate::parallel::for_each(group.len(), parallel, |i| {
                let c = group[i];
                crate::chunks::encode(&bytes[c.offset..c.offset + c.len])
            })
            .map_err(|source| WriteError::Write {
                path: self.dir.join("blobs"),
                source,
            })?;
            let mut pack = Vec::with_capacity(encoded.iter().map(Vec::len).sum());
            let mut places = Vec::with_capacity(encoded.len());
            for e in &encoded {
                places.push((pack.len() as u64, e.len()));
                pack.extend_from_slice(e);
            }
            drop(encoded);
            let name: std::sync::Arc<str> = digest(&pack).into();
            let path = pack_path(&self.dir, &name);
            if !path.exists() {
                self.write_new(&path, &pack)?;
                written += pack.len() as u64;
            }
            let mut known = lock();
            for (c, (offset, stored)) in group.iter().zip(places) {
                let at = crate::chunks::PackSlot {
                    pack: std::sync::Arc::clone(&name),
                    offset,
                    stored,
                };
                known.insert(c.hash.clone(), at);
            }
        }
        // Every chunk was known or placed above (a place joins the table only once its pack
        // exists, and none leaves it; another thread's place for the same chunk is as good).
        let known = lock();
        let slots = cuts
            .iter()
            .map(|c| known.get(&c.hash).cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| WriteError::Write {
                path: self.dir.join("blobs"),
                source: std::io::Error::other("a chunk of the content has no place"),
            })?;
        Ok((written, slots))
    }

    /// Writes a file that does not exist yet under a temporary name and renames it into
    /// place, so a reader never sees half of it; counts its bytes.
    fn write_new(&self, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        fs::create_dir_all(&parent).map_err(|source| WriteError::CreateDir {
            path: parent.clone(),
            source,
        })?;
        let n = self.tmp_counter.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = parent.join(format!(".tmp-{}-{}-{}", std::process::id(), n, name));
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(bytes)?;
            fs::rename(&tmp, path)
        };
        if let Err(source) = write() {
            let _ = fs::remove_file(&tmp);
            return Err(WriteError::Write {
                path: path.to_path_buf(),
                source,
            });
        }
        self.bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
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
}

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
    /// Creates (or continues) a capture in `dir` and writes its manifest.
    ///
    /// An existing capture of the same format is appended to, with ids continuing after its
    /// last launch, so several processes of one run (e.g. a shell script) share one capture.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self, WriteError> {
        fs::create_dir_all(dir.join("blobs")).map_err(|source| WriteError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let manifest_path = dir.join("manifest.json");
        let write_manifest = |text: Vec<u8>| {
            let tmp = dir.join(format!(".manifest-{}.tmp", std::process::id()));
            fs::write(&tmp, text)
                .and_then(|_| fs::rename(&tmp, &manifest_path))
                .map_err(|source| WriteError::Write {
                    path: manifest_path.clone(),
                    source,
                })
        };
        match fs::read(&manifest_path) {
            Err(_) => write_manifest(serde_json::to_vec_pretty(manifest)?)?,
            Ok(text) => {
                // An older capture continued by this writer becomes the current version:
                // everything version 1 holds is valid version 2 (which adds chunked contents
                // and deltas), everything version 2 holds is valid version 3 (which adds the
                // digest kind of `Content::Digest`), and everything version 3 holds is valid
                // version 4 (which adds packs of chunks).
                if let Ok(mut old) = serde_json::from_slice::<serde_json::Value>(&text) {
                    if old.get("format").and_then(|f| f.as_str()) == Some(crate::FORMAT_NAME)
                        && old
                            .get("version")
                            .and_then(|v| v.as_u64())
                            .is_some_and(|v| v < u64::from(crate::FORMAT_VERSION))
                    {
                        old["version"] = crate::FORMAT_VERSION.into();
                        write_manifest(serde_json::to_vec_pretty(&old)?)?;
                    }
                }
            }
        }
        let log_path = dir.join(crate::LAUNCHES_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WriteError::Write { path, source }
        };
        let open_rw = |path: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
        };
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
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io(&log_path))?;
        let ids_path = dir.join(IDS_FILE);
        let id_file = open_rw(&ids_path).map_err(io(&ids_path))?;
        Ok(CaptureWriter {
            dir: dir.to_path_buf(),
            blobs: BlobStore::new(dir),
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
            crate::journal::Journal::create(&self.dir).map_err(|source| WriteError::Write {
                path: self.dir.join(crate::journal::JOURNAL_PREFIX),
                source,
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
        let path = self.dir.join(crate::LAUNCHES_FILE);
        // Taken out while in use: a concurrent call finds no bases and writes whole records.
        let mut bases = std::mem::take(&mut *match self.bases.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        });
        let mut lines = Vec::new();
        for record in records {
            // A storm's change (seq, scalars, contents) is written directly; anything else
            // as a JSON value (the same bytes: `crate::fastpatch`).
            if let Some(base) = bases.get(&record.kernel) {
                let start = lines.len();
                write!(
                    lines,
                    "{{\"id\":{},\"base\":{},\"patch\":",
                    record.id, base.id
                )
                .map_err(|source| WriteError::Write {
                    path: path.clone(),
                    source,
                })?;
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
                    write!(lines, "{{\"id\":{},\"base\":{base},\"patch\":", record.id).map_err(
                        |source| WriteError::Write {
                            path: path.clone(),
                            source,
                        },
                    )?;
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
        log.write(&lines)
            .map_err(|source| WriteError::Write { path, source })?;
        drop(log);
        // Only launches that are in the log may be bases (after a failed write: none).
        if let Ok(mut b) = self.bases.lock() {
            *b = bases;
        }
        Ok(())
    }
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

/// The id after the largest one in the log and its journals. Ids are taken at enqueue time,
/// so a log can have holes (launches still running when their process exited); counting
/// lines would reuse ids.
fn next_free_id(path: &Path) -> u64 {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: u64,
    }
    let mut bytes = fs::read(path).unwrap_or_default();
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
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(_) => return Ok(()),
    };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(keep as u64)
}
