//! Judging a run's outputs against what was expected: the first difference of each argument
//! ([`Mismatch`]), bit for bit or within a tolerance, with an image's pixel and channel.

use super::input::{image_region, Expected, InputArg};
use super::{LaunchInput, RunOutput};
use crate::compare::{compare, Closeness, Difference, Tolerance};
use crate::values::{image_channel_type, pointee_type, ValueType};
use cltrap_capture::{ArgInfo, ImageRecord};

/// The first difference found in one argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Index of the differing argument.
    pub arg_index: usize,
    /// Its name, when the capture knows it.
    pub arg_name: String,
    /// Its type name, when the capture knows it.
    pub type_name: String,
    /// For images: `pixel (x,y[,z]) channel c` of the difference.
    pub location: Option<String>,
    /// The first difference.
    pub difference: Difference,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = if self.arg_name.is_empty() {
            "?"
        } else {
            &self.arg_name
        };
        let ty = if self.type_name.is_empty() {
            String::new()
        } else {
            format!(", {}", self.type_name)
        };
        write!(f, "argument {} ({name}{ty}): ", self.arg_index)?;
        if let Some(loc) = &self.location {
            write!(f, "{loc}, ")?;
        }
        write!(f, "{}", self.difference)
    }
}

/// Where byte `offset` of a tightly packed image lies, as `pixel (x,y) channel c`.
fn pixel_of(image: &ImageRecord, offset: u64, channel_size: u64) -> String {
    let (w, h, _) = image_region(image);
    let px = offset / image.element_size.max(1);
    let channel = (offset % image.element_size.max(1)) / channel_size.max(1);
    let (x, y, z) = (px % w, (px / w) % h, px / (w * h));
    if image.image_type == 0x10F2 || image.image_type == 0x10F3 {
        format!("pixel ({x},{y},{z}) channel {channel}")
    } else if h > 1 {
        format!("pixel ({x},{y}) channel {channel}")
    } else {
        format!("pixel {x} channel {channel}")
    }
}

/// Compares outputs with what was expected; one [`Mismatch`] per differing argument, in
/// argument order. `closeness` (a ulp budget, or [`Closeness`] with `allclose` bounds) applies
/// to buffers whose type name says their elements are floating and to images with floating
/// or normalized channels. `input` is the launch that ran (it says which arguments are
/// images, and their formats).
pub fn check_outputs(
    input: &LaunchInput,
    infos: &[ArgInfo],
    expected: &[Option<Expected>],
    out: &RunOutput,
    closeness: impl Into<Closeness>,
) -> Vec<Mismatch> {
    let closeness = closeness.into();
    let mut found = Vec::new();
    for (i, exp) in expected.iter().enumerate() {
        let (Some(exp), Some(Some(got))) = (exp, out.outputs.get(i)) else {
            continue;
        };
        let info = infos.get(i).cloned().unwrap_or_default();
        let image = match input.args.get(i) {
            Some(InputArg::Image { image, .. }) => Some(image),
            _ => None,
        };
        let tolerance = match image {
            Some(img) => {
                let channel = image_channel_type(img.channel_data_type);
                Tolerance::of(
                    channel.map(|(scalar, _)| ValueType { scalar, lanes: 1 }),
                    channel.is_some_and(|(_, n)| n),
                    closeness,
                )
            }
            None => Tolerance::of(pointee_type(&info.type_name), false, closeness),
        };
        let difference = match exp {
            Expected::Bytes(e) => compare(e, got, tolerance),
            Expected::Digest(algo, h) => {
                let g = algo.digest(got);
                (g != *h).then(|| Difference::Digest {
                    expected: h.clone(),
                    got: g,
                })
            }
            Expected::Unknown(_) => None,
        };
        if let Some(difference) = difference {
            let location = match (&difference, image) {
                (Difference::Value { byte_offset, .. }, Some(img)) => Some(pixel_of(
                    img,
                    *byte_offset,
                    tolerance
                        .element
                        .map(|e| e.scalar.size() as u64)
                        .unwrap_or(1),
                )),
                _ => None,
            };
            found.push(Mismatch {
                arg_index: i,
                arg_name: info.name.to_string(),
                type_name: info.type_name.to_string(),
                location,
                difference,
            });
        }
    }
    found
}
