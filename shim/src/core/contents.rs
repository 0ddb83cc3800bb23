//! Reading a buffer or image the way the kernel sees it, and turning the bytes into capture
//! content (stored raw, for a `cltrap` process to compact, or only a digest), within the disk budget: as the
//! budget nears, only contents that no earlier launch re-creates are stored ([`plan`]), so
//! every launch stays replayable instead of every later launch losing its contents.

use super::landed::Landed;
use super::track::lock;
use crate::Next;
use cltrap_capture::{parallel, writer::digest, BufferMode, CaptureWriter, Content, Settings};
use libc::c_void;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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
        if !ev.is_null() {
            super::stats::add(&super::stats::EVENTS, 1);
        }
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

/// What a launch keeps of its contents: decided when it is enqueued (a launch that keeps its
/// contents before must read them, not take them from an earlier launch that kept only a
/// digest), applied when the writer stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every content stored (buffer mode `full`, the disk budget not near).
    All,
    /// Past half the disk budget: contents before the launch stored where they were read
    /// (the host or an unrecorded command may have written them); contents the previous
    /// recorded launch left there are not read and are recorded as that launch's contents
    /// after, which a replay re-creates by re-executing it; contents after as digests.
    Inputs,
    /// Every content before the launch read and stored, contents after as digests: a
    /// *checkpoint* that ends a chain of derived contents ([`CHECKPOINT_EVERY`]), or, past the
    /// whole budget, the one replayable launch of a kernel that has none yet.
    Befores,
    /// Digests only (buffer mode `hash`, or past the whole budget).
    Digests,
    /// Nothing read (buffer mode `none`).
    Nothing,
}

/// Past this share of `CLTRAP_MAX_MB` (1/`SOFT_SHARE`), or past `CLTRAP_DERIVE_AFTER_MB` if
/// that comes first, contents are derived where they can be. Why not only at half the budget:
/// with the default 4 GB budget a capture would store up to 2 GB before deriving anything,
/// while a Gaussian elimination over one 4 MB matrix keeps all of its 2 046 launches
/// replayable in 0.7 GB when it derives past 512 MB.
const SOFT_SHARE: u64 = 2;

/// Shortest chain of launches after which a launch with derived inputs may store them (a
/// checkpoint): 64 launches of a 4 MB Gaussian-elimination step replay in seconds on a CPU
/// device, and a checkpoint every 64 launches costs a sixty-fourth of storing everything.
pub const CHECKPOINT_EVERY: u32 = 64;

/// Longest chain of launches a replay re-executes to re-create one launch's inputs, however
/// cheap the launches: a random-access replay of a launch storm re-executes at most this many.
pub const CHECKPOINT_MAX: u32 = 1024;

/// Bytes per second the capture reads back and spools a checkpoint at, for its cost
/// (an H200 read contents back at 4.4 GB/s and spooled them at 2.3 GB/s: about 1.5 GB/s
/// together; 2 GB/s errs on the side of more checkpoints).
const CHECKPOINT_BYTES_PER_S: f64 = 2e9;

/// A chain runs at least this many times as long as storing its checkpoint takes.
const CHECKPOINT_COST_SHARE: f64 = 4.0;

/// Whether a launch whose inputs (`bytes` of them) derive along `chain` stores them instead:
/// once the chain is [`CHECKPOINT_EVERY`] launches long *and* the application spent at least
/// [`CHECKPOINT_COST_SHARE`] times as long on it as storing the inputs costs, or once it is
/// [`CHECKPOINT_MAX`] long. Why by cost: a 1-D stencil of 20 000 launches of 40 µs over two
/// 4 MB buffers stored 2.5 GB of checkpoints every 64 launches, reading and spooling which
/// tripled its run, while re-executing 64 of its launches at replay costs 3 ms; spacing them
/// by cost keeps checkpoints under a fifth of the run whatever the launches cost.
pub fn checkpoint_due(chain: super::known::Chain, bytes: u64) -> bool {
    if chain.depth >= CHECKPOINT_MAX {
        return true;
    }
    if chain.depth < CHECKPOINT_EVERY {
        return false;
    }
    let cost = bytes as f64 / CHECKPOINT_BYTES_PER_S;
    chain.since.elapsed().as_secs_f64() >= CHECKPOINT_COST_SHARE * cost
}

/// Per kernel: launches planned with contents to replay them.
#[derive(Default)]
struct Counts {
    kept: u64,
}

static COUNTS: once_cell::sync::Lazy<Mutex<HashMap<String, Counts>>> =
    once_cell::sync::Lazy::new(Default::default);
static DERIVING_SAID: AtomicBool = AtomicBool::new(false);

