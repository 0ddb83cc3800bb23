//! What `crate::core::prepare` does to an engine before its first launch: runs its kernel
//! once, and maps host memory for the contents `full` mode will read back.
//!
//! Why: both cost the first launches otherwise. On the H200 host (NVIDIA driver, 2026-12-01)
//! `buffer-heavy`'s first launch spent about 10 ms in the capture's reads (the engine's build,
//! its kernel's first run, the pinned memory of its partials), and the mapped memory its new
//! contents were read into (0.4 ms per MB) was made while the application waited at its
//! `clFinish`.

use super::Engine;
use opencl_sys::*;
use std::sync::Arc;

impl Engine {
    /// Runs the digest kernel once on the engine's own queue (an empty digest into a slot of
    /// ours) and waits for it: a driver may load a kernel's code at its first run, and that
    /// run is then not an application's launch. False when it could not run (nothing of it
    /// is pending then but what the driver holds itself).
    pub(in crate::core) fn warm_up(self: &Arc<Engine>) -> bool {
        let (Some(run), Some(finish)) = (self.calls.enqueue_kernel, self.calls.finish) else {
            return false;
        };
        let Some(slot) = self.slot() else {
            return false;
        };
        let (global, local) = (self.group, self.group);
        // An empty digest (`len` 0: none of the slots buffer's bytes is read) into our slot.
        let r = self.with_digest_args(self.slots as cl_mem, 0, slot.index, || unsafe {
            // SAFETY: our own kernel on our own queue, its arguments set just now.
            run(
                self.queue as cl_command_queue,
                self.kernel as cl_kernel,
                1,
                std::ptr::null(),
                &global,
                &local,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        });
        let ran = r == Ok(CL_SUCCESS);
        // SAFETY: the engine's own queue. The slot goes back only after the run wrote it.
        let finished = unsafe { finish(self.queue as cl_command_queue) } == CL_SUCCESS;
        if !finished {
            // The run may still write into the slot: it is never handed out again.
            let mut slot = slot;
            slot.abandoned = true;
        }
        ran && finished
    }

    /// Maps `bytes` of host memory into the engine's pool for a content of that size to be
    /// read into (None: the engine holds [`super::mapped::MAPPED_MAX`] already, or the driver
    /// made none). Made whatever is pooled already: each of the application's large buffers
    /// may have a new content in flight at once.
    pub(in crate::core) fn premap(self: &Arc<Engine>, bytes: usize) -> Option<()> {
        self.mapped_new(bytes).map(drop)
    }
}
