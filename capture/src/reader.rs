//! Reading a capture back, with one clear error for each way it can be broken.

use crate::model::{Content, LaunchRecord, Manifest, ProgramRecord};
use crate::writer::{blob_path, chunk_path, digest, index_path, pack_path};
use crate::{FORMAT_NAME, FORMAT_VERSION, READABLE_VERSIONS};
use serde::Deserialize;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

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
    #[error("launch {id} is not in this capture ({count} launches: ids 0..{count})")]
    NoSuchLaunch { id: u64, count: usize },
    #[error("blob {hash} is missing from the capture (was it copied incompletely?)")]
    MissingBlob { hash: String },
    #[error("blob {hash} is damaged: its contents no longer match their digest")]
    DamagedBlob { hash: String },
    #[error("{what} was not recorded ({why})")]
    NotRecorded { what: String, why: String },
}

/// A capture opened for reading: manifest and all complete launch records.
#[derive(Debug)]
pub struct Capture {
    dir: PathBuf,
    pub manifest: Manifest,
    pub launches: Vec<LaunchRecord>,
    /// True when the last line of the log was cut off (the application died mid-write).
    pub truncated: bool,
}

impl Capture {
    /// Opens the capture in `dir`, checking the format version and every launch line.
    pub fn open(dir: &Path) -> Result<Capture, ReadError> {
        let manifest_path = dir.join("manifest.json");
        if !manifest_path.exists() {
            return Err(ReadError::NoManifest {
                path: dir.to_path_buf(),
            });
        }
        let text = fs::read(&manifest_path).map_err(|source| ReadError::Io {
            path: manifest_path.clone(),
            source,
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
        let manifest: Manifest = serde_json::from_value(value).map_err(|e| ReadError::Corrupt {
            path: manifest_path.clone(),
            message: e.to_string(),
        })?;

        let log_path = dir.join(crate::LAUNCHES_FILE);
        // Journals first, then the log: a live writer that moves its journal into the log in
        // between leaves records in both (kept once), never in neither.
        let pending = crate::journal::pending_records(dir)
            .map_err(|(path, source)| ReadError::Io { path, source })?;
        let log = match fs::read(&log_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(ReadError::Io {
                    path: log_path,
                    source,
                })
            }
        };
        let truncated = !log.is_empty() && !log.ends_with(b"\n");
        let mut lines: Vec<&[u8]> = log.split(|b| *b == b'\n').collect();
        // The piece after the last newline is empty, or a partial record of a writer that died.
        lines.pop();
        lines.extend(pending.split(|b| *b == b'\n').filter(|l| !l.is_empty()));
        let launches = parse_log(&lines).map_err(|(n, message)| ReadError::Corrupt {
            path: log_path.clone(),
            message: format!("line {n}: {message}"),
        })?;
        let mut launches = launches;
        // Writers that record launches as they complete write them out of id order; ids are
        // the order the application enqueued them.
        launches.sort_by_key(|l| l.id);
        Ok(Capture {
            dir: dir.to_path_buf(),
            manifest,
            launches,
            truncated,
        })
    }

    /// The capture directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The launch with this id.
    pub fn launch(&self, id: u64) -> Result<&LaunchRecord, ReadError> {
        self.launches
            .iter()
            .find(|l| l.id == id)
            .ok_or(ReadError::NoSuchLaunch {
                id,
                count: self.launches.len(),
            })
    }

    /// Reads a blob and checks it against its digest: a whole blob, or a content stored in
    /// compressed chunks (each chunk checked too; see [`crate::chunks`]).
    pub fn blob(&self, hash: &str) -> Result<Vec<u8>, ReadError> {
        let path = blob_path(&self.dir, hash);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.chunked(hash)?,
            Err(source) => return Err(ReadError::Io { path, source }),
        };
        if digest(&bytes) != hash {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        Ok(bytes)
    }

    /// A content stored in chunks, reassembled (not yet checked as a whole).
    fn chunked(&self, hash: &str) -> Result<Vec<u8>, ReadError> {
        let missing = |hash: &str| ReadError::MissingBlob {
            hash: hash.to_string(),
        };
        let path = index_path(&self.dir, hash);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing(hash)),
            Err(source) => return Err(ReadError::Io { path, source }),
        };
        let (size, chunks) =
            crate::chunks::parse_index(&text).map_err(|message| ReadError::Corrupt {
                path: path.clone(),
                message,
            })?;
        // Room for at most 64 MiB before any chunk is checked: the size is the index's word.
        let mut bytes = Vec::with_capacity((size as usize).min(64 << 20));
        let mut packs: HashMap<&str, fs::File> = HashMap::new();
        for c in &chunks {
            let damaged = || ReadError::DamagedBlob {
                hash: c.hash.clone(),
            };
            let file = match &c.at {
                Some(at) => self.packed(&mut packs, at)?,
                None => {
                    let path = chunk_path(&self.dir, &c.hash);
                    let too_big = fs::metadata(&path)
                        .is_ok_and(|m| m.len() > crate::chunks::STORED_MAX as u64);
                    if too_big {
                        return Err(damaged());
                    }
                    match fs::read(&path) {
                        Ok(f) => f,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            return Err(missing(&c.hash))
                        }
                        Err(source) => return Err(ReadError::Io { path, source }),
                    }
                }
            };
            let chunk = crate::chunks::decode(&file, c.len).map_err(|_| damaged())?;
            if digest(&chunk) != c.hash {
                return Err(damaged());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// The encoded chunk at `at`, read from its pack (opened once per content: `packs`). A
    /// pack shorter than the index says is damaged.
    fn packed<'a>(
        &self,
        packs: &mut HashMap<&'a str, fs::File>,
        at: &'a crate::chunks::PackSlot,
    ) -> Result<Vec<u8>, ReadError> {
        use std::os::unix::fs::FileExt;
        let path = pack_path(&self.dir, &at.pack);
        let file = match packs.entry(&at.pack) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => match fs::File::open(&path) {
                Ok(f) => v.insert(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ReadError::MissingBlob {
                        hash: at.pack.to_string(),
                    })
                }
                Err(source) => return Err(ReadError::Io { path, source }),
            },
        };
        let mut encoded = vec![0u8; at.stored];
        match file.read_exact_at(&mut encoded, at.offset) {
            Ok(()) => Ok(encoded),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(ReadError::DamagedBlob {
                    hash: at.pack.to_string(),
                })
            }
            Err(source) => Err(ReadError::Io { path, source }),
        }
    }

    /// The bytes behind a [`Content`], or why they are not available.
    pub fn content(&self, content: &Content, what: &str) -> Result<Vec<u8>, ReadError> {
        match content {
            Content::Blob { hash, .. } => self.blob(hash),
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
    pub fn program(&self, hash: &str) -> Result<ProgramRecord, ReadError> {
        let bytes = self.blob(hash)?;
        serde_json::from_slice(&bytes).map_err(|e| ReadError::Corrupt {
            path: blob_path(&self.dir, hash),
            message: e.to_string(),
        })
    }

    /// A source blob as text (OpenCL C sources are bytes; invalid UTF-8 is replaced).
    pub fn source_text(&self, hash: &str) -> Result<String, ReadError> {
        Ok(String::from_utf8_lossy(&self.blob(hash)?).into_owned())
    }
}

/// The launch records of a log's whole lines, in file order: whole records as they are, delta
/// lines (`{"id", "base", "patch"}`, see [`crate::delta`]) applied to their base, which must
/// be an earlier line. Err: (1-based line number, what is wrong).
fn parse_log(lines: &[&[u8]]) -> Result<Vec<LaunchRecord>, (usize, String)> {
    #[derive(serde::Deserialize)]
    struct Delta {
        id: u64,
        base: u64,
        patch: serde_json::Value,
    }
    let mut launches: Vec<LaunchRecord> = Vec::with_capacity(lines.len());
    let mut position: HashMap<u64, usize> = HashMap::new();
    // Per id, the line it was read from (a second, identical copy is dropped).
    let mut line_of: HashMap<u64, usize> = HashMap::new();
    // Records made from deltas, as JSON, until a later delta uses them as its base (a
    // writer's chain of one kernel's launches: only the newest of each chain is kept).
    let mut resolved: HashMap<u64, serde_json::Value> = HashMap::new();
    for (n, line) in lines.iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let record = match serde_json::from_slice::<LaunchRecord>(line) {
            Ok(r) => r,
            Err(whole) => {
                let Ok(d) = serde_json::from_slice::<Delta>(line) else {
                    return Err((n + 1, whole.to_string()));
                };
                let mut value = match resolved.remove(&d.base) {
                    Some(v) => v,
                    None => {
                        let Some(i) = position.get(&d.base) else {
                            return Err((n + 1, format!(
                                "launch {} is recorded as a change of launch {}, which is not on an earlier line",
                                d.id, d.base
                            )));
                        };
                        serde_json::to_value(&launches[*i]).map_err(|e| (n + 1, e.to_string()))?
                    }
                };
                crate::delta::apply(&mut value, &d.patch).map_err(|e| (n + 1, e))?;
                value["id"] = d.id.into();
                let record =
                    LaunchRecord::deserialize(&value).map_err(|e| (n + 1, e.to_string()))?;
                resolved.insert(d.id, value);
                record
            }
        };
        // A record both in a journal and in the log (its writer died while moving one into
        // the other) is the same line twice: the first copy counts. Two different records
        // with one id are a broken capture.
        if let Some(&first) = line_of.get(&record.id) {
            if lines[first] == *line {
                continue;
            }
            return Err((
                n + 1,
                format!(
                    "launch id {} is also on line {}, with a different record",
                    record.id,
                    first + 1
                ),
            ));
        }
        line_of.insert(record.id, n);
        position.insert(record.id, launches.len());
        launches.push(record);
    }
    Ok(launches)
}