/// What a launch of `kernel` keeps, given the buffer mode and how much of the disk budget
/// this process has used. Under half the budget (and under the derive threshold,
/// [`Settings::derive_threshold`], which `auto` paces by the time since the first launch):
/// everything. Past it: [`Keep::Inputs`], so
/// every launch stays replayable. Past the whole budget: only a kernel without any replayable
/// launch yet gets one ([`Keep::Befores`]); the others keep digests (still replayable where
/// all their inputs are derived). Said once on stderr.
///
/// `in_flight`: the bytes launches in flight have reserved for their reads, which they may
/// store once written. Why count them: an FDTD whose launches run ahead of the capture's
/// writer has up to 512 MB of reads in flight; not counted, it spooled 1.56 GB under a 1 GB
/// threshold, counted 1.08 GB (H200).
pub fn plan(
    writer: &CaptureWriter,
    settings: &Settings,
    kernel: &str,
    in_flight: impl FnOnce() -> u64,
) -> Keep {
    match settings.buffers {
        BufferMode::None => return Keep::Nothing,
        BufferMode::Hash => return Keep::Digests,
        BufferMode::Full => {}
    }
    let max = settings.max_bytes;
    // The disk budget counts what is on disk; the derive threshold counts contents at their
    // whole size, spooled patches included (`BlobStore::content_bytes`); both count what
    // launches in flight may add.
    let in_flight = in_flight();
    let used = writer.blobs.bytes_written().saturating_add(in_flight);
    let contents = writer.blobs.content_bytes().saturating_add(in_flight);
    // The run starts at the first launch that plans its contents.
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let run = FIRST.get_or_init(std::time::Instant::now).elapsed();
    let soft = (max / SOFT_SHARE).min(settings.derive_threshold(run));
    let mut counts = lock(&COUNTS);
    let c = match counts.get_mut(kernel) {
        Some(c) => c,
        None => counts.entry(kernel.to_string()).or_default(),
    };
    let keep = if contents < soft && used < soft {
        Keep::All
    } else if used < max {
        Keep::Inputs
    } else if c.kept == 0 {
        Keep::Befores
    } else {
        Keep::Digests
    };
    if keep != Keep::Digests {
        c.kept += 1;
    }
    drop(counts);
    if keep != Keep::All && !DERIVING_SAID.swap(true, Ordering::Relaxed) {
        crate::say::say(&format!(
            "the capture kept {} MB of contents (derive threshold {}, CLTRAP_MAX_MB {} MB); {} it stores only the contents before a launch that the previous launch did not leave there (the others are re-created at replay by re-executing that launch, with a stored checkpoint every {CHECKPOINT_EVERY} to {CHECKPOINT_MAX} launches, spaced so storing them costs at most a fifth of the run) and digests of the contents after, so every launch stays replayable; past the whole budget only contents that re-executing earlier launches re-creates stay replayable, plus one launch per kernel (`cltrap list` marks which launches are)",
            contents.max(used) >> 20,
            settings.derive_words(),
            max >> 20,
            if settings.derive_grows() {
                "while the threshold stays below what is stored,"
            } else {
                "from now on"
            }
        ));
    }
    keep
}

/// Turns bytes into content: stored (deduplicated; spooled raw for compaction, or whole) when the launch keeps
/// this side of its contents, else only its digest. `after`: the contents after the launch.
pub fn store(writer: &CaptureWriter, keep: Keep, after: bool, bytes: &[u8]) -> Content {
    let hash = digest(bytes);
    let size = bytes.len() as u64;
    // Bytes this capture stored already cost nothing: the record names them.
    if !stores(keep, after) && !writer.blobs.is_known(&hash) {
        return Content::Digest {
            hash,
            size,
            algo: Default::default(),
        };
    }
    put(writer, hash, bytes, None).0
}

/// Whether a launch that keeps `keep` stores this side of its contents.
pub(super) fn stores(keep: Keep, after: bool) -> bool {
    match keep {
        Keep::All => true,
        Keep::Inputs | Keep::Befores => !after,
        Keep::Digests | Keep::Nothing => false,
    }
}

