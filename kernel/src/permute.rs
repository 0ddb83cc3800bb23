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
//! Those table functions live in [`cltrap_capture::schedule`] (re-exported here), because the
//! shim's live `--permute SEED` must produce the same table for a seed and cannot link this crate.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use cltrap_capture::schedule::{
    check_permutation, group_counts, identity_permutation, random_permutation,
};

use crate::edits::Edits;
use crate::error::KernelError;
use crate::model::Program;
use crate::rewrite::{
    add_call_arg, add_param, around_includes, callers_closure, calls_to,
    drop_unused_header_functions, refuse_header_functions, with_prelude, PRELUDE_MACROS,
};

/// Name of the extra parameter and argument.
pub const PERM_PARAM: &str = "__cltrap_perm";

/// Built-ins whose value depends on the work-group a work-item belongs to.
pub const GROUP_DEPENDENT_BUILTINS: &[&str] =
    &["get_group_id", "get_global_id", "get_global_linear_id"];

const PRELUDE: &str = "\
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
    rewrite_group_queries(
        p,
        PRELUDE,
        GROUP_DEPENDENT_BUILTINS,
        "the schedule permutation",
    )
}

/// Built-ins whose value a reduced launch ([`subset_groups`]) must answer as the real launch
/// would: besides the group-dependent ones, the counts and sizes of the whole NDRange.
pub const SUBSET_BUILTINS: &[&str] = &[
    "get_group_id",
    "get_global_id",
    "get_global_linear_id",
    "get_num_groups",
    "get_global_size",
];

/// Words of a subset table before its group list: mode, real group counts (3), real global
/// sizes (3).
pub const SUBSET_HEADER: usize = 7;

// The subset prelude. `p[0] == 0`: every query answers the launch itself (the full launch runs
// the program unchanged). `p[0] == 1`: the launch is a row of physical groups along dimension
// 0, group `k` of which runs logical group `p[7 + k]` (linear over the real group counts
// `p[1..4]`), and the NDRange's counts and sizes are the real ones (`p[1..4]`, `p[4..7]`).
const SUBSET_PRELUDE: &str = "\
__CLTRAP_FN size_t __cltrap_snum(__global const uint* p, uint d) { return p[0] == 0u ? get_num_groups(d) : d < 3u ? (size_t)p[1u + d] : (size_t)1; }
__CLTRAP_FN size_t __cltrap_sgsize(__global const uint* p, uint d) { return p[0] == 0u ? get_global_size(d) : d < 3u ? (size_t)p[4u + d] : (size_t)1; }
__CLTRAP_FN size_t __cltrap_sgroup(__global const uint* p, uint d) { if (p[0] == 0u) return get_group_id(d); size_t q = p[7u + get_group_id(0)], n0 = p[1], n1 = p[2]; return d == 0u ? q % n0 : d == 1u ? (q / n0) % n1 : d == 2u ? q / (n0 * n1) : (size_t)0; }
__CLTRAP_FN size_t __cltrap_sglobal(__global const uint* p, uint d) { return p[0] == 0u ? get_global_id(d) : d < 3u ? get_global_offset(d) + __cltrap_sgroup(p, d) * __CLTRAP_ELS(d) + get_local_id(d) : (size_t)0; }
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
__CLTRAP_FN size_t __cltrap_sglinear(__global const uint* p) { return p[0] == 0u ? get_global_linear_id() : ((__cltrap_sglobal(p, 2) - get_global_offset(2)) * __cltrap_sgsize(p, 1) + (__cltrap_sglobal(p, 1) - get_global_offset(1))) * __cltrap_sgsize(p, 0) + (__cltrap_sglobal(p, 0) - get_global_offset(0)); }
#define get_global_linear_id() __cltrap_sglinear(__cltrap_perm)
#endif
#define get_group_id(d) __cltrap_sgroup(__cltrap_perm, (d))
#define get_global_id(d) __cltrap_sglobal(__cltrap_perm, (d))
#define get_num_groups(d) __cltrap_snum(__cltrap_perm, (d))
#define get_global_size(d) __cltrap_sgsize(__cltrap_perm, (d))
";

/// Rewrites every kernel of `p` so that one compiled program runs either the whole launch or
/// only some of its work-groups, each computing exactly what it computes in the whole launch:
/// group ids, global ids, group counts and global sizes are answered from a table passed as
/// an extra trailing argument ([`subset_table`], or [`full_table`] for the launch itself).
/// Fuzzing uses it to measure coverage of a large captured launch on a few of its groups.
pub fn subset_groups(p: &Program) -> Result<Permuted, KernelError> {
    rewrite_group_queries(p, SUBSET_PRELUDE, SUBSET_BUILTINS, "the work-group subset")
}

/// The table that makes a [`subset_groups`] program run its launch unchanged.
pub fn full_table() -> Vec<u32> {
    vec![0; SUBSET_HEADER]
}

/// The table for a reduced launch of `groups.len()` work-groups in a row along dimension 0
/// (each of the real local size), physical group `k` running logical group `groups[k]`
/// (linear: `g0 + n0 * (g1 + n1 * g2)`) of a launch of `real_groups` groups and `real_global`
/// work-items per dimension. `None` when a count does not fit the table's 32-bit words.
pub fn subset_table(
    real_groups: [u64; 3],
    real_global: [u64; 3],
    groups: &[u64],
) -> Option<Vec<u32>> {
    let mut t = Vec::with_capacity(SUBSET_HEADER + groups.len());
    t.push(1);
    for v in real_groups.iter().chain(&real_global).chain(groups) {
        t.push(u32::try_from(*v).ok()?);
    }
    Some(t)
}

fn rewrite_group_queries(
    p: &Program,
    prelude: &str,
    builtins: &[&str],
    pass: &str,
) -> Result<Permuted, KernelError> {
    let kernels: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| f.is_kernel)
        .map(|f| f.name.clone())
        .collect();
    let mut seeds: BTreeSet<String> = builtins.iter().map(|s| s.to_string()).collect();
    seeds.extend(kernels.iter().cloned());
    let mut needing = callers_closure(p, &seeds);
    for b in builtins {
        needing.remove(*b);
    }
    // A header function no kernel reaches is left as written (it never runs).
    drop_unused_header_functions(p, &mut needing);
    refuse_header_functions(p, &needing, pass)?;
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
    // Included headers see the real built-ins: their functions that no kernel reaches are not
    // rewritten (those a kernel reaches were refused above).
    let undefs: String = builtins.iter().map(|b| format!("#undef {b}\n")).collect();
    let defines: String = prelude
        .lines()
        .filter(|l| l.starts_with("#if") || l.starts_with("#endif") || l.starts_with("#define"))
        .map(|l| format!("{l}\n"))
        .collect();
    around_includes(&mut edits, &p.source, &undefs, &defines);
    let body = edits.apply(&p.source)?;
    Ok(Permuted {
        source: with_prelude(&format!("{PRELUDE_MACROS}{prelude}"), &body),
        map,
    })
}
