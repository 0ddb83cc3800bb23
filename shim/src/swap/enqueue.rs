//! The enqueue substitution: a launch of an application kernel whose program has a shadow
//! runs the shadow kernel instead, with the application's arguments plus the pass's extra one.
//!
//! The launch hook (`core::launch`) calls [`before_enqueue`] right before forwarding the
//! enqueue and forwards [`SwapLaunch::kernel`] in place of the application's kernel (same
//! queue, geometry, wait list and event), then calls [`after_enqueue`] with the result and the
//! launch's event. Recording keeps describing the application's kernel and arguments.

use super::counters::{self, Launch};
use super::perm;
use super::shadow::{self, ShadowKernel};
use super::Pass;
use crate::core::{info_value, lock, queue_facts};
use crate::door::quietly;
use crate::Next;
use opencl_sys::cl_icd::clReleaseMemObject_t;
use opencl_sys::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Swapped launches so far in this process (the permutation of launch `n` uses seed SEED+n).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Largest counter buffer the shim allocates for one launch (in u32s, 1 GiB).
const MAX_WORDS: u64 = 1 << 28;

/// A launch's geometry as the application gave it (NULL arrays as `None`). `work_dim` and
/// `offset` are part of the hook's interface although no pass needs them yet (the instrumented
/// kernels read offsets on the device).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchGeometry<'a> {
    /// `work_dim`.
    pub work_dim: cl_uint,
    /// Global offset.
    pub offset: Option<&'a [u64]>,
    /// Global size.
    pub global: &'a [u64],
    /// Local size.
    pub local: Option<&'a [u64]>,
}

/// The per-launch extra argument.
enum Extra {
    Counters {
        buffer: usize,
        words: usize,
        launch: Launch,
    },
    Table {
        buffer: usize,
    },
}

impl Extra {
    fn buffer(&self) -> usize {
        match self {
            Extra::Counters { buffer, .. } | Extra::Table { buffer } => *buffer,
        }
    }
}

/// A swapped launch between [`before_enqueue`] and [`after_enqueue`]: the kernel to forward,
/// and what must happen after. Holds the shadow kernel (its arguments belong to this launch
/// until the enqueue returned); dropping it without [`after_enqueue`] releases everything.
pub struct SwapLaunch {
    /// The kernel to enqueue instead of the application's.
    pub kernel: cl_kernel,
    /// A local size to enqueue with instead of the application's NULL (a permuted launch needs
    /// to know its work-group count); `work_dim` entries.
    pub local: Option<Vec<usize>>,
    shadow: Arc<Mutex<ShadowKernel>>,
    name: String,
    extra: Option<Extra>,
    release: Option<clReleaseMemObject_t>,
}

impl SwapLaunch {
    /// The local-size pointer to forward: `None` = the application's own.
    pub fn local_size(&self) -> Option<*const usize> {
        self.local.as_ref().map(|l| l.as_ptr())
    }
}

impl Drop for SwapLaunch {
    fn drop(&mut self) {
        if let (Some(extra), Some(Some(release))) = (self.extra.take(), self.release) {
            // SAFETY: our own buffer, released once (the driver keeps it while commands use it).
            unsafe { release(extra.buffer() as cl_mem) };
        }
        lock(&self.shadow).busy = false;
    }
}

/// Before the enqueue: when `kernel`'s program has a shadow, prepares the shadow kernel
/// (arguments copied, extra argument set) and returns it; `None` = forward the application's
/// own kernel (not swapped, or something failed: said once on stderr).
pub fn before_enqueue(
    next: &'static Next,
    queue: cl_command_queue,
    kernel: cl_kernel,
    geo: &LaunchGeometry<'_>,
) -> Option<SwapLaunch> {
    let pass = super::pass()?;
    if !shadow::any() {
        return None;
    }
    let _ = quietly(|| counters::poll(next));
    let sk = shadow::kernel_for(next, kernel)?;
    acquire(&sk);
    // From here on, dropping `launch` gives the shadow kernel back.
    let mut launch = SwapLaunch {
        kernel: std::ptr::null_mut(),
        local: None,
        shadow: sk.clone(),
        name: String::new(),
        extra: None,
        release: Some(next.clReleaseMemObject),
    };
    let mut g = lock(&sk);
    launch.name = g.name.clone();
    if !fits(next, queue, &g, geo) {
        return None;
    }
    if !shadow::copy_args(next, kernel, &mut g) {
        return None;
    }
    let (extra, local) = make_extra(next, pass, queue, &g, geo)?;
    launch.local = local;
    let set = next.clSetKernelArg?;
    let mem = extra.buffer() as cl_mem;
    launch.extra = Some(extra);
    // SAFETY: a buffer argument of our own, by value.
    let r = unsafe {
        set(
            g.kernel as cl_kernel,
            g.extra,
            std::mem::size_of::<cl_mem>(),
            (&mem as *const cl_mem).cast(),
        )
    };
    if r != CL_SUCCESS {
        shadow::say_once(&format!(
            "kernel {}: the instrumented kernel refused its extra argument (error {r}); it runs unchanged",
            g.name
        ));
        return None;
    }
    launch.kernel = g.kernel as cl_kernel;
    drop(g);
    Some(launch)
}

