//! The segments a process holds open, each under its exclusive `flock`, known to a
//! `pthread_atfork` child handler so that a child forked without exec (a forking server,
//! Python's `multiprocessing`) lets go of them at once.
//!
//! Why: a `flock` belongs to the open file description, which a fork shares. While a child
//! kept its copy of a segment's descriptor, the parent sealing (closing) the segment would not
//! release the lock, no compactor could take the segment, and a parent waiting for room in a
//! bounded spool would wait as long as the child lived — for ever when the child waits for the
//! parent. The child handler puts `/dev/null` over each held descriptor (`dup3`, which is
//! async-signal-safe, and leaves the number open, so the child's copy of the parent's memory
//! never closes a number reused for something else).
//!
//! Invariants:
//! * A descriptor is registered in the same critical section as the `open` that made it, and
//!   unregistered in the same one as its `close`; the fork's prepare handler takes that
//!   section, so a fork never sees a held segment unregistered or a registered number closed.
//! * The child touches a registered number only while it still names the segment registered
//!   (same device and inode): an application that closed our descriptor itself and reused its
//!   number keeps what it put there.
//! * At most [`SLOTS`] segments are known at once (a writer holds one per lane); one past that
//!   is held as before (a child forked meanwhile keeps its lock while it lives).

use std::fs::File;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

/// Segments known at once: several writers of [`super::LANES`] lanes each.
const SLOTS: usize = 64;

/// Descriptors of the held segments (-1: a free slot).
static HELD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];

/// The device and inode of each held segment, set before its number in [`HELD`].
static HELD_DEV: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static HELD_INO: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// The critical section (a spin lock: the fork handlers cannot use a `Mutex` guard across
/// `fork`) around an `open` and its registering, an unregistering and its `close`, and a fork.
static SECTION: AtomicBool = AtomicBool::new(false);

/// Whether the prepare handler took [`SECTION`] for the fork in progress.
static PREPARED: AtomicBool = AtomicBool::new(false);

/// `/dev/null`, opened (close-on-exec) when the handlers are registered, or at a later
/// segment's open if it could not be then, so the child handler only duplicates it (-1: not
/// open yet; a child then keeps the segments, and their locks, as it would without cltrap).
static NULL: AtomicI32 = AtomicI32::new(-1);

/// Takes [`SECTION`], giving up after `spins` tries (false); `usize::MAX`: waits.
fn enter(spins: usize) -> bool {
    let mut n = 0usize;
    while SECTION
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        n += 1;
        if n >= spins {
            return false;
        }
        if n.is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    true
}

fn leave() {
    SECTION.store(false, Ordering::Release);
}

/// Before a fork: waits for an `open` or `close` of a segment in progress to finish. Bounded,
/// so that a fork from a signal handler that interrupted such a section cannot hang: the
/// child then puts `/dev/null` over what it finds registered, as ever.
extern "C" fn prepare() {
    if enter(1 << 22) {
        PREPARED.store(true, Ordering::Relaxed);
    }
}

/// After a fork, in the parent.
extern "C" fn parent() {
    if PREPARED.swap(false, Ordering::Relaxed) {
        leave();
    }
}

/// After a fork, in the child: `/dev/null` over every held segment, close-on-exec as the
/// segment was (`dup3`; async-signal-safe calls only). The child has one thread: the section
/// is free there whoever held it in the parent.
extern "C" fn child() {
    let null = NULL.load(Ordering::Relaxed);
    for (i, slot) in HELD.iter().enumerate() {
        // Acquire: the device and inode stored before this number are seen with it.
        let fd = slot.swap(-1, Ordering::Acquire);
        if null < 0 || fd < 0 || fd == null {
            continue;
        }
        // SAFETY: fstat into a local buffer and dup3 on descriptor numbers, both
        // async-signal-safe.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            let same = libc::fstat(fd, &mut st) == 0
                && st.st_dev == HELD_DEV[i].load(Ordering::Relaxed)
                && st.st_ino == HELD_INO[i].load(Ordering::Relaxed);
            if same {
                libc::dup3(null, fd, libc::O_CLOEXEC);
            }
        }
    }
    PREPARED.store(false, Ordering::Relaxed);
    leave();
}

/// Registers the fork handlers, once per process.
fn watch_forks() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // SAFETY: opens a descriptor kept for the process's life; registers handlers that
        // touch only atomics and descriptor numbers.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            NULL.store(null, Ordering::Relaxed);
            libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
        }
    });
}

/// A segment's file, known to the fork handlers while it is open.
pub(super) struct HeldFile {
    file: ManuallyDrop<File>,
    /// Its slot in [`HELD`] (None: all were taken).
    slot: Option<usize>,
}

