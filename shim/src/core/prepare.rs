//! Getting the device-side digest machinery of a context and device ready before the first
//! launch needs it (`CLTRAP_PREPARE=ahead`, the default).
//!
//! Why: made by the first launch, it is paid inside the application's loop. On the H200 host
//! (NVIDIA driver, 2026-12-01, `bench/buffer_heavy.c`, 200 launches over 4–16 MB buffers,
//! 11–13 ms natively) the capture's reads on the first launch took about 10 ms (the engine's
//! build, its kernel's first run, the pinned memory of its partials) whether the loop ran 20
//! or 200 launches, and in `full` mode the mapped host memory its new contents were read into
//! was made while the application waited at its `clFinish` (0.4 ms per MB, 64 MB).
//!
//! When: the application has a queue on a device in a context and a buffer there that the
//! capture digests on the device ([`super::digest::wanted`]), whichever comes second; once per
//! (context, device) until the application is done with the context ([`forget`]). A thread of
//! ours (`cltrap-prepare`: one at a time, gone when it has nothing left to do) then builds the
//! engine ([`super::digest::engine_for`], which gives none to a CPU device under `auto`, to a
//! context the application does not hold, or where the build fails), runs its kernel once
//! ([`super::digest::Engine::warm_up`]), takes the pinned memory its partials are read into
//! ([`super::pinned`]), and in `full` mode maps host memory of each large buffer's size for
//! its new contents ([`super::digest::Engine::premap`]), up to the engine's cap; a buffer made
//! later in a prepared context adds its size.
//!
//! Must not: make the application wait (a launch that needs the engine during its build waits
//! for it as for a build of its own, no longer), prepare from inside an application's callback,
//! put anything into a context the application no longer holds (`engine_for`'s and
//! `pool_for`'s checks), or leave a call of ours into the driver running while the process
//! exits: an exit handler waits for the thread's work to end ([`wait_at_exit`], in the process
//! that started it: a forked child has no such thread).

use super::device::QueueFacts;
use super::track::lock;
use crate::Next;
use cltrap_capture::{BufferMode, DeviceDigest, Settings};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};

/// Sizes of large buffers remembered per context (the first ones: mapped memory is capped).
const SIZES_PER_CONTEXT: usize = 64;

/// One piece of work for the thread.
struct Job {
    context: usize,
    device: usize,
    /// Build, run and take pinned memory (the first job of a pair), or only map memory.
    first: bool,
    /// Sizes of the context's buffers to map host memory for (`full` mode).
    sizes: Vec<usize>,
}

#[derive(Default)]
struct Seen {
    /// Per context: the devices of the application's queues in it.
    devices: HashMap<usize, Vec<usize>>,
    /// Per context: sizes of its buffers digested on the device.
    sizes: HashMap<usize, Vec<usize>>,
    /// (context, device) pairs handed to the thread.
    started: HashSet<(usize, usize)>,
    jobs: VecDeque<Job>,
    /// The thread is running (in the process whose id is `spawner`).
    running: bool,
    spawner: u32,
}

static SEEN: once_cell::sync::Lazy<Mutex<Seen>> = once_cell::sync::Lazy::new(Default::default);
/// Signalled when the thread has ended.
static ENDED: Condvar = Condvar::new();
/// The door's dispatch table the thread calls through (it lives as long as the process).
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The settings under which the capture prepares ahead (None: it does not).
fn preparing() -> Option<&'static Settings> {
    crate::state::settings().filter(|s| {
        s.prepare_ahead
            && s.buffers != BufferMode::None
            && matches!(s.device_digest, DeviceDigest::Auto | DeviceDigest::On)
    })
}

/// The application made a queue on `device` in `context`.
pub(super) fn queue_made(next: &Next, context: usize, device: usize) {
    if context == 0 || device == 0 || preparing().is_none() || super::callback::inside() {
        return;
    }
    let mut seen = lock(&SEEN);
    let devices = seen.devices.entry(context).or_default();
    if devices.contains(&device) {
        return;
    }
    devices.push(device);
    let sizes = seen.sizes.get(&context).cloned().unwrap_or_default();
    if !sizes.is_empty() && !seen.started.contains(&(context, device)) {
        start(&mut seen, next, context, device, sizes);
    }
}

