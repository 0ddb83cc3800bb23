//! Finding mutants: one walk over each function of the model, applying every selected
//! operator to the expressions and statements it understands, keeping the branch outcomes
//! (guards) that lead to each one so coverage can tell which mutants never ran.

use std::collections::BTreeSet;

use super::equivalence::trivially_equivalent;
use super::{stable_id, Guard, LaunchChange, Mutant, MutateOptions, Operator, Patch};
use crate::model::{
    line_col, BinOp, Expr, ExprKind, Function, Program, Span, Stmt, StmtKind, UnOp,
};
use crate::rewrite::callers_closure;

/// Atomic built-ins with a plain equivalent (the `__cltrap_plain_*` helpers of the schema
/// prelude), by suffix after `atomic_` / `atom_`.
pub(crate) const ATOMICS: &[&str] = &[
    "add", "sub", "xchg", "inc", "dec", "min", "max", "and", "or", "xor", "cmpxchg",
];

const ID_QUERIES: &[&str] = &["get_global_id", "get_local_id", "get_group_id"];
const DIM_QUERIES: &[&str] = &[
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_global_size",
    "get_local_size",
    "get_num_groups",
    "get_global_offset",
];

struct Finder<'a> {
    p: &'a Program,
    ops: Vec<Operator>,
    func: String,
    guards: Vec<Guard>,
    out: Vec<Mutant>,
}

fn is_vector(ty: &str) -> bool {
    let t = ty
        .trim()
        .trim_start_matches("const ")
        .trim_start_matches("__private ");
    let digits = t.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
    let base = &t[..t.len() - digits.len()];
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && [
            "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
            "half",
        ]
        .contains(&base)
}

/// Whether an expression has a vector type (clang may spell it as `ext_vector_type`).
fn is_vector_expr(e: &Expr) -> bool {
    is_vector(&e.ty) || is_vector(&e.peel().ty) || e.ty.contains("ext_vector_type")
}

fn is_pointer(ty: &str) -> bool {
    ty.contains('*') || ty.contains('[')
}

fn is_float(ty: &str) -> bool {
    ty.contains("float") || ty.contains("double") || ty.contains("half")
}

fn is_arith(ty: &str) -> bool {
    let t = ty.trim().trim_start_matches("const ");
    !is_pointer(t)
        && ([
            "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
            "size_t", "unsigned", "signed",
        ]
        .iter()
        .any(|b| t.starts_with(b))
            || is_vector(t))
}

impl<'a> Finder<'a> {
    fn text(&self, start: u32, end: u32) -> &'a str {
        self.p
            .source
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    fn wants(&self, op: Operator) -> bool {
        self.ops.contains(&op)
    }

    /// Adds a mutant made of `patches` inside `site` (the expression the schema wraps).
    fn add(&mut self, op: Operator, site: Option<Span>, patches: Vec<Patch>, eq: Option<String>) {
        if patches.is_empty() {
            return;
        }
        let start = patches.iter().map(|p| p.start).min().unwrap_or(0);
        let end = patches.iter().map(|p| p.end).max().unwrap_or(0);
        let original = self.text(start, end).to_string();
        let mut replacement = String::new();
        let mut pos = start;
        let mut sorted = patches.clone();
        sorted.sort_by_key(|p| (p.start, p.end > p.start));
        for p in &sorted {
            replacement.push_str(self.text(pos, p.start.max(pos)));
            replacement.push_str(&p.text);
            pos = pos.max(p.end);
        }
        replacement.push_str(self.text(pos, end));
        let id = stable_id(&[
            op.name(),
            &start.to_string(),
            &end.to_string(),
            &replacement,
        ]);
        if self.out.iter().any(|m| m.id == id) {
            return;
        }
        let (line, col) = line_col(&self.p.source, start);
        let (end_line, end_col) = line_col(&self.p.source, end);
        let in_schema = site.is_some();
        self.out.push(Mutant {
            id,
            number: 0,
            operator: op,
            function: self.func.clone(),
            start,
            end,
            line,
            col,
            end_line,
            end_col,
            original,
            replacement,
            site: site.map(|s| (s.start, s.end)),
            patches,
            in_schema,
            schema_note: (!in_schema)
                .then(|| "it changes a declaration, so it is compiled on its own".to_string()),
            guards: self.guards.clone(),
            equivalent: eq,
            launch: None,
        });
    }

