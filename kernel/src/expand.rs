//! What macros hide from the model, recovered from the preprocessed program.
//!
//! libclang 14 tells neither an operator's kind nor a swizzle's components; the front-end reads
//! them from the user's tokens, which inside a macro invocation are the macro's name and
//! arguments (`IMUL(i, n)`), not the expanded `((i)*(n))`. Passes that edit text must leave
//! such nodes alone anyway (their spans are the invocation's), but the solver and the
//! interface reason over what the code *does*. So, when the model has such holes, the program
//! is preprocessed once by the clang binary with each outermost invocation in a function body
//! marked, every invocation is replaced by its expansion, the result is parsed again, and the
//! two trees — the same AST, since the preprocessed tokens are the same — are walked in lock
//! step to copy operators, swizzles and literal texts into the user's model. Spans stay the
//! user's: nodes from a macro keep the invocation's range and `op_at: None`, so no pass edits
//! inside a macro by accident.
//!
//! Without a clang binary, or when the expansion cannot be matched, the model keeps its holes
//! and the solver names them ("an operator written in a macro body").

use crate::frontend::{clang_command_line, ParseOptions};
use crate::model::{Expr, ExprKind, Function, Program, Stmt, StmtKind};
use crate::tce::clang_bin;
use std::time::Duration;

/// Fills the operators, swizzles and literals that macro invocations hide in `program`'s
/// function bodies. Never fails: what it cannot recover stays unknown.
pub(crate) fn fill_macro_holes(program: &mut Program, opts: &ParseOptions) {
    if !program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref())
        .any(has_hole)
    {
        return;
    }
    let Some(expanded) = expanded_source(program, opts) else {
        return;
    };
    let Ok(other) = crate::frontend::parse_plain(&expanded, opts) else {
        return;
    };
    for f in program.functions.iter_mut() {
        let Some(g) = other.functions.iter().find(|g| same_function(f, g)) else {
            continue;
        };
        if let (Some(a), Some(b)) = (f.body.as_mut(), g.body.as_ref()) {
            merge_stmt(a, b);
        }
    }
}

fn same_function(f: &Function, g: &Function) -> bool {
    f.name == g.name && f.body.is_some() && g.body.is_some() && f.params.len() == g.params.len()
}

/// Whether a node below `s` lost something to a macro.
fn has_hole(s: &Stmt) -> bool {
    let mut hole = false;
    crate::model::visit_exprs(s, &mut |e| hole |= is_hole(e));
    hole
}

fn is_hole(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Binary { op: None, .. } | ExprKind::Unary { op: None, .. } => true,
        ExprKind::Opaque { what, children } => {
            !e.span.is_exact() && children.len() == 1 && what == "UnexposedExpr"
        }
        ExprKind::IntLit(t) => crate::interface::parse_int_literal(t).is_none(),
        ExprKind::FloatLit(t) => crate::interface::parse_float_literal(t).is_none(),
        _ => false,
    }
}

const BEGIN: &str = "__cltrap_macro_begin_";
const END: &str = "__cltrap_macro_end_";

/// The program with every outermost macro invocation in a function body replaced by its
/// expansion (as the clang binary preprocesses it with the program's options).
fn expanded_source(program: &Program, opts: &ParseOptions) -> Option<String> {
    let bodies: Vec<(u32, u32)> = program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref().map(|b| (b.span.start, b.span.end)))
        .collect();
    let mut uses: Vec<(u32, u32)> = program
        .macro_uses
        .iter()
        .filter(|u| bodies.iter().any(|(s, e)| *s <= u.start && u.end <= *e))
        .map(|u| (u.start, u.end))
        .collect();
    uses.sort_by_key(|(s, e)| (*s, std::cmp::Reverse(*e)));
    let mut outer: Vec<(u32, u32)> = Vec::new();
    for u in uses {
        if outer.last().is_some_and(|o| u.0 < o.1) {
            continue;
        }
        outer.push(u);
    }
    if outer.is_empty() {
        return None;
    }
    let src = &program.source;
    let mut marked = String::with_capacity(src.len() + outer.len() * 64);
    let mut at = 0usize;
    for (k, (s, e)) in outer.iter().enumerate() {
        let (s, e) = (*s as usize, *e as usize);
        marked.push_str(src.get(at..s)?);
        marked.push_str(&format!(" {BEGIN}{k} "));
        marked.push_str(src.get(s..e)?);
        marked.push_str(&format!(" {END}{k} "));
        at = e;
    }
    marked.push_str(src.get(at..)?);
    let clang = clang_bin::clang_available().ok()?;
    let mut args = clang_command_line(opts);
    args.extend(["-E", "-P", "-w", "-o", "-", "-"].map(String::from));
    let pre = clang_bin::run(
        &clang,
        &args,
        &marked,
        &opts.file_name,
        Duration::from_secs(20),
    )
    .ok()?;
    let mut out = String::with_capacity(src.len() * 2);
    let mut at = 0usize;
    for (k, (s, e)) in outer.iter().enumerate() {
        let b = format!("{BEGIN}{k}");
        let en = format!("{END}{k}");
        let from = pre.find(&b)? + b.len();
        let to = from + pre[from..].find(&en)?;
        out.push_str(src.get(at..*s as usize)?);
        out.push(' ');
        out.push_str(pre[from..to].trim());
        out.push(' ');
        at = *e as usize;
    }
    out.push_str(src.get(at..)?);
    Some(out)
}

