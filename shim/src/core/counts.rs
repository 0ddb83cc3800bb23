//! The `clGet*Info` hooks that answer `CL_*_REFERENCE_COUNT` as the application would read it
//! without the shim: the driver's count less the holds of the shim ([`super::held`]), after
//! the launches of ours that completed were written (so their events are given back). Every
//! other query, and every error, is the driver's, forwarded once and unchanged.

use super::held;
use crate::Next;
use libc::{c_void, size_t};
use opencl_sys::*;

/// Defines one info hook: `$name(next, object, param, size, value, size_ret)` answering
/// `$count` through [`held::answer`].
macro_rules! count_hooks {
    ($($name:ident ($object:ident : $t:ty, $info:ty) $count:ident;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: `", stringify!($count),
                "` leaves out the references the shim holds; the rest is the driver's.")]
            pub unsafe fn $name(
                next: &Next,
                $object: $t,
                param_name: $info,
                param_value_size: size_t,
                param_value: *mut c_void,
                param_value_size_ret: *mut size_t,
            ) -> cl_int {
                let Some(f) = next.$name else {
                    return CL_INVALID_OPERATION;
                };
                let query =
                    || f($object, param_name, param_value_size, param_value, param_value_size_ret);
                if param_name != $count {
                    return query();
                }
                // Launches of ours that completed are written first: the writer holds their
                // events (and drivers count events in their queue's references) until then.
                crate::door::quietly(super::flight::settle);
                // SAFETY: the application's output buffer, as it passed it.
                unsafe {
                    held::answer(next, $object as usize, param_value, param_value_size, query)
                }
            }
        )*
    };
}

count_hooks! {
    clGetCommandQueueInfo (command_queue: cl_command_queue, cl_command_queue_info) CL_QUEUE_REFERENCE_COUNT;
    clGetContextInfo (context: cl_context, cl_context_info) CL_CONTEXT_REFERENCE_COUNT;
    clGetMemObjectInfo (memobj: cl_mem, cl_mem_info) CL_MEM_REFERENCE_COUNT;
    clGetProgramInfo (program: cl_program, cl_program_info) CL_PROGRAM_REFERENCE_COUNT;
    clGetKernelInfo (kernel: cl_kernel, cl_kernel_info) CL_KERNEL_REFERENCE_COUNT;
    clGetEventInfo (event: cl_event, cl_event_info) CL_EVENT_REFERENCE_COUNT;
    clGetSamplerInfo (sampler: cl_sampler, cl_sampler_info) CL_SAMPLER_REFERENCE_COUNT;
}
