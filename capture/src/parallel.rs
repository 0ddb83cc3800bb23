//! The writer's use of several cores for large contents: the whole-content blake3 digest
//! merged from subtrees ("leaves") hashed on separate threads, the FastCDC cut
//! ([`crate::cutscan`]), and the new chunks of a content hashed and compressed by a few
//! workers; and what lets the next version of a large buffer cost only its changed region
//! (its leaves and chunks are reused).
//!
//! Why: a content the capture has not stored yet costs a digest of all its bytes, a FastCDC
//! pass and, per chunk, a digest and zstd; done serially on the one writer thread, that work
//! bounds a buffer-heavy capture on a 16-core GPU machine to one core. The results are those of
//! the serial code: the same digest (blake3's tree, merged with its `hazmat` functions, checked
//! against `blake3::hash` by the tests) and the same chunks in the same order; only who
//! computes them changes. Contents below [`parallel_min`] and machines with one core stay
//! serial.

use crate::hex::Hash;
pub use crate::workers::{
    allow_all_cores, finer, for_each, map_each, parallel_min, split_finer, start_pool, threads,
    PARALLEL_MIN,
};
pub use blake3::hazmat::ChainingValue;
use blake3::hazmat::{left_subtree_len, merge_subtrees_non_root, merge_subtrees_root};
use blake3::hazmat::{HasherExt, Mode};

/// Bytes one hashing thread takes at least (smaller subtrees are hashed where they are).
const HASH_PART_MIN: usize = 256 << 10;
/// blake3 of `bytes`, on up to [`threads`] threads when the content is large (merged from
/// its [`leaves`]).
pub fn digest(bytes: &[u8]) -> Hash {
    if bytes.len() < parallel_min() {
        return blake3::hash(bytes).to_hex().to_string();
    }
    root(&leaves(bytes), bytes.len())
}

/// Bytes of a leaf: a large content's digest is merged from the chaining values of its
/// `LEAF`-aligned pieces, the subtrees of blake3's tree below that size (a power of two
/// number of blake3 chunks). Why keep them: the next version of a buffer that changed in
/// one region needs only the leaves of that region hashed again ([`leaves_like`]).
pub const LEAF: usize = 64 << 10;

/// The chaining value of each [`LEAF`]-aligned piece of `bytes` (the last one may be
/// shorter), on up to [`threads`] threads for a large content. `bytes` must be longer than
/// one leaf for [`root`] to use them.
pub fn leaves(bytes: &[u8]) -> Vec<ChainingValue> {
    leaves_in(bytes, 0, bytes.len().div_ceil(LEAF))
}

/// [`leaves`] of `bytes`, from the leaves of an earlier version of the same length
/// (`old`) that differs from `bytes` only in `region` ([`changed_region`]): only the
/// leaves that overlap it are hashed again.
pub fn leaves_like(
    bytes: &[u8],
    old: &[ChainingValue],
    region: (usize, usize),
) -> Vec<ChainingValue> {
    let (lo, hi) = region;
    if old.len() != bytes.len().div_ceil(LEAF) || lo >= hi || hi > bytes.len() {
        return leaves(bytes);
    }
    let (first, end) = (lo / LEAF, hi.div_ceil(LEAF));
    let mut out = old.to_vec();
    out[first..end].copy_from_slice(&leaves_in(bytes, first, end));
    out
}

