//! Memory-object and user-event hooks: a capture-wide id for every memory object (so
//! arguments aliasing one `cl_mem` share it), and which user events are still unset.

use super::program::missing;
use super::track::tables;
use crate::door::quietly;
use crate::Next;
use libc::{c_void, size_t};
use opencl_sys::*;

fn created(mem: cl_mem) -> cl_mem {
    if !mem.is_null() {
        quietly(|| tables().mem_created(mem as usize));
    }
    mem
}

pub unsafe fn clCreateBuffer(
    next: &Next,
    context: cl_context,
    flags: cl_mem_flags,
    size: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateBuffer else {
        return missing(errcode_ret);
    };
    created(f(context, flags, size, host_ptr, errcode_ret))
}

pub unsafe fn clCreateBufferWithProperties(
    next: &Next,
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    size: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateBufferWithProperties else {
        return missing(errcode_ret);
    };
    created(f(context, properties, flags, size, host_ptr, errcode_ret))
}

pub unsafe fn clCreateSubBuffer(
    next: &Next,
    buffer: cl_mem,
    flags: cl_mem_flags,
    buffer_create_type: cl_buffer_create_type,
    buffer_create_info: *const c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateSubBuffer else {
        return missing(errcode_ret);
    };
    created(f(
        buffer,
        flags,
        buffer_create_type,
        buffer_create_info,
        errcode_ret,
    ))
}

pub unsafe fn clCreateImage(
    next: &Next,
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateImage else {
        return missing(errcode_ret);
    };
    created(f(
        context,
        flags,
        image_format,
        image_desc,
        host_ptr,
        errcode_ret,
    ))
}

pub unsafe fn clCreateImageWithProperties(
    next: &Next,
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateImageWithProperties else {
        return missing(errcode_ret);
    };
    created(f(
        context,
        properties,
        flags,
        image_format,
        image_desc,
        host_ptr,
        errcode_ret,
    ))
}

pub unsafe fn clCreateImage2D(
    next: &Next,
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: size_t,
    image_height: size_t,
    image_row_pitch: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateImage2D else {
        return missing(errcode_ret);
    };
    created(f(
        context,
        flags,
        image_format,
        image_width,
        image_height,
        image_row_pitch,
        host_ptr,
        errcode_ret,
    ))
}

pub unsafe fn clCreateImage3D(
    next: &Next,
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: size_t,
    image_height: size_t,
    image_depth: size_t,
    image_row_pitch: size_t,
    image_slice_pitch: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let Some(f) = next.clCreateImage3D else {
        return missing(errcode_ret);
    };
    created(f(
        context,
        flags,
        image_format,
        image_width,
        image_height,
        image_depth,
        image_row_pitch,
        image_slice_pitch,
        host_ptr,
        errcode_ret,
    ))
}

pub unsafe fn clCreateUserEvent(
    next: &Next,
    context: cl_context,
    errcode_ret: *mut cl_int,
) -> cl_event {
    let Some(f) = next.clCreateUserEvent else {
        return missing(errcode_ret);
    };
    let ev = f(context, errcode_ret);
    if !ev.is_null() {
        quietly(|| tables().user_event_created(ev as usize));
    }
    ev
}

pub unsafe fn clSetUserEventStatus(
    next: &Next,
    event: cl_event,
    execution_status: cl_int,
) -> cl_int {
    let Some(f) = next.clSetUserEventStatus else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(event, execution_status);
    if ret == CL_SUCCESS {
        quietly(|| tables().user_event_set(event as usize));
    }
    ret
}
