//! Symbolic values and OpenCL C's conversions and operators on them.

use crate::interface::{parse_value_type, strip_qualifiers, Scalar, ValueType};
use crate::model::BinOp;
use z3::ast::RoundingMode;
use z3::ast::{Ast, Bool, Float, BV};
use z3::{Context, Sort};

/// A symbolic value.
#[derive(Debug, Clone)]
pub enum Val {
    /// An integer (width = the bit-vector's size).
    Int { bv: BV, signed: bool },
    /// A float of `bits` bits.
    Flt { f: Float, bits: u32 },
    /// A vector, lane by lane.
    Vector(Vec<Val>),
    /// A pointer: memory region and element offset (64-bit).
    Ptr { region: usize, off: BV },
    /// A multi-dimensional array (or a part of one): region, offset of its first element,
    /// and the sizes of its inner dimensions (indexing it skips their product).
    Rows {
        region: usize,
        off: BV,
        dims: Vec<u64>,
    },
    /// A struct value: its bytes as one bit-vector (little-endian) and its layout.
    Struct {
        bits: BV,
        layout: crate::interface::StructLayout,
    },
    /// No value.
    Void,
}

/// Unsupported: what (the caller adds where).
pub type Unsup = String;

/// The float sort of a width.
pub fn float_sort(bits: u32) -> Sort {
    match bits {
        16 => Sort::float(5, 11),
        64 => Sort::double(),
        _ => Sort::float32(),
    }
}

fn rne() -> RoundingMode {
    RoundingMode::round_nearest_ties_to_even()
}

/// The float constant `v` of width `bits` (rounded to nearest).
fn float_const(v: f64, bits: u32) -> Float {
    match bits {
        64 => Float::from_f64(v),
        32 => Float::from_f32(v as f32),
        _ => Float::from_f64(v).to_fp_with_rounding_mode(&rne(), &float_sort(bits)),
    }
}

/// A float from its IEEE bits.
pub fn float_from_bits(bv: &BV, bits: u32) -> Float {
    let ctx = Context::thread_local();
    let sort = float_sort(bits);
    // SAFETY: arguments are live terms of this thread's context; the result is checked.
    unsafe {
        let raw =
            z3_sys::Z3_mk_fpa_to_fp_bv(ctx.get_z3_context(), bv.get_z3_ast(), sort.get_z3_sort())
                .expect("Z3_mk_fpa_to_fp_bv");
        Float::wrap(&ctx, raw)
    }
}

fn float_from_int(bv: &BV, signed: bool, bits: u32) -> Float {
    let ctx = Context::thread_local();
    let sort = float_sort(bits);
    let rm = rne();
    // SAFETY: as above.
    unsafe {
        let f = if signed {
            z3_sys::Z3_mk_fpa_to_fp_signed
        } else {
            z3_sys::Z3_mk_fpa_to_fp_unsigned
        };
        let raw = f(
            ctx.get_z3_context(),
            rm.get_z3_ast(),
            bv.get_z3_ast(),
            sort.get_z3_sort(),
        )
        .expect("Z3_mk_fpa_to_fp_(un)signed");
        Float::wrap(&ctx, raw)
    }
}

impl Val {
    /// An integer constant of a type.
    pub fn int(v: i64, bits: u32, signed: bool) -> Val {
        Val::Int {
            bv: BV::from_i64(v, bits),
            signed,
        }
    }

    /// The C truth value (`!= 0`).
    pub fn truthy(&self) -> Result<Bool, Unsup> {
        match self {
            Val::Int { bv, .. } => Ok(bv.eq(BV::from_u64(0, bv.get_size())).not()),
            Val::Flt { f, .. } => Ok(f.is_zero().not()),
            _ => Err("a vector or pointer used as a condition".into()),
        }
    }

    /// The raw bits as stored in memory (little-endian lanes; a 3-vector takes 4 slots).
    pub fn to_bits(&self) -> Result<BV, Unsup> {
        match self {
            Val::Int { bv, .. } => Ok(bv.clone()),
            Val::Struct { bits, .. } => Ok(bits.clone()),
            Val::Flt { f, .. } => Ok(f.to_ieee_bv()),
            Val::Vector(lanes) => {
                let mut parts: Vec<BV> = lanes
                    .iter()
                    .map(|l| l.to_bits())
                    .collect::<Result<_, _>>()?;
                if parts.len() == 3 {
                    let w = parts[0].get_size();
                    parts.push(BV::from_u64(0, w));
                }
                let mut acc = parts[0].clone();
                for p in &parts[1..] {
                    acc = p.concat(&acc);
                }
                Ok(acc)
            }
            _ => Err("storing a pointer in memory".into()),
        }
    }

