//! The constructor: when preloaded, put ourselves in front of `OPENCL_LAYERS` *as the OpenCL
//! loader reads it*, so the loader also loads us as a layer, which catches calls that bypass
//! our exported symbols (`dlopen` + `dlsym(handle, ...)`).
//!
//! The environment itself is never changed: the loader reads `OPENCL_LAYERS` with `getenv`
//! (ocl-icd) or `secure_getenv` (the Khronos loader), and a preloaded library's definitions
//! of those come first, so ours answer that one name with our path in front while the
//! variable in `environ` stays as the application's. Child processes (which inherit
//! `environ`, never a `getenv` answer) and `/proc/<pid>/environ` see exactly what they would
//! without the shim. When the application sets `OPENCL_LAYERS` itself after start, its own
//! value is answered from then on.
//!
//! It does nothing else, so processes that never use OpenCL (PoCL runs `/usr/bin/ld` with the
//! environment of the application) stay untouched: no files, no output, no threads.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::c_char;

/// `OPENCL_LAYERS` as the loader is to read it (our path in front); null: not registered.
static LAYERS: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
/// The application's own value of `OPENCL_LAYERS` in `environ` when we registered (null:
/// unset): answered with [`LAYERS`] only while `environ` still holds exactly this string.
static ORIGINAL: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());

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
        let value = match env_value("OPENCL_LAYERS") {
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
            // is single-threaded; the name is NUL-terminated.
            let original = unsafe { lookup(c"OPENCL_LAYERS".as_ptr()) };
            ORIGINAL.store(original, Ordering::Release);
            // Leaked on purpose: the loader may keep the pointer it was given.
            LAYERS.store(value.into_raw(), Ordering::Release);
        }
    });
}

/// `name`'s value in `environ`, exactly as the C library's `getenv` finds it (the first
/// `name=` entry); null when absent.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn lookup(name: *const c_char) -> *mut c_char {
    extern "C" {
        static environ: *const *const c_char;
    }
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a NUL-terminated string (the caller's promise).
    let key = unsafe { CStr::from_ptr(name) }.to_bytes();
    if key.is_empty() || key.contains(&b'=') {
        return std::ptr::null_mut();
    }
    // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated strings.
    unsafe {
        let mut at = environ;
        if at.is_null() {
            return std::ptr::null_mut();
        }
        while !(*at).is_null() {
            let entry = *at;
            let mut i = 0;
            while i < key.len() && *entry.add(i) as u8 == key[i] {
                i += 1;
            }
            if i == key.len() && *entry.add(i) as u8 == b'=' {
                return entry.add(i + 1).cast_mut();
            }
            at = at.add(1);
        }
    }
    std::ptr::null_mut()
}

/// The C library's `getenv`, as every module of a process with the shim preloaded calls it:
/// the same answer, except `OPENCL_LAYERS` with our path in front while we are registered
/// and the application has not set the variable itself (see the module documentation).
///
/// # Safety
/// As the C function: `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn getenv(name: *const c_char) -> *mut c_char {
    // SAFETY: the caller's promise, passed on.
    let found = unsafe { lookup(name) };
    let layers = LAYERS.load(Ordering::Acquire);
    // SAFETY: a non-null `name` is NUL-terminated (checked inside `lookup` for null).
    if !layers.is_null()
        && !name.is_null()
        && unsafe { CStr::from_ptr(name) }.to_bytes() == b"OPENCL_LAYERS"
        && found == ORIGINAL.load(Ordering::Acquire)
    {
        return layers;
    }
    found
}

/// The C library's `secure_getenv`: nothing in a secure-execution (set-user-id) process,
/// else [`getenv`]'s answer.
///
/// # Safety
/// As the C function: `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn secure_getenv(name: *const c_char) -> *mut c_char {
    // SAFETY: getauxval reads the process's auxiliary vector.
    if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's promise, passed on.
    unsafe { getenv(name) }
}

fn env_value(name: &str) -> Option<Vec<u8>> {
    std::env::var_os(name).map(|v| v.as_bytes().to_vec())
}

fn capture_off() -> bool {
    matches!(
        env_value("CLTRAP_CAPTURE").as_deref(),
        Some(b"off" | b"0" | b"false")
    )
}

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// Whether the variable `var` lists (a path to) the file `me`.
fn listed(me: &Path, var: &str, seps: &[char]) -> bool {
    let Some(v) = env_value(var) else {
        return false;
    };
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
    let named = env_value("LD_PRELOAD").is_some_and(|v| {
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
