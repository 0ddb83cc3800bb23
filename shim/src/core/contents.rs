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
    /// Bytes the packed contents take.
    pub fn bytes(&self) -> usize {
        match self {
            Shape::Buffer { size } => *size,
            Shape::Image { bytes, .. } => *bytes,
        }
    }
}

/// Enqueues a non-blocking read of the whole object into `dst`, waiting for `wait`.
/// Returns the read's event when `want_event` (else null), or the enqueue's error.
pub fn enqueue_read(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
    dst: *mut c_void,
    wait: &[cl_event],
    want_event: bool,
) -> Result<cl_event, cl_int> {
    // SAFETY: `dst` has room for `shape.bytes()` bytes and stays allocated until the command
    // completed (the flight owns it until its final event completes).
    enqueued(wait, want_event, |n, list, ev_ptr| unsafe {
        match shape {
            Shape::Buffer { size } => match next.clEnqueueReadBuffer {
                Some(f) => f(queue, mem, CL_FALSE, 0, size, dst, n, list, ev_ptr),
                None => CL_INVALID_OPERATION,
            },
            Shape::Image { region, .. } => match next.clEnqueueReadImage {
                Some(f) => f(
                    queue,
                    mem,
                    CL_FALSE,
                    [0usize; 3].as_ptr(),
                    region.as_ptr(),
                    0,
                    0,
                    dst,
                    n,
                    list,
                    ev_ptr,
                ),
                None => CL_INVALID_OPERATION,
            },
        }
    })
}

/// Runs one enqueue with `wait` as its wait list and, when `want_event`, an event pointer;
/// returns the event (null unless asked for) or the enqueue's error.
pub(super) fn enqueued(
    wait: &[cl_event],
    want_event: bool,
    enqueue: impl FnOnce(cl_uint, *const cl_event, *mut cl_event) -> cl_int,
) -> Result<cl_event, cl_int> {
    let mut ev: cl_event = std::ptr::null_mut();
    let ev_ptr: *mut cl_event = if want_event {
        &mut ev
    } else {
        std::ptr::null_mut()
    };
    let (n, list) = wait_list(wait);
    let r = enqueue(n, list, ev_ptr);
    if r == CL_SUCCESS {
        Ok(ev)
    } else {
        Err(r)
    }
}

fn wait_list(wait: &[cl_event]) -> (cl_uint, *const cl_event) {
    if wait.is_empty() {
        (0, std::ptr::null())
    } else {
        (wait.len() as cl_uint, wait.as_ptr())
    }
}

/// A device-only temporary buffer of `bytes` in `mem`'s context, for objects the host may not
/// read directly (`CL_MEM_HOST_NO_ACCESS`, `CL_MEM_HOST_WRITE_ONLY`).
pub fn staging_buffer(next: &Next, mem: cl_mem, bytes: usize) -> Result<cl_mem, cl_int> {
    let (Some(get_info), Some(create)) = (next.clGetMemObjectInfo, next.clCreateBuffer) else {
        return Err(CL_INVALID_OPERATION);
    };
    let null = std::ptr::null_mut();
    // SAFETY: standard query and creation on an object the application handed to the kernel.
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
            return Err(r);
        }
        let mut err = CL_SUCCESS;
        let tmp = create(context, CL_MEM_READ_WRITE, bytes.max(1), null, &mut err);
        if tmp.is_null() {
            Err(err)
        } else {
            Ok(tmp)
        }
    }
}

/// Enqueues a device-side copy of the whole object into the staging buffer `tmp`.
pub fn enqueue_stage(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
    tmp: cl_mem,
    wait: &[cl_event],
    want_event: bool,
) -> Result<cl_event, cl_int> {
    // SAFETY: device-side copy between live objects of one context, sized by the object.
    enqueued(wait, want_event, |n, list, ev_ptr| unsafe {
        match shape {
            Shape::Buffer { size } => match next.clEnqueueCopyBuffer {
                Some(f) => f(queue, mem, tmp, 0, 0, size, n, list, ev_ptr),
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
                    n,
                    list,
                    ev_ptr,
                ),
                None => CL_INVALID_OPERATION,
            },
        }
    })
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
