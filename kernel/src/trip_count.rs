//! Constant trip counts of `for` loops, so coverage does not count loop-boundary classes that
//! no input can reach: `for (int k = 0; k < 16; k++)` always runs 16 times, so "ran 0 times"
//! and "ran 1 time" are not coverage anyone can obtain.
//!
//! A loop has a constant trip count when its init stores an integer constant into one
//! variable, its condition compares that variable with an integer constant (`<`, `<=`, `>`,
//! `>=`, `!=`), its step adds or subtracts a constant (`k++`, `k -= 2`, `k = k + 4`) and the
//! body never writes the variable nor takes its address. Constants are literals and operators
//! on them, also where a macro wrote them (the model holds the expanded values). Every value
//! the variable takes must fit its type (so `uchar k < 300` or `uint k >= 0` are not
//! constant). Anything else is not decided here and keeps every boundary class.

use crate::model::{visit_exprs, visit_stmts, BinOp, Expr, ExprKind, Stmt, StmtKind, UnOp};

/// What is known about a loop's number of iterations whatever the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TripCount {
    /// Iterations the loop header allows (the condition becomes false after exactly this many).
    pub count: u64,
    /// Whether the body may leave the loop early (`break`, `return` or `goto`), so it may run
    /// fewer than `count` times (but at least once when `count > 0`).
    pub early_exit: bool,
}

/// The constant trip count of `s` (a `for` loop), when it has one (see the module docs).
pub fn constant_trip_count(s: &Stmt) -> Option<TripCount> {
    let StmtKind::For {
        init: Some(init),
        cond: Some(cond),
        inc: Some(inc),
        body,
    } = &s.kind
    else {
        return None;
    };
    let (var, var_ty, start) = init_of(init)?;
    let (op, bound, bound_ty) = condition_of(cond, &var)?;
    let step = step_of(inc, &var)?;
    if writes(body, &var) {
        return None;
    }
    let unsigned = is_unsigned(&var_ty) || is_unsigned(&bound_ty);
    let (lo, hi) = range_of(&var_ty)?;
    let count = count(op, start, bound, step)?;
    let last = start.checked_add(step.checked_mul(i128::from(count))?)?;
    let fits = |v: i128| lo <= v && v <= hi && !(unsigned && v < 0);
    if !(fits(start) && fits(last) && fits(bound)) {
        return None;
    }
    Some(TripCount {
        count,
        early_exit: leaves_early(body),
    })
}

