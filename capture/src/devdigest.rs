//! `dd128`: the digest the shim computes *on the device* (a small OpenCL kernel in the
//! application's queue) so that buffer contents need not cross the bus, and the one host
//! implementation of the same function, which the analyzer uses to compare a replay's output
//! with a digest recorded this way and which the tests hold the device kernel to.
//!
//! Definition (all arithmetic on `u32`, wrapping; words little-endian):
//!
//! 1. The bytes are cut into 16-byte blocks `x_j = (x0, x1, x2, x3)`, `j = 0 .. ceil(len/16)`;
//!    the last block is padded with zero bytes.
//! 2. `mix` is a 128-bit permutation: [`ROUNDS`] times, add the round constant to word 0, apply
//!    ChaCha's quarter-round to `(s0, s1, s2, s3)` and rotate the words by one position.
//! 3. Each block contributes `F(j, x_j) = mix(x_j ^ mix(j_lo ^ K0, j_hi ^ K1, K2, K3))`: the
//!    position enters through a fully mixed 128-bit tweak, not linearly, so structured data
//!    (ids, counters) cannot line its words up with the positions and cancel.
//! 4. `D = XOR_j F(j, x_j)` (order-free: any split of the blocks over work-items and groups
//!    gives the same `D`, which is what lets the device compute it in parallel and the host
//!    combine per-group partials by XOR).
//! 5. The digest is `mix(D ^ mix(len_lo ^ L0, len_hi ^ L1, L2, L3))`, printed as the four
//!    words in order, 8 lower-case hex digits each (32 characters).
//!
//! Collision argument (why content addressing on it is safe in practice): `mix` is a
//! bijection, so `F(j, ·)` is injective for every position. For two different contents of one
//! length, `D1 ^ D2` is the XOR of `F(j, a_j) ^ F(j, b_j)` over the blocks where they differ;
//! modelling `F` as a random function (the mixer's avalanche is tested below: every input bit
//! flips each output bit with probability ≈ 1/2), that XOR is uniform over 2^128 values, so
//! two given contents collide with probability 2^-128, and a capture holding 2^32 distinct
//! contents has a collision with probability below 2^-64. Different lengths are separated by
//! the final step (and the record keeps the size). It is **not** a cryptographic hash: an
//! adversary can construct collisions of XOR-sums (generalised birthday), so it serves to
//! recognise the application's own contents, never to authenticate anything. Blobs on disk
//! stay named by blake3 of their bytes; `dd128` only decides whether contents need reading.

/// The kernel's name in [`KERNEL_SOURCE`].
pub const KERNEL_NAME: &str = "cltrap_dd128";
/// Work-items per group of the digest kernel (at most; a device may allow fewer).
pub const GROUP_SIZE: usize = 256;
/// Groups of one digest at most: each writes a 16-byte partial, all read back together.
pub const MAX_GROUPS: usize = 256;
/// Bytes of one digest's partials on the device ([`MAX_GROUPS`] × 16).
pub const SLOT_BYTES: usize = MAX_GROUPS * 16;
/// Rounds of the mixer.
pub const ROUNDS: usize = 6;

const RC: [u32; ROUNDS] = [
    0x243f_6a88,
    0x85a3_08d3,
    0x1319_8a2e,
    0x0370_7344,
    0xa409_3822,
    0x299f_31d0,
];
const K: [u32; 4] = [0x082e_fa98, 0xec4e_6c89, 0x4528_21e6, 0x38d0_1377];
const L: [u32; 4] = [0xbe54_66cf, 0x34e9_0c6c, 0xc0ac_29b7, 0xc97c_50dd];

/// OpenCL C of the digest kernel: `cltrap_dd128(buf, len, out, slot, scratch)` XORs the
/// terms of the blocks `get_global_id(0)`, `+ get_global_size(0)`, ... and writes one 16-byte
/// partial per group at `out[slot * MAX_GROUPS + group]`. The local size must be a power of
/// two (the reduction halves it). Same constants and steps as [`dd128`].
pub const KERNEL_SOURCE: &str = r#"
#define RC0 0x243f6a88u
#define RC1 0x85a308d3u
#define RC2 0x13198a2eu
#define RC3 0x03707344u
#define RC4 0xa4093822u
#define RC5 0x299f31d0u
#define CLTRAP_QR(s) \
    s.x += s.y; s.w ^= s.x; s.w = rotate(s.w, 16u); \
    s.z += s.w; s.y ^= s.z; s.y = rotate(s.y, 12u); \
    s.x += s.y; s.w ^= s.x; s.w = rotate(s.w, 8u);  \
    s.z += s.w; s.y ^= s.z; s.y = rotate(s.y, 7u);  \
    s = s.yzwx;
