//! Memory-object and user-event hooks: a capture-wide id for every memory object (so
//! arguments aliasing one `cl_mem` share it), and which user events are still unset.

use super::program::missing;
use super::track::tables;
use crate::door::quietly;
use crate::Next;
use libc::{c_void, size_t};
use opencl_sys::*;

/// Notes a new memory object: its id, and for [`super::known`] whether its contents can be
/// known between launches (`flags` lacks `CL_MEM_USE_HOST_PTR`) and what it aliases
/// (`parent`: the buffer of a sub-buffer, the buffer or image an image was made from).
fn created(mem: cl_mem, flags: cl_mem_flags, parent: cl_mem) -> cl_mem {
    if !mem.is_null() {
        quietly(|| {
            tables().mem_created(mem as usize);
            let parent = (!parent.is_null()).then_some(parent as usize);
            if let Some(p) = parent {
                super::inplace::related(mem as usize, p);
            }
            super::known::created(mem as usize, flags & CL_MEM_USE_HOST_PTR != 0, parent);
            super::lifetime::born(mem as usize, parent);
        });
    }
    mem
}

/// Tells [`super::prepare`] of a new buffer (`mem`, null when the driver made none).
fn large_made(next: &Next, mem: cl_mem, context: cl_context, size: size_t) {
    if !mem.is_null() {
        quietly(|| super::prepare::buffer_made(next, context as usize, size));
    }
}

/// The memory object an image is made from (`cl_image_desc.buffer`, alias `mem_object`), or
/// null.
fn image_parent(desc: *const cl_image_desc) -> cl_mem {
    if desc.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the application passes a valid descriptor (or NULL, handled above); the driver
    // reads the same field.
    unsafe { (*desc).buffer }
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
    let mem = f(context, flags, size, host_ptr, errcode_ret);
    large_made(next, mem, context, size);
    created(mem, flags, std::ptr::null_mut())
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
    let mem = f(context, properties, flags, size, host_ptr, errcode_ret);
    large_made(next, mem, context, size);
    created(mem, flags, std::ptr::null_mut())
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
    let mem = f(
        buffer,
        flags,
        buffer_create_type,
        buffer_create_info,
        errcode_ret,
    );
    created(mem, flags, buffer)
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
    let mem = f(
        context,
        flags,
        image_format,
        image_desc,
        host_ptr,
        errcode_ret,
    );
    created(mem, flags, image_parent(image_desc))
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
    let mem = f(
        context,
        properties,
        flags,
        image_format,
        image_desc,
        host_ptr,
        errcode_ret,
    );
    created(mem, flags, image_parent(image_desc))
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
    let mem = f(
        context,
        flags,
        image_format,
        image_width,
        image_height,
        image_row_pitch,
        host_ptr,
        errcode_ret,
    );
    created(mem, flags, std::ptr::null_mut())
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
    let mem = f(
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
    );
    created(mem, flags, std::ptr::null_mut())
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
