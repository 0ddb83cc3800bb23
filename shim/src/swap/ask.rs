//! Asking the `cltrap` executable to instrument a program, with an on-disk cache.
//!
//! The protocol (`cltrap instrument`, see `analyzer/src/instrument_cmd.rs`): the program source
//! on stdin, `--pass coverage|permute --options OPTS`; on stdout one JSON object with
//! `source` (instrumented), `kernels` (`[{name, extra_arg}]`), and for coverage `static_len`
//! and `barriers` (the counter buffer holds `static_len + barriers * work-groups` u32s), or
//! `{"error": "..."}`. The shim parses only those fields; the rest (the map, the original
//! source) is for `cltrap run`'s report.

use super::{Pass, BIN_ENV};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the shim needs from an instrumented program.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Cache key (file stem under `instrument/`), also the program's key in `coverage.jsonl`.
    pub key: String,
    /// Instrumented source to build.
    pub source: String,
    /// Kernel name → index of its extra argument (= its original argument count).
    pub extra_arg: HashMap<String, u32>,
    /// Coverage: flag slots including the header.
    pub static_len: u64,
    /// Coverage: number of barrier call sites (one counter per work-group each).
    pub barriers: u64,
}

/// The cache key of a program for a pass.
pub fn key(pass: Pass, options: &str, source: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(source.len() + options.len() + 16);
    bytes.extend_from_slice(pass.name().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(options.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(source);
    cltrap_capture::writer::digest(&bytes)
}

/// Where answers are cached.
pub fn cache_dir(capture_dir: &Path) -> PathBuf {
    capture_dir.join("instrument")
}

/// The instrumented variant of `source`, from the cache or from `cltrap instrument`.
/// `Err` is one sentence for stderr.
pub fn instrument(
    capture_dir: &Path,
    pass: Pass,
    options: &str,
    source: &[u8],
) -> Result<Variant, String> {
    let key = key(pass, options, source);
    let path = cache_dir(capture_dir).join(format!("{key}.json"));
    // A regular file of the capture only (never a link or a FIFO), of a sane size.
    let answer = match cltrap_capture::writer_fs::read_regular(&path, ANSWER_MAX) {
        Ok(bytes) => bytes,
        Err(_) => {
            let bytes = run_cltrap(pass, options, source)?;
            store(capture_dir, &path, &bytes);
            bytes
        }
    };
    parse(&key, &answer)
}

fn run_cltrap(pass: Pass, options: &str, source: &[u8]) -> Result<Vec<u8>, String> {
    let bin = std::env::var_os(BIN_ENV)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| {
            format!("{BIN_ENV} is not set, so kernels cannot be instrumented (start the application with `cltrap run`)")
        })?;
    let mut child = Command::new(&bin)
        .args(["instrument", "--pass", pass.name(), "--options", options])
        .env_remove("LD_PRELOAD")
        .env_remove("OPENCL_LAYERS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", Path::new(&bin).display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // The child reads all of stdin before writing anything, so this cannot deadlock.
        let _ = stdin.write_all(source);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{} instrument failed: {e}", Path::new(&bin).display()))?;
    if out.stdout.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} instrument gave no answer ({}): {}",
            Path::new(&bin).display(),
            out.status,
            err.trim()
        ));
    }
    Ok(out.stdout)
}

/// The most bytes of a cached answer read back (an instrumented program is far smaller).
const ANSWER_MAX: u64 = 256 << 20;

/// Who may read the instrument cache's files: as the capture's (`CLTRAP_SHARE`).
pub fn access() -> cltrap_capture::writer_fs::Access {
    crate::state::settings()
        .map(crate::sink::access)
        .unwrap_or_default()
}

/// Writes the answer atomically (another process may be reading or writing the same key),
/// into folders of the capture that are this user's and no links.
fn store(capture_dir: &Path, path: &Path, bytes: &[u8]) {
    use cltrap_capture::writer_fs::{ensure_capture_dir, ensure_subdirs, write_new};
    let Some(rel) = path.parent().and_then(|d| d.strip_prefix(capture_dir).ok()) else {
        return;
    };
    let access = access();
    if ensure_capture_dir(capture_dir, access).is_err()
        || ensure_subdirs(capture_dir, rel, access).is_err()
    {
        return;
    }
    let _ = write_new(path, bytes, access);
}

fn parse(key: &str, answer: &[u8]) -> Result<Variant, String> {
    let v: serde_json::Value = serde_json::from_slice(answer)
        .map_err(|e| format!("cltrap instrument answered something unreadable: {e}"))?;
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        return Err(e.to_string());
    }
    let source = v
        .get("source")
        .and_then(|s| s.as_str())
        .ok_or("cltrap instrument's answer has no source")?
        .to_string();
    let mut extra_arg = HashMap::new();
    for k in v
        .get("kernels")
        .and_then(|k| k.as_array())
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(i)) = (
            k.get("name").and_then(|n| n.as_str()),
            k.get("extra_arg").and_then(|i| i.as_u64()),
        ) {
            extra_arg.insert(name.to_string(), i as u32);
        }
    }
    let num = |f: &str| v.get(f).and_then(|n| n.as_u64()).unwrap_or(0);
    Ok(Variant {
        key: key.to_string(),
        source,
        extra_arg,
        static_len: num("static_len"),
        barriers: num("barriers"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_passes_options_and_sources() {
        let a = key(Pass::Coverage, "-DN=1", b"k");
        assert_ne!(a, key(Pass::Permute(1), "-DN=1", b"k"));
        assert_ne!(a, key(Pass::Coverage, "-DN=2", b"k"));
        assert_ne!(a, key(Pass::Coverage, "-DN=1", b"k2"));
        // The seed is not part of the key: one permuted program serves every seed.
        assert_eq!(
            key(Pass::Permute(1), "", b"k"),
            key(Pass::Permute(2), "", b"k")
        );
    }

    #[test]
    fn answers_and_errors_parse() {
        let v = parse(
            "k",
            br#"{"source":"src","kernels":[{"name":"a","extra_arg":3}],"static_len":12,"barriers":1}"#,
        )
        .expect("parses");
        assert_eq!(v.extra_arg.get("a"), Some(&3));
        assert_eq!((v.static_len, v.barriers), (12, 1));
        let e = parse("k", br#"{"error":"line 3:4: goto into a loop"}"#).unwrap_err();
        assert!(e.contains("goto"), "{e}");
        assert!(parse("k", b"garbage").is_err());
    }
}