inline uint4 cltrap_mix(uint4 s) {
    s.x += RC0; CLTRAP_QR(s)
    s.x += RC1; CLTRAP_QR(s)
    s.x += RC2; CLTRAP_QR(s)
    s.x += RC3; CLTRAP_QR(s)
    s.x += RC4; CLTRAP_QR(s)
    s.x += RC5; CLTRAP_QR(s)
    return s;
}
__kernel void cltrap_dd128(__global const uchar *buf, ulong len, __global uint4 *out,
                           uint slot, __local uint4 *scratch) {
    ulong nblocks = (len + 15) / 16;
    ulong full = len / 16;
    uint4 acc = (uint4)(0u);
    for (ulong j = get_global_id(0); j < nblocks; j += get_global_size(0)) {
        uint4 x;
        if (j < full) {
            x = vload4(j, (__global const uint *)buf);
        } else {
            uint w[4] = {0u, 0u, 0u, 0u};
            for (ulong b = j * 16; b < len; b++)
                w[(b % 16) / 4] |= ((uint)buf[b]) << (8 * (b % 4));
            x = (uint4)(w[0], w[1], w[2], w[3]);
        }
        uint4 k = cltrap_mix((uint4)((uint)j ^ 0x082efa98u, (uint)(j >> 32) ^ 0xec4e6c89u,
                                     0x452821e6u, 0x38d01377u));
        acc ^= cltrap_mix(x ^ k);
    }
    uint lid = get_local_id(0);
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] ^= scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        out[(ulong)slot * 256 + get_group_id(0)] = scratch[0];
}
"#;

#[inline(always)]
fn quarter_round(s: [u32; 4]) -> [u32; 4] {
    let [mut a, mut b, mut c, mut d] = s;
    a = a.wrapping_add(b);
    d = (d ^ a).rotate_left(16);
    c = c.wrapping_add(d);
    b = (b ^ c).rotate_left(12);
    a = a.wrapping_add(b);
    d = (d ^ a).rotate_left(8);
    c = c.wrapping_add(d);
    b = (b ^ c).rotate_left(7);
    // Rotate the words by one position.
    [b, c, d, a]
}

/// The 128-bit permutation (step 2 of the definition).
#[inline(always)]
pub fn mix(mut s: [u32; 4]) -> [u32; 4] {
    for rc in RC {
        s[0] = s[0].wrapping_add(rc);
        s = quarter_round(s);
    }
    s
}

fn xor(a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
    [a[0] ^ b[0], a[1] ^ b[1], a[2] ^ b[2], a[3] ^ b[3]]
}

/// Block `j`'s term `F(j, x)` (step 3).
fn term(j: u64, x: [u32; 4]) -> [u32; 4] {
    let k = mix([(j as u32) ^ K[0], ((j >> 32) as u32) ^ K[1], K[2], K[3]]);
    mix(xor(x, k))
}

/// Contents from this size on are digested by the process's worker threads, a part each.
const PARALLEL_FROM: usize = 2 << 20;
/// Bytes per part (a multiple of the 16-byte block).
const PART_BYTES: usize = 1 << 20;

/// The XOR of the terms of every block of `bytes` (step 4, before finishing). The sum is
/// order-free, so large contents are cut into parts summed on the worker threads (a replay
/// checks several digests of every launch of a long capture: 4 MiB took ~0.1 s serially).
fn accumulate(bytes: &[u8]) -> [u32; 4] {
    if bytes.len() < PARALLEL_FROM {
        return accumulate_from(bytes, 0);
    }
    let parts = bytes.len().div_ceil(PART_BYTES);
    crate::workers::map_each(parts, true, |p| {
        let start = p * PART_BYTES;
        let end = (start + PART_BYTES).min(bytes.len());
        accumulate_from(&bytes[start..end], (start / 16) as u64)
    })
    .into_iter()
    .fold([0u32; 4], xor)
}

