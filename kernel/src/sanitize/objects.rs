//! Which memory object a pointer expression points into: the attribution the checks rest on.
//!
//! Why a module of its own: a check is only as good as the extent it compares with, so an
//! access is checked only when its pointer provably derives from one object — a kernel
//! argument (`__global`, `__constant` or `__local` pointer), a `__local` array declared in the
//! kernel, or a private pointer variable every assignment of which derives from the same one
//! (`p = arg + i`, `p += k`, `p = &tile[j]`). Anything else is "not checked", never guessed.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{
    visit_exprs, visit_stmts, AddressSpace, BinOp, Expr, ExprKind, Function, StmtKind, UnOp,
};

/// The address space of an object the pass checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Global,
    Constant,
    Local,
}

impl Space {
    /// The OpenCL C qualifier.
    pub(crate) fn qualifier(self) -> &'static str {
        match self {
            Space::Global => "__global",
            Space::Constant => "__constant",
            Space::Local => "__local",
        }
    }

    /// The space a type spelling's outermost pointee (or array) lives in.
    pub(crate) fn of_type(ty: &str) -> Option<Space> {
        let words: Vec<&str> = ty
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        if words.contains(&"__global") || words.contains(&"global") {
            Some(Space::Global)
        } else if words.contains(&"__constant") || words.contains(&"constant") {
            Some(Space::Constant)
        } else if words.contains(&"__local") || words.contains(&"local") {
            Some(Space::Local)
        } else {
            None
        }
    }
}

/// What an object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Kernel argument `index`; `assigned` when the kernel assigns to the parameter itself
    /// (the pass then keeps a copy of its value at entry as the object's base).
    Arg { index: u32, assigned: bool },
    /// The `n`-th `__local` array declared in the kernel body, with its size in bytes when the
    /// pass can compute it from the type (needed for its race / uninitialised shadow).
    Static { n: usize, bytes: Option<u64> },
}

/// One memory object of a kernel.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    /// Its number in the report (argument index; statics after the arguments).
    pub id: u32,
    /// The argument's or array's name.
    pub name: String,
    pub space: Space,
    pub origin: Origin,
}

/// The objects of one kernel and the private pointers known to point into them.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    pub objects: Vec<Object>,
    by_name: BTreeMap<String, u32>,
    pointers: BTreeMap<String, u32>,
}

