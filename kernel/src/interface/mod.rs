//! A kernel's interface, derived from the model: for each argument its address space, value
//! type and role (input, output or both, read from the code), plus the constants the kernel
//! compares against. Fuzzing needs it to make up and mutate typed inputs; the solver needs it
//! to make arguments symbolic; `cltrap fuzz --init` writes it out for people to edit.

pub mod structs;
pub mod types;

use serde::{Deserialize, Serialize};

use crate::model::{
    visit_exprs, AddressSpace, BinOp, Expr, ExprKind, Function, Program, StmtKind, UnOp,
};
use crate::KernelError;
pub use structs::{layout_of, parse_structs, Field, StructLayout};
pub use types::{parse_value_type, pointee, strip_qualifiers, Scalar, ValueType};

/// What the kernel does with the memory behind a pointer argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Only read.
    Input,
    /// Only written.
    Output,
    /// Read and written.
    Both,
}

/// How an argument is passed, and what the fuzzer and solver can do with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgKind {
    /// A scalar or vector by value.
    Value {
        /// Its type.
        ty: ValueType,
    },
    /// A `__global` / `__constant` pointer to a buffer.
    Buffer {
        /// Element type when it is a scalar or vector (`None`: a struct or unknown typedef).
        elem: Option<ValueType>,
        /// Element spelling (`float4`, `S`).
        elem_name: String,
        /// Read, written or both.
        role: Role,
        /// For structs with a known layout: their fields.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        layout: Option<StructLayout>,
    },
    /// A `__local` pointer: only its size matters to the host.
    Local {
        /// Element type when known.
        elem: Option<ValueType>,
    },
    /// An image (carried over from a capture unchanged).
    Image,
    /// A sampler (carried over from a capture unchanged).
    Sampler,
    /// A struct (or unknown type) by value: fields when its layout is known, else its bytes
    /// are carried over.
    Opaque {
        /// The struct's fields.
        layout: Option<StructLayout>,
    },
}

/// One argument of a kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgInterface {
    /// Position.
    pub index: usize,
    /// Parameter name.
    pub name: String,
    /// Full type spelling.
    pub ty: String,
    /// Address space (of the pointee for pointers).
    pub address_space: AddressSpace,
    /// What it is.
    pub kind: ArgKind,
}

/// A kernel's interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInterface {
    /// Kernel name.
    pub kernel: String,
    /// Arguments in order.
    pub args: Vec<ArgInterface>,
    /// Integer literals appearing in the kernel and its helpers (with their negations when
    /// written as `-N`), for value mutations.
    pub int_constants: Vec<i64>,
    /// Floating literals appearing in the kernel and its helpers.
    pub float_constants: Vec<f64>,
}

/// Derives the interface of kernel `name` of `program`.
pub fn derive(program: &Program, name: &str) -> Result<KernelInterface, KernelError> {
    let k = program
        .kernels()
        .find(|f| f.name == name)
        .ok_or_else(|| KernelError::NoSuchKernel(name.into()))?;
    let structs = parse_structs(&program.source);
    let mut args = Vec::new();
    for (index, p) in k.params.iter().enumerate() {
        let bare = strip_qualifiers(&p.ty);
        let kind = if bare.contains("image") && !bare.contains('*') {
            ArgKind::Image
        } else if bare == "sampler_t" {
            ArgKind::Sampler
        } else if let Some(pointee) = pointee(&p.ty) {
            let elem = parse_value_type(&pointee);
            if p.address_space == AddressSpace::Local {
                ArgKind::Local { elem }
            } else {
                let read_only =
                    p.address_space == AddressSpace::Constant || p.ty.starts_with("const ");
                ArgKind::Buffer {
                    elem,
                    layout: layout_of(&structs, &pointee).cloned(),
                    elem_name: pointee,
                    role: if read_only {
                        Role::Input
                    } else {
                        param_role(program, k, &p.name, 0)
                    },
                }
            }
        } else if let Some(ty) = parse_value_type(&p.ty) {
            ArgKind::Value { ty }
        } else {
            ArgKind::Opaque {
                layout: layout_of(&structs, &p.ty).cloned(),
            }
        };
        args.push(ArgInterface {
            index,
            name: p.name.clone(),
            ty: p.ty.clone(),
            address_space: p.address_space,
            kind,
        });
    }
    let (int_constants, float_constants) = constants(program, k);
    Ok(KernelInterface {
        kernel: name.into(),
        args,
        int_constants,
        float_constants,
    })
}

