//! The clang binary TCE compiles with: found once per process (`CLTRAP_CLANG`, else the first
//! of [`CANDIDATES`] on `PATH`), and run on one source with a deadline.
//!
//! Why a binary and not libclang: libclang parses but does not optimise or emit IR, and the
//! optimiser is the whole point of Trivial Compiler Equivalence. Debian's `libpocl2` depends on
//! `clang-15`, so the binary is there wherever PoCL is.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::TceError;

/// Environment variable naming the clang binary to use (a name on `PATH` or a path).
pub const CLANG_ENV: &str = "CLTRAP_CLANG";

/// Binaries tried in order when [`CLANG_ENV`] is not set: the one PoCL depends on first.
pub const CANDIDATES: &[&str] = &[
    "clang-15", "clang-14", "clang-16", "clang-17", "clang-18", "clang-19", "clang-20", "clang",
];

/// The clang binary TCE runs, with its version for reasons shown to users
/// ("same optimised LLVM IR as the original (clang 15, -O2)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClangInfo {
    /// What was run: the name found on `PATH` or the path from [`CLANG_ENV`].
    pub program: PathBuf,
    /// Full version (`15.0.6`).
    pub version: String,
    /// Major version (`15`).
    pub major: u32,
}

/// Finds the clang binary once per process; later calls return the same answer.
pub fn clang_available() -> Result<ClangInfo, TceError> {
    static FOUND: OnceLock<Result<ClangInfo, TceError>> = OnceLock::new();
    FOUND.get_or_init(find).clone()
}

/// Checks one binary (a name on `PATH` or a path), without the process-wide choice.
pub fn clang_at(program: &Path) -> Result<ClangInfo, TceError> {
    probe(program).ok_or_else(|| TceError::NoClang {
        tried: program.display().to_string(),
    })
}

fn find() -> Result<ClangInfo, TceError> {
    if let Some(chosen) = std::env::var_os(CLANG_ENV).filter(|v| !v.is_empty()) {
        let program = PathBuf::from(chosen);
        return probe(&program).ok_or_else(|| TceError::NoClang {
            tried: format!("{CLANG_ENV}={}", program.display()),
        });
    }
    CANDIDATES
        .iter()
        .find_map(|name| probe(Path::new(name)))
        .ok_or_else(|| TceError::NoClang {
            tried: CANDIDATES.join(", "),
        })
}

/// Runs `program --version` and reads `clang version X.Y.Z` from it.
fn probe(program: &Path) -> Option<ClangInfo> {
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)?
        .to_string();
    let major = version.split('.').next()?.parse().ok()?;
    Some(ClangInfo {
        program: program.to_path_buf(),
        version,
        major,
    })
}

/// Runs clang with `args`, feeding `stdin` (named `file_name` in messages), and returns its stdout; a non-zero exit is a
/// compile error carrying clang's first error line; past `timeout` the process is killed.
pub(crate) fn run(
    clang: &ClangInfo,
    args: &[String],
    stdin: &str,
    file_name: &str,
    timeout: Duration,
) -> Result<String, TceError> {
    let spawn_err = |e: std::io::Error| TceError::Spawn {
        program: clang.program.display().to_string(),
        message: e.to_string(),
    };
    let mut child = Command::new(&clang.program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = std::thread::scope(|s| {
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let out_reader = s.spawn(|| drain(stdout, &mut out));
        let err_reader = s.spawn(|| drain(stderr, &mut err));
        // Clang reads its whole input before it writes anything, so writing first cannot
        // deadlock; a write error means clang exited early, which its status then tells.
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        let status = wait_until(&mut child, timeout);
        let _ = out_reader.join();
        let _ = err_reader.join();
        status
    });
    match status {
        Some(Ok(s)) if s.success() => String::from_utf8(out).map_err(|_| TceError::BadOutput),
        Some(Ok(_)) => Err(compile_error(&String::from_utf8_lossy(&err), file_name)),
        Some(Err(e)) => Err(spawn_err(e)),
        None => Err(TceError::Timeout {
            seconds: timeout.as_secs_f64(),
        }),
    }
}

fn drain<R: Read>(pipe: Option<R>, into: &mut Vec<u8>) {
    if let Some(mut p) = pipe {
        let _ = p.read_to_end(into);
    }
}

/// Waits for `child`; `None` when it ran past `timeout` (it is then killed and reaped).
fn wait_until(
    child: &mut Child,
    timeout: Duration,
) -> Option<std::io::Result<std::process::ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(Ok(status)),
            Err(e) => return Some(Err(e)),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// The first `error:` line of clang's diagnostics (`<stdin>` named `file_name`), and how many.
fn compile_error(stderr: &str, file_name: &str) -> TceError {
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("error:"))
        .map(str::trim)
        .collect();
    let first = errors
        .first()
        .copied()
        .or_else(|| stderr.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("clang failed without a message");
    TceError::Compile {
        message: first.replacen("<stdin>", file_name, 1),
        errors: errors.len().max(1),
    }
}
