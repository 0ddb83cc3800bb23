//! Coverage instrumentation (CLTestCheck's criteria, measured correctly): branch coverage
//! (both sides of `if`, `?:`, loop conditions and each `&&`/`||` operand; each `switch` case,
//! `default` and the implicit "no case matched"), loop-boundary coverage (a loop ran 0, 1 or
//! more times) and barrier coverage (per work-group: reached by all work-items or by none;
//! anything else is barrier divergence).
//!
//! Only boundary classes some input can reach are items: a do-while has no "ran 0 times", and
//! a `for` loop with constant bounds ([`crate::trip_count`]) has only the class its trip count
//! gives (or, when its body can leave it early, the classes from "ran 1 time" up to it), so
//! percentages never count what no input can cover.
//!
//! Short-circuit operands are counted as gcov counts conditions, with slots on exactly the
//! operand's range; a left operand is counted even when it is itself `&&`/`||`, because its
//! outcome is what decides whether the right operand runs (mutation's NO-COVERAGE guards are
//! keyed on it). Each operand is still evaluated once and short-circuiting is kept.
//!
//! Counters live in one extra `__global uint*` argument appended after the kernel's own; every
//! helper defined in the program receives it too. Every counter is written straight to global
//! memory at the moment it is reached (flags stored as 1, barrier arrivals by `atomic_inc`), so
//! nothing depends on a flush at the end of the kernel: work-items and whole groups that
//! `return` early are counted exactly, for any number of groups. Loops count their iterations
//! in a private variable and record the boundary class when they exit, including through a
//! `return` inside them.
//!
//! The instrumentation never changes the kernel's control flow: no counter adds a branch (a
//! condition's outcome picks its slot by index arithmetic, a flag is stored without first
//! testing it, a loop's class is `min(iterations, 2)`), nothing is moved across a barrier and
//! no barrier is added. Compilers that build work-group loops around barriers (PoCL) are
//! sensitive to extra branches in loops that hold barriers: a flag set only "when still 0"
//! made a hotspot-style stencil (barriers and a conditional `break` in one loop) crash there.
//! Storing flags unconditionally costs some memory traffic on hot branches; it is the price of
//! running the kernel's own control flow.
//!
//! Buffer layout (u32 slots): [`HEADER_SLOTS`] header slots (0: capacity, written by the host;
//! 1: overflow flag; 2..5: enqueued local size; 5..8: number of groups, written by the first
//! work-item of group 0), then one flag per [`Slot`], then for each barrier one arrival counter
//! per work-group (`barrier * num_groups + linear_group`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::edits::Edits;
use crate::error::KernelError;
use crate::frontend::is_vector_type;
use crate::model::{
    visit_stmts, BinOp, Expr, ExprKind, Function, Program, Span, Stmt, StmtKind, VarDecl,
};
use crate::rewrite::{
    add_call_arg, add_param, callers_closure, calls_to, drop_unused_header_functions,
    helpers_called_in_macros, refuse_header_functions, with_prelude, PRELUDE_MACROS,
};
use crate::trip_count::constant_trip_count;

/// Name of the extra counter parameter and argument.
pub const COV_PARAM: &str = "__cltrap_cov";

/// Number of header slots before the first counter.
pub const HEADER_SLOTS: u32 = 8;

/// Built-ins counted as barriers.
pub const BARRIER_BUILTINS: &[&str] = &["barrier", "work_group_barrier"];

/// What a flag slot measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    /// One side of a branch (`if`, `?:`, loop condition, `&&`/`||` operand, `switch` case).
    Branch,
    /// A loop-boundary class (ran 0, 1 or more times).
    LoopBoundary,
}

/// Which construct a slot belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Construct {
    /// `if`.
    If,
    /// `?:`.
    Conditional,
    /// An operand of scalar `&&` or `||` (a left operand also when it is itself `&&`/`||`:
    /// its outcome decides whether the right operand runs).
    ShortCircuit,
    /// `while` loop.
    While,
    /// `for` loop.
    For,
    /// `do ... while` loop.
    Do,
    /// A `case` label (reached by a jump or by falling through).
    Case,
    /// The `default` label.
    Default,
    /// A `switch` without `default`: no case matched.
    ImplicitDefault,
}

/// The outcome a slot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Condition evaluated true.
    True,
    /// Condition evaluated false.
    False,
    /// Label reached.
    Taken,
    /// Loop exited after 0 iterations.
    Zero,
    /// Loop exited after exactly 1 iteration.
    Once,
    /// Loop exited after more than 1 iteration.
    Many,
}

/// One counter slot of the map: where and what it counts, on the user's own lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Index into the counter buffer.
    pub index: u32,
    /// Branch or loop boundary.
    pub kind: SlotKind,
    /// Construct.
    pub construct: Construct,
    /// Outcome counted.
    pub outcome: Outcome,
    /// Function containing the construct.
    pub function: String,
    /// Byte range (user's file) of the condition, label or loop.
    pub start: u32,
    /// End of the byte range.
    pub end: u32,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Human label, e.g. `if (x < n) true`.
    pub label: String,
}

