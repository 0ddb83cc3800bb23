//! The input classes a campaign runs besides its seeds, so that a kernel whose first random
//! (or captured) input crashes still gets test cases: the all-zero input, small values, the
//! all-one input (every divisor, stride and size 1: no division by zero, every index of a
//! work-item near its id), and role-aware values — scalars that bound a loop or index a buffer, and buffers whose
//! elements are indices ([`super::roles`]), kept inside the buffers' extents. Every class
//! has the seed's geometry and buffer sizes; only values change. [`boundary`] makes inputs
//! with buffer lanes equal to the values the kernel may compare them with (for the cases a
//! campaign keeps for their outputs).

use super::mutate::{f32_to_half, Rng, Shape};
use super::roles::Roles;
use crate::executor::{InputArg, LaunchInput};
use cltrap_kernel::interface::{KernelInterface, Scalar};

/// One value in `scalar`'s encoding, little-endian, in the first `scalar.size()` bytes (an
/// array, not a `Vec`: it runs once per lane, millions of times for a large buffer).
fn encode(scalar: Scalar, v: f64) -> [u8; 8] {
    let bits: u64 = match scalar {
        Scalar::Int { .. } => v as i64 as u64,
        Scalar::Float { bits: 64 } => v.to_bits(),
        Scalar::Float { bits: 32 } => (v as f32).to_bits() as u64,
        Scalar::Float { .. } => f32_to_half(v as f32) as u64,
    };
    bits.to_le_bytes()
}

