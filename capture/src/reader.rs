//! Reading a capture back, with one clear error for each way it can be broken.

use crate::model::{Content, LaunchRecord, Manifest, ProgramRecord};
use crate::validate::{is_digest, MAX_OBJECT_BYTES};
use crate::writer::{blob_path, digest};
use crate::{FORMAT_NAME, FORMAT_VERSION, READABLE_VERSIONS};
use serde::Deserialize;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Largest `manifest.json` read.
const MAX_MANIFEST: u64 = 1 << 20;
/// Largest `launches.jsonl` read.
const MAX_LOG: u64 = 1 << 32;
/// Largest chunk index read.
const MAX_INDEX: u64 = 1 << 26;
/// Largest program record read.
const MAX_PROGRAM: u64 = 1 << 26;
/// Largest source, header, binary or other blob read without a size stated by a record.
const MAX_SOURCE: u64 = 1 << 28;
/// Most bytes the texts of one program may hold together ([`TextBudget`]).
pub const MAX_TEXTS: usize = MAX_SOURCE as usize;

/// Why a capture could not be read; each variant renders as one sentence for the CLI.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path} is not a cltrap capture: it has no manifest.json (capture with `cltrap run --out {path} -- APP`)")]
    NoManifest { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("{path} was written in capture format {found} {version}; this cltrap reads {FORMAT_NAME} 1 to {FORMAT_VERSION}")]
    Version {
        path: PathBuf,
        found: String,
        version: u32,
    },
    #[error("launch {id} is not in this capture (it holds {count} launch(es); `cltrap list` shows their ids)")]
    NoSuchLaunch { id: u64, count: usize },
    #[error("blob {hash} is missing from the capture (was it copied incompletely?)")]
    MissingBlob { hash: String },
    #[error("content {hash} is {bytes} bytes, more than this machine has memory available to read it into")]
    TooLarge { hash: String, bytes: u64 },
    #[error("the launch log {path} holds {lines} lines; reading them as launches would take about {need_mb} MB of memory, more than this machine has available")]
    LogTooLarge {
        path: PathBuf,
        lines: usize,
        need_mb: u64,
    },
    #[error("the first {count} texts of one program (its source strings and headers) already add up to more than {max_mib} MiB, more than any program cltrap builds")]
    TextsTooLarge { count: usize, max_mib: u64 },
    #[error("blob {hash} is damaged: its contents no longer match their digest")]
    DamagedBlob { hash: String },
    #[error("{what} was not recorded ({why})")]
    NotRecorded { what: String, why: String },
    #[error("{path} is refused: {why}")]
    Refused { path: PathBuf, why: String },
    #[error("{hash:?} is not a blob digest (64 lower-case hex digits)")]
    NotADigest { hash: String },
}

pub use crate::safe_open::{open_inside, read_inside, OpenError};

impl OpenError {
    /// As a [`ReadError`] about `path`; `missing` is what a file that is not there means.
    fn at(self, path: PathBuf, missing: impl FnOnce(PathBuf) -> ReadError) -> ReadError {
        match self {
            OpenError::NotFound => missing(path),
            OpenError::Refused(why) => ReadError::Refused { path, why },
            OpenError::Io(source) => ReadError::Io { path, source },
        }
    }
}

/// The path parts of the file of blob `name` (`blobs/ab/NAME`) plus `suffix`.
pub(crate) fn blob_parts(name: &str, suffix: &str) -> [String; 3] {
    [
        "blobs".into(),
        name.get(..2).unwrap_or("xx").into(),
        format!("{name}{suffix}"),
    ]
}

/// [`read_inside`] of a blob file (`suffix`: "" for a whole blob, `.chunks`, `.chunk`).
fn read_blob_file(dir: &Path, name: &str, suffix: &str, max: u64) -> Result<Vec<u8>, OpenError> {
    let parts = blob_parts(name, suffix);
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    read_inside(dir, &refs, max)
}

/// The path of a blob file, for messages.
fn blob_file_path(dir: &Path, name: &str, suffix: &str) -> PathBuf {
    let mut p = blob_path(dir, name).into_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// A line of the launch log that could not be taken as a launch: it does not parse, breaks a
/// limit, or is a change of a launch whose record is itself damaged. Why kept: one damaged
/// line must not hide the other launches of a capture; commands that read launches report
/// each of these and still work on the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedLaunch {
    /// 1-based line number in the log (journal lines follow the log's last line).
    pub line: usize,
    /// The launch id the line names, when it can still be read.
    pub id: Option<u64>,
    /// What is wrong, as one sentence part (no line number, no id).
    pub why: String,
}

impl std::fmt::Display for DamagedLaunch {
    /// `line N of launches.jsonl (launch ID) is damaged: WHY`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} of {}", self.line, crate::LAUNCHES_FILE)?;
        if let Some(id) = self.id {
            write!(f, " (launch {id})")?;
        }
        write!(f, " is damaged: {}", self.why)
    }
}

/// A capture opened for reading: manifest and all complete launch records.
#[derive(Debug)]
pub struct Capture {
    dir: PathBuf,
    pub manifest: Manifest,
    pub launches: Vec<LaunchRecord>,
    /// Lines of the log that are not usable launches, in line order (see [`DamagedLaunch`]);
    /// empty unless opened with [`Capture::open_keeping_damaged`].
    pub damaged: Vec<DamagedLaunch>,
    /// True when the last line of the log was cut off (the application died mid-write).
    pub truncated: bool,
    /// Its stored and spooled contents.
    contents: Contents,
}

/// Bytes of memory a record in a reader's spool index costs, about (its digest, its
/// segment's name, the record).
const SPOOL_RECORD_BYTES: u64 = 400;

/// Most spool records a reader keeps in its index ([`ReadError::Refused`] past it): those
/// of an eighth of the machine's memory (or of its cgroup's limit, where lower), at least
/// 2 097 152 (about 800 MB). Why a bound: a forged spool must not fill the memory. Why so
/// large: a writer's spool that was never compacted (a bare `LD_PRELOAD` capture) may hold a
/// patch record of a few hundred bytes per launch, and the compactor reads through this
/// index too; a spool past it is compacted a part at a time, its index shrinking as the
/// segments compacted go.
fn spool_records_max() -> usize {
    let least = 2usize << 20;
    let memory = crate::bulk::memory_total().unwrap_or(0);
    usize::try_from(memory / 8 / SPOOL_RECORD_BYTES)
        .unwrap_or(usize::MAX)
        .max(least)
}

/// The records of a capture's spool segments, by content digest.
#[derive(Debug, Default)]
struct SpoolIndex {
    /// Digest → (segment name, its record), of whole and patch records.
    places: HashMap<String, (String, crate::spool::Record)>,
    /// Digest → (segment name, record) of each part record of the content.
    parts: HashMap<String, Vec<(String, crate::spool::Record)>>,
    /// Digest → what is wrong with the record that claims it (a cut-off record).
    cut: HashMap<String, (String, String)>,
    /// Segments whose records end in something that is not a record: (segment, why).
    bad: Vec<(String, String)>,
    /// Segment → where the scan of its records ended: the next scan reads on from there.
    scanned: HashMap<String, u64>,
    /// Segments scanned once no writer held them: a writer appends only to a segment it
    /// holds locked, from before the segment appears until it seals it for good
    /// ([`crate::spool`]), so nothing can be appended to these any more and later scans do
    /// not open them again. Why: a content found nowhere scans the spool again, and a spool
    /// of thousands of segments (damaged or forged) was opened and read at every such
    /// content (4 000 segments and 400 launches: 63 s). Why the lock and not the pid in the
    /// name: a name can say any pid (pid 1 always runs), and a pid means nothing in another
    /// pid namespace.
    settled: std::collections::HashSet<String>,
    /// Segment files opened by scans (for the tests: settled segments are opened once).
    opened: u64,
    /// Segments known sealed for good although this process may hold them locked itself
    /// ([`Contents::settle`]): settled at their next scan.
    sealed: std::collections::HashSet<String>,
}

