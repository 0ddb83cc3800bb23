//! Entry points handed out by `clGetExtensionFunctionAddress[ForPlatform]`: applications that
//! look functions up by name (extension functions such as `clCreateProgramWithILKHR`, and
//! sometimes core ones) get functions that go through the shim like the exported ones.
//!
//! * A core entry point the shim hooks (`clCreateProgramWithIL`, `clEnqueueNDRangeKernel`,
//!   ...): the door's own hooked function ([`crate::exports::hooked`] or
//!   [`crate::layer::hooked`]), which reaches the same driver through the loader.
//! * An extension alias of a hooked core function with the same signature
//!   (`clCreateProgramWithILKHR`, `clSetKernelArgSVMPointerARM`): a trampoline of ours that
//!   runs the core hook with a dispatch table whose entry for the core function is the
//!   driver's extension function. Each distinct driver function (one per platform) takes one
//!   of [`SLOTS`] trampolines; past them, the driver's own function is returned unchanged.
//! * Anything else, and names the driver does not know (NULL): the driver's answer, as is.

use crate::Next;
use libc::{c_char, c_void, size_t};
use once_cell::sync::OnceCell;
use opencl_sys::*;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Distinct driver functions per alias (platforms of one process) that get a trampoline.
const SLOTS: usize = 4;

/// One trampoline's binding: the driver function it stands for and the table it runs with.
struct Slot {
    /// The driver's function (0: free).
    key: AtomicUsize,
    table: OnceCell<&'static Next>,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            key: AtomicUsize::new(0),
            table: OnceCell::new(),
        }
    }
}

/// Binds `found` to a free slot of `slots` (or the one it already has); the slot's table is
/// `next` with `set` applied. None: every slot is taken by another driver function.
fn bind(
    slots: &'static [Slot; SLOTS],
    next: &'static Next,
    found: usize,
    set: impl FnOnce(&mut Next),
) -> Option<usize> {
    let i = (0..SLOTS)
        .find(|i| slots[*i].key.load(Ordering::Acquire) == found)
        .or_else(|| {
            (0..SLOTS).find(|i| {
                slots[*i]
                    .key
                    .compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            })
        })?;
    slots[i].table.get_or_init(|| {
        let mut table = Box::new(*next);
        set(&mut table);
        Box::leak(table)
    });
    Some(i)
}

/// Defines, per alias, its slots, one trampoline per slot, and an arm of [`alias`].
macro_rules! aliases {
    ($($alias:literal => $core:ident: $ty:ident, $slots:ident, $tramp:ident,
       fn($($p:ident : $t:ty),*) -> $r:ty;)*) => {
        $(
            static $slots: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

            unsafe extern "C" fn $tramp<const N: usize>($($p: $t),*) -> $r {
                match $slots[N].table.get() {
                    Some(next) => crate::core::$core(next, $($p),*),
                    // Unreachable: a trampoline is handed out only once its table is set.
                    None => <$r as crate::exports::Missing>::missing(),
                }
            }
        )*

        /// A trampoline for the extension function `name` that the driver answered with
        /// `found`, if `name` is an alias of a hooked core function.
        fn alias(next: &'static Next, name: &str, found: *mut c_void) -> Option<*mut c_void> {
            $(
                if name == $alias {
                    // SAFETY: the driver returned this function for this name, whose
                    // signature is the core function's.
                    let f: opencl_sys::cl_function_types::$ty =
                        unsafe { std::mem::transmute::<*mut c_void, _>(found) };
                    let i = bind(&$slots, next, found as usize, |t| t.$core = f)?;
                    let fns: [unsafe extern "C" fn($($t),*) -> $r; SLOTS] =
                        [$tramp::<0>, $tramp::<1>, $tramp::<2>, $tramp::<3>];
                    return Some(fns[i] as *mut c_void);
                }
            )*
            None
        }
    };
}

aliases! {
    "clCreateProgramWithILKHR" => clCreateProgramWithIL: clCreateProgramWithIL_t, IL_KHR, il_khr,
        fn(context: cl_context, il: *const c_void, length: size_t, errcode_ret: *mut cl_int)
            -> cl_program;
    "clSetKernelArgSVMPointerARM" => clSetKernelArgSVMPointer: clSetKernelArgSVMPointer_t,
        SVM_ARM, svm_arm,
        fn(kernel: cl_kernel, arg_index: cl_uint, arg_value: *const c_void) -> cl_int;
}

/// What the application gets for `name`, which the driver answered with `found`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string (the application passed it to the driver).
pub(crate) unsafe fn resolve(
    next: &'static Next,
    name: *const c_char,
    found: *mut c_void,
) -> *mut c_void {
    if found.is_null() || name.is_null() {
        return found;
    }
    // SAFETY: the caller's NUL-terminated string.
    let Ok(name) = unsafe { CStr::from_ptr(name) }.to_str() else {
        return found;
    };
    let ours = if std::ptr::eq(next, crate::preload::next()) {
        crate::exports::hooked(name)
    } else {
        crate::layer::hooked(name)
    };
    ours.or_else(|| alias(next, name, found)).unwrap_or(found)
}
