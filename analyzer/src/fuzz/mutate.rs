//! Type-aware mutation of one argument (or one buffer element) of a test case: bit flips,
//! boundary values (0, ±1, MIN/MAX, NaN/Inf/denormals), the kernel's own constants, and values
//! equal to work-item ids and sizes — the values CLFuzz found branches hinge on.

use crate::executor::{InputArg, LaunchInput};
use cltrap_kernel::interface::{ArgKind, KernelInterface, Scalar, StructLayout, ValueType};

/// A small deterministic generator (xorshift64*), so `--seed S` reproduces a campaign.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// How the mutator sees one argument's bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A by-value scalar or vector.
    Value(ValueType),
    /// A buffer of elements (`None` = unknown layout: mutated byte-wise).
    Buffer(Option<ValueType>),
    /// A buffer of structs: one field of one element at a time.
    Structs(StructLayout),
    /// A struct by value: one field at a time.
    Struct(StructLayout),
    /// Not mutated (local sizes, images, samplers, structs without a layout).
    Fixed,
}

/// The shapes of every argument of `input` from the interface.
pub fn shapes(iface: &KernelInterface, input: &LaunchInput) -> Vec<Shape> {
    input
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match (iface.args.get(i).map(|x| &x.kind), a) {
            (Some(ArgKind::Value { ty }), InputArg::Scalar(b)) if b.len() == ty.size() => {
                Shape::Value(*ty)
            }
            (
                Some(ArgKind::Buffer {
                    layout: Some(l), ..
                }),
                InputArg::Buffer { bytes, .. },
            ) if bytes.len() >= l.size => Shape::Structs(l.clone()),
            (Some(ArgKind::Buffer { elem, .. }), InputArg::Buffer { bytes, .. })
                if !bytes.is_empty() =>
            {
                Shape::Buffer(*elem)
            }
            (Some(ArgKind::Opaque { layout: Some(l) }), InputArg::Scalar(b))
                if b.len() == l.size =>
            {
                Shape::Struct(l.clone())
            }
            _ => Shape::Fixed,
        })
        .collect()
}

/// Interesting values for mutations: the kernel's constants and the launch's ids and sizes.
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    /// Integers (constants, constants ± 1, sizes, ids).
    pub ints: Vec<i64>,
    /// Floats (constants and their neighbours).
    pub floats: Vec<f64>,
}

impl Dictionary {
    /// From the interface's literals and the launch geometry.
    pub fn new(iface: &KernelInterface, input: &LaunchInput) -> Dictionary {
        let mut ints = Vec::new();
        for c in &iface.int_constants {
            ints.extend([*c, c.wrapping_add(1), c.wrapping_sub(1), c.wrapping_neg()]);
        }
        for (d, g) in input.global_size.iter().enumerate() {
            let g = *g as i64;
            ints.extend([g, g - 1, g + 1, g / 2]);
            if let Some(l) = input.local_size.as_ref().and_then(|l| l.get(d)) {
                ints.extend([*l as i64, *l as i64 - 1, g / (*l as i64).max(1)]);
            }
        }
        let mut floats: Vec<f64> = iface.float_constants.clone();
        for c in &iface.float_constants {
            floats.extend([next_up(*c), next_down(*c)]);
        }
        floats.extend(iface.int_constants.iter().map(|i| *i as f64));
        ints.sort_unstable();
        ints.dedup();
        Dictionary { ints, floats }
    }
}

fn next_up(v: f64) -> f64 {
    let f = v as f32;
    f32::from_bits(if f >= 0.0 {
        f.to_bits() + 1
    } else {
        f.to_bits() - 1
    }) as f64
}

fn next_down(v: f64) -> f64 {
    -next_up(-v)
}

/// Mutates `input` in place: one argument, or one element (sometimes a short run) of one
/// buffer. Returns a short description of what changed, or `None` when nothing is mutable.
pub fn mutate(
    input: &mut LaunchInput,
    shapes: &[Shape],
    dict: &Dictionary,
    rng: &mut Rng,
) -> Option<String> {
    mutate_tracked(input, shapes, dict, rng).map(|(how, _)| how)
}

/// The bytes of a buffer a mutation changed, as they were before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Touched {
    /// Argument index.
    pub arg: usize,
    /// Byte offset in the buffer.
    pub at: usize,
    /// The previous bytes of `[at, at + old.len())`.
    pub old: Vec<u8>,
}

