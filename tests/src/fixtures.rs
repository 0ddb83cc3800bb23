//! Building the C fixtures of `tests/apps/` into `<target>/e2e/bin/`.

use crate::paths::{e2e_dir, fixture_source_dir};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// Builds `tests/apps/<name>.c` (once per process; again whenever a source is newer) and
/// returns the executable. Links `-lOpenCL -lpthread -ldl` with `--as-needed`, so a fixture
/// that only `dlopen`s the loader really does not link it.
pub fn fixture(name: &str) -> PathBuf {
    static BUILD_LOCK: Mutex<()> = Mutex::new(());
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let apps = fixture_source_dir("apps");
    let src = apps.join(format!("{name}.c"));
    assert!(
        src.is_file(),
        "fixture source {} does not exist",
        src.display()
    );
    let bin_dir = e2e_dir().join("bin");
    std::fs::create_dir_all(&bin_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", bin_dir.display()));
    let exe = bin_dir.join(name);
    let newest_source = [src.clone(), apps.join("common.h")]
        .iter()
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max();
    let built = std::fs::metadata(&exe).and_then(|m| m.modified()).ok();
    if let (Some(b), Some(s)) = (built, newest_source) {
        if b >= s {
            return exe;
        }
    }
    // Build to a private name and rename, so a parallel test binary never runs half a file.
    let tmp = bin_dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let kernels = fixture_source_dir("kernels");
    let out = Command::new("cc")
        .args([
            "-std=c11",
            "-D_GNU_SOURCE",
            "-O1",
            "-g",
            "-Wall",
            "-Wno-unused-function",
        ])
        .arg(format!("-DKERNEL_DIR=\"{}\"", kernels.display()))
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .args(["-Wl,--as-needed", "-lOpenCL", "-lpthread", "-ldl"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `cc`: {e}"));
    assert!(
        out.status.success(),
        "building fixture {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &exe)
        .unwrap_or_else(|e| panic!("cannot move {} into place: {e}", exe.display()));
    exe
}
