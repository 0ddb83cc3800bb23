//! Harness for cltrap's end-to-end tests: real host programs, run natively and under the real
//! shim on the real OpenCL runtime (PoCL here), then listed and replayed with the real CLI.
//!
//! What it is for: building the C fixtures in `tests/apps/`, running a program natively and
//! under `cltrap run`, comparing the two runs, and reading the capture back (through the
//! `cltrap-capture` crate, so tests can assert on exact records, not only on printed text).
//! What it is not for: mocking anything. Every assertion here is about what really ran.
//!
//! Binaries are found in `$CARGO_TARGET_DIR/release/` or `<workspace>/target/release/`;
//! `CLTRAP_BIN` and `CLTRAP_SHIM` override them. Build products of the fixtures and all
//! capture directories live under `<target>/e2e/`, never in the source tree.

use cltrap_capture::{ArgRecord, Capture, Content, LaunchRecord};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long one command may run before the harness kills it and fails the test; generous,
/// because PoCL compiles kernels slowly on a 2-core machine and tests run in parallel.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// Environment variables that must not leak from the outer environment into a native run
/// (or change a captured run behind the test's back).
const SCRUBBED_ENV: &[&str] = &["LD_PRELOAD", "OPENCL_LAYERS"];

/// The workspace root (the parent of this crate), so fixtures are found wherever tests run.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// Cargo's target directory: where the release binaries are and where test output goes.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d
            } else {
                workspace_root().join(d)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// Root of everything the tests write: `<target>/e2e`.
pub fn e2e_dir() -> PathBuf {
    target_dir().join("e2e")
}

/// `tests/apps`, `tests/kernels`, `tests/py`: the fixture sources.
pub fn fixture_source_dir(kind: &str) -> PathBuf {
    workspace_root().join("tests").join(kind)
}

/// The two release products every test needs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `cltrap` CLI.
    pub cltrap: PathBuf,
    /// `libcltrap.so`, the shim.
    pub shim: PathBuf,
}

/// Locates `cltrap` and `libcltrap.so` once; panics with the one instruction that fixes it
/// when they are missing, so a forgotten build is not mistaken for a cltrap bug.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let release = target_dir().join("release");
        let pick = |env: &str, default: PathBuf| -> PathBuf {
            match std::env::var_os(env) {
                Some(v) if !v.is_empty() => PathBuf::from(v),
                _ => default,
            }
        };
        let cltrap = pick("CLTRAP_BIN", release.join("cltrap"));
        let shim = pick("CLTRAP_SHIM", release.join("libcltrap.so"));
        for (what, path) in [
            ("the cltrap CLI", &cltrap),
            ("the shim libcltrap.so", &shim),
        ] {
            assert!(
                path.is_file(),
                "{what} is missing at {}: run `cargo build --release --workspace` first \
                 (or point CLTRAP_BIN / CLTRAP_SHIM at it)",
                path.display()
            );
        }
        Tools { cltrap, shim }
    })
}

/// A fresh, empty directory under `<target>/e2e/<kind>/` whose name says which test owns it;
/// unique per process and call, so tests running in parallel never share one.
pub fn fresh_dir(kind: &str, label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = e2e_dir()
        .join(kind)
        .join(format!("{label}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create test directory {}: {e}", dir.display()));
    dir
}

/// A capture directory that does not exist yet (the shim must create it), removed again
/// when the test that owns it passes and kept for inspection when it fails (or always, with
/// `CLTRAP_E2E_KEEP=1`).
pub fn fresh_capture_dir(label: &str) -> TestDir {
    let parent = fresh_dir("caps", label);
    TestDir {
        path: parent.join("cap"),
        owned: parent,
    }
}

/// A test's capture directory; derefs to its path.
#[derive(Debug)]
pub struct TestDir {
    path: PathBuf,
    owned: PathBuf,
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for TestDir {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let keep = std::env::var_os("CLTRAP_E2E_KEEP").is_some_and(|v| v == "1");
        if !std::thread::panicking() && !keep {
            let _ = std::fs::remove_dir_all(&self.owned);
        }
    }
}

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

/// The transparency contract: the application ended the same way and printed exactly the
/// same stdout with and without the shim.
pub fn assert_same_behaviour(native: &Outcome, captured: &Outcome) {
    assert_eq!(
        native.ending(),
        captured.ending(),
        "the application ended differently under the shim\n=== native ===\n{}\n=== captured ===\n{}",
        native.describe(),
        captured.describe()
    );
    assert!(
        native.stdout == captured.stdout,
        "stdout differs under the shim\n=== native ===\n{}\n=== captured ===\n{}",
        native.describe(),
        captured.describe()
    );
}

