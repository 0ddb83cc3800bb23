//! The interface file (`cltrap fuzz --init`): CLFuzz's "kernel info" as JSON — per argument
//! its size in elements, how to fill it (`random`, a `fixed` value, a `file`) and whether it is
//! an output; the global and local sizes. Written from the kernel's derived interface for the
//! user to edit, then turned into the first test case of a campaign.

use super::error::FuzzError;
use super::mutate::{random_struct, random_value, Dictionary, Rng};
use crate::executor::{InputArg, LaunchInput};
use cltrap_kernel::interface::{ArgKind, KernelInterface, Role, ValueType};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How an argument's initial value (every element of a buffer) is chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Random values (mostly small, sometimes anything).
    Random,
    /// One value for a scalar (a number, or an array per vector lane), repeated in buffers;
    /// for a buffer, an array of one number per element (per lane) gives every element.
    Fixed(serde_json::Value),
    /// Raw little-endian bytes from a file (relative paths: next to the interface file).
    File(PathBuf),
    /// All bytes zero.
    Zero,
}

/// One argument of the interface file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgSpec {
    /// Parameter name (informative).
    pub name: String,
    /// Type spelling from the kernel (informative).
    #[serde(rename = "type")]
    pub ty: String,
    /// For buffers and `__local` pointers: number of elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Bytes per element when the element type has no known layout (structs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem_bytes: Option<u64>,
    /// How to fill it.
    pub fill: Fill,
    /// The kernel writes it (its contents after the run are the expected output).
    #[serde(default)]
    pub output: bool,
}

/// The interface file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceFile {
    /// Kernel name.
    pub kernel: String,
    /// Build options for the program.
    #[serde(default)]
    pub build_options: String,
    /// Global work size per dimension.
    pub global_size: Vec<u64>,
    /// Local work size per dimension (`null` = let the implementation choose).
    #[serde(default)]
    pub local_size: Option<Vec<u64>>,
    /// Arguments in order.
    pub args: Vec<ArgSpec>,
}

/// The interface file `--init` writes: 64 work-items in groups of 16, buffers of one element
/// per work-item, random contents — outputs included: the elements a kernel leaves unwritten
/// then show in its expected outputs, so a suite catches a mutant that skips a write (with
/// zeroed outputs, a kernel that writes zeros could not be told from one that writes nothing).
pub fn initial(iface: &KernelInterface, build_options: &str) -> InterfaceFile {
    let n = 64;
    let args = iface
        .args
        .iter()
        .map(|a| {
            let (size, fill, output) = match &a.kind {
                ArgKind::Buffer { role, .. } => (Some(n), Fill::Random, *role != Role::Input),
                ArgKind::Local { .. } => (Some(16), Fill::Zero, false),
                _ => (None, Fill::Random, false),
            };
            let elem_bytes = match &a.kind {
                ArgKind::Buffer {
                    elem: None,
                    layout: None,
                    ..
                }
                | ArgKind::Local { elem: None }
                | ArgKind::Opaque { layout: None } => Some(4),
                _ => None,
            };
            ArgSpec {
                name: a.name.clone(),
                ty: a.ty.clone(),
                size,
                elem_bytes,
                fill,
                output,
            }
        })
        .collect();
    InterfaceFile {
        kernel: iface.kernel.clone(),
        build_options: build_options.to_string(),
        global_size: vec![n],
        local_size: Some(vec![16]),
        args,
    }
}

fn fixed_bytes(v: &serde_json::Value, ty: ValueType, what: &str) -> Result<Vec<u8>, FuzzError> {
    let lanes: Vec<&serde_json::Value> = match v {
        serde_json::Value::Array(a) => a.iter().collect(),
        other => vec![other; ty.lanes as usize],
    };
    let mut out = vec![0u8; ty.size()];
    let size = ty.scalar.size();
    for (lane, v) in lanes.iter().take(ty.lanes as usize).enumerate() {
        let bits = match ty.scalar {
            cltrap_kernel::interface::Scalar::Int { .. } => v
                .as_i64()
                .map(|i| i as u64)
                .or_else(|| v.as_u64())
                .ok_or_else(|| FuzzError::Interface(format!("{what}: {v} is not an integer")))?,
            cltrap_kernel::interface::Scalar::Float { bits } => {
                let f = v
                    .as_f64()
                    .ok_or_else(|| FuzzError::Interface(format!("{what}: {v} is not a number")))?;
                match bits {
                    64 => f.to_bits(),
                    32 => (f as f32).to_bits() as u64,
                    _ => super::mutate::f32_to_half(f as f32) as u64,
                }
            }
        };
        out[lane * size..(lane + 1) * size].copy_from_slice(&bits.to_le_bytes()[..size]);
    }
    Ok(out)
}

