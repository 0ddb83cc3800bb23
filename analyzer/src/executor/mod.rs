//! The executor: run one kernel launch on a chosen device, as often as needed.
//!
//! Every analysis of cltrap (replay, coverage, schedule permutation, fuzzing, mutation) needs
//! the same four steps, and they live here so none of them talks to OpenCL on its own:
//!
//! 1. [`Session::open`] a device (platform/device by index or name);
//! 2. [`Session::build`] a program from a captured [`cltrap_capture::ProgramRecord`], optionally
//!    with overridden source text (an instrumented or mutated kernel) and extra options —
//!    build once, run many times;
//! 3. turn a captured launch into a self-contained [`LaunchInput`] ([`LaunchInput::from_record`])
//!    — or make one up (fuzzing);
//! 4. [`Session::run`] it, optionally with extra trailing arguments (coverage counters, a
//!    permutation table), getting every memory argument's bytes back plus the kernel's
//!    device time; [`check_outputs`] then compares them with what the application saw.
//!
//! [`Chain`] hands a replayed launch's verified output buffers, on the device, to the next
//! launch that reads them ([`chain`]).
//!
//! [`Chain`] also verifies outputs recorded as `dd128` digests on the device where that pays
//! ([`devverify`]): only the digest's partials are read back, and such an output stays on the
//! device for the next launch that reads it.
//!
//! [`Session::resident`] keeps one launch's memory objects on the device between runs, so a
//! fuzzing campaign writes only what changed ([`resident`]).
//!
//! Architecture invariant: nothing here prints; errors are [`ExecError`] values.

mod arrays;
mod chain;
mod cl;
mod cpu_code;
mod derive;
mod device;
mod devverify;
pub mod fault;
mod guard;
mod input;
mod outputs;
mod program;
mod readback;
mod resident;
mod run;
mod staging;

pub use chain::{Chain, Plan, Ran, Traffic};
pub use cl::error_name;
pub use derive::{cache_bytes, Deriver};
pub use device::{list_devices, DeviceInfo, DeviceSelector, RunSplit, Session};
pub use devverify::{DeviceVerification, Mode as DeviceVerifyMode};
pub use guard::GuardBreach;
pub use input::{image_bytes, image_region, Expected, FromFiles, InputArg, LaunchInput};
pub use outputs::{check_outputs, Mismatch};
pub use program::{BuildOptions, BuiltProgram};
pub use resident::{
    Content, Define, ImageUse, MemState, Patch, Resident, ResidentLayout, ResidentRun, SlotLayout,
    ValueArg, RESIDENT_PAD,
};
pub use run::RunOutput;

use cltrap_capture::ReadError;

/// Why a launch could not be run. `Display` is one sentence for the CLI.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("no OpenCL platform is available (is an ICD such as pocl-opencl-icd installed?)")]
    /// No ICD is installed, or none reports a device.
    NoPlatform,
    #[error("{0}")]
    /// The ICD loader library itself is missing.
    Loader(String),
    #[error("no OpenCL platform matches {want:?}; available: {available}")]
    /// The `--platform` selector matched nothing.
    NoSuchPlatform { want: String, available: String },
    #[error("no device matches {want:?} on platform {platform}; available: {available}")]
    /// The `--device` selector matched nothing.
    NoSuchDevice {
        /// The selector as given.
        want: String,
        /// Where it was looked for.
        platform: String,
        /// What exists, for the message.
        available: String,
    },
    #[error("{what} failed: {code}")]
    /// An OpenCL call failed: which one, and its status name.
    Cl { what: String, code: String },
    #[error("the program does not build on {device}:\n{log}")]
    /// The program no longer builds; the trimmed build log.
    Build { device: String, log: String },
    #[error("kernel {kernel:?} is not in the rebuilt program")]
    /// The rebuilt program lacks the kernel.
    NoKernel { kernel: String },
    #[error("kernel {kernel} takes {expected} arguments but the launch has {got}")]
    /// The launch and the kernel disagree on the number of arguments.
    ArgCount {
        /// Kernel name.
        kernel: String,
        /// Arguments the kernel takes.
        expected: u32,
        /// Arguments the launch supplies.
        got: usize,
    },
    #[error("argument {index} of kernel {kernel} was refused by clSetKernelArg: {code}")]
    /// The driver refused an argument value.
    SetArg {
        /// Kernel name.
        kernel: String,
        /// Argument index.
        index: usize,
        /// OpenCL status name.
        code: String,
    },
    #[error("not replayable: {0}")]
    /// The launch cannot be replayed from this capture (the reason).
    NotReplayable(String),
    #[error("launch {producer} re-executed on this device produced different contents than recorded (its argument {producer_arg}); cannot derive the input of launch {launch} (a nondeterministic kernel, or another device than the capture's?)")]
    /// A derived input could not be re-created: its producer's output differs from the
    /// recorded digest.
    NotDerivable {
        /// The launch re-executed.
        producer: u64,
        /// Its argument whose contents differ.
        producer_arg: u32,
        /// The launch that needed them as input.
        launch: u64,
    },
    #[error(
        "launch {producer}, re-executed to derive the input of launch {launch}, failed: {why}"
    )]
    /// A producer of a derived input could not be re-executed.
    ProducerFailed {
        /// The launch re-executed.
        producer: u64,
        /// The launch that needed its outputs.
        launch: u64,
        /// Why it failed (one sentence).
        why: String,
    },
    #[error("{0}")]
    /// The capture could not be read (or lacks the data).
    Capture(#[from] ReadError),
    #[error("the build options contain a NUL byte")]
    /// Options or names with an interior NUL byte.
    BadOptions,
    #[error("the kernel failed while running: {code}")]
    /// The kernel itself failed on the device.
    Execution { code: String },
    #[error("{0}")]
    /// The program's captured headers could not be laid out for the build.
    Headers(String),
    #[error("the NDRange is refused: {0}")]
    /// An NDRange `clEnqueueNDRangeKernel` must not be handed (no dimensions, a size of 0,
    /// more work-items than any replay can run).
    Geometry(String),
}

impl ExecError {
    /// True when the launch cannot be replayed from this capture at all (missing inputs, SVM,
    /// built-in kernels) — a replay reports it as `skipped`, not as a failure.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            ExecError::NotReplayable(_) | ExecError::Capture(ReadError::NotRecorded { .. })
        )
    }
}

pub(crate) fn cl_err(what: impl Into<String>) -> impl FnOnce(i32) -> ExecError {
    let what = what.into();
    move |code| {
        match code {
        cl3::error_codes::DLOPEN_RUNTIME_LOAD_FAILED => ExecError::Loader(
            "the OpenCL ICD loader (libOpenCL.so.1) could not be loaded; install ocl-icd-libopencl1".into(),
        ),
        c => ExecError::Cl { what, code: cl::error_name(c) },
    }
    }
}
