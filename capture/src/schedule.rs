//! Work-group schedules named by a seed: the permutation tables of `cltrap run --permute SEED`
//! (the shim, live) and `cltrap replay --schedules` (the analyzer, on a capture).
//!
//! Why it lives in the capture crate: "seed S on a launch of this geometry means this table" is
//! part of the contract between a live run and a replay, like the record format itself, and
//! this is the one crate both sides link (the shim may not link `cltrap-kernel`, which pulls in
//! libclang and z3). One copy means a seed reported by a live run reproduces the same schedule
//! in a replay by construction, not by keeping two copies in step.
//!
//! A table maps each physical work-group `p` (linearised as `g0 + n0*(g1 + n1*g2)`) to the
//! logical group it runs. With non-uniform NDRanges (OpenCL 2.0) the last group in a dimension
//! can be smaller, and a logical group must be run by a physical group of the same size, or
//! work-items would be lost or run twice; so [`random_permutation`] only exchanges groups of
//! the same *shape*, and [`check_permutation`] verifies a table given by hand.
//!
//! The generator is a self-contained SplitMix64 rather than the `rand` crate, so the tables
//! cannot change under a dependency update and the shim stays small. Do not change the
//! algorithm: the seeds in existing reports and tests name these exact tables.

use std::collections::BTreeMap;

/// Number of work-groups per dimension (3 entries; absent dimensions count 1), so callers size
/// tables and counters the same way the kernel prelude linearises groups.
pub fn group_counts(global: &[u64], local: &[u64]) -> [u64; 3] {
    let mut n = [1u64; 3];
    for d in 0..global.len().min(3) {
        let l = local.get(d).copied().unwrap_or(1).max(1);
        n[d] = global[d].div_ceil(l);
    }
    n
}

/// Shape of a group: for each dimension, whether it is the smaller last group.
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

/// The table that leaves every group in place: the baseline schedule (`--permute 0`), which
/// changes nothing but the instrumentation.
pub fn identity_permutation(global: &[u64], local: &[u64]) -> Vec<u32> {
    let n = group_counts(global, local);
    (0..(n[0] * n[1] * n[2]) as u32).collect()
}

/// A random shape-preserving permutation, deterministic for a `seed` on any machine, so a seed
/// is a complete name for a schedule.
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

/// Checks that `perm` is a bijection over all groups that maps each group to one of the same
/// shape, so a table given by hand cannot lose or duplicate work-items.
pub fn check_permutation(perm: &[u32], global: &[u64], local: &[u64]) -> Result<(), String> {
    let n = group_counts(global, local);
    let total = (n[0] * n[1] * n[2]) as usize;
    if perm.len() != total {
        return Err(format!(
            "the table has {} entries but the launch has {total} work-groups",
            perm.len()
        ));
    }
    let mut seen = vec![false; total];
    for (p, &q) in perm.iter().enumerate() {
        let q = q as usize;
        if q >= total || seen[q] {
            return Err(format!("entry {p} ({q}) is out of range or repeated"));
        }
        seen[q] = true;
        if shape(delinearise(p as u64, n), n, global, local)
            != shape(delinearise(q as u64, n), n, global, local)
        {
            return Err(format!(
                "group {p} would run group {q}, which has a different size"
            ));
        }
    }
    Ok(())
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

    #[test]
    fn random_permutations_are_valid_and_keep_partial_groups_in_their_class() {
        let (g, l) = ([10u64, 7], [4u64, 2]);
        for seed in 0..20 {
            let p = random_permutation(&g, &l, seed);
            check_permutation(&p, &g, &l).unwrap();
        }
        assert_ne!(
            random_permutation(&[64], &[4], 1),
            identity_permutation(&[64], &[4])
        );
        assert_eq!(
            random_permutation(&[64], &[4], 7),
            random_permutation(&[64], &[4], 7)
        );
        assert_eq!(identity_permutation(&[64], &[16]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn check_rejects_shape_changes_and_repeats() {
        assert!(check_permutation(&[1, 0, 2], &[10], &[4]).is_ok());
        assert!(check_permutation(&[2, 1, 0], &[10], &[4]).is_err());
        assert!(check_permutation(&[0, 0, 2], &[12], &[4]).is_err());
        assert!(check_permutation(&[0, 1], &[12], &[4]).is_err());
    }

    #[test]
    fn known_seeds_name_the_same_tables_as_before_the_move() {
        // Reference values pinned when the kernel crate and the shim each had a copy; a change
        // here would make seeds in old reports name different schedules.
        assert_eq!(random_permutation(&[8], &[2], 1), vec![2, 0, 3, 1]);
        assert_eq!(
            random_permutation(&[10, 7], &[4, 2], 5),
            vec![0, 1, 8, 7, 4, 5, 6, 3, 2, 10, 9, 11]
        );
        assert_eq!(group_counts(&[10, 7], &[4, 2]), [3, 4, 1]);
    }
}
