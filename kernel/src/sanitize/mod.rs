//! The native instrumented checks of `cltrap check --engine native`: a rewrite of the user's
//! own text (by byte ranges, no line added inside it) after which every access through a
//! `__global`, `__constant` or `__local` pointer the pass can attribute to an object goes
//! through a check, and findings are written into a report buffer the kernel gets as an extra
//! trailing argument. One checker per file, like Oclgrind's plugins:
//!
//! - [`objects`]: which object (argument, `__local` array) a pointer points into;
//! - [`bounds`]: out-of-bounds reads and writes (the access is redirected, never performed);
//! - [`races`]: `__local` races per barrier interval, `__global` races between work-groups
//!   and within a group per barrier interval;
//! - [`barriers`]: the barrier intervals, per fenced address space (a barrier fencing only
//!   `__local` memory does not end a `__global` interval, as in Oclgrind), barriers written
//!   in macro bodies included;
//! - [`uninit`]: reads of `__local` memory never written in the launch.
//!
//! **Extra arguments** (appended to every kernel, in this order): `__global uint* report`
//! (header of [`HEADER_WORDS`]: record counter, capacity, [`FLAG_*`](FLAG_BOUNDS) switches, a
//! scratch area; then records of [`RECORD_WORDS`]), `__global const ulong* extents` (per
//! kernel argument `2i`: its size in bytes, `2i+1`: its shadow offset in words; statics
//! likewise after the arguments; then the words of `__local` shadow per work-group),
//! `__global uint* global_shadow`, `__global uint* local_shadow` (both zeroed by the host).
//!
//! **Record** (`RECORD_WORDS` 32-bit words): kind, site, other site + 1 (0 = unknown), object,
//! byte offset (low, high), global id (3), group id (3), other work-item (local id + 1 for
//! `__local` races, group linear id + 1 for `__global` ones, 0 = several/unknown), access
//! size, mode (bits 0-1 this access read/write; bit 4 the other access read, bit 5 written).
//!
//! Helper functions are rewritten too ([`helpers`]): they take the checker's state and one
//! object descriptor per pointer parameter as extra trailing parameters. An access `p[i]`
//! written in a macro body whose `p` and `i` are the macro's arguments is checked at the use
//! ([`macros`]); `async_work_group_copy` has both of its ranges bounds-checked.
//!
//! What is not checked is said in [`SanitizeMap::unchecked`]: accesses in helpers the pass
//! cannot pass its state to, through pointers it cannot attribute, in other macro bodies, or of
//! types it cannot spell; pointers handed to other built-ins.

mod barriers;
mod bounds;
mod helpers;
mod macros;
mod objects;
pub mod races;
mod uninit;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::edits::Edits;
use crate::error::KernelError;
use crate::model::{visit_exprs, BinOp, Expr, ExprKind, Function, Program, UnOp};
use crate::rewrite::{add_param, callers_closure, with_prelude};
use objects::{element_bytes, Origin, Scope, Space};

/// Record kind: a read out of bounds.
pub const KIND_READ_OOB: u32 = 1;
/// Record kind: a write out of bounds.
pub const KIND_WRITE_OOB: u32 = 2;
/// Record kind: a race on `__local` memory within a work-group.
pub const KIND_LOCAL_RACE: u32 = 3;
/// Record kind: a race on `__global` memory between work-groups.
pub const KIND_GLOBAL_RACE: u32 = 4;
/// Record kind: a read of `__local` memory not written before.
pub const KIND_UNINIT: u32 = 5;
/// Record kind: a race on `__global` memory between work-items of one group (no barrier).
pub const KIND_GROUP_GLOBAL_RACE: u32 = 6;

/// Switch (report word 2): bounds checks (always on: they keep the run safe).
pub const FLAG_BOUNDS: u32 = 1;
/// Switch: `__global` races between work-groups.
pub const FLAG_GLOBAL_RACES: u32 = 2;
/// Switch: `__local` races.
pub const FLAG_LOCAL_RACES: u32 = 4;
/// Switch: uninitialised `__local` reads.
pub const FLAG_UNINIT: u32 = 8;
/// Either `__local` shadow check.
pub(crate) const FLAG_LOCAL: u32 = FLAG_LOCAL_RACES | FLAG_UNINIT;

/// Words of the report header (counter, capacity, flags, scratch).
pub const HEADER_WORDS: u32 = 48;
/// First word of the scratch area out-of-bounds `__global` accesses are sent to.
pub const SCRATCH_WORD: u32 = 16;
/// Words per record.
pub const RECORD_WORDS: u32 = 16;
/// Number of extra arguments appended to each kernel.
pub const EXTRA_ARGS: u32 = 4;

/// What the pass did, for the engine that runs the kernels and reads the records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SanitizeMap {
    /// Every kernel of the program.
    pub kernels: Vec<SanitizedKernel>,
    /// Access sites, by id.
    pub sites: Vec<Site>,
    /// Accesses (and other things) the checks do not see, with the reason.
    pub unchecked: Vec<Unchecked>,
}

/// One kernel of the instrumented program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SanitizedKernel {
    /// Kernel name.
    pub name: String,
    /// Its own argument count; the report buffer is argument `args`.
    pub args: u32,
    /// `__local` arrays declared in its body, in order (object ids `args + n`): name and size
    /// in bytes when known (unknown: no race / uninitialised shadow for it).
    pub statics: Vec<(String, Option<u64>)>,
    /// Why `__local` races and uninitialised reads are not checked in this kernel, if not.
    pub no_local_shadow: Option<String>,
    /// The program's functions it calls, directly or not (their sites and not-checked accesses
    /// count as the kernel's).
    pub helpers: Vec<String>,
    /// Per object (arguments, then statics): its shadow granule as a shift (bytes per shadow
    /// entry = `1 << shift`): 0 for an object accessed by bytes (or by a type the pass cannot
    /// size), 1 by `short`s, 2 otherwise. Why: neighbouring work-items that write separate
    /// bytes of one word are not a race, so the shadow must not share an entry between them.
    #[serde(default)]
    pub granules: Vec<u8>,
    /// `__local` objects with a write the pass does not instrument (written inside a macro,
    /// through a pointer it cannot attribute, handed to a helper or a built-in): their shadow
    /// never learns of that write, so uninitialised reads of them are not reported (the
    /// engine says so) rather than reported falsely.
    #[serde(default)]
    pub unseen_writes: Vec<UnseenWrite>,
    /// Its arguments' names, by index: an access in a helper is written with the helper's
    /// parameter name, but its finding names the kernel argument the object is.
    #[serde(default)]
    pub arg_names: Vec<String>,
}

