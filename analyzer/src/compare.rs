//! Comparing a replayed buffer with the one the application saw.
//!
//! Bit-exact by default; with a ulp budget, floating-point elements may differ by up to that
//! many units in the last place (NaN matches any NaN). Every analysis that judges outputs
//! (replay, schedules, mutation) uses this one comparison, so they agree on what "same" means.

use crate::values::{hex_le, Scalar, ValueType};

/// How to compare two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tolerance {
    /// Element type of the buffer, when known from the argument's type name.
    pub element: Option<ValueType>,
    /// Allowed ulp distance for floating elements (0 = bit-exact).
    pub ulp: u64,
    /// Integer elements are fixed-point encodings of reals (image channels `UNORM_INT8`,
    /// `SNORM_INT16`, ...): their last place is a ulp too, and the budget applies to them.
    pub normalized: bool,
}

impl Tolerance {
    /// Bit-exact comparison.
    pub const EXACT: Tolerance = Tolerance {
        element: None,
        ulp: 0,
        normalized: false,
    };
}

/// The first place two buffers disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The buffers do not even have the same size.
    Size { expected: u64, got: u64 },
    /// Contents differ.
    Value {
        /// Byte offset of the first differing element.
        byte_offset: u64,
        /// Index of that element (in scalar lanes of the element type, or bytes if unknown).
        element_index: u64,
        /// Scalar type used to decode, when known.
        scalar: Option<Scalar>,
        /// The differing element as recorded.
        expected: Vec<u8>,
        /// The differing element as replayed.
        got: Vec<u8>,
        /// Distance in ulps when the element is floating point.
        ulp: Option<u64>,
    },
    /// Only digests were recorded, and they differ.
    Digest { expected: String, got: String },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Size { expected, got } => {
                write!(f, "size differs: expected {expected} bytes, got {got}")
            }
            Difference::Digest { expected, got } => {
                write!(
                    f,
                    "digest differs: expected {}…, got {}…",
                    short(expected),
                    short(got)
                )
            }
            Difference::Value {
                byte_offset,
                element_index,
                scalar,
                expected,
                got,
                ulp,
            } => match scalar {
                Some(s) => {
                    write!(
                            f,
                            "element {element_index} ({}, byte offset {byte_offset}): expected {} ({}), got {} ({})",
                            s.name(),
                            s.format(expected),
                            hex_le(expected),
                            s.format(got),
                            hex_le(got)
                        )?;
                    if let Some(u) = ulp {
                        write!(f, ", {u} ulp apart")?;
                    }
                    Ok(())
                }
                None => write!(
                    f,
                    "byte offset {byte_offset}: expected 0x{:02x}, got 0x{:02x}",
                    expected.first().copied().unwrap_or(0),
                    got.first().copied().unwrap_or(0)
                ),
            },
        }
    }
}

fn short(h: &str) -> &str {
    h.get(..16).unwrap_or(h)
}

/// Distance in ulps between two elements given as raw bits: for floats along the real line
/// (`None` when exactly one is NaN, never within tolerance; both NaN → 0), for integers
/// (fixed-point encodings) their difference.
pub fn ulp_distance(scalar: Scalar, a: u64, b: u64) -> Option<u64> {
    fn nan16(x: u64) -> bool {
        (x & 0x7c00) == 0x7c00 && (x & 0x3ff) != 0
    }
    fn nan32(x: u64) -> bool {
        f32::from_bits(x as u32).is_nan()
    }
    fn nan64(x: u64) -> bool {
        f64::from_bits(x).is_nan()
    }
    let (bits, nan): (u32, fn(u64) -> bool) = match scalar {
        Scalar::F16 => (16, nan16),
        Scalar::F32 => (32, nan32),
        Scalar::F64 => (64, nan64),
        // Fixed-point (normalized) integers: the distance is the integer difference.
        s => {
            let bits = 8 * s.size() as u32;
            let signed = matches!(s, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64);
            let value = |x: u64| -> i128 {
                if signed {
                    let shift = 64 - bits;
                    i128::from(((x << shift) as i64) >> shift)
                } else {
                    i128::from(x)
                }
            };
            return Some(value(a).abs_diff(value(b)) as u64);
        }
    };
    match (nan(a), nan(b)) {
        (true, true) => return Some(0),
        (false, false) => {}
        _ => return None,
    }
    // Map sign-magnitude to a monotonic integer line (so -0 and +0 are adjacent at 0).
    let ordered = |x: u64| -> i128 {
        let sign = 1u64 << (bits - 1);
        let mag = i128::from(x & (sign - 1));
        if x & sign != 0 {
            -mag
        } else {
            mag
        }
    };
    Some(ordered(a).abs_diff(ordered(b)) as u64)
}