impl SpoolIndex {
    /// Forgets the records and verdicts of the segments `keep` says no to.
    fn keep_segments(&mut self, keep: impl Fn(&str) -> bool) {
        self.places.retain(|_, (n, _)| keep(n));
        self.parts.retain(|_, parts| {
            parts.retain(|(n, _)| keep(n));
            !parts.is_empty()
        });
        self.cut.retain(|_, (n, _)| keep(n));
        self.bad.retain(|(n, _)| keep(n));
    }

    /// The records it holds (what [`spool_records_max`] bounds).
    fn records(&self) -> usize {
        self.places.len() + self.parts.values().map(Vec::len).sum::<usize>()
    }
}

impl Capture {
    /// Opens the capture in `dir`, checking the format version and every launch line; a
    /// damaged launch line refuses the whole capture (for commands whose result would be
    /// wrong without every launch).
    pub fn open(dir: &Path) -> Result<Capture, ReadError> {
        let capture = Self::open_keeping_damaged(dir)?;
        if let Some(d) = capture.damaged.first() {
            return Err(ReadError::Corrupt {
                path: dir.join(crate::LAUNCHES_FILE),
                message: match d.id {
                    Some(id) => format!("line {} (launch {id}): {}", d.line, d.why),
                    None => format!("line {}: {}", d.line, d.why),
                },
            });
        }
        Ok(capture)
    }

    /// [`Capture::open`], but a launch line that is damaged is kept aside in
    /// [`Capture::damaged`] and the other launches are read: for commands (list, show,
    /// replay) that report the damage and still work on the rest. A broken manifest or a
    /// log that cannot be read still refuses the capture.
    pub fn open_keeping_damaged(dir: &Path) -> Result<Capture, ReadError> {
        let manifest_path = dir.join("manifest.json");
        let text = read_inside(dir, &["manifest.json"], MAX_MANIFEST).map_err(|e| {
            e.at(manifest_path.clone(), |_| ReadError::NoManifest {
                path: dir.to_path_buf(),
            })
        })?;
        let value: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| ReadError::Corrupt {
                path: manifest_path.clone(),
                message: e.to_string(),
            })?;
        let found = value
            .get("format")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        if found != FORMAT_NAME || !READABLE_VERSIONS.contains(&version) {
            return Err(ReadError::Version {
                path: manifest_path,
                found,
                version,
            });
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| e.to_string())
            .and_then(|m: Manifest| m.validate().map(|()| m))
            .map_err(|message| ReadError::Corrupt {
                path: manifest_path.clone(),
                message,
            })?;

        let log_path = dir.join(crate::LAUNCHES_FILE);
        // Journals first, then the log: a live writer that moves its journal into the log in
        // between leaves records in both (kept once), never in neither.
        let pending = crate::journal::pending_records(dir)
            .map_err(|(path, source)| ReadError::Io { path, source })?;
        // Every writer creates the log with the manifest: a capture without one lost it.
        let log = read_inside(dir, &[crate::LAUNCHES_FILE], MAX_LOG).map_err(|e| {
            e.at(log_path.clone(), |path| ReadError::Corrupt {
                path,
                message:
                    "the file is missing (every capture has one, empty when nothing was launched)"
                        .into(),
            })
        })?;
        let truncated = !log.is_empty() && !log.ends_with(b"\n");
        let mut lines: Vec<&[u8]> = log.split(|b| *b == b'\n').collect();
        // The piece after the last newline is empty, or a partial record of a writer that died.
        lines.pop();
        lines.extend(pending.split(|b| *b == b'\n').filter(|l| !l.is_empty()));
        let (mut launches, damaged) = parse_log(&lines).map_err(|need| ReadError::LogTooLarge {
            path: log_path.clone(),
            lines: lines.len(),
            need_mb: need >> 20,
        })?;
        // Writers that record launches as they complete write them out of id order; ids are
        // the order the application enqueued them.
        launches.sort_by_key(|l| l.id);
        Ok(Capture {
            dir: dir.to_path_buf(),
            manifest,
            launches,
            damaged,
            truncated,
            contents: Contents::new(dir),
        })
    }

    /// The capture directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The launch with this id.
    pub fn launch(&self, id: u64) -> Result<&LaunchRecord, ReadError> {
        // Sorted by id when opened: a binary search (a campaign of one unit per launch looked
        // each one up by walking the list, quadratic in the launches); the walk only for a
        // list changed since.
        let at = match self.launches.binary_search_by_key(&id, |l| l.id) {
            Ok(i) => self.launches.get(i),
            Err(_) => self.launches.iter().find(|l| l.id == id),
        };
        at.ok_or(ReadError::NoSuchLaunch {
            id,
            count: self.launches.len(),
        })
    }

    /// Reads a blob and checks it against its digest: a whole blob, or a content stored in
    /// compressed chunks (each chunk checked too; see [`crate::chunks`]). For blobs whose size
    /// no record states (sources, headers, binaries): at most 256 MiB; a buffer's contents
    /// are read by [`Capture::content`], at the size their record states.
    pub fn blob(&self, hash: &str) -> Result<Vec<u8>, ReadError> {
        self.read_blob(hash, None, MAX_SOURCE)
    }

    /// [`Capture::blob`] of a blob that must hold `size` bytes (checked before reading).
    pub fn blob_of_size(&self, hash: &str, size: u64) -> Result<Vec<u8>, ReadError> {
        self.read_blob(hash, Some(size), MAX_OBJECT_BYTES)
    }

    /// A blob of `size` bytes when given, else of at most `max`; checked against its digest.
    fn read_blob(&self, hash: &str, size: Option<u64>, max: u64) -> Result<Vec<u8>, ReadError> {
        self.contents.read_blob(hash, size, max)
    }

    /// The bytes behind a [`Content`], or why they are not available.
    pub fn content(&self, content: &Content, what: &str) -> Result<Vec<u8>, ReadError> {
        match content {
            Content::Blob { hash, size } => self.blob_of_size(hash, *size),
            Content::Digest { .. } => Err(ReadError::NotRecorded {
                what: what.to_string(),
                why: "only its digest was captured (buffer mode `hash`, or past the disk budget, where `cltrap replay` re-creates it by re-executing the launch that left it; this command does not)"
                    .into(),
            }),
            Content::Missing { note } => Err(ReadError::NotRecorded {
                what: what.to_string(),
                why: if note.is_empty() {
                    "buffer mode `none`".into()
                } else {
                    note.clone()
                },
            }),
        }
    }

    /// The program record a launch refers to.
    /// Checked as every record is ([`ProgramRecord::validate`]): its blobs are digests, its
    /// build options pass the allow-list, its include paths stay inside any mirror.
    pub fn program(&self, hash: &str) -> Result<ProgramRecord, ReadError> {
        let bytes = self.read_blob(hash, None, MAX_PROGRAM)?;
        serde_json::from_slice::<ProgramRecord>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|p| p.validate().map(|()| p))
            .map_err(|message| ReadError::Corrupt {
                path: blob_path(&self.dir, hash),
                message: format!("this program record is damaged or hostile: {message}"),
            })
    }

    /// A source blob as text (OpenCL C sources are bytes; invalid UTF-8 is replaced).
    pub fn source_text(&self, hash: &str) -> Result<String, ReadError> {
        Ok(String::from_utf8_lossy(&self.read_blob(hash, None, MAX_SOURCE)?).into_owned())
    }

    /// The texts of blobs `hashes` in their order ([`Capture::source_text`] each): a
    /// program's source strings, or its headers, within a [`TextBudget`] of their own.
    pub fn source_texts<'h>(
        &self,
        hashes: impl IntoIterator<Item = &'h str>,
    ) -> Result<Vec<String>, ReadError> {
        self.source_texts_in(hashes, &mut TextBudget::default())
    }

    /// [`Capture::source_texts`] within `budget`, which the other texts of the same program
    /// (the inputs of a linked program, their headers) share. Each distinct blob of the list
    /// is read once; every text returned counts, copies included.
    pub fn source_texts_in<'h>(
        &self,
        hashes: impl IntoIterator<Item = &'h str>,
        budget: &mut TextBudget,
    ) -> Result<Vec<String>, ReadError> {
        let mut read: HashMap<&str, usize> = HashMap::new();
        let mut texts: Vec<String> = Vec::new();
        for h in hashes {
            let text = match read.get(h) {
                Some(&i) => {
                    // Counted before it is copied.
                    budget.charge(texts[i].len())?;
                    texts[i].clone()
                }
                None => {
                    read.insert(h, texts.len());
                    let t = self.source_text(h)?;
                    budget.charge(t.len())?;
                    t
                }
            };
            texts.push(text);
        }
        Ok(texts)
    }
}

