//! The cltrap analyzer library: everything `cltrap` does after (or around) a capture.
//!
//! - [`list`] and [`show`] describe captured launches for people;
//! - [`replay`] re-runs captured launches and checks them against what the application saw;
//! - [`executor`] is the reusable "run this launch on that device" engine that replay and
//!   every later analysis (coverage, schedules, fuzzing, mutation) are built on;
//! - [`launcher`] is `cltrap run`: starts an application with the capture shim loaded;
//! - [`values`], [`compare`], [`ids`] and [`site`] are the small pure pieces they share.
//!
//! What this crate is not for: capturing. The shim (`libcltrap.so`) captures; the only
//! thing shared with it is the capture format of `cltrap-capture`.
//! Architecture invariant: only [`executor`] calls OpenCL.

pub mod compare;
pub mod executor;
pub mod ids;
pub mod launcher;
pub mod list;
pub mod replay;
pub mod show;
pub mod site;
pub mod values;
