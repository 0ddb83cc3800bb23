//! Scalar arguments shown by value when their recorded type is a typedef the value decoding
//! does not know (`typedef float real;`, CLBlast's `real_arg`): the type clang gives the
//! parameter, parsing the program's own text, decides. Why: the driver reports the type as
//! written, so `list` printed such a `2.5f` as `0x00002040`, in memory order.
//!
//! One parse per (program, kernel), kept for the whole listing.

use crate::values::format_value;
use cltrap_capture::{Capture, Hash, LaunchRecord};
use std::collections::HashMap;

/// Parameter types per (program, kernel), resolved on first need.
#[derive(Default)]
pub struct ParamTypes {
    by_kernel: HashMap<(Hash, String), Option<Vec<String>>>,
}

impl ParamTypes {
    /// The value of launch `l`'s scalar argument `index` (recorded type `type_name`, bytes
    /// `b`), and the resolved type when the recorded one was not enough to decode it.
    pub fn decode(
        &mut self,
        capture: &Capture,
        l: &LaunchRecord,
        index: u32,
        type_name: &str,
        b: &[u8],
    ) -> (String, Option<String>) {
        let shown = format_value(type_name, b);
        if !(shown.starts_with("0x") && shown.len() == 2 + 2 * b.len()) {
            return (shown, None);
        }
        let types = self
            .by_kernel
            .entry((l.program.clone(), l.kernel.clone()))
            .or_insert_with(|| parameter_types(capture, l));
        types
            .as_ref()
            .and_then(|t| t.get(index as usize))
            .map(|ty| (format_value(ty, b), ty.clone()))
            .filter(|(v, _)| !v.starts_with("0x"))
            .map_or((shown, None), |(v, ty)| (v, Some(ty)))
    }
}

/// The kernel's parameter types as clang resolves them (typedefs and macros expanded, the
/// address space dropped), parsing the program's one source unit against its captured
/// headers; `None` when it has no such unit or does not parse here.
fn parameter_types(capture: &Capture, l: &LaunchRecord) -> Option<Vec<String>> {
    let record = capture.program(&l.program).ok()?;
    let headers = crate::headers::Headers::from_capture(capture, &record.includes).ok()?;
    let source = headers.parse_source(&crate::variant::program_source(capture, &record).ok()?);
    let options = crate::variant::parse_options(&headers, &record);
    let program = cltrap_kernel::parse_program(&source, &options).ok()?;
    let kernel = program.function(&l.kernel)?;
    Some(
        kernel
            .params
            .iter()
            .map(|p| {
                // `__private float` → `float` (address spaces are `__`-words in clang's
                // spelling).
                p.ty.split_whitespace()
                    .filter(|w| !w.starts_with("__"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
    )
}
