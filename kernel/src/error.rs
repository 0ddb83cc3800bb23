//! Typed errors of the front-end and the passes: each names the construct and where it is, so
//! the CLI can print one clear sentence and never instrument a kernel it did not understand.

use thiserror::Error;

/// Why a kernel could not be parsed, modelled or instrumented.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// No usable libclang (14–20) on this machine.
    #[error("cannot load libclang ({0}); install libclang-dev or set LIBCLANG_PATH")]
    LibclangMissing(String),
    /// libclang itself failed (not a kernel error).
    #[error("libclang failed: {0}")]
    Libclang(String),
    /// The input cannot be handed to libclang.
    #[error("invalid input: {0}")]
    BadInput(String),
    /// Clang reported errors in the kernel source.
    #[error("the kernel source does not compile: {file}:{line}:{col}: {message}{more}")]
    Compile {
        /// File of the first error.
        file: String,
        /// Line of the first error.
        line: u32,
        /// Column of the first error.
        col: u32,
        /// Message of the first error.
        message: String,
        /// " (and N more errors)" or empty.
        more: String,
    },
    /// A construct the model or a pass cannot handle.
    #[error("{line}:{col}: cannot handle {construct}: {why}")]
    Unsupported {
        /// What it is (`if statement`, `call to get_group_id`, ...).
        construct: String,
        /// 1-based line in the user's file.
        line: u32,
        /// 1-based column.
        col: u32,
        /// Why it is refused.
        why: String,
    },
    /// Two edits touch the same bytes.
    #[error("overlapping edits at bytes {a_start}..{a_end} and {b_start}..{b_end}")]
    OverlappingEdits {
        /// First edit's start.
        a_start: usize,
        /// First edit's end.
        a_end: usize,
        /// Second edit's start.
        b_start: usize,
        /// Second edit's end.
        b_end: usize,
    },
    /// A requested kernel is not in the program.
    #[error("no kernel named `{0}` in the program")]
    NoSuchKernel(String),
    /// Counter buffer does not match the coverage map.
    #[error("coverage counter buffer has {got} slots but the map needs {want}")]
    CounterSize {
        /// Slots given.
        got: usize,
        /// Slots needed.
        want: usize,
    },
}
