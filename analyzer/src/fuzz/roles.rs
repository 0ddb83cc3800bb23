//! What the kernel does with its arguments' *values*, read from the model: a scalar that
//! bounds a loop or indexes a buffer, and a buffer whose elements do (CSR row pointers,
//! column indices, histogram bins). Random values for those read far out of bounds — the
//! first input of a campaign then crashes the worker and nothing is learned — so the
//! role-aware input class ([`super::classes`]) keeps them inside the buffers' extents.
//!
//! The analysis follows values through the kernel's local variables (`int j = rows[i];` makes
//! `j` carry `rows`' elements) but not into helper functions: a superset would only make
//! more arguments small, never break a run.

use cltrap_kernel::model::{visit_exprs, visit_stmts, Expr, ExprKind, Function, Program, StmtKind};
use std::collections::{BTreeMap, BTreeSet};

/// Where a value comes from: a by-value parameter, or the elements of a pointer parameter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Scalar(String),
    Elements(String),
}

/// The value roles of one kernel's parameters, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roles {
    /// By-value parameters used in a subscript.
    pub index_scalars: BTreeSet<String>,
    /// By-value parameters used in a loop condition.
    pub bound_scalars: BTreeSet<String>,
    /// Pointer parameters whose elements are used in a subscript or a loop condition.
    pub index_buffers: BTreeSet<String>,
}

impl Roles {
    /// True when the argument named `name` should take values inside the buffers' extents.
    pub fn bounds_values(&self, name: &str) -> bool {
        self.index_scalars.contains(name)
            || self.bound_scalars.contains(name)
            || self.index_buffers.contains(name)
    }
}

/// The roles of kernel `name`'s parameters (empty when the kernel is unknown).
pub fn derive(program: &Program, name: &str) -> Roles {
    let Some(k) = program.kernels().find(|f| f.name == name) else {
        return Roles::default();
    };
    let Some(body) = &k.body else {
        return Roles::default();
    };
    let taint = locals(k, body);
    let mut roles = Roles::default();
    let mut note = |sources: BTreeSet<Source>, in_loop: bool| {
        for s in sources {
            match s {
                Source::Scalar(p) if in_loop => {
                    roles.bound_scalars.insert(p);
                }
                Source::Scalar(p) => {
                    roles.index_scalars.insert(p);
                }
                Source::Elements(p) => {
                    roles.index_buffers.insert(p);
                }
            }
        }
    };
    visit_exprs(body, &mut |e| {
        if let ExprKind::Index { index, .. } = &e.kind {
            note(sources(k, &taint, index), false);
        }
    });
    visit_stmts(body, &mut |s| match &s.kind {
        StmtKind::For { cond: Some(c), .. }
        | StmtKind::While { cond: c, .. }
        | StmtKind::Do { cond: c, .. } => note(sources(k, &taint, c), true),
        _ => {}
    });
    roles
}

/// The sources every local variable's value may carry (declarations and assignments,
/// iterated until nothing changes).
fn locals(k: &Function, body: &cltrap_kernel::model::Stmt) -> BTreeMap<String, BTreeSet<Source>> {
    let mut taint: BTreeMap<String, BTreeSet<Source>> = BTreeMap::new();
    for _ in 0..8 {
        let before = taint.clone();
        visit_stmts(body, &mut |s| {
            if let StmtKind::Decl(vars) = &s.kind {
                for v in vars {
                    if let Some(init) = &v.init {
                        let from = sources(k, &before, init);
                        taint.entry(v.name.clone()).or_default().extend(from);
                    }
                }
            }
        });
        visit_exprs(body, &mut |e| {
            if let ExprKind::Binary { lhs, rhs, .. } = &e.kind {
                if let ExprKind::DeclRef(name) = &strip(lhs).kind {
                    if !k.params.iter().any(|p| p.name == *name) && is_assignment(e) {
                        let from = sources(k, &before, rhs);
                        taint.entry(name.clone()).or_default().extend(from);
                    }
                }
            }
        });
        if taint == before {
            break;
        }
    }
    taint
}

/// `x = v`, `x += v`, ...: the assignments after which `x` may carry `v`'s sources.
fn is_assignment(e: &Expr) -> bool {
    use cltrap_kernel::model::BinOp::*;
    matches!(
        &e.kind,
        ExprKind::Binary {
            op: Some(Assign | AddAssign | SubAssign | MulAssign | OrAssign | XorAssign),
            ..
        }
    )
}

fn strip(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Paren(x) | ExprKind::Implicit(x) | ExprKind::Cast { operand: x } => strip(x),
        _ => e,
    }
}

/// The sources `e`'s value may carry: parameters read by value, the elements of pointer
/// parameters it subscripts (not the subscript: `a[i]` carries `a`'s elements, not `i`).
fn sources(k: &Function, taint: &BTreeMap<String, BTreeSet<Source>>, e: &Expr) -> BTreeSet<Source> {
    let mut out = BTreeSet::new();
    collect(k, taint, e, &mut out);
    out
}

fn collect(
    k: &Function,
    taint: &BTreeMap<String, BTreeSet<Source>>,
    e: &Expr,
    out: &mut BTreeSet<Source>,
) {
    match &e.kind {
        ExprKind::DeclRef(name) => match k.params.iter().find(|p| p.name == *name) {
            Some(p) if p.pointee.is_some() => {}
            Some(_) => {
                out.insert(Source::Scalar(name.clone()));
            }
            None => out.extend(taint.get(name).into_iter().flatten().cloned()),
        },
        ExprKind::Index { base, .. } => {
            if let ExprKind::DeclRef(name) = &strip(base).kind {
                if k.params.iter().any(|p| p.name == *name) {
                    out.insert(Source::Elements(name.clone()));
                }
            }
        }
        ExprKind::Unary {
            op: Some(cltrap_kernel::model::UnOp::Deref),
            operand,
        } => {
            if let ExprKind::DeclRef(name) = &strip(operand).kind {
                if k.params.iter().any(|p| p.name == *name) {
                    out.insert(Source::Elements(name.clone()));
                }
            }
        }
        ExprKind::SizeOf => {}
        _ => {
            for c in e.children() {
                collect(k, taint, c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_row_pointers_and_column_indices_bound_values_and_a_guard_scalar_does_not() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fuzz/crashing.cl"
        ))
        .unwrap();
        let p = cltrap_kernel::parse_program(&src, "").unwrap();
        let r = derive(&p, "spmv_csr");
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(r.index_buffers, set(&["cols", "row_ptr"]));
        assert!(
            r.index_scalars.is_empty() && r.bound_scalars.is_empty(),
            "{r:?}"
        );
        let w = derive(&p, "walk");
        assert_eq!(w.bound_scalars, set(&["start", "step", "stop"]));
        assert!(w.index_buffers.is_empty(), "{w:?}");
    }
}
