//! The LD_PRELOAD door: every OpenCL entry point the Linux loader exports, exported again.
//!
//! Each export forwards to [`crate::preload::next`]. Hooked entry points go through the
//! interception core while [`crate::door::exports_record`] says this door records; otherwise
//! (capture off, or our layer serves the same loader) they are a plain forward. Every export's
//! signature is checked at compile time against opencl-sys' `<name>_t`.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::api::cl_api;
use libc::{c_char, c_void, intptr_t, size_t};
use opencl_sys::cl_egl::*;
use opencl_sys::cl_icd::*;
use opencl_sys::*;

/// What an export returns when there is nothing to forward to (no OpenCL loader at all).
pub trait Missing {
    /// The failure value of this return type.
    fn missing() -> Self;
}
impl Missing for cl_int {
    fn missing() -> Self {
        CL_INVALID_OPERATION
    }
}
impl<T> Missing for *mut T {
    fn missing() -> Self {
        std::ptr::null_mut()
    }
}
impl Missing for () {
    fn missing() -> Self {}
}

macro_rules! body {
    (plain $name:ident, $f:ident, ($($p:ident),*)) => {
        $f($($p),*)
    };
    (hook $name:ident, $f:ident, ($($p:ident),*)) => {
        if crate::door::exports_record() {
            let _scope = crate::door::ExportScope::enter();
            crate::core::$name(crate::preload::next(), $($p),*)
        } else {
            $f($($p),*)
        }
    };
}

/// The body of one export: forward, through the core when hooked.
macro_rules! forward {
    ($kind:ident $name:ident [$($err:ident)?] ($($p:ident),*) -> $r:ty) => {
        match crate::preload::next().$name {
            Some(f) => body!($kind $name, f, ($($p),*)),
            None => {
                $(
                    if !$err.is_null() {
                        // SAFETY: the caller passed a writable errcode pointer or NULL.
                        unsafe { *$err = CL_INVALID_OPERATION };
                    }
                )?
                <$r as Missing>::missing()
            }
        }
    };
}

/// One export. The launch entry points are entered through [`crate::caller`]'s trampoline
/// (the application's return address becomes the launch site without unwinding); their
/// body lives in a module of the same name.
macro_rules! export_fn {
    (hook clEnqueueNDRangeKernel $($rest:tt)*) => { export_launch!(clEnqueueNDRangeKernel $($rest)*); };
    (hook clEnqueueTask $($rest:tt)*) => { export_launch!(clEnqueueTask $($rest)*); };
    ($kind:ident $name:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $r {
            forward!($kind $name [$($err)?] ($($p),*) -> $r)
        }
    };
}

macro_rules! export_launch {
    ($name:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty) => {
        mod $name {
            use super::*;
            pub(super) unsafe extern "C" fn body($($p: $t),*) -> $r {
                let _caller = crate::caller::Scope::enter();
                forward!(hook $name [$($err)?] ($($p),*) -> $r)
            }
        }
        crate::caller::launch_entry!(#[no_mangle] pub $name => $name::body, ($($p: $t),*) -> $r);
    };
}

macro_rules! exports {
    ($($kind:ident $name:ident = $ty:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty;)*) => {
        $(
            export_fn!($kind $name [$($err)?] ($($p: $t),*) -> $r);
            const _: $ty = Some($name);
        )*
    };
}

cl_api!(exports);

macro_rules! hooked_exports {
    ($($kind:ident $name:ident = $ty:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty;)*) => {
        /// Our export of the hooked entry point `name` (None: not hooked), for
        /// [`crate::extension`]: a hooked function looked up by name goes through the shim too.
        pub(crate) fn hooked(name: &str) -> Option<*mut c_void> {
            $( hooked_one!($kind $name, name); )*
            None
        }
    };
}

/// One arm of `hooked` (shared with the layer door's).
macro_rules! hooked_one {
    (plain $name:ident, $q:ident) => {};
    (hook $name:ident, $q:ident) => {
        if $q == stringify!($name) {
            return Some($name as *const () as *mut c_void);
        }
    };
}
pub(crate) use hooked_one;

cl_api!(hooked_exports);

#[allow(dead_code)]
type Unused = (c_char, c_void, intptr_t, size_t);
