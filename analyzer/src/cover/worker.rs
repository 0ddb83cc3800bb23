//! `cltrap cover` in a worker process: a launch that crashes or hangs the driver is left out
//! of the coverage and named, and the other launches are still covered; the `cltrap` process
//! itself never dies of a kernel.
//!
//! The worker is `cltrap cover --in-process` over the same selection, writing the id of the
//! launch it is about to run into a progress file ([`announce`]). When it dies of a signal, or
//! stays on one launch past the watchdog, that launch is left out and a fresh worker covers
//! the selection without it, told which launches were left out and why so that it counts them
//! as failed (coverage merges over launches, so the report of the last worker is the whole
//! report). Crashing launches are rare — fuzzing keeps them out of suites — so
//! covering again is cheaper than shipping partial results between processes.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static PROGRESS: OnceLock<PathBuf> = OnceLock::new();

/// Makes this process (a worker) announce each launch in `file` before running it.
pub fn announce_to(file: PathBuf) {
    let _ = PROGRESS.set(file);
}

/// Writes `id` to the progress file, when this process is a worker.
pub fn announce(id: u64) {
    if let Some(p) = PROGRESS.get() {
        let _ = std::fs::write(p, id.to_string());
    }
}

/// A coverage run through worker processes.
pub struct WorkerCover {
    /// The `cltrap` executable.
    pub exe: PathBuf,
    /// `cover` arguments for the worker (capture, selection, device, report paths), without
    /// `--in-process`, `--progress` and `--left-out`.
    pub args: Vec<OsString>,
    /// Launch id → kernel name, for the lines naming launches left out.
    pub kernels: Vec<(u64, String)>,
    /// Longest time one launch may take (its program's instrumenting and compile included).
    pub watchdog: Duration,
}

impl WorkerCover {
    /// Runs the coverage; the worker's report goes to `out`. Launches left out are handed to
    /// the last worker (`--left-out ID:WHY`), which counts them as failed in its summary and
    /// reports. Returns the exit code (2 when a launch was left out).
    pub fn run(&self, out: &mut dyn Write) -> Result<u8, String> {
        let progress =
            std::env::temp_dir().join(format!("cltrap-cover-progress-{}", std::process::id()));
        let mut left_out: Vec<(u64, String)> = Vec::new();
        let result = loop {
            let _ = std::fs::remove_file(&progress);
            let mut cmd = Command::new(&self.exe);
            cmd.arg("cover")
                .args(&self.args)
                .arg("--in-process")
                .arg("--progress")
                .arg(&progress);
            for (id, why) in &left_out {
                cmd.arg("--left-out").arg(format!("{id}:{why}"));
            }
            let child = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start a cover worker {}: {e}", self.exe.display()))?;
            match watch(child, &progress, self.watchdog)? {
                Ended::Done(code, text) => break (code, text),
                Ended::Died(why) => {
                    let Some(id) = current(&progress) else {
                        return Err(format!("the cover worker {why} before its first launch"));
                    };
                    if left_out.iter().any(|(i, _)| *i == id) {
                        return Err(format!("the cover worker {why} again at launch {id}"));
                    }
                    left_out.push((id, why));
                }
            }
        };
        let _ = std::fs::remove_file(&progress);
        let _ = out.write_all(&result.1);
        Ok(if left_out.is_empty() { result.0 } else { 2 })
    }
}

/// How a worker ended.
enum Ended {
    /// On its own: exit code and stdout.
    Done(u8, Vec<u8>),
    /// Killed by a signal or by the watchdog (why, in words).
    Died(String),
}

fn current(progress: &Path) -> Option<u64> {
    std::fs::read_to_string(progress).ok()?.trim().parse().ok()
}

fn watch(
    mut child: std::process::Child,
    progress: &Path,
    watchdog: Duration,
) -> Result<Ended, String> {
    let mut stdout = child
        .stdout
        .take()
        .ok_or("the cover worker has no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut v);
        v
    });
    let mut seen = current(progress);
    let mut since = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| format!("cover worker: {e}"))? {
            break s;
        }
        let now = current(progress);
        if now != seen {
            seen = now;
            since = Instant::now();
        } else if since.elapsed() > watchdog {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            return Ok(Ended::Died(format!(
                "hung (no progress within {:.0} s; the watchdog stopped the cover worker)",
                watchdog.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = reader.join().unwrap_or_default();
    match status.signal() {
        Some(_) => Ok(Ended::Died(format!("crashed the cover worker ({status})"))),
        None => Ok(Ended::Done(
            status.code().unwrap_or(2).clamp(0, 255) as u8,
            text,
        )),
    }
}
