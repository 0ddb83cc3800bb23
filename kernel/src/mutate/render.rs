//! Rendering mutated programs: the schema (every mutant behind a run-time selector), one
//! mutant on its own, or the original — all with the same extra parameters and watchdog, so
//! the three run with the same arguments and time out the same way.
//!
//! Mutants nest (an operand of a mutated `<` may hold a mutated `+`), so the schema cannot be
//! a flat list of byte edits: each mutated expression ("site") is printed recursively, its
//! text with the nested sites already replaced by their own selections.

use std::collections::{BTreeMap, BTreeSet};

use super::{Mutant, Patch, DEFAULT_BUDGET, MUTANT_PARAM, WATCHDOG_PARAM};
use crate::error::KernelError;
use crate::model::{visit_exprs, visit_stmts, ExprKind, Program, Stmt, StmtKind};
use crate::rewrite::{refuse_header_functions, with_prelude};

/// A rendered program and how to call its kernels.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Source to build (prelude, `#line 1`, the user's text with the edits).
    pub source: String,
    /// Each kernel with the index of its `uint __cltrap_mutant` argument; the watchdog buffer
    /// (`__global uint*`, one element) follows it.
    pub kernels: Vec<(String, u32)>,
    /// Numbers of the mutants this program contains (selectable by the selector argument).
    pub mutants: Vec<u32>,
    /// Mutants asked for that could not live in the schema, with the reason.
    pub excluded: Vec<(u32, String)>,
    /// Mutants that live in the schema as renamed kernel copies (barrier mutants): for each,
    /// the kernel to launch in place of each original kernel it affects. A copy takes the
    /// same arguments as its original (selector and watchdog included) and holds only that
    /// mutation, unconditionally. Kernels not listed are launched by their own name.
    pub launch_names: BTreeMap<u32, BTreeMap<String, String>>,
    /// Whether a loop holds a barrier, so the barrier watchdog's budget matters (runners
    /// measure the original's need only then; see [`super::barrier_loop_budget`]).
    pub barrier_loops: bool,
}

impl Rendered {
    /// The kernel to launch for `kernel` when evaluating mutant `number` in this program.
    pub fn launch_name<'a>(&'a self, number: u32, kernel: &'a str) -> &'a str {
        self.launch_names
            .get(&number)
            .and_then(|m| m.get(kernel))
            .map_or(kernel, String::as_str)
    }
}

/// Whether a mutant goes into the schema as kernel copies rather than behind the selector.
///
/// A barrier under a run-time condition is legal when the condition is uniform, but PoCL 3.1
/// then computes wrong values in the code after it (seen on the `mutate_mix` fixture): its
/// work-group loops are formed around barriers at compile time. So a barrier mutant gets a
/// renamed copy of every function that leads to it, with the mutation applied unconditionally,
/// in the same program — still one compile. Fence removals (`mem_fence`, ...) are not
/// barriers and stay behind the selector (checked against single compiles in the tests).
/// A `__local` array turned private changes a declaration, which no run-time condition can
/// select either: it gets a kernel copy too (a driver compiles a copy for its work-group size
/// when it first runs, far cheaper than a program of its own).
pub fn needs_kernel_copy(m: &Mutant) -> bool {
    matches!(
        m.operator,
        super::Operator::BarrierRemoval
            | super::Operator::BarrierFence
            | super::Operator::LocalToPrivate
    )
}

/// The name of mutant `number`'s copy of function `name`.
fn copy_name(number: u32, name: &str) -> String {
    format!("__cltrap_m{number}_{name}")
}

const WATCHDOG_CHECK: &str =
    "if (__cltrap_budget == 0u) { __cltrap_wd[0] = 1u; break; } --__cltrap_budget; ";

/// The watchdog of a loop with a barrier (see [`super::barrier_loop_budget`]): its own per-call
/// count, so every work-item of a group breaks in the same iteration; the original (selector
/// 0) records the most iterations it needed in `__cltrap_wd[2]`.
const BARRIER_WATCHDOG_CHECK: &str = "if (__cltrap_bused == __cltrap_wd[1]) { __cltrap_wd[0] = 2u; break; } ++__cltrap_bused; if (__cltrap_mutant == 0u) atomic_max(&__cltrap_wd[2], __cltrap_bused); ";