    /// A value of type `ty` from raw bits.
    pub fn from_bits(bits: &BV, ty: ValueType) -> Val {
        let w = ty.scalar.size() as u32 * 8;
        let lane = |i: u32| -> Val {
            let b = if bits.get_size() == w {
                bits.clone()
            } else {
                bits.extract(i * w + w - 1, i * w)
            };
            match ty.scalar {
                Scalar::Int { signed, .. } => Val::Int { bv: b, signed },
                Scalar::Float { bits } => Val::Flt {
                    f: float_from_bits(&b, bits),
                    bits,
                },
            }
        };
        if ty.lanes == 1 {
            lane(0)
        } else {
            Val::Vector((0..ty.lanes).map(lane).collect())
        }
    }

    /// A fresh symbolic value of a type.
    pub fn fresh(name: &str, ty: ValueType) -> Val {
        let w = ty.size() as u32 * 8;
        Val::from_bits(&BV::new_const(name, w), ty)
    }
}

/// Converts to the type spelled `ty` (C conversion semantics; vectors lane-wise, scalars
/// splat to vectors).
pub fn convert(v: Val, ty: &str) -> Result<Val, Unsup> {
    if matches!(v, Val::Struct { .. }) && !ty.contains('*') {
        // Structs are only ever copied whole.
        return Ok(v);
    }
    if ty.contains('*') || ty.contains('[') {
        return match v {
            Val::Ptr { .. } | Val::Rows { .. } => Ok(v),
            _ => Err(format!("a conversion to pointer type {ty}")),
        };
    }
    let bare = strip_qualifiers(ty);
    if bare == "void" {
        return Ok(Val::Void);
    }
    let Some(t) = parse_value_type(&bare) else {
        return Err(format!("values of type {bare}"));
    };
    let is_bool = bare == "bool" || bare == "_Bool";
    if t.lanes > 1 {
        return match v {
            Val::Vector(l) if l.len() == t.lanes as usize => Ok(Val::Vector(
                l.into_iter()
                    .map(|x| convert_scalar(x, t.scalar, false))
                    .collect::<Result<_, _>>()?,
            )),
            Val::Vector(l) => Err(format!("converting a {}-lane vector to {bare}", l.len())),
            s => {
                let one = convert_scalar(s, t.scalar, false)?;
                Ok(Val::Vector(vec![one; t.lanes as usize]))
            }
        };
    }
    convert_scalar(v, t.scalar, is_bool)
}

fn convert_scalar(v: Val, to: Scalar, is_bool: bool) -> Result<Val, Unsup> {
    if is_bool {
        let t = v.truthy()?;
        return Ok(Val::Int {
            bv: t.ite(&BV::from_u64(1, 8), &BV::from_u64(0, 8)),
            signed: false,
        });
    }
    Ok(match (v, to) {
        (Val::Int { bv, signed }, Scalar::Int { bits, signed: s2 }) => {
            let w = bv.get_size();
            let bv = if bits < w {
                bv.extract(bits - 1, 0)
            } else if bits > w {
                if signed {
                    bv.sign_ext(bits - w)
                } else {
                    bv.zero_ext(bits - w)
                }
            } else {
                bv
            };
            Val::Int { bv, signed: s2 }
        }
        (Val::Int { bv, signed }, Scalar::Float { bits }) => Val::Flt {
            f: float_from_int(&bv, signed, bits),
            bits,
        },
        (Val::Flt { f, bits: fb }, Scalar::Int { bits, signed }) => {
            let rtz = RoundingMode::round_towards_zero();
            let bv = if signed {
                f.to_sbv_with_rounding_mode(&rtz, bits)
            } else {
                f.to_ubv_with_rounding_mode(&rtz, bits)
            };
            // Out of range (or NaN) the result is implementation-defined, and z3 would pick
            // whatever helps; model the x86 answer (the "integer indefinite" minimum for
            // signed targets, 0 for unsigned ones) so the solver does not rely on luck.
            let bound = |e: i32| float_const(2f64.powi(e), fb);
            let (lo, hi) = if signed {
                (bound(bits as i32 - 1).unary_neg(), bound(bits as i32 - 1))
            } else {
                (float_const(-1.0, fb), bound(bits as i32))
            };
            let in_range = if signed {
                f.ge(&lo) & f.lt(&hi)
            } else {
                f.gt(&lo) & f.lt(&hi)
            };
            let indefinite = if signed {
                BV::from_u64(1, bits).bvshl(BV::from_u64(bits as u64 - 1, bits))
            } else {
                BV::from_u64(0, bits)
            };
            Val::Int {
                bv: in_range.ite(&bv, &indefinite),
                signed,
            }
        }
        (Val::Flt { f, bits: b1 }, Scalar::Float { bits }) => {
            if b1 == bits {
                Val::Flt { f, bits }
            } else {
                Val::Flt {
                    f: f.to_fp_with_rounding_mode(&rne(), &float_sort(bits)),
                    bits,
                }
            }
        }
        (Val::Vector(_), _) => return Err("converting a vector to a scalar".into()),
        (Val::Ptr { .. } | Val::Rows { .. }, _) => {
            return Err("converting a pointer to a number".into())
        }
        (Val::Void, _) => return Err("using a void value".into()),
        (Val::Struct { layout, .. }, _) => {
            return Err(format!("converting a {} struct to a number", layout.name))
        }
    })
}

