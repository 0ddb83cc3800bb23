//! Mutation testing, the source half: mutation operators over the kernel model and *mutant
//! schemata* — one program holding every mutant of a kernel, selected at run time.
//!
//! Why schemata: compiling a mutant costs hundreds of milliseconds on an OpenCL driver, far
//! more than running it, so [`schema`] compiles all mutants into one program: each mutated
//! expression becomes `(__cltrap_mutant == 17u ? (mutated) : (original))`, selected by an extra
//! trailing kernel argument `uint __cltrap_mutant_in` (0 = the original; read through a
//! `volatile` local named `__cltrap_mutant`, so optimisers do not unswitch code on it). Barrier
//! mutants cannot sit behind a run-time condition on PoCL, and a `__local` array turned private
//! changes a declaration, so the schema holds those as renamed copies of the kernels that lead
//! to them ([`Rendered::launch_names`] says which to launch). Mutants that cannot live in a
//! schema (sites that cross each other, copies that cannot be made) are rendered one program
//! each by [`single`], as is every mutant in one-compile-per-mutant mode. Both renderings add a watchdog (a second extra
//! argument `__global uint* __cltrap_wd`: every loop spends an iteration budget and, when it is
//! exhausted, sets `__cltrap_wd[0]` and breaks; loops with a barrier have a budget of their own,
//! see [`barrier_loop_budget`]), so an endless mutant stops by itself and is reported as a
//! timeout. Helpers defined in the program get both parameters passed on.
//!
//! What it is not for: running mutants (the analyzer's `mutate` module does that). Pure: the
//! [`Program`] in, source text and [`Mutant`] descriptions out.

mod contract;
mod equivalence;
mod operators;
mod render;

use serde::{Deserialize, Serialize};

use crate::error::KernelError;
use crate::model::Program;

pub use operators::find_mutants;
pub use render::{needs_kernel_copy, original, schema, single, Rendered};

/// Name of the extra selector parameter (0 = run the original code).
pub const MUTANT_PARAM: &str = "__cltrap_mutant";
/// Name of the extra watchdog parameter, a `__global uint*` of [`WATCHDOG_WORDS`] words:
/// `[0]` is set on timeout (1: a loop without barriers ran out of its budget, 2: a loop with
/// a barrier did), `[1]` is the budget of loops with barriers (see [`barrier_loop_budget`]),
/// `[2]` receives the most barrier-loop iterations the original (selector 0) needed.
pub const WATCHDOG_PARAM: &str = "__cltrap_wd";
/// Words of the watchdog buffer.
pub const WATCHDOG_WORDS: usize = 3;

/// The budget of loops with a barrier for mutants, from `need`, the most barrier-loop
/// iterations per work-item and call that the original needs on the same test case (and
/// schedule): the analyzer's worker runs the original once per test case to read it.
///
/// Why a separate budget: a loop without a barrier spends a per-work-item budget and breaks
/// when it is exhausted; a work-item that leaves early is harmless. A loop with a barrier
/// cannot, unless every work-item of the group breaks in the same iteration. So such loops
/// count their iterations on a counter of their own (per function call, only barrier loops):
/// in any run where the barrier is legal, every work-item of a group passes it equally often,
/// so the counters agree and the `break` is uniform. The limit is a run-time value
/// (`__cltrap_wd[1]`) because the right one depends on the suite; the original records its
/// need in `__cltrap_wd[2]`. (Without a watchdog, an endless barrier loop would cost the
/// whole run deadline plus a worker restart.)
///
/// The rule: 64 times the original's need, and at least 4096 (for loops whose count grows
/// with the launch size, as under a launch-geometry mutant). A mutant is stopped only after
/// 64 times as many barrier-loop iterations as the original runs on that input; each one
/// is a barrier of the whole group, so such a run takes far longer than the original's, and
/// the run deadline (20 times the original's slowest run plus a second) would have stopped it
/// as well unless the barrier loop is a tiny part of a run dominated by other work. The
/// margin is for that case. Saturates at `u32::MAX`.
pub fn barrier_loop_budget(need: u32) -> u32 {
    need.saturating_mul(BARRIER_BUDGET_FACTOR)
        .max(BARRIER_BUDGET_MIN)
}

/// How many times the original's barrier-loop need a mutant may run ([`barrier_loop_budget`]).
pub const BARRIER_BUDGET_FACTOR: u32 = 64;
/// The least barrier-loop budget ([`barrier_loop_budget`]).
pub const BARRIER_BUDGET_MIN: u32 = 4096;
/// Default per-work-item loop-iteration budget of one function call before the watchdog
/// fires; override with `-D__CLTRAP_BUDGET=N` in the build options.
pub const DEFAULT_BUDGET: u32 = 1 << 22;

