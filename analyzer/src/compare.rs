//! Comparing a replayed buffer with the one the application saw.
//!
//! Bit-exact by default. Floating-point elements (and fixed-point image channels) may be let
//! through by a ulp budget (`--ulp N`: up to N units in the last place) and/or by NumPy
//! `allclose` bounds (`--rtol R --atol A`: |got − expected| ≤ A + R·|expected|); NaN matches
//! NaN. A difference carries statistics over the whole buffer (how many elements are out of
//! tolerance, the largest absolute and relative errors and where), so a reader can tell
//! rounding from a bug. Every analysis that judges outputs (replay, schedules, mutation) uses
//! this one comparison, so they agree on what "same" means.

use crate::values::{half_to_f32, hex_le, Scalar, ValueType};

/// How close floating-point outputs must be to count as the same: what the user asked for on
/// the command line, before it is applied to one buffer's element type ([`Tolerance`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Closeness {
    /// Allowed ulp distance (0 = none).
    pub ulp: u64,
    /// Relative tolerance of `allclose` (0 = none).
    pub rtol: f64,
    /// Absolute tolerance of `allclose` (0 = none).
    pub atol: f64,
}

impl Closeness {
    /// Bit-exact.
    pub const EXACT: Closeness = Closeness {
        ulp: 0,
        rtol: 0.0,
        atol: 0.0,
    };

    /// The tolerance from the command line's `--ulp`, `--rtol` and `--atol`; an error sentence
    /// when a bound is negative or not a number.
    pub fn new(ulp: u64, rtol: f64, atol: f64) -> Result<Closeness, String> {
        for (name, v) in [("--rtol", rtol), ("--atol", atol)] {
            if !v.is_finite() || v < 0.0 {
                return Err(format!(
                    "{name} must be a finite number of at least 0, not {v}"
                ));
            }
        }
        Ok(Closeness { ulp, rtol, atol })
    }

    /// Whether `allclose` bounds were given.
    pub fn has_bounds(&self) -> bool {
        self.rtol > 0.0 || self.atol > 0.0
    }
}

impl From<u64> for Closeness {
    /// A ulp budget alone (what `--ulp N` means without `--rtol`/`--atol`).
    fn from(ulp: u64) -> Closeness {
        Closeness {
            ulp,
            ..Closeness::EXACT
        }
    }
}

/// How to compare two buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Element type of the buffer, when known from the argument's type name.
    pub element: Option<ValueType>,
    /// Allowed ulp distance for floating elements (0 = bit-exact).
    pub ulp: u64,
    /// Integer elements are fixed-point encodings of reals (image channels `UNORM_INT8`,
    /// `SNORM_INT16`, ...): their last place is a ulp too, and the budget applies to them.
    pub normalized: bool,
    /// `allclose` relative bound for floating (and normalized) elements; 0 = none.
    pub rtol: f64,
    /// `allclose` absolute bound for floating (and normalized) elements; 0 = none.
    pub atol: f64,
}

impl Tolerance {
    /// Bit-exact comparison.
    pub const EXACT: Tolerance = Tolerance {
        element: None,
        ulp: 0,
        normalized: false,
        rtol: 0.0,
        atol: 0.0,
    };

    /// `closeness` applied to elements of type `element` (`normalized`: fixed-point channels).
    pub fn of(element: Option<ValueType>, normalized: bool, closeness: Closeness) -> Tolerance {
        Tolerance {
            element,
            ulp: closeness.ulp,
            normalized,
            rtol: closeness.rtol,
            atol: closeness.atol,
        }
    }
}

/// How far apart a whole buffer is, over the elements whose bits differ.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ErrorStats {
    /// Elements (scalar lanes, or bytes when the type is unknown) outside the tolerance.
    pub differing: u64,
    /// Elements in the buffer.
    pub elements: u64,
    /// Largest |got − expected| and its element index (typed elements only; infinite where a
    /// NaN or infinity meets a number).
    pub max_abs: Option<(f64, u64)>,
    /// Largest |got − expected| / |expected| over elements whose expected value is not 0.
    pub max_rel: Option<(f64, u64)>,
}

impl std::fmt::Display for ErrorStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = if self.max_abs.is_some() || self.max_rel.is_some() {
            "elements"
        } else {
            "bytes"
        };
        write!(f, "{} of {} {unit} differ", self.differing, self.elements)?;
        if let Some((e, i)) = self.max_abs {
            write!(f, ", max abs error {} at element {i}", sci(e))?;
        }
        if let Some((e, i)) = self.max_rel {
            write!(f, ", max rel error {} at element {i}", sci(e))?;
        }
        Ok(())
    }
}