/// `int k = C` or `k = C`: the variable, its type and its start value.
fn init_of(init: &Stmt) -> Option<(String, String, i128)> {
    match &init.kind {
        StmtKind::Decl(vars) if vars.len() == 1 => {
            let v = &vars[0];
            Some((v.name.clone(), v.ty.clone(), value(v.init.as_ref()?)?))
        }
        StmtKind::Expr(e) => match &e.peel().kind {
            ExprKind::Binary {
                op: Some(BinOp::Assign),
                lhs,
                rhs,
                ..
            } => {
                let ExprKind::DeclRef(name) = &lhs.peel().kind else {
                    return None;
                };
                Some((name.clone(), lhs.peel().ty.clone(), value(rhs)?))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `k op C` (or `C op k`, turned around): the comparison, the bound and the bound's type.
fn condition_of(cond: &Expr, var: &str) -> Option<(BinOp, i128, String)> {
    let ExprKind::Binary {
        op: Some(op),
        lhs,
        rhs,
        ..
    } = &cond.peel().kind
    else {
        return None;
    };
    let flipped = match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Gt => BinOp::Lt,
        BinOp::Le => BinOp::Ge,
        BinOp::Ge => BinOp::Le,
        BinOp::Ne => BinOp::Ne,
        _ => return None,
    };
    if is_var(lhs, var) {
        Some((*op, value(rhs)?, rhs.ty.clone()))
    } else if is_var(rhs, var) {
        Some((flipped, value(lhs)?, lhs.ty.clone()))
    } else {
        None
    }
}

/// `k++`, `--k`, `k += C`, `k -= C`, `k = k + C`, `k = C + k`, `k = k - C`: the step.
fn step_of(inc: &Expr, var: &str) -> Option<i128> {
    match &inc.peel().kind {
        ExprKind::Unary {
            op: Some(op),
            operand,
        } if is_var(operand, var) => match op {
            UnOp::PreInc | UnOp::PostInc => Some(1),
            UnOp::PreDec | UnOp::PostDec => Some(-1),
            _ => None,
        },
        ExprKind::Binary {
            op: Some(op),
            lhs,
            rhs,
            ..
        } if is_var(lhs, var) => match op {
            BinOp::AddAssign => value(rhs),
            BinOp::SubAssign => value(rhs)?.checked_neg(),
            BinOp::Assign => match &rhs.peel().kind {
                ExprKind::Binary {
                    op: Some(BinOp::Add),
                    lhs: a,
                    rhs: b,
                    ..
                } if is_var(a, var) => value(b),
                ExprKind::Binary {
                    op: Some(BinOp::Add),
                    lhs: a,
                    rhs: b,
                    ..
                } if is_var(b, var) => value(a),
                ExprKind::Binary {
                    op: Some(BinOp::Sub),
                    lhs: a,
                    rhs: b,
                    ..
                } if is_var(a, var) => value(b)?.checked_neg(),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
    .filter(|s| *s != 0)
}

/// Iterations from `start` while `start + i * step op bound` holds; `None` when it never
/// stops by the condition (a step away from the bound, `!=` never met).
fn count(op: BinOp, start: i128, bound: i128, step: i128) -> Option<u64> {
    let holds = |v: i128| match op {
        BinOp::Lt => v < bound,
        BinOp::Le => v <= bound,
        BinOp::Gt => v > bound,
        BinOp::Ge => v >= bound,
        BinOp::Ne => v != bound,
        _ => false,
    };
    if !holds(start) {
        return Some(0);
    }
    let n = match op {
        BinOp::Lt if step > 0 => (bound - start + step - 1) / step,
        BinOp::Le if step > 0 => (bound - start) / step + 1,
        BinOp::Gt if step < 0 => (start - bound + (-step) - 1) / (-step),
        BinOp::Ge if step < 0 => (start - bound) / (-step) + 1,
        BinOp::Ne if (bound - start) % step == 0 && (bound - start) / step > 0 => {
            (bound - start) / step
        }
        _ => return None,
    };
    u64::try_from(n).ok()
}

/// The value of an integer constant expression (literals and operators on them).
fn value(e: &Expr) -> Option<i128> {
    match &e.kind {
        ExprKind::IntLit(t) => crate::interface::parse_int_literal(t).map(i128::from),
        ExprKind::Paren(x) | ExprKind::Implicit(x) => value(x),
        ExprKind::Cast { operand } if range_of(&e.ty).is_some() => value(operand),
        ExprKind::Unary {
            op: Some(op),
            operand,
        } => {
            let v = value(operand)?;
            match op {
                UnOp::Plus => Some(v),
                UnOp::Minus => v.checked_neg(),
                UnOp::BitNot => Some(!v),
                _ => None,
            }
        }
        ExprKind::Binary {
            op: Some(op),
            lhs,
            rhs,
            ..
        } => {
            let (a, b) = (value(lhs)?, value(rhs)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div if b != 0 => a.checked_div(b),
                BinOp::Rem if b != 0 => a.checked_rem(b),
                BinOp::Shl if (0..63).contains(&b) => a.checked_shl(b as u32),
                BinOp::Shr if (0..63).contains(&b) => Some(a >> b),
                BinOp::BitAnd => Some(a & b),
                BinOp::BitOr => Some(a | b),
                BinOp::BitXor => Some(a ^ b),
                _ => None,
            }
        }
        _ => None,
    }
    // Values beyond 64 bits are not what OpenCL C computes; leave such loops alone.
    .filter(|v| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(v))
}

fn is_var(e: &Expr, var: &str) -> bool {
    matches!(&e.peel().kind, ExprKind::DeclRef(n) if n == var)
}

/// The values an integer type holds, from its spelling; `None` for anything else.
fn range_of(ty: &str) -> Option<(i128, i128)> {
    let words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__private" | "private"))
        .collect();
    let bits = |b: u32, signed: bool| {
        if signed {
            Some((-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1))
        } else {
            Some((0, (1i128 << b) - 1))
        }
    };
    match words.join(" ").as_str() {
        "char" | "signed char" => bits(8, true),
        "uchar" | "unsigned char" => bits(8, false),
        "short" | "signed short" => bits(16, true),
        "ushort" | "unsigned short" => bits(16, false),
        "int" | "signed int" | "signed" => bits(32, true),
        "uint" | "unsigned int" | "unsigned" => bits(32, false),
        "long" | "signed long" | "long long" => bits(64, true),
        "ulong" | "unsigned long" | "unsigned long long" | "size_t" => bits(64, false),
        _ => None,
    }
}

fn is_unsigned(ty: &str) -> bool {
    range_of(ty).is_some_and(|(lo, _)| lo == 0)
}

/// Whether `body` writes `var` or takes its address (then its values are not the header's).
/// A statement kind the model does not break down counts as a write.
fn writes(body: &Stmt, var: &str) -> bool {
    let mut w = false;
    visit_stmts(body, &mut |s| w |= matches!(s.kind, StmtKind::Other(_)));
    visit_exprs(body, &mut |e| {
        w |= match &e.kind {
            ExprKind::Binary {
                op: Some(op), lhs, ..
            } => op.is_assignment() && is_var(lhs, var),
            ExprKind::Binary { op: None, lhs, .. } => is_var(lhs, var),
            ExprKind::Unary {
                op:
                    Some(UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec | UnOp::AddrOf)
                    | None,
                operand,
            } => is_var(operand, var),
            _ => false,
        }
    });
    w
}

/// Whether `body` can leave its loop before the condition fails: a `break` of this loop (not
/// of a nested loop or `switch`), or any `return` or `goto`.
fn leaves_early(body: &Stmt) -> bool {
    fn walk(s: &Stmt, nested: bool) -> bool {
        match &s.kind {
            StmtKind::Break => !nested,
            StmtKind::Return(_) | StmtKind::Goto(_) => true,
            StmtKind::Compound(v) => v.iter().any(|c| walk(c, nested)),
            StmtKind::If { then, els, .. } => {
                walk(then, nested) || els.as_deref().is_some_and(|e| walk(e, nested))
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Do { body, .. }
            | StmtKind::Switch { body, .. } => walk(body, true),
            StmtKind::Case { body, .. }
            | StmtKind::Default { body, .. }
            | StmtKind::Label { body, .. }
            | StmtKind::Attributed { body } => walk(body, nested),
            StmtKind::Other(_) => true,
            StmtKind::Decl(_) | StmtKind::Expr(_) | StmtKind::Continue | StmtKind::Null => false,
        }
    }
    walk(body, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_program;

    fn trip(src: &str) -> Option<TripCount> {
        let p = parse_program(src, "").unwrap();
        let body = p.functions.iter().find_map(|f| f.body.as_ref()).unwrap();
        let mut found = None;
        visit_stmts(body, &mut |s| {
            if found.is_none() && matches!(s.kind, StmtKind::For { .. }) {
                found = Some(constant_trip_count(s));
            }
        });
        found.expect("a for loop")
    }

    fn k(body: &str) -> String {
        format!("#define N 16\n#define HALF (N / 2)\n__kernel void k(__global int* o, int n) {{ int s = 0; {body} o[0] = s; }}")
    }

    #[test]
    fn constant_bounds_give_the_trip_count_also_through_macros() {
        let n = |b: &str| trip(&k(b)).map(|t| (t.count, t.early_exit));
        assert_eq!(n("for (int i = 0; i < 16; i++) s += i;"), Some((16, false)));
        assert_eq!(n("for (int i = 0; i < N; ++i) s += i;"), Some((16, false)));
        assert_eq!(
            n("for (int i = 0; i <= HALF; i += 3) s += i;"),
            Some((3, false))
        );
        assert_eq!(
            n("for (int i = N - 1; i >= 0; i--) s += i;"),
            Some((16, false))
        );
        assert_eq!(
            n("for (uint i = 1; i < 2; i = i + 1) s += i;"),
            Some((1, false))
        );
        assert_eq!(n("for (int i = 4; i < 4; i++) s += i;"), Some((0, false)));
        assert_eq!(
            n("for (int i = 0; i != 8; i += 2) s += i;"),
            Some((4, false))
        );
        assert_eq!(
            n("for (int i = 0; i < 8; i++) { if (s > n) break; s += i; }"),
            Some((8, true))
        );
        assert_eq!(
            n("for (int i = 0; i < 8; i++) { for (;;) { break; } switch (n) { case 1: break; } }"),
            Some((8, false))
        );
    }

    #[test]
    fn loops_that_depend_on_input_or_write_their_variable_are_not_constant() {
        let n = |b: &str| trip(&k(b));
        assert_eq!(n("for (int i = 0; i < n; i++) s += i;"), None);
        assert_eq!(n("for (int i = 0; i < 16; i++) { s += i; i += s; }"), None);
        assert_eq!(
            n("for (int i = 0; i < 16; i++) { int* p = &i; s += *p; }"),
            None
        );
        assert_eq!(n("for (int i = 0; i < 16; i--) s += i;"), None);
        assert_eq!(n("for (int i = 0; i != 7; i += 2) s += i;"), None);
        assert_eq!(n("for (uint i = 15; i >= 0; i--) s += i;"), None);
        assert_eq!(n("for (uchar i = 0; i < 300; i++) s += i;"), None);
        assert_eq!(n("for (int i = 0; i < 16 && s < n; i++) s += i;"), None);
        assert_eq!(n("int i; for (i = n; i < 16; i++) s += i;"), None);
    }
}
