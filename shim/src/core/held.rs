//! The references the shim itself holds on the application's objects, left out of the
//! `CL_*_REFERENCE_COUNT` answers the application reads.
//!
//! Why: an application may read its objects' reference counts (leak checks, wrappers that
//! assert them), and under the shim the driver also counts what the shim holds: the reference
//! it takes on a queue with launches of its own in flight ([`super::queue_ref`]), and the
//! objects it creates in the application's context (the device-digest engine's program, queue
//! and buffers, the pinned-memory pool's queue and buffers), which drivers such as PoCL count
//! in the context's references. Each such hold is registered here, per application object,
//! and the info hooks subtract them.
//!
//! Whether a driver counts an object of ours in its context's references differs between
//! drivers, so it is asked once per device, on a private context of the shim's ([`probe`]),
//! the first time an application reads the count of a context that has objects of ours.
//!
//! Consistency: a hold changes around a driver call (the retain, the release, the creation),
//! so a count read while that call runs could include it or not. A change marks its object
//! `changing` before the call and settles it after; an answer waits (briefly) until no change
//! of its object is under way, then asks the driver and subtracts while holding the table's
//! lock, so no change can start or end between the driver's count and what is subtracted.

use super::track::lock;
use crate::handles::HandleMap;
use crate::Next;
use libc::c_void;
use opencl_sys::*;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How the shim holds an application object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Hold {
    /// A reference taken with `clRetain*` (always counted by the driver).
    Retain,
    /// An object of ours created in the application's context (counted by the driver in the
    /// context's references or not, as [`probe`] found for the device).
    Child(Child, usize),
}

/// The kind of an object of ours made in an application's context.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Child {
    Buffer = 0,
    Queue = 1,
    Program = 2,
}

/// The holds on one application object.
#[derive(Default)]
struct Entry {
    retains: u32,
    /// (device, kind) → objects of ours.
    children: Vec<((usize, Child), u32)>,
    /// Changes under way (their driver call has not returned yet).
    changing: u32,
}

impl Entry {
    fn is_empty(&self) -> bool {
        self.retains == 0 && self.children.is_empty() && self.changing == 0
    }
}

static HELD: once_cell::sync::Lazy<Mutex<HandleMap<usize, Entry>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Per device: how many context references the driver counts for a buffer, a queue and a
/// program of ours (indexed by [`Child`]).
static FACTORS: once_cell::sync::Lazy<Mutex<HandleMap<usize, [u32; 3]>>> =
    once_cell::sync::Lazy::new(Default::default);

