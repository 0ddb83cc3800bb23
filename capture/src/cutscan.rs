//! The chunks of a large content ([`crate::chunks::cut`]: FastCDC 2020 as the `fastcdc` crate
//! cuts) found by several threads at once, exactly the same chunks.
//!
//! Why: cutting is a pass of storing a new content that the other parallel steps leave
//! serial, and a plain parallel cut (threads cutting from evenly spaced starts, followed from
//! byte 0 through the chunks they found) stays serial on periodic data — a float pattern
//! repeating every 4 KB, a matrix — where every cut point lies on one lattice and a thread
//! that started elsewhere never meets the true sequence; with that cut, storing
//! buffer-heavy's new contents on the H200 ran at the speed of one thread's FastCDC, about
//! 2 GB/s.
//!
//! How: FastCDC ends a chunk at the first byte, past the chunk's minimum size, where a gear
//! hash (`h = (h << 1) + GEAR[byte]`, restarted at the minimum size of each chunk) has no bit
//! of a mask set: the strict mask before the average size, the loose one after it, and the
//! maximum size when neither happens. A 64-bit gear hash depends only on the last 64 bytes,
//! so from the 64th byte hashed on it is the *window hash* of the position, whatever the
//! chunk's start. Threads compute the window hash of every position of their segment and
//! keep the positions that meet either mask (on random data about one in 13 000 bytes); the
//! chunks then follow serially: for each chunk the first 63 hashes are computed here (they
//! depend on its start), and the rest of its candidates are looked up in the threads' lists.
//!
//! The crate tests a chunk's even positions as `(h << 1) & (mask << 1)`; that equals testing
//! `h & mask` when the masks leave bit 63 clear, which is checked (and, with the GEAR tables'
//! relation, the tests hold the result equal to the crate's cut). Where candidates are dense
//! (constant or highly repetitive data: the serial cut finds those cuts right after each
//! chunk's minimum and is fast), or on fewer than 4 threads, [`cut`] declines (None).

use crate::chunks::{CHUNK_AVG, CHUNK_MAX, CHUNK_MIN};
use fastcdc::v2020::{get_gear_with_seed, select_masks, Normalization};

/// Bytes of history a 64-bit gear hash holds.
const WINDOW: usize = 64;
/// Bytes a scanning work item takes at least.
const SEGMENT_MIN: usize = 1 << 20;
/// Candidates per byte past which a segment gives up (the serial cut is fast there).
const DENSE: usize = 512;
/// Hash chains one thread runs side by side ([`scan`]; written out for four).
const LANES: usize = 4;

/// The chunks of `bytes` as `(offset, length)`, exactly [`crate::chunks::cut`]'s, on up to
/// [`crate::workers::threads`] threads; None when this way would not be faster (see the
/// module's doc) or the chunker's tables do not have the shape this relies on.
pub fn cut(bytes: &[u8]) -> Option<Vec<(usize, usize)>> {
    if crate::workers::threads() < 4 || bytes.len() < 2 * SEGMENT_MIN {
        return None;
    }
    let t = tables()?;
    let segments = (crate::workers::threads() * 4).min(bytes.len() / SEGMENT_MIN);
    let segment = bytes.len().div_ceil(segments);
    let found = crate::workers::for_each(segments, true, |k| {
        let (a, b) = (k * segment, ((k + 1) * segment).min(bytes.len()));
        scan(bytes, a, b, t).ok_or(())
    })
    .ok()?;
    let (mut strict, mut loose) = (Vec::new(), Vec::new());
    for (s, l) in found {
        strict.extend(s);
        loose.extend(l);
    }
    Some(walk(bytes, t, &strict, &loose))
}

/// FastCDC's gear table and masks, as the `fastcdc` crate cuts with them.
struct Tables {
    gear: &'static [u64; 256],
    mask_s: u64,
    mask_l: u64,
}

/// The tables, taken and checked once: None when they do not have the shape this relies on
/// (256 entries, the shifted table the crate tests even positions with equal to the table
/// shifted, masks with bit 63 clear: see the module's doc).
fn tables() -> Option<&'static Tables> {
    static TABLES: std::sync::OnceLock<Option<Tables>> = std::sync::OnceLock::new();
    TABLES
        .get_or_init(|| {
            let (gear, gear_ls) = get_gear_with_seed(0);
            let (mask_s, mask_l) = select_masks(CHUNK_AVG, Normalization::Level1);
            // Seed 0 borrows the crate's own static tables.
            let std::borrow::Cow::Borrowed(gear) = gear else {
                return None;
            };
            let gear: &'static [u64; 256] = gear.try_into().ok()?;
            let shaped = gear_ls.len() == 256
                && gear.iter().zip(gear_ls.iter()).all(|(g, l)| *l == g << 1)
                && (mask_s | mask_l) >> 63 == 0;
            shaped.then_some(Tables {
                gear,
                mask_s,
                mask_l,
            })
        })
        .as_ref()
}

