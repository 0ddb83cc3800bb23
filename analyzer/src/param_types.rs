//! Scalar arguments shown by value when their recorded type is a typedef the value decoding
//! does not know (`typedef float real;`, CLBlast's `real_arg`): the type clang gives the
//! parameter, parsing the program's own text, decides. Why: the driver reports the type as
//! written, so `list` printed such a `2.5f` as `0x00002040`, in memory order.
//!
//! One parse per program (declarations only), kept for the whole listing.

use crate::values::format_value;
use cltrap_capture::{Capture, Hash, LaunchRecord};
use std::collections::HashMap;

/// Parameter types per program and kernel, resolved on first need.
#[derive(Default)]
pub struct ParamTypes {
    by_program: HashMap<Hash, Option<HashMap<String, Vec<String>>>>,
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
        let kernels = self
            .by_program
            .entry(l.program.clone())
            .or_insert_with(|| parameter_types(capture, l));
        kernels
            .as_ref()
            .and_then(|k| k.get(&l.kernel))
            .and_then(|t| t.get(index as usize))
            .map(|ty| (format_value(ty, b), ty.clone()))
            .filter(|(v, _)| !v.starts_with("0x"))
            .map_or((shown, None), |(v, ty)| (v, Some(ty)))
    }
}

/// The parameter types of every function of `l`'s program as clang resolves them (typedefs
/// and macros expanded, the address space dropped), parsing the program's one source unit
/// against its captured headers; `None` when it has no such unit or does not parse here.
fn parameter_types(capture: &Capture, l: &LaunchRecord) -> Option<HashMap<String, Vec<String>>> {
    let record = capture.program(&l.program).ok()?;
    let headers = crate::headers::Headers::from_capture(capture, &record.includes).ok()?;
    let source = headers.parse_source(&crate::variant::program_source(capture, &record).ok()?);
    let options = crate::variant::parse_options(&headers, &record);
    let program = cltrap_kernel::parse_declarations(&source, &options).ok()?;
    let types = |f: &cltrap_kernel::model::Function| -> Vec<String> {
        f.params
            .iter()
            .map(|p| {
                // `__private float` → `float` (address spaces are `__`-words in clang's
                // spelling).
                p.ty.split_whitespace()
                    .filter(|w| !w.starts_with("__"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    Some(
        program
            .functions
            .iter()
            .map(|f| (f.name.clone(), types(f)))
            .collect(),
    )
}
