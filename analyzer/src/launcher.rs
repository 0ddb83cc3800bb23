//! `cltrap run`: start an application with the capture shim loaded through both doors
//! (`LD_PRELOAD` and the ICD loader's `OPENCL_LAYERS`), forward its exit status, and say
//! what was captured.

use cltrap_capture::Control;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// File name of the shim library.
pub const SHIM_NAME: &str = "libcltrap.so";
/// Environment variable naming the shim when it is not next to the `cltrap` executable.
pub const SHIM_ENV: &str = "CLTRAP_SHIM";

/// Why the application could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("the capture shim {SHIM_NAME} was not found (looked in: {looked}); build it with `cargo build -p cltrap-shim`, or pass --shim PATH or set {SHIM_ENV}")]
    /// Not given and not found where looked.
    NoShim { looked: String },
    #[error("the capture shim {path} does not exist")]
    /// Given, but no file is there.
    ShimMissing { path: PathBuf },
    #[error("cannot start {program}: {source}")]
    /// The application could not be started or waited for.
    Spawn {
        /// The program as given.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    #[error("{0}")]
    /// A control's value cannot be understood (or two controls exclude each other).
    BadControl(String),
    #[error("cannot determine the current directory: {0}")]
    /// The current directory is unreadable.
    Cwd(std::io::Error),
}

/// Finds the shim: `explicit` (`--shim`), else `$CLTRAP_SHIM`, else next to the running
/// executable (`<dir>/libcltrap.so`, then `<dir>/../lib/libcltrap.so`). Returns an
/// absolute path, since the application may change directory.
pub fn find_shim(explicit: Option<&Path>) -> Result<PathBuf, LaunchError> {
    let absolute = |p: &Path| -> Result<PathBuf, LaunchError> {
        if !p.is_file() {
            return Err(LaunchError::ShimMissing {
                path: p.to_path_buf(),
            });
        }
        Ok(p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
    };
    if let Some(p) = explicit {
        return absolute(p);
    }
    if let Some(p) = std::env::var_os(SHIM_ENV).filter(|v| !v.is_empty()) {
        return absolute(Path::new(&p));
    }
    let mut looked = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        for candidate in [
            dir.join(SHIM_NAME),
            dir.join("..").join("lib").join(SHIM_NAME),
        ] {
            if candidate.is_file() {
                return absolute(&candidate);
            }
            looked.push(candidate.display().to_string());
        }
    }
    Err(LaunchError::NoShim {
        looked: looked.join(", "),
    })
}

/// A request to run an application under the shim.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Controls given on the command line, with their values (passed as their env vars).
    pub controls: Vec<(Control, String)>,
    /// Absolute path of `libcltrap.so`.
    pub shim: PathBuf,
    /// The application and its arguments.
    pub command: Vec<OsString>,
}

/// What happened.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The application's exit code, or 128 + signal number.
    pub exit_code: i32,
    /// The capture directory (absolute).
    pub dir: PathBuf,
    /// One line: what was captured in this run.
    pub summary: String,
    /// Length of `DIR/coverage.jsonl` before the run: live coverage counters (`--coverage`)
    /// of this run start there.
    pub coverage_from: u64,
    /// Whether the capture is shared (`--share` / `CLTRAP_SHARE`): what `cltrap` itself adds
    /// to the capture (the live coverage report) follows the shim's rule for its files.
    pub share: bool,
}

/// `value` prepended to a `:`-separated list variable.
fn prepend(var: &str, value: &Path) -> OsString {
    let mut v = OsString::from(value.as_os_str());
    if let Some(old) = std::env::var_os(var).filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    v
}

struct DirState {
    launches: u64,
    blob_bytes: u64,
}

/// The launch log's lines, then those of its journals (records of a process that died before
/// moving its journal into the log: see `cltrap_capture::journal`); None without a log.
fn log_lines(dir: &Path) -> Option<Vec<u8>> {
    let mut bytes = std::fs::read(dir.join(cltrap_capture::LAUNCHES_FILE)).ok()?;
    bytes.extend(cltrap_capture::journal::pending_records(dir).unwrap_or_default());
    Some(bytes)
}