/// Opens a capture with the format crate, failing the test with the reader's own sentence.
pub fn open_capture(dir: &Path) -> Capture {
    Capture::open(dir).unwrap_or_else(|e| panic!("capture {} cannot be read: {e}", dir.display()))
}

/// Lines of `cltrap replay` output that report a launch as `ok`: the verdict is the line's
/// last word (`launch 3 vadd: ok`); a summary line that counts `N ok` is not one.
pub fn ok_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| words(l).last() == Some("ok"))
        .count()
}

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Replays every launch of the capture and checks that each one is reported `ok`, that
/// there are exactly `expected` of them, and that the replay exits 0.
pub fn assert_replays_ok(dir: &Path, expected: usize) -> Outcome {
    let out = cltrap(&[OsStr::new("replay"), dir.as_os_str()]);
    out.assert_no_panic();
    assert!(out.success(), "cltrap replay failed\n{}", out.describe());
    let ok = ok_lines(&out.stdout_text());
    assert_eq!(
        ok,
        expected,
        "expected {expected} launches replayed ok\n{}",
        out.describe()
    );
    out
}

/// Replays the given launch ids (`cltrap replay DIR ID...`) and checks each is reported `ok`.
pub fn assert_replay_ids_ok(dir: &Path, ids: &[u64]) -> Outcome {
    let mut args: Vec<std::ffi::OsString> = vec!["replay".into(), dir.into()];
    args.extend(ids.iter().map(|i| i.to_string().into()));
    let out = cltrap(&args);
    out.assert_no_panic();
    assert!(
        out.success(),
        "cltrap replay of ids {ids:?} failed\n{}",
        out.describe()
    );
    assert_eq!(
        ok_lines(&out.stdout_text()),
        ids.len(),
        "ids {ids:?}\n{}",
        out.describe()
    );
    out
}

/// `cltrap list DIR` must show one line per launch naming its id, kernel and global size.
pub fn assert_list_shows(dir: &Path, capture: &Capture) -> Outcome {
    let out = cltrap(&[OsStr::new("list"), dir.as_os_str()]);
    out.assert_no_panic();
    assert!(out.success(), "cltrap list failed\n{}", out.describe());
    let text = out.stdout_text();
    // Index the lines by every number they hold, so big captures are checked in linear time.
    let lines: Vec<(Vec<u64>, &str)> = text.lines().map(|l| (numbers(l), l)).collect();
    let mut by_number: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, (nums, _)) in lines.iter().enumerate() {
        for n in nums {
            by_number.entry(*n).or_default().push(i);
        }
    }
    for l in &capture.launches {
        let candidates = by_number.get(&l.id).map(Vec::as_slice).unwrap_or(&[]);
        let shown = candidates.iter().any(|&i| {
            let (nums, line) = &lines[i];
            words(line).any(|w| w == l.kernel) && l.global_size.iter().all(|g| nums.contains(g))
        });
        assert!(
            shown,
            "cltrap list does not show launch {} ({} global {:?})\n{}",
            l.id,
            l.kernel,
            l.global_size,
            out.describe()
        );
    }
    out
}

/// A capture that went well adds nothing to the application's stderr but the launcher's
/// one summary line (the driver's compiler chatter aside: it depends on PoCL's kernel cache).
pub fn assert_quiet_capture(native: &Outcome, captured: &Outcome) {
    let mut extra: Vec<&str> = meaningful_stderr_lines(&captured.stderr);
    let summary = extra.pop();
    assert!(
        summary.is_some_and(|l| l.starts_with("cltrap:")),
        "`cltrap run` ends with its summary line\n{}",
        captured.describe()
    );
    assert_eq!(
        extra,
        meaningful_stderr_lines(&native.stderr),
        "the capture wrote to the application's stderr\n{}",
        captured.describe()
    );
}