/// [`leaves_like`] in place, for several regions: hashes again the leaves of `leaves` (of
/// an earlier version of `bytes`, the same length) that overlap each of `regions` (sorted or
/// not, overlapping or not), each leaf once. False (nothing changed) when `leaves` is not of
/// `bytes`' length or a region lies past its end. Why: a version that changed in many
/// places (a wavefront touches every row) copied all its leaves once per region.
pub fn rehash_leaves(
    bytes: &[u8],
    leaves: &mut [ChainingValue],
    regions: &[(usize, usize)],
) -> bool {
    if leaves.len() != bytes.len().div_ceil(LEAF)
        || regions.iter().any(|&(lo, hi)| lo > hi || hi > bytes.len())
    {
        return false;
    }
    // Leaf runs to hash, merged where they touch.
    let mut runs: Vec<(usize, usize)> = regions
        .iter()
        .filter(|(lo, hi)| lo < hi)
        .map(|&(lo, hi)| (lo / LEAF, hi.div_ceil(LEAF)))
        .collect();
    runs.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    for (a, b) in runs {
        match merged.last_mut() {
            Some(last) if last.1 >= a => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    for (a, b) in merged {
        leaves[a..b].copy_from_slice(&leaves_in(bytes, a, b));
    }
    true
}

/// Chaining values of leaves `first..end` of `bytes`, split over threads in runs of leaves.
fn leaves_in(bytes: &[u8], first: usize, end: usize) -> Vec<ChainingValue> {
    let one = |i: usize| {
        let at = i * LEAF;
        blake3::Hasher::new()
            .set_input_offset(at as u64)
            .update(&bytes[at..(at + LEAF).min(bytes.len())])
            .finalize_non_root()
    };
    let n = end.saturating_sub(first);
    // A leaf per run when finer ([`split_finer`]): a half-megabyte region on eight threads.
    let per_run = if finer() {
        1
    } else {
        (HASH_PART_MIN / LEAF).max(1)
    };
    let runs = n.div_ceil(per_run);
    let parallel = runs > 1 && n * LEAF >= parallel_min();
    map_each(runs, parallel, |r| {
        let a = first + r * per_run;
        (a..(a + per_run).min(end)).map(one).collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

/// blake3 of a content of `len` bytes (more than one [`LEAF`]) from its [`leaves`]: the
/// subtrees merged in the shape of blake3's tree (every split of a subtree longer than a leaf
/// falls on a multiple of `LEAF`, so each subtree of a leaf's size or less is one leaf).
pub fn root(leaves: &[ChainingValue], len: usize) -> Hash {
    debug_assert!(len > LEAF && leaves.len() == len.div_ceil(LEAF));
    fn node(leaves: &[ChainingValue], offset: usize, len: usize) -> ChainingValue {
        if len <= LEAF {
            return leaves[offset / LEAF];
        }
        let left = left_subtree_len(len as u64) as usize;
        merge_subtrees_non_root(
            &node(leaves, offset, left),
            &node(leaves, offset + left, len - left),
            Mode::Hash,
        )
    }
    let left = left_subtree_len(len as u64) as usize;
    merge_subtrees_root(
        &node(leaves, 0, left),
        &node(leaves, left, len - left),
        Mode::Hash,
    )
    .to_hex()
    .to_string()
}

/// One chunk of a content: where it lies and the digest of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub offset: usize,
    pub len: usize,
    pub hash: Hash,
}

#[cfg(feature = "compact")]
/// The chunks of `bytes` ([`crate::chunks::cut`]) with their digests, exactly those of the
/// serial cut: cut (by several threads for a large content: [`crate::cutscan`]), then
/// hashed by several threads ([`hash_cuts`]).
pub fn cut_and_hash(bytes: &[u8]) -> Vec<Cut> {
    let cuts = crate::cutscan::cut(bytes).unwrap_or_else(|| crate::chunks::cut(bytes));
    hash_cuts(bytes, &cuts)
}

#[cfg(feature = "compact")]
/// The digests of chunks `cuts` of `bytes`, on up to [`threads`] threads when they cover at
/// least [`parallel_min`] bytes.
fn hash_cuts(bytes: &[u8], cuts: &[(usize, usize)]) -> Vec<Cut> {
    // Chunks one work item hashes (about 512 KiB; 4 when finer: `split_finer`).
    let per_item: usize = if finer() { 4 } else { 16 };
    let covered: usize = cuts.iter().map(|(_, l)| l).sum();
    let items = cuts.len().div_ceil(per_item);
    map_each(items, covered >= parallel_min(), |k| {
        let mine = &cuts[k * per_item..((k + 1) * per_item).min(cuts.len())];
        mine.iter()
            .map(|&(offset, len)| Cut {
                offset,
                len,
                hash: digest(&bytes[offset..offset + len]),
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The one region where `new` differs from `old` (same length): `(lo, hi)`, from the first
/// changed byte to one past the last; None when they are equal or of different lengths.
/// `memcmp` passes, cheaper than hashing: what a new version of a buffer costs
/// ([`cut_and_hash_like`], [`leaves_like`]) depends on this region only.
/// A large content is compared by up to [`threads`] threads, a segment each: one thread
/// reading two 16 MB versions is bound by its own memory bandwidth.
pub fn changed_region(new: &[u8], old: &[u8]) -> Option<(usize, usize)> {
    if new.len() != old.len() {
        return None;
    }
    // One segment (this thread) for a small content.
    let parts = if new.len() < PARALLEL_MIN {
        1
    } else {
        threads().min(new.len() / HASH_PART_MIN).max(1)
    };
    let segment = new.len().div_ceil(parts).max(1);
    let found = map_each(parts, true, |j| {
        let (a, b) = (j * segment, ((j + 1) * segment).min(new.len()));
        first_difference(&new[a..b], &old[a..b]).map(|lo| {
            let same_at_end = first_difference_from_end(&new[a..b], &old[a..b]).unwrap_or(0);
            (a + lo, b - same_at_end)
        })
    });
    let lo = found.iter().flatten().map(|r| r.0).min()?;
    let hi = found.iter().flatten().map(|r| r.1).max()?;
    Some((lo, hi))
}

#[cfg(feature = "compact")]
/// The chunks of `bytes` with their digests, as [`cut_and_hash`] gives them, found from an
/// earlier version of the same buffer (cut into `old_cuts`) that differs from `bytes` only
/// in `region` ([`changed_region`]): chunks that end before the first changed byte are the
/// old ones; from the start of the first other old chunk the new bytes are cut until a chunk
/// ends past the last changed byte exactly where an old chunk ended, after which the old
/// chunks follow (a chunk depends only on the bytes from its start on, and the lengths are
/// equal). Only the cut region is hashed again. None when it would not save work: different
/// lengths, or changes spread over more than half of the content (the caller cuts the whole
/// content).
///
/// Why: a solver that updates a slice of a large grid at every launch made the writer cut
/// and hash the whole 16 MB again at each one, on cores a CPU device's kernels also use.
pub fn cut_and_hash_like(
    bytes: &[u8],
    old_cuts: &[Cut],
    region: (usize, usize),
) -> Option<Vec<Cut>> {
    let covered = old_cuts
        .iter()
        .try_fold(0usize, |at, c| (c.offset == at).then_some(at + c.len));
    if old_cuts.is_empty() || covered != Some(bytes.len()) {
        return None;
    }
    let (lo, hi) = region;
    // `hi`: one past the last changed byte.
    if lo >= hi || hi > bytes.len() || (hi - lo) * 2 > bytes.len() {
        return None;
    }
    // Old chunks that end before the first changed byte stay.
    let keep = old_cuts
        .iter()
        .take_while(|c| c.offset + c.len < lo)
        .count();
    let start = old_cuts.get(keep).map_or(bytes.len(), |c| c.offset);
    let mut cut = Vec::new();
    let mut resume = None;
    for (o, l) in crate::chunks::cut_from(bytes, start) {
        cut.push((o, l));
        let end = o + l;
        if end >= hi {
            if let Ok(i) = old_cuts.binary_search_by_key(&end, |c| c.offset) {
                resume = Some(i);
                break;
            }
        }
    }
    let mut out: Vec<Cut> = old_cuts[..keep].to_vec();
    out.extend(hash_cuts(bytes, &cut));
    if let Some(i) = resume {
        out.extend_from_slice(&old_cuts[i..]);
    }
    Some(out)
}

/// Index of the first byte where `a` and `b` differ (None: equal).
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    const STEP: usize = 4096;
    let mut at = 0;
    while at < a.len() {
        let end = (at + STEP).min(a.len());
        if a[at..end] != b[at..end] {
            return a[at..end]
                .iter()
                .zip(&b[at..end])
                .position(|(x, y)| x != y)
                .map(|i| at + i);
        }
        at = end;
    }
    None
}

/// How many bytes at the end of `a` and `b` are equal, when they differ somewhere.
fn first_difference_from_end(a: &[u8], b: &[u8]) -> Option<usize> {
    const STEP: usize = 4096;
    let n = a.len();
    let mut same = 0;
    while same < n {
        let len = STEP.min(n - same);
        let (s, e) = (n - same - len, n - same);
        if a[s..e] != b[s..e] {
            let last = a[s..e].iter().zip(&b[s..e]).rposition(|(x, y)| x != y)?;
            return Some(same + (len - 1 - last));
        }
        same += len;
    }
    None
}

#[cfg(all(test, feature = "compact"))]
mod tests {
    use super::*;

    #[test]
    fn cutting_like_an_earlier_version_gives_the_full_cut() {
        let old = noise(6 << 20);
        let old_cuts = cut_and_hash(&old);
        let old_leaves = leaves(&old);
        // A slice changed in the middle, at the start, at the end; one byte; a run of zeros.
        let edits: [(usize, usize); 6] = [
            (2 << 20, (2 << 20) + 600_000),
            (0, 100_000),
            ((6 << 20) - 50_000, 6 << 20),
            (3_000_001, 3_000_002),
            (1 << 20, (1 << 20) + 40_000),
            (4 << 20, (4 << 20) + 1_500_000),
        ];
        for (k, (a, b)) in edits.into_iter().enumerate() {
            let mut new = old.clone();
            for (i, byte) in new[a..b].iter_mut().enumerate() {
                *byte = if k == 4 {
                    0
                } else {
                    byte.wrapping_mul(31).wrapping_add(i as u8 | 1)
                };
            }
            let region = changed_region(&new, &old).expect("a changed region");
            let like = cut_and_hash_like(&new, &old_cuts, region).expect("one changed region");
            assert_eq!(like, cut_and_hash(&new), "edit {k}: {a}..{b}");
            let leaves = leaves_like(&new, &old_leaves, region);
            assert_eq!(root(&leaves, new.len()), digest(&new), "edit {k}");
            assert_eq!(leaves, super::leaves(&new), "edit {k}");
            let mut in_place = old_leaves.clone();
            assert!(rehash_leaves(
                &new,
                &mut in_place,
                &[(b, b), (a, b), (a, a + 1)]
            ));
            assert_eq!(in_place, leaves, "edit {k} in place");
        }
        // Unchanged: no region; spread changes, other lengths: not applicable.
        assert_eq!(changed_region(&old, &old), None);
        for (a, b) in [
            (0, 1),
            (5, 6 << 20),
            (1_234_567, 4_567_890),
            ((6 << 20) - 1, 6 << 20),
        ] {
            let mut new = old.clone();
            new[a] ^= 0x10;
            new[b - 1] ^= 0x01;
            assert_eq!(changed_region(&new, &old), Some((a, b)), "{a}..{b}");
        }
        assert_eq!(changed_region(&old[..1 << 20], &old), None);
        let mut spread = old.clone();
        spread[10] ^= 1;
        spread[(6 << 20) - 10] ^= 1;
        let region = changed_region(&spread, &old).unwrap();
        assert_eq!(region, (10, (6 << 20) - 9));
        assert_eq!(cut_and_hash_like(&spread, &old_cuts, region), None);
        assert_eq!(cut_and_hash_like(&old[..1 << 20], &old_cuts, (0, 1)), None);
        // Many scattered edits, in place: only their leaves, each once.
        let mut scattered = old.clone();
        let edits: Vec<(usize, usize)> = (0..300)
            .map(|i| (i * 20_000 + 7, i * 20_000 + 71))
            .collect();
        for &(a, b) in edits.iter().rev() {
            scattered[a..b].iter_mut().for_each(|x| *x ^= 0x33);
        }
        let mut in_place = old_leaves.clone();
        assert!(rehash_leaves(&scattered, &mut in_place, &edits));
        assert_eq!(in_place, leaves(&scattered));
        assert!(!rehash_leaves(
            &scattered,
            &mut in_place,
            &[(0, (6 << 20) + 1)]
        ));
        assert!(!rehash_leaves(&scattered[..10 * LEAF], &mut in_place, &[]));
    }

    /// The capture crate's test bytes, with this module's seed.
    fn noise(n: usize) -> Vec<u8> {
        crate::chunks::tests::noise(n, 0x9e37_79b9)
    }

    #[test]
    fn the_digest_merged_from_leaves_is_blake3_of_the_whole() {
        let data = noise(9 << 20);
        for len in [
            0,
            1,
            1024,
            PARALLEL_MIN - 1,
            PARALLEL_MIN,
            PARALLEL_MIN + 1,
            3 << 20,
            (4 << 20) + 1025,
            (5 << 20) + 77,
            9 << 20,
        ] {
            let bytes = &data[..len];
            assert_eq!(
                digest(bytes),
                blake3::hash(bytes).to_hex().to_string(),
                "{len}"
            );
        }
        // Merged from leaves, whatever the length past one leaf.
        for len in [
            LEAF + 1,
            2 * LEAF,
            3 * LEAF - 1,
            3 * LEAF + 1024,
            7 * LEAF + 5,
        ] {
            let bytes = &data[..len];
            assert_eq!(
                root(&leaves(bytes), len),
                blake3::hash(bytes).to_hex().to_string(),
                "{len}"
            );
        }
    }

    #[test]
    fn the_parallel_cut_is_the_serial_cut() {
        let mut data = noise(11 << 20);
        // Runs of zeros (FastCDC cuts them at the maximum length) between the noise.
        data[3 << 20..(3 << 20) + 700_000].fill(0);
        for len in [PARALLEL_MIN - 1, PARALLEL_MIN, 5 << 20, (11 << 20) - 3] {
            let bytes = &data[..len];
            let serial: Vec<Cut> = crate::chunks::cut(bytes)
                .into_iter()
                .map(|(offset, len)| Cut {
                    offset,
                    len,
                    hash: blake3::hash(&bytes[offset..offset + len])
                        .to_hex()
                        .to_string(),
                })
                .collect();
            assert_eq!(cut_and_hash(bytes), serial, "{len}");
        }
    }

    #[test]
    fn a_panic_on_a_pool_thread_is_redone_here_and_a_real_one_reaches_the_caller() {
        // Panics only where it runs on a worker of the pool: every index still comes back.
        let picky = for_each(64, true, |i| {
            let name = std::thread::current().name().map(str::to_owned);
            if name.is_some_and(|n| n.starts_with("cltrap-work")) && i % 7 == 3 {
                panic!("a worker's panic, on purpose");
            }
            Ok::<_, ()>(i)
        });
        assert_eq!(picky, Ok((0..64).collect()));
        let always = std::panic::catch_unwind(|| {
            for_each(64, true, |i| {
                assert!(i != 40, "index 40 fails everywhere");
                Ok::<_, ()>(i)
            })
        });
        assert!(always.is_err(), "the caller sees the panic");
    }

    #[test]
    fn work_runs_while_this_threads_locals_are_destroyed() {
        // An application's `clFinish` in a thread-local's destructor stores from there. Each
        // work item notes whether it ran on this thread.
        type Sent = (Result<Vec<usize>, ()>, bool);
        struct Late(std::sync::mpsc::Sender<Sent>);
        impl Drop for Late {
            fn drop(&mut self) {
                let me = std::thread::current().id();
                let here = std::sync::atomic::AtomicBool::new(true);
                let r = for_each(100, true, |i| {
                    if std::thread::current().id() != me {
                        here.store(false, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(i + 1)
                });
                let _ = self.0.send((r, here.into_inner()));
            }
        }
        thread_local! { static LATE: std::cell::RefCell<Option<Late>> = const { std::cell::RefCell::new(None) }; }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // `LATE` first, then the pool's guard: thread-locals are destroyed in the reverse
            // order, so the guard is gone when `LATE`'s value runs.
            LATE.with(|l| *l.borrow_mut() = Some(Late(tx)));
            let _ = for_each(4, true, Ok::<_, ()>);
        })
        .join()
        .expect("thread ran");
        let (result, here) = rx.recv().expect("sent");
        assert_eq!(result, Ok((1..=100).collect()));
        if threads() >= 2 {
            assert!(
                here,
                "the work went to the pool from a thread being torn down"
            );
        }
    }

    #[test]
    fn a_forked_child_works_without_the_parents_threads() {
        let _one = crate::FORKS.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(for_each(50, true, Ok::<_, ()>), Ok((0..50).collect()));
        // SAFETY: the child only computes, checks and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: in the child; a hang ends by SIGALRM, which the parent sees.
            unsafe { libc::alarm(20) };
            let ok = for_each(500, true, |i| Ok::<_, ()>(i * 2))
                == Ok((0..500).map(|i| i * 2).collect());
            // SAFETY: leaves the child at once, running nothing of the parent's.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child's for_each failed or hung (status {status:#x})"
        );
    }

    #[test]
    fn all_cores_are_allowed_even_after_the_count_was_fixed() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The count is fixed by a parallel step, at most MAX_THREADS.
        assert_eq!(for_each(40, true, Ok::<_, ()>), Ok((0..40).collect()));
        allow_all_cores();
        assert_eq!(threads(), cores);
        assert_eq!(for_each(40, true, Ok::<_, ()>), Ok((0..40).collect()));
    }

    #[test]
    fn work_items_come_back_in_order_with_the_first_error() {
        let squares: Result<Vec<usize>, ()> = for_each(1000, true, |i| Ok(i * i));
        assert_eq!(squares, Ok((0..1000).map(|i| i * i).collect()));
        let failed: Result<Vec<usize>, usize> =
            for_each(100, true, |i| if i % 30 == 29 { Err(i) } else { Ok(i) });
        assert_eq!(failed, Err(29));
        let serial: Result<Vec<usize>, ()> = for_each(3, false, Ok);
        assert_eq!(serial, Ok(vec![0, 1, 2]));
    }
}