    fn replace_op(&mut self, op: Operator, e: &Expr, at: u32, old: &str, new: &str) {
        let eq = trivially_equivalent(e, new);
        self.add(
            op,
            Some(e.span),
            vec![Patch {
                start: at,
                end: at + old.len() as u32,
                text: new.into(),
            }],
            eq,
        );
    }

    fn binary(&mut self, e: &Expr, op: BinOp, at: u32, lhs: &Expr, rhs: &Expr) {
        use BinOp::*;
        if self.text(at, at + op.token().len() as u32) != op.token() {
            return;
        }
        let (lt, rt) = (&lhs.ty, &rhs.ty);
        let ptr = is_pointer(lt) || is_pointer(rt);
        let float = is_float(lt) || is_float(rt);
        let mut alts: Vec<(Operator, BinOp)> = Vec::new();
        match op {
            Lt => alts.extend([
                (Operator::RelationalBoundary, Le),
                (Operator::RelationalNegation, Ge),
            ]),
            Le => alts.extend([
                (Operator::RelationalBoundary, Lt),
                (Operator::RelationalNegation, Gt),
            ]),
            Gt => alts.extend([
                (Operator::RelationalBoundary, Ge),
                (Operator::RelationalNegation, Le),
            ]),
            Ge => alts.extend([
                (Operator::RelationalBoundary, Gt),
                (Operator::RelationalNegation, Lt),
            ]),
            Eq => alts.push((Operator::RelationalNegation, Ne)),
            Ne => alts.push((Operator::RelationalNegation, Eq)),
            LAnd => alts.push((Operator::LogicalConnector, LOr)),
            LOr => alts.push((Operator::LogicalConnector, LAnd)),
            Add if !is_pointer(rt) => alts.push((Operator::Arithmetic, Sub)),
            Sub if !(is_pointer(lt) && is_pointer(rt)) => alts.push((Operator::Arithmetic, Add)),
            Mul if !ptr => alts.push((Operator::Arithmetic, Div)),
            Div if !ptr => alts.push((Operator::Arithmetic, Mul)),
            Rem if !ptr && !float => alts.push((Operator::Arithmetic, Div)),
            BitAnd if !float => alts.push((Operator::Bitwise, BitOr)),
            BitOr if !float => alts.push((Operator::Bitwise, BitAnd)),
            BitXor if !float => alts.push((Operator::Bitwise, BitAnd)),
            Shl => alts.push((Operator::Shift, Shr)),
            Shr => alts.push((Operator::Shift, Shl)),
            AddAssign if !ptr => alts.push((Operator::CompoundAssignment, SubAssign)),
            SubAssign if !ptr => alts.push((Operator::CompoundAssignment, AddAssign)),
            MulAssign => alts.push((Operator::CompoundAssignment, DivAssign)),
            DivAssign => alts.push((Operator::CompoundAssignment, MulAssign)),
            RemAssign if !float => alts.push((Operator::CompoundAssignment, DivAssign)),
            ShlAssign => alts.push((Operator::CompoundAssignment, ShrAssign)),
            ShrAssign => alts.push((Operator::CompoundAssignment, ShlAssign)),
            AndAssign => alts.push((Operator::CompoundAssignment, OrAssign)),
            OrAssign => alts.push((Operator::CompoundAssignment, AndAssign)),
            XorAssign => alts.push((Operator::CompoundAssignment, AndAssign)),
            _ => {}
        }
        for (o, new) in alts {
            if self.wants(o) {
                self.replace_op(o, e, at, op.token(), new.token());
            }
        }
        if op == Assign && self.wants(Operator::UnaryMinus) {
            self.negate(rhs);
        }
    }

