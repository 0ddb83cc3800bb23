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