/// What the texts of one program (its source strings, its headers, those of every input of a
/// linked program) may hold together: [`MAX_TEXTS`] bytes. Why: a program record may name one
/// blob any number of times, and each name becomes a copy handed to a compiler (twenty names
/// of a 256 MiB source took gigabytes for a record of a few kilobytes).
#[derive(Debug, Clone)]
pub struct TextBudget {
    texts: usize,
    bytes: u64,
    max: u64,
}

impl Default for TextBudget {
    fn default() -> TextBudget {
        TextBudget::within(MAX_TEXTS as u64)
    }
}

impl TextBudget {
    /// A budget of `max` bytes.
    pub fn within(max: u64) -> TextBudget {
        TextBudget {
            texts: 0,
            bytes: 0,
            max,
        }
    }

    /// Counts one more text of `bytes` bytes; Err once the texts counted pass the budget.
    pub fn charge(&mut self, bytes: usize) -> Result<(), ReadError> {
        self.texts += 1;
        self.bytes = self.bytes.saturating_add(bytes as u64);
        if self.bytes > self.max {
            return Err(ReadError::TextsTooLarge {
                count: self.texts,
                max_mib: self.max >> 20,
            });
        }
        Ok(())
    }
}

/// A capture folder's contents by digest, whole, in chunks or in the spool: what
/// [`Capture`] reads its blobs with, and what a compactor rebuilds spooled patch records
/// with (without reading the launch log).
#[derive(Debug)]
pub struct Contents {
    dir: PathBuf,
    /// Where spooled contents lie ([`crate::spool`]): scanned at the first content not
    /// found in the store, again when one is not found in it (a writer may have appended).
    spool: std::sync::Mutex<Option<SpoolIndex>>,
    /// Spool records its index may hold ([`spool_records_max`]; fewer in tests).
    records_max: usize,
    /// Records a scan reads of one segment ([`crate::spool::RECORDS_MAX`]; fewer in tests).
    segment_records_max: usize,
}

impl Contents {
    /// The contents of capture folder `dir` (nothing is read yet).
    pub fn new(dir: &Path) -> Contents {
        Contents {
            dir: dir.to_path_buf(),
            spool: std::sync::Mutex::new(None),
            records_max: spool_records_max(),
            segment_records_max: crate::spool::RECORDS_MAX,
        }
    }

    /// A buffer's content of `size` bytes, checked against its digest.
    pub fn blob_of_size(&self, hash: &str, size: u64) -> Result<Vec<u8>, ReadError> {
        self.read_blob(hash, Some(size), MAX_OBJECT_BYTES)
    }

