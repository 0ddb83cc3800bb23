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
    /// What `cltrap instrument` said about each of its sources: one for a program built from
    /// source, one per compiled input of a linked program (each kernel is in one of them).
    pub variants: Vec<Variant>,
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
    /// Which of the program's variants holds it.
    pub unit: usize,
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
        crate::say::say(message);
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
                    variants: vec![variant],
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

/// One compiled input of an application's `clLinkProgram`, as the application compiled it.
pub struct Unit {
    pub source: Vec<u8>,
    pub compile_options: String,
    /// `clCompileProgram`'s headers: include name and source.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Called after the application's `clLinkProgram` made `program` from compiled sources:
/// instruments each source, compiles the twins with the application's compile options and
/// headers, and links them with its link options into the program's twin. Any failure leaves
/// the program uninstrumented, said once.
pub fn program_linked(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    link_options: &str,
    units: Option<Vec<Unit>>,
) {
    let Some(pass) = super::pass() else { return };
    lock(&t().programs).remove(&(program as usize));
    let Some(units) = units.filter(|u| !u.is_empty()) else {
        say_once(
            "a linked program with an input not compiled from source runs without instrumentation",
        );
        return;
    };
    let Some(settings) = crate::state::settings() else {
        return;
    };
    let mut variants = Vec::with_capacity(units.len());
    for u in &units {
        // The front-end sees the unit's headers as files, through `-I`.
        let options = match headers_dir(&settings.dir, &u.headers) {
            Ok(None) => u.compile_options.clone(),
            Ok(Some(dir)) => format!("{} -I {}", u.compile_options, dir.display()),
            Err(e) => {
                say_once(&format!(
                    "{} left a linked program uninstrumented: its headers cannot be written ({e}); its kernels run unchanged",
                    what(pass)
                ));
                return;
            }
        };
        match ask::instrument(&settings.dir, pass, &options, &u.source) {
            Ok(v) => variants.push(v),
            Err(e) => {
                say_once(&format!(
                    "{} left a linked program uninstrumented: {e}; its kernels run unchanged",
                    what(pass)
                ));
                return;
            }
        }
    }
    if let Some(name) = called_across_units(&variants, &units) {
        say_once(&format!(
            "{} left a linked program uninstrumented: function {name} is called from another source than its own, and its instrumented form takes an extra argument; its kernels run unchanged",
            what(pass)
        ));
        return;
    }
    let twins: Vec<(&str, &Unit)> = variants
        .iter()
        .map(|v| v.source.as_str())
        .zip(&units)
        .collect();
    match link(
        next,
        program,
        num_devices,
        device_list,
        link_options,
        &twins,
    ) {
        Ok(shadow) => {
            lock(&t().programs).insert(
                program as usize,
                Arc::new(ShadowProgram {
                    program: shadow,
                    variants,
                    release: next.clReleaseProgram,
                }),
            );
        }
        Err(e) => say_once(&format!(
            "the {}-instrumented linked program does not build ({e}); its kernels run unchanged",
            pass.name()
        )),
    }
}

/// A function whose instrumented form got an extra parameter in one source and whose name
/// appears in another source (a call across sources: the caller's source, instrumented on
/// its own, would call it without that parameter, and drivers do not check this at link
/// time; PoCL aborts at the launch). None: the sources can be instrumented one by one.
fn called_across_units(variants: &[Variant], units: &[Unit]) -> Option<String> {
    for (i, v) in variants.iter().enumerate() {
        for name in widened_functions(&v.source) {
            let elsewhere = units
                .iter()
                .enumerate()
                .any(|(j, u)| j != i && mentions(&u.source, name.as_bytes()));
            if elsewhere {
                return Some(name);
            }
        }
    }
    None
}

/// Names of the non-kernel functions whose parameter list the instrumentation extended (a
/// parameter named `__cltrap…` at its end) in instrumented `source`.
fn widened_functions(source: &str) -> Vec<String> {
    let b = source.as_bytes();
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(at) = source[from..].find("__cltrap").map(|k| k + from) {
        from = at + 1;
        // The parameter's name runs to the list's closing parenthesis.
        let end = at + b[at..].iter().take_while(|c| is_ident(**c)).count();
        let rest = source[end..].trim_start();
        if !rest.starts_with(')') || !rest[1..].trim_start().starts_with('{') {
            continue;
        }
        // Back to the list's opening parenthesis, then the function's name.
        let mut depth = 0i32;
        let mut open = None;
        for k in (0..at).rev() {
            match b[k] {
                b')' => depth += 1,
                b'(' if depth == 0 => {
                    open = Some(k);
                    break;
                }
                b'(' => depth -= 1,
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let head = source[..open].trim_end();
        let name_len = head.bytes().rev().take_while(|c| is_ident(*c)).count();
        let name = &head[head.len() - name_len..];
        // What comes before the name, back to the previous declaration: `__kernel` or not.
        let decl_start = head[..head.len() - name_len]
            .rfind([';', '}'])
            .map_or(0, |k| k + 1);
        let decl = &head[decl_start..head.len() - name_len];
        let kernel = decl
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| w == "__kernel" || w == "kernel");
        if !name.is_empty() && !kernel && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `source` holds `name` as a whole identifier.
fn mentions(source: &[u8], name: &[u8]) -> bool {
    source.windows(name.len()).enumerate().any(|(k, w)| {
        w == name
            && (k == 0 || !is_ident(source[k - 1]))
            && source.get(k + name.len()).is_none_or(|c| !is_ident(*c))
    })
}

/// Writes a unit's `clCompileProgram` headers as files under the capture's instrument cache
/// (`instrument/headers/<digest of names and texts>/<include name>`), for the front-end's
/// `-I`; the same headers always land in the same place, so instrument answers stay cached.
/// None: the unit has no headers.
fn headers_dir(
    capture_dir: &std::path::Path,
    headers: &[(String, Vec<u8>)],
) -> std::io::Result<Option<std::path::PathBuf>> {
    if headers.is_empty() {
        return Ok(None);
    }
    let mut all = Vec::new();
    for (name, text) in headers {
        all.extend_from_slice(&(name.len() as u64).to_le_bytes());
        all.extend_from_slice(name.as_bytes());
        all.extend_from_slice(&(text.len() as u64).to_le_bytes());
        all.extend_from_slice(text);
    }
    let dir = ask::cache_dir(capture_dir)
        .join("headers")
        .join(cltrap_capture::writer::digest(&all));
    for (name, text) in headers {
        let rel = std::path::Path::new(name);
        // Include names are relative paths; anything else would land outside the folder.
        let inside = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(std::io::Error::other(format!("header name {name:?}")));
        }
        let path = dir.join(rel);
        // Folders of our own inside the capture, never links; the file written anew.
        let access = ask::access();
        cltrap_capture::writer_fs::ensure_capture_dir(capture_dir, access)?;
        if let Some(parent) = path.parent().and_then(|p| p.strip_prefix(capture_dir).ok()) {
            cltrap_capture::writer_fs::ensure_subdirs(capture_dir, parent, access)?;
        }
        cltrap_capture::writer_fs::write_new(&path, text, access)?;
    }
    Ok(Some(dir))
}

/// Programs of ours made for a link, released when dropped.
struct Owned(Vec<cl_program>, clReleaseProgram_t);

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(release) = self.1 {
            for p in self.0.drain(..) {
                // SAFETY: our own programs, each released once.
                unsafe { release(p) };
            }
        }
    }
}

/// Compiles each instrumented source (`twins`: source, and the unit it instruments) and links
/// them; `Err` says which step failed, with the first line of its log.
fn link(
    next: &Next,
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    link_options: &str,
    twins: &[(&str, &Unit)],
) -> Result<usize, String> {
    let (Some(info), Some(compile), Some(link)) = (
        next.clGetProgramInfo,
        next.clCompileProgram,
        next.clLinkProgram,
    ) else {
        return Err("the driver lacks the compile and link entry points".into());
    };
    // SAFETY: standard info query on the application's live program.
    let context = crate::core::info_value::<usize>(|s, p, r| unsafe {
        info(program, CL_PROGRAM_CONTEXT, s, p, r)
    })
    .ok_or("its context cannot be queried")? as cl_context;
    let mut owned = Owned(Vec::new(), next.clReleaseProgram);
    let mut compiled = Vec::with_capacity(twins.len());
    for (source, unit) in twins {
        let p = create(next, context, source.as_bytes())?;
        owned.0.push(p);
        let mut headers = Vec::with_capacity(unit.headers.len());
        let mut names = Vec::with_capacity(unit.headers.len());
        for (name, text) in &unit.headers {
            let h = create(next, context, text)?;
            owned.0.push(h);
            headers.push(h);
            names.push(CString::new(name.as_str()).map_err(|_| "a header name holds a NUL")?);
        }
        let mut name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let opts = CString::new(unit.compile_options.as_str())
            .map_err(|_| "the compile options hold a NUL byte".to_string())?;
        // SAFETY: our own program and headers, the application's device list (valid for its
        // successful link), NUL-terminated options and names.
        let r = unsafe {
            compile(
                p,
                num_devices,
                device_list,
                opts.as_ptr(),
                headers.len() as cl_uint,
                if headers.is_empty() {
                    std::ptr::null()
                } else {
                    headers.as_ptr()
                },
                if name_ptrs.is_empty() {
                    std::ptr::null_mut()
                } else {
                    name_ptrs.as_mut_ptr()
                },
                None,
                std::ptr::null_mut(),
            )
        };
        if r != CL_SUCCESS {
            return Err(
                build_log(next, p).unwrap_or_else(|| format!("clCompileProgram returned {r}"))
            );
        }
        compiled.push(p);
    }
    let opts =
        CString::new(link_options).map_err(|_| "the link options hold a NUL byte".to_string())?;
    let mut err = CL_SUCCESS;
    // SAFETY: our compiled programs, the application's device list, NUL-terminated options.
    let linked = unsafe {
        link(
            context,
            num_devices,
            device_list,
            opts.as_ptr(),
            compiled.len() as cl_uint,
            compiled.as_ptr(),
            None,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    if linked.is_null() || err != CL_SUCCESS {
        if !linked.is_null() {
            owned.0.push(linked);
        }
        return Err(format!("clLinkProgram returned {err}"));
    }
    Ok(linked as usize)
}

/// A program of ours from `source`, in `context`.
fn create(next: &Next, context: cl_context, source: &[u8]) -> Result<cl_program, String> {
    let create = next
        .clCreateProgramWithSource
        .ok_or("the driver lacks clCreateProgramWithSource")?;
    let ptr = source.as_ptr().cast::<c_char>();
    let mut strings = [ptr];
    let lengths = [source.len()];
    let mut err = CL_SUCCESS;
    // SAFETY: one string of the given length, a live context.
    let p = unsafe { create(context, 1, strings.as_mut_ptr(), lengths.as_ptr(), &mut err) };
    if p.is_null() || err != CL_SUCCESS {
        return Err(format!("clCreateProgramWithSource returned {err}"));
    }
    Ok(p)
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
    let (unit, extra) = shadow
        .variants
        .iter()
        .enumerate()
        .find_map(|(i, v)| Some((i, *v.extra_arg.get(&name)?)))?;
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
        unit,
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
        (k.program != 0 && !k.name.is_empty()).then(|| (k.program, k.name.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widened_helpers_are_found_and_kernels_are_not() {
        let src = "int twice(int v, __global uint* __cltrap_cov) { return 2 * v; }\n\
                   __kernel void k(__global int* a,\n  __global uint* __cltrap_cov) {\n\
                   __cltrap_header(__cltrap_cov); a[0] = twice(1, __cltrap_cov); }\n\
                   static float keep(float x) { return x; }\n";
        assert_eq!(widened_functions(src), vec!["twice".to_string()]);
        assert!(mentions(b"x = twice(3);", b"twice"));
        assert!(!mentions(b"x = twice2(3); twicer", b"twice"));
    }
}
