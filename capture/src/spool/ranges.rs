//! Where the next version of a content differs from the last one spooled: the ranges a patch
//! record holds ([`changed_ranges`]), and the sample that tells a version changed nearly
//! everywhere ([`mostly_changed`]) apart.

use super::{RANGES_MAX, RANGE_BLOCK};

/// Whether a patch holding `held` bytes of a content of `len` is small enough to spool
/// ([`SpoolWriter::plan`]): at most three quarters of the content, else a whole record.
pub fn patch_small_enough(held: usize, len: usize) -> bool {
    held * 4 <= len * 3
}

/// Whether a sample of the 64-byte blocks of `hull` ([`SAMPLED_BLOCKS`] of them, at
/// pseudo-random places) says that nearly all of them changed (all but one in sixteen), and the hull holds
/// more than three quarters of the content: then the ranges would hold more than
/// [`SpoolWriter::plan`] takes for a patch, and the next version is written whole without
/// comparing every block. Why: a stencil that rewrites all of a 4 MB buffer at each launch
/// compared both versions block by block (8 MB read) only to learn that. Where at most three
/// quarters of the blocks changed, 240 of 256 random ones changed has a chance below
/// 1e-12; a wrong guess would only make a whole record where a patch would have been
/// smaller, never a wrong content.
pub fn mostly_changed(new: &[u8], old: &[u8], hull: (usize, usize)) -> bool {
    let (lo, hi) = hull;
    if new.len() != old.len()
        || hi > new.len()
        || lo >= hi
        || patch_small_enough(hi - lo, new.len())
    {
        return false;
    }
    let blocks = (hi - lo) / RANGE_BLOCK;
    if blocks < SAMPLED_BLOCKS {
        return false;
    }
    // Blocks at pseudo-random places (a fixed sequence): evenly spaced ones would all fall
    // on the same column of a grid whose rows are a multiple of the spacing.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let changed = (0..SAMPLED_BLOCKS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (x % blocks as u64) as usize * RANGE_BLOCK
        })
        .filter(|&at| new[at..at + RANGE_BLOCK] != old[at..at + RANGE_BLOCK])
        .count();
    changed * 16 >= SAMPLED_BLOCKS * 15
}

/// Blocks [`mostly_changed`] looks at.
pub const SAMPLED_BLOCKS: usize = 256;

/// The ranges where `new` differs from `old` (of the same length) inside `hull` (from
/// [`crate::parallel::changed_region`]), in blocks of [`RANGE_BLOCK`] bytes, adjacent ones
/// merged; at most [`RANGES_MAX`] (past it, the whole hull). Compared on several threads
/// for a large hull.
pub fn changed_ranges(new: &[u8], old: &[u8], hull: (usize, usize)) -> Vec<(usize, usize)> {
    let (lo, hi) = hull;
    if new.len() != old.len() || lo >= hi || hi > new.len() {
        return vec![(lo, hi.saturating_sub(lo))];
    }
    // Parts of whole blocks (from `lo`), compared on threads for a large hull.
    let part = (crate::parallel::PARALLEL_MIN / 4).max(RANGE_BLOCK);
    let parts = (hi - lo).div_ceil(part);
    let found = crate::parallel::map_each(parts, hi - lo >= crate::parallel::PARALLEL_MIN, |j| {
        let (a, b) = (lo + j * part, (lo + (j + 1) * part).min(hi));
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut at = a;
        while at < b {
            let end = (at + RANGE_BLOCK).min(b);
            if new[at..end] != old[at..end] {
                match out.last_mut() {
                    Some(last) if last.0 + last.1 == at => last.1 += end - at,
                    _ => out.push((at, end - at)),
                }
            }
            at = end;
        }
        out
    });
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for r in found.into_iter().flatten() {
        match ranges.last_mut() {
            Some(last) if last.0 + last.1 == r.0 => last.1 += r.1,
            _ => ranges.push(r),
        }
    }
    if ranges.len() as u64 > RANGES_MAX || ranges.is_empty() {
        return vec![(lo, hi - lo)];
    }
    ranges
}
