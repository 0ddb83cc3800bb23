//! Pinned host memory for the capture's reads: chunks of mapped `CL_MEM_ALLOC_HOST_PTR`
//! buffers of the launch's own context.
//!
//! Why: a non-blocking read into ordinary (pageable) host memory is slow on drivers that copy
//! through a staging buffer of their own. Measured on NVIDIA H100 with `bench/read_storm.c`
//! (100 000 launches, one 256-byte read each): 30–40 µs per read into pageable memory, 5–6 µs
//! into pinned memory; PoCL's CPU device does not care either way. The capture does one such
//! read per launch, so this is most of its cost there.
//!
//! Each context of a non-CPU device that recorded launches gets a pool: 1 MB slabs, each mapped once (blocking,
//! on a private queue of ours, so the application's queue never waits), cut into chunks of
//! one power-of-two size class. Reads larger than [`MAX_CHUNK`], a pool that cannot be made,
//! and memory beyond [`MAX_PINNED`] in all fall back to pageable memory.
//!
//! The pool's queue and slabs hold the application's context, so the table keeps a pool only
//! while the application holds that context ([`super::lifetime`]) and its chunks were used in
//! the last [`IDLE`]: [`retire`] (the application is done with the context) and [`trim`] (the
//! writer thread, for idle pools) take it out of the table, and every chunk in flight holds
//! it (an `Arc`) until the writer read it: the last one dropped unmaps and releases the slabs
//! and the queue ([`Pool`]'s `Drop`). A context the shim does not see held gets no pool.

use super::device::QueueFacts;
use super::held::{Child, Hold};
use super::track::lock;
use crate::Next;
use opencl_sys::cl_function_types::*;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest read served from pinned memory.
pub const MAX_CHUNK: usize = 1 << 20;
/// Pinned memory the capture may hold in all (mapped slabs).
pub const MAX_PINNED: usize = 64 << 20;
/// Bytes per slab (one `clCreateBuffer` + map).
const SLAB: usize = 1 << 20;
/// The smallest chunk.
const MIN_CHUNK: usize = 256;
/// Size classes: MIN_CHUNK, 2*MIN_CHUNK, ..., MAX_CHUNK.
const CLASSES: usize = (MAX_CHUNK / MIN_CHUNK).trailing_zeros() as usize + 1;
/// A pool with nothing in use for this long is released.
const IDLE: Duration = Duration::from_secs(1);

static PINNED: AtomicUsize = AtomicUsize::new(0);

/// The entry points a pool needs after the launch call returned.
#[derive(Clone, Copy)]
struct Calls {
    create_buffer: clCreateBuffer_t,
    map: clEnqueueMapBuffer_t,
    unmap: clEnqueueUnmapMemObject_t,
    finish: clFinish_t,
    release_mem: clReleaseMemObject_t,
    release_queue: clReleaseCommandQueue_t,
}

#[derive(Default)]
struct PoolState {
    free: Vec<Vec<usize>>,
    /// (buffer, mapped pointer) of every slab.
    slabs: Vec<(usize, usize)>,
    in_use: usize,
    last_used: Option<Instant>,
}

/// Pinned memory of one context.
pub(super) struct Pool {
    context: usize,
    /// The device of its queue (its objects' holds of the context are registered in
    /// [`super::held`] under it).
    device: usize,
    queue: usize,
    calls: Calls,
    state: Mutex<PoolState>,
}

// SAFETY: the raw handles inside are OpenCL objects (thread-safe) and host pointers into
// mapped slabs, handed out to one user at a time under the pool's lock.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

/// One chunk of a slab, given back to its pool when dropped.
pub(super) struct Chunk {
    pool: Arc<Pool>,
    class: usize,
    ptr: usize,
}

impl Chunk {
    /// Where the driver writes the read.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr as *mut u8
    }

    /// The first `len` bytes (no more than the chunk holds).
    ///
    /// # Safety
    /// The read into this chunk has completed.
    pub unsafe fn bytes(&self, len: usize) -> &[u8] {
        let len = len.min(MIN_CHUNK << self.class);
        // SAFETY: a live chunk of a mapped slab, `len` within it, written by a completed read.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, len) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let mut st = lock(&self.pool.state);
        st.in_use = st.in_use.saturating_sub(1);
        st.last_used = Some(Instant::now());
        if let Some(f) = st.free.get_mut(self.class) {
            f.push(self.ptr);
        }
    }
}

/// Per context: its pool, or None for a context that gets none (its device is a CPU), so the
/// question is asked once and each launch looks the answer up under one lock.
static POOLS: once_cell::sync::Lazy<Mutex<HashMap<usize, Option<Arc<Pool>>>>> =
    once_cell::sync::Lazy::new(Default::default);

