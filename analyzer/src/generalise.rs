//! Parameter generalisation: what stays the same over all launches of a kernel, what varies
//! and how, and which relations hold between the varying quantities.
//!
//! KernelInterceptor's stated future work: a verifier or a fuzzer handed *one* launch knows
//! one point; handed the generalisation it knows the application's habits — `n` is always
//! the element count of `a`, the global size is `n` rounded up to the work-group size, the
//! work-group size never changes. `cltrap show CAP --kernel NAME` prints it, the GPUVerify
//! export passes the constant scalars as kernel-argument values, and `cltrap fuzz` keeps
//! generated scalars inside the observed ranges.
//! [`ScalarBounds`] is the one hook into fuzzing: `fuzz --captured-ranges` sets it on a
//! target, and the campaign narrows every input to it before running.
//!
//! Pure data over [`LaunchRecord`]s: no OpenCL, no files.

use crate::values::{parse_value_type, pointee_type, unhex, Scalar};
use cltrap_capture::{ArgRecord, LaunchRecord};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// At most this many distinct values are listed as a set; more are summarised as a range.
const MAX_SET: usize = 8;

/// One observed value of a quantity.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// An integer (sizes, counts, integer scalars; 128 bits hold every `ulong` and `long`).
    Int(i128),
    /// A floating-point scalar.
    Float(f64),
    /// Anything else (vectors, structs): the bytes in hex, memory order.
    Bytes(String),
}

impl Value {
    /// A total order: integers, then floats (IEEE total order), then bytes.
    pub fn total_cmp(&self, other: &Value) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Int(_), _) => Ordering::Less,
            (_, Value::Int(_)) => Ordering::Greater,
            (Value::Float(_), _) => Ordering::Less,
            (_, Value::Float(_)) => Ordering::Greater,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v:?}"),
            Value::Bytes(h) => write!(f, "0x{h}"),
        }
    }
}

/// How a quantity behaves over the launches.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Param {
    /// The same value in every launch.
    Constant { value: Value },
    /// A few distinct values (sorted).
    Set { values: Vec<Value> },
    /// Many distinct numeric values between `min` and `max` (inclusive).
    Range {
        min: Value,
        max: Value,
        distinct: usize,
    },
    /// Many distinct non-numeric values.
    Varies { distinct: usize },
    /// Not present in some launches (e.g. a NULL local size next to explicit ones).
    Mixed { present: usize, absent: usize },
    /// Present in no launch (a NULL local size every time).
    Absent,
}

impl Param {
    /// Generalises a list of observations (one per launch; `None` = absent in that launch).
    pub fn of(values: &[Option<Value>]) -> Param {
        let present: Vec<&Value> = values.iter().flatten().collect();
        if present.is_empty() {
            return Param::Absent;
        }
        if present.len() != values.len() {
            return Param::Mixed {
                present: present.len(),
                absent: values.len() - present.len(),
            };
        }
        // A total order (floats by `total_cmp`, so NaN equals itself): sort, then dedup.
        let mut distinct: Vec<Value> = present.into_iter().cloned().collect();
        distinct.sort_by(Value::total_cmp);
        distinct.dedup_by(|a, b| a.total_cmp(b).is_eq());
        match distinct.len() {
            0 => Param::Absent,
            1 => Param::Constant {
                value: distinct.remove(0),
            },
            n if n <= MAX_SET => Param::Set { values: distinct },
            n => match (distinct.first(), distinct.last()) {
                (Some(min @ (Value::Int(_) | Value::Float(_))), Some(max)) => Param::Range {
                    min: min.clone(),
                    max: max.clone(),
                    distinct: n,
                },
                _ => Param::Varies { distinct: n },
            },
        }
    }

