//! Turning raw argument and buffer bytes into readable typed values.
//!
//! The capture keeps kernel arguments as the exact bytes the application passed, plus the type
//! name OpenCL reported (`uint`, `float4`, `float*`, `struct params`). Every view of a launch
//! (list, show, mismatch reports, fuzzing) needs the same decoding, so it lives here once.
//! Nothing here talks to OpenCL; device data is taken as little-endian (every OpenCL device in
//! practical use is).

/// The scalar element type an OpenCL C type name is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `bool` (1 byte).
    Bool,
    /// `char`.
    I8,
    /// `uchar`.
    U8,
    /// `short`.
    I16,
    /// `ushort`.
    U16,
    /// `int`.
    I32,
    /// `uint`.
    U32,
    /// `long`.
    I64,
    /// `ulong` (and 64-bit `size_t`).
    U64,
    /// `half`.
    F16,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Scalar {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    /// Whether `--ulp` tolerance applies to this element type.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::F32 | Scalar::F64)
    }

    /// The OpenCL C spelling, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "char",
            Scalar::U8 => "uchar",
            Scalar::I16 => "short",
            Scalar::U16 => "ushort",
            Scalar::I32 => "int",
            Scalar::U32 => "uint",
            Scalar::I64 => "long",
            Scalar::U64 => "ulong",
            Scalar::F16 => "half",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }

    /// Reads one element from exactly `self.size()` little-endian bytes.
    pub fn raw_bits(self, bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let n = bytes.len().min(8);
        b[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(b)
    }

    /// One element as text: integers in decimal, floats in their shortest exact form.
    pub fn format(self, bytes: &[u8]) -> String {
        if bytes.len() != self.size() {
            return hex(bytes);
        }
        let bits = self.raw_bits(bytes);
        match self {
            Scalar::Bool => (bits != 0).to_string(),
            Scalar::I8 => (bits as u8 as i8).to_string(),
            Scalar::U8 => (bits as u8).to_string(),
            Scalar::I16 => (bits as u16 as i16).to_string(),
            Scalar::U16 => (bits as u16).to_string(),
            Scalar::I32 => (bits as u32 as i32).to_string(),
            Scalar::U32 => (bits as u32).to_string(),
            Scalar::I64 => (bits as i64).to_string(),
            Scalar::U64 => bits.to_string(),
            Scalar::F16 => format_f32(half_to_f32(bits as u16)),
            Scalar::F32 => format_f32(f32::from_bits(bits as u32)),
            Scalar::F64 => format_float(f64::from_bits(bits)),
        }
    }
}

/// Shortest text that reads back as the same f32 (`2.6666667`, not its f64 expansion).
fn format_f32(v: f32) -> String {
    if v.is_finite() {
        format!("{v:?}")
    } else {
        format_float(f64::from(v))
    }
}

fn format_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{v:?}")
    }
}

/// IEEE binary16 to f32 (exact: every half is representable as a float).
pub fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f32::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        31 if frac == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// A type name understood as `scalar` × `lanes` (lanes = 1 for scalars; a `float3` occupies 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueType {
    /// Element type of each lane.
    pub scalar: Scalar,
    /// Number of lanes as written (`3` for `float3`).
    pub lanes: usize,
}

impl ValueType {
    /// Bytes one value occupies (vectors of 3 are padded to 4).
    pub fn size(self) -> usize {
        let lanes = if self.lanes == 3 { 4 } else { self.lanes };
        self.scalar.size() * lanes
    }
}

