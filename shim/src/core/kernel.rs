//! Kernel hooks: each kernel's arguments as last set, copied at `clSetKernelArg` time.

use super::info;
use super::program::missing;
use super::track::{lock, tables, ArgValue, Kernel};
use crate::door::quietly;
use crate::Next;
use libc::{c_char, c_void, size_t};
use opencl_sys::*;
use std::sync::Arc;

/// The name and program of a kernel, asked from the driver.
pub(crate) fn describe(next: &Next, kernel: cl_kernel) -> Kernel {
    let mut k = Kernel::default();
    if let Some(f) = next.clGetKernelInfo {
        // SAFETY: standard info queries.
        k.name = info::string(|s, p, r| unsafe { f(kernel, CL_KERNEL_FUNCTION_NAME, s, p, r) })
            .unwrap_or_default()
            .into();
        k.program =
            info::value::<usize>(|s, p, r| unsafe { f(kernel, CL_KERNEL_PROGRAM, s, p, r) })
                .unwrap_or(0);
    }
    k
}

fn created(next: &Next, kernel: cl_kernel) {
    if kernel.is_null() {
        return;
    }
    let k = describe(next, kernel);
    let program = k.program;
    lock(&tables().kernels).insert(kernel as usize, k);
    super::lifetime::born(kernel as usize, Some(program));
}

pub unsafe fn clCreateKernel(
    next: &Next,
    program: cl_program,
    kernel_name: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_kernel {
    let Some(f) = next.clCreateKernel else {
        return missing(errcode_ret);
    };
    let kernel = f(program, kernel_name, errcode_ret);
    quietly(|| created(next, kernel));
    kernel
}

pub unsafe fn clCreateKernelsInProgram(
    next: &Next,
    program: cl_program,
    num_kernels: cl_uint,
    kernels: *mut cl_kernel,
    num_kernels_ret: *mut cl_uint,
) -> cl_int {
    let Some(f) = next.clCreateKernelsInProgram else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(program, num_kernels, kernels, num_kernels_ret);
    if ret == CL_SUCCESS && !kernels.is_null() {
        quietly(|| {
            let made = if num_kernels_ret.is_null() {
                let n = next.clGetProgramInfo.and_then(|g| {
                    // SAFETY: standard info query.
                    info::value::<usize>(|s, p, r| unsafe {
                        g(program, CL_PROGRAM_NUM_KERNELS, s, p, r)
                    })
                });
                n.unwrap_or(0) as cl_uint
            } else {
                // SAFETY: the driver wrote the count.
                unsafe { *num_kernels_ret }
            };
            for i in 0..made.min(num_kernels) as usize {
                // SAFETY: the driver filled `made` (≤ num_kernels) entries.
                created(next, unsafe { *kernels.add(i) });
            }
        });
    }
    ret
}

pub unsafe fn clCloneKernel(
    next: &Next,
    source_kernel: cl_kernel,
    errcode_ret: *mut cl_int,
) -> cl_kernel {
    let Some(f) = next.clCloneKernel else {
        return missing(errcode_ret);
    };
    let kernel = f(source_kernel, errcode_ret);
    if !kernel.is_null() {
        quietly(|| {
            let mut kernels = lock(&tables().kernels);
            let copy = kernels.get(&(source_kernel as usize)).cloned();
            drop(kernels);
            let k = match copy {
                Some(k) => k,
                None => describe(next, kernel),
            };
            let program = k.program;
            kernels = lock(&tables().kernels);
            kernels.insert(kernel as usize, k);
            drop(kernels);
            super::lifetime::born(kernel as usize, Some(program));
        });
    }
    kernel
}

fn set_arg(next: &Next, kernel: cl_kernel, index: cl_uint, value: ArgValue) {
    let mut kernels = lock(&tables().kernels);
    if !kernels.contains_key(&(kernel as usize)) {
        drop(kernels);
        let k = describe(next, kernel);
        kernels = lock(&tables().kernels);
        kernels.entry(kernel as usize).or_insert(k);
    }
    if let Some(k) = kernels.get_mut(&(kernel as usize)) {
        let i = index as usize;
        let args = Arc::make_mut(&mut k.args);
        if args.len() <= i {
            args.resize(i + 1, None);
        }
        args[i] = Some(value);
    }
}

pub unsafe fn clSetKernelArg(
    next: &Next,
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_size: size_t,
    arg_value: *const c_void,
) -> cl_int {
    let Some(f) = next.clSetKernelArg else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(kernel, arg_index, arg_size, arg_value);
    if ret == CL_SUCCESS {
        quietly(|| {
            let value = if arg_value.is_null() {
                ArgValue::Local(arg_size)
            } else {
                // SAFETY: the driver accepted `arg_size` bytes at `arg_value`.
                ArgValue::Bytes(
                    unsafe { std::slice::from_raw_parts(arg_value.cast::<u8>(), arg_size) }
                        .to_vec(),
                )
            };
            set_arg(next, kernel, arg_index, value);
        });
    }
    ret
}

pub unsafe fn clSetKernelArgSVMPointer(
    next: &Next,
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_value: *const c_void,
) -> cl_int {
    let Some(f) = next.clSetKernelArgSVMPointer else {
        return CL_INVALID_OPERATION;
    };
    let ret = f(kernel, arg_index, arg_value);
    if ret == CL_SUCCESS {
        quietly(|| set_arg(next, kernel, arg_index, ArgValue::Svm(arg_value as usize)));
    }
    ret
}

/// Whether the application's own `clGetKernelArgInfo` must not see argument info: the
/// shim added `-cl-kernel-arg-info` to the build of the kernel's program.
fn arg_info_hidden(kernel: cl_kernel) -> bool {
    let program = lock(&tables().kernels)
        .get(&(kernel as usize))
        .map(|k| k.program);
    program.is_some_and(|p| {
        lock(&tables().programs)
            .get(&p)
            .is_some_and(|p| p.options_extended)
    })
}

/// Answers as the driver would without `-cl-kernel-arg-info` when only the shim asked for
/// it: `CL_KERNEL_ARG_INFO_NOT_AVAILABLE` (after letting the driver reject bad handles,
/// indices and parameter names as it normally would). The shim's own queries go to `next`
/// directly and still get the information.
pub unsafe fn clGetKernelArgInfo(
    next: &Next,
    kernel: cl_kernel,
    arg_index: cl_uint,
    param_name: cl_kernel_arg_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let Some(f) = next.clGetKernelArgInfo else {
        return CL_INVALID_OPERATION;
    };
    if !quietly(|| arg_info_hidden(kernel)).unwrap_or(false) {
        return f(
            kernel,
            arg_index,
            param_name,
            param_value_size,
            param_value,
            param_value_size_ret,
        );
    }
    let mut size = 0usize;
    let r = f(
        kernel,
        arg_index,
        param_name,
        0,
        std::ptr::null_mut(),
        &mut size,
    );
    if r != CL_SUCCESS {
        return r;
    }
    CL_KERNEL_ARG_INFO_NOT_AVAILABLE
}