    /// Unary minus insertion on a value (right-hand sides only, never on an lvalue).
    fn negate(&mut self, v: &Expr) {
        let inner = v.peel();
        if !v.span.is_exact() || !is_arith(&v.ty) || v.ty.contains("bool") {
            return;
        }
        if matches!(
            inner.kind,
            ExprKind::Unary {
                op: Some(UnOp::Minus),
                ..
            } | ExprKind::InitList(_)
        ) {
            return;
        }
        let eq = match &inner.kind {
            ExprKind::IntLit(t) if t.trim_end_matches(['u', 'U', 'l', 'L']) == "0" => {
                Some("negating the integer 0 gives 0".to_string())
            }
            _ => None,
        };
        self.add(
            Operator::UnaryMinus,
            Some(v.span),
            vec![
                Patch {
                    start: v.span.start,
                    end: v.span.start,
                    text: "-(".into(),
                },
                Patch {
                    start: v.span.end,
                    end: v.span.end,
                    text: ")".into(),
                },
            ],
            eq,
        );
    }

    fn unary(&mut self, e: &Expr, op: UnOp, operand: &Expr) {
        let (s, os) = (e.span, operand.span);
        let prefix = os.start > s.start;
        let (tok_start, tok_end) = if prefix {
            (s.start, os.start)
        } else {
            (os.end, s.end)
        };
        let tok = self.text(tok_start, tok_end).trim();
        let (o, new) = match op {
            UnOp::PreInc | UnOp::PostInc if tok == "++" => (Operator::Increment, "--"),
            UnOp::PreDec | UnOp::PostDec if tok == "--" => (Operator::Increment, "++"),
            UnOp::Minus if tok == "-" => (Operator::UnaryMinus, ""),
            UnOp::LNot if tok == "!" => (Operator::LogicalNotRemoval, ""),
            UnOp::BitNot if tok == "~" => (Operator::BitwiseNotRemoval, ""),
            _ => return,
        };
        if !self.wants(o) {
            return;
        }
        let eq = match (&operand.peel().kind, op) {
            (ExprKind::IntLit(t), UnOp::Minus)
                if t.trim_end_matches(['u', 'U', 'l', 'L']) == "0" =>
            {
                Some("negating the integer 0 gives 0".to_string())
            }
            _ => None,
        };
        self.add(
            o,
            Some(s),
            vec![Patch {
                start: tok_start,
                end: tok_end,
                text: new.into(),
            }],
            eq,
        );
    }

    fn condition(&mut self, cond: &Expr) {
        if !self.wants(Operator::Condition) || !cond.span.is_exact() || is_vector(&cond.ty) {
            return;
        }
        for v in ["1", "0"] {
            self.add(
                Operator::Condition,
                Some(cond.span),
                vec![Patch {
                    start: cond.span.start,
                    end: cond.span.end,
                    text: v.into(),
                }],
                None,
            );
        }
    }