/// A `__local` object's first write that the pass does not instrument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnseenWrite {
    /// The object (arguments, then statics).
    pub object: u32,
    /// Its name.
    pub name: String,
    /// 1-based line of the write.
    pub line: u32,
}

impl SanitizedKernel {
    /// Length of the extents argument (in `ulong`s).
    pub fn extents_len(&self) -> usize {
        2 * (self.args as usize + self.statics.len()) + 2
    }

    /// Index in the extents of the `__local` shadow words per work-group.
    pub fn stride_index(&self) -> usize {
        2 * (self.args as usize + self.statics.len())
    }

    /// Bytes per shadow entry of object `obj` (arguments, then statics).
    pub fn granule_bytes(&self, obj: usize) -> u64 {
        1 << self.granules.get(obj).copied().unwrap_or(2).min(2)
    }
}

/// One instrumented access.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// Kernel.
    pub kernel: String,
    /// 1-based line in the user's text.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// The object's name (argument or array).
    pub object: String,
    /// `global`, `constant` or `local`.
    pub space: String,
    /// An atomic access (exempt from race checks).
    pub atomic: bool,
    /// Where the access is written when that is not its line: an access written in a macro
    /// body is checked (and reported) at the macro's use, and this names the macro's line.
    #[serde(default)]
    pub note: Option<String>,
}

/// Something the checks cannot see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unchecked {
    /// The function it is in.
    pub function: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Why.
    pub why: String,
}

/// The instrumented program.
#[derive(Debug, Clone)]
pub struct Sanitized {
    /// Source to build (prelude, `#line 1`, the user's edited text).
    pub source: String,
    /// The map.
    pub map: SanitizeMap,
}

/// How an access uses memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Read,
    Write,
    ReadWrite,
    /// `&E`: an address, not an access.
    Address,
    /// An atomic built-in's pointer operand.
    Atomic,
}

impl Use {
    fn mode(self) -> u32 {
        match self {
            Use::Read | Use::Address => 1,
            Use::Write => 2,
            Use::ReadWrite => 3,
            Use::Atomic => 7,
        }
    }
}

/// The device code every checker uses. The shadow updates are `__CLTRAP_SLOW` (not inlined):
/// inlined into a kernel whose barrier sits in a loop, they crashed PoCL 3.1's LLVM 15
/// (instcombine, while it built the work-group function).
fn common_prelude() -> String {
    format!(
        "\
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 120
#define __CLTRAP_SFN static inline
#define __CLTRAP_SLOW static __attribute__((noinline))
#else
#define __CLTRAP_SFN
#define __CLTRAP_SLOW __attribute__((noinline))
#endif
__CLTRAP_SFN uint __cltrap_group_linear(void) {{ return (uint)(get_group_id(0) + get_num_groups(0) * (get_group_id(1) + get_num_groups(1) * get_group_id(2))); }}
__CLTRAP_SFN uint __cltrap_local_linear(void) {{ return (uint)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2))); }}
__CLTRAP_SFN void __cltrap_report(__global uint* r, uint kind, uint site, uint osite, uint obj, long off, uint other, uint size, uint mode) {{ uint i = atomic_inc(r); if (i >= r[1]) return; __global uint* e = r + {HEADER_WORDS}u + i * {RECORD_WORDS}u; e[0] = kind; e[1] = site; e[2] = osite; e[3] = obj; e[4] = (uint)((ulong)off); e[5] = (uint)((ulong)off >> 32); e[6] = (uint)get_global_id(0); e[7] = (uint)get_global_id(1); e[8] = (uint)get_global_id(2); e[9] = (uint)get_group_id(0); e[10] = (uint)get_group_id(1); e[11] = (uint)get_group_id(2); e[12] = other; e[13] = size; e[14] = mode; e[15] = 0u; }}
"
    )
}

