//! Instrumented variants of captured programs: the user's source, parsed once, rewritten by a
//! pass of `cltrap-kernel`, built once on the session's device — and reused for every launch
//! and every run of that program.
//!
//! Both analyses that rewrite kernels (`cltrap replay --schedules`, `cltrap cover`) need the
//! same steps and the same per-program cache, so they live here once.

use crate::executor::{BuildOptions, BuiltProgram, ExecError, InputArg, Session};
use cltrap_capture::writer::digest;
use cltrap_capture::{Capture, ProgramRecord, ReadError};
use cltrap_kernel::KernelError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Why an instrumented variant of a program could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// Only a program of one OpenCL C source unit can be rewritten (built from source, or
    /// linked from one unit compiled from source).
    #[error("the program is not one unit of OpenCL C source ({0}), so it cannot be instrumented")]
    NotSource(&'static str),
    /// The capture lacks the program or its source.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The front-end or the pass refused the kernel (the message names construct and line).
    #[error("the kernel cannot be instrumented: {0}")]
    Kernel(#[from] KernelError),
    /// Building or running the variant failed.
    #[error("{0}")]
    Exec(#[from] ExecError),
}

impl VariantError {
    /// True when the launch should be reported as skipped rather than failed: the capture
    /// cannot supply what is needed (not a source program, inputs not recorded).
    pub fn is_skip(&self) -> bool {
        match self {
            VariantError::NotSource(_) => true,
            VariantError::Read(ReadError::NotRecorded { .. }) => true,
            VariantError::Exec(e) => e.is_skip(),
            _ => false,
        }
    }

    /// The first line of the message (build logs are long), for per-launch report lines.
    pub fn one_line(&self) -> String {
        match self {
            VariantError::Exec(ExecError::Build { device, log }) => {
                let first = log
                    .lines()
                    .find(|l| l.contains("error"))
                    .or_else(|| log.lines().next())
                    .unwrap_or("");
                // The user's program builds (it was captured running), so this is cltrap's
                // own defect: say so, with the driver's line, which names the construct.
                format!(
                    "cltrap's instrumentation produced code the driver rejects on {device} \
                     (a cltrap defect, please report it; the other launches go on): {}",
                    first.trim()
                )
            }
            other => other.to_string().lines().next().unwrap_or("").to_string(),
        }
    }
}

/// The user's own source text of a captured program (all source strings of its one
/// translation unit, concatenated as OpenCL does), which every pass rewrites.
pub fn program_source(capture: &Capture, record: &ProgramRecord) -> Result<String, VariantError> {
    let unit = record.source_unit().map_err(VariantError::NotSource)?;
    Ok(capture
        .source_texts(unit.sources.iter().map(String::as_str))?
        .concat())
}

/// The options a pass parses (and a worker builds) a captured program's rewritten source
/// with: those that build its one translation unit (`clCompileProgram`'s and
/// `clLinkProgram`'s for a linked program), pointed at the captured headers' copies.
pub fn parse_options(headers: &crate::headers::Headers, record: &ProgramRecord) -> String {
    match record.source_unit() {
        Ok(unit) => headers.options(&unit.build_options()),
        Err(_) => headers.options(&record.options),
    }
}

/// One program's variant, built: what a pass produced (`T`: its map) and the device program.
pub struct Variant<T> {
    /// The user's original source (reports annotate it).
    pub original: String,
    /// What the pass returned besides the source (its map).
    pub pass: T,
    /// The instrumented program, built on the session's device.
    pub built: BuiltProgram,
    /// Parsing and rewriting time.
    pub instrument_time: Duration,
    /// Device compile time of the instrumented source.
    pub compile_time: Duration,
}

/// A variant that could not be made, kept in the cache so each launch of the program reports
/// it without trying again.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Report it as skipped (the capture cannot supply what is needed), not as failed.
    pub skip: bool,
    /// One line for per-launch reports.
    pub line: String,
    /// The whole message (build log included).
    pub full: String,
}

impl From<&VariantError> for Failure {
    fn from(e: &VariantError) -> Failure {
        Failure {
            skip: e.is_skip(),
            line: e.one_line(),
            full: e.to_string(),
        }
    }
}

/// A per-program cache of variants (keyed by the program record's hash), so each distinct
/// program is parsed, rewritten and compiled once; failures are cached too.
pub struct VariantCache<T> {
    entries: HashMap<String, Result<Variant<T>, Failure>>,
    disk: Option<DiskCache>,
}

impl<T> Default for VariantCache<T> {
    fn default() -> Self {
        VariantCache {
            entries: HashMap::new(),
            disk: None,
        }
    }
}

/// Instrumented sources and maps kept on disk, keyed by pass, cltrap version, source text and
/// build options: a later run (or a machine without libclang, such as a GPU box the capture
/// is carried to) reuses them without parsing again.
#[derive(Debug, Clone)]
pub struct DiskCache {
    /// The directory (created on first write).
    pub dir: PathBuf,
    /// Name of the pass, part of every key (`permute`, `coverage`).
    pub pass: &'static str,
}

/// This `cltrap` build, by the size and modification time of its executable (the version
/// number alone stays 0.1.0 while the passes change): a rebuilt `cltrap` never reads variants
/// an older build instrumented, whose maps may count other slots.
fn build_identity() -> &'static str {
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(|| {
        let exe = std::env::current_exe().and_then(std::fs::metadata);
        let stamp = exe.ok().map(|m| {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{mtime}", m.len())
        });
        format!(
            "{}:{}",
            env!("CARGO_PKG_VERSION"),
            stamp.unwrap_or_default()
        )
    })
}