/// One barrier call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BarrierSite {
    /// Barrier number (position of its counters in the barrier region).
    pub index: u32,
    /// Function containing the call.
    pub function: String,
    /// Byte range of the call.
    pub start: u32,
    /// End of the byte range.
    pub end: u32,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// The call's text.
    pub label: String,
}

/// A construct that was not instrumented, and why (macros hide their text from edits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// What it is.
    pub construct: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Why.
    pub why: String,
}

/// A kernel of the instrumented program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoveredKernel {
    /// Kernel name.
    pub name: String,
    /// Index of the counter-buffer argument (its original argument count).
    pub cov_arg_index: u32,
    /// Functions whose counters belong to a launch of this kernel (itself and what it calls).
    pub functions: Vec<String>,
}

/// Describes every counter of an instrumented program; serialised next to the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageMap {
    /// Name of the user's file.
    pub file_name: String,
    /// Number of header slots (see the module docs).
    pub header_slots: u32,
    /// Flag slots, by index.
    pub slots: Vec<Slot>,
    /// Barrier call sites.
    pub barriers: Vec<BarrierSite>,
    /// Kernels and their counter argument.
    pub kernels: Vec<CoveredKernel>,
    /// Constructs left uninstrumented.
    pub skipped: Vec<Skipped>,
    /// Every instrumented function (kernels and helpers) with the line it starts on, for
    /// reports (LCOV `FN:` records).
    #[serde(default)]
    pub functions: Vec<(String, u32)>,
    /// Every statement of an instrumented function, by line, with the slots whose hit shows
    /// that it ran: what reports (LCOV `DA:` records) need to say which lines ran.
    #[serde(default)]
    pub lines: Vec<LineRecord>,
}

/// One statement of an instrumented function: its line, the evidence that it ran and the
/// functions it calls. There is no counter per statement: a statement ran when the block that
/// holds it was entered, which the branch or case slot that opens the block records (the then
/// side of an `if` is entered when its condition was true). A statement after an early
/// `return` or `break` in the same block is counted with its block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRecord {
    /// 1-based line the statement starts on.
    pub line: u32,
    /// Function holding it.
    pub function: String,
    /// Slots any of which, hit, shows the statement ran; empty when it runs whenever its
    /// function does (the function's top-level block).
    pub guard: Vec<u32>,
    /// Functions of the program called by the statement's own expressions, so a helper's
    /// run can be told from its callers' lines.
    pub calls: Vec<String>,
}

/// How strict the pass is about constructs it cannot edit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoverageOptions {
    /// Fail (instead of recording a [`Skipped`] entry) on branches written inside macros.
    pub strict: bool,
}

/// The instrumented program.
#[derive(Debug, Clone)]
pub struct Instrumented {
    /// Source to build (prelude, `#line 1`, the user's edited text).
    pub source: String,
    /// The counter map.
    pub map: CoverageMap,
}

/// Instruments every function of `p` for coverage.
pub fn instrument_coverage(
    p: &Program,
    opts: CoverageOptions,
) -> Result<Instrumented, KernelError> {
    let main_fns: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| f.span.is_some() && f.body.is_some())
        .map(|f| f.name.clone())
        .collect();
    let mut needing = callers_closure(p, &main_fns);
    // A header function no kernel reaches is left as written (it never runs).
    drop_unused_header_functions(p, &mut needing);
    // A helper called from inside a macro cannot be given the counter argument there: it is
    // left uninstrumented (listed as skipped) and the rest of the program is counted.
    let in_macros = helpers_called_in_macros(p, &needing);
    for (n, _) in &in_macros {
        needing.remove(n);
    }
    refuse_header_functions(p, &needing, "coverage instrumentation")?;
    let mut ins = Ins {
        p,
        opts,
        edits: Edits::new(),
        slots: Vec::new(),
        barriers: Vec::new(),
        skipped: Vec::new(),
        func: String::new(),
        next_loop: 0,
        labels: Vec::new(),
        loop_spans: Vec::new(),
        guard: Vec::new(),
        lines: Vec::new(),
    };
    for (n, line) in &in_macros {
        let (fline, col) = p
            .function(n)
            .and_then(|f| f.span)
            .map_or((0, 0), |s| (s.line, s.col));
        let why = if *line > 0 {
            format!("a call to it (line {line}) is written inside a macro, so the counter argument cannot be passed there; its branches and loops are not counted")
        } else {
            "it is called only from a helper left uninstrumented; its branches and loops are not counted".to_string()
        };
        ins.skipped.push(Skipped {
            construct: format!("function `{n}`"),
            line: fline,
            col,
            why,
        });
    }
    let decl = format!("__global uint* {COV_PARAM}");
    let mut kernels = Vec::new();
    for f in p
        .functions
        .iter()
        .filter(|f| needing.contains(&f.name) && f.span.is_some())
    {
        let idx = add_param(&mut ins.edits, p, f, &decl)?;
        let Some(body) = &f.body else { continue };
        for call in calls_to(f, &needing) {
            add_call_arg(&mut ins.edits, p, call, COV_PARAM)?;
        }
        ins.func = f.name.clone();
        ins.labels.clear();
        ins.loop_spans.clear();
        visit_stmts(body, &mut |st| match &st.kind {
            StmtKind::Label { name, .. } => ins.labels.push((name.clone(), st.span.start)),
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::Do { .. } => {
                ins.loop_spans.push(st.span)
            }
            _ => {}
        });
        if f.is_kernel {
            if let StmtKind::Compound(_) = body.kind {
                ins.edits.insert(
                    body.span.start + 1,
                    format!(" __cltrap_header({COV_PARAM});"),
                    0,
                );
            }
            kernels.push(CoveredKernel {
                name: f.name.clone(),
                cov_arg_index: idx,
                functions: reachable(p, f),
            });
        }
        ins.guard.clear();
        ins.stmt(body, &[], 0)?;
    }
    let body = ins.edits.apply(&p.source)?;
    let n_static = ins.slots.len() as u32;
    let prelude = prelude(HEADER_SLOTS + n_static);
    let map = CoverageMap {
        file_name: p.file_name.clone(),
        header_slots: HEADER_SLOTS,
        slots: ins.slots,
        barriers: ins.barriers,
        kernels,
        skipped: ins.skipped,
        lines: ins.lines,
        functions: p
            .functions
            .iter()
            .filter(|f| f.body.is_some())
            .filter_map(|f| f.span.map(|s| (f.name.clone(), s.line)))
            .collect(),
    };
    Ok(Instrumented {
        source: with_prelude(&prelude, &body),
        map,
    })
}

