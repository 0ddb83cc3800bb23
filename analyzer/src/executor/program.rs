//! Rebuilding a captured program on the session's device: once, for many runs.

use super::cl::{info_string, Program};
use super::{cl_err, ExecError, Session};
use crate::headers::Headers;
use cltrap_capture::reader::TextBudget;
use cltrap_capture::{Capture, CompiledInput, ProgramOrigin, ProgramRecord};
use opencl_sys::{cl_program, CL_PROGRAM_BUILD_LOG};
use std::ffi::{CStr, CString};

/// How to deviate from the captured program when rebuilding it.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Replaces the program's source text (all source strings, concatenated) — e.g. an
    /// instrumented or mutated kernel. Only for programs created from source.
    pub source: Option<String>,
    /// Appended to the captured build options (e.g. `-cl-opt-disable`, `-D COVERAGE`).
    pub extra_options: String,
}

/// A program built for the session's device.
#[derive(Debug)]
pub struct BuiltProgram {
    pub(crate) program: Program,
}

// SAFETY: see `Session`: a built program is only read (kernels are created from it), which
// OpenCL allows from any thread.
unsafe impl Send for BuiltProgram {}

/// The build log, trimmed to what a person reads: the last 40 lines, at most 4000 chars.
fn trimmed_log(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let keep = &lines[lines.len().saturating_sub(40)..];
    let mut s = keep.join("\n");
    if s.len() > 4000 {
        let cut = s.len() - 4000;
        let cut = (cut..s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(s.len());
        s = format!("…{}", &s[cut..]);
    }
    if s.is_empty() {
        "(the compiler gave no log)".into()
    } else {
        s
    }
}

fn join_options(a: &str, b: &str) -> Result<CString, ExecError> {
    let s = match (a.trim().is_empty(), b.trim().is_empty()) {
        (_, true) => a.to_string(),
        (true, false) => b.to_string(),
        (false, false) => format!("{a} {b}"),
    };
    CString::new(s).map_err(|_| ExecError::BadOptions)
}

impl Session {
    /// The device binary of a built program (`CL_PROGRAM_BINARIES`), e.g. to cache compiled
    /// mutants across worker processes and rebuild them with `clCreateProgramWithBinary`.
    pub fn program_binary(&self, program: &BuiltProgram) -> Result<Vec<u8>, ExecError> {
        let info =
            cl3::program::get_program_info(program.program.raw(), opencl_sys::CL_PROGRAM_BINARIES)
                .map_err(cl_err("clGetProgramInfo(CL_PROGRAM_BINARIES)"))?;
        match info {
            cl3::info_type::InfoType::VecVecUchar(mut v) if !v.is_empty() => Ok(v.swap_remove(0)),
            _ => Err(ExecError::Cl {
                what: "clGetProgramInfo(CL_PROGRAM_BINARIES)".into(),
                code: "no binary".into(),
            }),
        }
    }

    fn log(&self, program: cl_program) -> String {
        let raw = cl3::program::get_program_build_data(program, self.device, CL_PROGRAM_BUILD_LOG)
            .map(info_string)
            .unwrap_or_default();
        trimmed_log(&raw)
    }

    fn build_failure(&self, program: cl_program, code: i32, what: &str) -> ExecError {
        match code {
            opencl_sys::CL_BUILD_PROGRAM_FAILURE
            | opencl_sys::CL_COMPILE_PROGRAM_FAILURE
            | opencl_sys::CL_LINK_PROGRAM_FAILURE
            | opencl_sys::CL_INVALID_BUILD_OPTIONS
            | opencl_sys::CL_INVALID_COMPILER_OPTIONS
            | opencl_sys::CL_INVALID_LINKER_OPTIONS
            | opencl_sys::CL_INVALID_BINARY => {
                let mut log = self.log(program);
                if log.starts_with("(the compiler") {
                    log = format!("{what}: {}", super::cl::error_name(code));
                }
                ExecError::Build {
                    device: self.info().name.clone(),
                    log,
                }
            }
            c => cl_err(what)(c),
        }
    }

    /// Builds OpenCL C `source` with `options` (used for overridden sources and tests).
    pub fn build_source(&self, source: &str, options: &str) -> Result<BuiltProgram, ExecError> {
        self.build_from_sources(&[source], options)
    }

    fn build_from_sources(
        &self,
        sources: &[&str],
        options: &str,
    ) -> Result<BuiltProgram, ExecError> {
        let program = Program(
            super::arrays::create_program_with_source(self.context.raw(), sources)
                .map_err(cl_err("clCreateProgramWithSource"))?,
        );
        let opts = join_options(options, self.guard_options())?;
        cl3::program::build_program(
            program.raw(),
            &[self.device],
            &opts,
            None,
            std::ptr::null_mut(),
        )
        .map_err(|c| self.build_failure(program.raw(), c, "clBuildProgram"))?;
        Ok(BuiltProgram { program })
    }

    /// Rebuilds a captured program; blobs (sources, binaries, headers) come from `capture`,
    /// included files from their captured copies (see [`crate::headers`]).
    pub fn build(
        &self,
        capture: &Capture,
        record: &ProgramRecord,
        opts: &BuildOptions,
    ) -> Result<BuiltProgram, ExecError> {
        let headers = Headers::from_capture(capture, &record.includes)
            .map_err(|e| ExecError::Headers(e.to_string()))?;
        let options = join_options(&headers.options(&record.options), &opts.extra_options)?;
        let options_s = options.to_string_lossy().into_owned();
        if let Some(src) = &opts.source {
            // The rewritten text of the program's one unit, built as its compile + link did.
            return match record.source_unit() {
                Ok(unit) if unit.link_options.is_some() => {
                    let unit_options =
                        join_options(&headers.options(&unit.build_options()), &opts.extra_options)?;
                    self.build_from_sources(
                        &[headers.source(src).as_str()],
                        &unit_options.to_string_lossy(),
                    )
                }
                Ok(_) => self.build_from_sources(&[headers.source(src).as_str()], &options_s),
                Err(what) => Err(ExecError::NotReplayable(format!(
                    "an overridden source needs a program of one source unit, not {what}"
                ))),
            };
        }
        match &record.origin {
            ProgramOrigin::Source { sources } => {
                let texts: Vec<String> = capture
                    .source_texts(sources.iter().map(String::as_str))?
                    .iter()
                    .map(|t| headers.source(t))
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                self.build_from_sources(&refs, &options_s)
            }
            ProgramOrigin::Binary { .. } | ProgramOrigin::Il { .. } => {
                let budget = &mut TextBudget::default();
                let program =
                    self.create_non_source(capture, record, &record.origin, &headers, budget)?;
                cl3::program::build_program(
                    program.raw(),
                    &[self.device],
                    &options,
                    None,
                    std::ptr::null_mut(),
                )
                .map_err(|c| self.build_failure(program.raw(), c, "clBuildProgram"))?;
                Ok(BuiltProgram { program })
            }
            ProgramOrigin::BuiltIn { kernel_names } => Err(ExecError::NotReplayable(format!(
                "built-in kernels ({kernel_names}) exist only on the capturing device"
            ))),
            ProgramOrigin::Linked { inputs } => {
                self.build_linked(capture, record, inputs, &options, &headers)
            }
        }
    }

    /// A program object from a binary (the one for a device of the same name when there are
    /// several) or from SPIR-V.
    /// `budget`: what the texts of the whole program may still hold (the inputs of a linked
    /// program share it).
    fn create_non_source(
        &self,
        capture: &Capture,
        record: &ProgramRecord,
        origin: &ProgramOrigin,
        headers: &Headers,
        budget: &mut TextBudget,
    ) -> Result<Program, ExecError> {
        match origin {
            ProgramOrigin::Binary { binaries } => {
                self.may_run_binary("a binary")?;
                let pick = record
                    .devices
                    .iter()
                    .position(|d| *d == self.info().name)
                    .filter(|i| *i < binaries.len())
                    .unwrap_or(0);
                let hash = binaries
                    .get(pick)
                    .ok_or_else(|| ExecError::NotReplayable("the program has no binary".into()))?;
                let bin = capture.blob(hash)?;
                let p = super::arrays::create_program_with_binary(self.context.raw(), &[self.device], &[&bin])
                    .map_err(|c| match c {
                        opencl_sys::CL_INVALID_BINARY => ExecError::Build {
                            device: self.info().name.clone(),
                            log: "the device does not accept the captured program binary (it was built for another device or driver)".into(),
                        },
                        c => cl_err("clCreateProgramWithBinary")(c),
                    })?;
                Ok(Program(p))
            }
            ProgramOrigin::Il { il } => {
                self.may_run_binary("SPIR-V")?;
                let bytes = capture.blob(il)?;
                Ok(Program(
                    cl3::program::create_program_with_il(self.context.raw(), &bytes).map_err(
                        cl_err("clCreateProgramWithIL (does the device support SPIR-V?)"),
                    )?,
                ))
            }
            ProgramOrigin::Source { sources } => {
                let texts: Vec<String> = capture
                    .source_texts_in(sources.iter().map(String::as_str), budget)?
                    .iter()
                    .map(|t| headers.source(t))
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                Ok(Program(
                    super::arrays::create_program_with_source(self.context.raw(), &refs)
                        .map_err(cl_err("clCreateProgramWithSource"))?,
                ))
            }
            ProgramOrigin::BuiltIn { kernel_names } => Err(ExecError::NotReplayable(format!(
                "built-in kernels ({kernel_names}) exist only on the capturing device"
            ))),
            ProgramOrigin::Linked { .. } => Err(ExecError::NotReplayable(
                "a linked program cannot be an input of another link".into(),
            )),
        }
    }

    fn build_linked(
        &self,
        capture: &Capture,
        record: &ProgramRecord,
        inputs: &[CompiledInput],
        options: &CStr,
        files: &Headers,
    ) -> Result<BuiltProgram, ExecError> {
        if inputs.is_empty() {
            return Err(ExecError::NotReplayable(
                "the linked program has no inputs".into(),
            ));
        }
        let mut compiled = Vec::new();
        // One budget for the texts of every input and their headers.
        let budget = &mut TextBudget::default();
        for input in inputs {
            let program = self.create_non_source(capture, record, &input.origin, files, budget)?;
            if !matches!(*input.origin, ProgramOrigin::Binary { .. }) {
                let mut headers = Vec::new();
                let mut names = Vec::new();
                let digests = input.headers.iter().map(|(_, h)| h.as_str());
                let texts = capture.source_texts_in(digests, budget)?;
                for ((name, _), text) in input.headers.iter().zip(texts) {
                    let text = files.source(&text);
                    headers.push(Program(
                        super::arrays::create_program_with_source(
                            self.context.raw(),
                            &[text.as_str()],
                        )
                        .map_err(cl_err("clCreateProgramWithSource (header)"))?,
                    ));
                    names.push(CString::new(name.as_str()).map_err(|_| ExecError::BadOptions)?);
                }
                let raw_headers: Vec<cl_program> = headers.iter().map(Program::raw).collect();
                let name_refs: Vec<&CStr> = names.iter().map(CString::as_c_str).collect();
                let copts =
                    join_options(&files.options(&input.compile_options), self.guard_options())?;
                super::arrays::compile_program(
                    program.raw(),
                    &[self.device],
                    &copts,
                    &raw_headers,
                    &name_refs,
                )
                .map_err(|c| self.build_failure(program.raw(), c, "clCompileProgram"))?;
            }
            compiled.push(program);
        }
        let raw: Vec<cl_program> = compiled.iter().map(Program::raw).collect();
        // SAFETY: all inputs were created in this context for this device.
        let linked = unsafe {
            cl3::program::link_program(
                self.context.raw(),
                &[self.device],
                options,
                &raw,
                None,
                std::ptr::null_mut(),
            )
        }
        .map_err(|c| match c {
            opencl_sys::CL_LINK_PROGRAM_FAILURE => ExecError::Build {
                device: self.info().name.clone(),
                log: "clLinkProgram failed: CL_LINK_PROGRAM_FAILURE".into(),
            },
            c => cl_err("clLinkProgram")(c),
        })?;
        Ok(BuiltProgram {
            program: Program(linked),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_trimmed_to_their_tail() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let t = trimmed_log(&long);
        assert!(t.starts_with("line 60") && t.ends_with("line 99"), "{t}");
        assert_eq!(trimmed_log("\n \n"), "(the compiler gave no log)");
    }

    #[test]
    fn options_join_without_stray_spaces() {
        assert_eq!(join_options("-DA", "").unwrap().to_str().unwrap(), "-DA");
        assert_eq!(join_options("", "-DB").unwrap().to_str().unwrap(), "-DB");
        assert_eq!(
            join_options("-DA", "-DB").unwrap().to_str().unwrap(),
            "-DA -DB"
        );
        assert!(join_options("a\0b", "").is_err());
    }
}
