//! `cltrap run` as a process: what happens around the application it launches.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A harmless real library stands in for the shim: these tests are about the launcher.
fn stand_in_shim() -> PathBuf {
    let libm = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ];
    libm.iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("libm present")
}

#[test]
fn killing_the_launcher_takes_the_application_down_with_it() {
    let dir = std::env::temp_dir().join(format!("cltrap-orphan-{}", std::process::id()));
    let marker = dir.join("survived");
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(&marker);
    let script = format!("sleep 1; touch '{}'", marker.display());
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .arg("run")
        .arg("--shim")
        .arg(stand_in_shim())
        .arg("--out")
        .arg(&dir)
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!marker.exists(), "the application outlived its launcher");
}

#[test]
fn the_application_exit_status_and_a_summary_come_back() {
    let dir = std::env::temp_dir().join(format!("cltrap-status-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .arg("run")
        .arg("--shim")
        .arg(stand_in_shim())
        .arg("--out")
        .arg(&dir)
        .args(["--", "sh", "-c", "echo app-output; exit 42"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(42));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "app-output\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.trim_end().ends_with(&format!(
            "no OpenCL launches were captured (capture directory {})",
            dir.display()
        )),
        "{err}"
    );
}

#[test]
fn a_missing_shim_is_one_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(["run", "--shim", "/nonexistent/libcltrap.so", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/libcltrap.so does not exist"),
        "{err}"
    );
}
