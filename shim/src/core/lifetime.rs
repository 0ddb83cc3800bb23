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
//! Why our own count and not the driver's `CL_*_REFERENCE_COUNT`: drivers count their own
//! references too (a kernel holds its program, a sub-buffer its parent, a command in flight
//! its kernel and buffers), and those go away without a call the shim sees. Here an object
//! starts with 1 at its creation hook, the application's `clRetain*` / `clRelease*` move it,
//! and an object that another one *holds* (a kernel's program, a sub-buffer's or image's
//! parent) also counts each holder until that holder is forgotten: a program the application
//! released while one of its kernels lives is still known when that kernel is launched.
//!
//! Objects the shim never saw created (made through an entry point it does not hook) are not
//! counted and never forgotten: their retains and releases are only forwarded. A launch in
//! flight holds no table entry of its objects (the writer needs none), so an object released
//! right after its enqueue is forgotten at once; the driver keeps it alive until the command
//! completed.

use super::track::{lock, tables};
use crate::door::quietly;
use crate::Next;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// What a counted object is, for what forgetting it means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// A context: forgetting it retires the shim's own objects in it.
    Context,
    /// A command queue (holds its context).
    Queue,
    /// A program, kernel or memory object.
    Object,
}

/// A counted object.
struct Entry {
    /// The application's references plus one per live holder.
    refs: u32,
    /// The object this one holds (a kernel's program, a sub-buffer's parent, a queue's
    /// context).
    holds: Option<usize>,
    kind: Kind,
}

static COUNTS: once_cell::sync::Lazy<Mutex<HashMap<usize, Entry>>> =
    once_cell::sync::Lazy::new(Default::default);

/// A creation hook returned `handle` (with one reference); `holds`: the object it keeps
/// alive. A handle the driver reuses after a release starts afresh.
pub(super) fn born(handle: usize, holds: Option<usize>) {
    born_as(handle, Kind::Object, holds);
}

/// [`born`] for an object of `kind`.
pub(super) fn born_as(handle: usize, kind: Kind, holds: Option<usize>) {
    if handle == 0 {
        return;
    }
    let mut gone = Vec::new();
    {
        let mut counts = lock(&COUNTS);
        let holds = holds.filter(|h| *h != 0 && *h != handle);
        // Not counted (never seen created): nothing to hold.
        let holds = holds.filter(|h| match counts.get_mut(h) {
            Some(e) => {
                e.refs += 1;
                true
            }
            None => false,
        });
        // A stale entry under a reused handle (its release was missed): drop its hold first.
        let entry = Entry {
            refs: 1,
            holds,
            kind,
        };
        if let Some(h) = counts.insert(handle, entry).and_then(|old| old.holds) {
            drop_ref(&mut counts, h, &mut gone);
        }
    }
    forget_all(&gone);
}

/// Whether the application still holds context `context` (a reference or a queue), as far
/// as the shim saw: only then may the shim put objects of its own into it.
pub(super) fn context_held(context: usize) -> bool {
    lock(&COUNTS)
        .get(&context)
        .is_some_and(|e| e.kind == Kind::Context)
}

/// Whether the application's references to queue `queue` are counted (it was created through
/// a hooked entry point and not released for good): the shim then learns of its release.
pub(super) fn counts_queue(queue: usize) -> bool {
    lock(&COUNTS)
        .get(&queue)
        .is_some_and(|e| e.kind == Kind::Queue)
}

/// The application retained `handle` (the driver said yes).
pub(super) fn retained(handle: usize) {
    if let Some(e) = lock(&COUNTS).get_mut(&handle) {
        e.refs = e.refs.saturating_add(1);
    }
}

/// The application released `handle` (the driver said yes): forgets it, and what only it
/// held, when no reference is left.
pub(super) fn released(handle: usize) {
    let mut gone = Vec::new();
    drop_ref(&mut lock(&COUNTS), handle, &mut gone);
    forget_all(&gone);
}

/// Takes one reference off `handle`; collects in `gone` the objects left without any.
fn drop_ref(counts: &mut HashMap<usize, Entry>, handle: usize, gone: &mut Vec<(usize, Kind)>) {
    let mut next = Some(handle);
    while let Some(h) = next.take() {
        let Some(e) = counts.get_mut(&h) else { return };
        e.refs = e.refs.saturating_sub(1);
        if e.refs > 0 {
            return;
        }
        let Some(e) = counts.remove(&h) else { return };
        next = e.holds;
        gone.push((h, e.kind));
    }
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
                crate::swap::forget(*h);
            }
            Kind::Queue => super::queue_ref::app_released(*h),
            Kind::Context => {
                super::digest::retire(*h);
                super::pinned::retire(*h);
            }
        }
    }
}

/// How many objects are counted now (for tests of the shim's own memory).
#[cfg(test)]
fn counted() -> usize {
    lock(&COUNTS).len()
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
                    quietly(|| retained($arg as usize));
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

#[cfg(test)]
mod tests {
    use super::*;

    // Handles far from any real pointer, distinct per test (tests share the table).
    #[test]
    fn a_kernel_keeps_its_program_until_the_kernel_is_released() {
        let (p, k) = (0x7100_0001, 0x7100_0002);
        born(p, None);
        born(k, Some(p));
        released(p);
        assert!(lock(&COUNTS).contains_key(&p), "the kernel still holds it");
        retained(k);
        released(k);
        assert!(lock(&COUNTS).contains_key(&k));
        released(k);
        assert!(!lock(&COUNTS).contains_key(&k));
        assert!(
            !lock(&COUNTS).contains_key(&p),
            "the last holder took it along"
        );
    }

    #[test]
    fn retains_delay_the_end_and_unknown_handles_are_left_alone() {
        let m = 0x7200_0001;
        born(m, None);
        retained(m);
        released(m);
        assert!(lock(&COUNTS).contains_key(&m));
        released(m);
        assert!(!lock(&COUNTS).contains_key(&m));
        let before = counted();
        released(0x7200_0002);
        retained(0x7200_0003);
        assert_eq!(counted(), before);
    }

    #[test]
    fn a_context_stays_held_while_the_application_holds_a_queue_in_it() {
        let (ctx, q) = (0x7400_0001, 0x7400_0002);
        born_as(ctx, Kind::Context, None);
        born_as(q, Kind::Queue, Some(ctx));
        assert!(context_held(ctx));
        released(ctx);
        assert!(context_held(ctx), "its queue still holds it");
        released(q);
        assert!(!context_held(ctx));
        assert!(!context_held(q), "a queue is not a context");
    }

    #[test]
    fn a_reused_handle_starts_afresh_and_lets_go_of_its_old_hold() {
        let (parent, sub) = (0x7300_0001, 0x7300_0002);
        born(parent, None);
        born(sub, Some(parent));
        released(parent);
        // The sub-buffer's release was missed and the driver reused its handle.
        born(sub, None);
        assert!(!lock(&COUNTS).contains_key(&parent));
        released(sub);
        assert!(!lock(&COUNTS).contains_key(&sub));
    }
}
