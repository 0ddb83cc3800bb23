//! Reading a capture back, with one clear error for each way it can be broken.

use crate::model::{Content, LaunchRecord, Manifest, ProgramRecord};
use crate::writer::{blob_path, digest};
use crate::{FORMAT_NAME, FORMAT_VERSION};
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
    #[error("{path} was written in capture format {found} {version}; this cltrap reads {FORMAT_NAME} {FORMAT_VERSION}")]
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
        if found != FORMAT_NAME || version != FORMAT_VERSION {
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
        let mut launches = Vec::new();
        let mut lines: Vec<&[u8]> = log.split(|b| *b == b'\n').collect();
        // The piece after the last newline is empty, or a partial record of a writer that died.
        lines.pop();
        for (n, line) in lines.iter().enumerate() {
            if line.is_empty() {
                continue;
            }
            let record: LaunchRecord =
                serde_json::from_slice(line).map_err(|e| ReadError::Corrupt {
                    path: log_path.clone(),
                    message: format!("line {}: {}", n + 1, e),
                })?;
            launches.push(record);
        }
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

    /// Reads a blob and checks it against its digest.
    pub fn blob(&self, hash: &str) -> Result<Vec<u8>, ReadError> {
        let path = blob_path(&self.dir, hash);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ReadError::MissingBlob {
                    hash: hash.to_string(),
                })
            }
            Err(source) => return Err(ReadError::Io { path, source }),
        };
        if digest(&bytes) != hash {
            return Err(ReadError::DamagedBlob {
                hash: hash.to_string(),
            });
        }
        Ok(bytes)
    }

    /// The bytes behind a [`Content`], or why they are not available.
    pub fn content(&self, content: &Content, what: &str) -> Result<Vec<u8>, ReadError> {
        match content {
            Content::Blob { hash, .. } => self.blob(hash),
            Content::Digest { .. } => Err(ReadError::NotRecorded {
                what: what.to_string(),
                why: "only its digest was captured (buffer mode `hash`)".into(),
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
