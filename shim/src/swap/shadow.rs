//! Shadow programs (the instrumented source built next to the application's program) and
//! shadow kernels (one per application kernel, created on its first swapped launch).
//!
//! Tables are keyed by handle, each behind its own lock held only briefly. A shadow kernel is
//! additionally marked busy from setting its arguments until its enqueue returned, so two
//! threads launching the same application kernel cannot interleave their arguments.

use super::ask::{self, Variant};
use super::Pass;
use crate::core::{lock, tables, ArgValue};
use crate::Next;
use libc::{c_char, c_void};
use opencl_sys::cl_function_types::{clReleaseKernel_t, clReleaseProgram_t};
use opencl_sys::*;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::{Arc, Mutex};

/// An application program's instrumented twin, built and ready.
#[derive(Debug)]
pub struct ShadowProgram {
    /// The shadow `cl_program`.
    pub program: usize,
    /// What `cltrap instrument` said about it.
    pub variant: Variant,
    /// The driver's `clReleaseProgram`: the twin goes when its last user (the application
    /// program's entry, a shadow kernel) does.
    release: clReleaseProgram_t,
}

impl Drop for ShadowProgram {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: our own program; nothing uses it once the last reference went.
            unsafe { release(self.program as cl_program) };
        }
    }
}

/// A shadow kernel and the arguments last set on it.
#[derive(Debug)]
pub struct ShadowKernel {
    /// The application kernel's program (to notice a reused handle).
    pub app_program: usize,
    /// Kernel name.
    pub name: String,
    /// The shadow `cl_kernel`.
    pub kernel: usize,
    /// Index of the extra argument (= the application's argument count).
    pub extra: u32,
    /// The program it belongs to.
    pub shadow: Arc<ShadowProgram>,
    /// Arguments as last set on the shadow kernel (skipped when unchanged).
    pub set: Vec<Option<ArgValue>>,
    /// A launch is between setting its arguments and its enqueue returning.
    pub busy: bool,
    /// The driver's `clReleaseKernel`, for when the application kernel is released.
    release: clReleaseKernel_t,
}

impl Drop for ShadowKernel {
    fn drop(&mut self) {
        // A kernel still being launched (the application released it while another of its
        // threads launched it) is left to the process's end.
        if let (false, Some(release)) = (self.busy, self.release) {
            // SAFETY: our own kernel; an enqueue that used it keeps it alive in the driver.
            unsafe { release(self.kernel as cl_kernel) };
        }
    }
}

/// The application released `handle` for good: its twin program or shadow kernel goes (a
/// twin program lives on while shadow kernels of it do).
pub fn forget(handle: usize) {
    let program = lock(&t().programs).remove(&handle);
    let kernel = lock(&t().kernels).remove(&handle);
    drop((program, kernel));
}

#[derive(Default)]
struct Tables {
    /// Application program → its shadow (absent: not swapped).
    programs: Mutex<HashMap<usize, Arc<ShadowProgram>>>,
    /// Application kernel → its shadow kernel.
    kernels: Mutex<HashMap<usize, Arc<Mutex<ShadowKernel>>>>,
    /// Reasons already said on stderr.
    said: Mutex<HashSet<String>>,
}

fn t() -> &'static Tables {
    static T: once_cell::sync::Lazy<Tables> = once_cell::sync::Lazy::new(Tables::default);
    &T
}

/// Says `message` once per distinct text (prefixed `cltrap:`, on stderr).
pub fn say_once(message: &str) {
    if lock(&t().said).insert(message.to_string()) {
        crate::sink::say(message);
    }
}

/// Whether any program has a shadow (the enqueue's fast path when none has).
pub fn any() -> bool {
    !lock(&t().programs).is_empty()
}