/// The variable an lvalue or pointer expression is based on (`a[i].x` → `a`, `*(p + 1)` → `p`).
pub fn base_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::DeclRef(n) => Some(n),
        ExprKind::Index { base, .. }
        | ExprKind::Member { base, .. }
        | ExprKind::Swizzle { base, .. } => base_name(base),
        ExprKind::Unary { operand, .. } | ExprKind::Cast { operand } => base_name(operand),
        ExprKind::Paren(i) | ExprKind::Implicit(i) => base_name(i),
        ExprKind::Binary {
            op: Some(BinOp::Add | BinOp::Sub),
            lhs,
            rhs,
            ..
        } => {
            if lhs.ty.contains('*') {
                base_name(lhs)
            } else {
                base_name(rhs)
            }
        }
        _ => None,
    }
}

/// Whether `e` (an assignment target) writes through memory rather than to the variable itself.
fn writes_through(e: &Expr) -> bool {
    match &e.peel().kind {
        ExprKind::Index { .. }
        | ExprKind::Unary {
            op: Some(UnOp::Deref),
            ..
        } => true,
        ExprKind::Member { base, arrow, .. } => *arrow || writes_through(base),
        ExprKind::Swizzle { base, .. } => writes_through(base),
        _ => false,
    }
}

/// Built-ins that write through their pointer argument(s).
fn builtin_writes(callee: &str) -> bool {
    callee.starts_with("vstore")
        || callee.starts_with("atomic")
        || callee.starts_with("atom_")
        || callee.starts_with("async_work_group")
        || callee == "fract"
        || callee == "modf"
        || callee == "frexp"
        || callee == "lgamma_r"
        || callee == "remquo"
        || callee == "sincos"
}

/// Role of pointer parameter `name` of `f`: written through (directly, through local aliases,
/// or by a callee), read, or both.
fn param_role(program: &Program, f: &Function, name: &str, depth: u32) -> Role {
    let Some(body) = &f.body else {
        return Role::Both;
    };
    let mut names = vec![name.to_string()];
    // Local pointer variables initialised from the parameter are aliases.
    crate::model::visit_stmts(body, &mut |s| {
        if let StmtKind::Decl(vars) = &s.kind {
            for v in vars {
                if let Some(init) = &v.init {
                    if v.ty.contains('*')
                        && base_name(init).is_some_and(|b| names.iter().any(|n| n == b))
                    {
                        names.push(v.name.clone());
                    }
                }
            }
        }
    });
    let ours = |e: &Expr| base_name(e).is_some_and(|b| names.iter().any(|n| n == b));
    let (mut read, mut written) = (false, false);
    visit_exprs(body, &mut |e| match &e.kind {
        ExprKind::Binary {
            op: Some(op), lhs, ..
        } if op.is_assignment() && writes_through(lhs) && ours(lhs) => {
            written = true;
            // A compound assignment reads the element; so does a store to a part of one
            // (`in[i].w = 0`, `s[i].field = v`): the parts it leaves are the element's
            // previous contents, which reach the output.
            if *op != BinOp::Assign || writes_part(lhs) {
                read = true;
            }
        }
        ExprKind::Unary {
            op: Some(UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec),
            operand,
        } if writes_through(operand) && ours(operand) => {
            written = true;
            read = true;
        }
        ExprKind::Call { callee, args, .. } => {
            for (i, a) in args.iter().enumerate() {
                if !a.ty.contains('*') || !ours(a) {
                    continue;
                }
                if let Some(g) = program.function(callee).filter(|_| depth < 8) {
                    match g
                        .params
                        .get(i)
                        .map(|p| param_role(program, g, &p.name, depth + 1))
                    {
                        Some(Role::Input) => read = true,
                        Some(Role::Output) => written = true,
                        _ => (read, written) = (true, true),
                    }
                } else if builtin_writes(callee) {
                    written = true;
                    read |= callee.starts_with("atom");
                } else {
                    read = true;
                }
            }
        }
        _ => {}
    });
    // Element accesses that are not the target of a plain `=` are reads.
    read |= reads_besides_stores(body, &names);
    match (read, written) {
        (_, false) => Role::Input,
        (false, true) => Role::Output,
        (true, true) => Role::Both,
    }
}

