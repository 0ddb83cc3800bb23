//! Hooks on every enqueue that can write a memory object (besides kernels): they forward the
//! call unchanged and tell [`super::known`] that the object's contents may have changed, so
//! the next recorded launch reads it again instead of reusing what the capture saw last.

use super::known;
use crate::door::quietly;
use crate::Next;
use libc::{c_void, size_t};
use opencl_sys::*;

/// `clEnqueueWriteBuffer`: may write `buffer`.
pub unsafe fn clEnqueueWriteBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    offset: size_t,
    size: size_t,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueWriteBuffer else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[buffer as usize]));
    f(
        command_queue,
        buffer,
        blocking_write,
        offset,
        size,
        ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueWriteBufferRect`: may write `buffer`.
pub unsafe fn clEnqueueWriteBufferRect(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    buffer_origin: *const size_t,
    host_origin: *const size_t,
    region: *const size_t,
    buffer_row_pitch: size_t,
    buffer_slice_pitch: size_t,
    host_row_pitch: size_t,
    host_slice_pitch: size_t,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueWriteBufferRect else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[buffer as usize]));
    f(
        command_queue,
        buffer,
        blocking_write,
        buffer_origin,
        host_origin,
        region,
        buffer_row_pitch,
        buffer_slice_pitch,
        host_row_pitch,
        host_slice_pitch,
        ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueCopyBuffer`: may write `dst_buffer`.
pub unsafe fn clEnqueueCopyBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_offset: size_t,
    dst_offset: size_t,
    size: size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueCopyBuffer else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[dst_buffer as usize]));
    f(
        command_queue,
        src_buffer,
        dst_buffer,
        src_offset,
        dst_offset,
        size,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueCopyBufferRect`: may write `dst_buffer`.
pub unsafe fn clEnqueueCopyBufferRect(
    next: &Next,
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    src_row_pitch: size_t,
    src_slice_pitch: size_t,
    dst_row_pitch: size_t,
    dst_slice_pitch: size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueCopyBufferRect else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[dst_buffer as usize]));
    f(
        command_queue,
        src_buffer,
        dst_buffer,
        src_origin,
        dst_origin,
        region,
        src_row_pitch,
        src_slice_pitch,
        dst_row_pitch,
        dst_slice_pitch,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueFillBuffer`: may write `buffer`.
pub unsafe fn clEnqueueFillBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    pattern: *const c_void,
    pattern_size: size_t,
    offset: size_t,
    size: size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueFillBuffer else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[buffer as usize]));
    f(
        command_queue,
        buffer,
        pattern,
        pattern_size,
        offset,
        size,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueWriteImage`: may write `image`.
pub unsafe fn clEnqueueWriteImage(
    next: &Next,
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_write: cl_bool,
    origin: *const size_t,
    region: *const size_t,
    input_row_pitch: size_t,
    input_slice_pitch: size_t,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueWriteImage else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[image as usize]));
    f(
        command_queue,
        image,
        blocking_write,
        origin,
        region,
        input_row_pitch,
        input_slice_pitch,
        ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueCopyImage`: may write `dst_image`.
pub unsafe fn clEnqueueCopyImage(
    next: &Next,
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_image: cl_mem,
    src_origin: *const size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueCopyImage else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[dst_image as usize]));
    f(
        command_queue,
        src_image,
        dst_image,
        src_origin,
        dst_origin,
        region,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueCopyBufferToImage`: may write `dst_image`.
pub unsafe fn clEnqueueCopyBufferToImage(
    next: &Next,
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_image: cl_mem,
    src_offset: size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueCopyBufferToImage else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[dst_image as usize]));
    f(
        command_queue,
        src_buffer,
        dst_image,
        src_offset,
        dst_origin,
        region,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueCopyImageToBuffer`: may write `dst_buffer`.
pub unsafe fn clEnqueueCopyImageToBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const size_t,
    region: *const size_t,
    dst_offset: size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueCopyImageToBuffer else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[dst_buffer as usize]));
    f(
        command_queue,
        src_image,
        dst_buffer,
        src_origin,
        region,
        dst_offset,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueFillImage`: may write `image`.
pub unsafe fn clEnqueueFillImage(
    next: &Next,
    command_queue: cl_command_queue,
    image: cl_mem,
    fill_color: *const c_void,
    origin: *const size_t,
    region: *const size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueFillImage else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[image as usize]));
    f(
        command_queue,
        image,
        fill_color,
        origin,
        region,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueMapBuffer`: the host may write `buffer` until it is unmapped.
pub unsafe fn clEnqueueMapBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    offset: size_t,
    size: size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    let Some(f) = next.clEnqueueMapBuffer else {
        return super::program::missing(errcode_ret);
    };
    let upto = super::flight::current_ticket();
    let ptr = f(
        command_queue,
        buffer,
        blocking_map,
        map_flags,
        offset,
        size,
        num_events_in_wait_list,
        event_wait_list,
        event,
        errcode_ret,
    );
    super::sync::map_returned(command_queue, blocking_map, upto, !ptr.is_null());
    quietly(|| known::map(buffer as usize, !ptr.is_null()));
    ptr
}