    /// The value, when it is the same in every launch.
    pub fn constant(&self) -> Option<&Value> {
        match self {
            Param::Constant { value } => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &[Value]| {
            v.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Param::Constant { value } => write!(f, "constant {value}"),
            Param::Set { values } => write!(f, "one of {{{}}}", list(values)),
            Param::Range { min, max, distinct } => {
                write!(f, "{distinct} values in [{min}, {max}]")
            }
            Param::Varies { distinct } => write!(f, "varies ({distinct} distinct values)"),
            Param::Mixed { present, absent } => {
                write!(f, "given in {present} launches, absent (NULL) in {absent}")
            }
            Param::Absent => write!(f, "NULL in every launch"),
        }
    }
}

/// One named quantity of a launch (`global[0]`, `n`, `a.elements`) and how it behaves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantity {
    /// The name used in relations: `global[0]`, `local[1]`, `groups[0]`, `offset[0]`,
    /// `NAME` (a scalar argument), `NAME.bytes`, `NAME.elements` (a buffer argument).
    pub name: String,
    /// Its behaviour over the launches.
    pub param: Param,
}

/// A relation that holds in every launch between two quantities, at least one of which varies.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Relation {
    /// `left == right`.
    Equal { left: String, right: String },
    /// `left == round_up(right, multiple)`: a global size padded to the work-group size.
    RoundUp {
        left: String,
        right: String,
        multiple: String,
    },
    /// `left == right * factor`.
    Multiple {
        left: String,
        right: String,
        factor: i128,
    },
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Relation::Equal { left, right } => write!(f, "{left} = {right}"),
            Relation::RoundUp {
                left,
                right,
                multiple,
            } => write!(f, "{left} = round_up({right}, {multiple})"),
            Relation::Multiple {
                left,
                right,
                factor,
            } => write!(f, "{left} = {right} * {factor}"),
        }
    }
}

/// The generalisation of one kernel's launches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelParams {
    /// Kernel name.
    pub kernel: String,
    /// Ids of the launches it covers, in order.
    pub launches: Vec<u64>,
    /// `work_dim`.
    pub work_dim: Param,
    /// NDRange and argument quantities, in a stable order: geometry first, then arguments.
    pub quantities: Vec<Quantity>,
    /// Relations that hold in every launch.
    pub relations: Vec<Relation>,
}

impl KernelParams {
    /// The behaviour of the quantity called `name`.
    pub fn get(&self, name: &str) -> Option<&Param> {
        self.quantities
            .iter()
            .find(|q| q.name == name)
            .map(|q| &q.param)
    }
}

/// The name an argument goes by in the generalisation: its own, or `argN`.
pub fn arg_name(a: &ArgRecord) -> String {
    let info = a.info();
    if info.name.is_empty() {
        format!("arg{}", info.index)
    } else {
        info.name.to_string()
    }
}

/// A scalar argument's bytes as a [`Value`]: decoded by its type name when it is a scalar
/// type, otherwise kept as hex.
pub fn scalar_value(type_name: &str, hex: &str) -> Value {
    let Some(bytes) = unhex(hex) else {
        return Value::Bytes(hex.to_string());
    };
    match parse_value_type(type_name) {
        Some(vt) if vt.lanes == 1 && bytes.len() == vt.size() => {
            let bits = vt.scalar.raw_bits(&bytes);
            match vt.scalar {
                Scalar::Bool | Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => {
                    Value::Int(i128::from(bits))
                }
                Scalar::I8 => Value::Int(i128::from(bits as u8 as i8)),
                Scalar::I16 => Value::Int(i128::from(bits as u16 as i16)),
                Scalar::I32 => Value::Int(i128::from(bits as u32 as i32)),
                Scalar::I64 => Value::Int(i128::from(bits as i64)),
                Scalar::F16 => Value::Float(f64::from(crate::values::half_to_f32(bits as u16))),
                Scalar::F32 => Value::Float(f64::from(f32::from_bits(bits as u32))),
                Scalar::F64 => Value::Float(f64::from_bits(bits)),
            }
        }
        _ => Value::Bytes(crate::values::hex(&bytes)[2..].to_string()),
    }
}

