//! Shared by the shim tests (`swap_*`, `doors`, `storm`): building the C fixtures, finding `cltrap` and the shim, and
//! running an application natively and under `cltrap run` with live instrumentation.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `target/<profile>/`, where cargo put this test's shim and the `cltrap` executable.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

/// `libcltrap.so` built next to this test.
pub fn shim() -> PathBuf {
    let lib = target_dir().join("libcltrap.so");
    assert!(
        lib.exists(),
        "{} is missing: build the shim first",
        lib.display()
    );
    lib
}

/// The `cltrap` executable (`$CLTRAP_TEST_BIN`, else next to the shim).
pub fn cltrap() -> PathBuf {
    let bin = std::env::var_os("CLTRAP_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("cltrap"));
    assert!(
        bin.exists(),
        "{} is missing: build it first (`cargo build -p cltrap`, or `cargo test --workspace`)",
        bin.display()
    );
    bin
}

/// A fresh directory, unique to this call (tests run concurrently).
pub fn tmp(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("swap-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

/// Compiles `tests/fixtures/<name>.c` with `defines`.
pub fn build(name: &str, defines: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.c"));
    let out = tmp(&format!("bin-{name}")).join(name);
    let status = Command::new("cc")
        .args(["-O1", "-g", "-w"])
        .args(defines)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .args(["-lOpenCL", "-lpthread", "-ldl"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling {name}.c failed");
    out
}

fn clean(cmd: &mut Command, env: &[(&str, &str)]) {
    for v in [
        "OPENCL_LAYERS",
        "LD_PRELOAD",
        "CLTRAP_COVERAGE",
        "CLTRAP_PERMUTE",
        "CLTRAP_DIR",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
}

/// Runs `app args` without cltrap.
pub fn native(app: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(app);
    c.args(args);
    clean(&mut c, env);
    c.output()
        .unwrap_or_else(|e| panic!("{} cannot run: {e}", app.display()))
}

/// Runs `cltrap run --out dir FLAGS -- app args`.
pub fn under_cltrap(
    dir: &Path,
    flags: &[&str],
    app: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut c = Command::new(cltrap());
    c.arg("run")
        .arg("--shim")
        .arg(shim())
        .arg("--out")
        .arg(dir)
        .args(flags)
        .arg("--")
        .arg(app)
        .args(args);
    clean(&mut c, env);
    c.output().expect("cltrap runs")
}

/// Text of a process's stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Text of a process's stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts that a run succeeded, showing its stderr otherwise.
pub fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({}): {}",
        o.status,
        stderr(o)
    );
}

/// A recorded buffer's contents as native-endian `i32`s (panics when they were not stored).
pub fn i32s(c: &cltrap_capture::Capture, content: &cltrap_capture::Content) -> Vec<i32> {
    c.content(content, "buffer")
        .expect("content stored")
        .chunks_exact(4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// A recorded buffer's contents as native-endian `f32`s (panics when they were not stored).
pub fn f32s(c: &cltrap_capture::Capture, content: &cltrap_capture::Content) -> Vec<f32> {
    c.content(content, "buffer")
        .expect("content stored")
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}
