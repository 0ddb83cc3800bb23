//! What the capture already knows about a memory object's contents, so a launch need not read
//! them again before it runs.
//!
//! Why: in a launch storm most buffers hold, right before a launch, exactly what the previous
//! launch on the same queue left there, and the capture read that already (its post-read).
//! Every read is a command in the application's queue, an event and host memory; skipping the
//! pre-read of such a buffer cuts the capture's commands per launch to about one per written
//! buffer. The record is unchanged: the pre-launch content is the previous launch's recorded
//! post-launch content (the same digest or blob), resolved by the writer thread, which writes
//! launches of an in-order queue in order.
//!
//! When contents are "known" (all must hold, else the object is read as before):
//! * the object was created through a hooked `clCreate*` call without `CL_MEM_USE_HOST_PTR`
//!   (the host may write such memory at any moment), from a parent that qualifies too; objects
//!   from interop (GL, EGL, ...) or SVM host memory never qualify;
//! * the previous recorded launch that read it ran on the same in-order queue, and this
//!   launch has no wait list (an event could order another queue's write in between);
//! * nothing may have written it since: every enqueue that can write a memory object
//!   (write, copy, fill, map, unmap, image writes, migration, native kernels) and every kernel
//!   launch that is not recorded with contents bumps the *generation* of the object's root
//!   (sub-buffers and images made from a buffer share their parent's); a launch whose
//!   argument table is unknown bumps the global *epoch*, which invalidates everything;
//! * it is not mapped.
//!
//! A write that another thread enqueues between this launch's check and its enqueue is
//! detected afterwards ([`after_launch`]); the pre-launch content is then recorded as
//! missing rather than guessed.

use super::track::lock;
use crate::handles::HandleMap;
use cltrap_capture::Content;
use std::sync::{Arc, Mutex, OnceLock};

/// A launch's post-launch content of one object, filled in by the writer thread when the
/// launch is written; the next launch that skips its pre-read records it as its "before".
pub(super) type Cell = Arc<OnceLock<Content>>;

/// What the capture saw last in one memory object.
struct Seen {
    queue: usize,
    generation: u64,
    epoch: u64,
    cell: Cell,
    /// How a replay re-creates that content.
    chain: Chain,
}

/// How a replay re-creates a launch's contents after: by re-executing `depth` launches (0:
/// they are stored), the first of which the application made at `since`. A launch whose
/// inputs derive along a chain that is long, and long-running enough that storing its inputs
/// costs little next to it, stores them instead (a checkpoint: [`super::contents::checkpoint_due`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Chain {
    pub depth: u32,
    pub since: std::time::Instant,
}

impl Chain {
    /// A chain that starts at this launch: its contents after are stored (`stored`) or
    /// re-created by re-executing it alone.
    pub fn start(stored: bool) -> Chain {
        Chain {
            depth: u32::from(!stored),
            since: std::time::Instant::now(),
        }
    }

    /// The longest of the chains `from` (with the oldest start among them): what a launch
    /// whose inputs derive along them depends on. None: nothing derived.
    pub fn longest<'a>(from: impl Iterator<Item = &'a Chain>) -> Option<Chain> {
        from.copied().reduce(|a, c| Chain {
            depth: a.depth.max(c.depth),
            since: a.since.min(c.since),
        })
    }

    /// The chain of a launch whose inputs derive along this one: one launch longer.
    pub fn extended(self) -> Chain {
        Chain {
            depth: self.depth.saturating_add(1),
            since: self.since,
        }
    }
}

/// Per memory object: whether it can ever be known, and its root.
#[derive(Clone, Copy)]
struct Object {
    root: usize,
    qualifies: bool,
}

#[derive(Default)]
struct Known {
    objects: HandleMap<usize, Object>,
    /// Writes that may have happened, per root object.
    generations: HandleMap<usize, u64>,
    /// Maps outstanding, per root object.
    mapped: HandleMap<usize, u32>,
    epoch: u64,
    seen: HandleMap<usize, Seen>,
}

static KNOWN: once_cell::sync::Lazy<Mutex<Known>> = once_cell::sync::Lazy::new(Default::default);

/// A decision to take an object's pre-launch contents from an earlier launch.
pub(super) struct Reuse {
    pub cell: Cell,
    /// How a replay re-creates the content, so a launch can tell when its chain of derived
    /// inputs grows too long and store a checkpoint.
    pub chain: Chain,
    generation: u64,
    epoch: u64,
}

/// One object a recorded launch read: whether the kernel may write it, and the cell its
/// post-launch content will go to.
pub(super) struct Read<'a> {
    pub mem: usize,
    pub writable: bool,
    pub cell: &'a Cell,
}

impl Known {
    fn root(&self, mem: usize) -> usize {
        self.objects.get(&mem).map_or(mem, |o| o.root)
    }

    fn bump(&mut self, mem: usize) {
        let root = self.root(mem);
        *self.generations.entry(root).or_insert(0) += 1;
    }

    fn generation(&self, mem: usize) -> u64 {
        self.generations.get(&self.root(mem)).copied().unwrap_or(0)
    }