fn sci(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3e}")
    } else {
        "inf".into()
    }
}

/// The first place two buffers disagree.
#[derive(Debug, Clone, PartialEq)]
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
        /// The whole buffer's error statistics.
        stats: ErrorStats,
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
                stats,
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
                    write!(f, "; {stats}")
                }
                None => write!(
                    f,
                    "byte offset {byte_offset}: expected 0x{:02x}, got 0x{:02x}; {stats}",
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

/// The real value of one element: floats as they are, normalized channels as the reals they
/// encode (`UNORM_INT8` 255 → 1.0), other integers as numbers.
fn real_value(scalar: Scalar, bits: u64, normalized: bool) -> f64 {
    let size = scalar.size() as u32 * 8;
    let signed = |x: u64| -> f64 {
        let shift = 64 - size;
        (((x << shift) as i64) >> shift) as f64
    };
    let v = match scalar {
        Scalar::F16 => return f64::from(half_to_f32(bits as u16)),
        Scalar::F32 => return f64::from(f32::from_bits(bits as u32)),
        Scalar::F64 => return f64::from_bits(bits),
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => signed(bits),
        _ => bits as f64,
    };
    if !normalized {
        return v;
    }
    let signed_type = matches!(scalar, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64);
    if signed_type {
        (v / (2f64.powi(size as i32 - 1) - 1.0)).max(-1.0)
    } else {
        v / (2f64.powi(size as i32) - 1.0)
    }
}

/// One differing element judged: its ulp distance (floats and normalized channels) and
/// whether the tolerance lets it through.
fn judge(scalar: Option<Scalar>, e: &[u8], g: &[u8], tol: &Tolerance) -> (Option<u64>, bool) {
    let Some(s) = scalar.filter(|s| s.is_float() || tol.normalized) else {
        return (None, false);
    };
    let (eb, gb) = (s.raw_bits(e), s.raw_bits(g));
    let ulp = ulp_distance(s, eb, gb);
    if matches!(ulp, Some(u) if tol.ulp > 0 && u <= tol.ulp) {
        return (ulp, true);
    }
    if tol.rtol > 0.0 || tol.atol > 0.0 {
        let (b, a) = (
            real_value(s, eb, tol.normalized),
            real_value(s, gb, tol.normalized),
        );
        // NumPy allclose(a=got, b=expected, equal_nan=True): infinities only equal themselves.
        let close = (a.is_nan() && b.is_nan())
            || a == b
            || (a.is_finite() && b.is_finite() && (a - b).abs() <= tol.atol + tol.rtol * b.abs());
        if close {
            return (ulp, true);
        }
    }
    (ulp, false)
}

/// Compares `got` with `expected`; `None` when they agree under `tol`. A difference names the
/// first element outside the tolerance and carries the whole buffer's [`ErrorStats`].
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
    let mut first: Option<Difference> = None;
    let mut stats = ErrorStats {
        elements: expected.len().div_ceil(width) as u64,
        ..ErrorStats::default()
    };
    let mut offset = 0usize;
    while offset < expected.len() {
        let end = (offset + width).min(expected.len());
        let (e, g) = (&expected[offset..end], &got[offset..end]);
        if e != g {
            let index = (offset / width) as u64;
            let typed = scalar.filter(|_| end - offset == width);
            let (ulp, within) = judge(typed, e, g, &tol);
            if let Some(s) = typed {
                let b = real_value(s, s.raw_bits(e), tol.normalized);
                let a = real_value(s, s.raw_bits(g), tol.normalized);
                let abs = if a.is_nan() && b.is_nan() {
                    0.0
                } else if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
                    if a == b {
                        0.0
                    } else {
                        f64::INFINITY
                    }
                } else {
                    (a - b).abs()
                };
                if stats.max_abs.is_none_or(|(m, _)| abs > m) {
                    stats.max_abs = Some((abs, index));
                }
                if b != 0.0 && !b.is_nan() {
                    let rel = abs / b.abs();
                    if stats.max_rel.is_none_or(|(m, _)| rel > m) {
                        stats.max_rel = Some((rel, index));
                    }
                }
            }
            if !within {
                stats.differing += 1;
                if first.is_none() {
                    first = Some(Difference::Value {
                        byte_offset: offset as u64,
                        element_index: index,
                        scalar: typed,
                        expected: e.to_vec(),
                        got: g.to_vec(),
                        ulp,
                        stats: ErrorStats::default(),
                    });
                }
            }
        }
        offset = end;
    }
    if let Some(Difference::Value { stats: s, .. }) = first.as_mut() {
        *s = stats;
    }
    first
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
            rtol: 0.0,
            atol: 0.0,
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
                normalized: false,
                rtol: 0.0,
                atol: 0.0,
            }
        )
        .is_some());
        assert!(compare(
            &a,
            &b,
            Tolerance {
                element: float,
                ulp: 1,
                normalized: false,
                rtol: 0.0,
                atol: 0.0,
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
                    normalized: false,
                    rtol: 0.0,
                    atol: 0.0,
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
                normalized: false,
                rtol: 0.0,
                atol: 0.0,
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
                rtol: 0.0,
                atol: 0.0,
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
            rtol: 0.0,
            atol: 0.0,
        };
        assert_eq!(compare(&[0x80, 5], &[0x7f, 5], tol(1)), None);
        assert!(compare(&[0x80, 5], &[0x7e, 5], tol(1)).is_some());
        let exact = Tolerance {
            element: u8n,
            ulp: 1,
            normalized: false,
            rtol: 0.0,
            atol: 0.0,
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
                rtol: 0.0,
                atol: 0.0,
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

    fn close(element: &str, ulp: u64, rtol: f64, atol: f64) -> Tolerance {
        Tolerance::of(
            pointee_type(element),
            false,
            Closeness::new(ulp, rtol, atol).unwrap(),
        )
    }

    #[test]
    fn allclose_follows_numpy_semantics() {
        let e = floats(&[100.0, 0.0, f32::NAN, f32::INFINITY, 1.0]);
        // Relative to the expected value: 100 ± 1e-3·100 passes, 0 needs the absolute bound.
        let g = floats(&[100.05, 1e-9, f32::NAN, f32::INFINITY, 1.0]);
        assert!(compare(&e, &g, close("float*", 0, 1e-3, 0.0)).is_some());
        assert_eq!(compare(&e, &g, close("float*", 0, 1e-3, 1e-8)), None);
        assert!(compare(&e, &g, close("float*", 0, 1e-4, 1e-8)).is_some());
        // A NaN where a number was expected is never close; infinities only to themselves.
        let nan = floats(&[100.0, 0.0, 1.0, f32::INFINITY, 1.0]);
        assert!(compare(&e, &nan, close("float*", 0, 1.0, 1.0)).is_some());
        let inf = floats(&[100.0, 0.0, f32::NAN, f32::NEG_INFINITY, 1.0]);
        assert!(compare(&e, &inf, close("float*", 0, 1.0, 1.0)).is_some());
        // Integers (not normalized) stay exact whatever the bounds.
        assert!(compare(&[1, 0, 0, 0], &[2, 0, 0, 0], close("int*", 0, 1.0, 1.0)).is_some());
        // Normalized channels compare the reals they encode: 1/255 apart.
        let unorm = Tolerance::of(
            Some(ValueType {
                scalar: Scalar::U8,
                lanes: 1,
            }),
            true,
            Closeness::new(0, 0.0, 0.005).unwrap(),
        );
        assert_eq!(compare(&[200], &[201], unorm), None);
        assert!(compare(&[200], &[202], unorm).is_some());
    }

    #[test]
    fn a_difference_carries_the_whole_buffers_statistics() {
        let e = floats(&[1.0, 2.0, 4.0, 8.0]);
        let g = floats(&[1.0, 2.5, 4.0, 6.0]);
        let Some(Difference::Value {
            element_index,
            stats,
            ..
        }) = compare(&e, &g, close("float*", 0, 0.0, 0.0))
        else {
            panic!("expected a value difference");
        };
        assert_eq!(element_index, 1);
        assert_eq!((stats.differing, stats.elements), (2, 4));
        assert_eq!(stats.max_abs, Some((2.0, 3)));
        assert_eq!(stats.max_rel, Some((0.25, 1)));
        // Within-tolerance elements are not counted as differing, but still measured.
        let Some(Difference::Value {
            element_index,
            stats,
            ..
        }) = compare(&e, &g, close("float*", 0, 0.0, 1.0))
        else {
            panic!("expected a value difference");
        };
        assert_eq!((element_index, stats.differing), (3, 1));
        assert_eq!(stats.max_rel, Some((0.25, 1)));
        let text = compare(&e, &g, close("float*", 0, 0.0, 0.0))
            .unwrap()
            .to_string();
        assert!(
            text.ends_with(
                "; 2 of 4 elements differ, max abs error 2.000e0 at element 3, max rel error 2.500e-1 at element 1"
            ),
            "{text}"
        );
        // Untyped buffers count bytes.
        let bytes = compare(&[1, 2, 3], &[1, 9, 9], Tolerance::EXACT)
            .unwrap()
            .to_string();
        assert!(bytes.ends_with("; 2 of 3 bytes differ"), "{bytes}");
    }
}
