//! Out-of-order queues: keeping the barrier that protects a launch's post-reads in force.
//!
//! After a recorded launch on an out-of-order queue the shim enqueues a barrier on its
//! post-reads, so later commands cannot overwrite a buffer before it was read. PoCL makes
//! commands after a *later* barrier wait only for that barrier: an application barrier with a
//! wait list naming just the kernel's event would let later commands run while the shim still
//! reads. So each queue's latest protecting barrier (the "guard") is remembered, and an
//! application barrier with a wait list also waits for it: the application's barrier waits a
//! little longer, its semantics are unchanged.

use super::track::lock;
use crate::door::quietly;
use crate::handles::HandleMap;
use crate::Next;
use opencl_sys::cl_function_types::clReleaseEvent_t;
use opencl_sys::*;
use std::sync::Mutex;

/// queue → our retained barrier event.
static GUARDS: once_cell::sync::Lazy<Mutex<HandleMap<usize, usize>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Makes `event` (our barrier after a launch's post-reads) the guard of `queue`.
pub(super) fn set(next: &Next, queue: cl_command_queue, event: cl_event) {
    let (Some(retain), Some(release)) = (next.clRetainEvent, next.clReleaseEvent) else {
        return;
    };
    // SAFETY: our own live event; retained for as long as it is the guard.
    unsafe { retain(event) };
    let old = lock(&GUARDS).insert(queue as usize, event as usize);
    if let Some(old) = old {
        // SAFETY: the reference taken when it became the guard.
        unsafe { release(old as cl_event) };
    }
}

/// The launch whose final event is `event` has been written: its reads are done, so it no
/// longer needs guarding.
pub(super) fn done(release: clReleaseEvent_t, queue: cl_command_queue, event: cl_event) {
    let mut guards = lock(&GUARDS);
    if guards.get(&(queue as usize)) == Some(&(event as usize)) {
        guards.remove(&(queue as usize));
        drop(guards);
        if let Some(release) = release {
            // SAFETY: the reference taken by `set`.
            unsafe { release(event) };
        }
    }
}

/// `clEnqueueBarrierWithWaitList`: an application barrier with a wait list also waits for the
/// queue's guard.
pub unsafe fn clEnqueueBarrierWithWaitList(
    next: &Next,
    command_queue: cl_command_queue,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueBarrierWithWaitList else {
        return CL_INVALID_OPERATION;
    };
    let guard = if num_events_in_wait_list == 0 || event_wait_list.is_null() {
        None
    } else {
        quietly(|| take_ref(next, command_queue)).flatten()
    };
    let Some(guard) = guard else {
        return f(
            command_queue,
            num_events_in_wait_list,
            event_wait_list,
            event,
        );
    };
    // SAFETY: the application passes `num_events_in_wait_list` events.
    let mut list =
        unsafe { std::slice::from_raw_parts(event_wait_list, num_events_in_wait_list as usize) }
            .to_vec();
    list.push(guard);
    let mut ret = f(command_queue, list.len() as cl_uint, list.as_ptr(), event);
    if ret != CL_SUCCESS {
        // Whatever the driver disliked, the application's own call decides the answer.
        ret = f(
            command_queue,
            num_events_in_wait_list,
            event_wait_list,
            event,
        );
    }
    if let Some(release) = next.clReleaseEvent {
        // SAFETY: the reference `take_ref` took.
        unsafe { release(guard) };
    }
    ret
}

/// The queue's guard with a reference of our own (so the writer cannot free it meanwhile).
fn take_ref(next: &Next, queue: cl_command_queue) -> Option<cl_event> {
    let retain = next.clRetainEvent?;
    let guards = lock(&GUARDS);
    let ev = *guards.get(&(queue as usize))? as cl_event;
    // SAFETY: the guard is alive while it is in the table (we hold its lock).
    unsafe { retain(ev) };
    Some(ev)
}
