//! `cltrap replay` in a worker process: a launch that crashes the driver (a fuzzing finding, a
//! kernel that reads far out of bounds) or hangs is reported as that launch's failure, and the
//! replay goes on with the next launch in a fresh worker; the `cltrap` process itself never
//! dies of a kernel.
//!
//! The worker is `cltrap replay --in-process --after ID` over the same selection: it prints the
//! usual per-launch lines, which the parent forwards and counts; when the worker dies (a
//! signal) or stays silent past the watchdog, the launch after the last one it reported is the
//! culprit. One worker serves the whole replay unless a launch kills it.

use crate::replay::Summary;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// A replay run through worker processes.
pub struct WorkerReplay {
    /// The `cltrap` executable.
    pub exe: PathBuf,
    /// `replay` arguments for the worker (capture, selection, device, `--ulp`), without
    /// `--in-process` / `--after`.
    pub args: Vec<OsString>,
    /// The selection in replay order: launch id and kernel name.
    pub order: Vec<(u64, String)>,
    /// Longest silence of a worker (compile time of a program included).
    pub watchdog: Duration,
    /// Damaged launch lines of the capture: the first worker prints them, and each counts
    /// as a failed launch (exit 2).
    pub damaged: usize,
}

/// Counts one per-launch line into `summary`; returns its launch id.
fn count(line: &str, summary: &mut Summary) -> Option<u64> {
    let rest = line.strip_prefix("launch ")?;
    let (id, rest) = rest.split_once(' ')?;
    let id = id.parse().ok()?;
    let (_, verdict) = rest.split_once(": ")?;
    if verdict == "ok" {
        summary.ok += 1;
    } else if verdict.starts_with("MISMATCH") {
        summary.mismatches += 1;
    } else if verdict.starts_with("skipped") {
        summary.skipped += 1;
    } else if verdict.starts_with(crate::replay::NOT_HERE) {
        summary.not_here += 1;
    } else if verdict.starts_with("error") {
        summary.errors += 1;
    } else {
        return None;
    }
    Some(id)
}

/// What a worker's final summary line adds: programs built, launches re-executed to derive
/// inputs, and the device.
fn parse_final(line: &str) -> Option<(usize, u64, String)> {
    fn number<T: std::str::FromStr>(head: &str, marker: &str) -> Option<T> {
        head.rsplit_once(marker)
            .and_then(|(h, _)| h.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
    }
    let rest = line.strip_prefix("replayed ")?;
    let (head, device) = rest.split_once("; device ")?;
    let built = number(head, " program(s) built")?;
    let rederived = number(head, " earlier launch(es) re-executed").unwrap_or(0);
    Some((built, rederived, device.to_string()))
}

impl WorkerReplay {
    /// Runs the replay, writing per-launch lines and the summary to `out`; returns the exit
    /// code (as an in-process replay would give it).
    pub fn run(&self, out: &mut dyn Write) -> Result<u8, String> {
        let mut summary = Summary {
            errors: self.damaged,
            ..Summary::default()
        };
        let mut device: Option<String> = None;
        let mut after: Option<u64> = None;
        loop {
            let mut cmd = Command::new(&self.exe);
            cmd.arg("replay").args(&self.args).arg("--in-process");
            if let Some(a) = after {
                cmd.args(["--after", &a.to_string()]);
            }
            let mut child = cmd
                .stdout(Stdio::piped())
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start a replay worker {}: {e}", self.exe.display()))?;
            let stdout = child
                .stdout
                .take()
                .ok_or("the replay worker has no stdout")?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            let mut last = after;
            let mut finished = false;
            let mut hung = false;
            loop {
                match rx.recv_timeout(self.watchdog) {
                    Ok(line) => {
                        if let Some((built, rederived, dev)) = parse_final(&line) {
                            summary.programs_built += built;
                            summary.rederived += rederived;
                            device = Some(dev);
                            finished = true;
                        } else {
                            if let Some(id) = count(&line, &mut summary) {
                                last = Some(id);
                            }
                            let _ = writeln!(out, "{line}");
                            let _ = out.flush();
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        hung = true;
                        let _ = child.kill();
                        break;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            let status = child.wait().map_err(|e| format!("replay worker: {e}"))?;
            if finished {
                break;
            }
            if !hung && status.signal().is_none() {
                // The worker stopped for a reason of its own (it said why on stderr).
                return Ok(status.code().unwrap_or(2).clamp(0, 255) as u8);
            }
            let next = match last {
                None => 0,
                Some(id) => self
                    .order
                    .iter()
                    .position(|(i, _)| *i == id)
                    .map_or(0, |p| p + 1),
            };
            let Some((id, kernel)) = self.order.get(next) else {
                break;
            };
            let why = if hung {
                format!(
                    "hung: no result within {:.0} s, the watchdog stopped the replay worker",
                    self.watchdog.as_secs_f64()
                )
            } else {
                format!("the kernel crashed the replay worker ({status})")
            };
            let _ = writeln!(out, "launch {id} {kernel}: error: {why}");
            summary.errors += 1;
            if next + 1 >= self.order.len() {
                break;
            }
            after = Some(*id);
        }
        let _ = writeln!(
            out,
            "{summary}; device {}",
            device.unwrap_or_else(|| "unknown (every worker crashed)".into())
        );
        Ok(summary.exit_code() as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_lines_are_counted_and_the_final_line_parsed() {
        let mut s = Summary::default();
        assert_eq!(count("launch 3 k: ok", &mut s), Some(3));
        assert_eq!(count("launch 4 k: MISMATCH arg 1", &mut s), Some(4));
        assert_eq!(count("launch 5 k: skipped: why", &mut s), Some(5));
        assert_eq!(
            count("launch 6 k: error: the program does not build", &mut s),
            Some(6)
        );
        assert_eq!(
            count(
                "launch 7 k: not replayable on this device: its input derives from launch 6",
                &mut s
            ),
            Some(7)
        );
        assert_eq!(count("something else", &mut s), None);
        assert_eq!(
            (s.ok, s.mismatches, s.skipped, s.errors, s.not_here),
            (1, 1, 1, 1, 1)
        );
        let fin = "replayed 2 launch(es): 2 matched, 0 mismatched, 0 skipped, 0 failed; 1 program(s) built; device pthread (PoCL)";
        assert_eq!(parse_final(fin), Some((1, 0, "pthread (PoCL)".into())));
        let fin = "replayed 2 launch(es): 2 matched, 0 mismatched, 0 skipped, 0 failed; 1 program(s) built; 7 earlier launch(es) re-executed to derive inputs; device pthread (PoCL)";
        assert_eq!(parse_final(fin), Some((1, 7, "pthread (PoCL)".into())));
    }
}