    fn call(&mut self, e: &Expr, callee: &str, callee_span: Span, args: &[Expr], stmt: bool) {
        if !callee_span.is_exact() || e.span.macro_end {
            return;
        }
        let callee_patch = |text: &str| Patch {
            start: callee_span.start,
            end: callee_span.end,
            text: text.into(),
        };
        let removal = match callee {
            "barrier" | "work_group_barrier" => Some(Operator::BarrierRemoval),
            "mem_fence" | "read_mem_fence" | "write_mem_fence" => Some(Operator::FenceRemoval),
            _ => None,
        };
        if let Some(o) = removal {
            if stmt && self.wants(o) {
                self.add(
                    o,
                    Some(e.span),
                    vec![Patch {
                        start: e.span.start,
                        end: e.span.end,
                        text: "(void)0".into(),
                    }],
                    None,
                );
            }
            if o == Operator::BarrierRemoval && self.wants(Operator::BarrierFence) {
                if let Some(a) = args.first() {
                    let t = self.text(a.span.start, a.span.end).trim();
                    let swap = match t {
                        "CLK_LOCAL_MEM_FENCE" => Some("CLK_GLOBAL_MEM_FENCE"),
                        "CLK_GLOBAL_MEM_FENCE" => Some("CLK_LOCAL_MEM_FENCE"),
                        _ => None,
                    };
                    if let Some(s) = swap {
                        self.add(
                            Operator::BarrierFence,
                            Some(e.span),
                            vec![Patch {
                                start: a.span.start,
                                end: a.span.end,
                                text: s.into(),
                            }],
                            None,
                        );
                    }
                }
            }
        }
        let atomic = callee
            .strip_prefix("atomic_")
            .or_else(|| callee.strip_prefix("atom_"));
        if let (Some(suffix), true) = (atomic, self.wants(Operator::AtomicPlain)) {
            let int_ptr = args.first().is_some_and(|a| {
                let t = &a.ty;
                t.contains("int")
                    && !t.contains("long")
                    && (t.contains("__global") || t.contains("__local"))
            });
            if ATOMICS.contains(&suffix) && int_ptr {
                self.add(
                    Operator::AtomicPlain,
                    Some(e.span),
                    vec![callee_patch(&format!("__cltrap_plain_{suffix}"))],
                    None,
                );
            }
        }
        if ID_QUERIES.contains(&callee) {
            let swaps: &[&str] = match callee {
                "get_local_id" => &["get_group_id"],
                "get_group_id" => &["get_local_id"],
                _ => &["get_local_id"],
            };
            if self.wants(Operator::IdSwap) {
                for s in swaps {
                    self.add(Operator::IdSwap, Some(e.span), vec![callee_patch(s)], None);
                }
            }
            if self.wants(Operator::IdOffset) {
                for d in ["+1", "-1"] {
                    self.add(
                        Operator::IdOffset,
                        Some(e.span),
                        vec![
                            Patch {
                                start: e.span.start,
                                end: e.span.start,
                                text: "(".into(),
                            },
                            Patch {
                                start: e.span.end,
                                end: e.span.end,
                                text: format!("{d})"),
                            },
                        ],
                        None,
                    );
                }
            }
        }
        if DIM_QUERIES.contains(&callee) && self.wants(Operator::DimensionSwap) {
            if let Some(a) = args.first() {
                if a.span.is_exact() {
                    let t = self.text(a.span.start, a.span.end).trim();
                    let new = match t.trim_end_matches(['u', 'U']) {
                        "0" => Some("1"),
                        "1" => Some("0"),
                        _ => None,
                    };
                    if let Some(n) = new {
                        self.add(
                            Operator::DimensionSwap,
                            Some(e.span),
                            vec![Patch {
                                start: a.span.start,
                                end: a.span.end,
                                text: n.into(),
                            }],
                            None,
                        );
                    }
                }
            }
        }
    }

    /// Visits an expression; `stmt` is true for the full expression of an expression
    /// statement (where a call may be removed).
    fn expr(&mut self, e: &Expr, stmt: bool) {
        if !e.span.is_exact() {
            // Written by a macro: only the id/barrier calls inside are exact, keep walking.
            for c in e.children() {
                self.expr(c, false);
            }
            return;
        }
        match &e.kind {
            ExprKind::Binary {
                op: Some(op),
                op_at: Some(at),
                lhs,
                rhs,
            } => {
                self.binary(e, *op, *at, lhs, rhs);
                self.expr(lhs, false);
                // The right operand of `&&` runs only when the left one was true (`||`:
                // false); the guard's key is the left operand's range, as in the coverage
                // map's short-circuit slots. Vector `&&`/`||` works per component and
                // evaluates both sides: no guard.
                let vector = [e, lhs, rhs].iter().any(|x| is_vector_expr(x));
                match op {
                    BinOp::LAnd if !vector => self.guarded(lhs, true, |f| f.expr(rhs, false)),
                    BinOp::LOr if !vector => self.guarded(lhs, false, |f| f.expr(rhs, false)),
                    _ => self.expr(rhs, false),
                }
                return;
            }
            ExprKind::Unary {
                op: Some(op),
                operand,
            } => self.unary(e, *op, operand),
            ExprKind::Conditional { cond, then, els } => {
                self.condition(cond);
                self.expr(cond, false);
                // A vector condition selects per component and evaluates both arms.
                if is_vector_expr(cond) {
                    self.expr(then, false);
                    self.expr(els, false);
                } else {
                    self.guarded(cond, true, |f| f.expr(then, false));
                    self.guarded(cond, false, |f| f.expr(els, false));
                }
                return;
            }
            ExprKind::Call {
                callee,
                callee_span,
                args,
            } => self.call(e, callee, *callee_span, args, stmt),
            ExprKind::Paren(inner) | ExprKind::Implicit(inner) => {
                self.expr(inner, stmt);
                return;
            }
            _ => {}
        }
        for c in e.children() {
            self.expr(c, false);
        }
    }

