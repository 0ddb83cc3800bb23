//! Object lifetimes: the application's own reference counts of its contexts, command queues,
//! programs, kernels and memory objects, so that the shim forgets an object (its sources,
//! arguments, facts, what [`super::known`] remembers of it, its instrumented twin) once the
//! application released it for good, and gives back its own OpenCL objects in a context the
//! application is done with (the digest engines of [`super::digest`], the pinned pool of
//! [`super::pinned`]): they hold the context, and a context the application released must be
//! destroyed as without the shim. A long-running application that creates and releases objects
//! (contexts included) in a loop then keeps the shim's memory, and the driver's, flat.
//!
//! When the application is done with a context: when it holds no reference of its own to it
//! and no command queue in it. Without a queue it cannot launch there any more; its buffers,
//! programs and events in that context still keep the driver's context alive, but need nothing
//! of ours. So a queue holds its context like a kernel holds its program, and a context whose
//! count reaches zero is *retired*: the shim drops its objects there, each released by the
//! driver once the last launch in flight that uses it has been written (those launches hold
//! them, see [`super::flight::DevItem`]). A context the shim does not count (never seen
//! created, or already retired) gets no new objects of ours: launches there read back.
//!
//! The counting itself is [`super::refcount`]'s (why our own count and not the driver's is
//! said there); this module forgets what the counts say is gone. A program the application
//! released while one of its kernels lives is still known when that kernel is launched.
//!
//! Job: the retain/release hooks and the fan-out of forgetting. It sits above every module that
//! keeps something per object and must not be imported by them (they ask
//! [`super::refcount`]).
//!
//! Objects the shim never saw created (made through an entry point it does not hook) are not
//! counted and never forgotten: their retains and releases are only forwarded. A launch in
//! flight holds no table entry of its objects (the writer needs none), so an object released
//! right after its enqueue is forgotten at once; the driver keeps it alive until the command
//! completed.

use super::refcount::{self, Kind};
use super::track::tables;
use crate::door::quietly;
use crate::Next;
use opencl_sys::*;

/// A creation hook returned `handle` (with one reference); `holds`: the object it keeps
/// alive. A handle the driver reuses after a release starts afresh.
pub(super) fn born(handle: usize, holds: Option<usize>) {
    born_as(handle, Kind::Object, holds);
}

/// [`born`] for an object of `kind`.
pub(super) fn born_as(handle: usize, kind: Kind, holds: Option<usize>) {
    forget_all(&refcount::born_as(handle, kind, holds));
}

/// The application released `handle` (the driver said yes): forgets it, and what only it
/// held, when no reference is left.
pub(super) fn released(handle: usize) {
    forget_all(&refcount::released(handle));
}

/// Drops everything the shim keeps about these objects, and retires its own objects in the
/// contexts among them (no lock of ours held: releasing our objects may destroy a context,
/// and the driver then calls the application's destructor callback on this thread).
fn forget_all(gone: &[(usize, Kind)]) {
    for (h, kind) in gone {
        match kind {
            Kind::Object => {
                tables().forget(*h);
                super::known::forget(*h);
                super::contents::versions::forget(*h);
                super::inplace::forget(*h);
                crate::swap::forget(*h);
            }
            Kind::Queue => super::queue_ref::app_released(*h),
            Kind::Context => {
                super::prepare::forget(*h);
                super::digest::retire(*h);
                super::pinned::retire(*h);
                super::inplace::retire(*h);
            }
        }
    }
}

macro_rules! lifetime_hooks {
    ($($retain:ident $release:ident ($arg:ident : $t:ty);)*) => {
        $(
            #[doc = concat!("`", stringify!($retain), "`: one more reference of the application's.")]
            pub unsafe fn $retain(next: &Next, $arg: $t) -> cl_int {
                let Some(f) = next.$retain else {
                    return CL_INVALID_OPERATION;
                };
                let ret = f($arg);
                if ret == CL_SUCCESS {
                    quietly(|| refcount::retained($arg as usize));
                }
                ret
            }

            #[doc = concat!("`", stringify!($release), "`: one reference fewer; at none, the shim forgets the object.")]
            pub unsafe fn $release(next: &Next, $arg: $t) -> cl_int {
                let Some(f) = next.$release else {
                    return CL_INVALID_OPERATION;
                };
                let ret = f($arg);
                if ret == CL_SUCCESS {
                    quietly(|| released($arg as usize));
                }
                ret
            }
        )*
    };
}

lifetime_hooks! {
    clRetainContext clReleaseContext (context: cl_context);
    clRetainProgram clReleaseProgram (program: cl_program);
    clRetainKernel clReleaseKernel (kernel: cl_kernel);
    clRetainMemObject clReleaseMemObject (memobj: cl_mem);
}
