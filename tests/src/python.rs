//! A Python with pyopencl and numpy for the tests that run Python programs.

use crate::paths::e2e_dir;
use crate::process::run_native;
use std::ffi::OsStr;
use std::path::PathBuf;

/// A venv under `<target>/e2e/pyvenv` with pyopencl and numpy, made once and reused.
/// `Err` carries the reason when PyPI cannot be reached (the only acceptable skip). Tests
/// (threads and test processes alike) take a lock on `pyvenv.lock` first, so one makes the
/// venv while the others wait, instead of all remaking it over each other's pip.
pub fn venv_python() -> Result<PathBuf, String> {
    let e2e = e2e_dir();
    std::fs::create_dir_all(&e2e)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", e2e.display()));
    let lock_path = e2e.join("pyvenv.lock");
    let lock = std::fs::File::create(&lock_path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", lock_path.display()));
    let venv = e2e.join("pyvenv");
    let python = venv.join("bin").join("python");
    let probe = |py: &PathBuf| run_native(py, &["-c", "import pyopencl, numpy"]).success();
    if python.exists() && probe(&python) {
        return Ok(python);
    }
    let made = run_native(
        "python3",
        &[OsStr::new("-m"), OsStr::new("venv"), venv.as_os_str()],
    );
    if !made.success() {
        return Err(format!("python3 -m venv failed: {}", made.stderr.trim()));
    }
    let pip = venv.join("bin").join("pip");
    let installed = run_native(&pip, &["install", "--quiet", "pyopencl", "numpy"]);
    if !installed.success() {
        let why = installed.stderr.to_lowercase();
        if why.contains("connection")
            || why.contains("network")
            || why.contains("resolve")
            || why.contains("no matching distribution")
            || why.contains("timed out")
        {
            return Err(format!(
                "pip cannot reach PyPI: {}",
                installed.stderr.trim()
            ));
        }
        panic!(
            "pip install pyopencl numpy failed\n{}",
            installed.describe()
        );
    }
    assert!(probe(&python), "pyopencl installed but cannot be imported");
    Ok(python)
}