fn class_of(bytes: usize) -> Option<usize> {
    if bytes == 0 || bytes > MAX_CHUNK {
        return None;
    }
    let size = bytes.max(MIN_CHUNK).next_power_of_two();
    Some((size / MIN_CHUNK).trailing_zeros() as usize)
}

/// The pool of the context of the queue with `facts` (made at its first use; None: pinned
/// memory is not to be had).
pub(super) fn pool_for(next: &Next, facts: QueueFacts) -> Option<Arc<Pool>> {
    let (context, device) = (facts.context, facts.device);
    if context == 0 || device == 0 {
        return None;
    }
    if let Some(p) = lock(&POOLS).get(&context) {
        return p.clone();
    }
    // Nothing of ours goes into a context the application is not seen to hold, and no queue
    // is made inside an application's callback (undefined there).
    if !super::refcount::context_held(context) || super::callback::inside() {
        return None;
    }
    // A device that computes in host memory gains nothing from pinned memory (unknown
    // answers count as not: the pool is only a speed-up).
    if super::device::is_cpu(next, device) == Some(true) {
        // Reads into pageable memory cost a CPU device nothing extra, and a pool would put a
        // queue and buffers of ours into the application's context for no gain.
        let mut pools = lock(&POOLS);
        if super::refcount::context_held(context) {
            pools.insert(context, None);
        }
        return None;
    }
    let create_queue = next.clCreateCommandQueue?;
    let mut err = CL_SUCCESS;
    // SAFETY: the application's live context and device; a plain in-order queue of our own.
    let own = super::held::take(context, Hold::Child(Child::Queue, device), || {
        let q = unsafe { create_queue(context as cl_context, device as cl_device_id, 0, &mut err) };
        (!q.is_null()).then_some(q)
    })?;
    if err != CL_SUCCESS {
        super::held::give(context, Hold::Child(Child::Queue, device), || {
            if let Some(rel) = next.clReleaseCommandQueue {
                // SAFETY: our own queue, never used.
                unsafe { rel(own) };
            }
        });
        return None;
    }
    let pool = Arc::new(Pool {
        context,
        device,
        queue: own as usize,
        calls: Calls {
            create_buffer: next.clCreateBuffer,
            map: next.clEnqueueMapBuffer,
            unmap: next.clEnqueueUnmapMemObject,
            finish: next.clFinish,
            release_mem: next.clReleaseMemObject,
            release_queue: next.clReleaseCommandQueue,
        },
        state: Mutex::new(PoolState {
            free: vec![Vec::new(); CLASSES],
            last_used: Some(Instant::now()),
            ..Default::default()
        }),
    });
    let mut pools = lock(&POOLS);
    if let Some(Some(p)) = pools.get(&context) {
        // Another thread made one meanwhile: ours goes (dropped, after the lock).
        let p = p.clone();
        drop(pools);
        return Some(p);
    }
    // Checked again under the table's lock, which [`retire`] takes after the count went to
    // zero: a pool made for a context released meanwhile serves this launch and goes with it.
    if super::refcount::context_held(context) {
        pools.insert(context, Some(pool.clone()));
    }
    Some(pool)
}

/// The application is done with `context` ([`super::lifetime`]): its pool leaves the table,
/// and is released once the last chunk in flight is given back (at once when none is).
/// Called with no lock of ours held (the release may destroy the context).
pub(super) fn retire(context: usize) {
    let gone = lock(&POOLS).remove(&context);
    drop(gone);
}

impl Pool {
    /// A chunk with room for `bytes` (None: use pageable memory).
    pub fn take(self: &Arc<Pool>, bytes: usize) -> Option<Chunk> {
        let class = class_of(bytes)?;
        let mut st = lock(&self.state);
        if st.free[class].is_empty() {
            // A new slab is mapped with a blocking call: never inside an application's
            // callback (undefined there); that read lands in pageable memory.
            if super::callback::inside() {
                return None;
            }
            drop(st);
            let base = self.new_slab()?;
            st = lock(&self.state);
            let size = MIN_CHUNK << class;
            st.free[class].extend((0..SLAB / size).map(|i| base + i * size));
        }
        let ptr = st.free[class].pop()?;
        st.in_use += 1;
        st.last_used = Some(Instant::now());
        Some(Chunk {
            pool: self.clone(),
            class,
            ptr,
        })
    }

    /// Creates and maps one slab; returns its host address.
    fn new_slab(&self) -> Option<usize> {
        if PINNED.fetch_add(SLAB, Ordering::Relaxed) + SLAB > MAX_PINNED {
            PINNED.fetch_sub(SLAB, Ordering::Relaxed);
            return None;
        }
        let made = self.map_slab();
        match made {
            Some((mem, ptr)) => {
                lock(&self.state).slabs.push((mem, ptr));
                Some(ptr)
            }
            None => {
                PINNED.fetch_sub(SLAB, Ordering::Relaxed);
                None
            }
        }
    }

