//! The application's own reference counts of its contexts, command queues, programs, kernels
//! and memory objects, as the shim sees them through its creation, retain and release hooks.
//!
//! Job: count, and say which objects the application is done with. It must not forget or
//! release anything itself (that is [`super::lifetime`]'s, which sits above every module that
//! keeps something per object), so the modules that only ask ([`context_held`],
//! [`counts_queue`]) need nothing above them.
//!
//! Why our own count and not the driver's `CL_*_REFERENCE_COUNT`: drivers count their own
//! references too (a kernel holds its program, a sub-buffer its parent, a command in flight
//! its kernel and buffers), and those go away without a call the shim sees. Here an object
//! starts with 1 at its creation hook, the application's `clRetain*` / `clRelease*` move it,
//! and an object that another one *holds* (a kernel's program, a sub-buffer's or image's
//! parent, a queue's context) also counts each holder until that holder is gone.
//!
//! Invariants:
//! * Objects the shim never saw created are not counted: their retains and releases change
//!   nothing here.
//! * An object is reported gone exactly once per life (a handle the driver reuses starts
//!   afresh), together with what only it held.

use super::track::lock;
use std::collections::HashMap;
use std::sync::Mutex;

/// Objects left without any reference: (handle, what it is).
pub(super) type Gone = Vec<(usize, Kind)>;

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

/// A creation hook returned `handle` (with one reference), an object of `kind`; `holds`: the
/// object it keeps alive. A handle the driver reuses after a release starts afresh. Returns
/// the objects left without any reference (a stale entry's hold let go), for the caller to
/// forget.
pub(super) fn born_as(handle: usize, kind: Kind, holds: Option<usize>) -> Gone {
    let mut gone = Vec::new();
    if handle == 0 {
        return gone;
    }
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
    gone
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

/// The application released `handle` (the driver said yes). Returns it, and what only it
/// held, when no reference is left, for the caller to forget.
pub(super) fn released(handle: usize) -> Gone {
    let mut gone = Vec::new();
    drop_ref(&mut lock(&COUNTS), handle, &mut gone);
    gone
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

/// How many objects are counted now (for tests of the shim's own memory).
#[cfg(test)]
fn counted() -> usize {
    lock(&COUNTS).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn born(handle: usize, holds: Option<usize>) {
        let _ = born_as(handle, Kind::Object, holds);
    }

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
