//! Program hooks: remember how each program was made and built, and ask the driver for
//! argument info (` -cl-kernel-arg-info`) while capturing.

use super::info;
use super::track::{lock, tables, Compiled, Origin, Program, Scanned};
use crate::door::quietly;
use crate::exports::Missing;
use crate::Next;
use libc::{c_char, c_void, size_t};
use opencl_sys::*;
use std::ffi::{CStr, CString};
use std::sync::Arc;

const ARG_INFO: &str = "-cl-kernel-arg-info";

fn set_err(errcode_ret: *mut cl_int, v: cl_int) {
    if !errcode_ret.is_null() {
        // SAFETY: the application passed a writable errcode pointer.
        unsafe { *errcode_ret = v };
    }
}

/// Returns the "missing" value and sets `errcode_ret` when there is nothing to forward to.
pub(super) fn missing<R: Missing>(errcode_ret: *mut cl_int) -> R {
    set_err(errcode_ret, CL_INVALID_OPERATION);
    R::missing()
}

/// Text of an optional C string (NULL = empty).
pub(super) unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: the application passes NUL-terminated strings.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Name of a device (empty when the driver will not say).
pub(super) fn device_name(next: &Next, dev: cl_device_id) -> String {
    let Some(f) = next.clGetDeviceInfo else {
        return String::new();
    };
    // SAFETY: a standard info query into buffers `info` sizes.
    info::string(|s, p, r| unsafe { f(dev, CL_DEVICE_NAME, s, p, r) }).unwrap_or_default()
}

unsafe fn device_names(next: &Next, n: cl_uint, list: *const cl_device_id) -> Vec<String> {
    if list.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: the application passes `n` device handles.
    let devs = unsafe { std::slice::from_raw_parts(list, n as usize) };
    devs.iter().map(|d| device_name(next, *d)).collect()
}

fn program_devices(next: &Next, program: cl_program) -> Vec<String> {
    let Some(f) = next.clGetProgramInfo else {
        return Vec::new();
    };
    // SAFETY: a standard info query.
    let devs: Vec<usize> =
        info::array(|s, p, r| unsafe { f(program, CL_PROGRAM_DEVICES, s, p, r) })
            .unwrap_or_default();
    devs.into_iter()
        .map(|d| device_name(next, d as cl_device_id))
        .collect()
}

fn created(program: cl_program, origin: Origin, devices: Vec<String>) {
    if program.is_null() {
        return;
    }
    let site = crate::site::capture();
    lock(&tables().programs).insert(program as usize, Program::new(origin, devices, site));
    super::lifetime::born(program as usize, None);
}

pub unsafe fn clCreateProgramWithSource(
    next: &Next,
    context: cl_context,
    count: cl_uint,
    strings: *mut *const c_char,
    lengths: *const size_t,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let Some(f) = next.clCreateProgramWithSource else {
        return missing(errcode_ret);
    };
    let program = f(context, count, strings, lengths, errcode_ret);
    if !program.is_null() {
        quietly(|| {
            // SAFETY: the call succeeded, so `strings` (and `lengths`, when given) hold `count`
            // valid entries.
            let sources = unsafe { source_strings(count, strings, lengths) };
            created(program, Origin::Source(sources), Vec::new());
        });
    }
    program
}

unsafe fn source_strings(
    count: cl_uint,
    strings: *mut *const c_char,
    lengths: *const size_t,
) -> Vec<Vec<u8>> {
    (0..count as usize)
        .map(|i| {
            // SAFETY: see caller.
            unsafe {
                let s = *strings.add(i);
                let len = if lengths.is_null() {
                    0
                } else {
                    *lengths.add(i)
                };
                if s.is_null() {
                    Vec::new()
                } else if len == 0 {
                    CStr::from_ptr(s).to_bytes().to_vec()
                } else {
                    std::slice::from_raw_parts(s.cast::<u8>(), len).to_vec()
                }
            }
        })
        .collect()
}

