//! Permuted work-group schedules (CLFuzz's schedule amplifier, done right): the kernel reads
//! its logical work-group from a permutation table passed as an extra trailing argument, so one
//! compiled program runs under any schedule, and the identity table reproduces the original.
//!
//! The rewrite defines `get_group_id`, `get_global_id` and (OpenCL C ≥ 2.0)
//! `get_global_linear_id` as macros over permuted versions, so calls written inside the user's
//! own macros are rewritten too. For physical group `p` (linearised as
//! `g0 + n0*(g1 + n1*g2)`), the logical group is `perm[p]`, delinearised the same way;
//! `global_id(d) = global_offset(d) + logical_group(d) * enqueued_local_size(d) + local_id(d)`.
//!
//! **Partial work-groups** (OpenCL 2.0 non-uniform NDRanges): a logical group must be run by a
//! physical group of the same size, or work-items would be lost or run twice. So the tables
//! made by [`random_permutation`] only exchange groups of the same *shape* (whether they are the
//! partial last group in each dimension); [`check_permutation`] verifies a table given by hand.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::edits::Edits;
use crate::error::KernelError;
use crate::model::Program;
use crate::rewrite::{
    add_call_arg, add_param, callers_closure, calls_to, refuse_header_functions, with_prelude,
};

/// Name of the extra parameter and argument.
pub const PERM_PARAM: &str = "__cltrap_perm";

/// Built-ins whose value depends on the work-group a work-item belongs to.
pub const GROUP_DEPENDENT_BUILTINS: &[&str] =
    &["get_group_id", "get_global_id", "get_global_linear_id"];

const PRELUDE: &str = "\
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 120
#define __CLTRAP_FN static inline
#else
#define __CLTRAP_FN
#endif
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
#define __CLTRAP_ELS(d) get_enqueued_local_size(d)
#else
#define __CLTRAP_ELS(d) get_local_size(d)
#endif
__CLTRAP_FN size_t __cltrap_pgroup(__global const uint* p, uint d) { size_t n0 = get_num_groups(0), n1 = get_num_groups(1); size_t q = p[get_group_id(0) + n0 * (get_group_id(1) + n1 * get_group_id(2))]; return d == 0u ? q % n0 : d == 1u ? (q / n0) % n1 : d == 2u ? q / (n0 * n1) : (size_t)0; }
__CLTRAP_FN size_t __cltrap_pglobal(__global const uint* p, uint d) { return d < 3u ? get_global_offset(d) + __cltrap_pgroup(p, d) * __CLTRAP_ELS(d) + get_local_id(d) : (size_t)0; }
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
__CLTRAP_FN size_t __cltrap_pglinear(__global const uint* p) { return ((__cltrap_pglobal(p, 2) - get_global_offset(2)) * get_global_size(1) + (__cltrap_pglobal(p, 1) - get_global_offset(1))) * get_global_size(0) + (__cltrap_pglobal(p, 0) - get_global_offset(0)); }
#define get_global_linear_id() __cltrap_pglinear(__cltrap_perm)
#endif
#define get_group_id(d) __cltrap_pgroup(__cltrap_perm, (d))
#define get_global_id(d) __cltrap_pglobal(__cltrap_perm, (d))
";

/// What the permutation rewrite did, for the executor that must pass the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermuteMap {
    /// Every kernel, with the index of its extra `__global const uint*` permutation argument
    /// (equal to its original argument count: the app's own indices are unchanged).
    pub kernels: Vec<PermutedKernel>,
    /// Helper functions that received the extra parameter.
    pub helpers: Vec<String>,
}

/// One kernel of the permuted program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermutedKernel {
    /// Kernel name.
    pub name: String,
    /// Index of the permutation-table argument.
    pub perm_arg_index: u32,
}

/// The permuted program: source to build, and the map.
#[derive(Debug, Clone)]
pub struct Permuted {
    /// Instrumented source (prelude, `#line 1`, the user's edited text).
    pub source: String,
    /// Where the extra arguments are.
    pub map: PermuteMap,
}

/// Rewrites every kernel of `p` to take its work-group ids from a permutation table.
pub fn permute_schedule(p: &Program) -> Result<Permuted, KernelError> {
    let kernels: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| f.is_kernel)
        .map(|f| f.name.clone())
        .collect();
    let mut seeds: BTreeSet<String> = GROUP_DEPENDENT_BUILTINS
        .iter()
        .map(|s| s.to_string())
        .collect();
    seeds.extend(kernels.iter().cloned());
    let mut needing = callers_closure(p, &seeds);
    for b in GROUP_DEPENDENT_BUILTINS {
        needing.remove(*b);
    }
    refuse_header_functions(p, &needing, "the schedule permutation")?;
    let mut edits = Edits::new();
    let mut map = PermuteMap {
        kernels: Vec::new(),
        helpers: Vec::new(),
    };
    let decl = format!("__global const uint* {PERM_PARAM}");
    for f in p.functions.iter().filter(|f| needing.contains(&f.name)) {
        let idx = add_param(&mut edits, p, f, &decl)?;
        if f.body.is_none() {
            continue;
        }
        if f.is_kernel {
            map.kernels.push(PermutedKernel {
                name: f.name.clone(),
                perm_arg_index: idx,
            });
        } else {
            map.helpers.push(f.name.clone());
        }
        for call in calls_to(f, &needing) {
            add_call_arg(&mut edits, p, call, PERM_PARAM)?;
        }
    }
    let body = edits.apply(&p.source)?;
    Ok(Permuted {
        source: with_prelude(PRELUDE, &body),
        map,
    })
}

/// Number of work-groups per dimension (3 entries; absent dimensions count 1).
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

/// The table that leaves every group in place.
pub fn identity_permutation(global: &[u64], local: &[u64]) -> Vec<u32> {
    let n = group_counts(global, local);
    (0..(n[0] * n[1] * n[2]) as u32).collect()
}

/// A random shape-preserving permutation (deterministic for a `seed`).
pub fn random_permutation(global: &[u64], local: &[u64], seed: u64) -> Vec<u32> {
    let n = group_counts(global, local);
    let total = n[0] * n[1] * n[2];
    let mut classes: std::collections::BTreeMap<[bool; 3], Vec<u32>> = Default::default();
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

/// Checks that `perm` is a bijection over all groups that maps each group to one of the same shape.
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
    }

    #[test]
    fn check_rejects_shape_changes_and_repeats() {
        assert!(check_permutation(&[1, 0, 2], &[10], &[4]).is_ok());
        assert!(check_permutation(&[2, 1, 0], &[10], &[4]).is_err());
        assert!(check_permutation(&[0, 0, 2], &[12], &[4]).is_err());
        assert!(check_permutation(&[0, 1], &[12], &[4]).is_err());
    }
}