fn bool_int(b: Bool) -> Val {
    Val::Int {
        bv: b.ite(&BV::from_u64(1, 32), &BV::from_u64(0, 32)),
        signed: true,
    }
}

/// `a op b` for arithmetic, bitwise and comparison operators, operands already converted by
/// clang (shifts: operands promoted separately).
pub fn binary(op: BinOp, a: Val, b: Val) -> Result<Val, Unsup> {
    use BinOp::*;
    match (a, b) {
        (Val::Vector(x), Val::Vector(y)) if x.len() == y.len() => {
            let lanes = x
                .into_iter()
                .zip(y)
                .map(|(p, q)| {
                    let r = binary(op, p, q)?;
                    // Vector comparisons give -1 for true.
                    Ok(match (op, r) {
                        (Lt | Gt | Le | Ge | Eq | Ne, Val::Int { bv, .. }) => Val::Int {
                            bv: BV::from_i64(0, 32).bvsub(&bv),
                            signed: true,
                        },
                        (_, r) => r,
                    })
                })
                .collect::<Result<_, Unsup>>()?;
            Ok(Val::Vector(lanes))
        }
        (Val::Vector(x), s) => binary(op, Val::Vector(x.clone()), Val::Vector(vec![s; x.len()])),
        (s, Val::Vector(y)) => binary(op, Val::Vector(vec![s; y.len()]), Val::Vector(y)),
        (Val::Int { bv: x, signed }, Val::Int { bv: y, signed: s2 }) => {
            let w = x.get_size();
            if matches!(op, Shl | Shr) {
                // OpenCL: the count is taken modulo the width of the left operand.
                let y = match y.get_size() {
                    n if n > w => y.extract(w - 1, 0),
                    n if n < w => y.zero_ext(w - n),
                    _ => y,
                };
                let y = y.bvand(BV::from_u64((w - 1) as u64, w));
                let r = match op {
                    Shl => x.bvshl(&y),
                    _ if signed => x.bvashr(&y),
                    _ => x.bvlshr(&y),
                };
                return Ok(Val::Int { bv: r, signed });
            }
            if y.get_size() != w {
                return Err(format!("operands of {} with different widths", op.token()));
            }
            let s = signed && s2;
            let int = |bv: BV| Ok(Val::Int { bv, signed });
            match op {
                Add => int(x.bvadd(&y)),
                Sub => int(x.bvsub(&y)),
                Mul => int(x.bvmul(&y)),
                Div => int(if s { x.bvsdiv(&y) } else { x.bvudiv(&y) }),
                Rem => int(if s { x.bvsrem(&y) } else { x.bvurem(&y) }),
                BitAnd => int(x.bvand(&y)),
                BitOr => int(x.bvor(&y)),
                BitXor => int(x.bvxor(&y)),
                Lt => Ok(bool_int(if s { x.bvslt(&y) } else { x.bvult(&y) })),
                Gt => Ok(bool_int(if s { x.bvsgt(&y) } else { x.bvugt(&y) })),
                Le => Ok(bool_int(if s { x.bvsle(&y) } else { x.bvule(&y) })),
                Ge => Ok(bool_int(if s { x.bvsge(&y) } else { x.bvuge(&y) })),
                Eq => Ok(bool_int(x.eq(&y))),
                Ne => Ok(bool_int(x.eq(&y).not())),
                other => Err(format!("operator {}", other.token())),
            }
        }
        (Val::Flt { f: x, bits }, Val::Flt { f: y, bits: b2 }) if bits == b2 => {
            let rm = rne();
            let flt = |f: Float| Ok(Val::Flt { f, bits });
            match op {
                Add => flt(x.add_with_rounding_mode(&y, &rm)),
                Sub => flt(x.sub_with_rounding_mode(&y, &rm)),
                Mul => flt(x.mul_with_rounding_mode(&y, &rm)),
                Div => flt(x.div_with_rounding_mode(&y, &rm)),
                Lt => Ok(bool_int(x.lt(&y))),
                Gt => Ok(bool_int(x.gt(&y))),
                Le => Ok(bool_int(x.le(&y))),
                Ge => Ok(bool_int(x.ge(&y))),
                Eq => Ok(bool_int(x.eq_fpa(&y))),
                Ne => Ok(bool_int(x.eq_fpa(&y).not())),
                other => Err(format!("float operator {}", other.token())),
            }
        }
        (Val::Ptr { region, off }, Val::Int { bv, signed }) if matches!(op, Add | Sub) => {
            let d = widen64(bv, signed);
            Ok(Val::Ptr {
                region,
                off: if op == Add {
                    off.bvadd(&d)
                } else {
                    off.bvsub(&d)
                },
            })
        }
        (Val::Int { bv, signed }, Val::Ptr { region, off }) if op == Add => Ok(Val::Ptr {
            region,
            off: off.bvadd(widen64(bv, signed)),
        }),
        (
            Val::Ptr {
                region: r1,
                off: o1,
            },
            Val::Ptr {
                region: r2,
                off: o2,
            },
        ) if r1 == r2 => match op {
            Sub => Ok(Val::Int {
                bv: o1.bvsub(&o2),
                signed: true,
            }),
            Eq => Ok(bool_int(o1.eq(&o2))),
            Ne => Ok(bool_int(o1.eq(&o2).not())),
            Lt => Ok(bool_int(o1.bvult(&o2))),
            _ => Err(format!("pointer operator {}", op.token())),
        },
        _ => Err(format!("operator {} on these operand types", op.token())),
    }
}