fn reachable(p: &Program, k: &Function) -> Vec<String> {
    let mut set = BTreeSet::from([k.name.clone()]);
    let mut todo = vec![k.name.clone()];
    while let Some(n) = todo.pop() {
        if let Some(f) = p.function(&n) {
            for c in &f.calls {
                if p.function(c).is_some() && set.insert(c.clone()) {
                    todo.push(c.clone());
                }
            }
        }
    }
    set.into_iter().collect()
}

fn prelude(barrier_base: u32) -> String {
    format!(
        "{PRELUDE_MACROS}\
__CLTRAP_FN void __cltrap_header(__global uint* c) {{ if ((get_group_id(0) == 0) & (get_group_id(1) == 0) & (get_group_id(2) == 0) & (get_local_id(0) == 0) & (get_local_id(1) == 0) & (get_local_id(2) == 0)) {{ c[2] = (uint)__CLTRAP_ELS(0); c[3] = (uint)__CLTRAP_ELS(1); c[4] = (uint)__CLTRAP_ELS(2); c[5] = (uint)get_num_groups(0); c[6] = (uint)get_num_groups(1); c[7] = (uint)get_num_groups(2); }} }}
#define __CLTRAP_HIT(i) ((void)(__cltrap_cov[i] = 1u))
__CLTRAP_FN int __cltrap_br(__global uint* c, uint t, int v) {{ c[t + 1u - (uint)v] = 1u; return v; }}
__CLTRAP_FN uint __cltrap_cls(uint v) {{ return min(v, 2u); }}
__CLTRAP_FN void __cltrap_bar(__global uint* c, uint b) {{ size_t i = (size_t){barrier_base}u + (size_t)b * (get_num_groups(0) * get_num_groups(1) * get_num_groups(2)) + get_group_id(0) + get_num_groups(0) * (get_group_id(1) + get_num_groups(1) * get_group_id(2)); size_t ok = (size_t)(i < (size_t)c[0]); atomic_inc(&c[ok * i + ((size_t)1 - ok)]); }}
"
    )
}

struct Ins<'a> {
    p: &'a Program,
    opts: CoverageOptions,
    edits: Edits,
    slots: Vec<Slot>,
    barriers: Vec<BarrierSite>,
    skipped: Vec<Skipped>,
    func: String,
    next_loop: u32,
    /// Labels of the current function and where they are.
    labels: Vec<(String, u32)>,
    /// Every instrumented loop of the current function.
    loop_spans: Vec<Span>,
    /// Slots any of which shows the block being visited was entered (empty: the function's
    /// top-level block).
    guard: Vec<u32>,
    /// Statements visited so far, with their guards.
    lines: Vec<LineRecord>,
}

#[derive(Clone)]
struct LoopCtx {
    var: String,
    /// The loop's first boundary slot, the one of class `classes.0`.
    first_slot: u32,
    /// The boundary classes (0: ran 0 times, 1: once, 2: more) the loop has slots for, lowest
    /// and highest: all three for most loops, 1..=2 for a do-while (its body always runs) and
    /// for a loop with constant bounds that may `break` early, the one class it always ends in
    /// for a loop with constant bounds that always runs them out.
    classes: (u32, u32),
    span: Span,
}

fn short(text: &str) -> String {
    let mut t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    while t.starts_with('(') && t.ends_with(')') && balanced(&t[1..t.len() - 1]) {
        t = t[1..t.len() - 1].to_string();
    }
    if t.chars().count() > 48 {
        format!("{}...", t.chars().take(45).collect::<String>())
    } else {
        t
    }
}

