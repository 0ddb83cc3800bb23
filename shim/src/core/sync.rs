//! The application's synchronisation points: `clFinish`, blocking reads and `clWaitForEvents`.
//!
//! At each of them the driver tells the application that commands completed, which is also
//! what the capture's writer thread otherwise learns by polling ([`super::flight`]). So the
//! capture acts on it at once instead of waiting for a poll:
//! * `clFinish(queue)` returned: every launch of ours on `queue` completed; they are written
//!   right there, on the application's thread ([`flight::finished_queue`]), so the capture is
//!   complete up to the application's last `clFinish` (crash-safe) without a hand-over to the
//!   writer thread, whose polls back off to tens of milliseconds. With `--at-finish hand`
//!   they are handed to the writer as complete instead ([`flight::finished_queue_handed`]):
//!   the application does not wait for their records.
//! * A blocking read or map returned on an in-order queue: every launch enqueued on it before
//!   completed; they are handed to the writer as complete without a single driver question
//!   ([`flight::completed_upto`]). The application does not wait for them to be written.
//! * `clWaitForEvents` returned: the writer is asked to poll now ([`flight::nudge`]).
//!
//! Each hook forwards the application's call first, unchanged, and returns its result.

use super::flight;
use super::stats::{self, Phase};
use crate::door::quietly;
use crate::Next;
use cltrap_capture::AtFinish;
use libc::{c_void, size_t};
use opencl_sys::*;

/// `clFinish`: once the driver's own `clFinish` returned, writes the launches it finished.
pub unsafe fn clFinish(next: &Next, command_queue: cl_command_queue) -> cl_int {
    let Some(f) = next.clFinish else {
        return CL_INVALID_OPERATION;
    };
    let upto = flight::current_ticket();
    let finish = stats::span(Phase::Finish);
    let ret = f(command_queue);
    drop(finish);
    if ret == CL_SUCCESS {
        let _write = stats::span(Phase::FinishWrite);
        let hand = crate::state::settings().is_some_and(|s| s.at_finish == AtFinish::Hand);
        if hand {
            quietly(|| flight::finished_queue_handed(command_queue, upto));
        } else {
            quietly(|| flight::finished_queue(command_queue, upto));
        }
    }
    ret
}

/// After a blocking command on `queue` succeeded: the launches enqueued before it completed
/// (in-order queues; out-of-order ones are left to the writer).
fn blocking_done(queue: cl_command_queue, blocking: cl_bool, upto: u64, ret: cl_int) {
    if blocking != CL_FALSE && ret == CL_SUCCESS {
        quietly(|| flight::completed_upto(queue, upto));
    }
}

/// `clEnqueueReadBuffer`.
pub unsafe fn clEnqueueReadBuffer(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    offset: size_t,
    size: size_t,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueReadBuffer else {
        return CL_INVALID_OPERATION;
    };
    let upto = flight::current_ticket();
    let ret = f(
        command_queue,
        buffer,
        blocking_read,
        offset,
        size,
        ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    );
    blocking_done(command_queue, blocking_read, upto, ret);
    ret
}

/// `clEnqueueReadBufferRect`.
pub unsafe fn clEnqueueReadBufferRect(
    next: &Next,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    buffer_origin: *const size_t,
    host_origin: *const size_t,
    region: *const size_t,
    buffer_row_pitch: size_t,
    buffer_slice_pitch: size_t,
    host_row_pitch: size_t,
    host_slice_pitch: size_t,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueReadBufferRect else {
        return CL_INVALID_OPERATION;
    };
    let upto = flight::current_ticket();
    let ret = f(
        command_queue,
        buffer,
        blocking_read,
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
    );
    blocking_done(command_queue, blocking_read, upto, ret);
    ret
}

/// `clEnqueueReadImage`.
pub unsafe fn clEnqueueReadImage(
    next: &Next,
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_read: cl_bool,
    origin: *const size_t,
    region: *const size_t,
    row_pitch: size_t,
    slice_pitch: size_t,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueReadImage else {
        return CL_INVALID_OPERATION;
    };
    let upto = flight::current_ticket();
    let ret = f(
        command_queue,
        image,
        blocking_read,
        origin,
        region,
        row_pitch,
        slice_pitch,
        ptr,
        num_events_in_wait_list,
        event_wait_list,
        event,
    );
    blocking_done(command_queue, blocking_read, upto, ret);
    ret
}

/// A blocking map returned (the map hooks live in [`super::writes`]).
pub(super) fn map_returned(queue: cl_command_queue, blocking: cl_bool, upto: u64, ok: bool) {
    blocking_done(queue, blocking, upto, if ok { CL_SUCCESS } else { -1 });
}

/// `clWaitForEvents`: events of any queue; the writer polls at once.
pub unsafe fn clWaitForEvents(
    next: &Next,
    num_events: cl_uint,
    event_list: *const cl_event,
) -> cl_int {
    let Some(f) = next.clWaitForEvents else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(num_events, event_list);
    if ret == CL_SUCCESS {
        quietly(flight::nudge);
    }
    ret
}