/// One cached variant on disk. Why the two digests: the file is found by the digest of its
/// key (pass, build, original source, options), and a file under that name is used only when
/// it says it is that key's and its contents still have the digest written when it was
/// stored — a file renamed, truncated or edited since is ignored and made again.
#[derive(Serialize, Deserialize)]
struct CachedVariant<T> {
    key: String,
    content: String,
    source: String,
    map: T,
}

/// Largest cached variant read back (a bigger file is not one this cache wrote).
const CACHED_LIMIT: u64 = 256 << 20;

impl DiskCache {
    fn key(&self, original: &str, options: &str) -> String {
        let key = format!("{}\0{}\0{original}\0{options}", self.pass, build_identity());
        digest(key.as_bytes())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}-{key}.json", self.pass))
    }

    /// The digest of what a cached file holds: its source, then its map as JSON.
    fn content_digest(source: &str, map: &serde_json::Value) -> String {
        let mut bytes = source.as_bytes().to_vec();
        bytes.push(0);
        bytes.extend(map.to_string().as_bytes());
        digest(&bytes)
    }

    fn load<T: DeserializeOwned>(&self, original: &str, options: &str) -> Option<(String, T)> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let key = self.key(original, options);
        // Never through a link, never a FIFO or device: a regular file of bounded size.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.path(&key))
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > CACHED_LIMIT {
            return None;
        }
        let mut text = Vec::new();
        file.take(CACHED_LIMIT).read_to_end(&mut text).ok()?;
        let c: CachedVariant<serde_json::Value> = serde_json::from_slice(&text).ok()?;
        if c.key != key || c.content != Self::content_digest(&c.source, &c.map) {
            return None;
        }
        let map: T = serde_json::from_value(c.map).ok()?;
        Some((c.source, map))
    }

    /// Best effort: a cache that cannot be written only costs a parse next time. Written to
    /// a fresh temporary file in the folder, then renamed over the name.
    fn store<T: Serialize>(&self, original: &str, options: &str, source: &str, map: &T) {
        let Ok(value) = serde_json::to_value(map) else {
            return;
        };
        let key = self.key(original, options);
        let c = CachedVariant {
            content: Self::content_digest(source, &value),
            key: key.clone(),
            source: source.to_string(),
            map: value,
        };
        if let Ok(text) = serde_json::to_vec(&c) {
            let _ = std::fs::create_dir_all(&self.dir);
            let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) else {
                return;
            };
            if std::io::Write::write_all(&mut tmp, &text).is_ok() {
                let _ = tmp.persist(self.path(&key));
            }
        }
    }
}