/// Parses an OpenCL C type name (`uint`, `unsigned int`, `float4`, `const float`), or `None`
/// for structs, unions, pointers, images and anything else cltrap cannot decode.
pub fn parse_value_type(type_name: &str) -> Option<ValueType> {
    let words: Vec<&str> = type_name
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "restrict" | "__const" | "signed"))
        .collect();
    let joined = words.join(" ");
    let name = match joined.as_str() {
        "unsigned char" => "uchar",
        "unsigned short" => "ushort",
        "unsigned int" | "unsigned" => "uint",
        "unsigned long" => "ulong",
        "long long" => "long",
        "unsigned long long" => "ulong",
        other => fixed_width_alias(other).unwrap_or(other),
    };
    if name.contains(['*', '[', ' ']) {
        return None;
    }
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
    let base = &name[..name.len() - digits.len()];
    let lanes = if digits.is_empty() {
        1
    } else {
        match digits.parse::<usize>() {
            Ok(n @ (2 | 3 | 4 | 8 | 16)) => n,
            _ => return None,
        }
    };
    let scalar = match base {
        "bool" if lanes == 1 => Scalar::Bool,
        "char" => Scalar::I8,
        "uchar" => Scalar::U8,
        "short" => Scalar::I16,
        "ushort" => Scalar::U16,
        "int" => Scalar::I32,
        "uint" => Scalar::U32,
        "long" => Scalar::I64,
        "ulong" | "size_t" | "uintptr_t" if lanes == 1 || base == "ulong" => Scalar::U64,
        "ptrdiff_t" | "intptr_t" if lanes == 1 => Scalar::I64,
        "half" => Scalar::F16,
        "float" => Scalar::F32,
        "double" => Scalar::F64,
        _ => return None,
    };
    Some(ValueType { scalar, lanes })
}

/// The OpenCL C scalar behind a fixed-width integer typedef that real kernels declare and
/// whose meaning is not in doubt (hashcat's `u32`/`u64`, C99's `uint32_t`, ...), or `None`.
///
/// Why: the driver reports an argument's type as written (`u64 gid_max`), and a binary
/// program has no source to resolve the typedef; without this such scalars print as raw
/// memory-order hex (`0x0200000000000000` for 2).
fn fixed_width_alias(name: &str) -> Option<&'static str> {
    let (signed, bits) = match name {
        "u8" | "uint8_t" | "uint8" => (false, 8),
        "u16" | "uint16_t" | "uint16" => (false, 16),
        "u32" | "uint32_t" | "uint32" => (false, 32),
        "u64" | "uint64_t" | "uint64" => (false, 64),
        "s8" | "i8" | "int8_t" | "int8" => (true, 8),
        "s16" | "i16" | "int16_t" | "int16" => (true, 16),
        "s32" | "i32" | "int32_t" | "int32" => (true, 32),
        "s64" | "i64" | "int64_t" | "int64" => (true, 64),
        _ => return None,
    };
    Some(match (signed, bits) {
        (false, 8) => "uchar",
        (false, 16) => "ushort",
        (false, 32) => "uint",
        (false, _) => "ulong",
        (true, 8) => "char",
        (true, 16) => "short",
        (true, 32) => "int",
        (true, _) => "long",
    })
}

/// The element type a pointer argument points to (`float4*` → float × 4), or `None` when
/// the name is not a pointer to a known element type.
pub fn pointee_type(type_name: &str) -> Option<ValueType> {
    let t = type_name.trim();
    let inner = t.strip_suffix('*')?;
    parse_value_type(inner)
}

/// The element type of an image's channels (`cl_channel_type`), and whether it is a
/// normalized (fixed-point) encoding; `None` for packed formats (565, 555, 101010).
pub fn image_channel_type(channel_data_type: u32) -> Option<(Scalar, bool)> {
    Some(match channel_data_type {
        0x10D0 => (Scalar::I8, true),
        0x10D1 => (Scalar::I16, true),
        0x10D2 => (Scalar::U8, true),
        0x10D3 => (Scalar::U16, true),
        0x10D7 => (Scalar::I8, false),
        0x10D8 => (Scalar::I16, false),
        0x10D9 => (Scalar::I32, false),
        0x10DA => (Scalar::U8, false),
        0x10DB => (Scalar::U16, false),
        0x10DC => (Scalar::U32, false),
        0x10DD => (Scalar::F16, false),
        0x10DE => (Scalar::F32, false),
        _ => return None,
    })
}

/// Formats a by-value argument: typed when the type name is known and the size agrees,
/// otherwise as hex. Vectors print as `(a,b,c,d)`.
pub fn format_value(type_name: &str, bytes: &[u8]) -> String {
    match parse_value_type(type_name) {
        Some(vt) if bytes.len() == vt.size() => {
            let sz = vt.scalar.size();
            if vt.lanes == 1 {
                vt.scalar.format(bytes)
            } else {
                let parts: Vec<String> = (0..vt.lanes)
                    .map(|i| vt.scalar.format(&bytes[i * sz..(i + 1) * sz]))
                    .collect();
                format!("({})", parts.join(","))
            }
        }
        _ => hex(bytes),
    }
}