/// The whole round trip for one fixture: run it natively (it must succeed), run it under
/// `cltrap run` (same ending, same stdout), read the capture, check that `cltrap list`
/// shows every launch and that `cltrap replay` reports every launch `ok`.
pub fn round_trip(name: &str, args: &[&str], flags: &[&str]) -> (TestDir, Capture) {
    let exe = fixture(name);
    let native = run_native(&exe, args).expect_success();
    let dir = fresh_capture_dir(name);
    let captured = run_captured(&dir, flags, &exe, args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    if flags.is_empty() {
        assert_full_contents(&cap);
    }
    assert!(
        !cap.launches.is_empty(),
        "the capture of {name} holds no launches\n{}",
        captured.describe()
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, cap.launches.len());
    (dir, cap)
}

/// In the default buffer mode every buffer and image argument of a replayable launch has
/// its contents before and after stored, so that replay really compares something.
pub fn assert_full_contents(cap: &Capture) {
    for l in cap.launches.iter().filter(|l| l.not_replayable.is_empty()) {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                assert!(
                    matches!(before, Content::Blob { .. }) && matches!(after, Content::Blob { .. }),
                    "launch {} ({}) argument {} lacks stored contents: before {before:?}, after {after:?}",
                    l.id,
                    l.kernel,
                    a.info().index
                );
            }
        }
    }
}

/// Rewrites launch `id` of the capture in `dir` in place (as a user or tool editing a
/// capture would), keeping every other record byte for byte.
pub fn rewrite_launch(dir: &Path, id: u64, edit: impl FnOnce(&mut LaunchRecord)) {
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", log.display()));
    let mut edit = Some(edit);
    let mut out = String::new();
    for line in text.lines() {
        let mut record: LaunchRecord = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{} holds a bad record: {e}", log.display()));
        if record.id == id {
            if let Some(f) = edit.take() {
                f(&mut record);
            }
            out.push_str(&serde_json::to_string(&record).expect("a record encodes"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    assert!(edit.is_none(), "launch {id} is not in {}", log.display());
    std::fs::write(&log, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", log.display()));
}

/// Launch counts per kernel name, for exact comparisons.
pub fn kernel_counts(cap: &Capture) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for l in &cap.launches {
        *m.entry(l.kernel.clone()).or_insert(0) += 1;
    }
    m
}

/// Kernel names in capture order.
pub fn kernel_sequence(cap: &Capture) -> Vec<String> {
    cap.launches.iter().map(|l| l.kernel.clone()).collect()
}

/// The launches of one kernel, in capture order.
pub fn launches_of<'a>(cap: &'a Capture, kernel: &str) -> Vec<&'a LaunchRecord> {
    cap.launches.iter().filter(|l| l.kernel == kernel).collect()
}

/// Decodes a scalar argument's recorded bytes (hex) into bytes.
pub fn scalar_bytes(arg: &ArgRecord) -> Option<Vec<u8>> {
    match arg {
        ArgRecord::Scalar { bytes, .. } => {
            let b = bytes.as_bytes();
            if b.len() % 2 != 0 {
                return None;
            }
            b.chunks(2)
                .map(|p| {
                    std::str::from_utf8(p)
                        .ok()
                        .and_then(|s| u8::from_str_radix(s, 16).ok())
                })
                .collect()
        }
        _ => None,
    }
}

/// A scalar `int` argument's value (little-endian, as the host passed it).
pub fn scalar_i32(arg: &ArgRecord) -> Option<i32> {
    let b = scalar_bytes(arg)?;
    Some(i32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// The `before` and `after` contents of a buffer or image argument.
pub fn contents(arg: &ArgRecord) -> Option<(&Content, &Content)> {
    match arg {
        ArgRecord::Buffer { before, after, .. } | ArgRecord::Image { before, after, .. } => {
            Some((before, after))
        }
        _ => None,
    }
}

/// Says on the real stderr (not swallowed by the test harness's output capture) that a test
/// skipped its work and why; only for reasons outside cltrap (a program not installed,
/// PyPI unreachable).
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
}

/// Total size in bytes of all regular files under `dir` (0 if it does not exist).
pub fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => total += dir_size(&p),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// Lines of `text` that the shim or CLI wrote (they start with `cltrap:`).
pub fn cltrap_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("cltrap:"))
        .collect()
}

/// The `cltrap:` lines of a `cltrap run`'s stderr that came from the shim: all but the
/// launcher's own summary, which `cltrap run` prints as its last line after the app exits.
pub fn shim_lines_of_launcher_run(stderr: &str) -> Vec<&str> {
    let mut lines = cltrap_lines(stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    if last.is_some() && lines.last().copied() == last {
        lines.pop();
    }
    lines
}

/// Non-empty lines of stderr, ignoring the compiler chatter PoCL prints while building
/// kernels ("2 warnings generated."), which is not cltrap's.
pub fn meaningful_stderr_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !(l.ends_with("generated.") && (l.contains("warning") || l.contains("error"))))
        .collect()
}