/// The named quantities of one launch, in a fixed order (absent = `None`).
fn observe(l: &LaunchRecord, dims: usize) -> Vec<(String, Option<Value>)> {
    let mut q = Vec::new();
    let int = |v: u64| Some(Value::Int(i128::from(v)));
    for d in 0..dims {
        q.push((
            format!("global[{d}]"),
            l.global_size.get(d).copied().and_then(int),
        ));
    }
    for d in 0..dims {
        let local = l.local_size.as_ref().and_then(|s| s.get(d).copied());
        q.push((format!("local[{d}]"), local.and_then(int)));
    }
    for d in 0..dims {
        if let (Some(g), Some(&lo)) = (
            l.global_size.get(d),
            l.local_size.as_ref().and_then(|s| s.get(d)),
        ) {
            if lo > 0 {
                q.push((format!("groups[{d}]"), int(g.div_ceil(lo))));
            }
        }
    }
    if l.global_offset
        .as_ref()
        .is_some_and(|o| o.iter().any(|v| *v != 0))
    {
        for d in 0..dims {
            let o = l.global_offset.as_ref().and_then(|o| o.get(d).copied());
            q.push((format!("offset[{d}]"), o.and_then(int)));
        }
    }
    for a in &l.args {
        let name = arg_name(a);
        match a {
            ArgRecord::Scalar { info, bytes } => {
                q.push((name, Some(scalar_value(&info.type_name, bytes))));
            }
            ArgRecord::Buffer { info, size, .. } => {
                q.push((format!("{name}.bytes"), int(*size)));
                if let Some(n) =
                    pointee_type(&info.type_name).and_then(|t| size.checked_div(t.size() as u64))
                {
                    q.push((format!("{name}.elements"), int(n)));
                }
            }
            ArgRecord::Local { size, .. } => q.push((format!("{name}.bytes"), int(*size))),
            ArgRecord::Image { image, .. } => {
                q.push((format!("{name}.width"), int(image.width)));
                if image.height > 0 {
                    q.push((format!("{name}.height"), int(image.height)));
                }
            }
            _ => {}
        }
    }
    q
}

/// Generalises `launches` (all of one kernel; an empty slice gives an empty result).
pub fn generalise(kernel: &str, launches: &[&LaunchRecord]) -> KernelParams {
    let dims = launches
        .iter()
        .map(|l| l.global_size.len())
        .max()
        .unwrap_or(0);
    let observed: Vec<Vec<(String, Option<Value>)>> =
        launches.iter().map(|l| observe(l, dims)).collect();
    // Names in first-seen order; a quantity missing from a launch is absent there. Looked up
    // through maps: a capture's launches may have thousands of arguments each.
    let mut names: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for o in &observed {
        for (n, _) in o {
            if seen.insert(n) {
                names.push(n.clone());
            }
        }
    }
    let by_name: Vec<std::collections::HashMap<&str, &Option<Value>>> = observed
        .iter()
        .map(|o| o.iter().rev().map(|(n, v)| (n.as_str(), v)).collect())
        .collect();
    let column = |name: &str| -> Vec<Option<Value>> {
        by_name
            .iter()
            .map(|o| o.get(name).and_then(|v| (*v).clone()))
            .collect()
    };
    let columns: Vec<(String, Vec<Option<Value>>)> =
        names.iter().map(|n| (n.clone(), column(n))).collect();
    let quantities = columns
        .iter()
        .map(|(n, c)| Quantity {
            name: n.clone(),
            param: Param::of(c),
        })
        .collect();
    let work_dim = Param::of(
        &launches
            .iter()
            .map(|l| Some(Value::Int(i128::from(l.work_dim))))
            .collect::<Vec<_>>(),
    );
    KernelParams {
        kernel: kernel.to_string(),
        launches: launches.iter().map(|l| l.id).collect(),
        work_dim,
        quantities,
        relations: relations(&columns, dims),
    }
}

/// Integer columns only (every launch has an integer there).
fn ints(c: &[Option<Value>]) -> Option<Vec<i128>> {
    c.iter()
        .map(|v| match v {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        })
        .collect()
}