/// Bytes as `0x…` in memory order (the form KernelInterceptor logged scalars in).
pub fn hex(bytes: &[u8]) -> String {
    format!("0x{}", cltrap_capture::hex::encode(bytes))
}

/// A little-endian element's value as `0x…` most-significant digit first (how people write
/// a float's bits: `0x3f800000`).
pub fn hex_le(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes.iter().rev() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Decodes the capture's hex spelling of scalar bytes; `None` when it is not valid hex.
pub use cltrap_capture::hex::decode as unhex;

/// Byte counts for people: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_decode_by_type_name() {
        assert_eq!(format_value("int", &(-5i32).to_le_bytes()), "-5");
        assert_eq!(format_value("uint", &7u32.to_le_bytes()), "7");
        assert_eq!(format_value("unsigned int", &7u32.to_le_bytes()), "7");
        assert_eq!(format_value("float", &1.5f32.to_le_bytes()), "1.5");
        assert_eq!(format_value("double", &(-0.25f64).to_le_bytes()), "-0.25");
        assert_eq!(format_value("long", &(-1i64).to_le_bytes()), "-1");
        assert_eq!(format_value("uchar", &[200]), "200");
        assert_eq!(format_value("half", &0x3c00u16.to_le_bytes()), "1.0");
        assert_eq!(
            format_value("float", &(8.0f32 / 3.0).to_le_bytes()),
            "2.6666667"
        );
        assert_eq!(
            format_value("float", &f32::NEG_INFINITY.to_le_bytes()),
            "-inf"
        );
    }

    #[test]
    fn fixed_width_integer_typedefs_decode_as_their_integers() {
        // hashcat's kernels take `u64 gid_max`; PoCL reports the type name as written.
        assert_eq!(format_value("u64", &2u64.to_le_bytes()), "2");
        assert_eq!(format_value("const u32", &7u32.to_le_bytes()), "7");
        assert_eq!(format_value("int64_t", &(-3i64).to_le_bytes()), "-3");
        assert_eq!(format_value("s8", &[0xff]), "-1");
        assert_eq!(format_value("uint16_t", &513u16.to_le_bytes()), "513");
        // A size that disagrees with the typedef's width stays hex.
        assert_eq!(format_value("u64", &[1, 0, 0, 0]), "0x01000000");
        // Pointers to them give typed elements.
        assert_eq!(
            pointee_type("u32*"),
            Some(ValueType {
                scalar: Scalar::U32,
                lanes: 1
            })
        );
        assert_eq!(parse_value_type("u32x"), None);
    }

    #[test]
    fn vectors_print_as_tuples_and_float3_is_padded() {
        let mut b = Vec::new();
        for v in [1.0f32, 2.0, 3.0, 4.0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(format_value("float4", &b), "(1.0,2.0,3.0,4.0)");
        assert_eq!(format_value("float3", &b), "(1.0,2.0,3.0)");
        assert_eq!(format_value("int2", &b[..8]), "(1065353216,1073741824)");
    }

    #[test]
    fn unknown_types_and_wrong_sizes_fall_back_to_hex() {
        assert_eq!(format_value("struct params", &[1, 2, 0xab]), "0x0102ab");
        assert_eq!(format_value("int", &[1, 2]), "0x0102");
        assert_eq!(format_value("", &[0xff]), "0xff");
    }

    #[test]
    fn pointer_element_types_are_found() {
        assert_eq!(
            pointee_type("float*"),
            Some(ValueType {
                scalar: Scalar::F32,
                lanes: 1
            })
        );
        assert_eq!(
            pointee_type("double4*"),
            Some(ValueType {
                scalar: Scalar::F64,
                lanes: 4
            })
        );
        assert_eq!(pointee_type("struct s*"), None);
        assert_eq!(pointee_type("float"), None);
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        assert_eq!(unhex("0a0BfF"), Some(vec![0x0a, 0x0b, 0xff]));
        assert_eq!(unhex("0x01"), Some(vec![1]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(hex_le(&1.0f32.to_le_bytes()), "0x3f800000");
    }

    #[test]
    fn half_floats_decode_exactly() {
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert!(half_to_f32(0x7e00).is_nan());
        assert_eq!(half_to_f32(0x7c00), f32::INFINITY);
    }
}