/// An index or offset as a 64-bit bit-vector.
pub fn widen64(bv: BV, signed: bool) -> BV {
    let w = bv.get_size();
    match w.cmp(&64) {
        std::cmp::Ordering::Less if signed => bv.sign_ext(64 - w),
        std::cmp::Ordering::Less => bv.zero_ext(64 - w),
        std::cmp::Ordering::Greater => bv.extract(63, 0),
        std::cmp::Ordering::Equal => bv,
    }
}

/// `-v`, `~v`, `!v`.
pub fn neg(v: Val) -> Result<Val, Unsup> {
    Ok(match v {
        Val::Int { bv, signed } => Val::Int {
            bv: bv.bvneg(),
            signed,
        },
        Val::Flt { f, bits } => Val::Flt {
            f: f.unary_neg(),
            bits,
        },
        Val::Vector(l) => Val::Vector(l.into_iter().map(neg).collect::<Result<_, _>>()?),
        _ => return Err("negating a pointer".into()),
    })
}

/// `~v`.
pub fn bitnot(v: Val) -> Result<Val, Unsup> {
    Ok(match v {
        Val::Int { bv, signed } => Val::Int {
            bv: bv.bvnot(),
            signed,
        },
        Val::Vector(l) => Val::Vector(l.into_iter().map(bitnot).collect::<Result<_, _>>()?),
        _ => return Err("~ on a non-integer".into()),
    })
}

/// `!v` (an `int`).
pub fn lnot(v: Val) -> Result<Val, Unsup> {
    Ok(bool_int(v.truthy()?.not()))
}

/// A C truth value as an `int` 0/1.
pub fn from_bool(b: Bool) -> Val {
    bool_int(b)
}

/// Lane indices of a swizzle (`xy`, `s01`, `lo`, `hi`, `even`, `odd`) of an `n`-lane vector.
pub fn swizzle(components: &str, n: usize) -> Option<Vec<usize>> {
    let half = n.div_ceil(2);
    match components {
        "lo" => return Some((0..half).collect()),
        "hi" => return Some((half..n.max(half * 2)).collect()),
        "even" => return Some((0..n).step_by(2).collect()),
        "odd" => return Some((1..n).step_by(2).collect()),
        _ => {}
    }
    if let Some(d) = components
        .strip_prefix('s')
        .or_else(|| components.strip_prefix('S'))
    {
        return d
            .chars()
            .map(|c| c.to_digit(16).map(|v| v as usize))
            .collect();
    }
    components
        .chars()
        .map(|c| match c {
            'x' | 'r' => Some(0),
            'y' | 'g' => Some(1),
            'z' | 'b' => Some(2),
            'w' | 'a' => Some(3),
            _ => None,
        })
        .collect()
}

/// `c ? a : b` for two values of the same type.
pub(super) fn ite_val(c: &Bool, a: &Val, b: &Val) -> Result<Val, String> {
    Ok(match (a, b) {
        (Val::Int { bv: x, signed }, Val::Int { bv: y, .. }) if x.get_size() == y.get_size() => {
            Val::Int {
                bv: c.ite(x, y),
                signed: *signed,
            }
        }
        (Val::Flt { f: x, bits }, Val::Flt { f: y, bits: b2 }) if bits == b2 => Val::Flt {
            f: c.ite(x, y),
            bits: *bits,
        },
        _ => return Err("a selection between different types".into()),
    })
}
