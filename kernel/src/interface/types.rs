//! OpenCL C value types from clang's type spellings: what fuzzing needs to lay out and mutate
//! argument bytes, and what the solver needs to pick bit-vector widths, signedness and float
//! sorts. One parser, so both agree on every type.

use serde::{Deserialize, Serialize};

/// A scalar OpenCL C type, with the width and signedness that decide its arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scalar {
    /// An integer of `bits` bits (`bool` is 8 bits, unsigned, values 0/1).
    Int {
        /// Width in bits: 8, 16, 32 or 64.
        bits: u32,
        /// Signed (two's complement) or unsigned.
        signed: bool,
    },
    /// An IEEE float: 16 (`half`), 32 (`float`) or 64 (`double`) bits.
    Float {
        /// Width in bits.
        bits: u32,
    },
}

impl Scalar {
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            Scalar::Int { bits, .. } | Scalar::Float { bits } => bits as usize / 8,
        }
    }

    /// The OpenCL C spelling (`uint`, `float`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Int {
                bits: 8,
                signed: true,
            } => "char",
            Scalar::Int {
                bits: 8,
                signed: false,
            } => "uchar",
            Scalar::Int {
                bits: 16,
                signed: true,
            } => "short",
            Scalar::Int {
                bits: 16,
                signed: false,
            } => "ushort",
            Scalar::Int {
                bits: 32,
                signed: true,
            } => "int",
            Scalar::Int {
                bits: 32,
                signed: false,
            } => "uint",
            Scalar::Int { signed: true, .. } => "long",
            Scalar::Int { signed: false, .. } => "ulong",
            Scalar::Float { bits: 16 } => "half",
            Scalar::Float { bits: 32 } => "float",
            Scalar::Float { .. } => "double",
        }
    }
}

/// A value type: a scalar or a vector of 2, 3, 4, 8 or 16 scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ValueType {
    /// The element type.
    pub scalar: Scalar,
    /// 1 for scalars, else the vector width.
    pub lanes: u32,
}

impl ValueType {
    /// Size in bytes as laid out in memory and passed by value (a 3-vector takes 4 slots).
    pub fn size(self) -> usize {
        let slots = if self.lanes == 3 { 4 } else { self.lanes };
        self.scalar.size() * slots as usize
    }

    /// The OpenCL C spelling (`float4`).
    pub fn name(self) -> String {
        if self.lanes == 1 {
            self.scalar.name().to_string()
        } else {
            format!("{}{}", self.scalar.name(), self.lanes)
        }
    }
}

/// Qualifiers and address spaces that do not change a value's type.
const QUALIFIERS: &[&str] = &[
    "const",
    "volatile",
    "restrict",
    "__restrict",
    "__global",
    "global",
    "__private",
    "private",
    "__local",
    "local",
    "__constant",
    "constant",
    "__generic",
    "generic",
    "__read_only",
    "read_only",
    "__write_only",
    "write_only",
    "__read_write",
    "read_write",
    "signed",
];

/// The spelling with qualifiers and address spaces removed (`const __global int` → `int`).
pub fn strip_qualifiers(ty: &str) -> String {
    ty.split_whitespace()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn scalar_named(name: &str) -> Option<Scalar> {
    let int = |bits, signed| Some(Scalar::Int { bits, signed });
    match name {
        "bool" | "_Bool" => int(8, false),
        "char" => int(8, true),
        "uchar" | "unsigned char" => int(8, false),
        "short" => int(16, true),
        "ushort" | "unsigned short" => int(16, false),
        "int" => int(32, true),
        "uint" | "unsigned int" | "unsigned" | "cl_mem_fence_flags" => int(32, false),
        "long" | "long long" | "ptrdiff_t" | "intptr_t" => int(64, true),
        "ulong" | "unsigned long" | "unsigned long long" | "size_t" | "uintptr_t" => int(64, false),
        "half" => Some(Scalar::Float { bits: 16 }),
        "float" => Some(Scalar::Float { bits: 32 }),
        "double" => Some(Scalar::Float { bits: 64 }),
        _ => None,
    }
}

/// Parses a value type spelling (qualifiers allowed); `None` for pointers, structs, images,
/// typedefs it does not know and `void`.
pub fn parse_value_type(ty: &str) -> Option<ValueType> {
    if ty.contains('*') || ty.contains('[') {
        return None;
    }
    let name = strip_qualifiers(ty);
    if let Some(scalar) = scalar_named(&name) {
        return Some(ValueType { scalar, lanes: 1 });
    }
    let digits = name.trim_start_matches(|c: char| !c.is_ascii_digit());
    let base = &name[..name.len() - digits.len()];
    let lanes: u32 = digits.parse().ok()?;
    if ![2, 3, 4, 8, 16].contains(&lanes) || base.contains(' ') {
        return None;
    }
    Some(ValueType {
        scalar: scalar_named(base)?,
        lanes,
    })
}

/// For a pointer spelling (`const __global float4 *__private`), the pointee spelling without
/// qualifiers (`float4`); `None` when `ty` is not a pointer.
pub fn pointee(ty: &str) -> Option<String> {
    let star = ty.find('*')?;
    Some(strip_qualifiers(&ty[..star]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let t = parse_value_type("const __private unsigned int").unwrap();
        assert_eq!(
            t.scalar,
            Scalar::Int {
                bits: 32,
                signed: false
            }
        );
        let v = parse_value_type("__private float3").unwrap();
        assert_eq!((v.lanes, v.size()), (3, 16));
        assert_eq!(parse_value_type("ulong16").unwrap().size(), 128);
        assert!(parse_value_type("__global int *__private").is_none());
        assert!(parse_value_type("S").is_none());
        assert_eq!(
            pointee("const __global int *__private").as_deref(),
            Some("int")
        );
    }
}