thread_local! {
    /// Changes this thread has under way: an application callback the driver runs inside one
    /// (a release that destroyed an object) does not wait for the others to end.
    static CHANGING_HERE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// How long an answer waits for a change of its object to end (a release that destroys the
/// object may run callbacks of the application's; past this the driver's count is answered
/// minus the holds known at that moment).
const CHANGE_WAIT: Duration = Duration::from_secs(2);

fn apply(entry: &mut Entry, hold: Hold, up: bool) {
    match hold {
        Hold::Retain if up => entry.retains += 1,
        Hold::Retain => entry.retains = entry.retains.saturating_sub(1),
        Hold::Child(kind, device) => {
            let key = (device, kind);
            match entry.children.iter_mut().position(|(k, _)| *k == key) {
                Some(i) if up => entry.children[i].1 += 1,
                Some(i) => {
                    entry.children[i].1 = entry.children[i].1.saturating_sub(1);
                    if entry.children[i].1 == 0 {
                        entry.children.swap_remove(i);
                    }
                }
                None if up => entry.children.push((key, 1)),
                None => {}
            }
        }
    }
}

/// Runs `f` (the driver call that takes a hold of the shim's on `object`) and registers the
/// hold when it returns `Some`.
pub(super) fn take<T>(object: usize, hold: Hold, f: impl FnOnce() -> Option<T>) -> Option<T> {
    change(object, hold, true, || {
        let r = f();
        let ok = r.is_some();
        (r, ok)
    })
}

/// Runs `f` (the driver call that gives back a hold of the shim's on `object`) and forgets
/// the hold (also when the driver refused: it is never given back twice).
pub(super) fn give(object: usize, hold: Hold, f: impl FnOnce()) {
    change(object, hold, false, || (f(), true));
}

fn change<T>(object: usize, hold: Hold, up: bool, f: impl FnOnce() -> (T, bool)) -> T {
    if object == 0 {
        return f().0;
    }
    lock(&HELD).entry(object).or_default().changing += 1;
    // The driver call runs without our lock: a release may destroy the object and call back
    // into the application.
    CHANGING_HERE.with(|c| c.set(c.get() + 1));
    let (r, done) = f();
    CHANGING_HERE.with(|c| c.set(c.get().saturating_sub(1)));
    let mut held = lock(&HELD);
    if let Some(e) = held.get_mut(&object) {
        e.changing = e.changing.saturating_sub(1);
        if done {
            apply(e, hold, up);
        }
        if e.is_empty() {
            held.remove(&object);
        }
    }
    r
}

/// Answers an application's `CL_*_REFERENCE_COUNT` query of `object`: asks the driver through
/// `query` and subtracts the holds of the shim (the answer is the driver's for everything
/// else, errors included). `value` and `size` are the application's output buffer.
///
/// # Safety
/// `value` is null or points to `size` writable bytes (the application's buffer).
pub(super) unsafe fn answer(
    next: &Next,
    object: usize,
    value: *mut c_void,
    size: usize,
    query: impl Fn() -> cl_int,
) -> cl_int {
    let devices: Vec<usize> = crate::door::quietly(|| {
        lock(&HELD)
            .get(&object)
            .map(|e| e.children.iter().map(|((d, _), _)| *d).collect())
            .unwrap_or_default()
    })
    .unwrap_or_default();
    for d in devices {
        crate::door::quietly(|| factors(next, d));
    }
    let deadline = Instant::now() + CHANGE_WAIT;
    loop {
        let held = lock(&HELD);
        let changing = held.get(&object).is_some_and(|e| e.changing > 0)
            && CHANGING_HERE.with(|c| c.get()) == 0;
        if changing && Instant::now() < deadline {
            drop(held);
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        let ret = query();
        if ret != CL_SUCCESS || value.is_null() || size < std::mem::size_of::<cl_uint>() {
            return ret;
        }
        let ours = held.get(&object).map_or(0, |e| {
            let factors = lock(&FACTORS);
            e.retains
                + e.children
                    .iter()
                    .map(|((d, kind), n)| factors.get(d).map_or(0, |f| f[*kind as usize]) * n)
                    .sum::<u32>()
        });
        if ours > 0 {
            // SAFETY: the driver just wrote a cl_uint there (the size was checked).
            unsafe {
                let count = value.cast::<cl_uint>();
                count.write_unaligned(count.read_unaligned().saturating_sub(ours).max(1));
            }
        }
        return ret;
    }
}

/// The context references the driver counts for objects of ours on `device`, asked once
/// (not from inside an application's event callback, where making a context is undefined:
/// then nothing is subtracted for them this time).
fn factors(next: &Next, device: usize) {
    if lock(&FACTORS).contains_key(&device) || super::callback::inside() {
        return;
    }
    let found = probe(next, device as cl_device_id).unwrap_or([0; 3]);
    lock(&FACTORS).insert(device, found);
}

/// Makes a private context on `device` and reads its reference count before and after
/// creating a buffer, a queue and a program in it (None: something could not be made; then
/// nothing is subtracted).
fn probe(next: &Next, device: cl_device_id) -> Option<[u32; 3]> {
    let create = next.clCreateContext?;
    let info = next.clGetContextInfo?;
    let release_ctx = next.clReleaseContext?;
    let mut err = CL_SUCCESS;
    // SAFETY: a context of ours for one device the application uses.
    let ctx = unsafe {
        create(
            std::ptr::null(),
            1,
            &device,
            None,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    if ctx.is_null() {
        return None;
    }
    let count = || {
        // SAFETY: a standard info query on our own live context.
        super::info::value::<cl_uint>(|s, p, r| unsafe {
            info(ctx, CL_CONTEXT_REFERENCE_COUNT, s, p, r)
        })
    };
    let mut out = [0u32; 3];
    let made = (|| {
        let c0 = count()?;
        let mut err = CL_SUCCESS;
        // SAFETY: a small buffer of ours in our context.
        let buf = unsafe {
            (next.clCreateBuffer?)(ctx, CL_MEM_READ_WRITE, 64, std::ptr::null_mut(), &mut err)
        };
        let c1 = if buf.is_null() { None } else { count() };
        // SAFETY: a plain queue of ours in our context.
        let q = unsafe { (next.clCreateCommandQueue?)(ctx, device, 0, &mut err) };
        let c2 = if q.is_null() { None } else { count() };
        let source = c"__kernel void k(void) {}";
        let src = source.as_ptr();
        // SAFETY: a program of ours from one NUL-terminated string.
        let p = unsafe {
            (next.clCreateProgramWithSource?)(
                ctx,
                1,
                &src as *const _ as *mut _,
                std::ptr::null(),
                &mut err,
            )
        };
        let c3 = if p.is_null() { None } else { count() };
        // SAFETY: our own objects, released once each.
        unsafe {
            if !p.is_null() {
                if let Some(f) = next.clReleaseProgram {
                    f(p);
                }
            }
            if !q.is_null() {
                if let Some(f) = next.clReleaseCommandQueue {
                    f(q);
                }
            }
            if !buf.is_null() {
                if let Some(f) = next.clReleaseMemObject {
                    f(buf);
                }
            }
        }
        let (c1, c2, c3) = (c1?, c2?, c3?);
        out = [
            c1.saturating_sub(c0),
            c2.saturating_sub(c1),
            c3.saturating_sub(c2),
        ];
        Some(())
    })();
    // SAFETY: our context, released once.
    unsafe { release_ctx(ctx) };
    made.map(|_| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_are_counted_per_object_and_forgotten_when_given_back() {
        let (q, c) = (0x7300_0001usize, 0x7300_0002usize);
        take(q, Hold::Retain, || Some(()));
        take(c, Hold::Child(Child::Buffer, 9), || Some(()));
        take(c, Hold::Child(Child::Buffer, 9), || Some(()));
        take(c, Hold::Child(Child::Queue, 9), || None::<()>);
        {
            let held = lock(&HELD);
            assert_eq!(held[&q].retains, 1);
            assert_eq!(held[&c].children, vec![((9, Child::Buffer), 2)]);
            assert_eq!(held[&c].changing, 0);
        }
        give(q, Hold::Retain, || ());
        give(c, Hold::Child(Child::Buffer, 9), || ());
        give(c, Hold::Child(Child::Buffer, 9), || ());
        let held = lock(&HELD);
        assert!(!held.contains_key(&q) && !held.contains_key(&c));
    }
}
