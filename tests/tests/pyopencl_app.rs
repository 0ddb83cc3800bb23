//! A pyopencl application (which dlopens the ICD loader bundled in its wheel) runs unchanged
//! under the shim, and its launches are captured and replay ok.

use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::PathBuf;

/// A venv under `<target>/e2e/pyvenv` with pyopencl and numpy, made once and reused.
/// `Err` carries the reason when PyPI cannot be reached (the only acceptable skip).
fn venv_python() -> Result<PathBuf, String> {
    let venv = e2e_dir().join("pyvenv");
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

#[test]
fn a_pyopencl_script_runs_unchanged_and_its_launches_replay_ok() {
    let python = match venv_python() {
        Ok(p) => p,
        Err(why) => {
            skip(
                "a_pyopencl_script_runs_unchanged_and_its_launches_replay_ok",
                &why,
            );
            return;
        }
    };
    let script = fixture_source_dir("py").join("pyopencl_app.py");
    let args = [script.as_os_str()];
    let native = run_native(&python, &args).expect_success();
    assert!(
        native.stdout_text().contains("saxpy: ok"),
        "{}",
        native.describe()
    );
    let dir = fresh_capture_dir("pyopencl");
    let captured = run_captured(&dir, &[], &python, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    assert_eq!(kernel_sequence(&cap), ["saxpy", "block_sum"]);
    let sum = &cap.launches[1];
    assert_eq!(sum.local_size.as_deref(), Some(&[64u64][..]));
    assert!(
        matches!(
            sum.args[2],
            cltrap_capture::ArgRecord::Local { size: 256, .. }
        ),
        "{:?}",
        sum.args[2]
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, 2);
}
