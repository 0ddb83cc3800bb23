//! OpenCL C built-ins beyond work-item ids and the basic arithmetic ones: element-wise use on
//! vectors, `convert_*` with saturation and rounding modes, relational functions, and the
//! common math functions. Exactly modelled where z3 can (`step`, `mix`, `rsqrt` as `1/sqrt`,
//! relational tests, conversions); transcendental functions (`log`, `exp`, `pow`, `sin`, ...)
//! are **uninterpreted functions** of their float sort: the solver may pick any value for
//! `log(x)`, so a model is only a candidate — the `solve` campaign keeps a case only after a
//! confirming run shows it reaches the target.

use super::value::ite_val as ite;
use super::value::{binary, convert, Val};
use crate::interface::{parse_value_type, Scalar};
use crate::model::BinOp;
use z3::ast::{Ast, Bool, Float, RoundingMode, BV};
use z3::{FuncDecl, Sort};

/// Built-ins that apply lane by lane to vector arguments (scalars are splat).
pub(super) fn is_elementwise(name: &str) -> bool {
    let base = base_name(name);
    matches!(
        base,
        "min"
            | "max"
            | "fmin"
            | "fmax"
            | "clamp"
            | "mad"
            | "fma"
            | "mad24"
            | "mul24"
            | "abs"
            | "fabs"
            | "sqrt"
            | "rsqrt"
            | "recip"
            | "divide"
            | "floor"
            | "ceil"
            | "trunc"
            | "round"
            | "rint"
            | "step"
            | "mix"
            | "sign"
            | "copysign"
    ) || uninterpreted_arity(base).is_some()
}

/// `native_log` and `half_log` compute `log` (less precisely): the same function to the solver.
pub(super) fn base_name(name: &str) -> &str {
    name.strip_prefix("native_")
        .or_else(|| name.strip_prefix("half_"))
        .unwrap_or(name)
}

/// Lane `i` of each argument (scalars splat).
pub(super) fn lane(vals: &[Val], i: usize) -> Result<Vec<Val>, String> {
    vals.iter()
        .map(|v| match v {
            Val::Vector(l) => l
                .get(i)
                .cloned()
                .ok_or_else(|| "vectors of different widths".to_string()),
            s => Ok(s.clone()),
        })
        .collect()
}

/// The number of lanes of the first vector argument.
pub(super) fn lanes(vals: &[Val]) -> Option<usize> {
    vals.iter().find_map(|v| match v {
        Val::Vector(l) => Some(l.len()),
        _ => None,
    })
}

/// The element type's spelling of a (vector) result type.
pub(super) fn lane_type(ty: &str) -> String {
    parse_value_type(ty)
        .map(|t| t.scalar.name().to_string())
        .unwrap_or_else(|| ty.to_string())
}

/// Transcendental functions modelled as uninterpreted: their float-argument count.
fn uninterpreted_arity(base: &str) -> Option<usize> {
    Some(match base {
        "log" | "log2" | "log10" | "log1p" | "logb" | "exp" | "exp2" | "exp10" | "expm1"
        | "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh"
        | "acosh" | "atanh" | "sinpi" | "cospi" | "tanpi" | "asinpi" | "acospi" | "atanpi"
        | "cbrt" | "erf" | "erfc" | "tgamma" | "lgamma" => 1,
        "pow" | "powr" | "atan2" | "atan2pi" | "hypot" | "fmod" | "remainder" | "fdim"
        | "nextafter" => 2,
        _ => return None,
    })
}

