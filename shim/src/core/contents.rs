//! Reading a buffer or image the way the kernel sees it, and turning the bytes into capture
//! content (a stored blob, or only a digest), within the disk budget.

use crate::Next;
use cltrap_capture::{writer::digest, BufferMode, CaptureWriter, Content};
use libc::c_void;
use opencl_sys::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// What to read from a memory object.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Buffer {
        size: usize,
    },
    /// Tightly packed image contents: `bytes` = element size × region.
    Image {
        region: [usize; 3],
        bytes: usize,
    },
}

impl Shape {
    fn bytes(&self) -> usize {
        match self {
            Shape::Buffer { size } => *size,
            Shape::Image { bytes, .. } => *bytes,
        }
    }
}

/// Reads `mem` with a blocking read on the application's queue (the caller has already
/// waited for everything before it). When the object refuses host reads
/// (`CL_MEM_HOST_NO_ACCESS`, ...), copies it into a temporary buffer first.
pub fn read(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; shape.bytes()];
    if out.is_empty() {
        return Ok(out);
    }
    let direct = direct_read(next, queue, mem, shape, out.as_mut_ptr().cast());
    if direct == CL_SUCCESS {
        return Ok(out);
    }
    match staged_read(next, queue, mem, shape, out.as_mut_ptr().cast()) {
        CL_SUCCESS => Ok(out),
        e => Err(format!(
            "reading it failed (OpenCL error {direct}, through a staging buffer {e})"
        )),
    }
}

fn direct_read(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
    dst: *mut c_void,
) -> cl_int {
    let null = std::ptr::null_mut();
    // SAFETY: `dst` has room for `shape.bytes()` bytes; blocking reads finish before returning.
    unsafe {
        match shape {
            Shape::Buffer { size } => match next.clEnqueueReadBuffer {
                Some(f) => f(queue, mem, CL_TRUE, 0, size, dst, 0, null, null),
                None => CL_INVALID_OPERATION,
            },
            Shape::Image { region, .. } => match next.clEnqueueReadImage {
                Some(f) => f(
                    queue,
                    mem,
                    CL_TRUE,
                    [0usize; 3].as_ptr(),
                    region.as_ptr(),
                    0,
                    0,
                    dst,
                    0,
                    null,
                    null,
                ),
                None => CL_INVALID_OPERATION,
            },
        }
    }
}

fn staged_read(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
    dst: *mut c_void,
) -> cl_int {
    let (Some(get_info), Some(create), Some(release)) = (
        next.clGetMemObjectInfo,
        next.clCreateBuffer,
        next.clReleaseMemObject,
    ) else {
        return CL_INVALID_OPERATION;
    };
    let null = std::ptr::null_mut();
    // SAFETY: standard queries and commands on objects the application handed to the kernel;
    // the temporary buffer is released on every path.
    unsafe {
        let mut context: cl_context = null;
        let r = get_info(
            mem,
            CL_MEM_CONTEXT,
            std::mem::size_of::<cl_context>(),
            (&mut context as *mut cl_context).cast(),
            null.cast(),
        );
        if r != CL_SUCCESS {
            return r;
        }
        let mut err = CL_SUCCESS;
        let tmp = create(context, CL_MEM_READ_WRITE, shape.bytes(), null, &mut err);
        if tmp.is_null() {
            return err;
        }
        let copied = match shape {
            Shape::Buffer { size } => match next.clEnqueueCopyBuffer {
                Some(f) => f(queue, mem, tmp, 0, 0, size, 0, null.cast(), null.cast()),
                None => CL_INVALID_OPERATION,
            },
            Shape::Image { region, .. } => match next.clEnqueueCopyImageToBuffer {
                Some(f) => f(
                    queue,
                    mem,
                    tmp,
                    [0usize; 3].as_ptr(),
                    region.as_ptr(),
                    0,
                    0,
                    null.cast(),
                    null.cast(),
                ),
                None => CL_INVALID_OPERATION,
            },
        };
        let r = if copied != CL_SUCCESS {
            copied
        } else {
            direct_read(
                next,
                queue,
                tmp,
                Shape::Buffer {
                    size: shape.bytes(),
                },
                dst,
            )
        };
        release(tmp);
        r
    }
}

static OVER_BUDGET: AtomicBool = AtomicBool::new(false);

/// The buffer mode in force: the configured one, or `hash` once the disk budget is spent.
pub fn mode(configured: BufferMode) -> BufferMode {
    if configured == BufferMode::Full && OVER_BUDGET.load(Ordering::Relaxed) {
        BufferMode::Hash
    } else {
        configured
    }
}

/// Turns bytes into content: stored (deduplicated) in `full` mode, digest only in `hash` mode.
pub fn store(
    writer: &CaptureWriter,
    configured: BufferMode,
    max_bytes: u64,
    bytes: &[u8],
) -> Content {
    let size = bytes.len() as u64;
    if mode(configured) == BufferMode::Full {
        let hash = digest(bytes);
        if writer.blobs.is_known(&hash) {
            return Content::Blob { hash, size };
        }
        if writer.blobs.bytes_written().saturating_add(size) <= max_bytes {
            return match writer.blobs.put_with_hash(&hash, bytes) {
                Ok(()) => Content::Blob { hash, size },
                Err(e) => {
                    crate::sink::fail(&e);
                    Content::Missing {
                        note: format!("not stored: {e}"),
                    }
                }
            };
        }
        if !OVER_BUDGET.swap(true, Ordering::Relaxed) {
            crate::sink::say(&format!(
                "the capture reached CLTRAP_MAX_MB ({} MB of contents); continuing with digests only (as CLTRAP_BUFFERS=hash)",
                max_bytes >> 20
            ));
        }
        return Content::Digest { hash, size };
    }
    Content::Digest {
        hash: digest(bytes),
        size,
    }
}