/// After the enqueue of a swapped launch (`ret` its result, `event` its event or NULL):
/// queues the counter read-back (coverage) and gives back the per-launch buffer.
pub fn after_enqueue(
    next: &Next,
    queue: cl_command_queue,
    mut launch: SwapLaunch,
    ret: cl_int,
    event: cl_event,
) {
    if ret != CL_SUCCESS {
        shadow::say_once(&format!(
            "kernel {}: the driver refused the instrumented kernel (error {ret})",
            launch.name
        ));
        return;
    }
    if let Some(Extra::Counters {
        buffer,
        words,
        launch: l,
    }) = launch.extra.take()
    {
        let ok = counters::read_back(next, queue, buffer as cl_mem, words, event, l);
        launch.extra = Some(Extra::Table { buffer });
        if !ok {
            shadow::say_once(
                "coverage counters could not be read back; some launches are not counted",
            );
        }
    }
}

/// Waits until no other thread is between `before_enqueue` and `after_enqueue` with this
/// shadow kernel (OpenCL requires the same of applications sharing one kernel object).
fn acquire(sk: &Mutex<ShadowKernel>) {
    loop {
        {
            let mut g = lock(sk);
            if !g.busy {
                g.busy = true;
                return;
            }
        }
        std::thread::yield_now();
    }
}

/// Whether the shadow kernel can take the launch's work-group size (instrumentation may lower
/// `CL_KERNEL_WORK_GROUP_SIZE`); says once when not.
fn fits(next: &Next, queue: cl_command_queue, sk: &ShadowKernel, geo: &LaunchGeometry<'_>) -> bool {
    let Some(local) = geo.local else { return true };
    let items: u64 = local.iter().product();
    let max = max_items(next, queue, sk);
    if max != 0 && items > max {
        shadow::say_once(&format!(
            "kernel {}: the instrumented kernel takes at most {max} work-items per group, the launch has {items}; such launches run unchanged",
            sk.name
        ));
        return false;
    }
    true
}

/// The launch's extra argument, and the local size chosen for a NULL-local permuted launch.
fn make_extra(
    next: &Next,
    pass: Pass,
    queue: cl_command_queue,
    sk: &ShadowKernel,
    geo: &LaunchGeometry<'_>,
) -> Option<(Extra, Option<Vec<usize>>)> {
    let context = Some(queue_facts(next, queue).context).filter(|c| *c != 0)?;
    let n = LAUNCHES.fetch_add(1, Ordering::Relaxed);
    match pass {
        Pass::Coverage => {
            let ones = vec![1u64; geo.global.len()];
            let g = perm::group_counts(geo.global, geo.local.unwrap_or(&ones));
            let v = &sk.shadow.variants[sk.unit];
            let words = v
                .barriers
                .checked_mul(g[0] * g[1] * g[2])
                .and_then(|b| b.checked_add(v.static_len))
                .filter(|w| *w <= MAX_WORDS && *w >= 8);
            let Some(words) = words else {
                shadow::say_once(&format!(
                    "kernel {}: the coverage counters of a launch this large do not fit; it runs unchanged",
                    sk.name
                ));
                return None;
            };
            let mut init = vec![0u32; words as usize];
            init[0] = words as u32;
            let buffer = make_buffer(next, context, CL_MEM_READ_WRITE, &init)?;
            let extra = Extra::Counters {
                buffer,
                words: words as usize,
                launch: Launch {
                    key: v.key.clone(),
                    kernel: sk.name.clone(),
                    global: geo.global.to_vec(),
                    local: geo.local.map(<[u64]>::to_vec),
                },
            };
            Some((extra, None))
        }
        Pass::Permute(seed) => {
            let (local, chosen) = match geo.local {
                Some(l) => (l.to_vec(), None),
                None => {
                    let l = perm::choose_local(geo.global, max_items(next, queue, sk));
                    let chosen = l.iter().map(|v| *v as usize).collect();
                    (l, Some(chosen))
                }
            };
            let table = if seed == 0 {
                perm::identity_permutation(geo.global, &local)
            } else {
                perm::random_permutation(geo.global, &local, seed.wrapping_add(n))
            };
            let buffer = make_buffer(next, context, CL_MEM_READ_ONLY, &table)?;
            Some((Extra::Table { buffer }, chosen))
        }
    }
}

/// `CL_KERNEL_WORK_GROUP_SIZE` of the shadow kernel on the queue's device (0 if unknown).
fn max_items(next: &Next, queue: cl_command_queue, sk: &ShadowKernel) -> u64 {
    let Some(winfo) = next.clGetKernelWorkGroupInfo else {
        return 0;
    };
    let dev = queue_facts(next, queue).device;
    if dev == 0 {
        return 0;
    }
    // SAFETY: a standard info query on live objects.
    info_value::<usize>(|s, p, r| unsafe {
        winfo(
            sk.kernel as cl_kernel,
            dev as cl_device_id,
            CL_KERNEL_WORK_GROUP_SIZE,
            s,
            p,
            r,
        )
    })
    .map_or(0, |v| v as u64)
}

fn make_buffer(next: &Next, context: usize, flags: cl_mem_flags, data: &[u32]) -> Option<usize> {
    let create = next.clCreateBuffer?;
    let mut err = CL_SUCCESS;
    // SAFETY: COPY_HOST_PTR copies `data` (which outlives the call) at creation.
    let b = unsafe {
        create(
            context as cl_context,
            flags | CL_MEM_COPY_HOST_PTR,
            std::mem::size_of_val(data),
            data.as_ptr() as *mut libc::c_void,
            &mut err,
        )
    };
    (err == CL_SUCCESS && !b.is_null()).then_some(b as usize)
}
