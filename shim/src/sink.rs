//! Where launches go: the capture directory, created at the first recorded launch, and the
//! one-time reporting of anything that went wrong (the application itself carries on).

use crate::say::report_once;
use cltrap_capture::{CaptureWriter, Manifest, WriteError, FORMAT_NAME, FORMAT_VERSION};
use once_cell::sync::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering};

static WRITER: OnceCell<Option<CaptureWriter>> = OnceCell::new();
static BROKEN: AtomicBool = AtomicBool::new(false);
static IO_REPORTED: AtomicBool = AtomicBool::new(false);

/// Stops recording for the rest of the process after an I/O failure, saying why once.
pub fn fail(e: &WriteError) {
    BROKEN.store(true, Ordering::Relaxed);
    if !IO_REPORTED.swap(true, Ordering::Relaxed) {
        crate::say::say(&format!(
            "{e}; capture stopped, the application continues unchanged"
        ));
    }
}

/// Whether recording still works (false after an I/O failure).
pub fn healthy() -> bool {
    !BROKEN.load(Ordering::Relaxed)
}

/// The capture writer, created on first use (None when capture is off or creation failed).
pub fn writer() -> Option<&'static CaptureWriter> {
    if !healthy() {
        return None;
    }
    WRITER
        .get_or_init(|| {
            let settings = crate::state::settings()?;
            crate::core::watch_forks();
            match CaptureWriter::create_with(&settings.dir, &manifest(settings), access(settings)) {
                Ok(w) => {
                    // Records go through a journal mapped into memory: no `write` call at
                    // each `clFinish` (the writer thread moves it into the log). Without
                    // one, they are written to the log as before.
                    if let Err(e) = w.enable_journal() {
                        report_once(&format!("{e}; launches are written to the log directly"));
                    }
                    // `full`: large contents go raw to the spool, for a `cltrap` process to
                    // compact (cutting and compressing them here made the application wait;
                    // this library does not even contain a compressor). Without a spool they
                    // are stored whole, uncompressed.
                    if settings.buffers == cltrap_capture::BufferMode::Full {
                        if let Err(e) = w.blobs.enable_spool(settings.spool_max_bytes) {
                            report_once(&format!(
                                "{e}; large contents are stored whole and uncompressed"
                            ));
                        }
                    }
                    if settings.stats.is_some() {
                        crate::say::say(&settings.budget_line());
                    }
                    Some(w)
                }
                Err(e) => {
                    fail(&e);
                    None
                }
            }
        })
        .as_ref()
}

/// Who may read the capture's files (`CLTRAP_SHARE`; by default only this user).
pub fn access(settings: &cltrap_capture::Settings) -> cltrap_capture::writer_fs::Access {
    cltrap_capture::writer_fs::Access {
        share: settings.share,
    }
}

/// The capture writer if one was created; never creates one (for exit handlers).
pub fn existing_writer() -> Option<&'static CaptureWriter> {
    WRITER.get().and_then(Option::as_ref)
}

fn manifest(settings: &cltrap_capture::Settings) -> Manifest {
    let argv = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        writer: format!("cltrap-shim {}", env!("CARGO_PKG_VERSION")),
        pid: std::process::id(),
        argv,
        started_unix,
        buffer_mode: settings.buffers.as_str().into(),
    }
}
