//! `cltrap run`'s compactor: a thread of its own, at a low CPU priority, compacting while the
//! application runs, and the last pass on every core once it exited.

use super::{access_of, compact, has_spool, CompactError, Compactor, Report};
use cltrap_capture::parallel;
use cltrap_capture::spool::{self, SPOOL_DIR};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A compactor running on its own thread while `cltrap run`'s application runs.
pub struct Background {
    stop: Arc<AtomicBool>,
    /// None when no thread could be started: [`Background::finish`] then compacts it all.
    thread: Option<std::thread::JoinHandle<Compacted>>,
    dir: PathBuf,
}

/// The background compactor's thread name (what `ps -L` and `/proc/PID/task/*/comm` show).
pub const THREAD_NAME: &str = "cltrap-compact";

/// What the background thread hands [`Background::finish`] for the last pass: its compactor
/// and the compactor lock it holds.
type Handover = (Compactor, spool::CompactorLock);

/// What the background thread returns: what it compacted, and the rest of the work.
type Compacted = Result<(Report, Option<Handover>), CompactError>;

impl Background {
    /// Starts compacting capture folder `dir` (waiting for the application to make its
    /// spool), one pass every few milliseconds, at a low CPU priority ([`low_priority`]).
    pub fn start(dir: &Path) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let owned = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                let dir = owned;
                low_priority();
                // The application makes the capture folder and its spool at its first launch.
                let lock = loop {
                    if dir.join(SPOOL_DIR).is_dir() {
                        if let Ok(Some(l)) = spool::try_lock_compactor(&dir, access_of(&dir)) {
                            break Some(l);
                        }
                    }
                    if stopping.load(Ordering::Relaxed) {
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                let mut total = Report::default();
                let Some(lock) = lock else {
                    return Ok((total, None));
                };
                let compactor = Compactor::new(&dir);
                loop {
                    if stopping.load(Ordering::Relaxed) {
                        return Ok((total, Some((compactor, lock))));
                    }
                    let r = compactor.pass_until(&stopping)?;
                    let idle = r.segments == 0 && r.contents == 0;
                    let short = r.short_of_space.is_some();
                    total.add(r);
                    if short {
                        // Out of room: the compactor lock goes, so the application no longer
                        // waits for room in its spool (its disk budget bounds it instead).
                        return Ok((total, None));
                    }
                    if idle {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            });
        if let Err(e) = &thread {
            eprintln!(
                "cltrap: the background compactor could not start ({e}); the spool is compacted once the application exits"
            );
        }
        Background {
            stop,
            thread: thread.ok(),
            dir: dir.to_path_buf(),
        }
    }

    /// After the application exited: compacts what is left on every core, on this thread at
    /// its own priority and on worker threads it starts (every core is allowed only once the
    /// background thread ended, so none of its low-priority threads starts the pool of every
    /// core), and returns what was done.
    pub fn finish(self) -> Result<Report, CompactError> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread else {
            if !has_spool(&self.dir) {
                return Ok(Report::default());
            }
            return compact(&self.dir);
        };
        let joined = thread.join();
        parallel::allow_all_cores();
        let (mut total, rest) = joined.unwrap_or_else(|_| {
            Err(CompactError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other("the compaction thread panicked"),
            })
        })?;
        if let Some((compactor, _lock)) = rest {
            total.add(compactor.pass()?);
        }
        Ok(total)
    }
}

/// The nice value of the background compactor's threads ([`low_priority`]).
pub const NICE: i32 = 10;

/// Gives the calling thread, and the worker threads it starts from now on (they inherit it),
/// a low CPU priority: nice [`NICE`] (on Linux a thread's own). Why: compacting beside a
/// running application took cores from it (its hashing and spool lanes). Side by side on the
/// H200 host (16 cores, 3 rounds, 2026-11-29; medians of the whole `cltrap run`), nice 10
/// made wavefront, Gaussian elimination, FDTD and buffer-heavy 4-12% shorter and stencil1d
/// neither; nice 19 gained about as much, but a compactor that an application waits for (past
/// the spool's bound) must not starve behind that application's own threads, and at nice 10
/// it keeps about a tenth of a contended core. Raising the priority back is not allowed to an
/// ordinary user, so the pass after the application exited runs on another thread
/// ([`Background::finish`]). A failure leaves the priority as it was.
fn low_priority() {
    // SAFETY: a plain system call on the calling thread (`who` 0), no memory passed.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
    }
}