    /// A blob of `size` bytes when given, else of at most `max`; checked against its digest.
    fn read_blob(&self, hash: &str, size: Option<u64>, max: u64) -> Result<Vec<u8>, ReadError> {
        if !is_digest(hash) {
            return Err(ReadError::NotADigest {
                hash: hash.chars().take(80).collect(),
            });
        }
        let bytes = match read_blob_file(&self.dir, hash, "", size.unwrap_or(max)) {
            Ok(b) => b,
            Err(OpenError::NotFound) => self.chunked(hash, size, max)?,
            Err(e) => return Err(e.at(blob_path(&self.dir, hash), |_| unreachable_missing())),
        };
        if size.is_some_and(|s| s != bytes.len() as u64) || digest(&bytes) != hash {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        Ok(bytes)
    }

    /// A content stored in chunks, reassembled (not yet checked as a whole).
    fn chunked(&self, hash: &str, want: Option<u64>, max: u64) -> Result<Vec<u8>, ReadError> {
        let missing = |hash: &str| ReadError::MissingBlob {
            hash: hash.to_string(),
        };
        let path = blob_file_path(&self.dir, hash, ".chunks");
        let text = match read_blob_file(&self.dir, hash, ".chunks", MAX_INDEX) {
            Ok(t) => String::from_utf8(t).map_err(|_| ReadError::Corrupt {
                path: path.clone(),
                message: "it is not text".into(),
            })?,
            Err(OpenError::NotFound) => {
                // Not compacted yet: in the spool. Not there either: compacted meanwhile
                // (a compactor writes the index before it drops the segment), or missing.
                if let Some(bytes) = self.spooled(hash, want, max)? {
                    return Ok(bytes);
                }
                match read_blob_file(&self.dir, hash, ".chunks", MAX_INDEX) {
                    Ok(t) => String::from_utf8(t).map_err(|_| ReadError::Corrupt {
                        path: path.clone(),
                        message: "it is not text".into(),
                    })?,
                    Err(OpenError::NotFound) => return Err(self.not_spooled(hash)),
                    Err(e) => return Err(e.at(path, |_| unreachable_missing())),
                }
            }
            Err(e) => return Err(e.at(path, |_| unreachable_missing())),
        };
        let (size, chunks) =
            crate::chunks::parse_index(&text).map_err(|message| ReadError::Corrupt {
                path: path.clone(),
                message,
            })?;
        if want.is_some_and(|w| w != size) || size > want.unwrap_or(max) {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        // Each distinct chunk is read once (a content often repeats a chunk: a periodic
        // signal, zeroed rows), then decoded and checked, on several threads for a large
        // content: an in-order replay of a stencil restored 8 MB checkpoints from 43 MB of
        // chunks, one zstd frame and one blake3 after another.
        let mut first: HashMap<(&str, usize), usize> = HashMap::new();
        let mut unique: Vec<&crate::chunks::ChunkRef> = Vec::new();
        for c in &chunks {
            first.entry((c.hash.as_str(), c.len)).or_insert_with(|| {
                unique.push(c);
                unique.len() - 1
            });
        }
        // They are held encoded, then decoded, then copied into the content: all of it must
        // fit in the memory available before any chunk is read.
        let held: u64 = (unique.iter())
            .map(|c| {
                c.at.as_ref()
                    .map_or(crate::chunks::stored_bound(c.len), |a| a.stored) as u64
            })
            .fold(size.saturating_mul(2), u64::saturating_add);
        if !crate::bulk::fits_in_memory(usize::try_from(held).unwrap_or(usize::MAX)) {
            return Err(ReadError::TooLarge {
                hash: hash.to_string(),
                bytes: held,
            });
        }
        let mut encoded: Vec<(&crate::chunks::ChunkRef, Vec<u8>)> =
            Vec::with_capacity(unique.len());
        let mut packs: HashMap<&str, fs::File> = HashMap::new();
        for c in unique {
            let damaged = || ReadError::DamagedBlob {
                hash: c.hash.clone(),
            };
            let file = match &c.at {
                Some(at) => self.packed(&mut packs, at)?,
                None => {
                    // No more than the memory check above counted for it.
                    let stored = crate::chunks::stored_bound(c.len) as u64;
                    match read_blob_file(&self.dir, &c.hash, ".chunk", stored) {
                        Ok(f) => f,
                        Err(OpenError::NotFound) => return Err(missing(&c.hash)),
                        Err(OpenError::Refused(_)) => return Err(damaged()),
                        Err(OpenError::Io(source)) => {
                            return Err(ReadError::Io {
                                path: blob_file_path(&self.dir, &c.hash, ".chunk"),
                                source,
                            })
                        }
                    }
                }
            };
            encoded.push((c, file));
        }
        let distinct: usize = encoded.iter().map(|(c, _)| c.len).sum();
        let decoded = crate::parallel::for_each(
            encoded.len(),
            distinct >= crate::parallel::PARALLEL_MIN,
            |i| {
                let (c, file) = &encoded[i];
                let damaged = || ReadError::DamagedBlob {
                    hash: c.hash.clone(),
                };
                let chunk = crate::chunks::decode(file, c.len).map_err(|_| damaged())?;
                if digest(&chunk) != c.hash {
                    return Err(damaged());
                }
                Ok(chunk)
            },
        )?;
        // In order, each chunk at its place; allocated once the chunks were checked and their
        // lengths add up to the size (the index's word until then).
        let parts: Vec<&[u8]> = chunks
            .iter()
            .filter_map(|c| first.get(&(c.hash.as_str(), c.len)))
            .map(|&i| decoded[i].as_slice())
            .collect();
        let damaged = || ReadError::DamagedBlob {
            hash: hash.to_string(),
        };
        let total = parts.iter().map(|p| p.len() as u64).sum::<u64>();
        if total != size {
            return Err(damaged());
        }
        let mut bytes = room_for(hash, size)?;
        if !crate::bulk::concat_into(&mut bytes, &parts) {
            return Err(damaged());
        }
        Ok(bytes)
    }

    /// Scans the spool's segments ([`crate::spool::scan`]) into the index in `slot` (made when
    /// there is none), reading on from where it ended in each segment it knows. Records of
    /// segments gone since stay in it: reading one finds its segment gone, and the caller
    /// scans again from nothing. On an error the index keeps what it had and the segments
    /// scanned before it (so the next scan reads on, not from nothing).
    fn scan_spool(&self, slot: &mut Option<SpoolIndex>) -> Result<(), ReadError> {
        let index = slot.get_or_insert_with(SpoolIndex::default);
        let spool_path = self.dir.join(crate::spool::SPOOL_DIR);
        let names = crate::spool::segments(&self.dir).map_err(|e| ReadError::Refused {
            path: spool_path.clone(),
            why: e.to_string(),
        })?;
        // What segments gone since held is forgotten (read, it would only say they are gone).
        let listed: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        index.scanned.retain(|n, _| listed.contains(n.as_str()));
        index.settled.retain(|n| listed.contains(n.as_str()));
        index.sealed.retain(|n| listed.contains(n.as_str()));
        index.keep_segments(|n| listed.contains(n));
        let mut held = index.records();
        for name in &names {
            if index.settled.contains(name) {
                continue;
            }
            let name = name.clone();
            let path = spool_path.join(&name);
            index.opened += 1;
            let file = match open_inside(&self.dir, &[crate::spool::SPOOL_DIR, &name], u64::MAX) {
                Ok(f) => f,
                // Compacted and dropped since it was listed.
                Err(OpenError::NotFound) => continue,
                Err(e) => return Err(e.at(path, |_| unreachable_missing())),
            };
            // Asked before the scan: a segment no writer holds then has all it will ever
            // have. The lock is let go at once (a compactor takes a segment only when it can
            // lock it alone).
            let settled = index.sealed.contains(&name) || file.try_lock_shared().is_ok();
            if settled && !index.sealed.contains(&name) {
                let _ = file.unlock();
            }
            let from = index.scanned.get(&name).copied().unwrap_or(0);
            let scan = crate::spool::scan_at_most(&file, from, self.segment_records_max).map_err(
                |source| ReadError::Io {
                    path: path.clone(),
                    source,
                },
            )?;
            if let crate::spool::Tail::Crowded { .. } = scan.tail {
                // Forged: none of its records is taken (nothing a writer made is in it), and it
                // is not opened again.
                index.keep_segments(|n| n != name);
                index
                    .bad
                    .push((name.clone(), scan.tail.problem().unwrap_or_default()));
                index.settled.insert(name);
                held = index.records();
                continue;
            }
            // Refused before any of this segment's records is taken, so that a scan once
            // compaction made room reads them from where this one stopped.
            let adding = scan
                .records
                .iter()
                .filter(|r| r.part.is_some() || !index.places.contains_key(&r.hash))
                .count();
            if held + adding > self.records_max {
                return Err(ReadError::Refused {
                    path: spool_path,
                    why: format!(
                        "it holds more than {} records not compacted yet, more than a reader keeps in memory here (compact the capture first: cltrap compact DIR)",
                        self.records_max
                    ),
                });
            }
            index.scanned.insert(name.clone(), scan.end);
            if settled {
                index.settled.insert(name.clone());
            }
            // What this segment's end said before is said again below, if still true.
            index.cut.retain(|_, (n, _)| *n != name);
            index.bad.retain(|(n, _)| *n != name);
            for r in scan.records {
                if r.part.is_some() {
                    let parts = index.parts.entry(r.hash.clone()).or_default();
                    parts.push((name.clone(), r));
                    held += 1;
                    continue;
                }
                if let std::collections::hash_map::Entry::Vacant(e) =
                    index.places.entry(r.hash.clone())
                {
                    e.insert((name.clone(), r));
                    held += 1;
                }
            }
            match &scan.tail {
                crate::spool::Tail::Clean => {}
                crate::spool::Tail::Cut { hash, .. } => {
                    let why = scan.tail.problem().unwrap_or_default();
                    index.cut.insert(hash.clone(), (name.clone(), why));
                }
                crate::spool::Tail::Bad { .. } | crate::spool::Tail::Crowded { .. } => {
                    index
                        .bad
                        .push((name.clone(), scan.tail.problem().unwrap_or_default()));
                }
            }
        }
        Ok(())
    }

    /// A content from the spool (not yet checked against its digest), None when no whole
    /// record holds it (the spool is scanned again once, for records appended since). A
    /// record longer than the content's stated size or than `max` is refused unread. A patch
    /// record is rebuilt from its chain ([`crate::spool`]): at most
    /// [`crate::spool::PATCH_CHAIN_MAX`] patch records down to a whole record or a stored
    /// content, every length checked; only the result is checked against its digest (by
    /// the caller), which a damaged link fails.
    fn spooled(
        &self,
        hash: &str,
        want: Option<u64>,
        max: u64,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        self.spooled_try(hash, want, max, true)
    }

    /// [`Contents::spooled`]; `retry`: a link of the chain whose segment was compacted since
    /// the spool was scanned makes it scan again, once.
    fn spooled_try(
        &self,
        hash: &str,
        want: Option<u64>,
        max: u64,
        retry: bool,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let Some((name, record)) = self.spool_place(hash)? else {
            return self.parted(hash, want, max, retry);
        };
        let path = self.dir.join(crate::spool::SPOOL_DIR).join(&name);
        let len = record.content_len();
        if want.is_some_and(|w| w != len) || len > want.unwrap_or(max) {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        let Some(patch) = record.patch.clone() else {
            return self.record_bytes(&name, &record);
        };
        let corrupt = |message: String| ReadError::Corrupt {
            path: path.clone(),
            message,
        };
        // The chain, newest first, down to the content the oldest patch is written over.
        let mut chain = vec![(name.clone(), record.clone())];
        let mut base = patch.base.clone();
        let mut bytes = loop {
            let (top_name, top) = chain
                .last()
                .map(|(n, r)| (n.clone(), r.clone()))
                .ok_or_else(|| corrupt("an empty chain".into()))?;
            let Some(p) = top.patch.as_ref() else {
                break None;
            };
            if let Some(why) = p.problem(&top.hash, top.len) {
                return Err(ReadError::Corrupt {
                    path: self.dir.join(crate::spool::SPOOL_DIR).join(&top_name),
                    message: why,
                });
            }
            if p.total != len {
                return Err(corrupt(format!(
                    "the patch records of content {hash} disagree about its length ({} and {len} bytes)",
                    p.total
                )));
            }
            if chain.iter().any(|(_, r)| r.hash == p.base) {
                return Err(corrupt(format!(
                    "content {hash} is rebuilt from patch records whose bases form a cycle (through content {})",
                    p.base
                )));
            }
            if chain.len() > crate::spool::PATCH_CHAIN_MAX {
                return Err(corrupt(format!(
                    "content {hash} is rebuilt from more than {} patch records",
                    crate::spool::PATCH_CHAIN_MAX
                )));
            }
            base = p.base.clone();
            // Stored already (compacted): read from the store, whatever the spool still says.
            let stored = |h: &str| {
                crate::writer_fs::is_regular(&crate::writer::index_path(&self.dir, h))
                    || crate::writer_fs::is_regular(&blob_path(&self.dir, h))
            };
            if stored(&base) {
                break None;
            }
            match self.spool_place(&base)? {
                Some(next) => chain.push(next),
                None => break None,
            }
            // A whole record ends the chain: its bytes are the base.
            if let Some((n, r)) = chain.last().filter(|(_, r)| r.patch.is_none()) {
                if r.len != len {
                    return Err(corrupt(format!(
                        "content {hash} is a patch of content {base} of {} bytes, not {len}",
                        r.len
                    )));
                }
                let (n, r) = (n.clone(), r.clone());
                chain.pop();
                break self.record_bytes(&n, &r)?;
            }
        };
        if bytes.is_none() {
            // Not spooled (or its segment compacted since): the store has it, checked.
            bytes = Some(match self.read_blob(&base, Some(len), max) {
                Err(ReadError::MissingBlob { .. }) => {
                    return Err(corrupt(format!(
                        "content {hash} is a patch of content {base}, which is neither spooled nor stored"
                    )))
                }
                other => other?,
            });
        }
        let Some(mut bytes) = bytes else {
            return Ok(None);
        };
        // Oldest patch first.
        for (n, r) in chain.iter().rev() {
            let Some(p) = r.patch.as_ref() else { continue };
            let Some(data) = self.record_bytes(n, r)? else {
                // Its segment was compacted since the spool was scanned: scanned again (the
                // content itself may be in the store now, which the caller looks at).
                if !retry {
                    return Ok(None);
                }
                *self.spool.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return self.spooled_try(hash, want, max, false);
            };
            p.apply(&mut bytes, &data)
                .map_err(|why| corrupt(format!("the patch record of content {}: {why}", r.hash)))?;
        }
        Ok(Some(bytes))
    }

    /// A content spooled as part records ([`crate::spool`]), put together (not yet checked
    /// against its digest); None when its parts do not cover it (a writer is writing them, or
    /// died while it did), or none is spooled. The parts are those of a cover ([`cover`]);
    /// the content's size, from the parts that all must say the same, is checked against
    /// `want` and `max` before anything is read.
    fn parted(
        &self,
        hash: &str,
        want: Option<u64>,
        max: u64,
        retry: bool,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let parts = {
            let guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
            guard.as_ref().and_then(|i| i.parts.get(hash).cloned())
        };
        let Some(mut parts) = parts.filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        let total = parts[0].1.content_len();
        if let Some((name, r)) = parts.iter().find(|(_, r)| r.content_len() != total) {
            return Err(ReadError::Corrupt {
                path: self.dir.join(crate::spool::SPOOL_DIR).join(name),
                message: format!(
                    "the part records of content {hash} disagree about its length ({} and {total} bytes)",
                    r.content_len()
                ),
            });
        }
        if want.is_some_and(|w| w != total) || total > want.unwrap_or(max) {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        let cover = cover(&mut parts, total);
        let Some(cover) = cover else {
            // Parts written since the scan (read on from where it ended), or not all there.
            if !retry {
                return Ok(None);
            }
            {
                let mut guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
                self.scan_spool(&mut guard)?;
            }
            return self.spooled_try(hash, want, max, false);
        };
        // Each part read straight into its place (a content of gigabytes is not copied twice).
        let mut bytes = room_for(hash, total)?;
        let mut at = 0usize;
        for (name, r) in cover {
            let end = at + r.len as usize;
            if !self.read_record_into(name, r, &mut bytes[at..end])? {
                // Its segment was compacted since the spool was scanned: scanned again (the
                // content itself may be in the store now, which the caller looks at).
                if !retry {
                    return Ok(None);
                }
                *self.spool.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return self.spooled_try(hash, want, max, false);
            }
            at = end;
        }
        Ok(Some(bytes))
    }

    /// Takes segments `names` as settled: sealed for good, each scanned once more at most.
    /// Why: a compactor holds the segments it compacts locked alone, so its own reader could
    /// not tell them sealed by their locks, and opened every one again at each content it
    /// looked for.
    pub fn settle<'n>(&self, names: impl IntoIterator<Item = &'n str>) {
        let mut guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
        let index = guard.get_or_insert_with(SpoolIndex::default);
        index.sealed.extend(names.into_iter().map(str::to_string));
    }

    /// Segment files the spool's scans opened so far (a measure of their cost, for tests).
    pub fn segments_opened(&self) -> u64 {
        let guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref().map_or(0, |i| i.opened)
    }

    /// Whether the spool holds part records of content `hash` that agree about its length and
    /// leave a gap (read on from the last scan first): their writer has not written them all
    /// yet, or died before it did. Parts that disagree about the length are no such thing
    /// but damage, which reading the content says. Why: a compactor tells a content still
    /// being written, or left by a writer that died, from a damaged one.
    pub fn parts_missing(&self, hash: &str) -> Result<bool, ReadError> {
        let missing = |index: &Option<SpoolIndex>| {
            let mut parts = index.as_ref()?.parts.get(hash)?.clone();
            let total = parts.first()?.1.content_len();
            if parts.iter().any(|(_, r)| r.content_len() != total) {
                return Some(false);
            }
            Some(cover(&mut parts, total).is_none())
        };
        let mut guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
        if missing(&guard) == Some(false) {
            return Ok(false);
        }
        self.scan_spool(&mut guard)?;
        Ok(missing(&guard).unwrap_or(false))
    }

    /// Where the spool holds content `hash` (scanned again once when it is not known).
    fn spool_place(&self, hash: &str) -> Result<Option<(String, crate::spool::Record)>, ReadError> {
        let mut guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
        let mut place = guard.as_ref().and_then(|i| i.places.get(hash).cloned());
        // Spooled in parts: no other record is looked for ([`Contents::parted`] scans again
        // when the parts it knows do not cover the content).
        let parted = guard.as_ref().is_some_and(|i| i.parts.contains_key(hash));
        if place.is_none() && !parted {
            self.scan_spool(&mut guard)?;
            place = guard.as_ref().and_then(|i| i.places.get(hash).cloned());
        }
        Ok(place)
    }

    /// The bytes a record of segment `name` holds; None when the segment is gone
    /// (compacted since it was scanned).
    fn record_bytes(
        &self,
        name: &str,
        record: &crate::spool::Record,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let (hash, len) = (&record.hash, record.len);
        let mut bytes = room_for(hash, len)?;
        Ok(self
            .read_record_into(name, record, &mut bytes)?
            .then_some(bytes))
    }

    /// Reads the bytes a record of segment `name` holds into `into` (of the record's length);
    /// false when the segment is gone (compacted since it was scanned).
    fn read_record_into(
        &self,
        name: &str,
        record: &crate::spool::Record,
        into: &mut [u8],
    ) -> Result<bool, ReadError> {
        let path = self.dir.join(crate::spool::SPOOL_DIR).join(name);
        let file = match open_inside(&self.dir, &[crate::spool::SPOOL_DIR, name], u64::MAX) {
            Ok(f) => f,
            Err(OpenError::NotFound) => return Ok(false),
            Err(e) => return Err(e.at(path, |_| unreachable_missing())),
        };
        match crate::bulk::read_exact_at(&file, into, record.offset) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(ReadError::Corrupt {
                path,
                message: format!("its record of content {} is cut off", record.hash),
            }),
            Err(source) => Err(ReadError::Io { path, source }),
        }
    }

    /// Why content `hash` is found neither in the store nor whole in the spool: a spool record
    /// that claims it is cut off, a segment that holds something else than records, or it is
    /// missing.
    fn not_spooled(&self, hash: &str) -> ReadError {
        let guard = self.spool.lock().unwrap_or_else(|p| p.into_inner());
        let spool = self.dir.join(crate::spool::SPOOL_DIR);
        if let Some(index) = guard.as_ref() {
            if let Some((name, why)) = index.cut.get(hash) {
                return ReadError::Corrupt {
                    path: spool.join(name),
                    message: why.clone(),
                };
            }
            if let Some((name, _)) = index.parts.get(hash).and_then(|p| p.first()) {
                return ReadError::Corrupt {
                    path: spool.join(name),
                    message: format!(
                        "content {hash} is spooled in parts that do not cover it (their writer died while it wrote them)"
                    ),
                };
            }
            if let Some((name, why)) = index.bad.first() {
                return ReadError::Corrupt {
                    path: spool.join(name),
                    message: format!("{why}, so content {hash} may be lost there"),
                };
            }
        }
        ReadError::MissingBlob {
            hash: hash.to_string(),
        }
    }

    /// The encoded chunk at `at`, read from its pack (opened once per content: `packs`). A
    /// pack shorter than the index says is damaged.
    fn packed<'a>(
        &self,
        packs: &mut HashMap<&'a str, fs::File>,
        at: &'a crate::chunks::PackSlot,
    ) -> Result<Vec<u8>, ReadError> {
        let path = blob_file_path(&self.dir, &at.pack, ".pack");
        let damaged = || ReadError::DamagedBlob {
            hash: at.pack.to_string(),
        };
        let file = match packs.entry(&at.pack) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let parts = blob_parts(&at.pack, ".pack");
                let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
                match open_inside(&self.dir, &refs, u64::MAX) {
                    Ok(f) => v.insert(f),
                    Err(OpenError::NotFound) => {
                        return Err(ReadError::MissingBlob {
                            hash: at.pack.to_string(),
                        })
                    }
                    Err(e) => return Err(e.at(path, |_| unreachable_missing())),
                }
            }
        };
        match crate::chunks::read_slot(file, at) {
            Ok(Some(encoded)) => Ok(encoded),
            Ok(None) => Err(damaged()),
            Err(source) => Err(ReadError::Io { path, source }),
        }
    }
}

