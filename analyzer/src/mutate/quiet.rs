//! Keeps what an in-process OpenCL compiler prints off the terminal.
//!
//! Why: drivers such as PoCL compile with an in-process clang that writes its diagnostics
//! ("3 errors generated.", paths of the driver's temporary files) straight to file
//! descriptor 2. A mutant schema that does not compile is expected (the campaign falls back to
//! one compile per mutant and says so in a note), so that text would only confuse. While a
//! build runs, descriptor 2 points at a log file in the campaign's output directory instead;
//! the note names the file, and the build's own log is in the error text.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Descriptor 2 saved while it points at a log file; restored on drop (also on a panic).
struct Redirect {
    saved: libc::c_int,
}

impl Drop for Redirect {
    fn drop(&mut self) {
        // SAFETY: `saved` is a descriptor this guard owns (from `dup`).
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}

/// Runs `f` with this process's standard error appended to `log`. When the log cannot be
/// opened or the descriptor not redirected, `f` runs with standard error as it is.
pub(crate) fn stderr_to<T>(log: &Path, f: impl FnOnce() -> T) -> T {
    let _ = std::io::stderr().flush();
    // Not through a link planted at the log's name (the default output folder is inside the
    // capture, which is untrusted); a FIFO there is not waited on.
    let guard = cltrap_capture::safe_open::open_regular(
        log,
        cltrap_capture::safe_open::Open::Append,
        cltrap_capture::writer_fs::Access::PRIVATE,
    )
    .ok()
    .and_then(|file| {
        // SAFETY: plain descriptor calls; `file` stays open until `dup2` has copied it.
        unsafe {
            let saved = libc::dup(2);
            if saved < 0 {
                return None;
            }
            if libc::dup2(file.as_raw_fd(), 2) < 0 {
                libc::close(saved);
                return None;
            }
            Some(Redirect { saved })
        }
    });
    let out = f();
    drop(guard);
    out
}

#[cfg(test)]
mod tests {
    use crate::executor::{DeviceSelector, Session};

    #[test]
    fn a_failing_build_prints_into_the_log_not_on_standard_error() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        let dir = tempfile::tempdir().expect("temporary folder");
        let log = dir.path().join("build.log");
        let r = super::stderr_to(&log, || {
            session.build_source("__kernel void k(__global int* o) { o[0] = (1; }", "")
        });
        assert!(r.is_err());
        let text = std::fs::read_to_string(&log).expect("log written");
        assert!(text.contains("error"), "{text:?}");
    }
}