/// Called after the application's `clBuildProgram` succeeded: builds the instrumented twin of
/// a program made from `source`, or says why not. The application's program is untouched.
pub fn program_built(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: &str,
    source: Option<Vec<u8>>,
) {
    let Some(pass) = super::pass() else { return };
    // A rebuild replaces the previous twin.
    lock(&t().programs).remove(&(program as usize));
    let Some(source) = source.filter(|s| !s.is_empty()) else {
        say_once(
            "a program not built from source (binary, IL or linked) runs without instrumentation",
        );
        return;
    };
    let Some(settings) = crate::state::settings() else {
        return;
    };
    let variant = match ask::instrument(&settings.dir, pass, options, &source) {
        Ok(v) => v,
        Err(e) => {
            say_once(&format!(
                "{} left a program uninstrumented: {e}; its kernels run unchanged",
                what(pass)
            ));
            return;
        }
    };
    match build(
        next,
        program,
        num_devices,
        device_list,
        options,
        &variant.source,
    ) {
        Ok(shadow) => {
            lock(&t().programs).insert(
                program as usize,
                Arc::new(ShadowProgram {
                    program: shadow,
                    variant,
                    release: next.clReleaseProgram,
                }),
            );
        }
        Err(e) => say_once(&format!(
            "the {}-instrumented program does not build ({e}); its kernels run unchanged",
            pass.name()
        )),
    }
}

fn what(pass: Pass) -> &'static str {
    match pass {
        Pass::Coverage => "--coverage",
        Pass::Permute(_) => "--permute",
    }
}

/// Creates and builds the shadow program; `Err` is the first line of the build log.
fn build(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: &str,
    source: &str,
) -> Result<usize, String> {
    let (Some(info), Some(create), Some(build), Some(release)) = (
        next.clGetProgramInfo,
        next.clCreateProgramWithSource,
        next.clBuildProgram,
        next.clReleaseProgram,
    ) else {
        return Err("the driver lacks program entry points".into());
    };
    // SAFETY: standard info query on the application's live program.
    let context = crate::core::info_value::<usize>(|s, p, r| unsafe {
        info(program, CL_PROGRAM_CONTEXT, s, p, r)
    })
    .ok_or("its context cannot be queried")?;
    let text = CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
    let opts = CString::new(options).map_err(|_| "the options hold a NUL byte".to_string())?;
    let mut err = CL_SUCCESS;
    let ptr: *const c_char = text.as_ptr();
    let mut strings = [ptr];
    // SAFETY: one NUL-terminated string, lengths NULL; a live context.
    let shadow = unsafe {
        create(
            context as cl_context,
            1,
            strings.as_mut_ptr(),
            std::ptr::null(),
            &mut err,
        )
    };
    if shadow.is_null() || err != CL_SUCCESS {
        return Err(format!("clCreateProgramWithSource returned {err}"));
    }
    // SAFETY: the application's own device list (valid for its successful build).
    let r = unsafe {
        build(
            shadow,
            num_devices,
            device_list,
            opts.as_ptr(),
            None,
            std::ptr::null_mut::<c_void>(),
        )
    };
    if r != CL_SUCCESS {
        let log = build_log(next, shadow);
        // SAFETY: our own program, released once.
        unsafe { release(shadow) };
        return Err(log.unwrap_or_else(|| format!("clBuildProgram returned {r}")));
    }
    Ok(shadow as usize)
}

fn build_log(next: &Next, program: cl_program) -> Option<String> {
    let info = next.clGetProgramInfo?;
    let binfo = next.clGetProgramBuildInfo?;
    // SAFETY: standard info queries on our own program.
    let devs: Vec<usize> =
        crate::core::info_array(|s, p, r| unsafe { info(program, CL_PROGRAM_DEVICES, s, p, r) })?;
    let dev = *devs.first()?;
    let log = crate::core::info_string(|s, p, r| unsafe {
        binfo(program, dev as cl_device_id, CL_PROGRAM_BUILD_LOG, s, p, r)
    })?;
    log.lines()
        .find(|l| l.contains("error"))
        .or_else(|| log.lines().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_string())
}

