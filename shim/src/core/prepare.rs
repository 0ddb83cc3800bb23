//! Getting the device-side digest machinery of a context and device ready before the first
//! launch needs it (`CLTRAP_PREPARE=ahead`, the default).
//!
//! Why: made by the first launch, it is paid inside the application's loop. On the H200 host
//! (NVIDIA driver, 2026-12-01, `bench/buffer_heavy.c`, 200 launches over 4–16 MB buffers,
//! 11–13 ms natively) the capture's reads on the first launch took about 10 ms (the engine's
//! build, its kernel's first run, the pinned memory of its partials) whether the loop ran 20
//! or 200 launches, and in `full` mode the mapped host memory its new contents were read into
//! was made while the application waited at its `clFinish` (0.4 ms per MB, 64 MB). Made during
//! the application's set-up instead, the same work costs its whole run the same and its loop
//! nothing.
//!
//! When: the application has a queue on a device in a context and a buffer there that the
//! capture digests on the device ([`super::digest::wanted`]), whichever comes second; once per
//! (context, device) until the application is done with the context ([`forget`]). The hook of
//! that call then, on the application's thread, builds the engine
//! ([`super::digest::engine_built_for`], which gives none to a CPU device under `auto`, to a
//! context the application does not hold, or where the build fails), runs its kernel once
//! ([`super::digest::Engine::warm_up`]), takes the pinned memory its partials are read into
//! ([`super::pinned`]), and in `full` mode maps host memory of each large buffer's size for
//! its new contents ([`super::digest::Engine::premap`]), up to the engine's cap; a buffer made
//! later in a prepared context adds its size.
//!
//! Why on the application's thread, as the first launch would: a thread of ours building the
//! digest program while the application built or ran its own made PoCL 5.0 abort
//! (`pocl_release_dlhandle_cache: Assertion 'found->ref_count > 0' failed`, the H200 host's
//! CPU device, `bench/wavefront.c` under `--device-digest on`, 3 runs of 3), where the same
//! calls made in the application's order never did.
//!
//! Must not: prepare from inside an application's callback (undefined there), or put anything
//! into a context the application no longer holds (`engine_built_for`'s and `pool_for`'s
//! checks).

use super::device::QueueFacts;
use super::track::lock;
use crate::Next;
use cltrap_capture::{BufferMode, DeviceDigest, Settings};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, Once};

/// Sizes of large buffers remembered per context (the first ones: mapped memory is capped).
const SIZES_PER_CONTEXT: usize = 64;

#[derive(Default)]
struct Seen {
    /// Per context: the devices of the application's queues in it.
    devices: HashMap<usize, Vec<usize>>,
    /// Per context: sizes of its buffers digested on the device.
    sizes: HashMap<usize, Vec<usize>>,
    /// (context, device) pairs prepared (or being prepared).
    started: HashSet<(usize, usize)>,
}

static SEEN: once_cell::sync::Lazy<Mutex<Seen>> = once_cell::sync::Lazy::new(Default::default);

/// What to do for one (context, device).
struct Job {
    context: usize,
    device: usize,
    /// Build, run and take pinned memory (the pair's first), or only map memory.
    first: bool,
    /// Sizes of the context's buffers to map host memory for (`full` mode).
    sizes: Vec<usize>,
}

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
    let Some(settings) = preparing() else {
        return;
    };
    if context == 0 || device == 0 || super::callback::inside() {
        return;
    }
    let job = {
        let mut seen = lock(&SEEN);
        let devices = seen.devices.entry(context).or_default();
        if devices.contains(&device) {
            return;
        }
        devices.push(device);
        let sizes = seen.sizes.get(&context).cloned().unwrap_or_default();
        if sizes.is_empty() || !seen.started.insert((context, device)) {
            return;
        }
        Job {
            context,
            device,
            first: true,
            sizes,
        }
    };
    run(next, settings, &job);
}

/// The application made a buffer of `size` bytes in `context`.
pub(super) fn buffer_made(next: &Next, context: usize, size: usize) {
    let Some(settings) = preparing() else {
        return;
    };
    if context == 0 || !super::digest::wanted(settings, size) || super::callback::inside() {
        return;
    }
    let jobs: Vec<Job> = {
        let mut seen = lock(&SEEN);
        let sizes = seen.sizes.entry(context).or_default();
        if sizes.len() >= SIZES_PER_CONTEXT {
            return;
        }
        sizes.push(size);
        let sizes = sizes.clone();
        let devices = seen.devices.get(&context).cloned().unwrap_or_default();
        devices
            .into_iter()
            .map(|device| {
                let first = seen.started.insert((context, device));
                Job {
                    context,
                    device,
                    first,
                    sizes: if first { sizes.clone() } else { vec![size] },
                }
            })
            .collect()
    };
    for job in &jobs {
        run(next, settings, job);
    }
}

/// The application is done with `context` (or its handle names a new one): what was seen of
/// it goes.
pub(super) fn forget(context: usize) {
    let mut seen = lock(&SEEN);
    seen.devices.remove(&context);
    seen.sizes.remove(&context);
    seen.started.retain(|(c, _)| *c != context);
}

/// Does one job (see the module's text), with no lock of ours held.
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
            count_at_exit(settings);
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

/// With `CLTRAP_STATS`, writes the counters at exit even when no launch started the capture
/// writer (whose exit handler writes them otherwise; registered later, it runs first, and
/// this one then writes the same counters again).
fn count_at_exit(settings: &Settings) {
    static ONCE: Once = Once::new();
    if settings.stats.is_some() {
        // SAFETY: registers a plain extern "C" function that only writes a file.
        ONCE.call_once(|| unsafe {
            libc::atexit(write_counters);
        });
    }
}

extern "C" fn write_counters() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(path) = crate::state::settings().and_then(|s| s.stats.as_ref()) {
            super::stats::write(path);
        }
    });
}