/// The launch records of a log's whole lines, in file order: whole records as they are, delta
/// lines (`{"id", "base", "patch"}`, see [`crate::delta`]) applied to their base, which must
/// be an earlier line; every record checked ([`LaunchRecord::validate`]). Lines that are not
/// usable launches come back apart, with why: a delta whose base is damaged is damaged too.
/// Parts (sorted here by offset) that cover a content of `total` bytes from 0 to its end
/// without a gap or an overlap, in order; None when none do. Several copies of a content cut
/// at other places may be mixed: offsets reached from 0 are followed part by part (each
/// offset once), so a complete set is found wherever one exists.
fn cover(
    parts: &mut [(String, crate::spool::Record)],
    total: u64,
) -> Option<Vec<(&String, &crate::spool::Record)>> {
    let at = |r: &crate::spool::Record| r.part.map_or(0, |p| p.at);
    parts.sort_by_key(|(_, r)| at(r));
    // Offset reached → the part that reached it (None for 0).
    let mut reached: HashMap<u64, Option<usize>> = HashMap::from([(0, None)]);
    for (i, (_, r)) in parts.iter().enumerate() {
        let end = at(r).saturating_add(r.len);
        if reached.contains_key(&at(r)) && end <= total {
            reached.entry(end).or_insert(Some(i));
        }
    }
    let mut chain = Vec::new();
    let mut end = total;
    while end > 0 {
        let i = (*reached.get(&end)?)?;
        chain.push(i);
        end = at(&parts[i].1);
    }
    if total == 0 {
        return None;
    }
    chain.reverse();
    Some(
        chain
            .into_iter()
            .map(|i| (&parts[i].0, &parts[i].1))
            .collect(),
    )
}