impl HeldFile {
    /// Opens a segment with `open` and registers its descriptor, in one critical section.
    pub(super) fn open(open: impl FnOnce() -> std::io::Result<File>) -> std::io::Result<HeldFile> {
        watch_forks();
        enter(usize::MAX);
        if NULL.load(Ordering::Relaxed) < 0 {
            // Not opened before (out of descriptors then): tried again, in the section.
            // SAFETY: opens a descriptor kept for the process's life.
            let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
            NULL.store(null, Ordering::Relaxed);
        }
        let file = open();
        let held = file.map(|file| {
            let fd = file.as_raw_fd();
            // Unknown identity: never registered (a child keeps it, as without cltrap).
            let slot = file.metadata().ok().and_then(|m| {
                use std::os::unix::fs::MetadataExt;
                let slot = HELD.iter().position(|s| s.load(Ordering::Relaxed) == -1)?;
                HELD_DEV[slot].store(m.dev(), Ordering::Relaxed);
                HELD_INO[slot].store(m.ino(), Ordering::Relaxed);
                // Release: published after its device and inode.
                HELD[slot].store(fd, Ordering::Release);
                Some(slot)
            });
            HeldFile {
                file: ManuallyDrop::new(file),
                slot,
            }
        });
        leave();
        held
    }
}

impl Deref for HeldFile {
    type Target = File;
    fn deref(&self) -> &File {
        &self.file
    }
}

impl DerefMut for HeldFile {
    fn deref_mut(&mut self) -> &mut File {
        &mut self.file
    }
}

impl Drop for HeldFile {
    /// Unregisters and closes, in one critical section.
    fn drop(&mut self) {
        enter(usize::MAX);
        if let Some(slot) = self.slot {
            let fd = self.file.as_raw_fd();
            // Only its own number (a forked child's handler cleared the slots).
            let _ = HELD[slot].compare_exchange(fd, -1, Ordering::Relaxed, Ordering::Relaxed);
        }
        // SAFETY: dropped once, here; never used after.
        unsafe { ManuallyDrop::drop(&mut self.file) };
        leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A child forked while a segment is held has `/dev/null` in its place: the parent's
    /// closing releases the lock, which another descriptor can then take.
    #[test]
    fn a_forked_child_lets_go_of_a_held_segments_lock() {
        let _one = crate::FORKS.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("seg");
        let held = HeldFile::open(|| File::create(&path)).expect("open");
        held.lock().expect("lock");
        let (mut to_parent, from_child) = std::os::unix::net::UnixStream::pair().expect("pair");
        // SAFETY: the child only writes a byte and sleeps (no allocation, no locks).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // The segment's number now holds `/dev/null`, close-on-exec as the segment was.
            // SAFETY: fcntl on a descriptor number.
            let flags = unsafe { libc::fcntl(held.as_raw_fd(), libc::F_GETFD) };
            let byte: &[u8] = if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                b"x"
            } else {
                b"!"
            };
            let _ = to_parent.write_all(byte);
            // SAFETY: sleeps, then leaves without running the parent's destructors.
            unsafe {
                libc::sleep(30);
                libc::_exit(0);
            }
        }
        let mut byte = [0u8; 1];
        std::io::Read::read_exact(&mut &from_child, &mut byte).expect("the child started");
        assert_eq!(&byte, b"x", "the child's descriptor is not close-on-exec");
        drop(held);
        let other = File::open(&path).expect("reopen");
        let free = other.try_lock().is_ok();
        // SAFETY: the child made above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        assert!(free, "the forked child still holds the segment's lock");
    }

    /// An application that closed a segment's descriptor itself and opened something else at
    /// its number keeps that in a forked child: the child handler leaves a number alone once
    /// it names another file.
    #[test]
    fn a_reused_number_is_left_alone_in_a_forked_child() {
        let _one = crate::FORKS.lock().unwrap_or_else(|p| p.into_inner());
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let held = HeldFile::open(|| File::create(dir.path().join("seg"))).expect("open");
        let fd = held.as_raw_fd();
        let theirs = File::create(dir.path().join("theirs")).expect("create");
        let ino = theirs.metadata().expect("stat").ino();
        // SAFETY: puts the application's file at our number (as a close and an open that
        // reused the number would); our HeldFile then closes that number once, below.
        assert_eq!(unsafe { libc::dup2(theirs.as_raw_fd(), fd) }, fd);
        // SAFETY: the child only stats a number and leaves.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // SAFETY: fstat into a local buffer; leaves without running destructors.
            unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                let kept = libc::fstat(fd, &mut st) == 0 && st.st_ino == ino;
                libc::_exit(if kept { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: the child made above.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid, "waitpid");
        drop(held);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child found /dev/null where the application had its own file"
        );
    }
}