/// [`mutate`], also saying which bytes of a buffer changed (`None` for a by-value
/// argument), so a caller can undo it and send only those bytes (reduced executions).
pub fn mutate_tracked(
    input: &mut LaunchInput,
    shapes: &[Shape],
    dict: &Dictionary,
    rng: &mut Rng,
) -> Option<(String, Option<Touched>)> {
    let mutable: Vec<usize> = (0..shapes.len())
        .filter(|i| !matches!(shapes[*i], Shape::Fixed))
        .collect();
    if mutable.is_empty() {
        return None;
    }
    let i = mutable[rng.below(mutable.len() as u64) as usize];
    let global = input.global_size.iter().product::<u64>().max(1);
    match (&shapes[i], &mut input.args[i]) {
        (Shape::Struct(l), InputArg::Scalar(bytes)) => {
            let how = mutate_field(bytes, l, dict, global, rng);
            Some((format!("arg {i}: {how}"), None))
        }
        (Shape::Structs(l), InputArg::Buffer { bytes, .. }) => {
            let n = (bytes.len() / l.size.max(1)).max(1);
            let idx = if rng.below(2) == 0 {
                rng.below(n.min(64) as u64) as usize
            } else {
                rng.below(n as u64) as usize
            };
            let at = idx * l.size;
            let el = bytes.get_mut(at..at + l.size)?;
            let old = el.to_vec();
            let how = mutate_field(el, l, dict, global, rng);
            Some((
                format!("arg {i}[{idx}]: {how}"),
                Some(Touched { arg: i, at, old }),
            ))
        }
        (Shape::Value(ty), InputArg::Scalar(bytes)) => {
            let lane = rng.below(ty.lanes as u64) as usize;
            let how = mutate_element(&mut bytes[..], ty.scalar, lane, dict, global, rng);
            Some((format!("arg {i}: {how}"), None))
        }
        (Shape::Buffer(elem), InputArg::Buffer { bytes, .. }) => {
            let (scalar, width) = match *elem {
                Some(t) => (t.scalar, t.size()),
                None => (
                    Scalar::Int {
                        bits: 8,
                        signed: false,
                    },
                    1,
                ),
            };
            let lanes = width / scalar.size();
            let n = (bytes.len() / width.max(1)).max(1);
            // Mostly low indices (ids of the first work-items), sometimes anywhere.
            let idx = if rng.below(2) == 0 {
                rng.below(n.min(64) as u64) as usize
            } else {
                rng.below(n as u64) as usize
            };
            let run = if rng.below(8) == 0 {
                1 + rng.below(8) as usize
            } else {
                1
            };
            let start = (idx * width).min(bytes.len());
            let end = ((idx + run).min(n) * width).min(bytes.len());
            let old = bytes[start..end].to_vec();
            let mut how = String::new();
            for k in idx..(idx + run).min(n) {
                let lane = rng.below(lanes.max(1) as u64) as usize;
                let at = k * width;
                let Some(el) = bytes.get_mut(at..at + width) else {
                    break;
                };
                how = mutate_element(el, scalar, lane, dict, global, rng);
            }
            Some((
                format!("arg {i}[{idx}..+{run}]: {how}"),
                Some(Touched {
                    arg: i,
                    at: start,
                    old,
                }),
            ))
        }
        _ => None,
    }
}

/// `input` with every mutable argument replaced by random values of its type (a random seed
/// with the geometry and sizes of a captured one).
pub fn randomize(
    input: &LaunchInput,
    shapes: &[Shape],
    dict: &Dictionary,
    rng: &mut Rng,
) -> LaunchInput {
    let mut out = input.clone();
    let global = input.global_size.iter().product::<u64>().max(1);
    for (shape, arg) in shapes.iter().zip(out.args.iter_mut()) {
        match (shape, arg) {
            (Shape::Value(t), InputArg::Scalar(b)) => *b = random_value(*t, dict, global, rng),
            (Shape::Struct(l), InputArg::Scalar(b)) => *b = random_struct(l, dict, global, rng),
            (Shape::Buffer(Some(t)), InputArg::Buffer { bytes, .. }) => {
                for el in bytes.chunks_exact_mut(t.size()) {
                    el.copy_from_slice(&random_value(*t, dict, global, rng));
                }
            }
            (Shape::Structs(l), InputArg::Buffer { bytes, .. }) => {
                for el in bytes.chunks_exact_mut(l.size) {
                    el.copy_from_slice(&random_struct(l, dict, global, rng));
                }
            }
            (Shape::Buffer(None), InputArg::Buffer { bytes, .. }) => {
                bytes.iter_mut().for_each(|b| *b = rng.next_u64() as u8)
            }
            _ => {}
        }
    }
    out
}