fn relations(columns: &[(String, Vec<Option<Value>>)], dims: usize) -> Vec<Relation> {
    let numeric: Vec<(&str, Vec<i128>)> = columns
        .iter()
        .filter(|(n, _)| !n.starts_with("groups["))
        .filter_map(|(n, c)| ints(c).map(|v| (n.as_str(), v)))
        .collect();
    let varies = |v: &[i128]| v.windows(2).any(|w| w[0] != w[1]);
    let mut out = Vec::new();
    // Equal varying quantities form classes: each is said equal to its class's stand-in (a
    // scalar argument where the class has one: `n` rather than `a.elements`), and only the
    // stand-ins take part in the relations below. Why: every pair, from a capture whose
    // launches pass thousands of equal scalars, was millions of relations.
    let mut classes: Vec<Vec<usize>> = Vec::new();
    let mut class_of: std::collections::HashMap<&[i128], usize> = std::collections::HashMap::new();
    for (i, (_, va)) in numeric.iter().enumerate() {
        if varies(va) {
            let c = *class_of.entry(va.as_slice()).or_insert_with(|| {
                classes.push(Vec::new());
                classes.len() - 1
            });
            classes[c].push(i);
        }
    }
    let plain = |n: &str| !n.contains(['.', '[']);
    let mut stand_in = vec![true; numeric.len()];
    for members in &classes {
        let rep = (members.iter())
            .copied()
            .find(|&i| plain(numeric[i].0))
            .unwrap_or(members[0]);
        for &m in members.iter().filter(|&&m| m != rep) {
            stand_in[m] = false;
            let (l, r) = (rep.min(m), rep.max(m));
            out.push(Relation::Equal {
                left: numeric[l].0.to_string(),
                right: numeric[r].0.to_string(),
            });
        }
    }
    let firsts: Vec<(&str, Vec<i128>)> = (numeric.iter().zip(&stand_in))
        .filter(|(_, keep)| **keep)
        .map(|((n, v), _)| (*n, v.clone()))
        .collect();
    let all = &numeric;
    let numeric = firsts;
    // global[d] = round_up(x, local[d]) where it is not plain equality for every launch.
    for d in 0..dims {
        let g = format!("global[{d}]");
        let lo = format!("local[{d}]");
        let (Some((_, vg)), Some((_, vl))) = (
            all.iter().find(|(n, _)| *n == g),
            all.iter().find(|(n, _)| *n == lo),
        ) else {
            continue;
        };
        for (x, vx) in &numeric {
            if *x == g || *x == lo || x.starts_with("local[") || x.starts_with("global[") {
                continue;
            }
            if !(varies(vg) || varies(vx)) || vx == vg {
                continue;
            }
            let holds = vg
                .iter()
                .zip(vl)
                .zip(vx)
                .all(|((g, l), x)| *l > 0 && *x > 0 && *g == (x + l - 1) / l * l);
            if holds {
                out.push(Relation::RoundUp {
                    left: g.clone(),
                    right: x.to_string(),
                    multiple: lo.clone(),
                });
            }
        }
    }
    // left = right * k for a constant integer k >= 2 (a.bytes = n * 4, global = n * 2).
    for (a, va) in &numeric {
        for (b, vb) in &numeric {
            if a == b || !(varies(va) && varies(vb)) {
                continue;
            }
            if a.ends_with(".bytes")
                && b.ends_with(".elements")
                && a.split('.').next() == b.split('.').next()
            {
                continue; // true by construction
            }
            let Some(k) = vb.first().filter(|v| **v != 0).map(|v| va[0] / v) else {
                continue;
            };
            if k >= 2 && va.iter().zip(vb).all(|(x, y)| *x == y * k) {
                out.push(Relation::Multiple {
                    left: a.to_string(),
                    right: b.to_string(),
                    factor: k,
                });
            }
        }
    }
    out
}

/// Every kernel of the capture, generalised, in order of first launch.
pub fn by_kernel(launches: &[LaunchRecord]) -> Vec<KernelParams> {
    let mut kernels: Vec<&str> = Vec::new();
    for l in launches {
        if !kernels.contains(&l.kernel.as_str()) {
            kernels.push(&l.kernel);
        }
    }
    kernels
        .into_iter()
        .map(|k| {
            let ls: Vec<&LaunchRecord> = launches.iter().filter(|l| l.kernel == k).collect();
            generalise(k, &ls)
        })
        .collect()
}