fn prelude(atomics: bool) -> String {
    let mut s =
        format!("#ifndef __CLTRAP_BUDGET\n#define __CLTRAP_BUDGET {DEFAULT_BUDGET}u\n#endif\n");
    if atomics {
        s.push_str(
            "#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 120
#define __CLTRAP_PFN static inline __attribute__((overloadable))
#else
#define __CLTRAP_PFN __attribute__((overloadable))
#endif
#define __CLTRAP_PLAIN2(N, T, AS, E) __CLTRAP_PFN T __cltrap_plain_##N(volatile AS T* p, T v) { T o = *p; *p = (E); return o; }
#define __CLTRAP_PLAIN1(N, T, AS, E) __CLTRAP_PFN T __cltrap_plain_##N(volatile AS T* p) { T o = *p; *p = (E); return o; }
#define __CLTRAP_PLAIN_ALL(T, AS) __CLTRAP_PLAIN2(add, T, AS, o + v) __CLTRAP_PLAIN2(sub, T, AS, o - v) __CLTRAP_PLAIN2(xchg, T, AS, v) __CLTRAP_PLAIN2(min, T, AS, v < o ? v : o) __CLTRAP_PLAIN2(max, T, AS, v > o ? v : o) __CLTRAP_PLAIN2(and, T, AS, o & v) __CLTRAP_PLAIN2(or, T, AS, o | v) __CLTRAP_PLAIN2(xor, T, AS, o ^ v) __CLTRAP_PLAIN1(inc, T, AS, o + 1) __CLTRAP_PLAIN1(dec, T, AS, o - 1) __CLTRAP_PFN T __cltrap_plain_cmpxchg(volatile AS T* p, T c, T v) { T o = *p; *p = o == c ? v : o; return o; }
__CLTRAP_PLAIN_ALL(int, __global)
__CLTRAP_PLAIN_ALL(uint, __global)
__CLTRAP_PLAIN_ALL(int, __local)
__CLTRAP_PLAIN_ALL(uint, __local)
",
        );
    }
    s
}

/// One global edit: an insertion (`start == end`) or a replacement, in input order.
#[derive(Debug, Clone)]
struct Edit {
    start: u32,
    end: u32,
    text: String,
}

type Site = (u32, u32);

struct Renderer<'a> {
    src: &'a str,
    edits: &'a [Edit],
    sites: BTreeMap<Site, Vec<(u32, Vec<Patch>)>>,
}

enum Piece<'b> {
    Text(&'b str, u32),
    Site(Site),
}

impl Renderer<'_> {
    fn render(&self, start: u32, end: u32, own: Option<Site>, patches: &[Patch]) -> String {
        // (start, rank, -end, seq, piece): insertions first, then replacements, then sites
        // (outer first); anything starting inside what was already written is skipped.
        let mut items: Vec<(u32, u8, i64, usize, Piece)> = Vec::new();
        for e in self.edits {
            let inside = if e.start == e.end {
                match own {
                    Some(_) => start < e.start && e.start < end,
                    None => start <= e.start && e.start <= end,
                }
            } else {
                start <= e.start && e.end <= end
            };
            if inside {
                let rank = u8::from(e.end > e.start);
                let seq = items.len();
                items.push((
                    e.start,
                    rank,
                    -i64::from(e.end),
                    seq,
                    Piece::Text(&e.text, e.end),
                ));
            }
        }
        for p in patches {
            let rank = u8::from(p.end > p.start);
            let seq = items.len();
            items.push((
                p.start,
                rank,
                -i64::from(p.end),
                seq,
                Piece::Text(&p.text, p.end),
            ));
        }
        for (&s, _) in self.sites.range((start, 0)..) {
            if s.0 > end {
                break;
            }
            if Some(s) != own && s.1 <= end {
                let seq = items.len();
                items.push((s.0, 2, -i64::from(s.1), seq, Piece::Site(s)));
            }
        }
        items.sort_by_key(|i| (i.0, i.1, i.2, i.3));
        let mut out = String::new();
        let mut pos = start;
        for (s, _, _, _, piece) in items {
            if s < pos {
                continue;
            }
            out.push_str(&self.src[pos as usize..s as usize]);
            pos = s;
            match piece {
                Piece::Text(t, e) => {
                    out.push_str(t);
                    pos = pos.max(e);
                }
                Piece::Site(site) => {
                    out.push_str(&self.render_site(site));
                    pos = site.1;
                }
            }
        }
        out.push_str(&self.src[pos as usize..end as usize]);
        out
    }

    fn render_site(&self, site: Site) -> String {
        let original = self.render(site.0, site.1, Some(site), &[]);
        let Some(ms) = self.sites.get(&site) else {
            return original;
        };
        let mut out = String::from("(");
        for (n, patches) in ms {
            out.push_str(&format!(
                "{MUTANT_PARAM} == {n}u ? ({}) : ",
                self.render(site.0, site.1, Some(site), patches)
            ));
        }
        out.push('(');
        out.push_str(&original);
        out.push_str("))");
        out
    }
}

