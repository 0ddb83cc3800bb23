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

/// Reads every object in `items` as the kernel sees it, with one synchronisation for all:
/// non-blocking reads on the application's queue (each waiting for `wait`), then `clFinish`. Objects that refuse host reads (`CL_MEM_HOST_NO_ACCESS`, ...) are
/// copied into a temporary buffer first.
pub fn read_many(
    next: &Next,
    queue: cl_command_queue,
    items: &[(usize, Shape)],
    wait: &[cl_event],
) -> Vec<Result<Vec<u8>, String>> {
    let mut bufs: Vec<Vec<u8>> = items.iter().map(|(_, s)| vec![0u8; s.bytes()]).collect();
    let enqueued: Vec<cl_int> = items
        .iter()
        .zip(bufs.iter_mut())
        .map(|((mem, shape), buf)| {
            if buf.is_empty() {
                CL_SUCCESS
            } else {
                enqueue_read(
                    next,
                    queue,
                    *mem as cl_mem,
                    *shape,
                    buf.as_mut_ptr().cast(),
                    CL_FALSE,
                    wait,
                )
            }
        })
        .collect();
    // SAFETY: the application's queue; every read above targets a buffer that outlives this.
    let finished = unsafe { next.clFinish.map(|f| f(queue)) }.unwrap_or(CL_INVALID_OPERATION);
    items
        .iter()
        .zip(bufs)
        .zip(enqueued)
        .map(|(((mem, shape), mut buf), direct)| {
            if direct == CL_SUCCESS && finished == CL_SUCCESS {
                return Ok(buf);
            }
            match staged_read(next, queue, *mem as cl_mem, *shape, buf.as_mut_ptr().cast()) {
                CL_SUCCESS => Ok(buf),
                e => Err(format!(
                    "reading it failed (OpenCL error {direct}, through a staging buffer {e})"
                )),
            }
        })
        .collect()
}

fn enqueue_read(
    next: &Next,
    queue: cl_command_queue,
    mem: cl_mem,
    shape: Shape,
    dst: *mut c_void,
    blocking: cl_bool,
    wait: &[cl_event],
) -> cl_int {
    let null = std::ptr::null_mut();
    let (n, list) = if wait.is_empty() {
        (0, std::ptr::null())
    } else {
        (wait.len() as cl_uint, wait.as_ptr())
    };
    // SAFETY: `dst` has room for `shape.bytes()` bytes and outlives the read (callers either
    // block or finish the queue before dropping it).
    unsafe {
        match shape {
            Shape::Buffer { size } => match next.clEnqueueReadBuffer {
                Some(f) => f(queue, mem, blocking, 0, size, dst, n, list, null),
                None => CL_INVALID_OPERATION,
            },
            Shape::Image { region, .. } => match next.clEnqueueReadImage {
                Some(f) => f(
                    queue,
                    mem,
                    blocking,
                    [0usize; 3].as_ptr(),
                    region.as_ptr(),
                    0,
                    0,
                    dst,
                    n,
                    list,
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
        // On an out-of-order queue the read must wait for the copy explicitly.
        let mut copy_done: cl_event = null.cast();
        let copied = match shape {
            Shape::Buffer { size } => match next.clEnqueueCopyBuffer {
                Some(f) => f(queue, mem, tmp, 0, 0, size, 0, null.cast(), &mut copy_done),
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
                    &mut copy_done,
                ),
                None => CL_INVALID_OPERATION,
            },
        };
        let r = if copied != CL_SUCCESS {
            copied
        } else {
            enqueue_read(
                next,
                queue,
                tmp,
                Shape::Buffer {
                    size: shape.bytes(),
                },
                dst,
                CL_TRUE,
                &[copy_done],
            )
        };
        if !copy_done.is_null() {
            if let Some(rel) = next.clReleaseEvent {
                rel(copy_done);
            }
        }
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
