//! What one kernel's campaign runs on ([`Target`]) and the settings all kernels share
//! ([`Settings`]): the data `fuzz` and `solve` pass around, apart from the command's module so
//! the unit layers of both commands name them without importing the command back.

use super::campaign::Budget;
use crate::executor::{DeviceSelector, LaunchInput};
use crate::headers::Headers;
use cltrap_capture::LaunchRecord;
use std::path::PathBuf;
use std::time::Duration;

/// One kernel to fuzz: its program and seeds.
#[derive(Debug, Clone)]
pub struct Target {
    /// OpenCL C source.
    pub source: String,
    /// Build options.
    pub options: String,
    /// Kernel name.
    pub kernel: String,
    /// The capture's program key (absent for a kernel file).
    pub program: Option<String>,
    /// What rows and progress lines call it: the kernel name, with its program when the
    /// capture has kernels of that name in several programs ([`suite::row_names`]).
    pub row_name: String,
    /// Seeds (captured launches, or one from the interface file); empty = make one up.
    pub seeds: Vec<LaunchInput>,
    /// With `--captured-ranges`: every generated case is narrowed to these bounds.
    pub scalar_bounds: Option<crate::generalise::ScalarBounds>,
    /// The files the program includes (captured, or found next to the kernel file): every
    /// parse and build uses these copies.
    pub headers: std::sync::Arc<Headers>,
}

impl Target {
    /// Options for parsing and building against the included files' copies.
    pub fn build_options(&self) -> String {
        self.headers.options(&self.options)
    }
}

/// Campaign settings shared by all kernels.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Budget of one kernel's campaign (the command gives each kernel what the ones before
    /// it left of `--budget`).
    pub budget: Budget,
    /// Random seed.
    pub seed: u64,
    /// Solve after fuzzing.
    pub solve: bool,
    /// The `cltrap` binary for worker processes; `None` = run in this process.
    pub worker: Option<PathBuf>,
    /// Watchdog per execution.
    pub watchdog: Duration,
    /// Show progress bars.
    pub progress: bool,
    /// The device.
    pub device: DeviceSelector,
    /// Bounds of symbolic execution.
    pub limits: cltrap_kernel::symbolic::Limits,
    /// Never reduce executions (`--full-launches`).
    pub full_launches: bool,
    /// Run the bounds check (Oclgrind) on every kept case of a launch small enough to be
    /// run whole: a case that reads or writes out of a buffer is a finding, not a case (a
    /// write past the guard zones corrupts another process's memory where the suite is
    /// used). Off with `--no-locate`.
    pub check_cases: bool,
}

/// `cltrap fuzz CAP --captured-ranges`: gives every target the bounds of its kernel's
/// launches in `capture`.
pub fn bound_targets(capture: &cltrap_capture::Capture, targets: &mut [Target]) {
    for t in targets {
        let launches: Vec<&LaunchRecord> = capture
            .launches
            .iter()
            .filter(|l| l.kernel == t.kernel)
            .collect();
        if let Some(first) = launches.first() {
            let p = crate::generalise::generalise(&t.kernel, &launches);
            t.scalar_bounds = Some(crate::generalise::ScalarBounds::of(&p, first));
        }
    }
}