/// [`store`] for the bytes read from memory object `mem`, taken by value: a large content
/// that is stored is compared with the last version of `mem` stored ([`versions`]) and,
/// where the two differ in one region, hashed only there ([`parallel::leaves_like`]) and
/// spooled as a patch on it; it is kept as that version. `fresh`: the bytes are almost surely
/// new (read back because their device digest names no stored content); where they would be
/// a whole record, spool lanes copy them as parts while they are hashed
/// ([`super::spool_lanes::submit_unnamed`]; in the rare case that the capture holds them
/// already, the spool holds them twice until compaction). Returns the content and bytes the
/// caller may reuse (these, or the version they replaced).
pub fn store_version(
    writer: &'static CaptureWriter,
    keep: Keep,
    after: bool,
    bytes: Landed,
    mem: usize,
    fresh: bool,
) -> (Content, Option<Vec<u8>>) {
    if bytes.len() < versions::MIN_BYTES || !stores(keep, after) {
        return (store(writer, keep, after, &bytes), bytes.into_vec());
    }
    let _store = super::stats::span(super::stats::Phase::Store);
    let size = bytes.len() as u64;
    let old = versions::take(mem);
    let hashing = super::stats::span(super::stats::Phase::StoreHash);
    // A version of another length (the object was re-created at the same handle) is no
    // reference: the content is hashed whole. A version kept by its leaves alone (too large
    // to keep whole) is compared leaf by leaf once the content is hashed whole.
    let mut hashed: Option<Vec<parallel::ChainingValue>> = None;
    let region = old.as_ref().filter(|v| v.len == bytes.len()).map(|v| {
        let r = match &v.bytes {
            Some(b) => parallel::changed_region(&bytes, b),
            None => {
                let leaves = parallel::leaves(&bytes);
                let r = versions::changed_leaves(&leaves, &v.leaves, bytes.len());
                hashed = Some(leaves);
                r
            }
        };
        (v, r)
    });
    // Unchanged since the version stored: the same content.
    if let Some((v, None)) = region {
        let hash = v.hash.clone();
        if let Some(v) = old {
            versions::put(mem, v);
        }
        return (Content::Blob { hash, size }, bytes.into_vec());
    }
    // New and a whole record: copied by the lanes while it is hashed here.
    let whole = match region {
        Some((v, Some(r))) => match &v.bytes {
            Some(b) => cltrap_capture::spool::mostly_changed(&bytes, b, r),
            // Leaves changed over more than the spool takes as a patch: a whole record.
            None => !cltrap_capture::spool::patch_small_enough(r.1 - r.0, bytes.len()),
        },
        _ => true,
    };
    let bytes = std::sync::Arc::new(bytes);
    drop(hashing);
    let unnamed = (fresh && whole)
        .then(|| {
            let _put = super::stats::span(super::stats::Phase::StorePut);
            super::spool_lanes::submit_unnamed(writer, mem, &bytes)
        })
        .flatten();
    let hashing = super::stats::span(super::stats::Phase::StoreHash);
    // (An unchanged content returned above.)
    let (hash, leaves, like) = match region.filter(|_| unnamed.is_none()) {
        Some((v, Some(region))) => {
            let leaves = match hashed.take() {
                Some(l) => l,
                None => parallel::leaves_like(&bytes, &v.leaves, region),
            };
            let hash = parallel::root(&leaves, bytes.len());
            // Without the old bytes the patch holds the whole changed region.
            let like = cltrap_capture::writer::Like {
                base: &v.hash,
                region,
                old: v.bytes.as_deref().map_or(&[][..], |b| &b[..]),
            };
            (hash, leaves, Some(like))
        }
        _ => {
            let leaves = hashed.take().unwrap_or_else(|| parallel::leaves(&bytes));
            (parallel::root(&leaves, bytes.len()), leaves, None)
        }
    };
    drop(hashing);
    let (content, stored_now) = match unnamed {
        Some((naming, record_bytes)) => {
            naming.set(&hash);
            super::stats::add(&super::stats::COPIED_WHILE_HASHED, 1);
            writer.blobs.spooled_as(&hash, size, record_bytes);
            (
                Content::Blob {
                    hash: hash.clone(),
                    size,
                },
                true,
            )
        }
        None => put_later(writer, hash.clone(), &bytes, like, mem),
    };
    // Bytes no lane holds any more go back to the caller for reuse.
    let mine = |b: std::sync::Arc<Landed>| std::sync::Arc::try_unwrap(b).ok()?.into_vec();
    match stored_now {
        true => {
            let new = versions::Version {
                len: bytes.len(),
                bytes: Some(bytes),
                hash,
                leaves,
            };
            let mut spare = None;
            for b in old
                .and_then(|v| v.bytes)
                .into_iter()
                .chain(versions::put(mem, new))
            {
                // One vector back for reuse; the others dropped here, no lock held.
                if spare.is_none() {
                    spare = mine(b);
                }
            }
            (content, spare)
        }
        false => {
            // Stored already (or not stored): the old version stays the reference.
            if let Some(v) = old {
                versions::put(mem, v);
            }
            (content, mine(bytes))
        }
    }
}

