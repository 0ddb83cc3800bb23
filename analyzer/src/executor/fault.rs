//! Whether a command of this process failed on the device while it executed: a kernel that
//! faulted, or a read-back that failed after it.
//!
//! Why a process-wide flag: a device fault can leave the whole process's device context
//! unusable (CUDA keeps an illegal address as a sticky error of the process), so every later
//! run in it fails for a reason not its own. The campaign runner retires a worker that saw
//! one (`campaign::runner`, after the unit's result), so the next unit runs in a fresh
//! process and no result depends on which unit ran before it.

use std::sync::atomic::{AtomicBool, Ordering};

static SEEN: AtomicBool = AtomicBool::new(false);

/// An execution that failed on the device with status `code`: noted, and returned as the
/// error the run reports ([`super::ExecError::Execution`]).
pub(crate) fn failed(code: i32) -> super::ExecError {
    SEEN.store(true, Ordering::Relaxed);
    super::ExecError::Execution {
        code: super::cl::error_name(code),
    }
}

/// Notes a failed command of an execution reported as another error (a failed read-back).
pub(crate) fn note() {
    SEEN.store(true, Ordering::Relaxed);
}

/// Whether an execution of this process failed on the device.
pub fn seen() -> bool {
    SEEN.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command whose event ends with an error status (a user event set to
    /// `CL_OUT_OF_RESOURCES` on the real runtime, as a faulting kernel's would) is an
    /// execution failure, and the process notes it.
    #[test]
    fn a_command_that_failed_on_the_device_is_noted() {
        let Ok(session) = crate::executor::Session::open(&Default::default()) else {
            panic!("no OpenCL device (PoCL is installed by scripts/install-deps.sh)");
        };
        let raw = cl3::event::create_user_event(session.context.raw()).expect("a user event");
        let ev = crate::executor::cl::Event(raw);
        cl3::event::set_user_event_status(raw, opencl_sys::CL_OUT_OF_RESOURCES)
            .expect("its status set");
        let err = session.wait_kernel(&ev).expect_err("a failed event");
        assert!(
            matches!(err, crate::executor::ExecError::Execution { .. }),
            "{err}"
        );
        assert!(seen());
    }
}