pub unsafe fn clCreateProgramWithBinary(
    next: &Next,
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    lengths: *const size_t,
    binaries: *mut *const ::core::ffi::c_uchar,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let Some(f) = next.clCreateProgramWithBinary else {
        return missing(errcode_ret);
    };
    if crate::state::settings().is_some_and(|s| s.refuse_binaries) {
        quietly(|| unsafe { refuse_binary(num_devices, binary_status, errcode_ret) });
        return std::ptr::null_mut();
    }
    let program = f(
        context,
        num_devices,
        device_list,
        lengths,
        binaries,
        binary_status,
        errcode_ret,
    );
    if !program.is_null() {
        quietly(|| {
            // SAFETY: the call succeeded: `num_devices` binaries of `lengths[i]` bytes.
            let bins = (0..num_devices as usize)
                .map(|i| unsafe {
                    let b = *binaries.add(i);
                    let n = *lengths.add(i);
                    if b.is_null() {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(b, n).to_vec()
                    }
                })
                .collect();
            let devices = unsafe { device_names(next, num_devices, device_list) };
            created(program, Origin::Binary(bins), devices);
        });
    }
    program
}

/// `CLTRAP_REFUSE_BINARIES`: answers a program binary as the driver answers one it cannot
/// load (`CL_INVALID_BINARY` for the call and for every device's status), so an application
/// that caches its kernels on disk falls back to building them from source. Said once.
///
/// # Safety
/// `binary_status` is null or holds `num_devices` values; `errcode_ret` is null or writable.
unsafe fn refuse_binary(
    num_devices: cl_uint,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !binary_status.is_null() {
        for i in 0..num_devices as usize {
            // SAFETY: the application's array of `num_devices` statuses.
            unsafe { *binary_status.add(i) = CL_INVALID_BINARY };
        }
    }
    set_err(errcode_ret, CL_INVALID_BINARY);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::say::say(
            "refused a program binary (clCreateProgramWithBinary answers CL_INVALID_BINARY, as --refuse-binaries asks) so that the application builds its kernels from source",
        );
    }
}

pub unsafe fn clCreateProgramWithIL(
    next: &Next,
    context: cl_context,
    il: *const c_void,
    length: size_t,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let Some(f) = next.clCreateProgramWithIL else {
        return missing(errcode_ret);
    };
    let program = f(context, il, length, errcode_ret);
    if !program.is_null() {
        quietly(|| {
            // SAFETY: the call succeeded: `il` holds `length` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(il.cast::<u8>(), length) }.to_vec();
            created(program, Origin::Il(bytes), Vec::new());
        });
    }
    program
}

pub unsafe fn clCreateProgramWithBuiltInKernels(
    next: &Next,
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    kernel_names: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let Some(f) = next.clCreateProgramWithBuiltInKernels else {
        return missing(errcode_ret);
    };
    let program = f(context, num_devices, device_list, kernel_names, errcode_ret);
    if !program.is_null() {
        quietly(|| {
            let names = unsafe { text(kernel_names) };
            let devices = unsafe { device_names(next, num_devices, device_list) };
            created(program, Origin::BuiltIn(names), devices);
        });
    }
    program
}

/// The options to give the driver: the application's plus `-cl-kernel-arg-info`, unless
/// already there.
unsafe fn with_arg_info(options: *const c_char) -> Option<CString> {
    let original = unsafe { text(options) };
    if original.split_whitespace().any(|o| o == ARG_INFO) {
        return None;
    }
    let joined = if original.trim().is_empty() {
        ARG_INFO.to_string()
    } else {
        format!("{original} {ARG_INFO}")
    };
    CString::new(joined).ok()
}

/// Calls the driver with extended options, and again with the application's own if the
/// driver rejects them (so our addition can never make a build fail).
fn with_extended_options(
    options: *const c_char,
    rejected: cl_int,
    call: impl Fn(*const c_char) -> cl_int,
) -> (cl_int, bool) {
    let extended = quietly(|| unsafe { with_arg_info(options) }).flatten();
    match extended {
        Some(opts) => {
            let r = call(opts.as_ptr());
            if r == rejected {
                (call(options), false)
            } else {
                (r, true)
            }
        }
        None => (call(options), false),
    }
}

