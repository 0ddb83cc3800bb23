//! Running programs (natively, under `cltrap run`, with the shim preloaded or as a loader
//! layer) and what one run did: exit, stdout bytes, stderr text.

use crate::paths::tools;
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may run before the harness kills it and fails the test; generous,
/// because PoCL compiles kernels slowly on a 2-core machine and tests run in parallel.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// Environment variables that must not leak from the outer environment into a native run
/// (or change a captured run behind the test's back).
const SCRUBBED_ENV: &[&str] = &["LD_PRELOAD", "OPENCL_LAYERS"];

/// What one process did: exit status, stdout bytes, stderr text.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The command line, for failure messages.
    pub command: String,
    /// Exit code, when the process exited normally.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// Raw stdout bytes: compared byte for byte between native and captured runs.
    pub stdout: Vec<u8>,
    /// stderr as text (lossy); the shim's `cltrap:` lines are looked for here.
    pub stderr: String,
    /// Wall time, for failure messages.
    pub elapsed: Duration,
}

impl Outcome {
    /// stdout as text (lossy), for assertions on printed lines.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// True when the process exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// How the process ended, normalised so that "killed by signal N" and a launcher's
    /// "exit code 128+N" compare equal (a launcher cannot die of its child's signal).
    pub fn ending(&self) -> String {
        match (self.code, self.signal) {
            (_, Some(s)) => format!("signal {s}"),
            (Some(c), None) if c > 128 && c < 128 + 65 => format!("signal {}", c - 128),
            (Some(c), None) => format!("exit {c}"),
            (None, None) => "unknown".into(),
        }
    }

    /// Everything about the run, for the message of a failed assertion (long outputs are
    /// cut to their first and last lines).
    pub fn describe(&self) -> String {
        format!(
            "command: {}\nended: {} (after {:.1}s)\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.ending(),
            self.elapsed.as_secs_f64(),
            abridge(&self.stdout_text()),
            abridge(&self.stderr)
        )
    }

    /// Panics with the whole story unless the process exited 0.
    pub fn expect_success(self) -> Outcome {
        assert!(self.success(), "expected success\n{}", self.describe());
        self
    }

    /// Panics if any Rust panic message leaked into the output (a panic is never a clear error).
    pub fn assert_no_panic(&self) {
        let all = format!("{}{}", self.stdout_text(), self.stderr);
        assert!(
            !all.contains("panicked") && !all.contains("RUST_BACKTRACE"),
            "a panic reached the user\n{}",
            self.describe()
        );
    }
}

/// The first 60 and last 40 lines of a long text, with a note of what was left out.
fn abridge(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 120 {
        return text.to_string();
    }
    format!(
        "{}\n... ({} lines left out) ...\n{}",
        lines[..60].join("\n"),
        lines.len() - 100,
        lines[lines.len() - 40..].join("\n")
    )
}

/// PoCL's kernel cache for the processes of the calling test: a slot of a pool, held by the
/// test's thread (the harness runs each test on a thread of its own) from its first process
/// to its end, so no two running tests ever share one, while tests that run one after another
/// reuse what their predecessors compiled. Why one at a time: PoCL's cache is not safe for
/// processes that build the same kernel at the same moment (pocl/pocl#430, #1480), which
/// parallel tests of one fixture do; a cold cache, as on a fresh CI machine, once killed a
/// pyopencl reproducer with SIGBUS. A test's own processes run one after another and share it.
/// Why a pool rather than a cache per test: a fixture's kernels took 1.7 s to build cold and
/// 0.1 s from the cache on the 2-core CI machine, and most tests build one cold.
fn pocl_cache_dir() -> std::path::PathBuf {
    thread_local! {
        static SLOT: std::cell::RefCell<Option<(std::path::PathBuf, std::fs::File)>> =
            const { std::cell::RefCell::new(None) };
    }
    SLOT.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(take_cache_slot());
        }
        slot.as_ref()
            .map(|(dir, _)| dir.clone())
            .unwrap_or_default()
    })
}

/// The first slot of the pool under `pocl-cache/` that no running test holds: its folder, and
/// its lock file, locked (released when the file is closed, with the test's thread).
fn take_cache_slot() -> (std::path::PathBuf, std::fs::File) {
    use std::os::fd::AsRawFd;
    let base = crate::paths::e2e_dir().join("pocl-cache");
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", base.display()));
    for k in 0.. {
        let lock_path = base.join(format!("slot-{k}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", lock_path.display()));
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return (base.join(format!("slot-{k}")), lock);
        }
    }
    unreachable!("the pool has a free slot past every held one")
}