impl<T: Serialize + DeserializeOwned> VariantCache<T> {
    /// A cache that also keeps instrumented sources in `disk`.
    pub fn with_disk(disk: Option<DiskCache>) -> Self {
        VariantCache {
            entries: HashMap::new(),
            disk,
        }
    }

    /// The variant of `program` (a capture's program hash), made with `pass` on first use:
    /// `pass(original source, captured build options)` returns the instrumented source and
    /// its map. The flag says whether this call made it (its times count for this launch).
    pub fn get(
        &mut self,
        session: &Session,
        capture: &Capture,
        program: &str,
        pass: impl FnOnce(&str, &str) -> Result<(String, T), KernelError>,
    ) -> Result<(&Variant<T>, bool), Failure> {
        let fresh = !self.entries.contains_key(program);
        if fresh {
            let made = make(session, capture, program, self.disk.as_ref(), pass)
                .map_err(|e| Failure::from(&e));
            self.entries.insert(program.to_string(), made);
        }
        match self.entries.get(program) {
            Some(Ok(v)) => Ok((v, fresh)),
            Some(Err(f)) => Err(f.clone()),
            None => Err(Failure {
                skip: false,
                line: "internal: the variant cache lost an entry".into(),
                full: String::new(),
            }),
        }
    }
}

impl<T> VariantCache<T> {
    /// Programs built successfully so far.
    pub fn built(&self) -> usize {
        self.entries.values().filter(|e| e.is_ok()).count()
    }

    /// Every program that was made successfully, by program hash.
    pub fn variants(&self) -> impl Iterator<Item = (&String, &Variant<T>)> {
        self.entries
            .iter()
            .filter_map(|(k, v)| v.as_ref().ok().map(|v| (k, v)))
    }
}

fn make<T: Serialize + DeserializeOwned>(
    session: &Session,
    capture: &Capture,
    program: &str,
    disk: Option<&DiskCache>,
    pass: impl FnOnce(&str, &str) -> Result<(String, T), KernelError>,
) -> Result<Variant<T>, VariantError> {
    let (record, made) = instrument(capture, program, disk, pass)?;
    let start = Instant::now();
    let built = session.build(
        capture,
        &record,
        &BuildOptions {
            source: Some(made.source),
            extra_options: String::new(),
        },
    )?;
    Ok(Variant {
        original: made.original,
        pass: made.pass,
        built,
        instrument_time: made.instrument_time,
        compile_time: start.elapsed(),
    })
}

/// A program rewritten by a pass, not built: what a report needs of it (the original text and
/// the map) without a device.
pub struct Instrumented<T> {
    /// The user's original source.
    pub original: String,
    /// The rewritten source.
    pub source: String,
    /// What the pass returned besides the source (its map).
    pub pass: T,
    /// Parsing and rewriting time (about 0 on a disk-cache hit).
    pub instrument_time: Duration,
}

/// Runs `pass` over the captured program `program` (or reads its result from `disk`), without
/// building it: a campaign's report re-creates a program's map this way instead of carrying it
/// in every launch's result.
pub fn instrument<T: Serialize + DeserializeOwned>(
    capture: &Capture,
    program: &str,
    disk: Option<&DiskCache>,
    pass: impl FnOnce(&str, &str) -> Result<(String, T), KernelError>,
) -> Result<(ProgramRecord, Instrumented<T>), VariantError> {
    let record = capture.program(program)?;
    // The pass parses against the captured headers' copies (their directory names the
    // headers' contents, so the disk cache key changes when they do); includes no mirrored
    // directory can serve (macro, absolute) point at their copies in the text itself.
    let headers = crate::headers::Headers::from_capture(capture, &record.includes)
        .map_err(|e| ExecError::Headers(e.to_string()))?;
    let original = headers.parse_source(&program_source(capture, &record)?);
    let options = parse_options(&headers, &record);
    let start = Instant::now();
    let (source, map) = match disk.and_then(|d| d.load(&original, &options)) {
        Some(hit) => hit,
        None => {
            let made = pass(&original, &options)?;
            if let Some(d) = disk {
                d.store(&original, &options, &made.0, &made.1);
            }
            made
        }
    };
    Ok((
        record,
        Instrumented {
            original,
            source,
            pass: map,
            instrument_time: start.elapsed(),
        },
    ))
}