/// The last large content stored per memory object, so the next version of the same buffer
/// is hashed only where it changed and spooled as a patch on it
/// (`BlobStore::put_content_spooled`). Why: a solver updating a slice of a 16 MB grid per
/// launch would otherwise have the writer hash all 16 MB again at every launch. Bounded
/// ([`versions::MAX_BYTES`], oldest dropped first); a content larger than that is kept by its
/// leaves alone (32 bytes per 64 KiB), so its next version is hashed whole but still spooled
/// as a patch over the leaves that changed: clpeak's `--global-bandwidth` writes the first
/// 128 MB of a 2 GiB output, which would otherwise be spooled whole. Forgotten when the
/// application releases the object.
pub(super) mod versions {
    use super::lock;
    use super::Landed;
    use cltrap_capture::parallel::ChainingValue;
    use std::sync::Mutex;

    /// Contents smaller than this are hashed whole (cheap enough). More than one blake3 leaf
    /// (`parallel::root` merges at least two).
    pub const MIN_BYTES: usize = 1 << 20;
    const _: () = assert!(MIN_BYTES > cltrap_capture::parallel::LEAF);
    /// Most bytes of versions kept (their allocations: a landing may hold up to twice its
    /// content).
    pub const MAX_BYTES: usize = 256 << 20;

    /// One stored content of a memory object: its length, bytes, digest and the chaining
    /// values of its blake3 leaves ([`cltrap_capture::parallel::leaves`]).
    pub struct Version {
        pub len: usize,
        /// Shared with a spool lane until it has written them ([`crate::core::spool_lanes`]);
        /// None for a version too large to keep whole.
        pub bytes: Option<std::sync::Arc<Landed>>,
        pub hash: cltrap_capture::Hash,
        pub leaves: Vec<cltrap_capture::parallel::ChainingValue>,
    }

    impl Version {
        /// Memory it holds.
        fn footprint(&self) -> usize {
            let leaves = self.leaves.len() * std::mem::size_of::<ChainingValue>();
            self.bytes.as_ref().map_or(0, |b| b.footprint()) + leaves
        }
    }

    /// The region (first byte, one past the last) of the leaves that differ between `new`
    /// and `old` (of a content of `len` bytes), None when none does.
    pub fn changed_leaves(
        new: &[ChainingValue],
        old: &[ChainingValue],
        len: usize,
    ) -> Option<(usize, usize)> {
        let differs = |i: &usize| new.get(*i) != old.get(*i);
        let n = new.len().max(old.len());
        let first = (0..n).find(differs)?;
        let last = (0..n).rev().find(differs)?;
        let leaf = cltrap_capture::parallel::LEAF;
        Some((first * leaf, ((last + 1) * leaf).min(len)))
    }

    struct Kept {
        /// (memory object, its version), oldest first.
        list: Vec<(usize, Version)>,
        bytes: usize,
    }

    static KEPT: Mutex<Kept> = Mutex::new(Kept {
        list: Vec::new(),
        bytes: 0,
    });

    /// Takes the version of `mem` out (put it back, or a newer one, with [`put`]).
    pub fn take(mem: usize) -> Option<Version> {
        let mut k = lock(&KEPT);
        let i = k.list.iter().position(|(m, _)| *m == mem)?;
        let (_, v) = k.list.remove(i);
        k.bytes -= v.footprint();
        Some(v)
    }

    /// Keeps `v` as the version of `mem` (by its leaves alone when it is too large to keep
    /// whole); returns the bytes it did not keep: versions dropped for room, `v`'s own when it
    /// is too large, or all of `v` when the application released `mem` already
    /// (a launch landed after the release: kept, its bytes would stay until pushed out, and
    /// memory of a digest engine would keep the context alive). The caller drops them, with
    /// no lock of ours held (dropping the last hold of an engine releases its objects).
    pub fn put(mem: usize, mut v: Version) -> Vec<std::sync::Arc<Landed>> {
        let mut dropped = Vec::new();
        if v.footprint() > MAX_BYTES {
            // Too large to keep whole: kept by its leaves.
            dropped.extend(v.bytes.take());
        }
        let mut k = lock(&KEPT);
        // Under the lock: `forget` (after the tables forgot `mem`) takes the lock too.
        if crate::core::track::tables().mem_released(mem) {
            dropped.extend(v.bytes);
            return dropped;
        }
        while k.bytes + v.footprint() > MAX_BYTES && !k.list.is_empty() {
            let (_, old) = k.list.remove(0);
            k.bytes -= old.footprint();
            dropped.extend(old.bytes);
        }
        k.bytes += v.footprint();
        k.list.push((mem, v));
        dropped
    }