fn dir_state(dir: &Path) -> DirState {
    let launches = log_lines(dir)
        .map(|b| b.iter().filter(|c| **c == b'\n').count() as u64)
        .unwrap_or(0);
    let mut blob_bytes = 0;
    if let Ok(prefixes) = std::fs::read_dir(dir.join("blobs")) {
        for p in prefixes.flatten() {
            if let Ok(files) = std::fs::read_dir(p.path()) {
                blob_bytes += files
                    .flatten()
                    .filter_map(|f| f.metadata().ok())
                    .map(|m| m.len())
                    .sum::<u64>();
            }
        }
    }
    DirState {
        launches,
        blob_bytes,
    }
}

/// The number of distinct kernels among the launch records after the first `skip` lines of
/// the launch log, or `None` when the log cannot be read. Only the `kernel` field of each line
/// is decoded: a launch storm leaves a log of 100+ MB whose full parse (every argument and
/// content of every launch) would add seconds to the end of `cltrap run` just to print a count.
fn new_kernel_count(dir: &Path, skip: u64) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct KernelOnly<'a> {
        #[serde(borrow)]
        kernel: std::borrow::Cow<'a, str>,
    }
    let log = log_lines(dir)?;
    let mut names = std::collections::HashSet::new();
    for line in log.split(|b| *b == b'\n').skip(skip as usize) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // A torn last line (the application crashed mid-write) is not a launch.
        if let Ok(k) = serde_json::from_slice::<KernelOnly>(line) {
            names.insert(k.kernel.into_owned());
        }
    }
    Some(names.len())
}

