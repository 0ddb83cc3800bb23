//! Small helpers for the `clGet*Info` pattern (ask the size, then the value), always through
//! the door's next table so the shim's own queries are never seen as application calls.

use libc::c_void;
use opencl_sys::cl_int;

/// The raw bytes of an info query; `None` when the driver refuses it.
pub fn bytes(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Option<Vec<u8>> {
    let mut size = 0usize;
    if f(0, std::ptr::null_mut(), &mut size) != 0 {
        return None;
    }
    let mut buf = vec![0u8; size];
    if size > 0 && f(size, buf.as_mut_ptr().cast(), std::ptr::null_mut()) != 0 {
        return None;
    }
    Some(buf)
}

/// A string-valued query, without its terminating NUL.
pub fn string(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Option<String> {
    bytes(f).map(|b| c_string(&b))
}

/// The text of a C string buffer up to its first NUL.
pub fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A fixed-size (plain-data) query.
pub fn value<T: Copy + Default>(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Option<T> {
    let mut v = T::default();
    let r = f(
        std::mem::size_of::<T>(),
        (&mut v as *mut T).cast(),
        std::ptr::null_mut(),
    );
    (r == 0).then_some(v)
}

/// A query returning an array of `T`.
pub fn array<T: Copy + Default>(
    f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int,
) -> Option<Vec<T>> {
    let b = bytes(f)?;
    let n = b.len() / std::mem::size_of::<T>();
    let mut out = vec![T::default(); n];
    // SAFETY: `out` has room for n values of plain-data T; the bytes came from the driver.
    unsafe {
        std::ptr::copy_nonoverlapping(
            b.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            n * std::mem::size_of::<T>(),
        )
    };
    Some(out)
}