/// Rewrites every kernel of `p` so its attributable accesses are checked (see the module doc).
pub fn sanitize(p: &Program) -> Result<Sanitized, KernelError> {
    let mut edits = Edits::new();
    let mut map = SanitizeMap {
        kernels: Vec::new(),
        sites: Vec::new(),
        unchecked: Vec::new(),
    };
    let barrier_names: BTreeSet<String> = races::BARRIERS.iter().map(|s| s.to_string()).collect();
    let mut barrier_helpers = callers_closure(p, &barrier_names);
    for b in races::BARRIERS {
        barrier_helpers.remove(*b);
    }
    let plan = helpers::plan(p);
    // Barriers written in macro bodies count themselves when every function expanding them
    // is instrumented (see `barriers`).
    let macro_barriers = barriers::macro_barriers(p);
    let rewrite_macros = !macro_barriers.calls.is_empty()
        && p.functions.iter().all(|f| {
            let Some(body) = &f.body else { return true };
            let instrumented = if f.is_kernel {
                f.span.is_some()
            } else {
                plan.order.contains(&f.name)
            };
            instrumented || !barriers::uses_macro_barriers(p, body, &barrier_names, &macro_barriers)
        });
    let rewritten = if rewrite_macros {
        barriers::rewrite_macros(&macro_barriers, &mut edits);
        Some(&macro_barriers)
    } else {
        None
    };
    // Helpers first, callees before callers: a caller's checks need what its callees do with
    // the pointers it hands them.
    let mut infos: BTreeMap<String, HelperInfo> = BTreeMap::new();
    for name in &plan.order {
        let Some(f) = p.function(name) else { continue };
        let info = instrument_helper(
            p,
            f,
            &infos,
            &barrier_names,
            rewritten,
            &mut edits,
            &mut map,
        )?;
        infos.insert(name.clone(), info);
    }
    let mut granule_defines = String::new();
    let decl = "__global uint* __cltrap_rep, __global const ulong* __cltrap_ext, __global uint* __cltrap_gsh, __global uint* __cltrap_lsh";
    for f in &p.functions {
        let Some(body) = &f.body else {
            if f.is_kernel && f.span.is_some() {
                add_param(&mut edits, p, f, decl)?;
            } else if !f.is_kernel && infos.contains_key(&f.name) {
                // A declaration of an instrumented helper takes the same extra parameters.
                if let Some(def) = p.function(&f.name) {
                    add_param(&mut edits, p, f, &helpers::extra_params(&def.params))?;
                }
            }
            continue;
        };
        if !f.is_kernel {
            if let Some(why) = plan.excluded.get(&f.name) {
                note_helper(p, f, why, &mut map.unchecked);
            }
            continue;
        }
        if f.span.is_none() {
            return Err(KernelError::Unsupported {
                construct: format!("kernel `{}` defined in an included header", f.name),
                line: 0,
                col: 0,
                why: "only the main program text can be rewritten".into(),
            });
        }
        let args = add_param(&mut edits, p, f, decl)?;
        let scope = Scope::of_kernel(f);
        let mut kernel = SanitizedKernel {
            name: f.name.clone(),
            args,
            statics: scope
                .objects
                .iter()
                .filter_map(|o| match o.origin {
                    Origin::Static { bytes, .. } => Some((o.name.clone(), bytes)),
                    _ => None,
                })
                .collect(),
            no_local_shadow: None,
            helpers: reachable(p, f),
            granules: Vec::new(),
            unseen_writes: Vec::new(),
            arg_names: f.params.iter().map(|a| a.name.clone()).collect(),
        };
        // A helper that waits at a barrier counts it in the caller's interval counter when it
        // is instrumented; one that is not leaves the intervals unknown.
        if let Some(h) = kernel
            .helpers
            .iter()
            .find(|c| barrier_helpers.contains(*c) && !infos.contains_key(*c))
        {
            kernel.no_local_shadow = Some(format!(
                "it calls `{h}`, which waits at a barrier the pass does not count"
            ));
        }
        if let Some(why) = kernel
            .helpers
            .iter()
            .find_map(|c| infos.get(c).and_then(|i| i.barrier_problem.clone()))
        {
            kernel.no_local_shadow.get_or_insert(why);
        }
        if let Some(why) = barriers::count_barriers(
            p,
            body,
            &barrier_names,
            "__cltrap_ep",
            rewritten,
            &mut edits,
        ) {
            kernel.no_local_shadow.get_or_insert(why);
        }
        // The kernel's prologue, on the line of its opening brace.
        let mut prologue = format!(
            " uint __cltrap_ep = 0u; ulong __cltrap_lbase = (ulong)__cltrap_group_linear() * __cltrap_ext[{}];",
            kernel.stride_index()
        );
        if rewritten.is_some() {
            // The barrier macros count through it (see `barriers`).
            prologue.push_str(" uint* __cltrap_epp = &__cltrap_ep;");
        }
        let has_local = scope.objects.iter().any(|o| o.space == Space::Local);
        if has_local {
            prologue.push_str(" __local ulong __cltrap_ls[16];");
        }
        for o in &scope.objects {
            if let Origin::Arg { assigned: true, .. } = o.origin {
                let q = o.space.qualifier();
                prologue.push_str(&format!(
                    " {q} char* __cltrap_b{id} = ({q} char*){name};",
                    id = o.id,
                    name = o.name
                ));
            }
        }
        edits.insert(body.span.start + 1, prologue, 0);
        let index = map.kernels.len();
        let mut w = Walker {
            p,
            scope: &scope,
            kernel: &kernel,
            index,
            edits: &mut edits,
            sites: &mut map.sites,
            unchecked: &mut map.unchecked,
            smallest: BTreeMap::new(),
            unseen: BTreeMap::new(),
            unseen_any: None,
            macro_bases: BTreeMap::new(),
            helper: false,
            infos: &infos,
            ls: if has_local {
                "__cltrap_ls"
            } else {
                "(__local ulong*)0"
            },
        };
        w.walk_body(body);
        // `__local` objects with writes the shadow does not see: no uninitialised reads.
        let unseen = std::mem::take(&mut w.unseen);
        // Each object's granule, from its smallest access (unknown size: bytes).
        let smallest = std::mem::take(&mut w.smallest);
        kernel.unseen_writes = unseen
            .iter()
            .map(|(&object, &(line, _))| UnseenWrite {
                object,
                name: scope
                    .object(object)
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
                line,
            })
            .collect();
        let objects = kernel.args as usize + kernel.statics.len();
        kernel.granules = (0..objects as u32)
            .map(|o| match smallest.get(&o) {
                Some(Some(b)) => b.trailing_zeros().min(2) as u8,
                Some(None) => 0,
                None => 2,
            })
            .collect();
        for (o, g) in kernel.granules.iter().enumerate() {
            granule_defines.push_str(&format!("#define __CLTRAP_GS_{index}_{o} {g}u\n"));
        }
        map.kernels.push(kernel);
    }
    let body = edits.apply(&p.source)?;
    let prelude = format!(
        "{}{}{}{}{}{granule_defines}",
        common_prelude(),
        barriers::prelude(),
        uninit::prelude(),
        races::prelude(),
        bounds::prelude()
    );
    Ok(Sanitized {
        source: with_prelude(&prelude, &body),
        map,
    })
}

/// What an instrumented helper does with the pointers it is handed, for its callers.
#[derive(Debug, Default)]
struct HelperInfo {
    /// Per parameter: the space of its descriptor (`None`: no descriptor).
    spaces: Vec<Option<Space>>,
    /// Per parameter with a descriptor: the fewest bytes one checked access through it covers
    /// (absent: no checked access through it).
    smallest: BTreeMap<u32, Option<u32>>,
    /// Per `__local` parameter: the first write through it that is not instrumented.
    unseen: BTreeMap<u32, (u32, u32)>,
    /// A write to `__local` memory through a pointer the pass cannot attribute.
    unseen_any: Option<(u32, u32)>,
    /// Why barrier intervals cannot be counted in it (or the helpers it calls).
    barrier_problem: Option<String>,
}

