//! The OpenCL entry points that take arrays of pointers, called with arrays of *thin* pointers.
//!
//! `cl3` 0.13's `create_program_with_source`, `create_program_with_binary` and
//! `compile_program` cast slices of `&str`, `&[u8]` and `&CStr` — fat pointers, two words each
//! — to `*const *const c_char`: with more than one element the driver reads a length as the
//! second string's address and crashes (a program built from a header string and a body
//! string killed every replay worker with SIGSEGV). These wrappers build the pointer and
//! length arrays the C API expects and call the driver through `cl3`'s loaded library, so
//! nothing else in the executor calls those three `cl3` functions (a test builds a program of
//! three source strings, compiles with two headers and links two units).

use opencl_sys::{
    cl_context, cl_device_id, cl_int, cl_program, cl_uint, CL_INVALID_VALUE, CL_SUCCESS,
};
use std::ffi::{c_char, CStr};

/// The driver's functions, as `cl3` loaded them (`libOpenCL.so.1`).
fn runtime() -> Result<&'static cl3::OpenClRuntime, cl_int> {
    cl3::load_library()
        .as_ref()
        .map_err(|_| cl3::error_codes::DLOPEN_RUNTIME_LOAD_FAILED)
}

/// `clCreateProgramWithSource` over every string in `sources`, with explicit lengths (no
/// string needs a terminating NUL).
pub(crate) fn create_program_with_source(
    context: cl_context,
    sources: &[&str],
) -> Result<cl_program, cl_int> {
    if sources.is_empty() {
        return Err(CL_INVALID_VALUE);
    }
    let strings: Vec<*const c_char> = sources.iter().map(|s| s.as_ptr().cast()).collect();
    let lengths: Vec<usize> = sources.iter().map(|s| s.len()).collect();
    let count = cl_uint::try_from(sources.len()).map_err(|_| CL_INVALID_VALUE)?;
    let mut status: cl_int = CL_INVALID_VALUE;
    let program = runtime()?
        .clCreateProgramWithSource(
            context,
            count,
            strings.as_ptr(),
            lengths.as_ptr(),
            &mut status,
        )
        .ok_or(cl3::error_codes::DLOPEN_FUNCTION_NOT_AVAILABLE)?;
    if status == CL_SUCCESS && !program.is_null() {
        Ok(program)
    } else {
        Err(status)
    }
}

/// `clCreateProgramWithBinary` with one binary per device of `devices` (same order).
pub(crate) fn create_program_with_binary(
    context: cl_context,
    devices: &[cl_device_id],
    binaries: &[&[u8]],
) -> Result<cl_program, cl_int> {
    if devices.is_empty() || devices.len() != binaries.len() {
        return Err(CL_INVALID_VALUE);
    }
    let pointers: Vec<*const u8> = binaries.iter().map(|b| b.as_ptr()).collect();
    let lengths: Vec<usize> = binaries.iter().map(|b| b.len()).collect();
    let mut binary_status: Vec<cl_int> = vec![CL_SUCCESS; binaries.len()];
    let count = cl_uint::try_from(devices.len()).map_err(|_| CL_INVALID_VALUE)?;
    let mut status: cl_int = CL_INVALID_VALUE;
    let program = runtime()?
        .clCreateProgramWithBinary(
            context,
            count,
            devices.as_ptr(),
            lengths.as_ptr(),
            pointers.as_ptr(),
            binary_status.as_mut_ptr(),
            &mut status,
        )
        .ok_or(cl3::error_codes::DLOPEN_FUNCTION_NOT_AVAILABLE)?;
    if status == CL_SUCCESS && !program.is_null() {
        Ok(program)
    } else {
        Err(status)
    }
}

/// `clCompileProgram` for `devices`, with `headers[i]` included under the name `names[i]`.
pub(crate) fn compile_program(
    program: cl_program,
    devices: &[cl_device_id],
    options: &CStr,
    headers: &[cl_program],
    names: &[&CStr],
) -> Result<(), cl_int> {
    if headers.len() != names.len() {
        return Err(CL_INVALID_VALUE);
    }
    let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let num_devices = cl_uint::try_from(devices.len()).map_err(|_| CL_INVALID_VALUE)?;
    let num_headers = cl_uint::try_from(headers.len()).map_err(|_| CL_INVALID_VALUE)?;
    let (header_ptr, names_ptr) = if headers.is_empty() {
        (std::ptr::null(), std::ptr::null())
    } else {
        (headers.as_ptr(), name_ptrs.as_ptr())
    };
    let status = runtime()?
        .clCompileProgram(
            program,
            num_devices,
            devices.as_ptr(),
            options.as_ptr(),
            num_headers,
            header_ptr,
            names_ptr,
            None,
            std::ptr::null_mut(),
        )
        .ok_or(cl3::error_codes::DLOPEN_FUNCTION_NOT_AVAILABLE)?;
    if status == CL_SUCCESS {
        Ok(())
    } else {
        Err(status)
    }
}
