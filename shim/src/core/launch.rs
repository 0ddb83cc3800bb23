//! Launch hooks: `clEnqueueNDRangeKernel` / `clEnqueueTask` become `LaunchRecord`s. This
//! module forwards the application's enqueue exactly once and calls the plan around it; what
//! to read and the record itself are the plan's ([`super::plan`]).
//!
//! Order of work for a recorded launch (buffer modes `full`/`hash`), all on the application's
//! thread and none of it blocking: plan ([`super::plan`]: name, filters, arguments, program,
//! device) → reserve host memory ([`super::flight::admit`]) → enqueue non-blocking pre-reads
//! of every buffer/image argument in the application's queue ([`super::inqueue`]) → forward the
//! enqueue (the one call to `next.clEnqueueNDRangeKernel` / `next.clEnqueueTask`) → enqueue
//! post-reads → hand the launch to the writer thread, which records it when the reads
//! completed ([`super::flight`]). A launch gated by a user event is recorded like any other,
//! once the gate opens.
//!
//! Hook points for live instrumentation, in [`run`]: `crate::swap::before_enqueue` right
//! before the enqueue is forwarded (it may return a kernel to enqueue instead of the
//! application's) and `crate::swap::after_enqueue` right after it returned. A swapped enqueue
//! that the driver refuses is repeated with the application's kernel, so the return code is
//! the native one. The record always describes the application's kernel and arguments.

use super::known;
use super::plan::{Geometry, Plan};
use super::stats::{self, Phase};
use crate::door::quietly;
use crate::Next;
use cltrap_capture::LaunchApi;
use libc::size_t;
use opencl_sys::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Number of enqueues seen so far (all of them: the launch window counts filtered ones too).
static SEQ: AtomicU64 = AtomicU64::new(0);

pub unsafe fn clEnqueueNDRangeKernel(
    next: &'static Next,
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const size_t,
    global_work_size: *const size_t,
    local_work_size: *const size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueNDRangeKernel else {
        return CL_INVALID_OPERATION;
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let geo = quietly(|| {
        if !(1..=3).contains(&work_dim) || global_work_size.is_null() {
            return None;
        }
        // SAFETY: with a valid work_dim, non-NULL size arrays hold `work_dim` entries.
        let dims = |p: *const size_t| {
            (!p.is_null()).then(|| {
                unsafe { std::slice::from_raw_parts(p, work_dim as usize) }
                    .iter()
                    .map(|v| *v as u64)
                    .collect::<Vec<u64>>()
            })
        };
        Some(Geometry {
            api: LaunchApi::NdRange,
            work_dim,
            offset: dims(global_work_offset),
            global: dims(global_work_size).unwrap_or_default(),
            local: dims(local_work_size),
        })
    })
    .flatten();
    let _launch = stats::span(Phase::Launch);
    let plan = geo
        .as_ref()
        .and_then(|g| quietly(|| Plan::new(next, seq, command_queue, kernel, g)))
        .flatten();
    run(
        next,
        plan,
        command_queue,
        kernel,
        geo.as_ref(),
        num_events_in_wait_list,
        event_wait_list,
        event,
        |k, local, n, list, ev| {
            f(
                command_queue,
                k,
                work_dim,
                global_work_offset,
                global_work_size,
                local.unwrap_or(local_work_size),
                n,
                list,
                ev,
            )
        },
    )
}

pub unsafe fn clEnqueueTask(
    next: &'static Next,
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueTask else {
        return CL_INVALID_OPERATION;
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let geo = Geometry {
        api: LaunchApi::Task,
        work_dim: 1,
        offset: None,
        global: vec![1],
        local: Some(vec![1]),
    };
    let _launch = stats::span(Phase::Launch);
    let plan = quietly(|| Plan::new(next, seq, command_queue, kernel, &geo)).flatten();
    run(
        next,
        plan,
        command_queue,
        kernel,
        Some(&geo),
        num_events_in_wait_list,
        event_wait_list,
        event,
        |k, _, n, list, ev| f(command_queue, k, n, list, ev),
    )
}

/// Forwards the enqueue exactly once, recording around it when there is a plan. `enqueue`
/// takes the kernel, the local size (`None`: the application's; the swap may choose one
/// for a NULL-local launch), the wait list and the event pointer to forward: the
/// application's, except where documented in [`super::inqueue`].
fn run(
    next: &'static Next,
    plan: Option<Plan>,
    queue: cl_command_queue,
    kernel: cl_kernel,
    geo: Option<&Geometry>,
    num_events: cl_uint,
    events: *const cl_event,
    app_event: *mut cl_event,
    enqueue: impl Fn(
        cl_kernel,
        Option<*const size_t>,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
) -> cl_int {
    // Hook point: live instrumentation may swap the kernel of this launch.
    let swap = geo
        .and_then(|g| quietly(|| crate::swap::before_enqueue(next, queue, kernel, &g.view())))
        .flatten();
    let swapped = swap.is_some();
    let forward = |n: cl_uint, list: *const cl_event, ev: *mut cl_event| {
        let Some(s) = swap else {
            return enqueue(kernel, None, n, list, ev);
        };
        let ret = enqueue(s.kernel, s.local_size(), n, list, ev);
        let swapped_ok = ret == CL_SUCCESS;
        // Hook point: right after the forwarded enqueue, with the launch's event.
        let launch_event = if swapped_ok && !ev.is_null() {
            // SAFETY: the enqueue succeeded, so it stored an event where we asked.
            unsafe { *ev }
        } else {
            std::ptr::null_mut()
        };
        quietly(|| crate::swap::after_enqueue(next, queue, s, ret, launch_event));
        if swapped_ok {
            ret
        } else {
            enqueue(kernel, None, n, list, ev)
        }
    };
    let Some(mut plan) = plan else {
        // Not recorded with contents: whatever the kernel writes is unknown to the capture.
        quietly(|| known::kernel_may_write(kernel as usize));
        return forward(num_events, events, app_event);
    };
    if swapped {
        plan.kernel_swapped();
    }
    let app_wait: &[cl_event] = if num_events == 0 || events.is_null() {
        &[]
    } else {
        // SAFETY: the application passes `num_events` events, as it does to the enqueue.
        unsafe { std::slice::from_raw_parts(events, num_events as usize) }
    };
    let reads = stats::span(Phase::Reads);
    let mut around = quietly(|| plan.start_reads(next, queue, app_wait)).flatten();
    drop(reads);
    let combined = around
        .as_ref()
        .and_then(|a| quietly(|| a.kernel_wait(app_wait)).flatten());
    let (n, list) = match &combined {
        Some(v) => (v.len() as cl_uint, v.as_ptr()),
        None => (num_events, events),
    };
    let mut own: cl_event = std::ptr::null_mut();
    let ev_ptr = if around.is_some() && plan.out_of_order() && app_event.is_null() {
        &mut own as *mut cl_event
    } else {
        app_event
    };
    let enqueued = stats::span(Phase::Enqueue);
    let ret = forward(n, list, ev_ptr);
    drop(enqueued);
    let _hand_over = stats::span(Phase::HandOver);
    quietly(|| {
        let kernel_event = if ret == CL_SUCCESS && !ev_ptr.is_null() {
            // SAFETY: the enqueue succeeded, so it stored an event where we asked.
            unsafe { *ev_ptr }
        } else {
            std::ptr::null_mut()
        };
        plan.hand_over(next, queue, ret, around.take(), kernel_event, own);
    });
    ret
}