    fn guarded(&mut self, cond: &Expr, outcome: bool, f: impl FnOnce(&mut Self)) {
        self.guards.push(Guard {
            start: cond.span.start,
            end: cond.span.end,
            outcome,
        });
        f(self);
        self.guards.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Compound(v) => v.iter().for_each(|c| self.stmt(c)),
            StmtKind::Decl(vars) => {
                for v in vars {
                    if let Some(init) = &v.init {
                        if self.wants(Operator::UnaryMinus) && !v.ty.contains('[') {
                            self.negate(init);
                        }
                        self.expr(init, false);
                    }
                }
                self.local_decl(s);
            }
            StmtKind::Expr(e) => self.expr(e, true),
            StmtKind::Return(Some(e)) => self.expr(e, false),
            StmtKind::If { cond, then, els } => {
                self.condition(cond);
                self.expr(cond, false);
                self.guarded(cond, true, |f| f.stmt(then));
                if let Some(e) = els {
                    self.guarded(cond, false, |f| f.stmt(e));
                }
            }
            StmtKind::For {
                init,
                cond,
                inc,
                body,
            } => {
                if let Some(i) = init {
                    self.stmt(i);
                }
                if let Some(c) = cond {
                    self.condition(c);
                    self.expr(c, false);
                    self.guarded(c, true, |f| {
                        if let Some(i) = inc {
                            f.expr(i, true);
                        }
                        f.stmt(body)
                    });
                } else {
                    if let Some(i) = inc {
                        self.expr(i, true);
                    }
                    self.stmt(body);
                }
            }
            StmtKind::While { cond, body } => {
                self.condition(cond);
                self.expr(cond, false);
                self.guarded(cond, true, |f| f.stmt(body));
            }
            StmtKind::Do { body, cond } => {
                self.stmt(body);
                self.condition(cond);
                self.expr(cond, false);
            }
            StmtKind::Switch { cond, body } => {
                self.expr(cond, false);
                self.stmt(body);
            }
            StmtKind::Case { body, .. }
            | StmtKind::Default { body, .. }
            | StmtKind::Label { body, .. }
            | StmtKind::Attributed { body } => self.stmt(body),
            _ => {}
        }
    }

    /// Whether every use of `names` in the current function, outside `decl`, is an element
    /// access `name[...]` whose address is not taken: only then does turning the arrays
    /// private keep every expression's type, so the mutant's kernel copy compiles whatever
    /// else the schema holds (a `__local int*` parameter given a private array does not,
    /// and a copy that fails to compile would cost the whole schema).
    fn only_subscripted(&self, names: &[&str], decl: Span) -> bool {
        let Some(span) = self
            .p
            .functions
            .iter()
            .find(|f| f.name == self.func)
            .and_then(|f| f.span)
        else {
            return false;
        };
        let text = self.text(span.start, span.end);
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        names.iter().filter(|n| !n.is_empty()).all(|name| {
            let mut from = 0;
            while let Some(i) = text[from..].find(name) {
                let at = from + i;
                from = at + name.len();
                let abs = span.start + at as u32;
                if (decl.start..decl.end).contains(&abs) {
                    continue;
                }
                let rest = &text[at + name.len()..];
                if ident(text[..at].chars().last()) || ident(rest.chars().next()) {
                    continue;
                }
                let before = text[..at].trim_end();
                let after = rest.trim_start();
                if !after.starts_with('[') || before.ends_with('&') {
                    return false;
                }
            }
            true
        })
    }

    /// `__local T x[N];` in a kernel → `T x[N];` (a kernel copy in the schema, see
    /// [`Self::only_subscripted`], or a program of its own).
    fn local_decl(&mut self, s: &Stmt) {
        let StmtKind::Decl(vars) = &s.kind else {
            return;
        };
        if !self.wants(Operator::LocalToPrivate)
            || !s.span.is_exact()
            || !vars.iter().any(|v| v.ty.contains("__local"))
        {
            return;
        }
        let text = self.text(s.span.start, s.span.end);
        let mut found = None;
        for kw in ["__local", "local"] {
            let mut from = 0;
            while let Some(i) = text[from..].find(kw) {
                let at = from + i;
                let before = text[..at].chars().last();
                let after = text[at + kw.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                if !ident(before) && !ident(after) {
                    found = Some((at, kw.len()));
                    break;
                }
                from = at + kw.len();
            }
            if found.is_some() {
                break;
            }
        }
        if let Some((at, len)) = found {
            let start = s.span.start + at as u32;
            let mut end = start + len as u32;
            if self.text(end, end + 1) == " " {
                end += 1;
            }
            // The declaration is its site when the schema can hold the mutant as a renamed
            // copy of its kernel (see `needs_kernel_copy`); else it gets a program of its own.
            let names: Vec<&str> = vars
                .iter()
                .filter(|v| v.ty.contains("__local"))
                .map(|v| v.name.as_str())
                .collect();
            let site = self.only_subscripted(&names, s.span).then_some(s.span);
            self.add(
                Operator::LocalToPrivate,
                site,
                vec![Patch {
                    start,
                    end,
                    text: String::new(),
                }],
                None,
            );
        }
    }

    fn launch(&mut self, k: &Function) {
        if !self.wants(Operator::LaunchGeometry) {
            return;
        }
        let Some(span) = k.span else { return };
        for (c, what) in [
            (LaunchChange::LocalHalved, "local size halved"),
            (LaunchChange::LocalDoubled, "local size doubled"),
            (LaunchChange::GlobalPlusGroup, "global size + one group"),
            (LaunchChange::GlobalMinusGroup, "global size - one group"),
        ] {
            let name_at = self.p.source[span.start as usize..span.end as usize]
                .find(&k.name)
                .map_or(span.start, |i| span.start + i as u32);
            let end = name_at + k.name.len() as u32;
            let (line, col) = line_col(&self.p.source, name_at);
            let (end_line, end_col) = line_col(&self.p.source, end);
            self.out.push(Mutant {
                id: stable_id(&["launch_geometry", &k.name, what]),
                number: 0,
                operator: Operator::LaunchGeometry,
                function: k.name.clone(),
                start: name_at,
                end,
                line,
                col,
                end_line,
                end_col,
                original: k.name.clone(),
                replacement: format!("{} /* launched with {what} */", k.name),
                site: None,
                patches: vec![],
                in_schema: true,
                schema_note: None,
                guards: vec![],
                equivalent: None,
                launch: Some(c),
            });
        }
    }
}