/// The text `cltrap show CAP --kernel NAME` prints.
pub fn render(p: &KernelParams) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kernel {}: {} launch(es), ids {}",
        p.kernel,
        p.launches.len(),
        crate::ids::format_ids(&p.launches)
    );
    let _ = writeln!(o, "work_dim: {}", p.work_dim);
    let w = p.quantities.iter().map(|q| q.name.len()).max().unwrap_or(0);
    for q in &p.quantities {
        let _ = writeln!(o, "  {:<w$}  {}", q.name, q.param);
    }
    if p.relations.is_empty() {
        let _ = writeln!(o, "relations: none between varying quantities");
    } else {
        let _ = writeln!(o, "relations (hold in every launch):");
        for r in &p.relations {
            let _ = writeln!(o, "  {r}");
        }
    }
    o
}

/// `cltrap show CAP --kernel NAME [--json]`.
pub fn cli(
    capture: &cltrap_capture::Capture,
    kernel: &str,
    json: bool,
    out: &mut impl std::io::Write,
) -> Result<u8, String> {
    let launches: Vec<&LaunchRecord> = capture
        .launches
        .iter()
        .filter(|l| l.kernel == kernel)
        .collect();
    if launches.is_empty() {
        let mut names: Vec<&str> = capture.launches.iter().map(|l| l.kernel.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        return Err(format!(
            "the capture has no launch of kernel {kernel:?}; its kernels: {}",
            names.join(", ")
        ));
    }
    let p = generalise(kernel, &launches);
    let text = if json {
        serde_json::to_string_pretty(&p).map_err(|e| e.to_string())? + "\n"
    } else {
        render(&p)
    };
    let _ = write!(out, "{text}");
    Ok(0)
}

/// The distinct scalar values the application used, as bounds a fuzzer may keep to: for an
/// integer scalar argument `name`, the inclusive range it was observed in.
pub fn int_bounds(p: &KernelParams, name: &str) -> Option<(i128, i128)> {
    match p.get(name)? {
        Param::Constant {
            value: Value::Int(v),
        } => Some((*v, *v)),
        Param::Set { values } => {
            let ints: BTreeSet<i128> = values
                .iter()
                .filter_map(|v| match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                })
                .collect();
            Some((*ints.first()?, *ints.last()?))
        }
        Param::Range {
            min: Value::Int(a),
            max: Value::Int(b),
            ..
        } => Some((*a, *b)),
        _ => None,
    }
}

/// The integer scalar arguments of a kernel with the range the application kept them in:
/// what `cltrap fuzz --captured-ranges` narrows generated cases to, so a campaign explores
/// inputs the application could produce (a by-value `n` between 100 and 1000) instead of
/// values it never passes. Floats, vectors and structs are left free.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarBounds {
    /// `(argument index, element type, lowest, highest)`.
    pub args: Vec<(usize, Scalar, i128, i128)>,
}

impl ScalarBounds {
    /// The bounds of `p`'s integer scalar arguments, as laid out in launch `l` of that kernel.
    pub fn of(p: &KernelParams, l: &LaunchRecord) -> ScalarBounds {
        let mut args = Vec::new();
        for (i, a) in l.args.iter().enumerate() {
            let ArgRecord::Scalar { info, .. } = a else {
                continue;
            };
            let Some(t) = parse_value_type(&info.type_name).filter(|t| t.lanes == 1) else {
                continue;
            };
            if t.scalar.is_float() || t.scalar == Scalar::Bool {
                continue;
            }
            if let Some((lo, hi)) = int_bounds(p, &arg_name(a)) {
                args.push((i, t.scalar, lo, hi));
            }
        }
        ScalarBounds { args }
    }

