//! Where in the application a call came from: the first stack frame outside cltrap and the
//! OpenCL loader, as module + offset + nearest symbol (KernelInterceptor's "Built at / Run at").
//!
//! Launches take the return address their entry point noted ([`crate::caller`]); otherwise
//! (builds, calls through the loader) the stack is walked with `_Unwind_Backtrace` up to the
//! first application frame. Each return address is classified with `dladdr` once and cached,
//! since launches repeat from the same few places. No debug info is read in the application: the analyzer resolves
//! `file:line` later from the module and offset.

use crate::handles::HandleMap;
use cltrap_capture::Site;
use libc::{c_int, c_void, Dl_info};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::sync::Mutex;

#[repr(C)]
struct UnwindContext {
    _opaque: [u8; 0],
}

type TraceFn = extern "C" fn(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int;

extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
    fn dladdr1(
        addr: *const c_void,
        info: *mut Dl_info,
        extra: *mut *mut c_void,
        flags: c_int,
    ) -> c_int;
}

const MAX_FRAMES: usize = 64;
const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;
const RTLD_DL_LINKMAP: c_int = 2;

struct Walk<'a> {
    visit: &'a mut dyn FnMut(usize) -> bool,
    seen: usize,
}

extern "C" fn step(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `walk` passed, alive for the whole unwind.
    let walk = unsafe { &mut *(arg as *mut Walk<'_>) };
    // SAFETY: `ctx` is the unwinder's live context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) };
    walk.seen += 1;
    let stop =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (walk.visit)(ip))).unwrap_or(true);
    if stop || ip == 0 || walk.seen >= MAX_FRAMES {
        URC_END_OF_STACK
    } else {
        URC_NO_REASON
    }
}

/// Calls `visit` with each return address, innermost first, until it returns true.
fn walk(visit: &mut dyn FnMut(usize) -> bool) {
    let mut w = Walk { visit, seen: 0 };
    // SAFETY: `step` only uses `arg` as the `Walk` above, which outlives the call.
    unsafe { _Unwind_Backtrace(step, (&mut w as *mut Walk<'_>).cast()) };
}

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
    // SAFETY: dladdr returns NUL-terminated names owned by the dynamic loader (or NULL).
    unsafe { c_text(info.dli_fname) }
}

unsafe fn c_text(p: *const libc::c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: see callers: NUL-terminated strings owned by the dynamic loader.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

fn our_base() -> usize {
    static BASE: Lazy<usize> = Lazy::new(|| module_base(our_base as *const () as usize));
    *BASE
}

/// Load address of the first module on the stack that is not cltrap: the loader calling
/// `clInitLayer`.
pub fn caller_module_base() -> usize {
    let ours = our_base();
    let mut found = 0;
    walk(&mut |ip| {
        let b = module_base(ip);
        if b != 0 && b != ours {
            found = b;
            return true;
        }
        false
    });
    found
}

#[derive(Clone)]
enum Frame {
    /// cltrap itself, the loader, or an address nobody knows.
    Skip,
    App(Site),
}

static FRAMES: Lazy<Mutex<HandleMap<usize, Frame>>> = Lazy::new(Default::default);

/// The frame of return address `ip`, classified once (the cache is emptied if it ever grows
/// past 65 536 addresses).
fn frame(frames: &mut HandleMap<usize, Frame>, ip: usize) -> Frame {
    if let Some(f) = frames.get(&ip) {
        return f.clone();
    }
    let f = classify(ip);
    if frames.len() > 65536 {
        frames.clear();
    }
    frames.insert(ip, f.clone());
    f
}

/// The application's frame that made the current OpenCL call: the return address the
/// launch entry point noted ([`crate::caller`]) when that is an application frame (the
/// frame an unwind would stop at), else the first application frame found by unwinding.
pub fn capture() -> Option<Site> {
    if let Some(ip) = crate::caller::current() {
        let mut frames = FRAMES.lock().ok()?;
        if let Frame::App(s) = frame(&mut frames, ip) {
            return Some(s);
        }
    }
    unwound()
}

/// The first application frame on the stack, by unwinding (one lock of the cache).
fn unwound() -> Option<Site> {
    let mut frames = FRAMES.lock().ok()?;
    let mut site = None;
    walk(&mut |ip| match frame(&mut frames, ip) {
        Frame::App(s) => {
            site = Some(s);
            true
        }
        Frame::Skip => false,
    });
    site
}

fn classify(ip: usize) -> Frame {
    let Some(info) = dladdr(ip) else {
        return Frame::Skip;
    };
    if info.dli_fbase as usize == our_base() {
        return Frame::Skip;
    }
    // SAFETY: names from dladdr, owned by the dynamic loader.
    let Some(module) = (unsafe { c_text(info.dli_fname) }) else {
        return Frame::Skip;
    };
    if is_loader(&module) {
        return Frame::Skip;
    }
    // SAFETY: as above.
    let symbol = unsafe { c_text(info.dli_sname) };
    Frame::App(Site {
        module: absolute(module),
        offset: ip.wrapping_sub(load_bias(ip, info.dli_fbase as usize)) as u64,
        symbol,
        location: None,
    })
}

fn is_loader(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.starts_with("libOpenCL")
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