/// Every mutant of the program's main-file functions for the selected operators, numbered
/// 1.. in source order (launch-geometry mutants last).
pub fn find_mutants(p: &Program, opts: &MutateOptions) -> Vec<Mutant> {
    let ops = if opts.operators.is_empty() {
        Operator::ALL.to_vec()
    } else {
        opts.operators.clone()
    };
    let wanted: Option<BTreeSet<String>> = (!opts.kernels.is_empty()).then(|| {
        // Functions reachable from the wanted kernels: those whose callers' closure meets them.
        let mut set = BTreeSet::new();
        for f in p.functions.iter().filter(|f| f.body.is_some()) {
            let seeds: BTreeSet<String> = [f.name.clone()].into();
            let callers = callers_closure(p, &seeds);
            if opts.kernels.iter().any(|k| callers.contains(k)) {
                set.insert(f.name.clone());
            }
        }
        set
    });
    let mut finder = Finder {
        p,
        ops,
        func: String::new(),
        guards: Vec::new(),
        out: Vec::new(),
    };
    for f in &p.functions {
        let (Some(body), Some(_)) = (&f.body, f.span) else {
            continue;
        };
        if wanted.as_ref().is_some_and(|w| !w.contains(&f.name)) {
            continue;
        }
        finder.func = f.name.clone();
        finder.stmt(body);
    }
    let mut out = std::mem::take(&mut finder.out);
    out.sort_by_key(|m| (m.start, m.end, m.operator));
    for k in p.kernels() {
        if opts.kernels.is_empty() || opts.kernels.contains(&k.name) {
            finder.launch(k);
        }
    }
    out.extend(finder.out);
    super::contract::keep_contraction(p, &mut out);
    for (i, m) in out.iter_mut().enumerate() {
        m.number = i as u32 + 1;
    }
    out
}