/// The positions in `a..b` whose window hash meets `mask_s` and those that meet `mask_l`, in
/// order; None when they are dense. The range is hashed as [`LANES`] interleaved chains, one
/// per quarter: one chain's next hash waits for its last (shift, load, add), so a single
/// chain leaves most of a core idle.
fn scan(bytes: &[u8], a: usize, b: usize, t: &Tables) -> Option<(Vec<usize>, Vec<usize>)> {
    let (gear, mask_s, mask_l) = (t.gear, t.mask_s, t.mask_l);
    let cap = (b - a) / DENSE + 16;
    let lane = (b - a) / LANES;
    let starts: [usize; LANES] = std::array::from_fn(|k| a + k * lane);
    let mut h = [0u64; LANES];
    for k in 0..LANES {
        for &byte in &bytes[starts[k].saturating_sub(WINDOW - 1)..starts[k]] {
            h[k] = (h[k] << 1).wrapping_add(gear[byte as usize]);
        }
    }
    let mut found: [(Vec<usize>, Vec<usize>); LANES] = Default::default();
    let mut count = 0;
    let mut note = |k: usize, at: usize, hk: u64| {
        // Positions before the 64th byte have no whole window: a chunk's walk computes
        // its first hashes itself, and the first chunk starts at 0 and skips them.
        if at + 1 >= WINDOW {
            if hk & mask_s == 0 {
                found[k].0.push(at);
                count += 1;
            }
            if hk & mask_l == 0 {
                found[k].1.push(at);
                count += 1;
            }
        }
        count <= cap
    };
    let meets = |h: u64| (h & mask_l == 0) | (h & mask_s == 0);
    // Both tests need the bits the masks share clear: one test per hash in the loop.
    let shared = mask_l & mask_s;
    let lanes: [&[u8]; LANES] = std::array::from_fn(|k| &bytes[starts[k]..starts[k] + lane]);
    let [mut h0, mut h1, mut h2, mut h3] = h;
    let quads = lanes[0]
        .iter()
        .zip(lanes[1])
        .zip(lanes[2])
        .zip(lanes[3])
        .enumerate();
    for (i, (((&b0, &b1), &b2), &b3)) in quads {
        h0 = (h0 << 1).wrapping_add(gear[b0 as usize]);
        h1 = (h1 << 1).wrapping_add(gear[b1 as usize]);
        h2 = (h2 << 1).wrapping_add(gear[b2 as usize]);
        h3 = (h3 << 1).wrapping_add(gear[b3 as usize]);
        if (h0 & shared == 0) | (h1 & shared == 0) | (h2 & shared == 0) | (h3 & shared == 0) {
            for (k, hk) in [h0, h1, h2, h3].into_iter().enumerate() {
                if meets(hk) && !note(k, starts[k] + i, hk) {
                    return None;
                }
            }
        }
    }
    let mut h = [h0, h1, h2, h3];
    // The last lane's tail past `LANES * lane`, on its own chain.
    let k = LANES - 1;
    for at in starts[k] + lane..b {
        h[k] = (h[k] << 1).wrapping_add(gear[bytes[at] as usize]);
        if meets(h[k]) && !note(k, at, h[k]) {
            return None;
        }
    }
    let (mut strict, mut loose) = (Vec::new(), Vec::new());
    for (s, l) in found {
        strict.extend(s);
        loose.extend(l);
    }
    Some((strict, loose))
}