/// Blocks mixed side by side in the portable [`accumulate_lanes`]: the same rounds on 8
/// independent states, written lane by lane so the compiler keeps them in vector registers.
const LANES: usize = 8;

/// [`mix`] of `N` states at once, word `w` of lane `l` in `s[w][l]`.
#[inline(always)]
fn mix_lanes<const N: usize>(s: &mut [[u32; N]; 4]) {
    let [mut a, mut b, mut c, mut d] = *s;
    for rc in RC {
        for l in 0..N {
            a[l] = a[l].wrapping_add(rc);
            a[l] = a[l].wrapping_add(b[l]);
            d[l] = (d[l] ^ a[l]).rotate_left(16);
            c[l] = c[l].wrapping_add(d[l]);
            b[l] = (b[l] ^ c[l]).rotate_left(12);
            a[l] = a[l].wrapping_add(b[l]);
            d[l] = (d[l] ^ a[l]).rotate_left(8);
            c[l] = c[l].wrapping_add(d[l]);
            b[l] = (b[l] ^ c[l]).rotate_left(7);
        }
        // Rotate the words by one position.
        (a, b, c, d) = (b, c, d, a);
    }
    *s = [a, b, c, d];
}

/// The XOR of the terms of `bytes`, whose first block is block `first` of the content, with
/// the widest vector unit of this CPU: the host digests every output of a replayed launch
/// whose record keeps only a `dd128` (every launch past a capture's derive threshold), so its
/// speed bounds a long replay's (the portable build of the lanes leaves x86-64 at SSE2, a
/// quarter of what AVX-512 mixes per instruction). Every variant computes the same sum.
fn accumulate_from(bytes: &[u8], first: u64) -> [u32; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { accumulate_avx512(bytes, first) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { accumulate_avx2(bytes, first) };
        }
    }
    accumulate_lanes::<LANES>(bytes, first)
}

/// [`accumulate_lanes`] compiled for AVX-512: 16 lanes, one 512-bit register per word.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn accumulate_avx512(bytes: &[u8], first: u64) -> [u32; 4] {
    accumulate_lanes::<16>(bytes, first)
}

/// [`accumulate_lanes`] compiled for AVX2: 8 lanes, one 256-bit register per word.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_avx2(bytes: &[u8], first: u64) -> [u32; 4] {
    accumulate_lanes::<8>(bytes, first)
}

/// The XOR of the terms of `bytes`, whose first block is block `first` of the content, `N`
/// blocks mixed side by side (inlined into each caller, so it is compiled for the caller's
/// vector unit).
#[inline(always)]
fn accumulate_lanes<const N: usize>(bytes: &[u8], first: u64) -> [u32; 4] {
    let w = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    // Lane-wise sums, folded into one at the end (XOR is order-free).
    let mut lanes = [[0u32; N]; 4];
    let groups = bytes.chunks_exact(16 * N);
    let rest = groups.remainder();
    let mut j = first;
    for group in groups {
        // The tweaks mix(j ^ K), then the terms mix(x ^ tweak), for N blocks.
        let mut t = [[0u32; N]; 4];
        for l in 0..N {
            let jl = j + l as u64;
            t[0][l] = (jl as u32) ^ K[0];
            t[1][l] = ((jl >> 32) as u32) ^ K[1];
            t[2][l] = K[2];
            t[3][l] = K[3];
        }
        mix_lanes(&mut t);
        for l in 0..N {
            for (k, word) in t.iter_mut().enumerate() {
                word[l] ^= w(group, 16 * l + 4 * k);
            }
        }
        mix_lanes(&mut t);
        for (sum, word) in lanes.iter_mut().zip(t.iter()) {
            for l in 0..N {
                sum[l] ^= word[l];
            }
        }
        j += N as u64;
    }
    let mut acc = [0u32; 4];
    for (a, sum) in acc.iter_mut().zip(lanes.iter()) {
        *a = sum.iter().fold(0, |x, y| x ^ y);
    }
    let blocks = rest.chunks_exact(16);
    let tail = blocks.remainder();
    for block in blocks {
        acc = xor(
            acc,
            term(j, [w(block, 0), w(block, 4), w(block, 8), w(block, 12)]),
        );
        j += 1;
    }
    if !tail.is_empty() {
        let mut padded = [0u8; 16];
        padded[..tail.len()].copy_from_slice(tail);
        acc = xor(
            acc,
            term(
                j,
                [w(&padded, 0), w(&padded, 4), w(&padded, 8), w(&padded, 12)],
            ),
        );
    }
    acc
}