/// The most bytes one argument of an interface file may ask for (1 GiB): past it, a size is
/// a typo (or hostile), and filling it would exhaust the host's memory before the device's.
pub const MAX_ARG_BYTES: u64 = 1 << 30;

/// The first test case from an interface file (`base`: its directory, for `file` fills).
pub fn to_input(
    spec: &InterfaceFile,
    iface: &KernelInterface,
    base: &Path,
    seed: u64,
) -> Result<LaunchInput, FuzzError> {
    to_input_within(spec, iface, base, seed, MAX_ARG_BYTES)
}

/// `size` elements of `width` bytes, refused past `max` bytes (overflow included).
fn arg_bytes(size: u64, width: u64, max: u64, what: &str) -> Result<usize, FuzzError> {
    size.checked_mul(width)
        .filter(|b| *b <= max)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| {
            FuzzError::Interface(format!(
                "{what}: {size} elements of {width} bytes are more than the {max} bytes an argument may take"
            ))
        })
}

/// [`to_input`] with at most `max_arg_bytes` per argument (the fuzz targets use a smaller
/// bound than the command, to stay fast).
pub fn to_input_within(
    spec: &InterfaceFile,
    iface: &KernelInterface,
    base: &Path,
    seed: u64,
    max_arg_bytes: u64,
) -> Result<LaunchInput, FuzzError> {
    if spec.args.len() != iface.args.len() {
        return Err(FuzzError::Interface(format!(
            "the interface file lists {} arguments but kernel {} takes {}",
            spec.args.len(),
            iface.kernel,
            iface.args.len()
        )));
    }
    if spec.global_size.is_empty() || spec.global_size.len() > 3 {
        return Err(FuzzError::Interface(
            "global_size needs 1 to 3 dimensions".into(),
        ));
    }
    let mut rng = Rng::new(seed);
    let mut input = LaunchInput {
        kernel: spec.kernel.clone(),
        work_dim: spec.global_size.len() as u32,
        global_offset: None,
        global_size: spec.global_size.clone(),
        local_size: spec.local_size.clone(),
        args: Vec::new(),
        stand_ins: Vec::new(),
    };
    let dict = Dictionary::new(iface, &input);
    let global = spec
        .global_size
        .iter()
        .fold(1u64, |a, b| a.saturating_mul(*b))
        .max(1);
    for (a, s) in iface.args.iter().zip(&spec.args) {
        let what = format!("argument {} ({})", a.index, a.name);
        let read_file = |p: &PathBuf| -> Result<Vec<u8>, FuzzError> {
            let path = if p.is_absolute() {
                p.clone()
            } else {
                base.join(p)
            };
            std::fs::read(&path).map_err(|e| {
                FuzzError::Interface(format!("{what}: cannot read {}: {e}", path.display()))
            })
        };
        let arg = match &a.kind {
            ArgKind::Value { ty } => InputArg::Scalar(match &s.fill {
                Fill::Random => random_value(*ty, &dict, global, &mut rng),
                Fill::Zero => vec![0; ty.size()],
                Fill::Fixed(v) => fixed_bytes(v, *ty, &what)?,
                Fill::File(p) => {
                    let mut b = read_file(p)?;
                    b.resize(ty.size(), 0);
                    b
                }
            }),
            ArgKind::Buffer { elem, layout, .. } => {
                let n = s.size.ok_or_else(|| {
                    FuzzError::Interface(format!("{what}: a buffer needs \"size\" (elements)"))
                })?;
                let width = elem
                    .map(|t| t.size() as u64)
                    .or(layout.as_ref().map(|l| l.size as u64))
                    .or(s.elem_bytes)
                    .ok_or_else(|| {
                        FuzzError::Interface(format!(
                            "{what}: the element type {} has no known size; give \"elem_bytes\"",
                            a.ty
                        ))
                    })?;
                let total = arg_bytes(n, width, max_arg_bytes, &what)?;
                let mut bytes = Vec::with_capacity(total);
                match (&s.fill, elem) {
                    (Fill::File(p), _) => {
                        bytes = read_file(p)?;
                        bytes.resize(total, 0);
                    }
                    (Fill::Zero, _) => bytes.resize(total, 0),
                    (Fill::Fixed(serde_json::Value::Array(items)), Some(t))
                        if items.len() as u64 == n * t.lanes as u64 && n > 1 =>
                    {
                        // One value per element (per lane for vectors), in order.
                        for chunk in items.chunks(t.lanes as usize) {
                            let v = serde_json::Value::Array(chunk.to_vec());
                            bytes.extend(fixed_bytes(&v, *t, &what)?);
                        }
                    }
                    (Fill::Fixed(v), Some(t)) => {
                        let one = fixed_bytes(v, *t, &what)?;
                        for _ in 0..n {
                            bytes.extend_from_slice(&one);
                        }
                    }
                    (Fill::Random, Some(t)) => {
                        for _ in 0..n {
                            bytes.extend(random_value(*t, &dict, global, &mut rng));
                        }
                    }
                    (Fill::Random, None) if layout.is_some() => {
                        if let Some(l) = layout {
                            for _ in 0..n {
                                bytes.extend(random_struct(l, &dict, global, &mut rng));
                            }
                        }
                    }
                    (_, None) => {
                        for _ in 0..total {
                            bytes.push(rng.next_u64() as u8);
                        }
                    }
                }
                let flags = if s.output {
                    opencl_sys::CL_MEM_READ_WRITE
                } else {
                    opencl_sys::CL_MEM_READ_ONLY
                };
                InputArg::Buffer {
                    mem: None,
                    flags,
                    bytes,
                }
            }
            ArgKind::Local { elem } => {
                let n = s.size.unwrap_or(1);
                let width = elem.map(|t| t.size() as u64).or(s.elem_bytes).unwrap_or(4);
                InputArg::Local(arg_bytes(n, width, max_arg_bytes, &what)? as u64)
            }
            ArgKind::Image | ArgKind::Sampler => {
                return Err(FuzzError::Interface(format!(
                    "{what}: images and samplers can only come from a captured launch \
                     (cltrap fuzz CAPTURE_DIR)"
                )))
            }
            ArgKind::Opaque { layout } => {
                let n = layout
                    .as_ref()
                    .map(|l| l.size as u64)
                    .or(s.elem_bytes)
                    .ok_or_else(|| {
                        FuzzError::Interface(format!(
                            "{what}: type {} has no known size; give \"elem_bytes\"",
                            a.ty
                        ))
                    })?;
                let n = arg_bytes(n, 1, max_arg_bytes, &what)?;
                InputArg::Scalar(match (&s.fill, layout) {
                    (Fill::File(p), _) => {
                        let mut b = read_file(p)?;
                        b.resize(n, 0);
                        b
                    }
                    (Fill::Random, Some(l)) => random_struct(l, &dict, global, &mut rng),
                    _ => vec![0; n],
                })
            }
        };
        input.args.push(arg);
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills() {
        let src =
            "__kernel void k(__global int2 *a, __global float *b, uint n) { a[0] = b[0] + n; }";
        let p = cltrap_kernel::parse_program(src, "").unwrap();
        let iface = cltrap_kernel::interface::derive(&p, "k").unwrap();
        let mut spec = initial(&iface, "");
        assert!(spec.args[0].output && !spec.args[1].output);
        spec.args[0].size = Some(2);
        spec.args[0].fill = Fill::Fixed(serde_json::json!([1, 2, 3, 4]));
        spec.args[1].size = Some(3);
        spec.args[1].fill = Fill::Fixed(serde_json::json!(0.5));
        spec.args[2].fill = Fill::Fixed(serde_json::json!(7));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let input = to_input(&spec, &iface, dir, 1).unwrap();
        let InputArg::Buffer { bytes: a, .. } = &input.args[0] else {
            panic!()
        };
        let words: Vec<i32> = a
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, vec![1, 2, 3, 4]);
        let InputArg::Buffer { bytes: b, .. } = &input.args[1] else {
            panic!()
        };
        assert_eq!(b.len(), 12);
        assert_eq!(f32::from_le_bytes(b[8..12].try_into().unwrap()), 0.5);
        assert_eq!(input.args[2], InputArg::Scalar(vec![7, 0, 0, 0]));
        std::fs::write(dir.join("n.bin"), [9u8, 0, 0, 0]).unwrap();
        spec.args[2].fill = Fill::File("n.bin".into());
        let input = to_input(&spec, &iface, dir, 1).unwrap();
        assert_eq!(input.args[2], InputArg::Scalar(vec![9, 0, 0, 0]));
        spec.args.pop();
        assert!(to_input(&spec, &iface, dir, 1).is_err());
    }
}
