//! The application's contexts and command queues: their creation hooks and the queue's
//! retain and release, which feed [`super::lifetime`]'s counts (`clRetainContext` /
//! `clReleaseContext` are its hooks too).
//!
//! Why the shim counts them: its own objects (digest engines, the pinned pool) live in the
//! application's context and would keep it alive; once the application holds neither the
//! context nor a queue in it, they are given back, so the context is destroyed as without the
//! shim (see [`super::lifetime`]).

use super::lifetime::born_as;
use super::program::missing;
use super::refcount::Kind;
use crate::door::quietly;
use crate::Next;
use libc::c_void;
use opencl_sys::*;

/// The application's new context (null: the driver made none). A driver may reuse the handle
/// of a destroyed context: whatever the shim still kept under it is stale and goes first.
fn context_made(context: cl_context) -> cl_context {
    if !context.is_null() {
        quietly(|| {
            super::prepare::forget(context as usize);
            super::digest::retire(context as usize);
            super::pinned::retire(context as usize);
            born_as(context as usize, Kind::Context, None);
        });
    }
    context
}

/// The application's new queue on `device`, which holds `context` (null: the driver made
/// none).
fn queue_made(
    next: &Next,
    queue: cl_command_queue,
    context: cl_context,
    device: cl_device_id,
) -> cl_command_queue {
    if !queue.is_null() {
        quietly(|| {
            born_as(queue as usize, Kind::Queue, Some(context as usize));
            super::prepare::queue_made(next, context as usize, device as usize);
        });
    }
    queue
}

/// The application's context-error callback, as the specification types it.
type Notify = Option<
    unsafe extern "C" fn(
        errinfo: *const libc::c_char,
        private_info: *const c_void,
        cb: usize,
        user_data: *mut c_void,
    ),
>;

pub unsafe fn clCreateContext(
    next: &Next,
    properties: *const cl_context_properties,
    num_devices: cl_uint,
    devices: *const cl_device_id,
    pfn_notify: Notify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    let Some(f) = next.clCreateContext else {
        return missing(errcode_ret);
    };
    context_made(f(
        properties,
        num_devices,
        devices,
        pfn_notify,
        user_data,
        errcode_ret,
    ))
}

pub unsafe fn clCreateContextFromType(
    next: &Next,
    properties: *const cl_context_properties,
    device_type: cl_device_type,
    pfn_notify: Notify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    let Some(f) = next.clCreateContextFromType else {
        return missing(errcode_ret);
    };
    context_made(f(
        properties,
        device_type,
        pfn_notify,
        user_data,
        errcode_ret,
    ))
}

pub unsafe fn clCreateCommandQueue(
    next: &Next,
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    let Some(f) = next.clCreateCommandQueue else {
        return missing(errcode_ret);
    };
    queue_made(
        next,
        f(context, device, properties, errcode_ret),
        context,
        device,
    )
}

pub unsafe fn clCreateCommandQueueWithProperties(
    next: &Next,
    context: cl_context,
    device: cl_device_id,
    properties: *const cl_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    let Some(f) = next.clCreateCommandQueueWithProperties else {
        return missing(errcode_ret);
    };
    queue_made(
        next,
        f(context, device, properties, errcode_ret),
        context,
        device,
    )
}

/// `clRetainCommandQueue`: one more reference of the application's to its queue.
pub unsafe fn clRetainCommandQueue(next: &Next, command_queue: cl_command_queue) -> cl_int {
    let Some(f) = next.clRetainCommandQueue else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(command_queue);
    if ret == CL_SUCCESS {
        quietly(|| super::refcount::retained(command_queue as usize));
    }
    ret
}

/// `clReleaseCommandQueue`: the handle may name another queue once this one is gone, so its
/// facts are forgotten ([`super::device::forget_queue`]: asked again if it is still alive and
/// used); the application's count of it ([`super::lifetime`]) goes down, and its context's
/// with its last reference.
pub unsafe fn clReleaseCommandQueue(next: &Next, command_queue: cl_command_queue) -> cl_int {
    let Some(f) = next.clReleaseCommandQueue else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| super::device::forget_queue(command_queue as usize));
    let ret = f(command_queue);
    if ret == CL_SUCCESS {
        quietly(|| super::lifetime::released(command_queue as usize));
    }
    ret
}
