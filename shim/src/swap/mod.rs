//! Live kernel instrumentation: `cltrap run --coverage` and `cltrap run --permute SEED` swap
//! instrumented kernels into the running application, which stays unaware of them.
//!
//! # How a kernel is swapped
//!
//! 1. **Instrument, outside the process** ([`ask`]). When the application builds a program
//!    created from source (`clBuildProgram` succeeded, so its options are known), the shim asks
//!    the `cltrap` executable (`$CLTRAP_BIN instrument --pass coverage|permute --options OPTS`,
//!    spawned without a shell, the program source on stdin) for the instrumented source and
//!    where each kernel's extra trailing argument goes. libclang never runs inside the
//!    application (PoCL already has its own LLVM there). Answers, failures included, are
//!    cached in `$CLTRAP_DIR/instrument/<blake3(pass, options, source)>.json`, so each distinct
//!    program is processed once, across processes too.
//! 2. **Shadow program** ([`shadow`]). The instrumented source is built as a second program in
//!    the same context, for the same devices, with the application's own options. The
//!    application's program is built and used exactly as without cltrap: every query about it,
//!    and about every kernel the application creates from it (`clGetKernelInfo`,
//!    `CL_KERNEL_NUM_ARGS`, `clGetKernelArgInfo`, `clSetKernelArg` at an index past the last,
//!    work-group info), is answered by the driver for the real objects.
//! 3. **Substitution at the enqueue** ([`enqueue`]). Only the enqueue changes: for a kernel of
//!    a shadowed program, the shim keeps one shadow kernel (same name, created in the shadow
//!    program on first launch), copies onto it the arguments the application set on its own
//!    kernel (tracked by the `clSetKernelArg` hooks anyway; unchanged ones are not set again),
//!    sets the extra argument, and the launch hook forwards the application's enqueue with the
//!    shadow kernel in place of its own: same queue, geometry, wait list and event
//!    ([`before_enqueue`] right before the driver call, [`after_enqueue`] right after). The
//!    capture still records the application's kernel, program and arguments.
//!    This is the design's one refinement of "return shadow kernels from `clCreateKernel`":
//!    nothing but the enqueue has to lie, so no query can give the swap away.
//! 4. **Extra argument per launch.** Coverage: a counter buffer created with its initial
//!    contents (`CL_MEM_COPY_HOST_PTR`), read back without blocking after the kernel
//!    ([`counters`]); permute: the launch's permutation table ([`perm`], the same tables as
//!    `cltrap replay --schedules`), seeded by SEED + the launch number, released after the
//!    enqueue; SEED 0 is the identity schedule (the baseline: instrumented, nothing permuted).
//!    A permuted launch whose application passed a NULL local size runs with a local size the
//!    shim chooses ([`enqueue::SwapLaunch::local`]; the choice was the implementation's, and the table
//!    must know the work-group count) — compare its results across seeds, with SEED 0 as the
//!    reference, not with a native run. Coverage keeps NULL (counters sized for groups of one
//!    work-item).
//! 5. **Results.** Each counter buffer is appended, when its read completes, to
//!    `$CLTRAP_DIR/coverage.jsonl` (one JSON line per launch: instrument key, kernel, geometry,
//!    counters as a blob of the capture's blob store, so identical vectors are stored once).
//!    Reads still pending are waited for at exit. `cltrap run` merges them with the maps and
//!    writes the coverage report after the application exits.
//!
//! # Never worse than native
//!
//! Anything that fails (no `$CLTRAP_BIN`, a kernel the front-end refuses, a shadow build error,
//! an argument the shim did not see set, a work-group larger than the instrumented kernel's
//! `CL_KERNEL_WORK_GROUP_SIZE`) leaves that program or launch running the application's own
//! kernel, with one `cltrap:` line on stderr per distinct reason. A shadow enqueue that the
//! driver refuses anyway is repeated by the launch hook with the application's kernel, so the
//! application gets the native return code. Nothing is written on
//! stdout; all work runs inside [`crate::door::quietly`].
//!
//! # Limits
//!
//! Programs built with `clBuildProgram` from source are swapped, and so are programs linked by
//! `clLinkProgram` from sources compiled by `clCompileProgram` (each source instrumented on its
//! own, with its compile options and its headers as files under `instrument/headers/`; each
//! kernel's counters belong to its own source); binaries and IL are not; SVM pointers reached only through
//! `clSetKernelExecInfo` are not forwarded to the shadow kernel. A shadow kernel is released
//! when the application releases its kernel for good, a shadow program when its program and
//! every shadow kernel of it are gone (`core/lifetime.rs` counts the application's references). Swapping needs the interception core, so it is off with
//! `CLTRAP_CAPTURE=off`.

mod ask;
mod counters;
mod enqueue;
mod perm;
mod shadow;

pub(crate) use enqueue::{after_enqueue, before_enqueue, LaunchGeometry};
pub(crate) use shadow::{forget, program_built, program_linked, Unit};

use once_cell::sync::Lazy;

/// What is swapped into the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Coverage counters (`CLTRAP_COVERAGE=on`).
    Coverage,
    /// Permuted work-group schedules, with the run's seed (`CLTRAP_PERMUTE=SEED`).
    Permute(u64),
}

impl Pass {
    /// The `--pass` word of `cltrap instrument`.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Coverage => "coverage",
            Pass::Permute(_) => "permute",
        }
    }
}

/// Environment variable naming the `cltrap` executable (set by `cltrap run`).
pub const BIN_ENV: &str = "CLTRAP_BIN";

static PASS: Lazy<Option<Pass>> = Lazy::new(|| {
    let s = crate::state::settings()?;
    if s.coverage {
        Some(Pass::Coverage)
    } else {
        s.permute.map(Pass::Permute)
    }
});

/// The pass swapped into this process, if any (read once from the controls).
pub fn pass() -> Option<Pass> {
    *PASS
}
