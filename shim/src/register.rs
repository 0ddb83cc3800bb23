//! The constructor: when preloaded, put ourselves in front of `OPENCL_LAYERS` so the loader
//! also loads us as a layer, which catches calls that bypass our exported symbols
//! (`dlopen` + `dlsym(handle, ...)`).
//!
//! It does nothing else, so processes that never use OpenCL (PoCL runs `/usr/bin/ld` with the
//! environment of the application) stay untouched: no files, no output, no threads.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[ctor::ctor]
fn register_as_layer() {
    let _ = std::panic::catch_unwind(|| {
        if capture_off() {
            return;
        }
        let Some(me) = crate::site::module_path(register_as_layer as *const () as usize) else {
            return;
        };
        let Some(me) = canonical(Path::new(&me)) else {
            return;
        };
        if !preloaded(&me) || listed(&me, "OPENCL_LAYERS", &[':']) {
            return;
        }
        let value = match getenv("OPENCL_LAYERS") {
            Some(old) if !old.is_empty() => {
                let mut v = me.as_os_str().as_bytes().to_vec();
                v.push(b':');
                v.extend_from_slice(&old);
                v
            }
            _ => me.as_os_str().as_bytes().to_vec(),
        };
        if let Ok(value) = CString::new(value) {
            // SAFETY: constructors of a preloaded library run before `main`, while the process
            // is single-threaded, so nothing reads the environment concurrently.
            unsafe { libc::setenv(c"OPENCL_LAYERS".as_ptr(), value.as_ptr(), 1) };
        }
    });
}

fn getenv(name: &str) -> Option<Vec<u8>> {
    std::env::var_os(name).map(|v| v.as_bytes().to_vec())
}

fn capture_off() -> bool {
    matches!(
        getenv("CLTRAP_CAPTURE").as_deref(),
        Some(b"off" | b"0" | b"false")
    )
}

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// Whether the variable `var` lists (a path to) the file `me`.
fn listed(me: &Path, var: &str, seps: &[char]) -> bool {
    let Some(v) = getenv(var) else { return false };
    let v = String::from_utf8_lossy(&v).into_owned();
    v.split(|c| seps.contains(&c))
        .filter(|s| !s.is_empty())
        .any(|s| canonical(Path::new(OsStr::new(s))).as_deref() == Some(me))
}

/// Whether we were preloaded (rather than `dlopen`ed, e.g. by the loader as a layer).
fn preloaded(me: &Path) -> bool {
    if listed(me, "LD_PRELOAD", &[' ', ':']) {
        return true;
    }
    // A bare file name in LD_PRELOAD is found through the library path: accept it when the
    // name matches and our symbols are in the global scope (dlopen'ed layers are not).
    let name = me.file_name();
    let named = getenv("LD_PRELOAD").is_some_and(|v| {
        String::from_utf8_lossy(&v)
            .split([' ', ':'])
            .any(|s| Path::new(s).file_name().is_some_and(|n| Some(n) == name))
    });
    // SAFETY: dlsym with a NUL-terminated name.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"clInitLayer".as_ptr()) };
    named
        && !global.is_null()
        && crate::site::module_base(global as usize)
            == crate::site::module_base(register_as_layer as *const () as usize)
}

#[allow(dead_code)]
fn _unused(_: &CStr) {}
