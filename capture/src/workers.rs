//! The threads a large content's work runs on: how many ([`threads`]), the kept pool, and
//! [`for_each`] / [`map_each`] over it. Apart from the digest and cutting code that uses them
//! ([`crate::parallel`], [`crate::cutscan`], [`crate::devdigest`]), so none of those import
//! each other to share them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The most threads one content uses (the writer must leave the application its cores).
const MAX_THREADS: usize = 8;

/// The count [`threads`] fixed at its first call.
static THREADS: OnceLock<usize> = OnceLock::new();

/// Every core, counted once (the count reads the affinity mask and the cgroup's files).
static ALL_CORES: OnceLock<usize> = OnceLock::new();

/// Set by [`allow_all_cores`]: every core from then on.
static WIDE: AtomicBool = AtomicBool::new(false);

/// Threads a large content may use: the cores this process may run on, at most
/// [`MAX_THREADS`] until [`allow_all_cores`].
pub fn threads() -> usize {
    if WIDE.load(Ordering::Relaxed) {
        return *ALL_CORES.get_or_init(|| cores().max(1));
    }
    narrow()
}

/// The threads of the first pool: the cores, at most [`MAX_THREADS`].
fn narrow() -> usize {
    *THREADS.get_or_init(|| cores().clamp(1, MAX_THREADS))
}

/// The cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Lets [`threads`] (and so the pool: a second one, of every core) use every core this
/// process may run on from now on, not at most [`MAX_THREADS`]: for a `cltrap` process
/// compacting a capture, whose work is all there is once the application has exited (the
/// bound is there to leave an application its cores). Work already handed to the narrower
/// pool finishes there. Why at any time: `cltrap run` compacts beside the application on at
/// most [`MAX_THREADS`] threads, then, once the application exited, on every core.
pub fn allow_all_cores() {
    WIDE.store(true, Ordering::Relaxed);
}

/// Set by [`split_finer`].
static FINE: AtomicBool = AtomicBool::new(false);

/// Contents at least this large are hashed and stored by several threads: below it,
/// starting threads costs about what they save (see [`parallel_min`]).
pub const PARALLEL_MIN: usize = 1 << 20;
/// [`PARALLEL_MIN`] after [`split_finer`].
const FINE_PARALLEL_MIN: usize = 256 << 10;

/// Lets this process split smaller contents' work over the pool ([`parallel_min`]): for a
/// `cltrap` process compacting a spool, where a chain of versions of one buffer (each
/// rebuilt from the one before) is one thread's work however many cores there are, and each
/// version's changed region (Gaussian elimination's: half a megabyte) was too small to
/// split. The shim never calls it: there the application's own threads need the cores.
pub fn split_finer() {
    FINE.store(true, Ordering::Relaxed);
}

/// Bytes of work from which a content's hashing, cutting and encoding go to several
/// threads: 1 MiB, or 256 KiB after [`split_finer`].
pub fn parallel_min() -> usize {
    if FINE.load(Ordering::Relaxed) {
        FINE_PARALLEL_MIN
    } else {
        PARALLEL_MIN
    }
}

/// Whether [`split_finer`] was called.
pub fn finer() -> bool {
    FINE.load(Ordering::Relaxed)
}

/// Starts the pool now, from this thread, unless it runs already. Why: its threads inherit
/// the CPU affinity of the thread that starts them, and its size is fixed from that thread's
/// (see [`threads`]); the shim starts it from an application's thread before a driver's
/// thread, which may be pinned to one core, would start it at its first use.
pub fn start_pool() {
    let _ = pool();
}

/// Runs `work(i)` for every `i` in `0..n` on up to [`threads`] threads of the [`pool`], and
/// returns the results in index order, or the error of the lowest failed index. Serial when
/// `parallel` is false, and where there is no pool (one core; a forked child; a thread whose
/// thread-locals are being destroyed). A `work(i)` that panics on a pool thread is done
/// again on this one, so its panic reaches the caller as any panic of its own would.
pub fn for_each<T, E, F>(n: usize, parallel: bool, work: F) -> Result<Vec<T>, E>
where
    T: Send,
    E: Send,
    F: Fn(usize) -> Result<T, E> + Sync,
{
    use rayon::prelude::*;
    let pool = if parallel && n >= 2 { pool() } else { None };
    let Some(pool) = pool else {
        return (0..n).map(&work).collect();
    };
    let tried: Vec<Option<Result<T, E>>> = pool.install(|| {
        (0..n)
            .into_par_iter()
            .with_max_len(1)
            .map(|i| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i))).ok())
            .collect()
    });
    tried
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| work(i)))
        .collect()
}

/// [`for_each`] for work that cannot fail: `work(i)` for every `i` in `0..n`, in index order.
pub fn map_each<T, F>(n: usize, parallel: bool, work: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    match for_each(n, parallel, |i| Ok::<T, std::convert::Infallible>(work(i))) {
        Ok(all) => all,
        Err(never) => match never {},
    }
}

/// The process's worker threads for large contents: [`threads`] of them, started at the first
/// parallel [`for_each`] and kept (a second pool of every core after [`allow_all_cores`],
/// started by the first thread that uses it, whose CPU priority its threads inherit). Why
/// kept: starting and joining seven threads cost about 0.3 ms on the 16-core GPU machine, and
/// a large content's store runs five parallel steps, so a buffer-heavy capture spent about
/// half its store time starting threads.
/// None in a child forked after the pool started (its threads are not there; the child
/// works serially), on one core, and on a thread whose thread-locals are being destroyed
/// (the shim may store from an application's `clFinish` run by a destructor at exit).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<(u32, rayon::ThreadPool)>> = OnceLock::new();
    static WIDE_POOL: OnceLock<Option<(u32, rayon::ThreadPool)>> = OnceLock::new();
    thread_local! {
        /// Readable while this thread's thread-locals live (see [`pool`]).
        static ALIVE: Alive = const { Alive };
    }
    struct Alive;
    impl Drop for Alive {
        fn drop(&mut self) {}
    }
    if threads() < 2 || ALIVE.try_with(|_| ()).is_err() {
        return None;
    }
    // After `allow_all_cores`, a second pool, also where it has no more threads than the first:
    // its threads take the priority of the thread that starts it (`cltrap run` compacts
    // beside the application at a low priority, then the rest at its own).
    let wide = WIDE.load(Ordering::Relaxed);
    let kept = if wide { &WIDE_POOL } else { &POOL };
    let (pid, pool) = kept
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads())
                .thread_name(|i| format!("cltrap-work-{i}"))
                .build()
                .ok()
                .map(|p| (std::process::id(), p))
        })
        .as_ref()?;
    (*pid == std::process::id()).then_some(pool)
}