/// Rewrites helper `f` like a kernel body, its objects being its pointer parameters' run-time
/// descriptors (see `helpers`).
fn instrument_helper(
    p: &Program,
    f: &Function,
    infos: &BTreeMap<String, HelperInfo>,
    barrier_names: &BTreeSet<String>,
    rewritten: Option<&barriers::MacroBarriers>,
    edits: &mut Edits,
    map: &mut SanitizeMap,
) -> Result<HelperInfo, KernelError> {
    let Some(body) = &f.body else {
        return Ok(HelperInfo::default());
    };
    add_param(edits, p, f, &helpers::extra_params(&f.params))?;
    let scope = Scope::of_kernel(f);
    let mut barrier_problem =
        barriers::count_barriers(p, body, barrier_names, "(*__cltrap_epp)", rewritten, edits);
    for c in &f.calls {
        if barrier_problem.is_none() {
            barrier_problem = infos.get(c).and_then(|i| i.barrier_problem.clone());
        }
    }
    let frame = SanitizedKernel {
        name: f.name.clone(),
        args: f.params.len() as u32,
        statics: Vec::new(),
        no_local_shadow: None,
        helpers: Vec::new(),
        granules: Vec::new(),
        unseen_writes: Vec::new(),
        arg_names: Vec::new(),
    };
    let mut w = Walker {
        p,
        scope: &scope,
        kernel: &frame,
        index: 0,
        edits,
        sites: &mut map.sites,
        unchecked: &mut map.unchecked,
        smallest: BTreeMap::new(),
        unseen: BTreeMap::new(),
        unseen_any: None,
        macro_bases: BTreeMap::new(),
        helper: true,
        infos,
        ls: "__cltrap_ls",
    };
    w.walk_body(body);
    Ok(HelperInfo {
        spaces: f.params.iter().map(helpers::descriptor_space).collect(),
        smallest: std::mem::take(&mut w.smallest),
        unseen: std::mem::take(&mut w.unseen),
        unseen_any: w.unseen_any,
        barrier_problem,
    })
}

/// The functions of `p` that `f` calls, directly or through others.
fn reachable(p: &Program, f: &Function) -> Vec<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<&String> = f.calls.iter().collect();
    while let Some(c) = todo.pop() {
        if let Some(g) = p.function(c) {
            if !g.is_kernel && seen.insert(c.clone()) {
                todo.extend(g.calls.iter());
            }
        }
    }
    seen.into_iter().collect()
}

/// A helper that is not instrumented (see `helpers::plan`): each of its accesses is named,
/// with why.
fn note_helper(p: &Program, f: &Function, why: &str, out: &mut Vec<Unchecked>) {
    let Some(body) = &f.body else { return };
    if f.span.is_none() {
        return;
    }
    visit_exprs(body, &mut |e| {
        if let Some(ptr) = access_pointer(e) {
            if Space::of_type(&ptr.ty).is_some() {
                let (line, column) = p.line_col(e.span.start);
                out.push(Unchecked {
                    function: f.name.clone(),
                    line,
                    column,
                    why: format!(
                        "in helper function `{}`, which is not instrumented: {why}",
                        f.name
                    ),
                });
            }
        }
    });
}

/// `vloadN` (a read) and `vstoreN` (a write) of `N` elements, by name.
fn vector_load_store(callee: &str) -> Option<(u32, Use)> {
    let (rest, ctx) = if let Some(r) = callee.strip_prefix("vload") {
        (r, Use::Read)
    } else if let Some(r) = callee.strip_prefix("vstore") {
        (r, Use::Write)
    } else {
        return None;
    };
    let n = match rest {
        "2" => 2,
        "3" => 3,
        "4" => 4,
        "8" => 8,
        "16" => 16,
        _ => return None,
    };
    Some((n, ctx))
}

/// Whether evaluating `e` twice is the same as once: no assignment, increment, call other
/// than a work-item function, or memory access through a pointer.
fn pure(e: &Expr) -> bool {
    let ok = match &e.kind {
        ExprKind::Binary { op: Some(op), .. } => !op.is_assignment(),
        ExprKind::Binary { op: None, .. } => false,
        ExprKind::Unary { op: Some(op), .. } => !matches!(
            op,
            UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec | UnOp::Deref
        ),
        ExprKind::Call { callee, .. } => matches!(
            callee.as_str(),
            "get_global_id"
                | "get_local_id"
                | "get_group_id"
                | "get_global_size"
                | "get_local_size"
                | "get_num_groups"
                | "get_global_offset"
        ),
        // A private array's element: not an access the pass instruments.
        ExprKind::Index { base, .. } => {
            Space::of_type(&base.ty).is_none() && Space::of_type(&base.peel().ty).is_none()
        }
        ExprKind::Member { arrow, .. } => !arrow,
        ExprKind::DeclRef(_)
        | ExprKind::IntLit(_)
        | ExprKind::FloatLit(_)
        | ExprKind::Paren(_)
        | ExprKind::Implicit(_)
        | ExprKind::Cast { .. }
        | ExprKind::Conditional { .. }
        | ExprKind::Swizzle { .. }
        | ExprKind::SizeOf => true,
        _ => false,
    };
    ok && e.children().into_iter().all(pure)
}

/// The pointer operand of a memory access (`P[i]`, `*P`, `P->f`), if `e` is one.
fn access_pointer(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Index { base, .. } if !e.ty.contains('[') => Some(base),
        ExprKind::Unary {
            op: Some(UnOp::Deref),
            operand,
        } => Some(operand),
        ExprKind::Member {
            base, arrow: true, ..
        } if !e.ty.contains('[') => Some(base),
        _ => None,
    }
}

/// The element type of an access, without address-space words (`const uint`), when the pass
/// can spell it in a cast.
fn spelled(ty: &str) -> Option<String> {
    if ty.is_empty() || ty.contains('[') || ty.contains('(') || ty.contains(':') {
        return None;
    }
    let words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "__global"
                    | "global"
                    | "__local"
                    | "local"
                    | "__constant"
                    | "constant"
                    | "__private"
                    | "private"
            )
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The pointee of a pointer type spelling (`volatile __global int *` → `volatile int`).
fn pointee_of(ty: &str) -> Option<String> {
    let star = ty.rfind('*')?;
    spelled(&ty[..star])
}

struct Walker<'a> {
    p: &'a Program,
    scope: &'a Scope,
    kernel: &'a SanitizedKernel,
    /// The kernel's index in the map (names its granule macros).
    index: usize,
    edits: &'a mut Edits,
    sites: &'a mut Vec<Site>,
    unchecked: &'a mut Vec<Unchecked>,
    /// Per object: the fewest bytes one checked access of it covers (`None`: a size the pass
    /// cannot compute).
    smallest: BTreeMap<u32, Option<u32>>,
    /// `__local` objects with a write the pass does not instrument: where the first one is.
    unseen: BTreeMap<u32, (u32, u32)>,
    /// In a helper: a `__local` write through a pointer it cannot attribute (its callers then
    /// treat every `__local` object they hand over as written unseen).
    unseen_any: Option<(u32, u32)>,
    /// Whether the function is a helper (its objects are its parameters' descriptors).
    helper: bool,
    /// The instrumented helpers done so far.
    infos: &'a BTreeMap<String, HelperInfo>,
    /// The `__local` scratch area, as an expression.
    ls: &'static str,
    /// Per macro use (its start): how many index accesses of the function its expansion
    /// holds (one may be checked at the use; see `macros`).
    macro_bases: BTreeMap<u32, usize>,
}