    fn map_slab(&self) -> Option<(usize, usize)> {
        let c = &self.calls;
        let calls = (c.create_buffer, c.map, c.release_mem);
        map_host_buffer(calls, self.context, self.device, self.queue, SLAB)
    }

    /// Unmaps and releases every slab and the queue, once (no chunk is in use: called when
    /// the last holder let go).
    fn close(&mut self) {
        let slabs = {
            let mut st = lock(&self.state);
            st.free.iter_mut().for_each(Vec::clear);
            std::mem::take(&mut st.slabs)
        };
        let q = std::mem::take(&mut self.queue) as cl_command_queue;
        if q.is_null() {
            return;
        }
        // SAFETY: our own slabs and queue; no chunk of them is in use (callers check), so no
        // command of the application writes into them any more.
        unsafe {
            for (mem, ptr) in &slabs {
                if let Some(unmap) = self.calls.unmap {
                    unmap(
                        q,
                        *mem as cl_mem,
                        *ptr as *mut libc::c_void,
                        0,
                        std::ptr::null(),
                        std::ptr::null_mut(),
                    );
                }
            }
            if let Some(finish) = self.calls.finish {
                finish(q);
            }
            for (mem, _) in &slabs {
                if let Some(rel) = self.calls.release_mem {
                    let buffer = Hold::Child(Child::Buffer, self.device);
                    super::held::give(self.context, buffer, || {
                        rel(*mem as cl_mem);
                    });
                }
            }
            if let Some(rel) = self.calls.release_queue {
                let queue = Hold::Child(Child::Queue, self.device);
                super::held::give(self.context, queue, || {
                    rel(q);
                });
            }
        }
        PINNED.fetch_sub(SLAB * slabs.len(), Ordering::Relaxed);
    }
}

impl Drop for Pool {
    /// The last holder let go (the table after [`retire`] or [`trim`], or the last chunk in
    /// flight): the slabs and the queue go, and with them the pool's hold of the context.
    fn drop(&mut self) {
        self.close();
    }
}

/// Releases pools with nothing in use for [`IDLE`] (called by the writer thread; no lock of
/// the caller held): they leave the table, and a chunk taken just before keeps its pool
/// until it is given back.
pub(super) fn trim() {
    let idle: Vec<Arc<Pool>> = {
        let mut pools = lock(&POOLS);
        let idle: Vec<usize> = pools
            .iter()
            .filter_map(|(c, p)| Some((c, p.as_ref()?)))
            .filter(|(_, p)| {
                let st = lock(&p.state);
                st.in_use == 0 && st.last_used.is_none_or(|t| t.elapsed() >= IDLE)
            })
            .map(|(c, _)| *c)
            .collect();
        idle.iter()
            .filter_map(|c| pools.remove(c).flatten())
            .collect()
    };
    drop(idle);
}

/// The driver's entry points [`map_host_buffer`] calls: create a buffer, map it, release it.
pub(super) type MapCalls = (clCreateBuffer_t, clEnqueueMapBuffer_t, clReleaseMemObject_t);

/// A new `CL_MEM_ALLOC_HOST_PTR` buffer of `bytes` in `context`, its hold of the context
/// registered under `device` ([`super::held`]), mapped for reading and writing on `queue`
/// (blocking: nothing else of ours may be in that queue): (buffer, mapped pointer). None: it
/// could not be made or mapped (then nothing of it is left). Why host buffers of the
/// context: the driver copies into them directly, without a staging copy of its own.
pub(super) fn map_host_buffer(
    (create, map, release): MapCalls,
    context: usize,
    device: usize,
    queue: usize,
    bytes: usize,
) -> Option<(usize, usize)> {
    let (create, map) = (create?, map?);
    let mut err = CL_SUCCESS;
    let buffer = Hold::Child(Child::Buffer, device);
    let mem = super::held::take(context, buffer, || {
        // SAFETY: a buffer of our own in the application's live context (the caller's queue
        // keeps it alive).
        let m = unsafe {
            create(
                context as cl_context,
                CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                bytes.max(1),
                std::ptr::null_mut(),
                &mut err,
            )
        };
        (!m.is_null()).then_some(m)
    })?;
    let ptr = if err == CL_SUCCESS {
        // SAFETY: blocking map of our own buffer on our own queue.
        unsafe {
            map(
                queue as cl_command_queue,
                mem,
                CL_TRUE,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                bytes.max(1),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                &mut err,
            )
        }
    } else {
        std::ptr::null_mut()
    };
    if ptr.is_null() || err != CL_SUCCESS {
        super::held::give(context, buffer, || {
            if let Some(rel) = release {
                // SAFETY: our own buffer, never used.
                unsafe { rel(mem) };
            }
        });
        return None;
    }
    Some((mem as usize, ptr as usize))
}