fn merge_stmt(a: &mut Stmt, b: &Stmt) {
    use StmtKind::*;
    match (&mut a.kind, &b.kind) {
        (Compound(x), Compound(y)) if x.len() == y.len() => {
            x.iter_mut().zip(y).for_each(|(a, b)| merge_stmt(a, b));
        }
        (Decl(x), Decl(y)) if x.len() == y.len() => {
            for (v, w) in x.iter_mut().zip(y) {
                if let (Some(i), Some(j)) = (v.init.as_mut(), w.init.as_ref()) {
                    merge_expr(i, j);
                }
            }
        }
        (Expr(x), Expr(y)) | (Return(Some(x)), Return(Some(y))) => merge_expr(x, y),
        (
            If {
                cond: c1,
                then: t1,
                els: e1,
            },
            If {
                cond: c2,
                then: t2,
                els: e2,
            },
        ) => {
            merge_expr(c1, c2);
            merge_stmt(t1, t2);
            if let (Some(a), Some(b)) = (e1.as_mut(), e2.as_ref()) {
                merge_stmt(a, b);
            }
        }
        (
            For {
                init: i1,
                cond: c1,
                inc: n1,
                body: b1,
            },
            For {
                init: i2,
                cond: c2,
                inc: n2,
                body: b2,
            },
        ) => {
            if let (Some(a), Some(b)) = (i1.as_mut(), i2.as_ref()) {
                merge_stmt(a, b);
            }
            if let (Some(a), Some(b)) = (c1.as_mut(), c2.as_ref()) {
                merge_expr(a, b);
            }
            if let (Some(a), Some(b)) = (n1.as_mut(), n2.as_ref()) {
                merge_expr(a, b);
            }
            merge_stmt(b1, b2);
        }
        (While { cond: c1, body: b1 }, While { cond: c2, body: b2 })
        | (Do { cond: c1, body: b1 }, Do { cond: c2, body: b2 })
        | (Switch { cond: c1, body: b1 }, Switch { cond: c2, body: b2 })
        | (
            Case {
                value: c1,
                body: b1,
                ..
            },
            Case {
                value: c2,
                body: b2,
                ..
            },
        ) => {
            merge_expr(c1, c2);
            merge_stmt(b1, b2);
        }
        (Default { body: b1, .. }, Default { body: b2, .. })
        | (Label { body: b1, .. }, Label { body: b2, .. })
        | (Attributed { body: b1 }, Attributed { body: b2 }) => merge_stmt(b1, b2),
        _ => {}
    }
}

fn merge_expr(a: &mut Expr, b: &Expr) {
    match (&mut a.kind, &b.kind) {
        (ExprKind::Binary { op: op @ None, .. }, ExprKind::Binary { op: Some(o), .. }) => {
            *op = Some(*o)
        }
        (ExprKind::Unary { op: op @ None, .. }, ExprKind::Unary { op: Some(o), .. }) => {
            *op = Some(*o)
        }
        (ExprKind::IntLit(t), ExprKind::IntLit(u))
        | (ExprKind::FloatLit(t), ExprKind::FloatLit(u))
            if is_hole_text(&a.span, t) =>
        {
            *t = u.clone()
        }
        (ExprKind::Opaque { children, .. }, ExprKind::Swizzle { components, .. })
            if children.len() == 1 && !a.span.is_exact() =>
        {
            let base = Box::new(children.remove(0));
            a.kind = ExprKind::Swizzle {
                base,
                components: components.clone(),
            };
        }
        _ => {}
    }
    let (xs, ys) = (a.children_mut(), b.children());
    if xs.len() == ys.len() {
        xs.into_iter().zip(ys).for_each(|(x, y)| merge_expr(x, y));
    }
}

fn is_hole_text(span: &crate::model::Span, t: &str) -> bool {
    !span.is_exact()
        && crate::interface::parse_int_literal(t).is_none()
        && crate::interface::parse_float_literal(t).is_none()
}
