//! Schema sites that keep floating-point contraction as the original build does it.
//!
//! Why: OpenCL C compilers contract `a * b + c` into one fused multiply-add when the product
//! is a direct operand of the sum (clang's default `-ffp-contract=on`). A schema site around
//! the product alone, `(sel == 3u ? (a / b) : (a * b)) + c`, puts a conditional between the
//! two, so the unmutated path of the schema rounds the product on its own and computes
//! something other than the application's build (a few ulp, or far more on cancelling inputs):
//! every test case of such a kernel would then be dropped as "the original does not reproduce
//! the recording". So a site whose expression is a floating-point product or quotient that
//! feeds a `+`/`-` (or `+=`/`-=`) directly is widened to that sum: each arm of the conditional
//! then holds a whole `a * b + c` and contracts as the original does.

use std::collections::HashMap;

use super::Mutant;
use crate::model::{visit_exprs, BinOp, Expr, ExprKind, Program};

fn is_float(ty: &str) -> bool {
    ty.contains("float") || ty.contains("double") || ty.contains("half")
}

/// The spans of `e` and of the parentheses and implicit conversions around its core, down to
/// the core.
fn wrapper_spans(e: &Expr) -> Vec<(u32, u32)> {
    let mut out = vec![(e.span.start, e.span.end)];
    let mut cur = e;
    while let ExprKind::Paren(inner) | ExprKind::Implicit(inner) = &cur.kind {
        cur = inner;
        out.push((cur.span.start, cur.span.end));
    }
    out
}

/// Spans of products and quotients that are direct operands of a floating-point sum, each
/// mapped to the sum's span.
fn contracted_operands(p: &Program) -> HashMap<(u32, u32), (u32, u32)> {
    let mut map = HashMap::new();
    for body in p
        .functions
        .iter()
        .filter(|f| f.span.is_some())
        .filter_map(|f| f.body.as_ref())
    {
        visit_exprs(body, &mut |e| {
            let ExprKind::Binary {
                op: Some(op),
                lhs,
                rhs,
                ..
            } = &e.kind
            else {
                return;
            };
            if !matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::AddAssign | BinOp::SubAssign
            ) || !e.span.is_exact()
                || !is_float(&e.ty)
            {
                return;
            }
            for operand in [lhs, rhs] {
                let core = operand.peel();
                let product = matches!(
                    core.kind,
                    ExprKind::Binary {
                        op: Some(BinOp::Mul | BinOp::Div),
                        ..
                    }
                );
                if product && is_float(&core.ty) {
                    for s in wrapper_spans(operand) {
                        map.insert(s, (e.span.start, e.span.end));
                    }
                }
            }
        });
    }
    map
}

/// Widens the sites of `mutants` that sit on a contracted product to the sum around it
/// (see the module's doc). Patches are unchanged: they lie inside the wider site too.
pub(crate) fn keep_contraction(p: &Program, mutants: &mut [Mutant]) {
    let map = contracted_operands(p);
    if map.is_empty() {
        return;
    }
    for m in mutants.iter_mut() {
        if super::needs_kernel_copy(m) {
            continue;
        }
        if let Some(site) = m.site.and_then(|s| map.get(&s).copied()) {
            m.site = Some(site);
        }
    }
}
