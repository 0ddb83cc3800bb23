//! Harness for cltrap's end-to-end tests: real host programs, run natively and under the real
//! shim on the real OpenCL runtime (PoCL here), then listed and replayed with the real CLI.
//!
//! What it is for: building the C fixtures in `tests/apps/`, running a program natively and
//! under `cltrap run`, comparing the two runs, and reading the capture back (through the
//! `cltrap-capture` crate, so tests can assert on exact records, not only on printed text).
//! What it is not for: mocking anything. Every assertion here is about what really ran.
//!
//! Binaries are found in `$CARGO_TARGET_DIR/release/` or `<workspace>/target/release/`;
//! `CLTRAP_BIN` and `CLTRAP_SHIM` override them. Build products of the fixtures and all
//! capture directories live under `<target>/e2e/`, never in the source tree.

pub mod campaign;
pub mod checks;
pub mod fixtures;
pub mod matrix;
pub mod paths;
pub mod process;
pub mod python;
pub mod records;

pub use checks::*;
pub use fixtures::*;
pub use paths::*;
pub use process::*;
pub use python::*;
pub use records::*;
