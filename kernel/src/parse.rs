//! The front door of parsing: libclang's tree turned into the model ([`crate::frontend`]), then
//! what macro invocations hide filled in from the preprocessed program ([`crate::expand`]).
//! Apart from both so that neither imports the other back.

use crate::error::KernelError;
use crate::frontend::{parse_plain, ParseOptions};
use crate::model::Program;

/// Parses `source` with the captured `build_options` into the kernel model.
pub fn parse_program(source: &str, build_options: &str) -> Result<Program, KernelError> {
    parse_with(
        source,
        &ParseOptions {
            build_options: build_options.into(),
            ..ParseOptions::default()
        },
    )
}

/// Parses with full control over the options; see [`parse_program`]. Operators, swizzles
/// and literals that macro invocations hide are recovered from the preprocessed program
/// ([`crate::expand`]).
pub fn parse_with(source: &str, opts: &ParseOptions) -> Result<Program, KernelError> {
    let mut program = parse_plain(source, opts)?;
    crate::expand::fill_macro_holes(&mut program, opts);
    Ok(program)
}
