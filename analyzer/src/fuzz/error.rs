//! Why fuzzing (or solving) stopped: the one error type of `fuzz/` and `solve/`, in a file of
//! its own so the modules below the command (campaign, runner, suite, spec, solve) name it
//! without importing the command's module back.

use crate::executor::ExecError;
use crate::headers::HeaderError;
use crate::variant::VariantError;
use cltrap_capture::{ReadError, WriteError};
use cltrap_kernel::KernelError;

/// Why fuzzing (or solving) could not go on. `Display` is one sentence for the CLI.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// The interface file or the arguments are unusable.
    #[error("{0}")]
    Interface(String),
    /// Parsing or instrumenting the kernel failed.
    #[error("{0}")]
    Kernel(#[from] KernelError),
    /// Building or running failed (not a kernel crash, which is a finding).
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// Reading the capture failed.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// Writing the suite failed.
    #[error("{0}")]
    Write(#[from] WriteError),
    /// The capture's program cannot be used.
    #[error("{0}")]
    Variant(#[from] VariantError),
    /// The worker process failed.
    #[error("fuzz worker: {0}")]
    Worker(String),
    /// The program's included files could not be laid out.
    #[error("{0}")]
    Headers(#[from] HeaderError),
}