impl Walker<'_> {
    fn not_checked(&mut self, e: &Expr, why: impl Into<String>) {
        let (line, column) = self.p.line_col(e.span.start);
        self.unchecked.push(Unchecked {
            function: self.kernel.name.clone(),
            line,
            column,
            why: why.into(),
        });
    }

    /// `e` may write `__local` memory through `ptr` without the shadow seeing it: the object
    /// it points into, or every `__local` object when the pass cannot tell which.
    fn unseen_write(&mut self, e: &Expr, ptr: &Expr) {
        let local = |ty: &str| Space::of_type(ty) == Some(Space::Local);
        if !local(&ptr.ty) && !local(&ptr.peel().ty) {
            return;
        }
        // Nothing is written through a pointer to `const` (`async_work_group_copy`'s source).
        let to_const =
            |ty: &str| pointee_of(ty).is_some_and(|t| t.split_whitespace().any(|w| w == "const"));
        if to_const(&ptr.ty) {
            return;
        }
        let at = self.p.line_col(e.span.start);
        self.mark_unseen(self.scope.derive(ptr), at);
    }

    /// Object `k` (`None`: any `__local` object) has a write the shadow does not see, at `at`.
    fn mark_unseen(&mut self, k: Option<u32>, at: (u32, u32)) {
        let objects: Vec<u32> = match k {
            Some(k) => vec![k],
            None => {
                if self.helper {
                    self.unseen_any.get_or_insert(at);
                }
                self.scope
                    .objects
                    .iter()
                    .filter(|o| o.space == Space::Local)
                    .map(|o| o.id)
                    .collect()
            }
        };
        for k in objects {
            self.unseen.entry(k).or_insert(at);
        }
    }

    /// Walks every expression of a function body.
    fn walk_body(&mut self, body: &crate::model::Stmt) {
        visit_exprs(body, &mut |e| {
            if matches!(e.kind, ExprKind::Index { .. }) && !e.span.is_exact() {
                *self.macro_bases.entry(e.span.start).or_default() += 1;
            }
        });
        crate::model::visit_stmts(body, &mut |st| {
            use crate::model::StmtKind;
            match &st.kind {
                StmtKind::Decl(vars) => vars
                    .iter()
                    .filter_map(|v| v.init.as_ref())
                    .for_each(|e| self.walk(e, Use::Read, 1)),
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.walk(e, Use::Read, 1),
                StmtKind::If { cond, .. }
                | StmtKind::While { cond, .. }
                | StmtKind::Do { cond, .. }
                | StmtKind::Switch { cond, .. } => self.walk(cond, Use::Read, 1),
                StmtKind::For { cond, inc, .. } => cond
                    .iter()
                    .chain(inc.iter())
                    .for_each(|e| self.walk(e, Use::Read, 1)),
                _ => {}
            }
        });
    }

    /// A call to an instrumented helper: the checker's state and, per pointer parameter, the
    /// descriptor of the object the argument points into go in as extra arguments.
    fn helper_call(&mut self, e: &Expr, callee: &str, args: &[Expr], d: i64) {
        let Some(info) = self.infos.get(callee) else {
            return;
        };
        let epoch = if self.helper {
            "__cltrap_epp"
        } else {
            "&__cltrap_ep"
        };
        let mut extra = format!("__cltrap_rep, {epoch}, {}", self.ls);
        for (i, a) in args.iter().enumerate() {
            let Some(Some(space)) = info.spaces.get(i) else {
                continue;
            };
            let i = i as u32;
            let k = self.scope.derive(a);
            let t = k.and_then(|k| self.target(k).map(|t| (k, t)));
            match t {
                Some((k, t)) if t.space == *space => {
                    extra.push_str(&format!(
                        ", {}, (ulong)({}), {}, {}, {}",
                        t.base, t.extent, t.shadow, t.object, t.granule
                    ));
                    if let Some(bytes) = info.smallest.get(&i) {
                        self.note_size(k, *bytes);
                    }
                    if let Some(w) = info.unseen.get(&i) {
                        self.mark_unseen(Some(k), *w);
                    }
                }
                _ => {
                    // No object: the descriptor lets every access through it pass unchecked.
                    extra.push_str(&format!(
                        ", ({} char*)0, 0xFFFFFFFFFFFFFFFFul, (__global uint*)0, 0xFFFFFFFFu, 2u",
                        space.qualifier()
                    ));
                    if info.smallest.contains_key(&i) {
                        self.not_checked(a, format!("the pointer handed to helper `{callee}` is not known to point into one object: `{callee}`'s accesses through it are not checked from this call"));
                    }
                    if let Some(w) = info.unseen.get(&i) {
                        self.mark_unseen(None, *w);
                    }
                }
            }
        }
        if let Some(w) = info.unseen_any {
            self.mark_unseen(None, w);
        }
        let text = if args.is_empty() {
            extra
        } else {
            format!(", {extra}")
        };
        // After the arguments' own wrappers, which end at the same offset.
        self.edits.insert(e.span.end - 1, text, i64::MAX / 2);
        for a in args {
            self.walk(a, Use::Read, d);
        }
    }

    /// `e` may be assigned by an operator the model does not know (see `walk`).
    fn maybe_written(&mut self, e: &Expr) {
        let mut x = e.peel();
        while let ExprKind::Member {
            base, arrow: false, ..
        }
        | ExprKind::Swizzle { base, .. } = &x.kind
        {
            x = base.peel();
        }
        match &x.kind {
            // `*p` with the `*` inside the macro.
            ExprKind::Unary { op: None, operand } if operand.ty.contains('*') => {
                self.unseen_write(x, operand)
            }
            _ => {
                if let Some(ptr) = access_pointer(x) {
                    self.unseen_write(x, ptr);
                }
            }
        }
    }

    fn walk(&mut self, e: &Expr, ctx: Use, depth: i64) {
        let d = depth + 1;
        match &e.kind {
            ExprKind::Binary {
                op: Some(op),
                lhs,
                rhs,
                ..
            } if op.is_assignment() => {
                let l = if *op == BinOp::Assign {
                    Use::Write
                } else {
                    Use::ReadWrite
                };
                self.walk(lhs, l, d);
                self.walk(rhs, Use::Read, d);
            }
            // An operator written inside a macro whose expansion was not recovered (`Add(c,a,b)`
            // expanding to `c = a + b`): its left side (or operand) may be written. It is walked
            // as a read, and a `__local` object there is one with a write the shadow misses.
            ExprKind::Binary {
                op: None, lhs, rhs, ..
            } => {
                self.maybe_written(lhs);
                self.walk(lhs, Use::Read, d);
                self.walk(rhs, Use::Read, d);
            }
            ExprKind::Unary { op: None, operand } => {
                self.maybe_written(operand);
                self.walk(operand, Use::Read, d);
            }
            ExprKind::Unary {
                op: Some(UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec),
                operand,
            } => self.walk(operand, Use::ReadWrite, d),
            ExprKind::Unary {
                op: Some(UnOp::AddrOf),
                operand,
            } => self.walk(operand, Use::Address, d),
            // A swizzle reads or writes its whole vector: the compiled code loads the element,
            // and a store to some lanes stores all of them (Oclgrind sees the same accesses).
            ExprKind::Member {
                base, arrow: false, ..
            }
            | ExprKind::Swizzle { base, .. } => self.walk(base, ctx, d),
            ExprKind::Paren(x) | ExprKind::Implicit(x) => self.walk(x, ctx, d),
            ExprKind::SizeOf => {}
            ExprKind::Call { callee, args, .. } => self.call(e, callee, args, d),
            _ => match access_pointer(e) {
                Some(ptr) => self.access(e, ptr, ctx, d),
                None => {
                    for c in e.children() {
                        self.walk(c, Use::Read, d);
                    }
                }
            },
        }
    }

    fn call(&mut self, e: &Expr, callee: &str, args: &[Expr], d: i64) {
        if self.infos.contains_key(callee) {
            return self.helper_call(e, callee, args, d);
        }
        if matches!(
            callee,
            "async_work_group_copy" | "async_work_group_strided_copy"
        ) && self.p.function(callee).is_none()
            && self.async_copy(callee, args, d)
        {
            return;
        }
        if (callee.starts_with("read_image") || callee.starts_with("write_image"))
            && self.p.function(callee).is_none()
        {
            // Images are opaque to the rewrite (no pointer to shadow): the access is counted
            // as not checked, so a kernel that only reads and writes images is never "clean".
            self.not_checked(
                e,
                format!(
                    "an image access (`{callee}`): images are checked by --engine oclgrind only"
                ),
            );
        }
        if let Some((n, ctx)) = vector_load_store(callee) {
            if self.p.function(callee).is_none() && self.vector_access(e, n, ctx, args, d) {
                return;
            }
        }
        let atomic = callee.starts_with("atomic_") || callee.starts_with("atom_");
        for (i, a) in args.iter().enumerate() {
            if atomic && i == 0 {
                let inner = a.peel();
                if let ExprKind::Unary {
                    op: Some(UnOp::AddrOf),
                    operand,
                } = &inner.kind
                {
                    if let Some(ptr) = access_pointer(operand.peel()) {
                        self.access(operand.peel(), ptr, Use::Atomic, d);
                        continue;
                    }
                }
                if self.pointer_operand(a, d) {
                    continue;
                }
                self.unseen_write(a, a);
            } else if !atomic
                && Space::of_type(&a.ty).is_some()
                && a.ty.contains('*')
                && self.p.function(callee).is_none()
            {
                // Not a function of the program's own text: an OpenCL built-in, or a helper
                // defined in a header (hashcat's `apply_rules`), neither of which is rewritten.
                self.not_checked(a, format!("a pointer handed to `{callee}` (a built-in or a function defined outside the program's own text), whose accesses are not checked"));
            }
            if !atomic && a.ty.contains('*') {
                // A helper or built-in may write through it (`async_work_group_copy`).
                self.unseen_write(a, a);
            }
            self.walk(a, Use::Read, d);
        }
        let _ = e;
    }

    /// `vloadN(offset, P)` / `vstoreN(data, offset, P)`: the `N` elements at `P + offset * N`
    /// checked as one access. `P` becomes `CHECKED(P + offset * N) - offset * N`, so the
    /// offset's text is repeated: it must have no side effects and no access of its own.
    /// Returns false (the caller names the pointer as not checked) when it cannot be done.
    fn vector_access(&mut self, e: &Expr, n: u32, ctx: Use, args: &[Expr], d: i64) -> bool {
        let (offset, ptr) = match (ctx, args) {
            (Use::Read, [o, p]) | (Use::Write, [_, o, p]) => (o, p),
            _ => return false,
        };
        let Some(k) = self.scope.derive(ptr) else {
            return false;
        };
        let Some(pointee) = pointee_of(&ptr.ty) else {
            return false;
        };
        let Some(scalar) = element_bytes(&pointee) else {
            return false;
        };
        if !ptr.span.is_exact() || !offset.span.is_exact() || !e.span.is_exact() || !pure(offset) {
            return false;
        }
        let Some(off) = self
            .p
            .source
            .get(offset.span.start as usize..offset.span.end as usize)
        else {
            return false;
        };
        let Some(t) = self.target(k) else {
            return false;
        };
        let site = self.site(e, k, false);
        self.note_size(k, Some(scalar as u32));
        let size = format!("{}u", scalar * n as u64);
        let (open, close) =
            bounds::checked_range(&t.as_target(), &pointee, &size, site, ctx.mode());
        let step = format!("(size_t)({off}) * {n}u");
        self.edits.wrap(
            ptr.span.start,
            ptr.span.end,
            format!("({open}("),
            format!(") + {step}{close} - {step})"),
            d,
        );
        for a in args {
            self.walk(a, Use::Read, d);
        }
        true
    }

    /// `async_work_group_copy(dst, src, num, event)` (and the strided copy, whose `__global`
    /// side spans `(num - 1) * stride + 1` elements): both ranges are checked against their
    /// objects before the copy, and a copy with a range out of bounds copies nothing (its
    /// `num` becomes 0) after the overrun is reported once per work-group. The copy is the
    /// group's, done between the call and `wait_group_events`: it does not enter the race
    /// shadows, and a `__local` destination counts as written where the shadow does not see it
    /// (no uninitialised read of it is reported). The pointer and count texts are repeated, so
    /// they must have no side effects; returns false (named not checked) otherwise.
    fn async_copy(&mut self, callee: &str, args: &[Expr], d: i64) -> bool {
        let (dst, src, num, stride) = match (callee == "async_work_group_strided_copy", args) {
            (false, [dst, src, num, _]) => (dst, src, num, None),
            (true, [dst, src, num, stride, _]) => (dst, src, num, Some(stride)),
            _ => return false,
        };
        let text = |x: &Expr| -> Option<String> {
            if !x.span.is_exact() || !pure(x) {
                return None;
            }
            self.p
                .source
                .get(x.span.start as usize..x.span.end as usize)
                .map(str::to_string)
        };
        let (Some(dt), Some(st), Some(nt)) = (text(dst), text(src), text(num)) else {
            return false;
        };
        let stride = match stride.map(text) {
            Some(None) => return false,
            Some(Some(t)) => Some(t),
            None => None,
        };
        let Some(pointee) = pointee_of(&dst.ty) else {
            return false;
        };
        let (Some(kd), Some(ks)) = (self.scope.derive(dst), self.scope.derive(src)) else {
            return false;
        };
        let (Some(td), Some(ts)) = (self.target(kd), self.target(ks)) else {
            return false;
        };
        if td.space == Space::Constant || ts.space == Space::Constant || !num.span.is_exact() {
            return false;
        }
        let elems = format!("(ulong)({nt})");
        let global_elems = match &stride {
            Some(s) => {
                format!("((ulong)({nt}) == 0ul ? 0ul : ((ulong)({nt}) - 1ul) * (ulong)({s}) + 1ul)")
            }
            None => elems.clone(),
        };
        let bytes = |space: Space| {
            let n = if space == Space::Global {
                &global_elems
            } else {
                &elems
            };
            format!("{n} * sizeof({pointee})")
        };
        let sd = self.site(dst, kd, false);
        let ss = self.site(src, ks, false);
        let (Some(cd), Some(cs)) = (
            bounds::range_in_bounds(&td.as_target(), &dt, &bytes(td.space), sd, 2),
            bounds::range_in_bounds(&ts.as_target(), &st, &bytes(ts.space), ss, 1),
        ) else {
            return false;
        };
        self.edits.wrap(
            num.span.start,
            num.span.end,
            format!("(({cd} & {cs}) ? ("),
            ") : 0)",
            d,
        );
        self.unseen_write(dst, dst);
        for a in args {
            self.walk(a, Use::Read, d);
        }
        true
    }

    /// An atomic built-in's pointer operand `P` (not written `&E`): checked as a whole.
    fn pointer_operand(&mut self, a: &Expr, d: i64) -> bool {
        let Some(k) = self.scope.derive(a) else {
            return false;
        };
        let Some(pointee) = pointee_of(&a.ty) else {
            return false;
        };
        if !a.span.is_exact() {
            return false;
        }
        let Some(t) = self.target(k) else {
            return false;
        };
        let site = self.site(a, k, true);
        self.note_size(k, element_bytes(&pointee).map(|b| b as u32));
        let (open, close) =
            bounds::checked_address(&t.as_target(), &pointee, site, Use::Atomic.mode());
        self.edits.wrap(a.span.start, a.span.end, open, close, d);
        self.walk(a, Use::Read, d);
        true
    }

    /// Object `k` has an access of `bytes` (unknown: `None`).
    fn note_size(&mut self, k: u32, bytes: Option<u32>) {
        let slot = self.smallest.entry(k).or_insert(bytes);
        *slot = match (*slot, bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
    }

    fn access(&mut self, e: &Expr, ptr: &Expr, ctx: Use, d: i64) {
        let space = Space::of_type(&ptr.ty).or_else(|| Space::of_type(&ptr.peel().ty));
        if ctx == Use::Address || space.is_none() {
            for c in e.children() {
                self.walk(c, Use::Read, d);
            }
            return;
        }
        let checked: Result<_, &str> = (|| {
            let k = self.scope.derive(ptr).ok_or(
                "the pointer is not known to point into a kernel argument or a `__local` array",
            )?;
            let ranges = if e.span.is_exact() {
                None
            } else {
                Some(self.macro_index(e, ptr)?)
            };
            let pointee = spelled(&e.ty).ok_or("the accessed type cannot be spelled in a cast")?;
            let t = self.target(k).ok_or("the object is not addressable")?;
            Ok((k, pointee, t, ranges))
        })();
        match checked {
            Ok((k, pointee, t, Some((pr, ir)))) => {
                // `P[I]` in a macro body, `P` and `I` the macro's arguments: the argument `P`
                // becomes `CHECKED(P + I) - I`, checked at the macro's use.
                let site = self.site(e, k, ctx == Use::Atomic);
                if let Some(note) = self.macro_note(e) {
                    if let Some(s) = self.sites.get_mut(site as usize) {
                        s.note = Some(note);
                    }
                }
                self.note_size(k, element_bytes(&pointee).map(|b| b as u32));
                let idx = self
                    .p
                    .source
                    .get(ir.0 as usize..ir.1 as usize)
                    .unwrap_or("0");
                let step = format!("(long)({idx})");
                let (open, close) =
                    bounds::checked_address(&t.as_target(), &pointee, site, ctx.mode());
                self.edits.wrap(
                    pr.0,
                    pr.1,
                    format!("({open}("),
                    format!(") + {step}{close} - {step})"),
                    d,
                );
            }
            Ok((k, pointee, t, None)) => {
                let site = self.site(e, k, ctx == Use::Atomic);
                self.note_size(k, element_bytes(&pointee).map(|b| b as u32));
                let (open, close) =
                    bounds::checked_address(&t.as_target(), &pointee, site, ctx.mode());
                self.edits.wrap(
                    e.span.start,
                    e.span.end,
                    format!("(*{open}&("),
                    format!("){close})"),
                    d,
                );
            }
            Err(why) => {
                self.not_checked(e, why);
                if ctx != Use::Read {
                    self.unseen_write(e, ptr);
                }
            }
        }
        for c in e.children() {
            self.walk(c, Use::Read, d);
        }
    }

    /// The byte ranges, at the macro's use, of the pointer and index arguments of an access
    /// `e` through `ptr` written in a macro body, when it can be checked there (`macros`): its
    /// index must also have no side effects (its text is repeated).
    fn macro_index(&self, e: &Expr, ptr: &Expr) -> Result<((u32, u32), (u32, u32)), &'static str> {
        let ExprKind::Index { base, index } = &e.kind else {
            return Err("the access is written inside a macro");
        };
        if !std::ptr::eq(base.peel(), ptr.peel()) {
            return Err("the access is written inside a macro");
        }
        let u = self
            .p
            .macro_uses
            .iter()
            .find(|u| u.start == e.span.start)
            .ok_or("the access is written inside a macro")?;
        let ranges = macros::index_arguments(self.p, u)?;
        if self.macro_bases.get(&e.span.start).copied().unwrap_or(0) != 1 {
            return Err(
                "the access is written inside a macro whose expansion holds several accesses",
            );
        }
        if !pure(index) {
            return Err(
                "the access is written inside a macro whose index argument has side effects",
            );
        }
        Ok(ranges)
    }

    /// `written in the body of macro `M` (line L)` for an access expanded from macro `M`.
    fn macro_note(&self, e: &Expr) -> Option<String> {
        let u = self
            .p
            .macro_uses
            .iter()
            .filter(|u| u.start <= e.span.start && e.span.start < u.end)
            .min_by_key(|u| u.end - u.start)?;
        let line = self.p.source.lines().position(|l| {
            let t = l.trim_start();
            t.strip_prefix('#').is_some_and(|t| {
                t.trim_start().strip_prefix("define").is_some_and(|t| {
                    t.trim_start()
                        .strip_prefix(u.name.as_str())
                        .is_some_and(|r| {
                            r.starts_with(|c: char| c == '(' || c.is_whitespace()) || r.is_empty()
                        })
                })
            })
        });
        Some(match line {
            Some(l) => format!("written in the body of macro `{}` (line {})", u.name, l + 1),
            None => format!("written in the body of macro `{}`", u.name),
        })
    }

    fn site(&mut self, e: &Expr, k: u32, atomic: bool) -> u32 {
        let (line, column) = self.p.line_col(e.span.start);
        let o = self.scope.object(k);
        self.sites.push(Site {
            kernel: self.kernel.name.clone(),
            line,
            column,
            object: o.map(|o| o.name.clone()).unwrap_or_default(),
            space: o
                .map(|o| o.space.qualifier().trim_start_matches('_').to_string())
                .unwrap_or_default(),
            atomic,
            note: None,
        });
        (self.sites.len() - 1) as u32
    }

    fn target(&self, k: u32) -> Option<OwnedTarget> {
        let o = self.scope.object(k)?;
        let q = o.space.qualifier();
        if self.helper {
            // A parameter: its descriptor, from the caller.
            let Origin::Arg { index: i, .. } = o.origin else {
                return None;
            };
            return Some(OwnedTarget {
                space: o.space,
                base: format!("__cltrap_pb{i}"),
                extent: format!("__cltrap_px{i}"),
                shadow: format!("__cltrap_ps{i}"),
                granule: format!("__cltrap_pg{i}"),
                object: format!("__cltrap_po{i}"),
                epoch: "(*__cltrap_epp)",
            });
        }
        let (base, extent, slot) = match o.origin {
            Origin::Arg { index, assigned } => (
                if assigned {
                    format!("__cltrap_b{index}")
                } else {
                    format!("(({q} char*){})", o.name)
                },
                format!("__cltrap_ext[{}]", 2 * index),
                Some(2 * index as usize + 1),
            ),
            Origin::Static { n, bytes } => (
                format!("((__local char*){})", o.name),
                format!("sizeof({})", o.name),
                bytes.map(|_| 2 * (self.kernel.args as usize + n) + 1),
            ),
        };
        let shadow = match (o.space, slot) {
            (Space::Global, Some(s)) => format!("(__cltrap_gsh + __cltrap_ext[{s}])"),
            (Space::Local, Some(s)) if self.kernel.no_local_shadow.is_none() => {
                format!("(__cltrap_lsh + __cltrap_lbase + __cltrap_ext[{s}])")
            }
            _ => "((__global uint*)0)".into(),
        };
        Some(OwnedTarget {
            space: o.space,
            base,
            extent,
            shadow,
            granule: format!("__CLTRAP_GS_{}_{k}", self.index),
            object: format!("{k}u"),
            epoch: "__cltrap_ep",
        })
    }
}

