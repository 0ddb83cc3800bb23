//! API misuse a capture shows without running anything, and the rule for which of Oclgrind's
//! API errors are findings of the launch.
//!
//! Why only these: a warning must be a fact about the launch, not a guess. The capture knows
//! what the enqueue returned and the NDRange the application asked for; the OpenCL
//! specification says exactly when a local size that does not divide the global size is an
//! error. Whatever needs the device's limits (which the capture does not keep) is left to
//! Oclgrind's API checks, which run the launch through a real OpenCL 1.2 implementation.

use super::finding::{Diagnostic, Kind};
use super::oclgrind::api_function;
use cltrap_capture::LaunchRecord;

/// Who reports what the capture itself shows.
pub const CAPTURE: &str = "capture";

/// Whether build options ask for OpenCL C 2.0 or later (`-cl-std=CL2.0`, `CL3.0`), the only
/// programs whose launches may have non-uniform work-groups.
fn allows_non_uniform(options: &str) -> bool {
    options.split_whitespace().any(|w| {
        w.strip_prefix("-cl-std=CL")
            .and_then(|v| v.split('.').next())
            .and_then(|major| major.parse::<u32>().ok())
            .is_some_and(|m| m >= 2)
    }) && !options.contains("-cl-uniform-work-group-size")
}

fn warning(l: &LaunchRecord, message: String) -> Diagnostic {
    Diagnostic {
        kind: Kind::ApiMisuse,
        message,
        detail: vec![],
        kernel: l.kernel.clone(),
        first: None,
        second: None,
        target: None,
        by: CAPTURE.into(),
    }
}

/// What the capture shows about launch `l` of a program built with `options`: an enqueue
/// that returned an error, and a local size that does not divide the global size in a
/// program that OpenCL 1.2 rules govern (`CL_INVALID_WORK_GROUP_SIZE` there).
pub fn capture_misuse(l: &LaunchRecord, options: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if l.status != 0 {
        out.push(warning(
            l,
            format!(
                "the application's enqueue returned {}: the kernel did not run",
                crate::executor::error_name(l.status)
            ),
        ));
    }
    if let Some(local) = &l.local_size {
        if !allows_non_uniform(options) {
            for (d, (g, w)) in l.global_size.iter().zip(local).enumerate() {
                if *w > 0 && g % w != 0 {
                    out.push(warning(
                        l,
                        format!(
                            "local size {w} does not divide global size {g} in dimension {d}: \
                             OpenCL 1.2 rejects this launch (CL_INVALID_WORK_GROUP_SIZE), and so \
                             does any device for a program not built with -cl-std=CL2.0 or later"
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// Oclgrind's API errors about the launch itself (its NDRange and arguments) are findings of
/// that launch; errors about the worker's other calls are not (they show as its failure).
/// Keeps those, naming the launch's kernel on them, and drops the rest.
pub fn keep_launch_errors(diags: &mut Vec<Diagnostic>, kernel: &str) {
    diags.retain_mut(|d| {
        if !d.kernel.is_empty() {
            return true;
        }
        let about_launch = d.kind == Kind::ApiMisuse
            && matches!(
                api_function(d),
                Some("clEnqueueNDRangeKernel" | "clEnqueueTask" | "clSetKernelArg")
            );
        if about_launch {
            d.kernel = kernel.to_string();
        }
        about_launch
    });
}

/// Takes out of `diags` Oclgrind's API errors that are limits of its own simulated device
/// (`total work-group size (4096) exceeds device maximum of 1024`) and returns why the launch
/// could not be checked there. Call it only for a launch the captured device ran: the
/// application's device accepted the NDRange, so the limit is the engine's, not a misuse.
pub fn take_engine_limits(diags: &mut Vec<Diagnostic>) -> Option<String> {
    let is_limit = |d: &Diagnostic| {
        d.kind == Kind::ApiMisuse
            && d.by != CAPTURE
            && std::iter::once(&d.message)
                .chain(&d.detail)
                .any(|t| t.contains("exceeds device maximum"))
    };
    let first = diags.iter().find(|d| is_limit(d))?.message.clone();
    diags.retain(|d| !is_limit(d));
    Some(format!(
        "Oclgrind cannot run this launch, which the captured device ran: {first} (a limit of Oclgrind's simulated device, not of the application)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oclgrinds_device_limits_are_taken_out_as_the_engines_own() {
        let d = |message: &str, by: &str| Diagnostic {
            kind: Kind::ApiMisuse,
            message: message.into(),
            detail: vec![],
            kernel: "k".into(),
            first: None,
            second: None,
            target: None,
            by: by.into(),
        };
        let limit = "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE: total work-group size (4096) exceeds device maximum of 1024";
        let divide = "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE: local_work_size[0]=16 does not divide global_work_size[0]=60";
        let mut diags = vec![d(limit, "oclgrind"), d(divide, "oclgrind")];
        let why = take_engine_limits(&mut diags).expect("a limit");
        assert!(why.contains("exceeds device maximum of 1024"), "{why}");
        assert_eq!(diags, vec![d(divide, "oclgrind")]);
        assert_eq!(take_engine_limits(&mut diags), None);
    }

    #[test]
    fn only_programs_of_opencl_c_2_or_later_may_have_partial_groups() {
        assert!(!allows_non_uniform(""));
        assert!(!allows_non_uniform("-cl-std=CL1.2 -DX=1"));
        assert!(allows_non_uniform("-cl-std=CL2.0"));
        assert!(allows_non_uniform("-DX -cl-std=CL3.0"));
        assert!(!allows_non_uniform(
            "-cl-std=CL2.0 -cl-uniform-work-group-size"
        ));
    }
}