/// The mutation operators. Traditional ones come from CLTestCheck and the GPU mutation
/// testing literature; the GPU ones are specific to OpenCL kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// `<`↔`<=`, `>`↔`>=`.
    RelationalBoundary,
    /// `<`→`>=`, `>`→`<=`, `<=`→`>`, `>=`→`<`, `==`↔`!=`.
    RelationalNegation,
    /// `&&`↔`||`.
    LogicalConnector,
    /// `+`↔`-`, `*`↔`/`, `%`→`/`.
    Arithmetic,
    /// `&`↔`|`, `^`→`&`.
    Bitwise,
    /// `<<`↔`>>`.
    Shift,
    /// `+=`↔`-=`, `*=`↔`/=`, `<<=`↔`>>=`, `&=`↔`|=`, `%=`→`/=`, `^=`→`&=`.
    CompoundAssignment,
    /// `++`↔`--`.
    Increment,
    /// `-x`→`x`, and `x`→`-(x)` on right-hand sides of assignments and initialisers.
    UnaryMinus,
    /// `!a`→`a`.
    LogicalNotRemoval,
    /// `~a`→`a`.
    BitwiseNotRemoval,
    /// A branch or loop condition replaced by `1` (true) or `0` (false).
    Condition,
    /// `barrier(...)` / `work_group_barrier(...)` removed.
    BarrierRemoval,
    /// `CLK_LOCAL_MEM_FENCE`↔`CLK_GLOBAL_MEM_FENCE` in a barrier's flags.
    BarrierFence,
    /// `mem_fence` / `read_mem_fence` / `write_mem_fence` removed.
    FenceRemoval,
    /// An atomic built-in (`atomic_*`, `atom_*`) replaced by its plain, non-atomic equivalent.
    AtomicPlain,
    /// `get_local_id`→`get_group_id`, `get_group_id`→`get_local_id`, `get_global_id`→`get_local_id`.
    IdSwap,
    /// A work-item id call plus or minus one.
    IdOffset,
    /// The dimension argument of an id or size query swapped, `(0)`↔`(1)`.
    DimensionSwap,
    /// A `__local` array declared in a kernel turned private (per work-item).
    LocalToPrivate,
    /// Launch geometry: local size halved/doubled or global size plus/minus one group
    /// (dimension 0), applied when launching; the source is unchanged.
    LaunchGeometry,
}

impl Operator {
    /// Every operator, in report order.
    pub const ALL: [Operator; 21] = [
        Operator::RelationalBoundary,
        Operator::RelationalNegation,
        Operator::LogicalConnector,
        Operator::Arithmetic,
        Operator::Bitwise,
        Operator::Shift,
        Operator::CompoundAssignment,
        Operator::Increment,
        Operator::UnaryMinus,
        Operator::LogicalNotRemoval,
        Operator::BitwiseNotRemoval,
        Operator::Condition,
        Operator::BarrierRemoval,
        Operator::BarrierFence,
        Operator::FenceRemoval,
        Operator::AtomicPlain,
        Operator::IdSwap,
        Operator::IdOffset,
        Operator::DimensionSwap,
        Operator::LocalToPrivate,
        Operator::LaunchGeometry,
    ];