/// An extra read-write buffer argument of 32-bit words (a permutation table, a counter buffer).
pub fn word_buffer(words: &[u32]) -> InputArg {
    InputArg::Buffer {
        mem: None,
        flags: opencl_sys::CL_MEM_READ_WRITE,
        bytes: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    }
}

/// 32-bit little-endian words of a buffer read back (a trailing partial word is dropped).
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The extra arguments of a mutant schema's variant: the selected mutant `n` and the
/// watchdog's barrier budget (see `cltrap_kernel::mutate::WATCHDOG_PARAM`); 0 runs the original.
pub fn selector_extras(n: u32, barrier_budget: u32) -> Vec<InputArg> {
    vec![
        InputArg::Scalar(n.to_le_bytes().to_vec()),
        word_buffer(&[0, barrier_budget, 0]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_cache_returns_what_was_stored_for_the_same_source_and_options_only() {
        let tmp = tempfile::tempdir().unwrap();
        // Not made yet: the cache makes its folder.
        let dir = tmp.path().join("cache");
        let c = DiskCache {
            dir: dir.clone(),
            pass: "test",
        };
        assert!(c.load::<Vec<u32>>("k", "-DX").is_none());
        c.store("k", "-DX", "rewritten", &vec![1u32, 2]);
        assert_eq!(
            c.load::<Vec<u32>>("k", "-DX"),
            Some(("rewritten".to_string(), vec![1, 2]))
        );
        assert!(c.load::<Vec<u32>>("k", "-DY").is_none());
        assert!(c.load::<Vec<u32>>("k2", "-DX").is_none());
    }

    #[test]
    fn a_cached_file_edited_or_planted_under_a_keys_name_is_not_trusted() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let c = DiskCache {
            dir: dir.path().to_path_buf(),
            pass: "test",
        };
        c.store("k", "", "rewritten", &vec![1u32]);
        let key = c.key("k", "");
        let path = c.path(&key);
        let text = std::fs::read_to_string(&path).expect("stored");
        // Its source changed after it was stored: ignored.
        std::fs::write(&path, text.replace("rewritten", "planted!!")).expect("edit");
        assert!(c.load::<Vec<u32>>("k", "").is_none());
        // Another key's valid file put under this key's name: ignored.
        c.store("other", "", "other source", &vec![2u32]);
        std::fs::copy(c.path(&c.key("other", "")), &path).expect("copy");
        assert!(c.load::<Vec<u32>>("k", "").is_none());
        // A link under the name, to a valid file: not followed.
        std::fs::remove_file(&path).expect("remove");
        c.store("k", "", "rewritten", &vec![1u32]);
        let real = dir.path().join("real.json");
        std::fs::rename(&path, &real).expect("move");
        std::os::unix::fs::symlink(&real, &path).expect("link");
        assert!(c.load::<Vec<u32>>("k", "").is_none());
        // Stored again: a fresh file replaces the link, and is trusted.
        c.store("k", "", "rewritten", &vec![1u32]);
        assert_eq!(
            c.load::<Vec<u32>>("k", ""),
            Some(("rewritten".to_string(), vec![1]))
        );
    }

    #[test]
    fn words_round_trip_through_a_buffer_argument() {
        let InputArg::Buffer { bytes, .. } = word_buffer(&[1, 0xdead_beef]) else {
            panic!("not a buffer");
        };
        assert_eq!(words(&bytes), [1, 0xdead_beef]);
    }
}
