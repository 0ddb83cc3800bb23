//! Whether the current thread is running one of the application's event callbacks.
//!
//! Why: the specification leaves undefined what `clBuildProgram`, `clCreateCommandQueue` and
//! blocking operations do inside a callback, and an application may enqueue a launch from its
//! completion callback. The capture must not make those calls there on its own account: a
//! launch from a callback uses the digest engine and the pinned pool only if they already
//! exist (and takes no new pinned slab); otherwise its buffers are read back, and the engine is
//! built by a later launch on an ordinary thread ([`super::digest`], [`super::pinned`]).
//!
//! How: `clSetEventCallback` registers a trampoline of ours with the application's function
//! and user data boxed; the trampoline marks the thread for the duration of the call. The
//! application's function is called exactly as the driver would call it (the same event,
//! status and user data). Other callbacks (destructor callbacks, build notifications) are not
//! wrapped: launching from those is not seen in practice.

use crate::Next;
use libc::c_void;
use opencl_sys::*;
use std::cell::Cell;

thread_local! {
    /// Application callbacks running on this thread (nested calls count).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread is inside an application's event callback.
pub(super) fn inside() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// The application's event callback, as the specification types it.
type Notify = unsafe extern "C" fn(event: cl_event, status: cl_int, user_data: *mut c_void);

/// One registration: the application's function and its user data.
struct Registered {
    notify: Notify,
    user_data: *mut c_void,
}

/// Marks the thread while the application's callback runs (also when it unwinds).
struct Mark;

impl Mark {
    fn enter() -> Mark {
        DEPTH.with(|d| d.set(d.get().saturating_add(1)));
        Mark
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// What the driver calls: the application's function, on a marked thread. The driver calls
/// each registration once, so the box is freed after the call.
unsafe extern "C" fn trampoline(event: cl_event, status: cl_int, user_data: *mut c_void) {
    // SAFETY: `user_data` is the box `clSetEventCallback` leaked for this registration.
    let reg = unsafe { Box::from_raw(user_data.cast::<Registered>()) };
    let _mark = Mark::enter();
    // SAFETY: the application's callback with its own arguments, as the driver would call it.
    unsafe { (reg.notify)(event, status, reg.user_data) };
}

/// `clSetEventCallback`: registers [`trampoline`] in place of the application's function.
pub unsafe fn clSetEventCallback(
    next: &Next,
    event: cl_event,
    command_exec_callback_type: cl_int,
    pfn_notify: Option<Notify>,
    user_data: *mut c_void,
) -> cl_int {
    let Some(f) = next.clSetEventCallback else {
        return CL_INVALID_OPERATION;
    };
    // A NULL function is the application's error: the driver says so.
    let Some(notify) = pfn_notify else {
        return f(event, command_exec_callback_type, None, user_data);
    };
    let reg = Box::into_raw(Box::new(Registered { notify, user_data }));
    let ret = f(
        event,
        command_exec_callback_type,
        Some(trampoline),
        reg.cast(),
    );
    if ret != CL_SUCCESS {
        // Not registered: the driver will never call it.
        // SAFETY: the box made above, not handed to anyone.
        drop(unsafe { Box::from_raw(reg) });
    }
    ret
}