/// Lines of the launch log parsed between two looks at this process's memory ([`parse_log`]).
const LOOK_EVERY: usize = 1 << 14;

/// The launches of the log's lines, and the lines that are damaged. Err: the bytes of memory
/// the whole log would take as launches, when they do not fit in what this machine has
/// available. Why: a launch takes far more memory than its line (a delta line of 40 bytes
/// becomes a whole record of about 3 KB: 300 000 such lines, a 15 MB log, took 1 GB), so a
/// small hostile log could otherwise run the machine out of memory. Every [`LOOK_EVERY`]
/// lines the growth of this process's resident memory so far is projected over the lines
/// left; the parse ends when two looks in a row project more than the memory available (and
/// at least [`crate::bulk::fits_in_memory`]'s threshold: smaller needs are never refused).
fn parse_log(lines: &[&[u8]]) -> Result<(Vec<LaunchRecord>, Vec<DamagedLaunch>), u64> {
    parse_log_within(lines, |rest| {
        crate::bulk::fits_in_memory(usize::try_from(rest).unwrap_or(usize::MAX))
    })
}

/// [`parse_log`] with `room(bytes)` saying whether that much more memory may be used.
fn parse_log_within(
    lines: &[&[u8]],
    room: impl Fn(u64) -> bool,
) -> Result<(Vec<LaunchRecord>, Vec<DamagedLaunch>), u64> {
    let mut log = Log::default();
    let mut damaged = Vec::new();
    let start = crate::bulk::resident_bytes();
    let mut short_before = false;
    for (n, line) in lines.iter().enumerate() {
        if n > 0 && n % LOOK_EVERY == 0 {
            if let (Some(start), Some(now)) = (start, crate::bulk::resident_bytes()) {
                let grown = now.saturating_sub(start);
                let rest = (grown / n as u64).saturating_mul((lines.len() - n) as u64);
                let short = !room(rest);
                if short && short_before {
                    return Err(grown.saturating_add(rest));
                }
                short_before = short;
            }
        }
        if line.is_empty() {
            continue;
        }
        if let Err((id, why)) = log.take(lines, n) {
            // Deltas naming this id as their base are damaged with it.
            if let Some(id) = id {
                log.damaged_ids.entry(id).or_insert(n + 1);
            }
            damaged.push(DamagedLaunch {
                line: n + 1,
                id,
                why,
            });
        }
    }
    Ok((log.launches, damaged))
}

