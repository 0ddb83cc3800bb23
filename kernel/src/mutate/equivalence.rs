//! Trivially equivalent mutants, found syntactically: an operator swap whose right operand
//! makes both operators the identity (`x*1`→`x/1`, `a-0`→`a+0`, `x<<0`→`x>>0`, ...). Schema
//! mutants cannot be told apart by their device binaries (they share one program), so this is
//! how schema mutants are detected; mutants compiled on their own are also compared by binary
//! (see the analyzer).

use crate::model::{BinOp, Expr, ExprKind};

/// The value of a literal operand, when it is a plain `0` or `1` (integer or floating).
fn literal(e: &Expr) -> Option<f64> {
    let t = match &e.peel().kind {
        ExprKind::IntLit(t) | ExprKind::FloatLit(t) => t.as_str(),
        _ => return None,
    };
    let t = t.trim_end_matches(['u', 'U', 'l', 'L', 'f', 'F', 'h', 'H']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|v| v as f64);
    }
    t.parse::<f64>().ok()
}

/// Why replacing the operator of binary expression `e` by `new` cannot change its value, if
/// that is trivially so.
pub(crate) fn trivially_equivalent(e: &Expr, new: &str) -> Option<String> {
    use BinOp::*;
    let ExprKind::Binary {
        op: Some(op), rhs, ..
    } = &e.kind
    else {
        return None;
    };
    let new = BinOp::from_token(new)?;
    let v = literal(rhs)?;
    let identity_zero = [
        (Add, Sub),
        (Sub, Add),
        (Shl, Shr),
        (Shr, Shl),
        (AddAssign, SubAssign),
        (SubAssign, AddAssign),
        (ShlAssign, ShrAssign),
        (ShrAssign, ShlAssign),
        (BitOr, BitXor),
        (BitXor, BitOr),
    ];
    let identity_one = [
        (Mul, Div),
        (Div, Mul),
        (MulAssign, DivAssign),
        (DivAssign, MulAssign),
    ];
    if v == 0.0 && identity_zero.contains(&(*op, new)) {
        return Some(format!(
            "`{} 0` and `{} 0` both leave the value unchanged",
            op.token(),
            new.token()
        ));
    }
    if v == 1.0 && identity_one.contains(&(*op, new)) {
        return Some(format!(
            "`{} 1` and `{} 1` both leave the value unchanged",
            op.token(),
            new.token()
        ));
    }
    None
}
