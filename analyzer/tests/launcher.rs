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

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `PID (COMM) STATE ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Polls `done` every 20 ms for up to a minute (a loaded machine may be slow, never stuck).
fn within_a_minute(mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn killing_the_launcher_takes_the_application_down_with_it() {
    // Kept until the end: the application writes into it until it is seen gone.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let started = dir.join("started");
    let marker = dir.join("survived");
    // The application says it runs (its pid), then outlives a killed launcher only if nothing
    // stops it: it would write the marker two seconds later.
    let script = format!(
        "echo $$ > '{s}.tmp' && mv '{s}.tmp' '{s}'; sleep 2; touch '{m}'",
        s = started.display(),
        m = marker.display()
    );
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .arg("run")
        .arg("--shim")
        .arg(stand_in_shim())
        .arg("--out")
        .arg(dir)
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    // Killed once the application is set up, not before (that would prove nothing).
    assert!(
        within_a_minute(|| started.exists()),
        "the application did not start"
    );
    let pid = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .to_string();
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    assert!(
        within_a_minute(|| ended(&pid)),
        "the application (pid {pid}) outlived its launcher"
    );
    assert!(!marker.exists(), "the application outlived its launcher");
}

#[test]
fn the_application_exit_status_and_a_summary_come_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("capture");
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
