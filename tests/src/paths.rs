//! Where things are: the workspace, the target directory, the binaries under test, and the
//! per-test directories (removed when a test passes, kept when it fails).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The workspace root (the parent of this crate), so fixtures are found wherever tests run.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// Cargo's target directory: where the release binaries are and where test output goes.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d
            } else {
                workspace_root().join(d)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// Root of everything the tests write: `<target>/e2e`.
pub fn e2e_dir() -> PathBuf {
    target_dir().join("e2e")
}

/// `tests/apps`, `tests/kernels`, `tests/py`: the fixture sources.
pub fn fixture_source_dir(kind: &str) -> PathBuf {
    workspace_root().join("tests").join(kind)
}

/// The two release products every test needs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `cltrap` CLI.
    pub cltrap: PathBuf,
    /// `libcltrap.so`, the shim.
    pub shim: PathBuf,
}

/// Locates `cltrap` and `libcltrap.so` once; panics with the one instruction that fixes it
/// when they are missing, so a forgotten build is not mistaken for a cltrap bug.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let release = target_dir().join("release");
        let pick = |env: &str, default: PathBuf| -> PathBuf {
            match std::env::var_os(env) {
                Some(v) if !v.is_empty() => PathBuf::from(v),
                _ => default,
            }
        };
        let cltrap = pick("CLTRAP_BIN", release.join("cltrap"));
        let shim = pick("CLTRAP_SHIM", release.join("libcltrap.so"));
        for (what, path) in [
            ("the cltrap CLI", &cltrap),
            ("the shim libcltrap.so", &shim),
        ] {
            assert!(
                path.is_file(),
                "{what} is missing at {}: run `cargo build --release --workspace` first \
                 (or point CLTRAP_BIN / CLTRAP_SHIM at it)",
                path.display()
            );
        }
        Tools { cltrap, shim }
    })
}

/// A fresh, empty directory under `<target>/e2e/<kind>/` whose name says which test owns it;
/// unique per process and call, so tests running in parallel never share one.
pub fn fresh_dir(kind: &str, label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = e2e_dir()
        .join(kind)
        .join(format!("{label}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create test directory {}: {e}", dir.display()));
    dir
}

/// A capture directory that does not exist yet (the shim must create it), removed again
/// when the test that owns it passes and kept for inspection when it fails (or always, with
/// `CLTRAP_E2E_KEEP=1`).
pub fn fresh_capture_dir(label: &str) -> TestDir {
    let parent = fresh_dir("caps", label);
    TestDir {
        path: parent.join("cap"),
        owned: parent,
    }
}

/// A test's capture directory; derefs to its path.
#[derive(Debug)]
pub struct TestDir {
    path: PathBuf,
    owned: PathBuf,
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for TestDir {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let keep = std::env::var_os("CLTRAP_E2E_KEEP").is_some_and(|v| v == "1");
        if !std::thread::panicking() && !keep {
            let _ = std::fs::remove_dir_all(&self.owned);
        }
    }
}