/// The state of [`parse_log`] between lines.
#[derive(Default)]
struct Log {
    launches: Vec<LaunchRecord>,
    position: HashMap<u64, usize>,
    /// Per id, the line it was read from (a second, identical copy is dropped).
    line_of: HashMap<u64, usize>,
    /// Records made from deltas, as JSON, until a later delta uses them as its base (a
    /// writer's chain of one kernel's launches: only the newest of each chain is kept).
    resolved: HashMap<u64, serde_json::Value>,
    /// Ids of damaged lines, with the (1-based) line of the first.
    damaged_ids: HashMap<u64, usize>,
}

impl Log {
    /// Takes line `n` of `lines` into the log. Err: the launch id when readable, and why the
    /// line is damaged.
    fn take(&mut self, lines: &[&[u8]], n: usize) -> Result<(), (Option<u64>, String)> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Delta {
            id: u64,
            base: u64,
            patch: serde_json::Value,
        }
        let line = lines[n];
        // The launch a damaged line was, when its id can still be read.
        let which = || {
            serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("id")?.as_u64())
        };
        let record = match serde_json::from_slice::<LaunchRecord>(line) {
            Ok(r) => r,
            Err(whole) => {
                let d = match serde_json::from_slice::<Delta>(line) {
                    Ok(d) => d,
                    // A line with a patch is a delta line: its own error says what is wrong.
                    Err(e) if line.windows(9).any(|w| w == b"\"patch\":") => {
                        return Err((which(), e.to_string()))
                    }
                    Err(_) => return Err((which(), whole.to_string())),
                };
                let id = Some(d.id);
                if let Some(at) = self.damaged_ids.get(&d.base) {
                    return Err((
                        id,
                        format!(
                            "it is recorded as a change of launch {}, whose record (line {at}) is damaged",
                            d.base
                        ),
                    ));
                }
                let mut value = match self.resolved.remove(&d.base) {
                    Some(v) => v,
                    None => {
                        let Some(i) = self.position.get(&d.base) else {
                            return Err((id, format!(
                                "it is recorded as a change of launch {}, which is not on an earlier line",
                                d.base
                            )));
                        };
                        serde_json::to_value(&self.launches[*i]).map_err(|e| (id, e.to_string()))?
                    }
                };
                crate::delta::apply(&mut value, &d.patch).map_err(|e| (id, e.to_string()))?;
                // A change that is not an object replaced the whole record (damage): there is
                // no record to give the id to.
                let Some(fields) = value.as_object_mut() else {
                    return Err((
                        id,
                        "its change is not a set of fields (damaged)".to_string(),
                    ));
                };
                fields.insert("id".to_string(), d.id.into());
                let record = LaunchRecord::deserialize(&value).map_err(|e| (id, e.to_string()))?;
                self.resolved.insert(d.id, value);
                record
            }
        };
        // A record both in a journal and in the log (its writer died while moving one into
        // the other) is the same line twice: the first copy counts. Two different records
        // with one id are a broken capture.
        if let Some(&first) = self.line_of.get(&record.id) {
            if lines[first] == line {
                return Ok(());
            }
            return Err((
                Some(record.id),
                format!(
                    "launch id {} is also on line {}, with a different record",
                    record.id,
                    first + 1
                ),
            ));
        }
        if let Some(&at) = self.damaged_ids.get(&record.id) {
            return Err((
                Some(record.id),
                format!(
                    "launch id {} is also on line {at}, which is damaged",
                    record.id
                ),
            ));
        }
        record
            .validate()
            .map_err(|e| (Some(record.id), e.to_string()))?;
        self.line_of.insert(record.id, n);
        self.position.insert(record.id, self.launches.len());
        self.launches.push(record);
        Ok(())
    }
}

/// The error of a file [`open_inside`] found missing where the caller already handled that.
fn unreachable_missing() -> ReadError {
    ReadError::NotRecorded {
        what: "a blob".into(),
        why: "it is missing".into(),
    }
}

