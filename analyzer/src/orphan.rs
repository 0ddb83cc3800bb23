//! Child processes that end with the thread that started them.
//!
//! Why: a `cltrap` killed outright (SIGKILL, or a signal no handler catches) must not leave
//! its children running: a campaign worker compiling or running a kernel for minutes, a fuzz
//! or check worker inside an endless kernel, or the captured application itself would go on
//! with no one to read their results. Linux sends a chosen signal to a child when the thread
//! that forked it ends (`PR_SET_PDEATHSIG`), so a child must be started from a thread that
//! outlives it (every caller here waits for or closes its children before its thread ends).

use std::process::Command;

/// Makes `cmd`'s child receive `signal` when the thread spawning it ends; a child whose
/// parent already died before the request was made does not start (its spawn fails).
pub fn end_with_parent(cmd: &mut Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe; called here, before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: prctl and getppid are async-signal-safe and touch only the child being set
    // up; nothing is allocated after the fork (the error is made from a number).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal);
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}