/// Runs `program args` with `env` added (and LD_PRELOAD / OPENCL_LAYERS / CLTRAP_* removed
/// unless given), captures its output, and kills it past [`COMMAND_TIMEOUT`].
pub fn run_with_env<S: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[S],
    env: &[(&str, &OsStr)],
    cwd: Option<&Path>,
) -> Outcome {
    let program = program.as_ref();
    let mut cmd = Command::new(program);
    cmd.args(args);
    for (k, _) in std::env::vars_os() {
        if let Some(k) = k.to_str() {
            if SCRUBBED_ENV.contains(&k) || k.starts_with("CLTRAP_") {
                cmd.env_remove(k);
            }
        }
    }
    cmd.env("POCL_CACHE_DIR", pocl_cache_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut command = program.to_string_lossy().into_owned();
    for a in args {
        command.push(' ');
        command.push_str(&a.as_ref().to_string_lossy());
    }
    if !env.is_empty() {
        let prefix: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k}={}", v.to_string_lossy()))
            .collect();
        command = format!("{} {command}", prefix.join(" "));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut v);
        }
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut v);
        }
        v
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > COMMAND_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`{command}` did not finish within {COMMAND_TIMEOUT:?}; killed it");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("cannot wait for `{command}`: {e}"),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    use std::os::unix::process::ExitStatusExt;
    Outcome {
        command,
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        elapsed: start.elapsed(),
    }
}

/// Runs a program natively: no shim, no cltrap variables.
pub fn run_native<S: AsRef<OsStr>>(program: impl AsRef<OsStr>, args: &[S]) -> Outcome {
    run_with_env(program, args, &[], None)
}

/// Runs `cltrap ARGS`, telling it which shim to load (`CLTRAP_SHIM`), so `cltrap run` and the
/// tests that preload the shim directly always use the same library.
pub fn cltrap<S: AsRef<OsStr>>(args: &[S]) -> Outcome {
    let t = tools();
    run_with_env(
        &t.cltrap,
        args,
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        None,
    )
}

/// Runs `cltrap ARGS` like [`cltrap`], in the working directory `cwd`.
pub fn cltrap_in<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Outcome {
    let t = tools();
    run_with_env(
        &t.cltrap,
        args,
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        Some(cwd),
    )
}

/// Runs `cltrap run --out DIR FLAGS -- program args`: the documented way to capture.
pub fn run_captured<S: AsRef<OsStr>>(
    dir: &Path,
    flags: &[&str],
    program: impl AsRef<OsStr>,
    args: &[S],
) -> Outcome {
    let mut all: Vec<std::ffi::OsString> = vec!["run".into(), "--out".into(), dir.into()];
    all.extend(flags.iter().map(|f| f.into()));
    all.push("--".into());
    all.push(program.as_ref().to_os_string());
    all.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    cltrap(&all)
}

/// Counter `name` of the `CLTRAP_STATS` JSON that [`run_captured_with_stats`] returns (the
/// test fails if it is not there).
pub fn counter(stats: &serde_json::Value, name: &str) -> u64 {
    stats[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {stats}"))
}

/// [`run_captured`] with `--stats FILE` added: the outcome and the shim's counters (the JSON it
/// writes at exit; Null when it wrote none, which the caller's assertions then show).
pub fn run_captured_with_stats<S: AsRef<OsStr>>(
    dir: &Path,
    flags: &[&str],
    program: impl AsRef<OsStr>,
    args: &[S],
) -> (Outcome, serde_json::Value) {
    let stats = dir.with_extension("stats.json");
    let stats_s = stats.to_string_lossy().into_owned();
    let mut all: Vec<&str> = flags.to_vec();
    all.extend(["--stats", &stats_s]);
    let out = run_captured(dir, &all, program, args);
    let counters = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, counters)
}

/// Runs a program with the shim preloaded directly (`LD_PRELOAD=libcltrap.so`), without the
/// `cltrap run` launcher: the first door into the application, tested on its own.
pub fn run_preloaded<S: AsRef<OsStr>>(
    dir: &Path,
    extra_env: &[(&str, &OsStr)],
    program: impl AsRef<OsStr>,
    args: &[S],
) -> Outcome {
    let mut env: Vec<(&str, &OsStr)> = vec![
        ("LD_PRELOAD", tools().shim.as_os_str()),
        ("CLTRAP_DIR", dir.as_os_str()),
    ];
    env.extend_from_slice(extra_env);
    run_with_env(program, args, &env, None)
}

/// Runs a program with the shim named only in `OPENCL_LAYERS` (no preload): the second
/// door, the ICD loader's layer mechanism.
pub fn run_as_layer<S: AsRef<OsStr>>(
    dir: &Path,
    program: impl AsRef<OsStr>,
    args: &[S],
) -> Outcome {
    let env: Vec<(&str, &OsStr)> = vec![
        ("OPENCL_LAYERS", tools().shim.as_os_str()),
        ("CLTRAP_DIR", dir.as_os_str()),
    ];
    run_with_env(program, args, &env, None)
}