/// The built-ins this module answers (scalars; vectors come lane by lane); `None` when the
/// name is not one of them.
pub(super) fn scalar_builtin(name: &str, vals: &[Val], ty: &str) -> Option<Result<Val, String>> {
    let base = base_name(name);
    if let Some(n) = uninterpreted_arity(base) {
        return Some(uninterpreted(base, vals, n));
    }
    if base == "pown" || base == "rootn" || base == "ldexp" {
        return Some(uninterpreted_with_int(base, vals));
    }
    let two = |op: BinOp| -> Option<Result<Val, String>> {
        (vals.len() == 2).then(|| binary(op, vals[0].clone(), vals[1].clone()))
    };
    Some(match base {
        "isequal" => return two(BinOp::Eq),
        "isnotequal" => return two(BinOp::Ne),
        "isgreater" => return two(BinOp::Gt),
        "isgreaterequal" => return two(BinOp::Ge),
        "isless" => return two(BinOp::Lt),
        "islessequal" => return two(BinOp::Le),
        "divide" => return two(BinOp::Div),
        "recip" if vals.len() == 1 => one_over(&vals[0]),
        "rsqrt" if vals.len() == 1 => match &vals[0] {
            Val::Flt { f, bits } => one_over(&Val::Flt {
                f: f.sqrt(),
                bits: *bits,
            }),
            _ => Err("rsqrt of a non-float".into()),
        },
        "step" if vals.len() == 2 => (|| {
            let below = binary(BinOp::Lt, vals[1].clone(), vals[0].clone())?.truthy()?;
            let zero = convert(Val::int(0, 32, true), ty)?;
            let one = convert(Val::int(1, 32, true), ty)?;
            ite(&below, &zero, &one)
        })(),
        "mix" if vals.len() == 3 => (|| {
            let d = binary(BinOp::Sub, vals[1].clone(), vals[0].clone())?;
            let m = binary(BinOp::Mul, d, vals[2].clone())?;
            binary(BinOp::Add, vals[0].clone(), m)
        })(),
        "sign" if vals.len() == 1 => (|| {
            let x = vals[0].clone();
            let zero = convert(Val::int(0, 32, true), ty)?;
            let pos = binary(BinOp::Gt, x.clone(), zero.clone())?.truthy()?;
            let neg = binary(BinOp::Lt, x.clone(), zero.clone())?.truthy()?;
            let one = convert(Val::int(1, 32, true), ty)?;
            let minus = convert(Val::int(-1, 32, true), ty)?;
            // ±0 gives itself, NaN gives 0.
            let rest = match &x {
                Val::Flt { f, .. } => ite(&f.is_nan(), &zero, &x)?,
                _ => zero.clone(),
            };
            ite(&pos, &one, &ite(&neg, &minus, &rest)?)
        })(),
        "any" | "all" if vals.len() == 1 => msb_test(&vals[0], base == "all"),
        _ => return None,
    })
}

/// `convert_T[_sat][_rte|_rtz|_rtp|_rtn]`, exactly: the rounding mode applies to float →
/// integer and float → narrower float conversions; `_sat` clamps to the target's range (NaN
/// → 0). Integer → float conversions round to nearest even whatever the suffix says (the
/// confirming run checks the rare case where that differs).
pub(super) fn convert_named(name: &str, v: Val, ty: &str) -> Result<Val, String> {
    let rest = name.strip_prefix("convert_").unwrap_or(name);
    let sat = rest.contains("_sat");
    let mode = ["_rte", "_rtz", "_rtp", "_rtn"]
        .into_iter()
        .find(|m| rest.ends_with(m));
    let target = parse_value_type(ty).ok_or_else(|| format!("built-in {name}"))?;
    if let (Val::Vector(l), true) = (&v, target.lanes > 1) {
        let one = target.scalar.name();
        let lanes = l
            .iter()
            .map(|x| convert_one(x.clone(), one, target.scalar, sat, mode))
            .collect::<Result<_, _>>()?;
        return Ok(Val::Vector(lanes));
    }
    convert_one(v, target.scalar.name(), target.scalar, sat, mode)
}

fn convert_one(v: Val, ty: &str, to: Scalar, sat: bool, mode: Option<&str>) -> Result<Val, String> {
    let v = match (&v, to, mode) {
        (Val::Flt { f, bits }, Scalar::Int { .. }, Some(m)) => Val::Flt {
            f: f.round_to_integral_with_rounding_mode(&rounding(m)),
            bits: *bits,
        },
        _ => v,
    };
    if let (Val::Flt { f, bits: b1 }, Scalar::Float { bits }, Some(m)) = (&v, to, mode) {
        if *b1 > bits {
            return Ok(Val::Flt {
                f: f.to_fp_with_rounding_mode(&rounding(m), &super::value::float_sort(bits)),
                bits,
            });
        }
    }
    let Scalar::Int { bits, signed } = to else {
        return convert(v, ty);
    };
    if !sat {
        return convert(v, ty);
    }
    let (lo, hi): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    match &v {
        Val::Flt { f, bits: fb } => {
            let as_f = |x: i128| {
                let d = x as f64;
                match fb {
                    64 => Float::from_f64(d),
                    _ => Float::from_f32(d as f32).to_fp_with_rounding_mode(
                        &RoundingMode::round_nearest_ties_to_even(),
                        &super::value::float_sort(*fb),
                    ),
                }
            };
            let (flo, fhi) = (as_f(lo), as_f(hi));
            let inner = convert(v.clone(), ty)?;
            let Val::Int { bv, .. } = inner else {
                return Err("a saturating conversion".into());
            };
            let w = bv.get_size();
            let num = |x: i128| BV::from_u64(x as u64, w);
            let r = f.is_nan().ite(
                &num(0),
                &f.lt(&flo).ite(&num(lo), &f.ge(&fhi).ite(&num(hi), &bv)),
            );
            Ok(Val::Int { bv: r, signed })
        }
        Val::Int { bv, signed: s1 } => {
            // Compare in 130 bits, where every source and target value fits.
            let wide = |b: &BV, s: bool| {
                let w = b.get_size();
                if s {
                    b.sign_ext(130 - w)
                } else {
                    b.zero_ext(130 - w)
                }
            };
            let x = wide(bv, *s1);
            let big =
                |n: i128| BV::from_i64((n >> 64) as i64, 66).concat(BV::from_u64(n as u64, 64));
            let inner = convert(v.clone(), ty)?;
            let Val::Int { bv: t, .. } = inner else {
                return Err("a saturating conversion".into());
            };
            let w = t.get_size();
            let num = |n: i128| BV::from_u64(n as u64, w);
            let r = x
                .bvslt(big(lo))
                .ite(&num(lo), &x.bvsgt(big(hi)).ite(&num(hi), &t));
            Ok(Val::Int { bv: r, signed })
        }
        _ => convert(v, ty),
    }
}