/// Mutates one field of the struct in `el`.
fn mutate_field(
    el: &mut [u8],
    l: &StructLayout,
    dict: &Dictionary,
    global: u64,
    rng: &mut Rng,
) -> String {
    let Some(f) = l.fields.get(rng.below(l.fields.len() as u64) as usize) else {
        return "nothing".into();
    };
    let Some(bytes) = el.get_mut(f.offset..f.offset + f.ty.size()) else {
        return "nothing".into();
    };
    let lane = rng.below(f.ty.lanes as u64) as usize;
    let how = mutate_element(bytes, f.ty.scalar, lane, dict, global, rng);
    format!(".{} {how}", f.name)
}

/// A random struct value: every field random.
pub fn random_struct(l: &StructLayout, dict: &Dictionary, global: u64, rng: &mut Rng) -> Vec<u8> {
    let mut out = vec![0u8; l.size];
    for f in &l.fields {
        let v = random_value(f.ty, dict, global, rng);
        if let Some(dst) = out.get_mut(f.offset..f.offset + v.len()) {
            dst.copy_from_slice(&v);
        }
    }
    out
}

/// Writes a new value into lane `lane` of the element `el` (little-endian, `scalar` lanes).
fn mutate_element(
    el: &mut [u8],
    scalar: Scalar,
    lane: usize,
    dict: &Dictionary,
    global: u64,
    rng: &mut Rng,
) -> String {
    let size = scalar.size();
    let Some(slot) = el.get_mut(lane * size..(lane + 1) * size) else {
        return "nothing".into();
    };
    let mut raw = [0u8; 8];
    raw[..size].copy_from_slice(slot);
    let old = u64::from_le_bytes(raw);
    let (new, how) = match scalar {
        Scalar::Int { bits, signed } => int_value(old, bits, signed, dict, global, rng),
        Scalar::Float { bits } => float_value(old, bits, dict, global, rng),
    };
    slot.copy_from_slice(&new.to_le_bytes()[..size]);
    how
}

fn int_value(
    old: u64,
    bits: u32,
    signed: bool,
    dict: &Dictionary,
    global: u64,
    rng: &mut Rng,
) -> (u64, String) {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let (min, max) = if signed {
        (1u64 << (bits - 1), mask >> 1)
    } else {
        (0, mask)
    };
    let pick = rng.below(10);
    let (v, how) = match pick {
        0 => (old ^ (1 << rng.below(bits as u64)), "bit flip".to_string()),
        1 => (0, "0".into()),
        2 => (old.wrapping_add(1), "+1".into()),
        3 => (old.wrapping_sub(1), "-1".into()),
        4 => {
            let v = [min, max, mask, 1][rng.below(4) as usize];
            (v, "boundary".into())
        }
        5 | 6 if !dict.ints.is_empty() => {
            let v = dict.ints[rng.below(dict.ints.len() as u64) as usize];
            (v as u64, format!("constant {v}"))
        }
        7 => (rng.below(global), "work-item id".into()),
        8 => (rng.below(2 * global + 2), "small".into()),
        _ => (rng.next_u64(), "random".into()),
    };
    (v & mask, how)
}

fn float_value(
    old: u64,
    bits: u32,
    dict: &Dictionary,
    global: u64,
    rng: &mut Rng,
) -> (u64, String) {
    let from = |v: f64| -> u64 {
        match bits {
            64 => v.to_bits(),
            32 => (v as f32).to_bits() as u64,
            _ => f32_to_half(v as f32) as u64,
        }
    };
    let pick = rng.below(10);
    match pick {
        0 => (old ^ (1 << rng.below(bits as u64)), "bit flip".into()),
        1 => (from(0.0), "0".into()),
        2 => (from([1.0, -1.0][rng.below(2) as usize]), "±1".into()),
        3 => {
            let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
            (from(specials[rng.below(4) as usize]), "NaN/Inf/-0".into())
        }
        4 => {
            let v = match bits {
                64 => {
                    [f64::MIN_POSITIVE / 2.0, f64::MAX, f64::MIN][rng.below(3) as usize].to_bits()
                }
                32 => [f32::from_bits(1), f32::MAX, f32::MIN, f32::MIN_POSITIVE]
                    [rng.below(4) as usize]
                    .to_bits() as u64,
                _ => [0x0001u64, 0x7bff, 0xfbff][rng.below(3) as usize],
            };
            (v, "denormal/MIN/MAX".into())
        }
        5 | 6 if !dict.floats.is_empty() => {
            let v = dict.floats[rng.below(dict.floats.len() as u64) as usize];
            (from(v), format!("constant {v}"))
        }
        7 => (from(rng.below(global) as f64), "work-item id".into()),
        _ => {
            let v = (rng.next_u64() as i64 as f64) / (1u64 << 52) as f64;
            (from(v), "random".into())
        }
    }
}