    /// `input` with every bounded integer scalar clamped into its range.
    pub fn narrowed(
        &self,
        mut input: crate::executor::LaunchInput,
    ) -> crate::executor::LaunchInput {
        for (i, scalar, lo, hi) in &self.args {
            if let Some(crate::executor::InputArg::Scalar(bytes)) = input.args.get_mut(*i) {
                if bytes.len() == scalar.size() {
                    let bits = scalar.raw_bits(bytes);
                    let signed =
                        matches!(scalar, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64);
                    let width = scalar.size() as u32 * 8;
                    let v = if signed {
                        let shift = 64 - width;
                        i128::from(((bits << shift) as i64) >> shift)
                    } else {
                        i128::from(bits)
                    };
                    let c = v.clamp(*lo, *hi);
                    bytes.copy_from_slice(&(c as u64).to_le_bytes()[..scalar.size()]);
                }
            }
        }
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cltrap_capture::{ArgInfo, DeviceRecord, LaunchApi};

    fn launch(id: u64, n: u32, local: u64) -> LaunchRecord {
        let global = u64::from(n).div_ceil(local) * local;
        LaunchRecord {
            id,
            seq: id,
            kernel: "k".into(),
            program: String::new(),
            api: LaunchApi::NdRange,
            work_dim: 1,
            global_offset: None,
            global_size: vec![global],
            local_size: Some(vec![local]),
            args: vec![
                ArgRecord::Buffer {
                    info: ArgInfo {
                        index: 0,
                        name: "a".into(),
                        type_name: "float*".into(),
                        address_space: "global".into(),
                        qualifiers: Default::default(),
                    },
                    mem: 1,
                    flags: 1,
                    size: u64::from(n) * 4,
                    sub_of: None,
                    before: cltrap_capture::Content::Missing {
                        note: String::new(),
                    },
                    after: cltrap_capture::Content::Missing {
                        note: String::new(),
                    },
                },
                ArgRecord::Scalar {
                    info: ArgInfo {
                        index: 1,
                        name: "n".into(),
                        type_name: "uint".into(),
                        address_space: "private".into(),
                        qualifiers: Default::default(),
                    },
                    bytes: cltrap_capture::hex::encode(&n.to_le_bytes()),
                },
                ArgRecord::Scalar {
                    info: ArgInfo {
                        index: 2,
                        name: "k".into(),
                        type_name: "float".into(),
                        address_space: "private".into(),
                        qualifiers: Default::default(),
                    },
                    bytes: cltrap_capture::hex::encode(&2.5f32.to_le_bytes()),
                },
            ],
            device: DeviceRecord::default(),
            queue_properties: 0,
            launch_site: None,
            thread: 0,
            status: 0,
            not_replayable: vec![],
        }
    }

    /// A launch passing `count` scalars `s0`, `s1`, ... all of value `v`.
    fn many_scalars(id: u64, count: u32, v: u32) -> LaunchRecord {
        let mut l = launch(id, 100, 64);
        l.args = (0..count)
            .map(|i| ArgRecord::Scalar {
                info: ArgInfo {
                    index: i,
                    name: format!("s{i}").into(),
                    type_name: "uint".into(),
                    address_space: "private".into(),
                    qualifiers: Default::default(),
                },
                bytes: cltrap_capture::hex::encode(&v.to_le_bytes()),
            })
            .collect();
        l
    }

    #[test]
    fn equal_quantities_are_related_through_one_stand_in_not_pairwise() {
        // 3 000 scalars equal in both launches: one relation each, not 4.5 million pairs.
        let ls = [many_scalars(0, 3000, 1), many_scalars(1, 3000, 2)];
        let p = generalise("k", &ls.iter().collect::<Vec<_>>());
        assert_eq!(p.relations.len(), 2999);
        assert!(p.relations.iter().all(|r| matches!(
            r,
            Relation::Equal { left, .. } if left == "s0"
        )));
    }

    #[test]
    fn constants_sets_and_relations_are_found() {
        let ls: Vec<LaunchRecord> = [100u32, 200, 300, 1000]
            .iter()
            .enumerate()
            .map(|(i, n)| launch(i as u64, *n, 64))
            .collect();
        let refs: Vec<&LaunchRecord> = ls.iter().collect();
        let p = generalise("k", &refs);
        assert_eq!(
            p.get("local[0]").and_then(Param::constant),
            Some(&Value::Int(64))
        );
        assert_eq!(
            p.get("k").and_then(Param::constant),
            Some(&Value::Float(2.5))
        );
        assert_eq!(
            p.get("n"),
            Some(&Param::Set {
                values: vec![
                    Value::Int(100),
                    Value::Int(200),
                    Value::Int(300),
                    Value::Int(1000)
                ]
            })
        );
        let rels: Vec<String> = p.relations.iter().map(ToString::to_string).collect();
        assert!(rels.contains(&"a.elements = n".to_string()), "{rels:?}");
        assert!(
            rels.contains(&"global[0] = round_up(n, local[0])".to_string()),
            "{rels:?}"
        );
        assert!(rels.contains(&"a.bytes = n * 4".to_string()), "{rels:?}");
        assert_eq!(int_bounds(&p, "n"), Some((100, 1000)));
    }

    #[test]
    fn fuzz_inputs_are_narrowed_to_the_captured_ranges() {
        let ls: Vec<LaunchRecord> = [100u32, 1000].iter().map(|n| launch(0, *n, 64)).collect();
        let p = generalise("k", &ls.iter().collect::<Vec<_>>());
        let b = ScalarBounds::of(&p, &ls[0]);
        assert_eq!(b.args, vec![(1, Scalar::U32, 100, 1000)]);
        let input = |n: u32| crate::executor::LaunchInput {
            kernel: "k".into(),
            work_dim: 1,
            global_offset: None,
            global_size: vec![64],
            local_size: None,
            args: vec![
                crate::executor::InputArg::NullBuffer,
                crate::executor::InputArg::Scalar(n.to_le_bytes().to_vec()),
                crate::executor::InputArg::Scalar(9.0f32.to_le_bytes().to_vec()),
            ],
            stand_ins: vec![],
        };
        for (given, kept) in [(5u32, 100u32), (500, 500), (u32::MAX, 1000)] {
            let out = b.narrowed(input(given));
            assert_eq!(
                out.args[1],
                crate::executor::InputArg::Scalar(kept.to_le_bytes().to_vec())
            );
            assert_eq!(out.args[2], input(given).args[2], "floats stay free");
        }
        let signed = ScalarBounds {
            args: vec![(1, Scalar::I32, -4, 4)],
        };
        let mut i = input(0);
        i.args[1] = crate::executor::InputArg::Scalar((-100i32).to_le_bytes().to_vec());
        assert_eq!(
            signed.narrowed(i).args[1],
            crate::executor::InputArg::Scalar((-4i32).to_le_bytes().to_vec())
        );
    }

    #[test]
    fn nan_is_one_value_and_many_distinct_values_are_summarised() {
        let nan = Some(Value::Float(f64::NAN));
        assert!(
            matches!(Param::of(&[nan.clone(), nan]), Param::Constant { value: Value::Float(v) } if v.is_nan())
        );
        let many: Vec<Option<Value>> = (0..20_000).rev().map(|i| Some(Value::Int(i))).collect();
        assert_eq!(
            Param::of(&many),
            Param::Range {
                min: Value::Int(0),
                max: Value::Int(19_999),
                distinct: 20_000
            }
        );
    }

    #[test]
    fn many_values_become_a_range_and_absent_ones_are_mixed() {
        let mut ls: Vec<LaunchRecord> = (1..=20).map(|i| launch(i, i as u32 * 10, 16)).collect();
        let p = generalise("k", &ls.iter().collect::<Vec<_>>());
        assert_eq!(
            p.get("n"),
            Some(&Param::Range {
                min: Value::Int(10),
                max: Value::Int(200),
                distinct: 20
            })
        );
        ls[3].local_size = None;
        let p = generalise("k", &ls.iter().collect::<Vec<_>>());
        assert_eq!(
            p.get("local[0]"),
            Some(&Param::Mixed {
                present: 19,
                absent: 1
            })
        );
    }
}