fn rounding(m: &str) -> RoundingMode {
    match m {
        "_rtz" => RoundingMode::round_towards_zero(),
        "_rtp" => RoundingMode::round_towards_positive(),
        "_rtn" => RoundingMode::round_towards_negative(),
        _ => RoundingMode::round_nearest_ties_to_even(),
    }
}

fn one_over(v: &Val) -> Result<Val, String> {
    let one = convert(Val::int(1, 32, true), value_name(v)?)?;
    binary(BinOp::Div, one, v.clone())
}

fn value_name(v: &Val) -> Result<&'static str, String> {
    match v {
        Val::Flt { bits: 16, .. } => Ok("half"),
        Val::Flt { bits: 64, .. } => Ok("double"),
        Val::Flt { .. } => Ok("float"),
        _ => Err("a float function of a non-float".into()),
    }
}

/// `any` / `all` of an integer vector (or scalar): whether the top bit of any / every lane is set.
fn msb_test(v: &Val, all: bool) -> Result<Val, String> {
    let lanes: Vec<Val> = match v {
        Val::Vector(l) => l.clone(),
        s => vec![s.clone()],
    };
    let mut acc: Option<Bool> = None;
    for l in &lanes {
        let Val::Int { bv, .. } = l else {
            return Err("any/all of a non-integer".into());
        };
        let w = bv.get_size();
        let set = bv.extract(w - 1, w - 1).eq(BV::from_u64(1, 1));
        acc = Some(match acc {
            None => set,
            Some(a) if all => a & set,
            Some(a) => a | set,
        });
    }
    let b = acc.ok_or("any/all of nothing")?;
    Ok(Val::Int {
        bv: b.ite(&BV::from_u64(1, 32), &BV::from_u64(0, 32)),
        signed: true,
    })
}

/// `f(x, ...)` for a function z3 cannot compute: an uninterpreted function of the float sort.
fn uninterpreted(base: &str, vals: &[Val], n: usize) -> Result<Val, String> {
    if vals.len() != n {
        return Err(format!("built-in {base} with {} arguments", vals.len()));
    }
    let mut bits = None;
    let mut args: Vec<Float> = Vec::new();
    for v in vals {
        match v {
            Val::Flt { f, bits: b } if bits.is_none_or(|x| x == *b) => {
                bits = Some(*b);
                args.push(f.clone());
            }
            _ => return Err(format!("built-in {base} of a non-float")),
        }
    }
    let bits = bits.ok_or_else(|| format!("built-in {base}"))?;
    let sort = super::value::float_sort(bits);
    let domain: Vec<&Sort> = (0..n).map(|_| &sort).collect();
    let f = FuncDecl::new(format!("{base}_f{bits}"), &domain, &sort);
    let dyn_args: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
    let r = f
        .apply(&dyn_args)
        .as_float()
        .ok_or_else(|| format!("built-in {base}"))?;
    Ok(Val::Flt { f: r, bits })
}

/// `pown(x, n)`, `rootn(x, n)`, `ldexp(x, n)`: uninterpreted in a float and an `int`.
fn uninterpreted_with_int(base: &str, vals: &[Val]) -> Result<Val, String> {
    let (Some(Val::Flt { f, bits }), Some(Val::Int { bv, .. })) = (vals.first(), vals.get(1))
    else {
        return Err(format!("built-in {base}"));
    };
    let sort = super::value::float_sort(*bits);
    let int = Sort::bitvector(bv.get_size());
    let decl = FuncDecl::new(
        format!("{base}_f{bits}_i{}", bv.get_size()),
        &[&sort, &int],
        &sort,
    );
    let r = decl
        .apply(&[f as &dyn Ast, bv as &dyn Ast])
        .as_float()
        .ok_or_else(|| format!("built-in {base}"))?;
    Ok(Val::Flt { f: r, bits: *bits })
}