pub unsafe fn clBuildProgram(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    let Some(f) = next.clBuildProgram else {
        return CL_INVALID_OPERATION;
    };
    let (ret, extended) = with_extended_options(options, CL_INVALID_BUILD_OPTIONS, |o| {
        f(program, num_devices, device_list, o, pfn_notify, user_data)
    });
    if ret != CL_SUCCESS {
        // The driver keeps the options of a failed build too: `CL_PROGRAM_BUILD_OPTIONS`
        // must still answer the application's own.
        quietly(|| failed_with(program, unsafe { text(options) }, extended, false));
    }
    if ret == CL_SUCCESS {
        quietly(|| {
            let opts = unsafe { text(options) };
            let mut devices = unsafe { device_names(next, num_devices, device_list) };
            if devices.is_empty() {
                devices = program_devices(next, program);
            }
            let origin = lock(&tables().programs)
                .get(&(program as usize))
                .map(|p| p.origin.clone());
            let includes = origin.and_then(|o| scan_includes(&o, &[], &opts));
            let mut programs = lock(&tables().programs);
            let p = programs
                .entry(program as usize)
                .or_insert_with(|| Program::new(Origin::Source(Vec::new()), Vec::new(), None));
            p.options = opts.clone();
            p.options_extended = extended;
            p.last_build_failed = false;
            p.devices = devices;
            p.includes = includes;
            p.record = None;
            p.unwritten.clear();
            // Live instrumentation (`--coverage`, `--permute`): build the shadow program.
            if crate::swap::pass().is_some() {
                let source = match &*p.origin {
                    Origin::Source(s) => Some(s.concat()),
                    _ => None,
                };
                drop(programs);
                crate::swap::program_built(next, program, num_devices, device_list, &opts, source);
            }
        });
    }
    ret
}

/// A build (or `compile`) of `program` with `options` failed: notes the options the driver
/// now holds, and whether ours were added, so `CL_PROGRAM_BUILD_OPTIONS` answers as without
/// the shim. Programs the shim does not know are left alone.
fn failed_with(program: cl_program, options: String, extended: bool, compile: bool) {
    let mut programs = lock(&tables().programs);
    if let Some(p) = programs.get_mut(&(program as usize)) {
        if compile {
            p.compile_options = options;
        } else {
            p.options = options;
            p.last_build_failed = true;
        }
        p.options_extended = extended;
        p.record = None;
        p.unwritten.clear();
    }
}

pub unsafe fn clCompileProgram(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    num_input_headers: cl_uint,
    input_headers: *const cl_program,
    header_include_names: *mut *const c_char,
    pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    let Some(f) = next.clCompileProgram else {
        return CL_INVALID_OPERATION;
    };
    let (ret, extended) = with_extended_options(options, CL_INVALID_COMPILER_OPTIONS, |o| {
        f(
            program,
            num_devices,
            device_list,
            o,
            num_input_headers,
            input_headers,
            header_include_names,
            pfn_notify,
            user_data,
        )
    });
    if ret != CL_SUCCESS {
        quietly(|| failed_with(program, unsafe { text(options) }, extended, true));
    }
    if ret == CL_SUCCESS {
        quietly(|| {
            let opts = unsafe { text(options) };
            let mut headers = Vec::new();
            let programs_guard = lock(&tables().programs);
            for i in 0..num_input_headers as usize {
                // SAFETY: the call succeeded: `num_input_headers` programs and names.
                let (h, name) =
                    unsafe { (*input_headers.add(i), text(*header_include_names.add(i))) };
                let src = match programs_guard.get(&(h as usize)).map(|p| &*p.origin) {
                    Some(Origin::Source(s)) => s.concat(),
                    _ => Vec::new(),
                };
                headers.push((name, src));
            }
            let origin = programs_guard
                .get(&(program as usize))
                .map(|p| p.origin.clone());
            drop(programs_guard);
            let includes = origin.and_then(|o| scan_includes(&o, &headers, &opts));
            let mut programs = lock(&tables().programs);
            let p = programs
                .entry(program as usize)
                .or_insert_with(|| Program::new(Origin::Source(Vec::new()), Vec::new(), None));
            p.compile_options = opts;
            p.headers = headers;
            p.includes = includes;
            p.options_extended = extended;
            p.record = None;
            p.unwritten.clear();
        });
    }
    ret
}