impl Scope {
    /// The objects of kernel `f` and the attribution of its private pointer variables.
    pub(crate) fn of_kernel(f: &Function) -> Scope {
        let mut s = Scope::default();
        let Some(body) = &f.body else { return s };
        let mut assigned: BTreeSet<String> = BTreeSet::new();
        // Every assignment to a plain variable: name → right-hand sides (`None` for `+=`,
        // `-=`, `++`, `--`, which keep a pointer inside its object).
        let mut sources: BTreeMap<String, Vec<Option<&Expr>>> = BTreeMap::new();
        visit_exprs(body, &mut |e| match &e.kind {
            ExprKind::Binary {
                op: Some(op),
                lhs,
                rhs,
                ..
            } => {
                if let ExprKind::DeclRef(n) = &lhs.peel().kind {
                    match op {
                        BinOp::Assign => {
                            assigned.insert(n.clone());
                            sources.entry(n.clone()).or_default().push(Some(rhs));
                        }
                        BinOp::AddAssign | BinOp::SubAssign => {
                            assigned.insert(n.clone());
                            sources.entry(n.clone()).or_default().push(None);
                        }
                        BinOp::MulAssign
                        | BinOp::DivAssign
                        | BinOp::RemAssign
                        | BinOp::ShlAssign
                        | BinOp::ShrAssign
                        | BinOp::AndAssign
                        | BinOp::XorAssign
                        | BinOp::OrAssign => {
                            assigned.insert(n.clone());
                        }
                        _ => {}
                    }
                }
            }
            ExprKind::Unary {
                op: Some(op),
                operand,
            } => {
                if let ExprKind::DeclRef(n) = &operand.peel().kind {
                    match op {
                        UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec => {
                            assigned.insert(n.clone());
                            sources.entry(n.clone()).or_default().push(None);
                        }
                        UnOp::AddrOf => {
                            // Its address escapes: it may be changed through it.
                            assigned.insert(n.clone());
                            sources.entry(n.clone()).or_default().push(Some(operand));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        });
        for (i, p) in f.params.iter().enumerate() {
            let space = match p.address_space {
                AddressSpace::Global => Space::Global,
                AddressSpace::Constant => Space::Constant,
                AddressSpace::Local => Space::Local,
                _ => continue,
            };
            if p.pointee.is_none() || p.name.is_empty() {
                continue;
            }
            s.add(
                p.name.clone(),
                space,
                Origin::Arg {
                    index: i as u32,
                    assigned: assigned.contains(&p.name),
                },
            );
        }
        let mut statics = 0usize;
        let mut candidates: Vec<(String, Option<&Expr>)> = Vec::new();
        visit_stmts(body, &mut |st| {
            if let StmtKind::Decl(vars) = &st.kind {
                for v in vars {
                    let array = v.ty.contains('[') && !v.ty.contains('*');
                    match Space::of_type(&v.ty) {
                        Some(Space::Local) if array => {
                            s.add(
                                v.name.clone(),
                                Space::Local,
                                Origin::Static {
                                    n: statics,
                                    bytes: array_bytes(&v.ty),
                                },
                            );
                            statics += 1;
                        }
                        Some(_) if v.ty.contains('*') => {
                            candidates.push((v.name.clone(), v.init.as_ref()))
                        }
                        _ => {}
                    }
                }
            }
        });
        // Statics are numbered after the arguments.
        let nargs = f.params.len() as u32;
        for o in &mut s.objects {
            if let Origin::Static { n, .. } = o.origin {
                o.id = nargs + n as u32;
            }
        }
        s.by_name = s.objects.iter().map(|o| (o.name.clone(), o.id)).collect();
        // Private pointers: a fixed point, since one may be assigned from another.
        for _ in 0..6 {
            let mut changed = false;
            for (name, init) in &candidates {
                if s.pointers.contains_key(name) {
                    continue;
                }
                let mut all: Vec<Option<&Expr>> = init.iter().map(|e| Some(*e)).collect();
                all.extend(sources.get(name).cloned().unwrap_or_default());
                let mut got: Option<u32> = None;
                let mut ok = all.iter().any(|e| e.is_some());
                for e in all.iter().flatten() {
                    match s.derive_with(e, Some(name)) {
                        Some(Some(k)) if got.is_none_or(|g| g == k) => got = Some(k),
                        Some(None) => {}
                        _ => ok = false,
                    }
                }
                if let (true, Some(k)) = (ok, got) {
                    s.pointers.insert(name.clone(), k);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        s
    }

    fn add(&mut self, name: String, space: Space, origin: Origin) {
        let id = match origin {
            Origin::Arg { index, .. } => index,
            Origin::Static { .. } => 0,
        };
        self.objects.push(Object {
            id,
            name,
            space,
            origin,
        });
    }

    /// The object with id `id`.
    pub(crate) fn object(&self, id: u32) -> Option<&Object> {
        self.objects.iter().find(|o| o.id == id)
    }

    /// The object `e` (a pointer or array expression) points into, when it is known.
    pub(crate) fn derive(&self, e: &Expr) -> Option<u32> {
        self.derive_with(e, None).flatten()
    }

    /// `Some(Some(k))`: object k; `Some(None)`: only the variable `this` itself (neutral while
    /// attributing it); `None`: unknown.
    fn derive_with(&self, e: &Expr, this: Option<&str>) -> Option<Option<u32>> {
        let e = e.peel();
        match &e.kind {
            ExprKind::DeclRef(n) => {
                if Some(n.as_str()) == this {
                    return Some(None);
                }
                self.pointers
                    .get(n)
                    .or_else(|| self.by_name.get(n))
                    .map(|k| Some(*k))
            }
            ExprKind::Binary {
                op: Some(op @ (BinOp::Add | BinOp::Sub)),
                lhs,
                rhs,
                ..
            } => {
                if is_pointer(&lhs.ty) {
                    self.derive_with(lhs, this)
                } else if *op == BinOp::Add && is_pointer(&rhs.ty) {
                    self.derive_with(rhs, this)
                } else {
                    None
                }
            }
            ExprKind::Unary {
                op: Some(UnOp::AddrOf),
                operand,
            } => match &operand.peel().kind {
                ExprKind::Index { base, .. } => self.derive_with(base, this),
                _ => None,
            },
            ExprKind::Cast { operand } if is_pointer(&e.ty) => self.derive_with(operand, this),
            ExprKind::Index { base, .. } if e.ty.contains('[') => self.derive_with(base, this),
            ExprKind::Conditional { then, els, .. } => {
                let (a, b) = (self.derive_with(then, this)?, self.derive_with(els, this)?);
                match (a, b) {
                    (Some(x), Some(y)) if x == y => Some(Some(x)),
                    (Some(x), None) | (None, Some(x)) => Some(Some(x)),
                    (None, None) => Some(None),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Whether a type spelling is a pointer or an array (something an index applies to).
pub(crate) fn is_pointer(ty: &str) -> bool {
    ty.contains('*') || ty.contains('[')
}

/// Bytes of a `__local` array type such as `__local float[16][17]` or `__local uint4[8]`,
/// when its element is a built-in scalar or vector.
pub(crate) fn array_bytes(ty: &str) -> Option<u64> {
    let open = ty.find('[')?;
    let elem = element_bytes(&ty[..open])?;
    let mut n = elem;
    for dim in ty[open..].split('[').skip(1) {
        let d: u64 = dim
            .trim_end_matches(|c: char| c == ']' || c.is_whitespace())
            .trim()
            .parse()
            .ok()?;
        n = n.checked_mul(d)?;
    }
    Some(n)
}

/// Bytes of a built-in scalar or vector type spelling (qualifiers ignored).
pub(crate) fn element_bytes(ty: &str) -> Option<u64> {
    let words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "__local"
                    | "local"
                    | "__global"
                    | "global"
                    | "__constant"
                    | "constant"
                    | "__private"
                    | "private"
                    | "const"
                    | "volatile"
                    | "unsigned"
                    | "signed"
            )
        })
        .collect();
    let [name] = words.as_slice() else {
        // `unsigned` alone was filtered: `unsigned int` leaves `int`; `long long` is not OpenCL.
        return None;
    };
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
    let base = &name[..name.len() - digits.len()];
    let lanes: u64 = match digits {
        "" => 1,
        "2" => 2,
        "3" | "4" => 4,
        "8" => 8,
        "16" => 16,
        _ => return None,
    };
    let size = match base {
        "char" | "uchar" | "bool" => 1,
        "short" | "ushort" | "half" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "double" => 8,
        _ => return None,
    };
    Some(size * lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_array_sizes_come_from_builtin_element_types_only() {
        assert_eq!(array_bytes("__local unsigned int[16]"), Some(64));
        assert_eq!(array_bytes("__local float[16][17]"), Some(16 * 17 * 4));
        assert_eq!(array_bytes("__local float3[4]"), Some(64));
        assert_eq!(array_bytes("__local struct S[4]"), None);
    }

    #[test]
    fn spaces_are_read_from_the_type_spelling() {
        assert_eq!(Space::of_type("const __global uint *"), Some(Space::Global));
        assert_eq!(Space::of_type("__local float[16]"), Some(Space::Local));
        assert_eq!(Space::of_type("float *"), None);
    }
}
