//! Permutation tables for a launch's work-groups.
//!
//! The tables are exactly those of `cltrap_kernel::permute::random_permutation` (same
//! SplitMix64 stream, same shape classes in the same order), so a seed seen in a live run
//! means the same schedule as in `cltrap replay --schedules`. The shim cannot link the kernel
//! crate (it never loads libclang, and must stay small), hence this copy; keep them in step.

use std::collections::BTreeMap;

/// Number of work-groups per dimension (3 entries; absent dimensions count 1).
pub fn group_counts(global: &[u64], local: &[u64]) -> [u64; 3] {
    let mut n = [1u64; 3];
    for d in 0..global.len().min(3) {
        let l = local.get(d).copied().unwrap_or(1).max(1);
        n[d] = global[d].div_ceil(l);
    }
    n
}

fn shape(g: [u64; 3], n: [u64; 3], global: &[u64], local: &[u64]) -> [bool; 3] {
    let mut s = [false; 3];
    for d in 0..global.len().min(3) {
        let l = local.get(d).copied().unwrap_or(1).max(1);
        s[d] = !global[d].is_multiple_of(l) && g[d] == n[d] - 1;
    }
    s
}

fn delinearise(i: u64, n: [u64; 3]) -> [u64; 3] {
    [i % n[0], (i / n[0]) % n[1], i / (n[0] * n[1])]
}

/// A random permutation of the work-groups that only exchanges groups of the same shape
/// (deterministic for a seed).
pub fn random_permutation(global: &[u64], local: &[u64], seed: u64) -> Vec<u32> {
    let n = group_counts(global, local);
    let total = n[0] * n[1] * n[2];
    let mut classes: BTreeMap<[bool; 3], Vec<u32>> = BTreeMap::new();
    for i in 0..total {
        classes
            .entry(shape(delinearise(i, n), n, global, local))
            .or_default()
            .push(i as u32);
    }
    let mut perm = vec![0u32; total as usize];
    let mut rng = SplitMix64(seed);
    for members in classes.values() {
        let mut shuffled = members.clone();
        for i in (1..shuffled.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        for (phys, logical) in members.iter().zip(shuffled) {
            perm[*phys as usize] = logical;
        }
    }
    perm
}

/// The identity table (every group runs as itself): `--permute 0`, the baseline that changes
/// nothing but the instrumentation and, for NULL-local launches, the chosen local size.
pub fn identity_permutation(global: &[u64], local: &[u64]) -> Vec<u32> {
    let n = group_counts(global, local);
    (0..(n[0] * n[1] * n[2]) as u32).collect()
}

/// A local size for a launch whose application passed NULL (the choice is the
/// implementation's, so any valid one is faithful to the application): per dimension the
/// largest divisor of the global size within `max_items` work-items per group (the kernel's
/// `CL_KERNEL_WORK_GROUP_SIZE`, 0 if unknown) and 64, leaving at least four groups in
/// dimension 0 where the global size allows.
pub fn choose_local(global: &[u64], max_items: u64) -> Vec<u64> {
    let mut room = max_items.clamp(1, 64);
    global
        .iter()
        .enumerate()
        .map(|(d, &g)| {
            let cap = if d == 0 {
                room.min((g / 4).max(1))
            } else {
                room
            };
            let l = (1..=cap.min(g.max(1)))
                .rev()
                .find(|l| g % l == 0)
                .unwrap_or(1);
            room = (room / l).max(1);
            l
        })
        .collect()
}

/// Small deterministic generator so a seed reproduces a schedule on any machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_shape_preserving_bijection(p: &[u32], g: &[u64], l: &[u64]) -> bool {
        let n = group_counts(g, l);
        let mut seen = vec![false; p.len()];
        p.iter().enumerate().all(|(i, &q)| {
            let ok = (q as usize) < p.len()
                && !seen[q as usize]
                && shape(delinearise(i as u64, n), n, g, l)
                    == shape(delinearise(q as u64, n), n, g, l);
            if ok {
                seen[q as usize] = true;
            }
            ok
        })
    }

    #[test]
    fn tables_are_valid_deterministic_and_not_the_identity() {
        for seed in 0..20 {
            let p = random_permutation(&[10, 7], &[4, 2], seed);
            assert!(
                is_shape_preserving_bijection(&p, &[10, 7], &[4, 2]),
                "{p:?}"
            );
        }
        let id: Vec<u32> = (0..16).collect();
        assert_ne!(random_permutation(&[64], &[4], 1), id);
        assert_eq!(
            random_permutation(&[64], &[4], 7),
            random_permutation(&[64], &[4], 7)
        );
    }

    #[test]
    fn chosen_local_sizes_divide_the_global_size_and_leave_several_groups() {
        assert_eq!(choose_local(&[1024], 4096), vec![64]);
        assert_eq!(choose_local(&[64], 4096), vec![16]);
        assert_eq!(choose_local(&[12], 4096), vec![3]);
        assert_eq!(choose_local(&[7], 4096), vec![1]);
        assert_eq!(choose_local(&[1024], 0), vec![1]);
        let l = choose_local(&[64, 48, 5], 256);
        assert!(l[0] * l[1] * l[2] <= 64, "{l:?}");
        assert!(64 % l[0] == 0 && 48 % l[1] == 0 && 5 % l[2] == 0, "{l:?}");
        assert_eq!(identity_permutation(&[64], &[16]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn the_same_table_as_the_kernel_crate_for_a_known_seed() {
        // Reference values computed with cltrap_kernel::permute::random_permutation.
        assert_eq!(random_permutation(&[8], &[2], 1), vec![2, 0, 3, 1]);
        assert_eq!(
            random_permutation(&[10, 7], &[4, 2], 5),
            vec![0, 1, 8, 7, 4, 5, 6, 3, 2, 10, 9, 11]
        );
    }
}