pub unsafe fn clLinkProgram(
    next: &Next,
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    num_input_programs: cl_uint,
    input_programs: *const cl_program,
    pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let Some(f) = next.clLinkProgram else {
        return missing(errcode_ret);
    };
    let program = f(
        context,
        num_devices,
        device_list,
        options,
        num_input_programs,
        input_programs,
        pfn_notify,
        user_data,
        errcode_ret,
    );
    if !program.is_null() {
        quietly(|| {
            let mut extended = false;
            let inputs: Vec<Compiled> = {
                let programs = lock(&tables().programs);
                (0..num_input_programs as usize)
                    .map(|i| {
                        // SAFETY: the call succeeded: `num_input_programs` program handles.
                        let h = unsafe { *input_programs.add(i) } as usize;
                        match programs.get(&h) {
                            Some(p) => {
                                extended |= p.options_extended;
                                Compiled {
                                    origin: p.origin.clone(),
                                    compile_options: p.compile_options.clone(),
                                    headers: p.headers.clone(),
                                    includes: p.includes.clone(),
                                }
                            }
                            None => Compiled {
                                origin: Arc::new(Origin::Source(Vec::new())),
                                compile_options: String::new(),
                                headers: Vec::new(),
                                includes: None,
                            },
                        }
                    })
                    .collect()
            };
            let mut devices = unsafe { device_names(next, num_devices, device_list) };
            if devices.is_empty() {
                devices = program_devices(next, program);
            }
            // Live instrumentation (`--coverage`, `--permute`): link the shadow program.
            let units = crate::swap::pass().map(|_| swap_units(&inputs));
            let site = crate::site::capture();
            let mut p = Program::new(Origin::Linked(inputs), devices, site);
            p.options = unsafe { text(options) };
            let link_options = p.options.clone();
            // Argument info of a linked program comes from how its inputs were compiled.
            p.options_extended = extended;
            lock(&tables().programs).insert(program as usize, p);
            super::lifetime::born(program as usize, None);
            if let Some(units) = units {
                crate::swap::program_linked(
                    next,
                    program,
                    num_devices,
                    device_list,
                    &link_options,
                    units,
                );
            }
        });
    }
    program
}

/// The inputs of a link as the swap instruments them (None: one was not compiled from source).
fn swap_units(inputs: &[Compiled]) -> Option<Vec<crate::swap::Unit>> {
    inputs
        .iter()
        .map(|c| match &*c.origin {
            Origin::Source(s) if !s.is_empty() => Some(crate::swap::Unit {
                source: s.concat(),
                compile_options: c.compile_options.clone(),
                headers: c.headers.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The files a source program includes, found as the driver found them a moment ago: the
/// process's working directory, the `-I` directories of `options`, nested includes, and the
/// `embedded` headers of `clCompileProgram` taken from memory. `None` for programs not made
/// from source (a binary's includes were resolved when it was compiled, elsewhere).
fn scan_includes(
    origin: &Origin,
    embedded: &[(String, Vec<u8>)],
    options: &str,
) -> Option<Arc<Scanned>> {
    let Origin::Source(sources) = origin else {
        return None;
    };
    let cwd = std::env::current_dir().ok()?;
    let mut texts: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    texts.extend(embedded.iter().map(|(_, src)| src.as_slice()));
    let names: Vec<&str> = embedded.iter().map(|(n, _)| n.as_str()).collect();
    let files = cltrap_capture::includes::scan(&texts, &names, options, &cwd, Default::default());
    Some(Arc::new(Scanned {
        cwd: cwd.to_string_lossy().into_owned(),
        files,
    }))
}

/// Answers `CL_PROGRAM_BUILD_OPTIONS` with the application's own options when the driver got
/// ours, so the application cannot tell the shim is there.
pub unsafe fn clGetProgramBuildInfo(
    next: &Next,
    program: cl_program,
    device: cl_device_id,
    param_name: cl_program_build_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let Some(f) = next.clGetProgramBuildInfo else {
        return CL_INVALID_OPERATION;
    };
    let original = if param_name == CL_PROGRAM_BUILD_OPTIONS {
        quietly(|| {
            let programs = lock(&tables().programs);
            let p = programs.get(&(program as usize))?;
            p.options_extended.then(|| {
                if p.options.is_empty() {
                    p.compile_options.clone()
                } else {
                    p.options.clone()
                }
            })
        })
        .flatten()
    } else {
        None
    };
    let Some(original) = original else {
        return f(
            program,
            device,
            param_name,
            param_value_size,
            param_value,
            param_value_size_ret,
        );
    };
    // Let the driver validate the handles, then answer with the application's own options.
    let mut driver_size = 0usize;
    let ret = f(
        program,
        device,
        param_name,
        0,
        std::ptr::null_mut(),
        &mut driver_size,
    );
    if ret != CL_SUCCESS {
        return ret;
    }
    let mut bytes = original.into_bytes();
    bytes.push(0);
    if !param_value.is_null() {
        if param_value_size < bytes.len() {
            return CL_INVALID_VALUE;
        }
        // SAFETY: the application provides `param_value_size` writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), param_value.cast(), bytes.len()) };
    }
    if !param_value_size_ret.is_null() {
        // SAFETY: application-provided out pointer.
        unsafe { *param_value_size_ret = bytes.len() };
    }
    CL_SUCCESS
}
