//! The cltrap analyzer library: everything `cltrap` does after (or around) a capture.
//!
//! - [`list`] and [`show`] describe captured launches for people;
//! - [`replay`] re-runs captured launches and checks them against what the application saw;
//! - [`executor`] is the reusable "run this launch on that device" engine that replay and
//!   every later analysis (coverage, schedules, fuzzing, mutation) are built on;
//! - [`schedules`] is `cltrap replay --schedules`: permuted work-group schedules find races;
//! - [`cover`] is `cltrap cover`: branch, loop-boundary and barrier coverage of replayed
//!   launches, and the reports (terminal, JSON, LCOV, HTML) the live-app path writes too;
//! - [`variant`] builds instrumented variants of captured programs, once per program;
//! - [`check`] is `cltrap check`: races, out-of-bounds and uninitialised accesses and
//!   divergent barriers on the kernel's own lines: the instrumented kernel on the real device
//!   (`kernel::sanitize`), with Oclgrind for what it cannot check;
//! - [`launcher`] is `cltrap run`: starts an application with the capture shim loaded;
//! - [`generalise`] says how a kernel's launches vary; [`export`] hands launches to GPUVerify
//!   and writes standalone reproducers;
//! - [`values`], [`compare`], [`ids`] and [`site`] are the small pure pieces they share.
//!
//! What this crate is not for: capturing. The shim (`libcltrap.so`) captures; the only
//! thing shared with it is the capture format of `cltrap-capture`.
//! Architecture invariant: only [`executor`] calls OpenCL.

pub mod campaign;
pub mod check;
pub mod compact;
pub mod compare;
pub mod cover;
pub mod damage;
pub mod executor;
pub mod export;
pub mod fuzz;
pub mod generalise;
pub mod headers;
pub mod heap;
pub mod html;
pub mod ids;
pub mod launcher;
pub mod list;
pub mod mutate;
pub mod orphan;
pub mod param_types;
pub mod replay;
pub mod replay_campaign;
pub mod schedules;
pub mod show;
pub mod site;
pub mod slurm;
pub mod solve;
pub mod values;
pub mod variant;