/// The shadow kernel for the application's `kernel`, creating it on first use; `None` when
/// the kernel's program has no shadow (or the kernel is not in it).
pub fn kernel_for(next: &Next, kernel: cl_kernel) -> Option<Arc<Mutex<ShadowKernel>>> {
    let (app_program, name) = program_and_name(next, kernel)?;
    if let Some(k) = lock(&t().kernels).get(&(kernel as usize)) {
        let same = {
            let g = lock(k);
            g.app_program == app_program && g.name == name
        };
        if same {
            return Some(k.clone());
        }
    }
    let shadow = lock(&t().programs).get(&app_program).cloned()?;
    let extra = *shadow.variant.extra_arg.get(&name)?;
    let create = next.clCreateKernel?;
    let cname = CString::new(name.as_str()).ok()?;
    let mut err = CL_SUCCESS;
    // SAFETY: our own built program and a NUL-terminated name.
    let k = unsafe { create(shadow.program as cl_program, cname.as_ptr(), &mut err) };
    if k.is_null() || err != CL_SUCCESS {
        say_once(&format!(
            "kernel {name} could not be created in the instrumented program (error {err}); it runs unchanged"
        ));
        return None;
    }
    let entry = Arc::new(Mutex::new(ShadowKernel {
        app_program,
        name,
        kernel: k as usize,
        extra,
        shadow,
        set: Vec::new(),
        busy: false,
        release: next.clReleaseKernel,
    }));
    lock(&t().kernels).insert(kernel as usize, entry.clone());
    Some(entry)
}

/// The kernel's program and name, from the shim's tables or the driver.
fn program_and_name(next: &Next, kernel: cl_kernel) -> Option<(usize, String)> {
    let known = |k: &crate::core::Kernel| {
        (k.program != 0 && !k.name.is_empty()).then(|| (k.program, k.name.clone()))
    };
    if let Some(pn) = lock(&tables().kernels)
        .get(&(kernel as usize))
        .and_then(known)
    {
        return Some(pn);
    }
    known(&crate::core::describe_kernel(next, kernel))
}

/// Copies the application kernel's arguments `0..extra` onto the shadow kernel (only those
/// that changed). `false` when one was never set or the driver refused one: the launch then
/// runs the application's kernel (which fails or succeeds exactly as natively).
pub fn copy_args(next: &Next, app_kernel: cl_kernel, sk: &mut ShadowKernel) -> bool {
    let args = match lock(&tables().kernels).get(&(app_kernel as usize)) {
        Some(k) => k.args.clone(),
        None => return false,
    };
    let n = sk.extra as usize;
    if args.len() < n || args[..n].iter().any(Option::is_none) {
        return false;
    }
    let (Some(set), svm) = (next.clSetKernelArg, next.clSetKernelArgSVMPointer) else {
        return false;
    };
    if sk.set.len() < n {
        sk.set.resize(n, None);
    }
    let kernel = sk.kernel as cl_kernel;
    for (i, a) in args[..n].iter().enumerate() {
        if sk.set[i] == *a {
            continue;
        }
        // SAFETY: values the driver accepted for the same argument of the same kernel source.
        let r = unsafe {
            match a {
                Some(ArgValue::Bytes(b)) => set(kernel, i as cl_uint, b.len(), b.as_ptr().cast()),
                Some(ArgValue::Local(size)) => set(kernel, i as cl_uint, *size, std::ptr::null()),
                Some(ArgValue::Svm(p)) => match svm {
                    Some(f) => f(kernel, i as cl_uint, *p as *const c_void),
                    None => CL_INVALID_OPERATION,
                },
                None => CL_INVALID_KERNEL_ARGS,
            }
        };
        if r != CL_SUCCESS {
            sk.set[i] = None;
            return false;
        }
        sk.set[i] = a.clone();
    }
    true
}