/// Step 5: the digest of contents of `len` bytes whose terms XOR to `acc`.
fn finish(acc: [u32; 4], len: u64) -> String {
    let l = mix([(len as u32) ^ L[0], ((len >> 32) as u32) ^ L[1], L[2], L[3]]);
    words_hex(mix(xor(acc, l)))
}

/// The four words in hex, each as `{:08x}` spells it, without the formatting machinery
/// (about 2 000 instructions per digest, paid at every launch's landing).
fn words_hex(d: [u32; 4]) -> String {
    let mut bytes = [0u8; 16];
    for (out, w) in bytes.chunks_exact_mut(4).zip(d) {
        out.copy_from_slice(&w.to_be_bytes());
    }
    crate::hex::encode(&bytes)
}

/// `dd128` of `bytes`, computed on the host: what the device kernel yields for them.
pub fn dd128(bytes: &[u8]) -> String {
    Sum::of(bytes).digest(bytes.len() as u64)
}

/// A content's sum of block terms (step 4, before finishing): what its `dd128` is made from,
/// and what lets the digest of a next version be had from the blocks that changed alone
/// ([`Sum::updated`]). Why: a replay checks each launch's outputs against their recorded
/// digests, and a launch that rewrites a few places of a large buffer (a wavefront's
/// diagonal, an elimination's remaining rows) would otherwise cost a digest of all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sum([u32; 4]);

/// Bytes compared at once by [`Sum::updated`] (a multiple of the 16-byte block).
const SPAN: usize = 4096;

impl Sum {
    /// The sum of `bytes`.
    pub fn of(bytes: &[u8]) -> Sum {
        Sum(accumulate(bytes))
    }

    /// The `dd128` digest of the content of `len` bytes with this sum.
    pub fn digest(&self, len: u64) -> String {
        finish(self.0, len)
    }

    /// The sum of `new` from this one, the sum of `old`: the terms of the blocks where they
    /// differ are taken out and put in again. None when the lengths differ or more than one
    /// block in [`SPARSE`] differs (one block's terms mixed alone cost about what a digest
    /// of the whole spends on that many blocks).
    pub fn updated(&self, old: &[u8], new: &[u8]) -> Option<Sum> {
        if old.len() != new.len() {
            return None;
        }
        let most = new.len().div_ceil(16) / SPARSE;
        let mut changed: Vec<u64> = Vec::new();
        for (s, (o, n)) in old.chunks(SPAN).zip(new.chunks(SPAN)).enumerate() {
            if o == n {
                continue;
            }
            let first = (s * SPAN / 16) as u64;
            // Whole blocks compared as one word each; the short last block as bytes.
            let word = |b: &[u8]| {
                <[u8; 16]>::try_from(b)
                    .map(u128::from_ne_bytes)
                    .unwrap_or(0)
            };
            let (ow, nw) = (o.chunks_exact(16), n.chunks_exact(16));
            let tail = ow.remainder() != nw.remainder();
            let whole = ow.zip(nw).map(|(a, b)| word(a) != word(b));
            for (b, differs) in whole.chain(std::iter::once(tail)).enumerate() {
                if differs {
                    if changed.len() >= most {
                        return None;
                    }
                    changed.push(first + b as u64);
                }
            }
        }
        let mut acc = self.0;
        for j in changed {
            let at = j as usize * 16;
            let end = (at + 16).min(new.len());
            acc = xor(
                acc,
                xor(block_term(j, &old[at..end]), block_term(j, &new[at..end])),
            );
        }
        Some(Sum(acc))
    }
}

/// [`Sum::updated`] takes at most one changed block in this many.
const SPARSE: usize = 16;

/// The term of block `j` holding `block` (16 bytes, or fewer for the last one, zero-padded).
fn block_term(j: u64, block: &[u8]) -> [u32; 4] {
    let mut p = [0u8; 16];
    p[..block.len()].copy_from_slice(block);
    let w = |i: usize| u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    term(j, [w(0), w(4), w(8), w(12)])
}