/// IEEE half from f32, rounding toward zero (good enough for mutation values).
pub fn f32_to_half(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        sign | 0x7c00
    } else if e <= 0 {
        if e < -10 {
            sign
        } else {
            sign | (((man | 0x80_0000) >> (14 - e)) as u16)
        }
    } else {
        sign | ((e as u16) << 10) | ((man >> 13) as u16)
    }
}

/// Random bytes for a fresh value of type `ty` (seeding from an interface file).
pub fn random_value(ty: ValueType, dict: &Dictionary, global: u64, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = vec![0u8; ty.size()];
    for lane in 0..ty.lanes as usize {
        let size = ty.scalar.size();
        let v = match ty.scalar {
            Scalar::Int { bits, signed } => {
                // Mostly small values (sizes, ids), sometimes anything.
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let v = if rng.below(4) == 0 {
                    int_value(0, bits, signed, dict, global, rng).0
                } else {
                    rng.below(2 * global + 2)
                };
                v & mask
            }
            Scalar::Float { bits } => {
                let v = (rng.below(2000) as f64 - 1000.0) / 10.0;
                match bits {
                    64 => v.to_bits(),
                    32 => (v as f32).to_bits() as u64,
                    _ => f32_to_half(v as f32) as u64,
                }
            }
        };
        bytes[lane * size..(lane + 1) * size].copy_from_slice(&v.to_le_bytes()[..size]);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (KernelInterface, LaunchInput) {
        let src =
            "__kernel void k(__global int *a, float f, uint n) { if (n == 4242) a[0] = f > 1.5f; }";
        let p = cltrap_kernel::parse_program(src, "").unwrap();
        let iface = cltrap_kernel::interface::derive(&p, "k").unwrap();
        let input = LaunchInput {
            kernel: "k".into(),
            work_dim: 1,
            global_offset: None,
            global_size: vec![16],
            local_size: Some(vec![4]),
            args: vec![
                InputArg::Buffer {
                    mem: None,
                    flags: 0,
                    bytes: vec![0; 64],
                },
                InputArg::Scalar(vec![0; 4]),
                InputArg::Scalar(vec![0; 4]),
            ],
            stand_ins: vec![],
        };
        (iface, input)
    }

    #[test]
    fn one_argument_at_a_time_and_reproducible() {
        let (iface, input) = setup();
        let shapes = shapes(&iface, &input);
        let dict = Dictionary::new(&iface, &input);
        assert!(dict.ints.contains(&4242) && dict.ints.contains(&4241));
        assert!(dict.floats.contains(&1.5));
        assert!(dict.ints.contains(&16) && dict.ints.contains(&4));
        let run = |seed| {
            let mut rng = Rng::new(seed);
            let mut out = Vec::new();
            for _ in 0..200 {
                let mut m = input.clone();
                mutate(&mut m, &shapes, &dict, &mut rng).unwrap();
                let changed = m
                    .args
                    .iter()
                    .zip(&input.args)
                    .filter(|(a, b)| a != b)
                    .count();
                assert!(changed <= 1);
                out.push(m);
            }
            out
        };
        let a = run(3);
        assert_eq!(a, run(3));
        // The magic constant is among the values tried for `n`.
        assert!(a
            .iter()
            .any(|m| m.args[2] == InputArg::Scalar(4242u32.to_le_bytes().to_vec())));
    }

    #[test]
    fn half_conversion() {
        assert_eq!(f32_to_half(1.0), 0x3c00);
        assert_eq!(f32_to_half(-2.0), 0xc000);
        assert_eq!(f32_to_half(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_half(65536.0), 0x7c00);
    }
}
