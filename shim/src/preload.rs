//! The "next" definitions for the LD_PRELOAD door: what each export forwards to.
//!
//! `dlsym(RTLD_NEXT, name)` finds the loader (or vendor library) the application linked;
//! when there is none (pyopencl loads its own loader privately, with `RTLD_LOCAL`), the system
//! loader `libOpenCL.so.1` is opened instead. The table is resolved once, on the first call,
//! and has the same shape as the layer's next table so one interception core serves both.

use crate::api::cl_api;
use crate::Next;
use libc::{c_void, RTLD_LOCAL, RTLD_NEXT, RTLD_NOW};
use once_cell::sync::Lazy;
use opencl_sys::cl_icd::*;

static TABLE: Lazy<Next> = Lazy::new(resolve);

/// The table of next definitions (resolved on first use).
#[inline]
pub fn next() -> &'static Next {
    &TABLE
}

/// Load address of the module the exports forward to (0 when none was found).
pub fn loader_base() -> usize {
    match next().clGetPlatformIDs {
        Some(f) => crate::site::module_base(f as usize),
        None => 0,
    }
}

fn resolve() -> Next {
    // SAFETY: dlsym/dlopen with NUL-terminated names; a null handle result is checked.
    let handle = unsafe {
        if !libc::dlsym(RTLD_NEXT, c"clGetPlatformIDs".as_ptr()).is_null() {
            RTLD_NEXT
        } else {
            let h = libc::dlopen(c"libOpenCL.so.1".as_ptr(), RTLD_NOW | RTLD_LOCAL);
            if h.is_null() {
                libc::dlopen(c"libOpenCL.so".as_ptr(), RTLD_NOW | RTLD_LOCAL)
            } else {
                h
            }
        }
    };
    // SAFETY: an all-zero dispatch table is valid: every entry is an `Option` of a function
    // pointer (None) or an integer placeholder.
    let mut table: Next = unsafe { std::mem::zeroed() };
    if handle.is_null() {
        return table;
    }
    macro_rules! fill {
        ($($kind:ident $name:ident = $ty:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty;)*) => {
            $(
                // SAFETY: the symbol named like the entry point has its signature (the loader
                // ABI); a null pointer becomes `None`.
                table.$name = unsafe {
                    let p: *mut c_void = libc::dlsym(handle, concat!(stringify!($name), "\0").as_ptr().cast());
                    std::mem::transmute::<*mut c_void, $ty>(p)
                };
            )*
        };
    }
    cl_api!(fill);
    table
}
