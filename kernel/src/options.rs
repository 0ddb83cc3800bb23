//! Turns a captured `clBuildProgram` options string into libclang arguments: macros, include
//! paths and the language version matter for parsing; driver-only and vendor options do not.

/// The clang arguments derived from a build options string, plus what was dropped (reported,
/// so a user can see why a vendor option had no effect on the analysis).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClangArgs {
    /// Arguments for libclang, after `-x cl`.
    pub args: Vec<String>,
    /// Options that were ignored.
    pub ignored: Vec<String>,
    /// The `-cl-std=` value, if given (`CL2.0`).
    pub cl_std: Option<String>,
}

/// Options clang accepts for OpenCL and that can change how the source preprocesses or parses.
const KEPT_FLAGS: &[&str] = &[
    "-cl-single-precision-constant",
    "-cl-denorms-are-zero",
    "-cl-fp32-correctly-rounded-divide-sqrt",
    "-cl-opt-disable",
    "-cl-mad-enable",
    "-cl-no-signed-zeros",
    "-cl-unsafe-math-optimizations",
    "-cl-finite-math-only",
    "-cl-fast-relaxed-math",
    "-cl-uniform-work-group-size",
    "-w",
];

/// Splits an options string like a shell would; shared with the shim's include scanner,
/// which must read `-I` the same way.
pub use cltrap_capture::options::split_options;

/// Derives libclang arguments from an OpenCL build options string.
pub fn clang_args(options: &str) -> ClangArgs {
    let words = split_options(options);
    let mut out = ClangArgs::default();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let takes_value = matches!(w.as_str(), "-D" | "-U" | "-I" | "-include");
        if takes_value {
            if let Some(v) = words.get(i + 1) {
                out.args.push(w.clone());
                out.args.push(v.clone());
            } else {
                out.ignored.push(w.clone());
            }
            i += 2;
            continue;
        }
        if w.starts_with("-D") || w.starts_with("-U") || w.starts_with("-I") {
            out.args.push(w.clone());
        } else if let Some(v) = w.strip_prefix("-cl-std=") {
            out.cl_std = Some(v.to_string());
            out.args.push(w.clone());
        } else if KEPT_FLAGS.contains(&w.as_str()) {
            out.args.push(w.clone());
        } else {
            out.ignored.push(w.clone());
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_macros_includes_and_std_and_drops_vendor_options() {
        let a = clang_args("-D N=4 -DM=\"a b\" -I /x/y -Iinc -cl-std=CL2.0 -cl-nv-verbose -Werror -cl-fast-relaxed-math");
        assert_eq!(
            a.args,
            [
                "-D",
                "N=4",
                "-DM=a b",
                "-I",
                "/x/y",
                "-Iinc",
                "-cl-std=CL2.0",
                "-cl-fast-relaxed-math"
            ]
        );
        assert_eq!(a.ignored, ["-cl-nv-verbose", "-Werror"]);
        assert_eq!(a.cl_std.as_deref(), Some("CL2.0"));
    }
}
