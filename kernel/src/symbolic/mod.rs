//! Symbolic execution of one work-item of a kernel, over the typed model, to z3 path
//! constraints: for every branch side or loop-boundary class still uncovered, find argument
//! values (and buffer elements) that reach it — or prove that none do.
//!
//! Semantics are OpenCL C's: integers are bit-vectors of their type's width with clang's own
//! implicit conversions (promotions, usual arithmetic conversions) taken from the model,
//! wrap-around arithmetic, shift counts masked to the width, signed/unsigned division and
//! comparisons; floats are z3 floating-point terms of their width (round to nearest even);
//! vectors are handled lane by lane. Work-item ids are symbolic within the NDRange; scalar
//! arguments are symbolic; buffers are z3 arrays of their element bits, indexed by element.
//! Helper functions are inlined; loops are unrolled up to a bound (reported when hit).
//!
//! What it is not: a whole-NDRange model. Other work-items' writes are not modelled (a case is
//! only accepted after running it), and constructs it does not model are reported by name and
//! location, never guessed.

mod builtins;
mod exec;
mod value;

use crate::coverage::{Construct, Outcome, Slot};
use crate::interface::ValueType;
use crate::model::Program;
use crate::KernelError;
use std::time::Duration;

/// The NDRange the work-item lives in (fixed by the base test case).
#[derive(Debug, Clone)]
pub struct Geometry {
    /// Global size per dimension.
    pub global: Vec<u64>,
    /// Local size per dimension (`None`: local ids and group ids are unsupported).
    pub local: Option<Vec<u64>>,
    /// Global offset (`None` = 0).
    pub offset: Option<Vec<u64>>,
}

/// An argument as the solver sees it.
#[derive(Debug, Clone)]
pub enum SymArg {
    /// A scalar or vector by value: symbolic.
    Value(ValueType),
    /// A buffer of `len` elements: a symbolic array.
    Buffer {
        /// Element type.
        elem: ValueType,
        /// Number of elements (reads are constrained to be in bounds).
        len: u64,
    },
    /// A buffer of `len` structs with a known layout.
    StructBuffer {
        /// The struct's fields.
        layout: crate::interface::StructLayout,
        /// Number of elements.
        len: u64,
    },
    /// A struct by value, with a known layout.
    Struct(crate::interface::StructLayout),
    /// A `__local` buffer: an array whose initial contents are unknown.
    Local {
        /// Element type (`None`: unknown, accesses unsupported).
        elem: Option<ValueType>,
    },
    /// Anything else (images, samplers, structs): using it is unsupported.
    Other,
}

/// A slot of the coverage map to reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The caller's id (the counter index).
    pub id: u32,
    /// Construct.
    pub construct: Construct,
    /// Outcome.
    pub outcome: Outcome,
    /// Byte range (as in the coverage map's slot).
    pub start: u32,
    /// End of the byte range.
    pub end: u32,
}

/// A coverage-map slot is the usual target: every caller (the `solve` campaign, tests) asks
/// for slots by their counter index, so the conversion lives here once.
impl From<&Slot> for Target {
    fn from(s: &Slot) -> Target {
        Target {
            id: s.index,
            construct: s.construct,
            outcome: s.outcome,
            start: s.start,
            end: s.end,
        }
    }
}

/// Bounds of the exploration.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Iterations unrolled per loop (per entry).
    pub loop_bound: u32,
    /// Live path states at most (paths beyond are dropped and reported).
    pub max_states: usize,
    /// Wall-clock limit for the whole kernel.
    pub time: Duration,
    /// Per solver query (ms).
    pub query_ms: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            loop_bound: 16,
            max_states: 4096,
            time: Duration::from_secs(30),
            query_ms: 5000,
        }
    }
}

/// Concrete values that reach a target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assignment {
    /// By-value arguments: index and bytes (only those the path constrains).
    pub scalars: Vec<(usize, Vec<u8>)>,
    /// Buffer elements: argument index, element index, element bytes.
    pub elements: Vec<(usize, u64, Vec<u8>)>,
    /// The work-item (global id per dimension) that reaches it.
    pub work_item: Vec<u64>,
}

/// The answer for one target.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Inputs that reach it (to be confirmed by running them).
    Solved(Assignment),
    /// No input reaches it on any path explored completely.
    Unsat,
    /// A construct on the way is not modelled: what, and where (`line:col`).
    Unsupported(String),
    /// Out of time, states, solver patience, or loop unrolling (which, where).
    Timeout(String),
}

/// The verdict for one target and how long it took to reach it.
#[derive(Debug, Clone)]
pub struct TargetResult {
    /// The target's id.
    pub id: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// Time from the start of exploration until the verdict.
    pub time: Duration,
}

/// Explores kernel `kernel` of `program` symbolically and answers every target.
pub fn solve(
    program: &Program,
    kernel: &str,
    geometry: &Geometry,
    args: &[SymArg],
    targets: &[Target],
    limits: &Limits,
) -> Result<Vec<TargetResult>, KernelError> {
    let k = program
        .kernels()
        .find(|f| f.name == kernel)
        .ok_or_else(|| KernelError::NoSuchKernel(kernel.into()))?;
    Ok(exec::run(program, k, geometry, args, targets, limits))
}