/// The digest of `len` bytes from the per-group partials the device kernel wrote (16 bytes
/// each, little-endian words; any number of groups: they are XORed).
pub fn dd128_from_partials(partials: &[u8], len: u64) -> String {
    let mut acc = [0u32; 4];
    for p in partials.chunks_exact(16) {
        let w = |i: usize| u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
        acc = xor(acc, [w(0), w(4), w(8), w(12)]);
    }
    finish(acc, len)
}

/// Groups the device kernel runs for `len` bytes with `group_size` work-items per group: one
/// block per work-item until [`MAX_GROUPS`] groups, then several (at least one group).
pub fn groups_for(len: u64, group_size: usize) -> usize {
    let blocks = len.div_ceil(16);
    let per_group = group_size.max(1) as u64;
    (blocks.div_ceil(per_group) as usize).clamp(1, MAX_GROUPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the device's split: `groups` × `wg` work-items, strided, partials per group.
    fn as_device(bytes: &[u8], groups: usize, wg: usize) -> String {
        let n = bytes.len().div_ceil(16);
        let mut partials = vec![0u8; groups * 16];
        for (j, block) in bytes.chunks(16).enumerate() {
            let mut padded = [0u8; 16];
            padded[..block.len()].copy_from_slice(block);
            let w = |i: usize| {
                u32::from_le_bytes([padded[i], padded[i + 1], padded[i + 2], padded[i + 3]])
            };
            let t = term(j as u64, [w(0), w(4), w(8), w(12)]);
            let g = (j % (groups * wg)) / wg;
            for (k, v) in t.iter().enumerate() {
                let o = g * 16 + k * 4;
                let old = u32::from_le_bytes(partials[o..o + 4].try_into().unwrap());
                partials[o..o + 4].copy_from_slice(&(old ^ v).to_le_bytes());
            }
        }
        let _ = n;
        dd128_from_partials(&partials, bytes.len() as u64)
    }

    #[test]
    fn words_are_spelled_as_eight_hex_digits_each() {
        for d in [
            [0, 1, 0xdead_beef, u32::MAX],
            [0x0123_4567, 0x89ab_cdef, 16, 0x7fff_ffff],
        ] {
            let expected = format!("{:08x}{:08x}{:08x}{:08x}", d[0], d[1], d[2], d[3]);
            assert_eq!(words_hex(d), expected);
        }
    }

    #[test]
    fn any_split_over_groups_gives_the_same_digest() {
        let bytes: Vec<u8> = (0..10_007u32).map(|i| (i * 31 % 251) as u8).collect();
        let d = dd128(&bytes);
        assert_eq!(d.len(), 32);
        for (g, wg) in [(1, 1), (3, 7), (256, 256), (17, 64)] {
            assert_eq!(as_device(&bytes, g, wg), d, "{g} groups of {wg}");
        }
    }

    #[test]
    fn length_padding_and_position_matter() {
        assert_ne!(dd128(&[]), dd128(&[0]));
        assert_ne!(dd128(&[0; 15]), dd128(&[0; 16]));
        assert_ne!(dd128(&[0; 16]), dd128(&[0; 32]));
        // Swapping two blocks changes the digest.
        let mut a = vec![0u8; 64];
        a[0] = 1;
        let mut b = vec![0u8; 64];
        b[16] = 1;
        assert_ne!(dd128(&a), dd128(&b));
        // Structured data: block j holds j in every word, or j in one word (ids, counters).
        let ids = |f: &dyn Fn(u32) -> [u32; 4]| -> Vec<u8> {
            (0..1000u32)
                .flat_map(|j| f(j).into_iter().flat_map(u32::to_le_bytes))
                .collect()
        };
        let all = [
            dd128(&ids(&|j| [j, j, j, j])),
            dd128(&ids(&|j| [0, 0, 0, j])),
            dd128(&ids(&|j| [j, 0, 0, 0])),
            dd128(&ids(&|j| [j ^ 5, 0, 0, 0])),
            dd128(&vec![0u8; 16000]),
        ];
        for i in 0..all.len() {
            for k in i + 1..all.len() {
                assert_ne!(all[i], all[k], "{i} vs {k}");
            }
        }
    }

    /// The mixer's avalanche: flipping one input bit flips each output bit with probability
    /// close to 1/2 (a weak mixer would leave some output bits nearly fixed).
    #[test]
    fn every_input_bit_flips_every_output_bit_about_half_the_time() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        };
        let trials = 400;
        for bit in 0..128 {
            let mut flips = [0u32; 128];
            for _ in 0..trials {
                let x = [rnd(), rnd(), rnd(), rnd()];
                let mut y = x;
                y[bit / 32] ^= 1 << (bit % 32);
                let d = xor(mix(x), mix(y));
                for (o, f) in flips.iter_mut().enumerate() {
                    *f += (d[o / 32] >> (o % 32)) & 1;
                }
            }
            for (o, f) in flips.iter().enumerate() {
                let p = *f as f64 / trials as f64;
                assert!(
                    (0.38..=0.62).contains(&p),
                    "input bit {bit} -> output bit {o}: {p}"
                );
            }
        }
    }

    #[test]
    fn partials_of_any_count_combine() {
        assert_eq!(groups_for(0, 256), 1);
        assert_eq!(groups_for(16 * 256, 256), 1);
        assert_eq!(groups_for(16 * 257, 256), 2);
        assert_eq!(groups_for(1 << 30, 256), MAX_GROUPS);
    }

    #[test]
    fn large_contents_digested_in_parts_give_the_serial_digest() {
        let bytes: Vec<u8> = (0..(5 << 20) + 7u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let serial = finish(accumulate_from(&bytes, 0), bytes.len() as u64);
        assert_eq!(dd128(&bytes), serial);
        assert_eq!(
            as_device(&bytes[..100_003], 5, 64),
            dd128(&bytes[..100_003])
        );
    }

    #[test]
    fn blocks_mixed_side_by_side_give_the_one_block_terms() {
        // Every variant this CPU runs, each over whole groups of its lanes and a remainder.
        let mut variants: Vec<(&str, fn(&[u8], u64) -> [u32; 4])> = vec![
            ("dispatched", accumulate_from),
            ("8 lanes", accumulate_lanes::<8>),
            ("16 lanes", accumulate_lanes::<16>),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above).
                variants.push(("avx2", |b, f| unsafe { accumulate_avx2(b, f) }));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                variants.push(("avx512", |b, f| unsafe { accumulate_avx512(b, f) }));
            }
        }
        let bytes: Vec<u8> = (0..16 * 16 * 3 + 16 * 9 + 5)
            .map(|i: u32| (i * 7 + 3) as u8)
            .collect();
        for len in [
            0,
            15,
            16,
            16 * 8,
            16 * 8 + 1,
            16 * 16 - 1,
            16 * 16,
            bytes.len(),
        ] {
            let bytes = &bytes[..len];
            for first in [0u64, 5, (1 << 32) - 3] {
                let mut one = [0u32; 4];
                for (j, block) in bytes.chunks(16).enumerate() {
                    let mut p = [0u8; 16];
                    p[..block.len()].copy_from_slice(block);
                    let w = |i: usize| u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
                    one = xor(one, term(first + j as u64, [w(0), w(4), w(8), w(12)]));
                }
                for (name, f) in &variants {
                    assert_eq!(
                        f(bytes, first),
                        one,
                        "{name}: {len} bytes from block {first}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_sum_of_a_next_version_from_its_changed_blocks_is_its_whole_sum() {
        let old: Vec<u8> = (0..16 * SPAN as u32 + 37)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
            .collect();
        let sum = Sum::of(&old);
        assert_eq!(sum.digest(old.len() as u64), dd128(&old));
        // Unchanged; one byte; bytes in several spans and blocks; the short last block.
        let mut edits: Vec<Vec<usize>> =
            vec![vec![], vec![5], vec![16, 17, SPAN + 3, 2 * SPAN - 1]];
        edits.push(vec![old.len() - 1, old.len() - 30]);
        for places in edits {
            let mut new = old.clone();
            for &p in &places {
                new[p] ^= 0x5a;
            }
            let updated = sum.updated(&old, &new).expect("few changes");
            assert_eq!(updated, Sum::of(&new), "changed at {places:?}");
            assert_eq!(updated.digest(new.len() as u64), dd128(&new));
        }
        // More than half changed, or another length: digested whole instead.
        let flipped: Vec<u8> = old.iter().map(|b| !b).collect();
        assert_eq!(sum.updated(&old, &flipped), None);
        assert_eq!(sum.updated(&old, &old[1..]), None);
    }
}
