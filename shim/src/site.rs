//! Where in the application a call came from: the first stack frame outside cltrap and the
//! OpenCL loader, as module + offset + nearest symbol (KernelInterceptor's "Built at / Run at").
//!
//! Uses glibc's `backtrace(3)` and `dladdr`: no debug info is read in the application; the
//! analyzer resolves `file:line` later with the module and offset.

use cltrap_capture::Site;
use libc::{c_int, c_void, Dl_info};
use std::ffi::CStr;

extern "C" {
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

const MAX_FRAMES: usize = 48;

fn dladdr(addr: usize) -> Option<Dl_info> {
    // SAFETY: dladdr only reads the loader's tables; an all-zero Dl_info is a valid out value.
    unsafe {
        let mut info: Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const c_void, &mut info) == 0 {
            None
        } else {
            Some(info)
        }
    }
}

/// Load address of the module containing `addr` (0 when unknown).
pub fn module_base(addr: usize) -> usize {
    dladdr(addr).map(|i| i.dli_fbase as usize).unwrap_or(0)
}

/// Path of the module containing `addr`.
pub fn module_path(addr: usize) -> Option<String> {
    let info = dladdr(addr)?;
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returns a NUL-terminated name owned by the dynamic loader.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn our_base() -> usize {
    module_base(our_base as *const () as usize)
}

fn frames() -> Vec<usize> {
    let mut buf = [std::ptr::null_mut::<c_void>(); MAX_FRAMES];
    // SAFETY: the buffer holds MAX_FRAMES entries.
    let n = unsafe { backtrace(buf.as_mut_ptr(), MAX_FRAMES as c_int) };
    buf[..n.max(0) as usize]
        .iter()
        .map(|p| *p as usize)
        .collect()
}

/// Load address of the first module on the stack that is not cltrap: the loader calling
/// `clInitLayer`.
pub fn caller_module_base() -> usize {
    let ours = our_base();
    frames()
        .into_iter()
        .map(module_base)
        .find(|b| *b != 0 && *b != ours)
        .unwrap_or(0)
}

fn is_loader(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.starts_with("libOpenCL")
}

/// The application's frame that made the current OpenCL call.
pub fn capture() -> Option<Site> {
    let ours = our_base();
    for addr in frames() {
        let Some(info) = dladdr(addr) else { continue };
        let base = info.dli_fbase as usize;
        if base == ours || info.dli_fname.is_null() {
            continue;
        }
        // SAFETY: NUL-terminated names owned by the dynamic loader.
        let module = unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned();
        if is_loader(&module) {
            continue;
        }
        let symbol = if info.dli_sname.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(
                unsafe { CStr::from_ptr(info.dli_sname) }
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        let module = absolute(module);
        return Some(Site {
            module,
            offset: (addr - load_bias(addr, base)) as u64,
            symbol,
            location: None,
        });
    }
    None
}

/// `dladdr` names the main program by its `argv[0]` (often relative): make it a real path.
fn absolute(module: String) -> String {
    if module.starts_with('/') {
        return module;
    }
    std::fs::canonicalize(&module)
        .or_else(|_| std::fs::read_link("/proc/self/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or(module)
}

extern "C" {
    fn dladdr1(
        addr: *const c_void,
        info: *mut Dl_info,
        extra: *mut *mut c_void,
        flags: c_int,
    ) -> c_int;
}
const RTLD_DL_LINKMAP: c_int = 2;

/// The module's load bias (`l_addr`): 0 for non-PIE executables, so `offset` is what
/// `addr2line -e module` expects in both cases.
fn load_bias(addr: usize, fallback: usize) -> usize {
    // SAFETY: dladdr1 with RTLD_DL_LINKMAP stores a `struct link_map *` whose first field is
    // `l_addr` (the load bias); we only read that field.
    unsafe {
        let mut info: Dl_info = std::mem::zeroed();
        let mut map: *mut c_void = std::ptr::null_mut();
        if dladdr1(addr as *const c_void, &mut info, &mut map, RTLD_DL_LINKMAP) == 0
            || map.is_null()
        {
            return fallback;
        }
        *(map as *const usize)
    }
}