/// Zeroed memory for content `hash` of `bytes` bytes (filled by the caller), or why there is
/// none: more than this machine has available ([`crate::bulk::fits_in_memory`]) is a
/// [`ReadError::TooLarge`], never reported as damage of the capture.
fn room_for(hash: &str, bytes: u64) -> Result<Vec<u8>, ReadError> {
    usize::try_from(bytes)
        .ok()
        .and_then(crate::bulk::zeroed)
        .ok_or_else(|| ReadError::TooLarge {
            hash: hash.to_string(),
            bytes,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `n` launches: one whole record, then each launch a change of the one before.
    fn storm_log(n: u64) -> Vec<Vec<u8>> {
        let mut first = crate::tests::launch(&"0".repeat(64));
        first.id = 0;
        let mut lines = vec![serde_json::to_vec(&first).expect("serialises")];
        for k in 1..n {
            let base = k - 1;
            lines.push(format!(r#"{{"id":{k},"base":{base},"patch":{{"seq":{k}}}}}"#).into_bytes());
        }
        lines
    }

    /// A whole spool record of `bytes` (see the spool module's layout).
    fn whole_record(bytes: &[u8]) -> (String, Vec<u8>) {
        let hash = crate::writer::digest(bytes);
        let mut r = crate::spool::MAGIC.to_vec();
        r.extend_from_slice(hash.as_bytes());
        r.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        r.extend_from_slice(bytes);
        (hash, r)
    }

    #[test]
    fn the_texts_of_one_program_are_bounded_in_total_however_often_it_names_one() {
        let t = tempfile::tempdir().unwrap();
        let w = crate::CaptureWriter::create(t.path(), &crate::tests::manifest()).unwrap();
        let big = w.blobs.put(&vec![b'x'; 3 << 20]).unwrap();
        let small = w.blobs.put(b"kernel void k() {}").unwrap();
        w.append(crate::tests::launch(&small)).unwrap();
        let c = Capture::open(t.path()).unwrap();
        let names = [small.as_str(), big.as_str(), small.as_str(), big.as_str()];
        let texts = c
            .source_texts_in(names, &mut TextBudget::within(8 << 20))
            .unwrap();
        assert_eq!(texts.len(), 4);
        assert_eq!(
            (texts[0].as_str(), texts[3].len()),
            ("kernel void k() {}", 3 << 20)
        );
        // Three names of the 3 MiB source pass 8 MiB: refused, in one sentence.
        let e = c
            .source_texts_in([big.as_str(); 20], &mut TextBudget::within(8 << 20))
            .unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::TextsTooLarge {
                    count: 3,
                    max_mib: 8
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("add up to more than 8 MiB"), "{e}");
        // One budget shared by several lists (the inputs of a linked program): each list
        // alone fits, together they do not.
        let mut shared = TextBudget::within(8 << 20);
        for _ in 0..2 {
            c.source_texts_in([big.as_str()], &mut shared).unwrap();
        }
        let e = c.source_texts_in([big.as_str()], &mut shared).unwrap_err();
        assert!(
            matches!(e, ReadError::TextsTooLarge { count: 3, .. }),
            "{e}"
        );
        // A missing blob is its own error, not the bound's.
        let missing = crate::writer::digest(b"nowhere");
        assert!(matches!(
            c.source_texts([missing.as_str()]),
            Err(ReadError::MissingBlob { .. })
        ));
    }

    /// A capture folder whose spool holds one segment (`1-1-0.spool`) of `n` whole records,
    /// the 4 bytes of 0, 1, ...; with the spool's path and the records' digests.
    fn spool_of_one_segment(n: u32) -> (tempfile::TempDir, PathBuf, Vec<String>) {
        let t = tempfile::tempdir().unwrap();
        let spool = t.path().join(crate::spool::SPOOL_DIR);
        std::fs::create_dir(&spool).unwrap();
        let (segment, names) = segment_of(0..n);
        std::fs::write(spool.join("1-1-0.spool"), &segment).unwrap();
        (t, spool, names)
    }

    /// A segment of whole records of the 4 bytes of each number in `numbers`, and their
    /// digests.
    fn segment_of(numbers: std::ops::Range<u32>) -> (Vec<u8>, Vec<String>) {
        let mut segment = Vec::new();
        let mut names = Vec::new();
        for i in numbers {
            let (hash, record) = whole_record(&i.to_le_bytes());
            segment.extend_from_slice(&record);
            names.push(hash);
        }
        (segment, names)
    }

    /// A spool of more records than a reader keeps is refused with a sentence that says so,
    /// not read into memory; one within the bound is read.
    #[test]
    fn a_spool_of_more_records_than_a_reader_keeps_is_refused() {
        let (t, spool, names) = spool_of_one_segment(30);
        let within = Contents {
            records_max: 30,
            ..Contents::new(t.path())
        };
        assert_eq!(
            within.blob_of_size(&names[29], 4).unwrap(),
            29u32.to_le_bytes()
        );
        let past = Contents {
            records_max: 29,
            ..Contents::new(t.path())
        };
        for _ in 0..2 {
            let err = past.blob_of_size(&names[0], 4).unwrap_err().to_string();
            assert!(
                err.contains("more than 29 records not compacted yet")
                    && err.contains("cltrap compact"),
                "{err}"
            );
        }
        // Once compaction made room (here: the segment went, another came), the same reader
        // reads on.
        std::fs::remove_file(spool.join("1-1-0.spool")).unwrap();
        let (late, record) = whole_record(b"late");
        std::fs::write(spool.join("1-2-0.spool"), &record).unwrap();
        assert_eq!(past.blob_of_size(&late, 4).unwrap(), b"late");
    }

    /// The segments a scan took before it was refused stay in the index: their contents are
    /// read, the refused segment's are not.
    #[test]
    fn a_refused_scan_keeps_the_segments_it_took() {
        let (t, spool, first) = spool_of_one_segment(20);
        let (second, names) = segment_of(100..120);
        std::fs::write(spool.join("1-2-0.spool"), &second).unwrap();
        let contents = Contents {
            records_max: 30,
            ..Contents::new(t.path())
        };
        assert!(contents.blob_of_size(&names[0], 4).is_err());
        assert_eq!(
            contents.blob_of_size(&first[19], 4).unwrap(),
            19u32.to_le_bytes()
        );
    }

    /// A segment of more records than a scan reads is crowded: none of its records is
    /// taken, it is said among the spool's problems, and it is not opened again.
    #[test]
    fn a_crowded_segment_is_taken_for_forged_and_not_read_again() {
        let (t, spool, names) = spool_of_one_segment(10);
        let (good, record) = whole_record(b"good");
        std::fs::write(spool.join("1-2-0.spool"), &record).unwrap();
        let contents = Contents {
            segment_records_max: 5,
            ..Contents::new(t.path())
        };
        assert_eq!(contents.blob_of_size(&good, 4).unwrap(), b"good");
        for h in [&names[0], &names[9]] {
            assert!(
                contents.blob_of_size(h, 4).is_err(),
                "a crowded segment's record was read"
            );
        }
        let g = contents.spool.lock().unwrap();
        let index = g.as_ref().unwrap();
        assert!(
            index
                .bad
                .iter()
                .any(|(n, why)| n == "1-1-0.spool" && why.contains("more than 1048576 records")),
            "{:?}",
            index.bad
        );
        // Each opened once: the scans for the two missing contents open neither again.
        assert_eq!(index.opened, 2);
    }

    #[test]
    fn segments_no_writer_holds_are_scanned_once_and_a_held_one_again() {
        let t = tempfile::tempdir().unwrap();
        let spool = t.path().join(crate::spool::SPOOL_DIR);
        std::fs::create_dir(&spool).unwrap();
        // 40 damaged segments and one good one that no writer holds, named after pid 1 (which
        // always runs: a name proves nothing), and one a writer holds locked (this test).
        for i in 0..40 {
            std::fs::write(spool.join(format!("1-{i}-0.spool")), b"not a record at all").unwrap();
        }
        let want = b"a content spooled by a writer that sealed its segment";
        let (kept, record) = whole_record(want);
        std::fs::write(spool.join("1-99-0.spool"), &record).unwrap();
        let own = spool.join("2-1-0.spool");
        let held = std::fs::File::create(&own).unwrap();
        held.lock().unwrap();
        let contents = Contents::new(t.path());
        let missing: Vec<String> = (0..50u32)
            .map(|i| crate::writer::digest(&i.to_le_bytes()))
            .collect();
        for h in &missing {
            assert!(
                contents.blob_of_size(h, 4).is_err(),
                "content {h} is nowhere"
            );
        }
        let opened = |c: &Contents| {
            let g = c.spool.lock().unwrap();
            g.as_ref().map_or(0, |i| i.opened)
        };
        // Each sealed segment once; the held one at each of the 50 scans.
        assert_eq!(opened(&contents), 41 + 50);
        assert_eq!(
            contents.blob_of_size(&kept, want.len() as u64).unwrap(),
            want
        );
        // A record its writer appends after the scans is found.
        let late_bytes = b"appended after fifty scans";
        let (late, record) = whole_record(late_bytes);
        std::io::Write::write_all(&mut &held, &record).unwrap();
        assert_eq!(
            contents
                .blob_of_size(&late, late_bytes.len() as u64)
                .unwrap(),
            late_bytes
        );
        assert_eq!(opened(&contents), 41 + 51);
    }

    #[test]
    fn a_log_whose_launches_would_not_fit_in_memory_is_refused_before_they_are_read() {
        let owned = storm_log(3 * LOOK_EVERY as u64 + 5);
        let lines: Vec<&[u8]> = owned.iter().map(|l| &l[..]).collect();
        let (launches, damaged) = parse_log_within(&lines, |_| true).expect("room enough");
        assert_eq!(launches.len(), lines.len());
        assert!(damaged.is_empty());
        assert_eq!(launches[lines.len() - 1].seq, lines.len() as u64 - 1);
        // Where the machine has no room for the rest at two looks in a row, the second ends
        // the parse.
        let looks = std::cell::Cell::new(0);
        let refused = parse_log_within(&lines, |_| {
            looks.set(looks.get() + 1);
            false
        });
        assert!(refused.is_err());
        assert_eq!(looks.get(), 2);
        // One look short of room (the first) is not enough.
        let looks = std::cell::Cell::new(0);
        let (launches, _) = parse_log_within(&lines, |_| {
            looks.set(looks.get() + 1);
            looks.get() != 1
        })
        .expect("room at the second look");
        assert_eq!(launches.len(), lines.len());
        // A log shorter than two looks is never refused.
        let short: Vec<&[u8]> = lines[..2 * LOOK_EVERY].to_vec();
        let (launches, _) = parse_log_within(&short, |_| false).expect("one look only");
        assert_eq!(launches.len(), 2 * LOOK_EVERY);
    }
}