    fn reuse(&self, mem: usize, queue: usize) -> Option<Reuse> {
        let o = self.objects.get(&mem)?;
        if !o.qualifies || self.mapped.get(&o.root).is_some_and(|n| *n > 0) {
            return None;
        }
        let s = self.seen.get(&mem)?;
        let generation = self.generation(mem);
        (s.queue == queue && s.generation == generation && s.epoch == self.epoch).then(|| Reuse {
            cell: s.cell.clone(),
            chain: s.chain,
            generation,
            epoch: self.epoch,
        })
    }
}

/// A memory object was created (`parent`: the buffer it is a sub-buffer or image of). A handle
/// the driver reuses after a release starts again with nothing known.
pub(super) fn created(mem: usize, use_host_ptr: bool, parent: Option<usize>) {
    let mut k = lock(&KNOWN);
    let (root, parent_qualifies) = match parent {
        Some(p) => {
            let o = k.objects.get(&p).copied();
            (o.map_or(p, |o| o.root), o.is_some_and(|o| o.qualifies))
        }
        None => (mem, true),
    };
    k.objects.insert(
        mem,
        Object {
            root,
            qualifies: parent_qualifies && !use_host_ptr,
        },
    );
    k.seen.remove(&mem);
    k.bump(mem);
}

/// The application released `mem` for good: nothing is kept about it (its children, which
/// hold it, were forgotten before it).
pub(super) fn forget(mem: usize) {
    let mut k = lock(&KNOWN);
    if k.objects.remove(&mem).is_some() || k.seen.contains_key(&mem) {
        k.seen.remove(&mem);
        k.generations.remove(&mem);
        k.mapped.remove(&mem);
    }
}

/// An enqueue may write these objects.
pub(super) fn wrote(mems: &[usize]) {
    let mut k = lock(&KNOWN);
    for m in mems {
        k.bump(*m);
    }
}

/// Something may have written objects the shim cannot name (a native kernel, a kernel whose
/// arguments are unknown): nothing is known any more.
pub(super) fn wrote_anything() {
    lock(&KNOWN).epoch += 1;
}

/// A map was enqueued (`mapped`: it succeeded, so an unmap will follow).
pub(super) fn map(mem: usize, mapped: bool) {
    let mut k = lock(&KNOWN);
    k.bump(mem);
    if mapped {
        let root = k.root(mem);
        *k.mapped.entry(root).or_insert(0) += 1;
    }
}

/// An unmap was enqueued (`unmapped`: it succeeded).
pub(super) fn unmap(mem: usize, unmapped: bool) {
    let mut k = lock(&KNOWN);
    k.bump(mem);
    if unmapped {
        let root = k.root(mem);
        if let Some(n) = k.mapped.get_mut(&root) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Per object of `mems`: whether its contents right before a launch on `queue` (in order, no
/// wait list) are those an earlier recorded launch left there. One lock for the whole launch.
pub(super) fn reuse(mems: impl Iterator<Item = usize>, queue: usize) -> Vec<Option<Reuse>> {
    let k = lock(&KNOWN);
    mems.map(|mem| k.reuse(mem, queue)).collect()
}

/// After a recorded launch was enqueued: notes what it may have written and, when its reads
/// are in an in-order `queue` (`remember`), what it will have read, for later launches, with
/// `chain`: how a replay re-creates its contents after.
/// Returns, per entry of `reused`, whether a write slipped in since the decision (that
/// launch's pre-launch content is then unknown).
pub(super) fn after_launch(
    queue: usize,
    remember: bool,
    chain: Chain,
    reads: &[Read<'_>],
    reused: &[(usize, &Reuse)],
) -> Vec<bool> {
    let mut k = lock(&KNOWN);
    let raced = reused
        .iter()
        .map(|(mem, r)| k.generation(*mem) != r.generation || k.epoch != r.epoch)
        .collect();
    for r in reads.iter().filter(|r| r.writable) {
        k.bump(r.mem);
    }
    for r in reads {
        if remember {
            let seen = Seen {
                queue,
                generation: k.generation(r.mem),
                epoch: k.epoch,
                cell: r.cell.clone(),
                chain,
            };
            k.seen.insert(r.mem, seen);
        } else {
            k.seen.remove(&r.mem);
        }
    }
    raced
}

/// A kernel launch that is not recorded with contents: every memory object among its current
/// arguments may have been written (all objects, when its arguments are unknown).
pub(super) fn kernel_may_write(kernel: usize) {
    let args: Option<Vec<usize>> = lock(&super::track::tables().kernels).get(&kernel).map(|k| {
        k.args
            .iter()
            .filter_map(|a| match a {
                Some(super::track::ArgValue::Bytes(b))
                    if b.len() == std::mem::size_of::<usize>() =>
                {
                    let mut h = [0u8; std::mem::size_of::<usize>()];
                    h.copy_from_slice(b);
                    Some(usize::from_ne_bytes(h))
                }
                _ => None,
            })
            .collect()
    });
    let Some(args) = args else {
        wrote_anything();
        return;
    };
    let mut k = lock(&KNOWN);
    for h in args {
        if k.objects.contains_key(&h) {
            k.bump(h);
        }
    }
}