/// `clEnqueueMapImage`: the host may write `image` until it is unmapped.
pub unsafe fn clEnqueueMapImage(
    next: &Next,
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    origin: *const size_t,
    region: *const size_t,
    image_row_pitch: *mut size_t,
    image_slice_pitch: *mut size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    let Some(f) = next.clEnqueueMapImage else {
        return super::program::missing(errcode_ret);
    };
    let upto = super::flight::current_ticket();
    let ptr = f(
        command_queue,
        image,
        blocking_map,
        map_flags,
        origin,
        region,
        image_row_pitch,
        image_slice_pitch,
        num_events_in_wait_list,
        event_wait_list,
        event,
        errcode_ret,
    );
    super::sync::map_returned(command_queue, blocking_map, upto, !ptr.is_null());
    quietly(|| known::map(image as usize, !ptr.is_null()));
    ptr
}

/// `clEnqueueUnmapMemObject`: what the host wrote while mapped reaches `memobj`.
pub unsafe fn clEnqueueUnmapMemObject(
    next: &Next,
    command_queue: cl_command_queue,
    memobj: cl_mem,
    mapped_ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueUnmapMemObject else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| known::wrote(&[memobj as usize]));
    let ret = f(
        command_queue,
        memobj,
        mapped_ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    );
    quietly(|| known::unmap(memobj as usize, ret == CL_SUCCESS));
    ret
}

/// `clEnqueueMigrateMemObjects`: with `CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED` the
/// contents of the objects become undefined, so any migration counts as a write.
pub unsafe fn clEnqueueMigrateMemObjects(
    next: &Next,
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueMigrateMemObjects else {
        return CL_INVALID_OPERATION;
    };
    quietly(|| {
        if num_mem_objects > 0 && !mem_objects.is_null() {
            // SAFETY: the application passes `num_mem_objects` objects, as to the driver.
            let mems = unsafe { std::slice::from_raw_parts(mem_objects, num_mem_objects as usize) };
            known::wrote(&mems.iter().map(|m| *m as usize).collect::<Vec<_>>());
        }
    });
    f(
        command_queue,
        num_mem_objects,
        mem_objects,
        flags,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}

/// `clEnqueueNativeKernel`: host code that may write any object it was given.
pub unsafe fn clEnqueueNativeKernel(
    next: &Next,
    command_queue: cl_command_queue,
    user_func: Option<unsafe extern "C" fn(arg1: *mut c_void)>,
    args: *mut c_void,
    cb_args: size_t,
    num_mem_objects: cl_uint,
    mem_list: *const cl_mem,
    args_mem_loc: *mut *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueNativeKernel else {
        return CL_INVALID_OPERATION;
    };
    quietly(known::wrote_anything);
    f(
        command_queue,
        user_func,
        args,
        cb_args,
        num_mem_objects,
        mem_list,
        args_mem_loc,
        num_events_in_wait_list,
        event_wait_list,
        event,
    )
}