/// Whether any loop of the program's own functions holds a barrier.
fn has_barrier_loop(p: &Program) -> bool {
    let mut found = false;
    for body in p
        .functions
        .iter()
        .filter(|f| f.span.is_some())
        .filter_map(|f| f.body.as_ref())
    {
        visit_stmts(body, &mut |s| match &s.kind {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Do { body, .. } => found |= has_barrier(body),
            _ => {}
        });
    }
    found
}

fn has_barrier(s: &Stmt) -> bool {
    let mut found = false;
    visit_exprs(s, &mut |e| {
        if let ExprKind::Call { callee, .. } = &e.kind {
            found |= callee == "barrier" || callee == "work_group_barrier";
        }
    });
    found
}

/// Byte offset just past a statement, including the `;` clang leaves out of its range.
fn full_end(src: &str, s: &Stmt) -> Option<u32> {
    // Statements ending in a sub-statement end where it ends (clang's range stops before
    // the inner `;`).
    match &s.kind {
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::Switch { body, .. }
        | StmtKind::Case { body, .. }
        | StmtKind::Default { body, .. }
        | StmtKind::Label { body, .. }
        | StmtKind::Attributed { body } => return full_end(src, body).map(|e| e.max(s.span.end)),
        StmtKind::If { then, els, .. } => {
            let last = els.as_deref().unwrap_or(then);
            return full_end(src, last).map(|e| e.max(s.span.end));
        }
        _ => {}
    }
    let needs = matches!(
        s.kind,
        StmtKind::Expr(_)
            | StmtKind::Return(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Goto(_)
            | StmtKind::Do { .. }
            | StmtKind::Decl(_)
            | StmtKind::Null
    );
    if !needs {
        return Some(s.span.end);
    }
    let b = src.as_bytes();
    let mut i = s.span.end as usize;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b';' => return Some(i as u32 + 1),
            _ => return None,
        }
    }
    None
}

/// The edits every rendering shares: extra parameters, extra call arguments, watchdog.
/// The shared edits, and each kernel with the index of its selector argument.
type Common = (Vec<Edit>, Vec<(String, u32)>, BTreeSet<String>);

/// Helpers the selector cannot reach: those called inside a macro (the extra arguments
/// cannot be added to a call written in a macro body), and everything they call. They keep
/// their text; their mutants are compiled one program each, outside the schema.
fn unreachable_helpers(p: &Program, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut calls: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut skipped = BTreeSet::new();
    for f in p.functions.iter().filter(|f| f.span.is_some()) {
        let Some(body) = &f.body else { continue };
        visit_exprs(body, &mut |e| {
            if let ExprKind::Call {
                callee,
                callee_span,
                ..
            } = &e.kind
            {
                if !names.contains(callee) {
                    return;
                }
                calls
                    .entry(f.name.as_str())
                    .or_default()
                    .insert(callee.clone());
                if e.span.macro_end || !callee_span.is_exact() {
                    skipped.insert(callee.clone());
                }
            }
        });
    }
    let mut todo: Vec<String> = skipped.iter().cloned().collect();
    while let Some(f) = todo.pop() {
        for c in calls.get(f.as_str()).into_iter().flatten() {
            if skipped.insert(c.clone()) {
                todo.push(c.clone());
            }
        }
    }
    skipped
}

