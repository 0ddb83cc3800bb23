//! `clGetExtensionFunctionAddress[ForPlatform]`: the driver's answer, replaced by a function
//! of ours where the name is one the shim hooks (see [`crate::extension`]).

use crate::door::quietly;
use crate::Next;
use libc::{c_char, c_void};
use opencl_sys::*;

pub unsafe fn clGetExtensionFunctionAddress(
    next: &'static Next,
    func_name: *const c_char,
) -> *mut c_void {
    let Some(f) = next.clGetExtensionFunctionAddress else {
        return std::ptr::null_mut();
    };
    let found = f(func_name);
    // SAFETY: the application's name, as the driver just read it.
    quietly(|| unsafe { crate::extension::resolve(next, func_name, found) }).unwrap_or(found)
}

pub unsafe fn clGetExtensionFunctionAddressForPlatform(
    next: &'static Next,
    platform: cl_platform_id,
    func_name: *const c_char,
) -> *mut c_void {
    let Some(f) = next.clGetExtensionFunctionAddressForPlatform else {
        return std::ptr::null_mut();
    };
    let found = f(platform, func_name);
    // SAFETY: as above.
    quietly(|| unsafe { crate::extension::resolve(next, func_name, found) }).unwrap_or(found)
}