/// Whether parentheses in `t` balance without going negative (so outer ones can be dropped).
fn balanced(t: &str) -> bool {
    let mut depth = 0i32;
    for c in t.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

fn is_logical(e: &Expr) -> bool {
    matches!(
        e.peel().kind,
        ExprKind::Binary {
            op: Some(BinOp::LAnd | BinOp::LOr),
            ..
        }
    )
}

impl Ins<'_> {
    fn text(&self, s: Span) -> &str {
        &self.p.source[s.start as usize..s.end as usize]
    }

    fn add_slot(
        &mut self,
        kind: SlotKind,
        construct: Construct,
        outcome: Outcome,
        at: Span,
        label: String,
    ) -> u32 {
        let index = HEADER_SLOTS + self.slots.len() as u32;
        self.slots.push(Slot {
            index,
            kind,
            construct,
            outcome,
            function: self.func.clone(),
            start: at.start,
            end: at.end,
            line: at.line,
            col: at.col,
            label,
        });
        index
    }

    /// Records (or, in strict mode, refuses) a construct that cannot be edited.
    fn skip(&mut self, construct: &str, at: Span, why: &str) -> Result<(), KernelError> {
        if self.opts.strict {
            return Err(KernelError::Unsupported {
                construct: construct.into(),
                line: at.line,
                col: at.col,
                why: why.into(),
            });
        }
        if !self
            .skipped
            .iter()
            .any(|s| s.line == at.line && s.col == at.col && s.construct == construct)
        {
            self.skipped.push(Skipped {
                construct: construct.into(),
                line: at.line,
                col: at.col,
                why: why.into(),
            });
        }
        Ok(())
    }

    /// A sub-range is safe to edit when it is exactly the user's tokens, or when macro mapping
    /// made it a whole invocation strictly inside its construct (e.g. `i < N`).
    fn usable(inner: Span, outer: Span) -> bool {
        inner.start >= outer.start
            && inner.end <= outer.end
            && (inner.is_exact() || (inner.start, inner.end) != (outer.start, outer.end))
            && inner.start < inner.end
    }

    /// Byte offset just past a statement, including the `;` clang leaves out of its range.
    fn full_end(&self, s: &Stmt) -> Result<u32, KernelError> {
        if !needs_semi(s) {
            return Ok(s.span.end);
        }
        let b = self.p.source.as_bytes();
        let mut i = s.span.end as usize;
        while i < b.len() {
            match b[i] {
                c if c.is_ascii_whitespace() => i += 1,
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                        i += 1;
                    }
                    i += 2;
                }
                b';' => return Ok(i as u32 + 1),
                _ => break,
            }
        }
        Err(KernelError::Unsupported {
            construct: "statement".into(),
            line: s.span.line,
            col: s.span.col,
            why: "its terminating `;` is not in the program text (written inside a macro?)".into(),
        })
    }

    /// Whether `v` is a `__constant` or `static` variable: its initializer is a constant
    /// expression the compiler evaluates, so it has no run-time branch, and a counter in it
    /// would not compile.
    fn constant_init(&self, v: &VarDecl) -> bool {
        let words = |t: &str| {
            t.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .any(|w| matches!(w, "__constant" | "constant" | "static"))
        };
        let head = self
            .p
            .source
            .get(v.span.start as usize..v.span.end as usize)
            .and_then(|t| t.split('=').next())
            .unwrap_or("");
        words(&v.ty) || words(head)
    }

    /// Wraps a condition so it records its true and false outcomes.
    fn branch(&mut self, cond: &Expr, construct: Construct, what: &str, depth: i64) -> u32 {
        let label = short(self.text(cond.span));
        let t = self.add_slot(
            SlotKind::Branch,
            construct,
            Outcome::True,
            cond.span,
            format!("{what} ({label}) true"),
        );
        let f = self.add_slot(
            SlotKind::Branch,
            construct,
            Outcome::False,
            cond.span,
            format!("{what} ({label}) false"),
        );
        // The helper takes the condition's truth value as an `int` 0 or 1 (`!!` for integers
        // and pointers; a floating-point condition, on which OpenCL C restricts `!` and `?:`,
        // is compared with 0: the same truth value, NaN included) and stores to the true or
        // the false slot by index arithmetic, without a branch.
        debug_assert_eq!(f, t + 1);
        let (open, close) = if is_float_type(&cond.ty) {
            ("((", ") != 0))")
        } else {
            ("!!(", "))")
        };
        self.edits.wrap(
            cond.span.start,
            cond.span.end,
            format!("__cltrap_br({COV_PARAM}, {t}u, {open}"),
            close,
            depth,
        );
        t
    }

    /// Records the boundary class of `loops` just before `s` (a `return` or `goto`) leaves them.
    fn leave_loops(
        &mut self,
        s: &Stmt,
        loops: &[LoopCtx],
        what: &str,
        d: i64,
    ) -> Result<(), KernelError> {
        if loops.is_empty() {
            return Ok(());
        }
        if s.span.macro_start {
            return Err(KernelError::Unsupported {
                construct: what.into(),
                line: s.span.line,
                col: s.span.col,
                why: "it is written inside a macro, so the loop's iteration count cannot be recorded before it".into(),
            });
        }
        let recs: Vec<String> = loops.iter().map(|l| self.loop_record(l)).collect();
        let end = self.full_end(s)?;
        self.edits
            .insert(s.span.start, format!("{{ {} ", recs.join(" ")), d);
        self.edits.insert(end, " }", -d);
        Ok(())
    }

    /// The statement that records the class a loop ends in. A loop with a single class stores
    /// its one flag without reading the counter (its class is known).
    fn loop_record(&self, l: &LoopCtx) -> String {
        match l.classes {
            (lo, hi) if lo == hi => format!("__CLTRAP_HIT({}u);", l.first_slot),
            (0, _) => format!(
                "__CLTRAP_HIT({}u + __cltrap_cls({v}));",
                l.first_slot,
                v = l.var
            ),
            (lo, _) => format!(
                "__CLTRAP_HIT({}u + __cltrap_cls({v}) - {lo}u);",
                l.first_slot,
                v = l.var
            ),
        }
    }

    /// Records `s` as a line that runs when the current block is entered, when it is a
    /// statement that does something (not a block, label, `;` or a declaration without a
    /// run-time initializer).
    fn record_line(&mut self, s: &Stmt) {
        let exprs: Vec<&Expr> = match &s.kind {
            StmtKind::Decl(vars) => vars
                .iter()
                .filter(|v| !self.constant_init(v))
                .filter_map(|v| v.init.as_ref())
                .collect(),
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => vec![e],
            StmtKind::If { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::Do { cond, .. }
            | StmtKind::Switch { cond, .. } => vec![cond],
            StmtKind::For { cond, inc, .. } => cond.iter().chain(inc.iter()).collect(),
            StmtKind::Return(None)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Goto(_)
            | StmtKind::Other(_) => vec![],
            StmtKind::Compound(_)
            | StmtKind::Null
            | StmtKind::Label { .. }
            | StmtKind::Case { .. }
            | StmtKind::Default { .. }
            | StmtKind::Attributed { .. } => return,
        };
        if matches!(s.kind, StmtKind::Decl(_)) && exprs.is_empty() {
            return;
        }
        let mut calls = BTreeSet::new();
        fn walk(e: &Expr, p: &Program, calls: &mut BTreeSet<String>) {
            if let ExprKind::Call { callee, .. } = &e.kind {
                if p.function(callee).is_some_and(|f| f.body.is_some()) {
                    calls.insert(callee.clone());
                }
            }
            for c in e.children() {
                walk(c, p, calls);
            }
        }
        for e in exprs {
            walk(e, self.p, &mut calls);
        }
        self.lines.push(LineRecord {
            line: s.span.line,
            function: self.func.clone(),
            guard: self.guard.clone(),
            calls: calls.into_iter().collect(),
        });
    }

    /// Visits `s` as a block entered when one of `guard` is hit (the current guard when
    /// `guard` is `None`), then restores the current guard.
    fn guarded(
        &mut self,
        s: &Stmt,
        guard: Option<u32>,
        loops: &[LoopCtx],
        depth: i64,
    ) -> Result<(), KernelError> {
        let outer = match guard {
            Some(g) => std::mem::replace(&mut self.guard, vec![g]),
            None => self.guard.clone(),
        };
        let r = self.stmt(s, loops, depth);
        self.guard = outer;
        r
    }

    fn stmt(&mut self, s: &Stmt, loops: &[LoopCtx], depth: i64) -> Result<(), KernelError> {
        let d = depth + 1;
        self.record_line(s);
        match &s.kind {
            StmtKind::Compound(v) => {
                for c in v {
                    self.stmt(c, loops, d)?;
                }
            }
            StmtKind::Decl(vars) => {
                for v in vars {
                    if let Some(e) = &v.init {
                        if !self.constant_init(v) {
                            self.expr(e, d)?;
                        }
                    }
                }
            }
            StmtKind::Expr(e) => {
                if let ExprKind::Call { callee, .. } = &e.kind {
                    if BARRIER_BUILTINS.contains(&callee.as_str()) {
                        return self.barrier(e, true, d);
                    }
                }
                self.expr(e, d)?;
            }
            StmtKind::If { cond, then, els } => {
                let t = if s.span.macro_start || !Self::usable(cond.span, s.span) {
                    self.skip(
                        "if statement",
                        s.span,
                        "it is written inside a macro expansion",
                    )?;
                    None
                } else {
                    Some(self.branch(cond, Construct::If, "if", d))
                };
                self.expr(cond, d + 1)?;
                self.guarded(then, t, loops, d)?;
                if let Some(e) = els {
                    self.guarded(e, t.map(|t| t + 1), loops, d)?;
                }
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Do { body, .. }
                if s.span.macro_start || !Self::usable(body.span, s.span) =>
            {
                self.skip("loop", s.span, "it is written inside a macro expansion")?;
                self.loop_parts(s, loops, d)?;
                self.stmt(body, loops, d)?;
            }
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::Do { .. } => {
                self.loop_stmt(s, None, loops, d)?
            }
            StmtKind::Attributed { body } => match &body.kind {
                StmtKind::For { body: b, .. }
                | StmtKind::While { body: b, .. }
                | StmtKind::Do { body: b, .. }
                    if !body.span.macro_start && Self::usable(b.span, body.span) =>
                {
                    self.record_line(body);
                    self.loop_stmt(body, Some(s), loops, d)?
                }
                _ => self.stmt(body, loops, d)?,
            },
            StmtKind::Switch { cond, body } => {
                self.expr(cond, d)?;
                let has_default = switch_has_default(body);
                if !has_default {
                    match &body.kind {
                        StmtKind::Compound(_) if !body.span.macro_end => {
                            let label =
                                format!("switch ({}) no case matched", short(self.text(cond.span)));
                            let slot = self.add_slot(
                                SlotKind::Branch,
                                Construct::ImplicitDefault,
                                Outcome::Taken,
                                cond.span,
                                label,
                            );
                            self.edits.insert(
                                body.span.end - 1,
                                format!(" break; default: __CLTRAP_HIT({slot}); break; "),
                                -d,
                            );
                        }
                        _ => self.skip(
                            "switch without default",
                            s.span,
                            "its body is not a `{ }` block in the program text",
                        )?,
                    }
                }
                // Each case label opens the block of the statements after it (see below).
                self.guarded(body, None, loops, d)?;
            }
            StmtKind::Case { value, body, colon } => {
                match colon {
                    Some(colon) => {
                        let label = format!("case {}", short(self.text(value.span)));
                        let slot = self.add_slot(
                            SlotKind::Branch,
                            Construct::Case,
                            Outcome::Taken,
                            s.span,
                            label,
                        );
                        self.edits
                            .insert(*colon, format!(" __CLTRAP_HIT({slot});"), d);
                        // The statements from here to the next label run when it is reached.
                        self.guard = vec![slot];
                    }
                    None => self.skip(
                        "case label",
                        s.span,
                        "it is written inside a macro expansion",
                    )?,
                }
                self.stmt(body, loops, d)?;
            }
            StmtKind::Default { body, colon } => {
                match colon {
                    Some(colon) => {
                        let slot = self.add_slot(
                            SlotKind::Branch,
                            Construct::Default,
                            Outcome::Taken,
                            s.span,
                            "default".into(),
                        );
                        self.edits
                            .insert(*colon, format!(" __CLTRAP_HIT({slot});"), d);
                        self.guard = vec![slot];
                    }
                    None => self.skip(
                        "default label",
                        s.span,
                        "it is written inside a macro expansion",
                    )?,
                }
                self.stmt(body, loops, d)?;
            }
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e, d)?;
                }
                self.leave_loops(s, loops, "return inside a loop", d)?;
            }
            StmtKind::Label { body, .. } => self.stmt(body, loops, d)?,
            StmtKind::Goto(label) => {
                // Jumping into a loop would skip its counter's initialisation; jumping out of
                // loops must record them like a `return`, except those containing the label.
                let target = self
                    .labels
                    .iter()
                    .find(|(n, _)| n == label)
                    .map(|(_, at)| *at);
                let Some(target) = target else {
                    return Err(KernelError::Unsupported {
                        construct: format!("goto {label}"),
                        line: s.span.line,
                        col: s.span.col,
                        why: "its label was not found in the function".into(),
                    });
                };
                let inside = |l: &Span| l.start <= target && target < l.end;
                let enclosing: Vec<Span> = loops.iter().map(|l| l.span).collect();
                if self
                    .loop_spans
                    .iter()
                    .any(|l| inside(l) && !enclosing.contains(l))
                {
                    return Err(KernelError::Unsupported {
                        construct: format!("goto {label}"),
                        line: s.span.line,
                        col: s.span.col,
                        why: "it jumps into a loop, past the loop's iteration counter".into(),
                    });
                }
                let left: Vec<LoopCtx> =
                    loops.iter().filter(|l| !inside(&l.span)).cloned().collect();
                self.leave_loops(s, &left, "goto out of a loop", d)?;
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Null | StmtKind::Other(_) => {}
        }
        Ok(())
    }

    /// Opens the block that holds a loop's iteration counter, before `at` (the loop, or the
    /// `#pragma` / attribute in front of it). A `#pragma` must start its line, so there the
    /// block opens at the start of the line, followed by a newline and `#line` to keep the
    /// user's numbering.
    fn open_counter_block(&mut self, at: &Stmt, var: &str, d: i64) {
        self.insert_before_stmt(at, &format!("{{ uint {var} = 0u;"), d);
    }

    /// Inserts `text` before the statement `at`. When `at` starts with a `#pragma` (a loop
    /// under `#pragma unroll`, also as the unbraced body of another loop), the text goes at
    /// the start of the pragma's line, followed by a newline and `#line`, so the pragma stays
    /// directly in front of its loop and the user's numbering is kept.
    fn insert_before_stmt(&mut self, at: &Stmt, text: &str, d: i64) {
        let src = self.p.source.as_bytes();
        if src.get(at.span.start as usize) == Some(&b'#') {
            let line_start = src[..at.span.start as usize]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            self.edits.insert(
                line_start as u32,
                format!("{text}\n#line {}\n", at.span.line),
                d,
            );
        } else {
            self.edits.insert(at.span.start, format!("{text} "), d);
        }
    }

    /// Visits the expressions of a loop that is not itself instrumented.
    fn loop_parts(&mut self, s: &Stmt, loops: &[LoopCtx], d: i64) -> Result<(), KernelError> {
        match &s.kind {
            StmtKind::For {
                init, cond, inc, ..
            } => {
                if let Some(i) = init {
                    self.stmt(i, loops, d)?;
                }
                for e in cond.iter().chain(inc.iter()) {
                    self.expr(e, d)?;
                }
            }
            StmtKind::While { cond, .. } | StmtKind::Do { cond, .. } => self.expr(cond, d)?,
            _ => {}
        }
        Ok(())
    }

    fn loop_stmt(
        &mut self,
        s: &Stmt,
        outer: Option<&Stmt>,
        loops: &[LoopCtx],
        d: i64,
    ) -> Result<(), KernelError> {
        let (construct, word, cond, body) = match &s.kind {
            StmtKind::For { cond, body, .. } => (Construct::For, "for", cond.as_ref(), body),
            StmtKind::While { cond, body } => (Construct::While, "while", Some(cond), body),
            StmtKind::Do { body, cond } => (Construct::Do, "do-while", Some(cond), body),
            _ => return Ok(()),
        };
        let id = self.next_loop;
        self.next_loop += 1;
        let var = format!("__cltrap_it{id}");
        let head = cond.map(|c| short(self.text(c.span))).unwrap_or_default();
        // Only the classes some input can reach get a slot: a do-while's body always runs (no
        // "ran 0 times"); a loop with constant bounds runs them out, or stops earlier only by
        // leaving its body, so it has only the class of its trip count, or from 1 up to it.
        let classes = match construct {
            Construct::Do => (1, 2),
            _ => match constant_trip_count(s) {
                Some(t) => {
                    let c = t.count.min(2) as u32;
                    if t.early_exit && c > 0 {
                        (1, c)
                    } else {
                        (c, c)
                    }
                }
                None => (0, 2),
            },
        };
        let mut first_slot = None;
        for class in classes.0..=classes.1 {
            let (outcome, what) = match class {
                0 => (Outcome::Zero, "ran 0 times"),
                1 => (Outcome::Once, "ran 1 time"),
                _ => (Outcome::Many, "ran more than once"),
            };
            let slot = self.add_slot(
                SlotKind::LoopBoundary,
                construct,
                outcome,
                s.span,
                format!("{word} ({head}) {what}"),
            );
            first_slot.get_or_insert(slot);
        }
        let ctx = LoopCtx {
            var: var.clone(),
            first_slot: first_slot.unwrap_or_default(),
            classes,
            span: s.span,
        };
        let whole = outer.unwrap_or(s);
        let end = self.full_end(whole)?;
        self.open_counter_block(whole, &var, d);
        self.edits
            .insert(end, format!(" {} }}", self.loop_record(&ctx)), -d);
        if let StmtKind::For { init: Some(i), .. } = &s.kind {
            self.stmt(i, loops, d + 1)?;
        }
        // The body is entered when the condition was true (a do-while's always is).
        let mut body_guard = None;
        if let Some(c) = cond {
            if Self::usable(c.span, s.span) {
                let t = self.branch(c, construct, word, d + 1);
                body_guard = (construct != Construct::Do).then_some(t);
            } else {
                self.skip(
                    "loop condition",
                    c.span,
                    "it is written inside a macro expansion",
                )?;
            }
            self.expr(c, d + 2)?;
        }
        if let StmtKind::For { inc: Some(e), .. } = &s.kind {
            self.expr(e, d + 1)?;
        }
        let body_end = self.full_end(body)?;
        self.insert_before_stmt(body, &format!("{{ {var}++;"), d + 1);
        self.edits.insert(body_end, " }", -(d + 1));
        let mut inner = loops.to_vec();
        inner.push(ctx);
        self.guarded(body, body_guard, &inner, d + 2)
    }

    fn barrier(&mut self, call: &Expr, whole_statement: bool, d: i64) -> Result<(), KernelError> {
        let callee = match &call.kind {
            ExprKind::Call { callee, .. } => callee.as_str(),
            _ => "",
        };
        let exact = call.span.is_exact()
            || (whole_statement
                && call.span.macro_start
                && call.span.macro_end
                && self.p.macro_is_single_call(call.span.start, callee));
        if !exact {
            return self.skip(
                "barrier",
                call.span,
                "the call is written inside a macro expansion together with other code",
            );
        }
        let index = self.barriers.len() as u32;
        self.barriers.push(BarrierSite {
            index,
            function: self.func.clone(),
            start: call.span.start,
            end: call.span.end,
            line: call.span.line,
            col: call.span.col,
            label: short(self.text(call.span)),
        });
        self.edits.wrap(
            call.span.start,
            call.span.end,
            format!("(__cltrap_bar({COV_PARAM}, {index}u), "),
            ")",
            d,
        );
        Ok(())
    }

    /// Counts the operands of `lhs && rhs` / `lhs || rhs` as conditions, as gcov does. The
    /// left operand is always counted, even when it is itself `&&`/`||` (its slots then hold
    /// the outcome of that whole sub-condition), because whether the right operand runs at all
    /// is decided by exactly that outcome: mutation keys its guards on the left operand's
    /// range. A right operand that is itself `&&`/`||` is not counted as a whole (its own
    /// operands are). Vector operands are skipped: vector `&&`/`||` is element-wise and
    /// evaluates both sides, so there is no branch to count.
    fn short_circuit(
        &mut self,
        e: &Expr,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        d: i64,
    ) -> Result<(), KernelError> {
        let what = format!("{} operand", op.token());
        // clang spells a vector `&&`'s own type `int __attribute__((ext_vector_type(4)))`.
        let vector = [e, lhs, rhs].iter().any(|x| {
            is_vector_type(&x.peel().ty)
                || is_vector_type(&x.ty)
                || x.ty.contains("ext_vector_type")
        });
        if vector {
            self.skip(
                &format!("{} with vector operands", op.token()),
                e.span,
                "it works per component and evaluates both sides; it has no single branch",
            )?;
        }
        let ordered = lhs.span.end <= rhs.span.start;
        for (operand, counted) in [(lhs, true), (rhs, !is_logical(rhs))] {
            if counted && !vector {
                if ordered && Self::usable(operand.span, e.span) {
                    self.branch(operand, Construct::ShortCircuit, &what, d);
                } else {
                    self.skip(
                        &what,
                        operand.span,
                        "it is written inside a macro expansion",
                    )?;
                }
            }
            self.expr(operand, d + 1)?;
        }
        Ok(())
    }

    fn expr(&mut self, e: &Expr, depth: i64) -> Result<(), KernelError> {
        let d = depth + 1;
        match &e.kind {
            ExprKind::Binary {
                op: Some(op @ (BinOp::LAnd | BinOp::LOr)),
                lhs,
                rhs,
                ..
            } => self.short_circuit(e, *op, lhs, rhs, d)?,
            ExprKind::Binary {
                op: None, lhs, rhs, ..
            } => {
                if (e.span.macro_start || e.span.macro_end) && self.p.macro_may_branch(e.span.start)
                {
                    self.skip(
                        "operator",
                        e.span,
                        "its operator comes from a macro body; any `&&`/`||` in it is not counted",
                    )?;
                }
                self.expr(lhs, d)?;
                self.expr(rhs, d)?;
            }
            ExprKind::Conditional { cond, then, els } => {
                if is_vector_type(&cond.peel().ty) {
                    self.skip(
                        "?: with a vector condition",
                        e.span,
                        "it selects per component; it has no single branch",
                    )?;
                } else if e.span.macro_start || !Self::usable(cond.span, e.span) {
                    self.skip(
                        "?: operator",
                        e.span,
                        "it is written inside a macro expansion",
                    )?;
                } else {
                    self.branch(cond, Construct::Conditional, "?:", d);
                }
                self.expr(cond, d + 1)?;
                self.expr(then, d)?;
                self.expr(els, d)?;
            }
            ExprKind::Call { callee, args, .. } => {
                if BARRIER_BUILTINS.contains(&callee.as_str()) {
                    self.barrier(e, false, d)?;
                }
                for a in args {
                    self.expr(a, d)?;
                }
            }
            ExprKind::SizeOf => {}
            _ => {
                for c in e.children() {
                    self.expr(c, d)?;
                }
            }
        }
        Ok(())
    }
}