/// The application made a buffer of `size` bytes in `context`.
pub(super) fn buffer_made(next: &Next, context: usize, size: usize) {
    let Some(settings) = preparing() else {
        return;
    };
    if context == 0 || !super::digest::wanted(settings, size) || super::callback::inside() {
        return;
    }
    let mut seen = lock(&SEEN);
    let sizes = seen.sizes.entry(context).or_default();
    if sizes.len() >= SIZES_PER_CONTEXT {
        return;
    }
    sizes.push(size);
    let sizes = sizes.clone();
    let devices = seen.devices.get(&context).cloned().unwrap_or_default();
    for device in devices {
        if seen.started.contains(&(context, device)) {
            push(&mut seen, next, context, device, false, vec![size]);
        } else {
            start(&mut seen, next, context, device, sizes.clone());
        }
    }
}

/// The application is done with `context` (or its handle names a new one): what was seen of
/// it goes.
pub(super) fn forget(context: usize) {
    let mut seen = lock(&SEEN);
    seen.devices.remove(&context);
    seen.sizes.remove(&context);
    seen.started.retain(|(c, _)| *c != context);
    seen.jobs.retain(|j| j.context != context);
}

/// Hands the first job of (`context`, `device`) to the thread.
fn start(seen: &mut Seen, next: &Next, context: usize, device: usize, sizes: Vec<usize>) {
    seen.started.insert((context, device));
    push(seen, next, context, device, true, sizes);
}

/// Queues a job, starting the thread when none runs.
fn push(
    seen: &mut Seen,
    next: &Next,
    context: usize,
    device: usize,
    first: bool,
    sizes: Vec<usize>,
) {
    seen.jobs.push_back(Job {
        context,
        device,
        first,
        sizes,
    });
    if seen.running {
        return;
    }
    NEXT.store(next as *const Next as usize, Ordering::Relaxed);
    static EXIT: Once = Once::new();
    // SAFETY: registers a plain extern "C" function; registered after the driver initialised
    // (the application made a context), so it runs before the driver's own exit handlers.
    EXIT.call_once(|| unsafe {
        libc::atexit(wait_at_exit);
    });
    let spawned = std::thread::Builder::new()
        .name("cltrap-prepare".into())
        .spawn(work);
    match spawned {
        Ok(_) => {
            seen.running = true;
            seen.spawner = std::process::id();
        }
        // The launches make what they need themselves.
        Err(_) => seen.jobs.clear(),
    }
}

/// The thread: does the queued jobs, then ends.
fn work() {
    let ptr = NEXT.load(Ordering::Relaxed);
    loop {
        let job = {
            let mut seen = lock(&SEEN);
            match seen.jobs.pop_front() {
                Some(j) => j,
                None => {
                    seen.running = false;
                    ENDED.notify_all();
                    return;
                }
            }
        };
        let settings = preparing();
        if let (Some(settings), true) = (settings, ptr != 0) {
            // SAFETY: set from a door's table, which lives as long as the process.
            let next: &Next = unsafe { &*(ptr as *const Next) };
            let _ = std::panic::catch_unwind(|| run(next, settings, &job));
        }
    }
}

/// Does one job (see the module's text).
fn run(next: &Next, settings: &Settings, job: &Job) {
    let facts = QueueFacts {
        context: job.context,
        device: job.device,
        properties: 0,
    };
    let (Some(engine), built) = super::digest::engine_built_for(next, settings, facts) else {
        return;
    };
    if job.first {
        if built {
            super::stats::add(&super::stats::ENGINES_PREPARED, 1);
        }
        engine.warm_up();
        let partials = job.sizes.iter().map(|s| engine.groups(*s) * 16).max();
        if let (Some(bytes), Some(pool)) = (partials, super::pinned::pool_for(next, facts)) {
            drop(pool.take(bytes));
        }
    }
    if settings.buffers == BufferMode::Full {
        let large = job
            .sizes
            .iter()
            .filter(|s| **s >= super::digest::AUTO_MIN_BYTES);
        for &size in large {
            if engine.premap(size).is_none() {
                break;
            }
        }
    }
}

/// At exit: waits for the thread to end its work (the jobs queued included: at most a build
/// and a few mappings per context and device), so no call of ours into the driver runs while
/// it is torn down; then writes `CLTRAP_STATS` again with that work counted (the capture
/// writer's exit handler, registered at the first launch, ran before this one; a process that
/// never launched has no other).
extern "C" fn wait_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let mut seen = lock(&SEEN);
        if seen.spawner != std::process::id() {
            return;
        }
        while seen.running {
            seen = match ENDED.wait(seen) {
                Ok(s) => s,
                Err(p) => p.into_inner(),
            };
        }
        drop(seen);
        if let Some(path) = crate::state::settings().and_then(|s| s.stats.as_ref()) {
            super::stats::write(path);
        }
    });
}