/// Compares `got` with `expected`; `None` when they agree under `tol`.
pub fn compare(expected: &[u8], got: &[u8], tol: Tolerance) -> Option<Difference> {
    if expected.len() != got.len() {
        return Some(Difference::Size {
            expected: expected.len() as u64,
            got: got.len() as u64,
        });
    }
    if expected == got {
        return None;
    }
    let scalar = tol.element.map(|e| e.scalar);
    let width = scalar.map(Scalar::size).unwrap_or(1);
    let mut offset = 0usize;
    while offset < expected.len() {
        let end = (offset + width).min(expected.len());
        let (e, g) = (&expected[offset..end], &got[offset..end]);
        if e != g {
            let typed = scalar.filter(|_| end - offset == width);
            let ulp = typed
                .filter(|s| s.is_float() || tol.normalized)
                .and_then(|s| ulp_distance(s, s.raw_bits(e), s.raw_bits(g)).or(Some(u64::MAX)));
            let within = matches!(ulp, Some(u) if u <= tol.ulp && tol.ulp > 0);
            if !within {
                return Some(Difference::Value {
                    byte_offset: offset as u64,
                    element_index: (offset / width) as u64,
                    scalar: typed,
                    expected: e.to_vec(),
                    got: g.to_vec(),
                    ulp: ulp.filter(|u| *u != u64::MAX),
                });
            }
        }
        offset = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::pointee_type;

    fn floats(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn identical_buffers_agree_and_first_difference_is_found() {
        let a = floats(&[1.0, 2.0, 3.0]);
        assert_eq!(compare(&a, &a, Tolerance::EXACT), None);
        let b = floats(&[1.0, 2.0, 3.5]);
        let tol = Tolerance {
            element: pointee_type("float*"),
            ulp: 0,
            normalized: false,
        };
        match compare(&a, &b, tol) {
            Some(Difference::Value {
                byte_offset,
                element_index,
                scalar,
                ..
            }) => {
                assert_eq!(
                    (byte_offset, element_index, scalar),
                    (8, 2, Some(Scalar::F32))
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn ulp_budget_accepts_near_floats_only() {
        let x = 1.0f32;
        let next = f32::from_bits(x.to_bits() + 2);
        let a = floats(&[x]);
        let b = floats(&[next]);
        let float = pointee_type("float*");
        assert!(compare(
            &a,
            &b,
            Tolerance {
                element: float,
                ulp: 0,
                normalized: false
            }
        )
        .is_some());
        assert!(compare(
            &a,
            &b,
            Tolerance {
                element: float,
                ulp: 1,
                normalized: false
            }
        )
        .is_some());
        assert_eq!(
            compare(
                &a,
                &b,
                Tolerance {
                    element: float,
                    ulp: 2,
                    normalized: false
                }
            ),
            None
        );
        // Integers never get a tolerance, unless they encode fixed-point reals.
        let int = pointee_type("int*");
        assert!(compare(
            &a,
            &b,
            Tolerance {
                element: int,
                ulp: 100,
                normalized: false
            }
        )
        .is_some());
        // Unknown element type: exact, reported per byte.
        let d = compare(
            &a,
            &b,
            Tolerance {
                element: None,
                ulp: 100,
                normalized: false,
            },
        )
        .unwrap();
        assert!(matches!(
            d,
            Difference::Value {
                byte_offset: 0,
                scalar: None,
                ..
            }
        ));
    }

    #[test]
    fn normalized_channels_get_the_ulp_budget_as_integer_steps() {
        let u8n = Some(ValueType {
            scalar: Scalar::U8,
            lanes: 1,
        });
        let tol = |ulp| Tolerance {
            element: u8n,
            ulp,
            normalized: true,
        };
        assert_eq!(compare(&[0x80, 5], &[0x7f, 5], tol(1)), None);
        assert!(compare(&[0x80, 5], &[0x7e, 5], tol(1)).is_some());
        let exact = Tolerance {
            element: u8n,
            ulp: 1,
            normalized: false,
        };
        assert!(compare(&[0x80], &[0x7f], exact).is_some());
        assert_eq!(ulp_distance(Scalar::I8, 0xff, 0x01), Some(2));
    }

    #[test]
    fn ulp_distance_crosses_zero_and_handles_nan() {
        let pz = 0.0f32.to_bits() as u64;
        let nz = (-0.0f32).to_bits() as u64;
        let tiny = 1u64; // smallest positive subnormal
        assert_eq!(ulp_distance(Scalar::F32, pz, nz), Some(0));
        assert_eq!(ulp_distance(Scalar::F32, nz, tiny), Some(1));
        let ntiny = (1u64 << 31) | 1;
        assert_eq!(ulp_distance(Scalar::F32, ntiny, tiny), Some(2));
        let nan = f32::NAN.to_bits() as u64;
        assert_eq!(ulp_distance(Scalar::F32, nan, nan | 1), Some(0));
        assert_eq!(ulp_distance(Scalar::F32, nan, pz), None);
        let one = 1.0f64.to_bits();
        assert_eq!(ulp_distance(Scalar::F64, one, one + 3), Some(3));
    }

    #[test]
    fn messages_show_typed_values_hex_and_ulps() {
        let a = floats(&[1.0]);
        let b = floats(&[f32::from_bits(1.0f32.to_bits() + 1)]);
        let d = compare(
            &a,
            &b,
            Tolerance {
                element: pointee_type("float*"),
                ulp: 0,
                normalized: false,
            },
        )
        .unwrap();
        let text = d.to_string();
        assert!(text.contains("expected 1.0 (0x3f800000)"), "{text}");
        assert!(
            text.contains("0x3f800001") && text.contains("1 ulp"),
            "{text}"
        );
        assert!(compare(&a, &[0u8; 3], Tolerance::EXACT)
            .unwrap()
            .to_string()
            .contains("expected 4 bytes, got 3"));
    }
}