/// The lvalue is a lane (swizzle) or a field of a memory element, not the whole element.
fn writes_part(lhs: &Expr) -> bool {
    // Only called on lvalues that write through memory (`writes_through`).
    matches!(
        lhs.peel().kind,
        ExprKind::Swizzle { .. } | ExprKind::Member { .. }
    )
}

/// The element access an assignment target writes through (`a[i].x.y` → `a[i]`).
fn accessed(e: &Expr) -> &Expr {
    match &e.peel().kind {
        ExprKind::Member {
            base, arrow: false, ..
        }
        | ExprKind::Swizzle { base, .. } => accessed(base),
        _ => e.peel(),
    }
}

/// Whether the memory behind `names` is read anywhere other than as the target of `=`.
fn reads_besides_stores(body: &crate::model::Stmt, names: &[String]) -> bool {
    let ours = |e: &Expr| base_name(e).is_some_and(|b| names.iter().any(|n| n == b));
    let mut store_targets: Vec<(u32, u32)> = Vec::new();
    let mut read = false;
    visit_exprs(body, &mut |e| {
        if let ExprKind::Binary {
            op: Some(op), lhs, ..
        } = &e.kind
        {
            if op.is_assignment() && ours(lhs) {
                if *op == BinOp::Assign {
                    let a = accessed(lhs);
                    store_targets.push((a.span.start, a.span.end));
                } else {
                    read = true;
                }
            }
        }
    });
    visit_exprs(body, &mut |e| {
        let is_access = matches!(
            &e.kind,
            ExprKind::Index { .. }
                | ExprKind::Unary {
                    op: Some(UnOp::Deref),
                    ..
                }
        );
        if is_access && ours(e) && !store_targets.contains(&(e.span.start, e.span.end)) {
            read = true;
        }
        if let ExprKind::Unary {
            op: Some(UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec),
            operand,
        } = &e.kind
        {
            if ours(operand) {
                read = true;
            }
        }
    });
    read
}

/// Integer and float literals of `k` and every helper it calls (transitively).
fn constants(program: &Program, k: &Function) -> (Vec<i64>, Vec<f64>) {
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    let mut todo = vec![k.name.clone()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(f) = program.function(&name) else {
            continue;
        };
        let Some(body) = &f.body else { continue };
        todo.extend(f.calls.iter().cloned());
        visit_exprs(body, &mut |e| match &e.kind {
            ExprKind::IntLit(t) => {
                if let Some(v) = parse_int_literal(t) {
                    ints.push(v);
                }
            }
            ExprKind::FloatLit(t) => {
                if let Some(v) = parse_float_literal(t) {
                    floats.push(v);
                }
            }
            ExprKind::Unary {
                op: Some(UnOp::Minus),
                operand,
            } => match &operand.peel().kind {
                ExprKind::IntLit(t) => {
                    if let Some(v) = parse_int_literal(t) {
                        ints.push(v.wrapping_neg());
                    }
                }
                ExprKind::FloatLit(t) => {
                    if let Some(v) = parse_float_literal(t) {
                        floats.push(-v);
                    }
                }
                _ => {}
            },
            _ => {}
        });
    }
    ints.sort_unstable();
    ints.dedup();
    floats.sort_by(|a, b| a.total_cmp(b));
    floats.dedup();
    (ints, floats)
}

/// Value of an OpenCL C integer literal as written (`0x1F`, `017`, `42u`, `7UL`).
pub fn parse_int_literal(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(v as i64)
}

/// Value of an OpenCL C floating literal as written (`1.5f`, `2e-3`, `0x1p-3f`).
pub fn parse_float_literal(t: &str) -> Option<f64> {
    let t = t.trim_end_matches(['f', 'F', 'h', 'H', 'l', 'L']);
    if t.starts_with("0x") || t.starts_with("0X") {
        return parse_hex_float(&t[2..]);
    }
    t.parse::<f64>().ok()
}

fn parse_hex_float(t: &str) -> Option<f64> {
    let (mant, exp) = t.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        assert_eq!(parse_int_literal("0x1Fu"), Some(31));
        assert_eq!(parse_int_literal("017"), Some(15));
        assert_eq!(parse_int_literal("0"), Some(0));
        assert_eq!(parse_float_literal("1.5f"), Some(1.5));
        assert_eq!(parse_float_literal("0x1p-3f"), Some(0.125));
    }
}