    /// The application released `mem`: its version goes.
    pub fn forget(mem: usize) {
        drop(take(mem));
    }
}

/// Stores `bytes`, whose digest is `hash` (given an earlier version's digest and the region
/// where they differ, `like`: spooled as a patch on it where it may be); also says whether
/// this call stored it (false: stored before, or not stored).
/// A failure to write is reported once ([`crate::sink::fail`]) and leaves the content
/// `Missing`, with why.
fn put(
    writer: &CaptureWriter,
    hash: cltrap_capture::Hash,
    bytes: &[u8],
    like: Option<cltrap_capture::writer::Like<'_>>,
) -> (Content, bool) {
    let size = bytes.len() as u64;
    let _put = super::stats::span(super::stats::Phase::StorePut);
    let stored = writer.blobs.put_content_spooled(&hash, bytes, like);
    outcome(hash, size, stored.map(|(_, stored_now)| stored_now))
}

/// The content a store gave (`Ok(stored_now)`), or, when it failed, the note why it is
/// missing; a failure is reported once ([`crate::sink::fail`]).
fn outcome(
    hash: cltrap_capture::Hash,
    size: u64,
    stored: Result<bool, cltrap_capture::WriteError>,
) -> (Content, bool) {
    match stored {
        Ok(stored_now) => (Content::Blob { hash, size }, stored_now),
        Err(e) => {
            crate::sink::fail(&e);
            let missing = Content::Missing {
                note: format!("not stored: {e}"),
            };
            (missing, false)
        }
    }
}

/// [`put`] for a large content read from memory object `mem`: where the spool takes it, its
/// record is planned here and written by a spool lane ([`super::spool_lanes`]), so the
/// landing goes on while it is copied; the record naming it is appended after
/// ([`super::spool_lanes::settle`]).
fn put_later(
    writer: &'static CaptureWriter,
    hash: cltrap_capture::Hash,
    bytes: &std::sync::Arc<Landed>,
    like: Option<cltrap_capture::writer::Like<'_>>,
    mem: usize,
) -> (Content, bool) {
    let size = bytes.len() as u64;
    let _put = super::stats::span(super::stats::Phase::StorePut);
    let stored = writer
        .blobs
        .put_content_planned(&hash, bytes, like)
        .map(|put| match put {
            cltrap_capture::writer::Put::Done(_, stored_now) => stored_now,
            cltrap_capture::writer::Put::Planned(planned) => {
                super::spool_lanes::submit(writer, mem, planned, bytes.clone());
                true
            }
        });
    outcome(hash, size, stored)
}

#[cfg(test)]
mod checkpoint_tests {
    use super::{checkpoint_due, CHECKPOINT_EVERY, CHECKPOINT_MAX};
    use crate::core::known::Chain;
    use std::time::{Duration, Instant};

    /// A chain of `depth` launches whose first one ran `ago` before now.
    fn chain(depth: u32, ago: Duration) -> Chain {
        let now = Instant::now();
        Chain {
            depth,
            since: now.checked_sub(ago).unwrap_or(now),
        }
    }

    const MB8: u64 = 8 << 20;

    #[test]
    fn a_short_chain_never_stores_a_checkpoint() {
        assert!(!checkpoint_due(
            chain(CHECKPOINT_EVERY - 1, Duration::from_secs(60)),
            MB8
        ));
    }

    #[test]
    fn a_long_chain_of_slow_launches_stores_one_at_the_floor() {
        // 64 launches over a second: storing 8 MB (4 ms at 2 GB/s) is cheap next to them.
        assert!(checkpoint_due(
            chain(CHECKPOINT_EVERY, Duration::from_secs(1)),
            MB8
        ));
    }

    #[test]
    fn a_chain_of_fast_launches_waits_until_storing_costs_a_fifth_of_it() {
        // A launch storm: 64 launches in a millisecond do not pay for 8 MB of checkpoint...
        assert!(!checkpoint_due(
            chain(CHECKPOINT_EVERY, Duration::ZERO),
            MB8
        ));
        assert!(!checkpoint_due(chain(500, Duration::from_millis(10)), MB8));
        // ... until the chain ran four times as long as storing it takes (16.8 ms).
        assert!(checkpoint_due(chain(500, Duration::from_millis(20)), MB8));
    }

    #[test]
    fn no_chain_grows_past_the_cap() {
        assert!(checkpoint_due(chain(CHECKPOINT_MAX, Duration::ZERO), MB8));
        assert!(checkpoint_due(
            chain(CHECKPOINT_MAX, Duration::ZERO),
            u64::MAX
        ));
    }
}