    /// The name used on the command line and in reports (`relational_boundary`).
    pub fn name(self) -> &'static str {
        match self {
            Operator::RelationalBoundary => "relational_boundary",
            Operator::RelationalNegation => "relational_negation",
            Operator::LogicalConnector => "logical_connector",
            Operator::Arithmetic => "arithmetic",
            Operator::Bitwise => "bitwise",
            Operator::Shift => "shift",
            Operator::CompoundAssignment => "compound_assignment",
            Operator::Increment => "increment",
            Operator::UnaryMinus => "unary_minus",
            Operator::LogicalNotRemoval => "logical_not_removal",
            Operator::BitwiseNotRemoval => "bitwise_not_removal",
            Operator::Condition => "condition",
            Operator::BarrierRemoval => "barrier_removal",
            Operator::BarrierFence => "barrier_fence",
            Operator::FenceRemoval => "fence_removal",
            Operator::AtomicPlain => "atomic_plain",
            Operator::IdSwap => "id_swap",
            Operator::IdOffset => "id_offset",
            Operator::DimensionSwap => "dimension_swap",
            Operator::LocalToPrivate => "local_to_private",
            Operator::LaunchGeometry => "launch_geometry",
        }
    }

    /// Whether the operator is one of the GPU/OpenCL-specific ones.
    pub fn is_gpu(self) -> bool {
        self >= Operator::BarrierRemoval
    }

    /// Parses a name, or a group: `traditional`, `gpu`, `all`.
    pub fn parse_list(list: &str) -> Result<Vec<Operator>, KernelError> {
        let mut out = Vec::new();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let w = word.replace('-', "_").to_lowercase();
            let add: Vec<Operator> = match w.as_str() {
                "all" => Operator::ALL.to_vec(),
                "traditional" => Operator::ALL.into_iter().filter(|o| !o.is_gpu()).collect(),
                "gpu" => Operator::ALL.into_iter().filter(|o| o.is_gpu()).collect(),
                _ => match Operator::ALL.into_iter().find(|o| o.name() == w) {
                    Some(o) => vec![o],
                    None => {
                        return Err(KernelError::BadInput(format!(
                            "unknown mutation operator `{word}`; known: all, traditional, gpu, {}",
                            Operator::ALL.map(|o| o.name()).join(", ")
                        )))
                    }
                },
            };
            for o in add {
                if !out.contains(&o) {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One text edit of a mutant, by byte range of the user's original text (an insertion when
/// `start == end`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patch {
    /// First byte replaced.
    pub start: u32,
    /// One past the last byte replaced.
    pub end: u32,
    /// Replacement text.
    pub text: String,
}

/// A change of the launch (not of the source), for [`Operator::LaunchGeometry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchChange {
    /// Local size of dimension 0 halved (legal when it is even).
    LocalHalved,
    /// Local size of dimension 0 doubled (legal when the global size stays a multiple).
    LocalDoubled,
    /// Global size of dimension 0 plus one work-group.
    GlobalPlusGroup,
    /// Global size of dimension 0 minus one work-group (legal when more than one group).
    GlobalMinusGroup,
}

impl LaunchChange {
    /// The changed `(global, local)` sizes, or `None` when the change is not legal for this
    /// launch (no local size given, not divisible, or fewer than two groups).
    pub fn apply(self, global: &[u64], local: Option<&[u64]>) -> Option<(Vec<u64>, Vec<u64>)> {
        let local = local?;
        let (g0, l0) = (*global.first()?, *local.first()?);
        if l0 == 0 {
            return None;
        }
        let (mut g, mut l) = (global.to_vec(), local.to_vec());
        match self {
            LaunchChange::LocalHalved if l0 % 2 == 0 => l[0] = l0 / 2,
            LaunchChange::LocalDoubled
                if g0 % (2 * l0) == 0 && l.iter().product::<u64>() * 2 <= 256 =>
            {
                l[0] = 2 * l0
            }
            LaunchChange::GlobalPlusGroup => g[0] = g0 + l0,
            LaunchChange::GlobalMinusGroup if g0 >= 2 * l0 => g[0] = g0 - l0,
            _ => return None,
        }
        Some((g, l))
    }
}

/// A guard under which a mutant's code runs: a branch condition (by byte range of the
/// condition, as in the coverage map's slots) that must have evaluated to `outcome`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guard {
    /// Start of the condition.
    pub start: u32,
    /// End of the condition.
    pub end: u32,
    /// The outcome that leads to the mutant.
    pub outcome: bool,
}

/// One mutant: what changed, where, and how to run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutant {
    /// Stable id: a hash of operator, byte range and replacement (unchanged by other edits
    /// elsewhere in the file only if the byte offsets are unchanged).
    pub id: String,
    /// Selector value in the schema (1-based, in source order).
    pub number: u32,
    /// Operator.
    pub operator: Operator,
    /// Function containing it (the kernel, for launch mutants).
    pub function: String,
    /// Start of the changed text (byte offset of the user's file).
    pub start: u32,
    /// End of the changed text.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column of `start`.
    pub col: u32,
    /// 1-based line of `end`.
    pub end_line: u32,
    /// 1-based column of `end`.
    pub end_col: u32,
    /// The original text of `start..end`.
    pub original: String,
    /// What replaces it.
    pub replacement: String,
    /// The expression the schema wraps (`None` for declaration and launch mutants).
    pub site: Option<(u32, u32)>,
    /// The edits inside the site (or the file) that make the mutant.
    pub patches: Vec<Patch>,
    /// Whether the mutant lives in the schema (else it needs a program of its own).
    pub in_schema: bool,
    /// Why the mutant cannot live in the schema, when it cannot.
    pub schema_note: Option<String>,
    /// Branch outcomes that must have happened for its code to run (coverage).
    pub guards: Vec<Guard>,
    /// Trivially equivalent to the original: the reason (e.g. `x*1` → `x/1`).
    pub equivalent: Option<String>,
    /// For launch-geometry mutants: the change.
    pub launch: Option<LaunchChange>,
}

/// Which mutants to make.
#[derive(Debug, Clone, Default)]
pub struct MutateOptions {
    /// Operators to apply; empty = all.
    pub operators: Vec<Operator>,
    /// Only mutants in (or reachable from) these kernels; empty = every function.
    pub kernels: Vec<String>,
}

/// A stable 64-bit FNV-1a hash, as 16 hex digits (ids must not change between runs or builds).
pub(crate) fn stable_id(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Renders a mutant's source the way a person reads it: the user's text with only this
/// mutant's patches applied (no selector, no watchdog), for diffs in reports.
pub fn mutated_text(p: &Program, m: &Mutant) -> Result<String, KernelError> {
    let mut e = crate::edits::Edits::new();
    for patch in &m.patches {
        e.replace(patch.start, patch.end, patch.text.clone());
    }
    e.apply(&p.source)
}