/// Whether clang's range for `s` stops before its `;`.
fn needs_semi(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Expr(_)
        | StmtKind::Return(_)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Goto(_)
        | StmtKind::Do { .. } => true,
        StmtKind::If { then, els, .. } => needs_semi(els.as_deref().unwrap_or(then)),
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::Switch { body, .. }
        | StmtKind::Case { body, .. }
        | StmtKind::Default { body, .. }
        | StmtKind::Label { body, .. } => needs_semi(body),
        StmtKind::Attributed { body } => needs_semi(body),
        StmtKind::Compound(_) | StmtKind::Decl(_) | StmtKind::Null | StmtKind::Other(_) => false,
    }
}

/// Whether a switch body has its own `default` (not one of a nested switch).
fn switch_has_default(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Default { .. } => true,
        StmtKind::Switch { .. } => false,
        StmtKind::Compound(v) => v.iter().any(switch_has_default),
        StmtKind::If { then, els, .. } => {
            switch_has_default(then) || els.as_deref().is_some_and(switch_has_default)
        }
        StmtKind::For { body, .. }
        | StmtKind::While { body, .. }
        | StmtKind::Do { body, .. }
        | StmtKind::Case { body, .. }
        | StmtKind::Label { body, .. }
        | StmtKind::Attributed { body } => switch_has_default(body),
        _ => false,
    }
}

/// A scalar floating-point type (`float`, `const double`, `half`): conditions of such types
/// cannot be the first operand of `?:` in OpenCL C.
fn is_float_type(ty: &str) -> bool {
    let t = ty
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__private" | "private"))
        .collect::<Vec<_>>()
        .join(" ");
    matches!(t.as_str(), "float" | "double" | "half")
}
