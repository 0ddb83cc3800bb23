//! The interception core: one function per hooked entry point, taking the "next" dispatch
//! table of whichever door the call came through. Nothing here knows about doors.
//!
//! Every function forwards the application's call exactly once, outside any panic guard, and
//! does its own work before/after it inside [`crate::door::quietly`].

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::api::cl_api;
use crate::Next;
use libc::{c_char, c_void, intptr_t, size_t};
use opencl_sys::cl_egl::*;
use opencl_sys::cl_icd::*;
use opencl_sys::*;

macro_rules! forwarders {
    ($($kind:ident $name:ident = $ty:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty;)*) => {
        $( forwarder!($kind $name, ($($p: $t),*) -> $r); )*
    };
}
macro_rules! forwarder {
    (plain $name:ident, ($($p:ident : $t:ty),*) -> $r:ty) => {};
    (hook $name:ident, ($($p:ident : $t:ty),*) -> $r:ty) => {
        pub(crate) unsafe fn $name(next: &Next, $($p: $t),*) -> $r {
            match next.$name {
                Some(f) => f($($p),*),
                None => <$r as crate::exports::Missing>::missing(),
            }
        }
    };
}
cl_api!(forwarders);

#[allow(dead_code)]
type Unused = (c_char, c_void, intptr_t, size_t);
