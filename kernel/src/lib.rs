//! OpenCL C front-end (libclang) and source-to-source instrumentation passes for cltrap.
//!
//! What it is for: turning a captured program's source into cltrap's typed kernel model
//! ([`model::Program`]) and rewriting that source (by byte ranges of the user's own text) into
//! instrumented variants: permuted work-group schedules ([`permute`]) and coverage counters
//! ([`coverage`]). Fuzzing, solving and mutation testing reuse the same model.
//!
//! What it is not for: running kernels. **Architecture invariant:** this crate never links or
//! loads OpenCL; it only loads libclang (at run time, via `clang-sys`), and every pass is a pure
//! function from source text to instrumented text plus a map.

#![warn(missing_docs)]

pub mod clang;
pub mod coverage;
pub mod coverage_result;
pub mod edits;
pub mod error;
mod expand;
pub mod frontend;
pub mod interface;
pub mod lcov;
pub mod model;
pub mod mutate;
pub mod options;
mod parse;
pub mod permute;
pub mod rewrite;
pub mod sanitize;
pub mod symbolic;
pub mod tce;
pub mod trip_count;

pub use edits::Edits;
pub use error::KernelError;
pub use frontend::{parse_declarations, ParseOptions};
pub use model::Program;
pub use parse::{parse_program, parse_with};
