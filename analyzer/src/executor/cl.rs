//! Owning handles for OpenCL objects: each releases its object exactly once when dropped,
//! so a campaign of thousands of runs leaks nothing, whichever way a run ends.

use opencl_sys::{
    cl_command_queue, cl_context, cl_event, cl_kernel, cl_mem, cl_program, cl_sampler,
};

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $release:path) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub(crate) $raw);

        impl $name {
            /// The raw handle, valid while `self` lives.
            pub fn raw(&self) -> $raw {
                self.0
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                if !self.0.is_null() {
                    // SAFETY: the handle was returned by a successful create call and is
                    // released only here, once.
                    let _ = unsafe { $release(self.0) };
                }
            }
        }
    };
}

handle!(
    /// A `cl_context` of one device.
    Context, cl_context, cl3::context::release_context
);
handle!(
    /// A profiling-enabled in-order `cl_command_queue`.
    Queue, cl_command_queue, cl3::command_queue::release_command_queue
);
handle!(
    /// A built `cl_program`.
    Program, cl_program, cl3::program::release_program
);
handle!(
    /// A `cl_kernel` of one run.
    Kernel, cl_kernel, cl3::kernel::release_kernel
);
handle!(
    /// A buffer or image.
    Mem, cl_mem, cl3::memory::release_mem_object
);
handle!(
    /// A sampler.
    Sampler, cl_sampler, cl3::sampler::release_sampler
);
handle!(
    /// An event returned by an enqueue.
    Event, cl_event, cl3::event::release_event
);

/// Readable name of an OpenCL status code.
pub fn error_name(code: i32) -> String {
    match code {
        cl3::error_codes::DLOPEN_RUNTIME_LOAD_FAILED => {
            "the OpenCL loader libOpenCL.so.1 could not be loaded".into()
        }
        cl3::error_codes::DLOPEN_FUNCTION_NOT_AVAILABLE => {
            "the OpenCL loader lacks this function".into()
        }
        c => format!("{} ({c})", cl3::error_codes::error_text(c)),
    }
}

/// Bytes of a string-valued info query, without the trailing NUL.
pub fn info_string(bytes: Vec<u8>) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

impl Event {
    /// The execution status of the event's command (negative: it failed), when the driver
    /// says: what the run and its queued read-backs check their commands with.
    pub fn status(&self) -> Option<i32> {
        let b =
            cl3::event::get_event_data(self.raw(), opencl_sys::CL_EVENT_COMMAND_EXECUTION_STATUS)
                .ok()?;
        b.get(..4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}