/// `input` with every lane of every mutable argument set to `value(argument, lane type)`.
fn fill(
    input: &LaunchInput,
    shapes: &[Shape],
    mut value: impl FnMut(usize, Scalar) -> f64,
) -> LaunchInput {
    let mut out = input.clone();
    let byte = Scalar::Int {
        bits: 8,
        signed: false,
    };
    for (i, (shape, arg)) in shapes.iter().zip(out.args.iter_mut()).enumerate() {
        let mut lanes = |bytes: &mut [u8], scalar: Scalar| {
            let size = scalar.size();
            for lane in bytes.chunks_exact_mut(size) {
                lane.copy_from_slice(&encode(scalar, value(i, scalar))[..size]);
            }
        };
        match (shape, arg) {
            (Shape::Value(t), InputArg::Scalar(b)) => lanes(b, t.scalar),
            (Shape::Buffer(Some(t)), InputArg::Buffer { bytes, .. }) => lanes(bytes, t.scalar),
            (Shape::Buffer(None), InputArg::Buffer { bytes, .. }) => lanes(bytes, byte),
            (Shape::Struct(l), InputArg::Scalar(el)) => {
                for f in &l.fields {
                    if let Some(b) = el.get_mut(f.offset..f.offset + f.ty.size()) {
                        lanes(b, f.ty.scalar);
                    }
                }
            }
            (Shape::Structs(l), InputArg::Buffer { bytes, .. }) => {
                for el in bytes.chunks_exact_mut(l.size.max(1)) {
                    for f in &l.fields {
                        if let Some(b) = el.get_mut(f.offset..f.offset + f.ty.size()) {
                            lanes(b, f.ty.scalar);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The smallest element count among the input's buffers (at least 1): every index below it
/// is inside every buffer.
fn extent(input: &LaunchInput, shapes: &[Shape]) -> u64 {
    shapes
        .iter()
        .zip(&input.args)
        .filter_map(|(s, a)| {
            let InputArg::Buffer { bytes, .. } = a else {
                return None;
            };
            let width = match s {
                Shape::Buffer(Some(t)) => t.size(),
                Shape::Structs(l) => l.size,
                Shape::Buffer(None) => 1,
                _ => return None,
            };
            Some((bytes.len() / width.max(1)) as u64)
        })
        .filter(|n| *n > 0)
        .min()
        .unwrap_or(1)
}

/// A small value of `scalar`'s kind: 0..=3 for integers, 0, 0.5, 1 or 2 for floats.
fn small(scalar: Scalar, rng: &mut Rng) -> f64 {
    match scalar {
        Scalar::Int { .. } => rng.below(4) as f64,
        Scalar::Float { .. } => [0.0, 0.5, 1.0, 2.0][rng.below(4) as usize],
    }
}

/// The classes to run, named, built from `template` (a seed) with `rng` (so a campaign's
/// seed decides them).
pub fn inputs(
    iface: &KernelInterface,
    roles: &Roles,
    template: &LaunchInput,
    shapes: &[Shape],
    rng: &mut Rng,
) -> Vec<(String, LaunchInput)> {
    let mut out = vec![
        (
            "all-zero input".to_string(),
            fill(template, shapes, |_, _| 0.0),
        ),
        (
            "small values".to_string(),
            fill(template, shapes, |_, s| small(s, rng)),
        ),
        (
            "all-one input".to_string(),
            fill(template, shapes, |_, _| 1.0),
        ),
    ];
    let named = |i: usize| iface.args.get(i).map_or("", |a| a.name.as_str());
    if (0..shapes.len()).any(|i| roles.bounds_values(named(i))) {
        let e = extent(template, shapes);
        let g = template.global_size.iter().product::<u64>().max(1);
        // Offsets and per-work-item strides stay below extent / work-items: `a[gid * n + k]`
        // and `a[off + gid]` both stay inside.
        let per_item = (e / g).max(1);
        let input = fill(template, shapes, |i, s| {
            let name = named(i);
            match s {
                Scalar::Int { .. } if roles.index_buffers.contains(name) => rng.below(e) as f64,
                Scalar::Int { .. } if roles.bound_scalars.contains(name) => {
                    (1 + rng.below(per_item)) as f64
                }
                Scalar::Int { .. } if roles.index_scalars.contains(name) => {
                    rng.below(per_item) as f64
                }
                _ => small(s, rng),
            }
        });
        out.push(("role-aware values".to_string(), input));
    }
    out
}

/// The values a relational operator of the kernel may compare a buffer lane with: every lane
/// of the case's by-value arguments of `scalar`'s kind (with the lane it sits in, `None` for
/// a one-lane argument) and the kernel's own constants.
fn comparands(
    iface: &KernelInterface,
    input: &LaunchInput,
    shapes: &[Shape],
    scalar: Scalar,
) -> Vec<(Option<usize>, [u8; 8])> {
    let size = scalar.size();
    let same_kind = |s: Scalar| {
        matches!(
            (s, scalar),
            (Scalar::Int { .. }, Scalar::Int { .. }) | (Scalar::Float { .. }, Scalar::Float { .. })
        ) && s.size() == size
    };
    let mut out = Vec::new();
    for (shape, arg) in shapes.iter().zip(&input.args) {
        let (Shape::Value(t), InputArg::Scalar(b)) = (shape, arg) else {
            continue;
        };
        if !same_kind(t.scalar) {
            continue;
        }
        for (lane, bytes) in b.chunks_exact(size).take(t.lanes as usize).enumerate() {
            let mut v = [0u8; 8];
            v[..size].copy_from_slice(bytes);
            out.push(((t.lanes > 1).then_some(lane), v));
        }
    }
    match scalar {
        Scalar::Int { .. } => {
            for c in &iface.int_constants {
                out.push((None, encode(scalar, *c as f64)));
            }
        }
        Scalar::Float { .. } => {
            for c in &iface.float_constants {
                out.push((None, encode(scalar, *c)));
            }
        }
    }
    out
}

/// `input` with one lane of some elements of its buffers of numbers set *equal* to a value the kernel may
/// compare them with ([`comparands`]: a by-value argument's lane of the same position, or a
/// constant of the kernel), the other lanes as they were. A case that is exactly on a
/// comparison's boundary tells `a < b` from `a <= b` (a relational-boundary mutant) where
/// random values almost never do. `None` when the input has no such lane.
pub fn boundary(
    iface: &KernelInterface,
    input: &LaunchInput,
    shapes: &[Shape],
    rng: &mut Rng,
) -> Option<LaunchInput> {
    let mut out = input.clone();
    let mut changed = false;
    for (i, shape) in shapes.iter().enumerate() {
        let Shape::Buffer(Some(t)) = shape else {
            continue;
        };
        let values = comparands(iface, input, shapes, t.scalar);
        if values.is_empty() {
            continue;
        }
        let Some(InputArg::Buffer { bytes, .. }) = out.args.get_mut(i) else {
            continue;
        };
        let size = t.scalar.size();
        for el in bytes.chunks_exact_mut(t.size().max(1)) {
            if rng.below(2) == 0 {
                continue;
            }
            // One lane of the element: the others keep the values that put it where it
            // was (inside a range test on every lane, say), so only this comparison moves.
            {
                let lane = rng.below(t.lanes.max(1) as u64) as usize;
                let fits: Vec<&[u8; 8]> = values
                    .iter()
                    .filter(|(at, _)| at.is_none() || *at == Some(lane))
                    .map(|(_, v)| v)
                    .collect();
                if fits.is_empty() {
                    continue;
                }
                let v = fits[rng.below(fits.len() as u64) as usize];
                if let Some(dst) = el.get_mut(lane * size..(lane + 1) * size) {
                    dst.copy_from_slice(&v[..size]);
                    changed = true;
                }
            }
        }
    }
    changed.then_some(out)
}