/// The chunks, from byte 0: per chunk, the cut FastCDC makes (see the module's doc).
fn walk(bytes: &[u8], t: &Tables, strict: &[usize], loose: &[usize]) -> Vec<(usize, usize)> {
    let (gear, mask_s, mask_l) = (t.gear, t.mask_s, t.mask_l);
    // The first position of `list` in `lo..hi`.
    let first_in = |list: &[usize], lo: usize, hi: usize| {
        let i = list.partition_point(|&x| x < lo);
        list.get(i).copied().filter(|&x| x < hi)
    };
    let n = bytes.len();
    let mut out = Vec::with_capacity(n / CHUNK_AVG + 1);
    let mut p = 0;
    while p < n {
        let rest = n - p;
        if rest <= CHUNK_MIN {
            out.push((p, rest));
            break;
        }
        let (mut remaining, mut center) = (rest, CHUNK_AVG);
        if remaining > CHUNK_MAX {
            remaining = CHUNK_MAX;
        } else if remaining < center {
            center = remaining;
        }
        // The crate tests positions in pairs: up to an even bound in each phase.
        let (strict_end, loose_end) = (center / 2 * 2, remaining / 2 * 2);
        let direct_end = (CHUNK_MIN + WINDOW - 1).min(loose_end);
        let mut h: u64 = 0;
        let mut len = None;
        for j in CHUNK_MIN..direct_end {
            h = (h << 1).wrapping_add(gear[bytes[p + j] as usize]);
            let mask = if j < strict_end { mask_s } else { mask_l };
            if h & mask == 0 {
                len = Some(j);
                break;
            }
        }
        let lo = p + direct_end;
        let len = len
            .or_else(|| first_in(strict, lo, p + strict_end).map(|x| x - p))
            .or_else(|| first_in(loose, lo.max(p + strict_end), p + loose_end).map(|x| x - p))
            .unwrap_or(remaining);
        out.push((p, len));
        p += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::tests::noise;

    /// The float pattern of `bench/buffer_heavy.c`: `base + i % 1021`, scaled.
    fn periodic(n: usize, f: f32) -> Vec<u8> {
        (0..n / 4)
            .flat_map(|i| ((1.0 + (i % 1021) as f32) * f).to_le_bytes())
            .collect()
    }

    fn same_as_the_crate(bytes: &[u8], what: &str) {
        if crate::workers::threads() < 4 {
            return; // declines: nothing to compare (the tests below call `walk` too)
        }
        let fast = cut(bytes).unwrap_or_else(|| panic!("{what}: declined"));
        assert_eq!(fast, crate::chunks::cut(bytes), "{what}");
    }

    /// The walk over candidates found serially (any thread count): the crate's cut.
    fn walked(bytes: &[u8]) -> Vec<(usize, usize)> {
        let t = tables().expect("the crate's tables have the expected shape");
        let (s, l) = scan(bytes, 0, bytes.len(), t).expect("sparse");
        walk(bytes, t, &s, &l)
    }

    #[test]
    fn the_scanned_cut_is_the_crates_cut() {
        let mut mixed = noise(9 << 20, 3);
        mixed[2 << 20..(2 << 20) + 300_000].copy_from_slice(&periodic(300_000, 2.0));
        let cases: Vec<(String, Vec<u8>)> = vec![
            ("noise".into(), noise(8 << 20, 1)),
            ("noise, odd length".into(), noise((5 << 20) + 12_345, 2)),
            ("periodic".into(), periodic(16 << 20, 1.0)),
            ("periodic, scaled".into(), periodic(4 << 20, 3.0)),
            ("mixed".into(), mixed),
        ];
        for (what, bytes) in &cases {
            assert_eq!(walked(bytes), crate::chunks::cut(bytes), "{what}");
            same_as_the_crate(bytes, what);
            for len in [
                CHUNK_MIN + 1,
                CHUNK_MIN + 63,
                CHUNK_AVG + 7,
                CHUNK_MAX + 1,
                1 << 20,
            ] {
                let b = &bytes[..len];
                assert_eq!(walked(b), crate::chunks::cut(b), "{what}, {len} bytes");
            }
        }
    }

    #[test]
    fn segments_scanned_apart_find_what_one_scan_finds() {
        let bytes = periodic(6 << 20, 1.5);
        let t = tables().expect("the crate's tables have the expected shape");
        let whole = scan(&bytes, 0, bytes.len(), t).unwrap();
        for parts in [2, 7, 13] {
            let seg = bytes.len().div_ceil(parts);
            let (mut s, mut l) = (Vec::new(), Vec::new());
            for k in 0..parts {
                let (a, b) = (k * seg, ((k + 1) * seg).min(bytes.len()));
                let (ps, pl) = scan(&bytes, a, b, t).unwrap();
                s.extend(ps);
                l.extend(pl);
            }
            assert_eq!((s, l), whole, "{parts} parts");
        }
    }

    #[test]
    fn dense_candidates_decline() {
        // Constant bytes whose window hash meets the masks everywhere, or nowhere.
        for byte in 0..=255u8 {
            let bytes = vec![byte; 3 << 20];
            if let Some(c) = cut(&bytes) {
                assert_eq!(c, crate::chunks::cut(&bytes), "byte {byte}");
            }
            let t = tables().expect("the crate's tables have the expected shape");
            if let Some((s, l)) = scan(&bytes, 0, bytes.len(), t) {
                assert_eq!(
                    walk(&bytes, t, &s, &l),
                    crate::chunks::cut(&bytes),
                    "byte {byte}"
                );
            }
        }
    }
}