struct OwnedTarget {
    space: Space,
    base: String,
    extent: String,
    shadow: String,
    granule: String,
    object: String,
    epoch: &'static str,
}

impl OwnedTarget {
    fn as_target(&self) -> bounds::Target<'_> {
        bounds::Target {
            space: self.space,
            base: &self.base,
            extent: &self.extent,
            shadow: &self.shadow,
            granule: &self.granule,
            object: &self.object,
            epoch: self.epoch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_loads_and_stores_are_known_by_name() {
        assert_eq!(vector_load_store("vstore4"), Some((4, Use::Write)));
        assert_eq!(vector_load_store("vload16"), Some((16, Use::Read)));
        assert_eq!(vector_load_store("vload_half"), None);
        assert_eq!(vector_load_store("vstore_half4"), None);
    }

    #[test]
    fn a_local_array_written_inside_a_macro_is_one_with_an_unseen_write() {
        // CLBlast's `Add(c,a,b)`; the second `__local` array is written where the pass sees it.
        let src = "#define Add(c,a,b) c = a + b\n__kernel void k(__global float* out, __global const float* in) {\n  __local float lm[16];\n  __local float seen[16];\n  int l = get_local_id(0);\n  Add(lm[l], in[l], in[l + 16]);\n  seen[l] = in[l];\n  barrier(CLK_LOCAL_MEM_FENCE);\n  out[l] = lm[0] + seen[0];\n}\n";
        let want = vec![UnseenWrite {
            object: 2,
            name: "lm".into(),
            line: 6,
        }];
        // With the macro's operator recovered from the expansion (an assignment whose left
        // side is inside the macro), and without it (an operator the model does not know).
        let recovered = crate::parse_program(src, "").expect("parses");
        let holes = crate::frontend::parse_declarations(src, "").expect("parses");
        for p in [recovered, holes] {
            let s = sanitize(&p).expect("sanitizes");
            assert_eq!(s.map.kernels[0].unseen_writes, want);
        }
    }

    #[test]
    fn types_are_spelled_without_address_spaces() {
        assert_eq!(
            spelled("const __global unsigned int").as_deref(),
            Some("const unsigned int")
        );
        assert_eq!(spelled("__local float[4]"), None);
        assert_eq!(
            pointee_of("volatile __global int *").as_deref(),
            Some("volatile int")
        );
    }
}
