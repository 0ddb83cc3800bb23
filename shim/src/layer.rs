//! The ICD-loader layer door (`OPENCL_LAYERS`, `cl_loader_layers`).
//!
//! The loader calls [`clInitLayer`] with the next dispatch table (the next layer, or the
//! loader's own object dispatch). We keep a copy of it and hand back our own table: the same
//! entries, except that hooked entry points go through the interception core with that copy as
//! their "next". This door sees applications that `dlopen` the loader and look functions up by
//! handle, which no preloaded symbol can.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::api::cl_api;
use crate::Next;
use libc::{c_char, c_void, intptr_t, size_t};
use once_cell::sync::OnceCell;
use opencl_sys::cl_icd::*;
use opencl_sys::cl_layer::*;
use opencl_sys::*;

/// The next table the loader gave us (set once, never changed: the loader keeps it alive).
static NEXT: OnceCell<Box<Next>> = OnceCell::new();
/// Our own table, handed to the loader.
static OURS: OnceCell<Box<Next>> = OnceCell::new();

const ENTRIES: usize = std::mem::size_of::<Next>() / std::mem::size_of::<usize>();

/// The next table of the layer door.
#[inline]
fn next() -> &'static Next {
    // Only reachable through OURS, which is set after NEXT.
    NEXT.get()
        .map(|b| &**b)
        .unwrap_or_else(|| crate::preload::next())
}

/// The body of one hook: through the core, unless the export door records this call.
macro_rules! layer_body {
    ($name:ident, ($($p:ident),*) -> $r:ty) => {{
        let next = next();
        if crate::door::export_recording_here() {
            match next.$name {
                Some(f) => f($($p),*),
                None => <$r as crate::exports::Missing>::missing(),
            }
        } else {
            crate::core::$name(next, $($p),*)
        }
    }};
}

/// One hook. The launch entry points are entered through [`crate::caller`]'s trampoline, as
/// in the export door (an outer export's caller stays current).
macro_rules! layer_fns {
    (plain $name:ident, ($($p:ident : $t:ty),*) -> $r:ty) => {};
    (hook clEnqueueNDRangeKernel, $($rest:tt)*) => { layer_launch!(clEnqueueNDRangeKernel, $($rest)*); };
    (hook clEnqueueTask, $($rest:tt)*) => { layer_launch!(clEnqueueTask, $($rest)*); };
    (hook $name:ident, ($($p:ident : $t:ty),*) -> $r:ty) => {
        pub(crate) unsafe extern "C" fn $name($($p: $t),*) -> $r {
            layer_body!($name, ($($p),*) -> $r)
        }
    };
}

macro_rules! layer_launch {
    ($name:ident, ($($p:ident : $t:ty),*) -> $r:ty) => {
        mod $name {
            use super::*;
            pub(crate) unsafe extern "C" fn body($($p: $t),*) -> $r {
                let _caller = crate::caller::Scope::enter();
                layer_body!($name, ($($p),*) -> $r)
            }
        }
        crate::caller::launch_entry!(pub(crate) $name => $name::body, ($($p: $t),*) -> $r);
    };
}

macro_rules! layer_table {
    ($($kind:ident $name:ident = $ty:ident [$($err:ident)?] ($($p:ident : $t:ty),*) -> $r:ty;)*) => {
        mod hooks {
            use super::*;
            $( layer_fns!($kind $name, ($($p: $t),*) -> $r); )*
        }
        fn install_hooks(table: &mut Next) {
            $( install_hook!($kind $name, table); )*
        }

        /// This door's hook of the entry point `name` (None: not hooked), for
        /// [`crate::extension`].
        pub(crate) fn hooked(name: &str) -> Option<*mut c_void> {
            use hooks::*;
            $( crate::exports::hooked_one!($kind $name, name); )*
            None
        }
    };
}

macro_rules! install_hook {
    (plain $name:ident, $table:ident) => {};
    (hook $name:ident, $table:ident) => {
        if $table.$name.is_some() {
            $table.$name = Some(hooks::$name);
        }
    };
}

cl_api!(layer_table);

/// Answers the loader's questions about this layer (API version 100, name "cltrap").
#[no_mangle]
pub unsafe extern "C" fn clGetLayerInfo(
    param_name: cl_layer_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let version: cl_layer_api_version = CL_LAYER_API_VERSION_100;
    let name: &[u8] = b"cltrap: capture of OpenCL kernel launches\0";
    let bytes: &[u8] = match param_name {
        CL_LAYER_API_VERSION => &version.to_ne_bytes(),
        CL_LAYER_NAME => name,
        _ => return CL_INVALID_VALUE,
    };
    if !param_value.is_null() {
        if param_value_size < bytes.len() {
            return CL_INVALID_VALUE;
        }
        // SAFETY: the caller provides `param_value_size` writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), param_value.cast(), bytes.len()) };
    }
    if !param_value_size_ret.is_null() {
        // SAFETY: caller-provided out pointer.
        unsafe { *param_value_size_ret = bytes.len() };
    }
    CL_SUCCESS
}
const _: clGetLayerInfo_t = Some(clGetLayerInfo);

/// Takes the next dispatch table and returns ours.
///
/// With capture off, or when called a second time (our library listed twice), the layer hands
/// back the next table itself: it is then not in the call path at all.
#[no_mangle]
pub unsafe extern "C" fn clInitLayer(
    num_entries: cl_uint,
    target_dispatch: *const cl_icd_dispatch,
    num_entries_ret: *mut cl_uint,
    layer_dispatch_ret: *mut *const cl_icd_dispatch,
) -> cl_int {
    if target_dispatch.is_null() || num_entries_ret.is_null() || layer_dispatch_ret.is_null() {
        return CL_INVALID_VALUE;
    }
    let loader = crate::site::caller_module_base();
    let installed = crate::door::quietly(|| {
        if !crate::state::capture_on() || NEXT.get().is_some() {
            return None;
        }
        // SAFETY: the loader gives `num_entries` valid pointer-sized entries; we copy at most
        // that many into a zeroed table of our own layout (missing entries stay None).
        let copy: Box<Next> = unsafe {
            let mut t: Box<Next> = Box::new(std::mem::zeroed());
            let n = (num_entries as usize).min(ENTRIES);
            std::ptr::copy_nonoverlapping(
                target_dispatch.cast::<usize>(),
                (&mut *t as *mut Next).cast::<usize>(),
                n,
            );
            t
        };
        let mut ours = copy.clone();
        install_hooks(&mut ours);
        NEXT.set(copy).ok()?;
        let ours: &Next = OURS.get_or_init(|| ours);
        Some(ours as *const Next)
    });
    match installed.flatten() {
        Some(ours) => {
            crate::door::layer_initialised(loader);
            // SAFETY: out pointers checked non-null above.
            unsafe {
                *layer_dispatch_ret = ours;
                *num_entries_ret = ENTRIES as cl_uint;
            }
        }
        None => {
            // SAFETY: out pointers checked non-null above.
            unsafe {
                *layer_dispatch_ret = target_dispatch;
                *num_entries_ret = num_entries;
            }
        }
    }
    CL_SUCCESS
}
const _: clInitLayer_t = Some(clInitLayer);

#[allow(dead_code)]
type Unused = (c_char, intptr_t);