/// Runs the application to completion and summarises the capture it produced.
/// `SIGINT`/`SIGQUIT` go to the application (same process group); `cltrap` waits for it
/// so the summary is still printed.
pub fn run(req: &RunRequest) -> Result<RunReport, LaunchError> {
    // The shim would only say so on the application's stderr, and only if it uses OpenCL.
    let values = req
        .controls
        .iter()
        .map(|(c, v)| (c.env, v.clone()))
        .collect();
    cltrap_capture::Settings::from_values(&values).map_err(LaunchError::BadControl)?;
    // What the shim will see: the environment's controls, overridden by the command line's.
    let mut seen: std::collections::HashMap<&str, String> = cltrap_capture::CONTROLS
        .iter()
        .filter_map(|c| std::env::var(c.env).ok().map(|v| (c.env, v)))
        .collect();
    seen.extend(values);
    let share = cltrap_capture::Settings::from_values(&seen).is_ok_and(|s| s.share);
    let cwd = std::env::current_dir().map_err(LaunchError::Cwd)?;
    let dir_value = req
        .controls
        .iter()
        .find(|(c, _)| c.env == "CLTRAP_DIR")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("CLTRAP_DIR").filter(|v| !v.is_empty()))
        .unwrap_or_else(|| {
            OsString::from(
                cltrap_capture::CONTROLS
                    .iter()
                    .find(|c| c.env == "CLTRAP_DIR")
                    .map(|c| c.default)
                    .unwrap_or("./cltrap-out"),
            )
        });
    let dir = cwd.join(PathBuf::from(dir_value));
    let before = dir_state(&dir);
    let coverage_from = std::fs::metadata(dir.join("coverage.jsonl")).map_or(0, |m| m.len());

    let program = req
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cmd = Command::new(req.command.first().cloned().unwrap_or_default());
    cmd.args(&req.command[1.min(req.command.len())..]);
    for (c, v) in &req.controls {
        cmd.env(c.env, v);
    }
    cmd.env("CLTRAP_DIR", &dir);
    // Live instrumentation: the shim asks this executable to instrument kernels.
    if let Ok(exe) = std::env::current_exe() {
        cmd.env("CLTRAP_BIN", exe);
    }
    cmd.env("LD_PRELOAD", prepend("LD_PRELOAD", &req.shim));
    cmd.env("OPENCL_LAYERS", prepend("OPENCL_LAYERS", &req.shim));
    // If cltrap itself is killed (a harness timeout), the application must not live on
    // unsupervised: the kernel sends it SIGTERM when its parent dies.
    crate::orphan::end_with_parent(&mut cmd, libc::SIGTERM);
    // `full`: the application spools its contents raw; this process compacts them on its
    // own threads while it runs, and says at the start what disk budget it has.
    seen.insert("CLTRAP_DIR", dir.to_string_lossy().into_owned());
    let settings = cltrap_capture::Settings::from_values(&seen).ok();
    let compactor = settings.as_ref().and_then(|s| {
        (s.capture && s.buffers == cltrap_capture::BufferMode::Full).then(|| {
            if s.stats.is_none() {
                eprintln!("cltrap: {}", s.budget_line());
            }
            crate::compact::Background::start(&dir)
        })
    });
    let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
        program: program.clone(),
        source,
    })?;
    // SAFETY: changing signal dispositions of this process; the child has its own.
    let old = unsafe {
        (
            libc::signal(libc::SIGINT, libc::SIG_IGN),
            libc::signal(libc::SIGQUIT, libc::SIG_IGN),
        )
    };
    let status = child.wait();
    // SAFETY: restoring what was there.
    unsafe {
        libc::signal(libc::SIGINT, old.0);
        libc::signal(libc::SIGQUIT, old.1);
    }
    if let Some(c) = compactor {
        // The application is gone: what is left of the spool is all the work there is (on
        // every core: `finish` allows them).
        match c.finish() {
            Ok(r) if r.said() => {
                eprintln!("cltrap: {}", r.line(&dir));
                for p in &r.problems {
                    eprintln!("cltrap: {p}");
                }
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("cltrap: {e}; the contents stay in the spool (`cltrap compact` retries)")
            }
        }
    }
    let status = status.map_err(|source| LaunchError::Spawn { program, source })?;
    let exit_code = match status.code() {
        Some(c) => c,
        None => {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
    };
    let after = dir_state(&dir);
    let new = after.launches.saturating_sub(before.launches);
    let summary = if new == 0 {
        format!(
            "no OpenCL launches were captured (capture directory {})",
            dir.display()
        )
    } else {
        let kernels = new_kernel_count(&dir, before.launches)
            .map_or_else(|| "?".to_string(), |n| n.to_string());
        format!(
            "captured {new} launch{} of {kernels} kernel(s), {} stored, in {}",
            if new == 1 { "" } else { "es" },
            crate::values::human_bytes(after.blob_bytes.saturating_sub(before.blob_bytes)),
            dir.display()
        )
    };
    Ok(RunReport {
        exit_code,
        dir,
        summary,
        coverage_from,
        share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_missing_shim_is_named() {
        let e = find_shim(Some(Path::new("/nonexistent/libcltrap.so"))).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/libcltrap.so"), "{e}");
    }

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

    fn run_sh(dir: &Path, script: &str) -> RunReport {
        let req = RunRequest {
            controls: vec![
                (cltrap_capture::CONTROLS[0], dir.display().to_string()),
                (
                    *cltrap_capture::CONTROLS
                        .iter()
                        .find(|c| c.env == "CLTRAP_BUFFERS")
                        .unwrap(),
                    "hash".into(),
                ),
            ],
            shim: stand_in_shim(),
            command: vec!["sh".into(), "-c".into(), script.into()],
        };
        run(&req).unwrap()
    }

    #[test]
    fn exit_codes_and_signals_are_forwarded() {
        // A private, fresh folder (no predictable name in the shared temporary folder).
        let tmp = tempfile::Builder::new()
            .prefix("cltrap-launch-")
            .tempdir()
            .expect("temporary folder");
        let dir = tmp.path().join("cap");
        assert_eq!(run_sh(&dir, "exit 7").exit_code, 7);
        assert_eq!(run_sh(&dir, "kill -TERM $$").exit_code, 128 + 15);
        let r = run_sh(&dir, "exit 0");
        assert!(
            r.summary.contains("no OpenCL launches were captured"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn controls_and_both_doors_reach_the_application() {
        let tmp = tempfile::Builder::new()
            .prefix("cltrap-env-")
            .tempdir()
            .expect("temporary folder");
        let dir = tmp.path().join("cap");
        let shim = stand_in_shim();
        let script = format!(
            "test \"$CLTRAP_DIR\" = '{}' || exit 3; test \"$CLTRAP_BUFFERS\" = hash || exit 4; \
             case \"$LD_PRELOAD\" in '{}'*) ;; *) exit 5;; esac; \
             case \"$OPENCL_LAYERS\" in '{}'*) exit 0;; esac; exit 6",
            dir.display(),
            shim.display(),
            shim.display()
        );
        assert_eq!(run_sh(&dir, &script).exit_code, 0);
    }
}