fn common_edits(p: &Program) -> Result<Common, KernelError> {
    let all: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| f.span.is_some())
        .map(|f| f.name.clone())
        .collect();
    refuse_header_functions(p, &all, "mutation testing")?;
    let skipped = unreachable_helpers(p, &all);
    if let Some(k) = p
        .functions
        .iter()
        .find(|f| f.is_kernel && skipped.contains(&f.name))
    {
        let (line, col) = k.span.map_or((1, 1), |s| (s.line, s.col));
        return Err(KernelError::Unsupported {
            construct: format!("call to `{}`", k.name),
            line,
            col,
            why: "a kernel called inside a macro, so the mutant selector cannot be passed on"
                .into(),
        });
    }
    let names: BTreeSet<String> = all.difference(&skipped).cloned().collect();
    let mut edits = Vec::new();
    let mut kernels = Vec::new();
    let decl = format!("uint {MUTANT_PARAM}_in, __global uint* {WATCHDOG_PARAM}");
    for f in p
        .functions
        .iter()
        .filter(|f| f.span.is_some() && (f.is_kernel || !skipped.contains(&f.name)))
    {
        let (Some(open), Some(close)) = (f.params_open, f.params_close) else {
            let s = f.span.unwrap_or(crate::model::Span {
                start: 0,
                end: 0,
                line: 0,
                col: 0,
                macro_start: false,
                macro_end: false,
            });
            return Err(KernelError::Unsupported {
                construct: format!("function `{}`", f.name),
                line: s.line,
                col: s.col,
                why: "its parameter list is not in the program text (macro?)".into(),
            });
        };
        let inner = &p.source[open as usize + 1..close as usize];
        let index = if inner.trim().is_empty() {
            edits.push(Edit {
                start: close,
                end: close,
                text: decl.clone(),
            });
            0
        } else if inner.trim() == "void" {
            edits.push(Edit {
                start: open + 1,
                end: close,
                text: decl.clone(),
            });
            0
        } else {
            edits.push(Edit {
                start: close,
                end: close,
                text: format!(", {decl}"),
            });
            f.params.len() as u32
        };
        if f.is_kernel && f.body.is_some() {
            kernels.push((f.name.clone(), index));
        }
        let Some(body) = &f.body else { continue };
        // The selector is read through a volatile local: to the optimiser it is then not
        // loop-invariant, so it cannot unswitch the work-item loops that drivers such as
        // PoCL wrap around kernel code once per mutant condition (a 52-mutant matmul took
        // 5 times the original's compile on PoCL 3.1, a run-time selector each mutant check
        // costs one load).
        if p.source.as_bytes().get(body.span.start as usize) != Some(&b'{') {
            return Err(KernelError::Unsupported {
                construct: format!("function `{}`", f.name),
                line: body.span.line,
                col: body.span.col,
                why: "its body does not start with `{` in the program text (macro?)".into(),
            });
        }
        edits.push(Edit {
            start: body.span.start + 1,
            end: body.span.start + 1,
            text: format!(" volatile uint {MUTANT_PARAM} = {MUTANT_PARAM}_in;"),
        });
        let mut err = None;
        visit_exprs(body, &mut |e| {
            if let ExprKind::Call {
                callee,
                callee_span,
                args,
            } = &e.kind
            {
                if !names.contains(callee) {
                    return;
                }
                let end = e.span.end as usize;
                if e.span.macro_end
                    || !callee_span.is_exact()
                    || end == 0
                    || p.source.as_bytes().get(end - 1) != Some(&b')')
                {
                    err.get_or_insert(KernelError::Unsupported {
                        construct: format!("call to `{callee}`"),
                        line: e.span.line,
                        col: e.span.col,
                        why: "the call is written inside a macro, so the mutant selector cannot be passed on".into(),
                    });
                    return;
                }
                let sep = if args.is_empty() { "" } else { ", " };
                edits.push(Edit {
                    start: e.span.end - 1,
                    end: e.span.end - 1,
                    text: format!("{sep}{MUTANT_PARAM}, {WATCHDOG_PARAM}"),
                });
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        // Watchdog: a per-call iteration budget spent by every loop.
        let mut loops = Vec::new();
        visit_stmts(body, &mut |s| match &s.kind {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Do { body, .. } => loops.push(&**body),
            _ => {}
        });
        if loops.is_empty() || p.source.as_bytes().get(body.span.start as usize) != Some(&b'{') {
            continue;
        }
        edits.push(Edit {
            start: body.span.start + 1,
            end: body.span.start + 1,
            text: " uint __cltrap_budget = __CLTRAP_BUDGET; uint __cltrap_bused = 0u;".into(),
        });
        for b in loops {
            if !b.span.is_exact() {
                continue;
            }
            let check = if has_barrier(b) {
                BARRIER_WATCHDOG_CHECK
            } else {
                WATCHDOG_CHECK
            };
            let is_block = matches!(b.kind, StmtKind::Compound(_))
                && p.source.as_bytes().get(b.span.start as usize) == Some(&b'{');
            if is_block {
                edits.push(Edit {
                    start: b.span.start + 1,
                    end: b.span.start + 1,
                    text: format!(" {check}"),
                });
            } else if let Some(end) = full_end(&p.source, b) {
                edits.push(Edit {
                    start: b.span.start,
                    end: b.span.start,
                    text: format!("{{ {check}"),
                });
                edits.push(Edit {
                    start: end,
                    end,
                    text: " }".into(),
                });
            }
        }
    }
    Ok((edits, kernels, skipped))
}

#[allow(clippy::too_many_arguments)]
fn finish(
    p: &Program,
    edits: Vec<Edit>,
    kernels: Vec<(String, u32)>,
    sites: BTreeMap<Site, Vec<(u32, Vec<Patch>)>>,
    copied: Vec<(u32, Copies)>,
    patches: &[Patch],
    atomics: bool,
    mutants: Vec<u32>,
    excluded: Vec<(u32, String)>,
) -> Rendered {
    let r = Renderer {
        src: &p.source,
        edits: &edits,
        sites,
    };
    let mut body = r.render(0, p.source.len() as u32, None, patches);
    let mut launch_names = BTreeMap::new();
    for (m, copies) in copied {
        body.push_str(&copies.text);
        launch_names.insert(m, copies.names);
    }
    Rendered {
        source: with_prelude(&prelude(atomics), &body),
        kernels,
        mutants,
        excluded,
        launch_names,
        barrier_loops: has_barrier_loop(p),
    }
}

/// A macro used inside `span` that an `#undef` or another `#define` after the span changes:
/// a copy of the function placed at the end of the file would not expand it the same way.
fn macro_changed_after(p: &Program, span: crate::model::Span) -> Option<String> {
    let after = p.source.get(span.end as usize..)?;
    let changed: Vec<&str> = after
        .lines()
        .filter_map(|l| {
            let mut w = l.trim_start().strip_prefix('#')?.split_whitespace();
            match w.next() {
                Some("undef" | "define") => w.next()?.split('(').next(),
                _ => None,
            }
        })
        .collect();
    p.macro_uses
        .iter()
        .filter(|u| span.start <= u.start && u.end <= span.end)
        .find(|u| changed.contains(&u.name.as_str()))
        .map(|u| u.name.clone())
}

/// A barrier mutant's copies: their text and, per original kernel, the copy to launch.
struct Copies {
    text: String,
    names: BTreeMap<String, String>,
}

/// Renames and mutates a copy of every function on a path from a kernel to mutant `m`'s
/// function (see [`needs_kernel_copy`]). The copies go after the user's text, each behind a
/// `#line` naming its original's line, so diagnostics point at the user's own lines. `Err`
/// (the reason) when a copy cannot be made: a copied function calls another copied one
/// defined later in the file (its prototype is not copied).
fn kernel_copies(p: &Program, edits: &[Edit], m: &Mutant) -> Result<Copies, String> {
    let closure = crate::rewrite::callers_closure(p, &[m.function.clone()].into());
    let defs: Vec<&crate::model::Function> = p
        .functions
        .iter()
        .filter(|f| f.body.is_some() && f.span.is_some() && closure.contains(&f.name))
        .collect();
    let r = Renderer {
        src: &p.source,
        edits,
        sites: BTreeMap::new(),
    };
    let mut text = String::new();
    let mut names = BTreeMap::new();
    for f in &defs {
        let (Some(span), Some(open), Some(body)) = (f.span, f.params_open, &f.body) else {
            continue;
        };
        let head = &p.source[span.start as usize..open as usize];
        let Some(at) = head.rfind(f.name.as_str()) else {
            return Err(format!("the name of `{}` is not in its text", f.name));
        };
        let at = span.start + at as u32;
        if let Some(name) = macro_changed_after(p, span) {
            return Err(format!(
                "`{}` uses macro {name}, which the file undefines or redefines after it \
                 (copies go at the end of the file)",
                f.name
            ));
        }
        let mut patches: Vec<Patch> = m
            .patches
            .iter()
            .filter(|x| span.start <= x.start && x.end <= span.end)
            .cloned()
            .collect();
        patches.push(Patch {
            start: at,
            end: at + f.name.len() as u32,
            text: copy_name(m.number, &f.name),
        });
        let mut err = None;
        visit_exprs(body, &mut |e| {
            if let ExprKind::Call {
                callee,
                callee_span,
                ..
            } = &e.kind
            {
                if !closure.contains(callee) {
                    return;
                }
                let defined_before = defs
                    .iter()
                    .any(|d| d.name == *callee && d.span.is_some_and(|s| s.start < span.start));
                if !callee_span.is_exact() || !defined_before {
                    err.get_or_insert(format!(
                        "`{}` calls `{callee}`, which needs a copy too and is not defined before it",
                        f.name
                    ));
                    return;
                }
                patches.push(Patch {
                    start: callee_span.start,
                    end: callee_span.end,
                    text: copy_name(m.number, callee),
                });
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        text.push_str(&format!("\n#line {}\n", span.line));
        text.push_str(&r.render(span.start, span.end, None, &patches));
        text.push('\n');
        if f.is_kernel {
            names.insert(f.name.clone(), copy_name(m.number, &f.name));
        }
    }
    if names.is_empty() {
        return Err("no kernel leads to its code".into());
    }
    Ok(Copies { text, names })
}

/// The original program with the extra parameters and the watchdog (selector ignored): the
/// reference that mutants compiled on their own are compared with.
pub fn original(p: &Program) -> Result<Rendered, KernelError> {
    let (edits, kernels, _) = common_edits(p)?;
    Ok(finish(
        p,
        edits,
        kernels,
        BTreeMap::new(),
        vec![],
        &[],
        false,
        vec![],
        vec![],
    ))
}

/// One mutant compiled on its own (its code unconditional; the selector is ignored).
pub fn single(p: &Program, m: &Mutant) -> Result<Rendered, KernelError> {
    let (edits, kernels, _) = common_edits(p)?;
    let atomics = m.operator == super::Operator::AtomicPlain;
    Ok(finish(
        p,
        edits,
        kernels,
        BTreeMap::new(),
        vec![],
        &m.patches,
        atomics,
        vec![m.number],
        vec![],
    ))
}

/// The mutant schema: every given mutant that can live in it behind `__cltrap_mutant == n`.
/// Mutants with no site (declaration changes) or whose site overlaps another one without
/// nesting (macro-mapped ranges) are listed in `excluded` with the reason; launch mutants
/// need no code and are neither.
pub fn schema(p: &Program, mutants: &[Mutant]) -> Result<Rendered, KernelError> {
    let (edits, kernels, skipped) = common_edits(p)?;
    let mut sites: BTreeMap<Site, Vec<(u32, Vec<Patch>)>> = BTreeMap::new();
    let mut excluded = Vec::new();
    let mut included = Vec::new();
    let mut atomics = false;
    let mut copied = Vec::new();
    for m in mutants.iter().filter(|m| m.launch.is_none()) {
        if skipped.contains(&m.function) {
            excluded.push((
                m.number,
                format!(
                    "its function `{}` is called inside a macro, so the mutant selector cannot reach it",
                    m.function
                ),
            ));
            continue;
        }
        match m.site {
            Some(_) if m.in_schema && needs_kernel_copy(m) => match kernel_copies(p, &edits, m) {
                Ok(c) => {
                    copied.push((m.number, c));
                    included.push(m.number);
                }
                Err(why) => excluded.push((
                    m.number,
                    format!("a barrier mutant needs kernel copies, and {why}"),
                )),
            },
            Some(site) if m.in_schema => {
                sites
                    .entry(site)
                    .or_default()
                    .push((m.number, m.patches.clone()));
                included.push(m.number);
                atomics |= m.operator == super::Operator::AtomicPlain;
            }
            _ => excluded.push((
                m.number,
                m.schema_note
                    .clone()
                    .unwrap_or_else(|| "it cannot be selected at run time".into()),
            )),
        }
    }
    // Sites must nest: drop (to per-mutant compiles) those that cross an earlier one.
    let mut stack: Vec<Site> = Vec::new();
    let mut crossing = Vec::new();
    let mut keys: Vec<Site> = sites.keys().copied().collect();
    keys.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    for s in keys {
        while stack.last().is_some_and(|t| t.1 <= s.0) {
            stack.pop();
        }
        if stack.last().is_some_and(|t| s.1 > t.1) {
            crossing.push(s);
            continue;
        }
        stack.push(s);
    }
    for s in crossing {
        if let Some(ms) = sites.remove(&s) {
            for (n, _) in ms {
                included.retain(|x| *x != n);
                excluded.push((
                    n,
                    "its text overlaps another mutated expression (macro?)".into(),
                ));
            }
        }
    }
    included.sort_unstable();
    Ok(finish(
        p,
        edits,
        kernels,
        sites,
        copied,
        &[],
        atomics,
        included,
        excluded,
    ))
}
