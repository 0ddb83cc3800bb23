//! What a standalone reproducer of one launch does, as data ([`Plan`]): which memory objects
//! to create with which initial contents, how each argument is set, which outputs to compare
//! with which recorded bytes. Built from the same [`LaunchInput::from_record`] as `cltrap
//! replay`, so a reproducer restores exactly what a replay restores; rendered as C by
//! [`super::reproducer_c`] and as pyopencl by [`super::reproducer_py`], which therefore agree.

use super::{program_text, write_file, ExportError};
use crate::executor::{Expected, InputArg, LaunchInput};
use crate::values::{pointee_type, Scalar};
use cltrap_capture::{ArgRecord, Capture, ImageRecord, LaunchRecord, ProgramOrigin};
use std::path::Path;

/// The kernel-access bits of `cl_mem_flags` (read-write, write-only, read-only): host-pointer
/// flags of the application make no sense in a fresh program.
const ACCESS_BITS: u64 = 1 | 2 | 4;

/// The flags a reproducer creates a memory object with: the application's access bits, or
/// `CL_MEM_READ_WRITE` (OpenCL's default) when it gave none, so renderers print them as is.
fn access_flags(flags: u64) -> u64 {
    match flags & ACCESS_BITS {
        0 => 1,
        bits => bits,
    }
}

/// How the comparison prints an element: by the argument's element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementKind {
    /// IEEE float of the element size (4 or 8 bytes).
    Float,
    /// Signed integer of the element size.
    Signed,
    /// Unsigned integer of the element size.
    Unsigned,
    /// Bytes in hex.
    Bytes,
}

impl ElementKind {
    /// The letter the generated programs switch on.
    pub fn letter(self) -> char {
        match self {
            ElementKind::Float => 'f',
            ElementKind::Signed => 'i',
            ElementKind::Unsigned => 'u',
            ElementKind::Bytes => 'x',
        }
    }
}

/// One memory object to create.
#[derive(Debug, Clone, PartialEq)]
pub enum MemObject {
    /// A buffer with its initial contents in `mem<id>.bin`.
    Buffer { id: u64, flags: u64, size: u64 },
    /// A sub-buffer of buffer `parent`.
    SubBuffer {
        id: u64,
        parent: u64,
        origin: u64,
        size: u64,
        flags: u64,
    },
    /// An image with its initial pixels in `mem<id>.bin`.
    Image {
        id: u64,
        flags: u64,
        image: ImageRecord,
    },
}

/// How one argument is set.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanArg {
    /// By-value bytes.
    Bytes(Vec<u8>),
    /// `__local` of this many bytes.
    Local(u64),
    /// A NULL buffer.
    Null,
    /// Memory object `id`.
    Mem(u64),
    /// A sampler.
    Sampler {
        normalized: bool,
        addressing: u32,
        filter: u32,
    },
}

/// An output to compare after the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Argument index.
    pub index: usize,
    /// `argument 2 (out)`.
    pub label: String,
    /// The memory object to read.
    pub mem: u64,
    /// Bytes to compare (the recorded size).
    pub size: u64,
    /// Element size for the report.
    pub element: usize,
    /// Element type for the report.
    pub kind: ElementKind,
    /// `arg<I>.expected.bin`.
    pub file: String,
}

/// One `clCompileProgram` input of a linked program.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// Its OpenCL C text (`unit<I>.cl`).
    pub source: String,
    /// `clCompileProgram` options.
    pub options: String,
    /// `(include name, text)` of the headers passed as embedded programs
    /// (`unit<I>.header<J>.h`).
    pub headers: Vec<(String, String)>,
}

/// The units of a linked program whose inputs are all sources (`Err` with the reason else).
fn units(
    capture: &Capture,
    origin: &ProgramOrigin,
) -> Result<Result<Vec<Unit>, String>, ExportError> {
    let ProgramOrigin::Linked { inputs } = origin else {
        return Ok(Ok(Vec::new()));
    };
    let mut out = Vec::new();
    // One budget for the texts of every input.
    let budget = &mut cltrap_capture::reader::TextBudget::default();
    for input in inputs {
        let ProgramOrigin::Source { sources } = input.origin.as_ref() else {
            return Ok(Err(
                "an input of its clLinkProgram was not compiled from source".into(),
            ));
        };
        let source = capture
            .source_texts_in(sources.iter().map(String::as_str), budget)?
            .concat();
        // Built by the user's driver as they are: confined as every text a compiler sees.
        let confined = crate::headers::without_escaping_includes;
        let names = input.headers.iter().map(|(_, h)| h.as_str());
        let texts = capture.source_texts_in(names, budget)?;
        let headers: Vec<(String, String)> = (input.headers.iter())
            .zip(texts)
            .map(|((name, _), t)| (name.clone(), confined(&t)))
            .collect();
        out.push(Unit {
            source: confined(&source),
            options: input.compile_options.clone(),
            headers,
        });
    }
    Ok(Ok(out))
}

/// Everything a reproducer does, as data: the generated C and Python read only this.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Launch id in the capture.
    pub id: u64,
    /// Kernel name.
    pub kernel: String,
    /// OpenCL C text (headers inlined).
    pub source: String,
    /// Build options (for a linked program: the `clLinkProgram` options).
    pub options: String,
    /// For a program linked from separately compiled units (`clCompileProgram` +
    /// `clLinkProgram`): the units, compiled each with its own options and headers, then linked.
    /// Empty for a program built from source.
    pub units: Vec<Unit>,
    /// Device the application used (for the report).
    pub captured_on: String,
    /// NDRange.
    pub work_dim: u32,
    /// `None` = NULL offset.
    pub global_offset: Option<Vec<u64>>,
    /// Global size.
    pub global_size: Vec<u64>,
    /// `None` = NULL local size.
    pub local_size: Option<Vec<u64>>,
    /// Memory objects in creation order (parents before their sub-buffers).
    pub objects: Vec<MemObject>,
    /// Initial contents per object id (buffers and images that are not sub-buffers).
    pub contents: Vec<(u64, Vec<u8>)>,
    /// Arguments in order.
    pub args: Vec<PlanArg>,
    /// Outputs to compare, with their expected bytes.
    pub checks: Vec<(Check, Vec<u8>)>,
    /// Outputs that cannot be compared and why (only a digest recorded, ...).
    pub unchecked: Vec<String>,
    /// What the program prints before running: inputs that are stand-ins for what the
    /// capture did not record.
    pub notes: Vec<String>,
}

/// A copy of argument `i`'s contents for the reproducer's data files. Why checked: a capture
/// of a few kilobytes may claim thousands of buffers of zeros (stand-ins of up to 1 GiB
/// each), and every copy is filled at once: each copy of 16 MiB or more must fit in the
/// memory still available, so their sum cannot run the machine out of memory.
fn copy_content(l: &LaunchRecord, i: usize, bytes: &[u8]) -> Result<Vec<u8>, ExportError> {
    if bytes.len() >= 16 << 20 && !cltrap_capture::bulk::has_room(bytes.len() as u64) {
        return Err(unsupported(
            l,
            format!(
                "argument {i}'s contents ({} bytes) do not fit in the memory still available",
                bytes.len()
            ),
        ));
    }
    Ok(bytes.to_vec())
}

fn unsupported(l: &LaunchRecord, why: impl Into<String>) -> ExportError {
    ExportError::Unsupported {
        id: l.id,
        // The name as a person can read it in one line (it may be anything in a capture).
        kernel: crate::list::clip(&l.kernel, 64),
        why: why.into(),
    }
}

fn element_of(type_name: &str) -> (usize, ElementKind) {
    match pointee_type(type_name) {
        Some(t) => {
            let kind = match t.scalar {
                Scalar::F32 | Scalar::F64 => ElementKind::Float,
                Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => ElementKind::Signed,
                Scalar::Bool | Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => {
                    ElementKind::Unsigned
                }
                Scalar::F16 => ElementKind::Bytes,
            };
            (t.scalar.size(), kind)
        }
        None => (1, ElementKind::Bytes),
    }
}

fn image_element(image: &ImageRecord) -> (usize, ElementKind) {
    match crate::values::image_channel_type(image.channel_data_type) {
        Some((Scalar::F32, _)) => (4, ElementKind::Float),
        Some((s @ (Scalar::I8 | Scalar::I16 | Scalar::I32), false)) => {
            (s.size(), ElementKind::Signed)
        }
        Some((s, _)) if s != Scalar::F16 => (s.size(), ElementKind::Unsigned),
        _ => (1, ElementKind::Bytes),
    }
}

/// Builds the plan of launch `id`: refuses launches a standalone program cannot redo
/// (programs not built from source, SVM pointers, unset arguments, unrecorded inputs).
pub fn plan(capture: &Capture, id: u64) -> Result<Plan, ExportError> {
    let l = capture.launch(id)?;
    // The name is written into C and Python code: only an identifier is.
    if let Some(why) = super::kernel_name_problem(&l.kernel) {
        return Err(unsupported(l, why));
    }
    let program = capture.program(&l.program)?;
    if !matches!(
        program.origin,
        ProgramOrigin::Source { .. } | ProgramOrigin::Linked { .. }
    ) {
        return Err(unsupported(
            l,
            "a standalone reproducer rebuilds programs from OpenCL C source; this one was created from a binary, SPIR-V or built-in kernels",
        ));
    }
    let units = units(capture, &program.origin)?.map_err(|why| unsupported(l, why))?;
    let source = program_text(capture, &program, "program.cl")?
        .map_err(|why| unsupported(l, why.to_string()))?;
    let input = LaunchInput::from_record(capture, l).map_err(|e| unsupported(l, e.to_string()))?;
    let expected =
        LaunchInput::expected_outputs(capture, l).map_err(|e| unsupported(l, e.to_string()))?;
    let mut objects = Vec::new();
    let mut contents = Vec::new();
    let mut args = Vec::new();
    let mut arg_mem = Vec::new();
    // Arguments without an identity of their own get fresh ids above every captured one.
    let mut fresh = l
        .args
        .iter()
        .filter_map(|a| match a {
            ArgRecord::Buffer { mem, .. } | ArgRecord::Image { mem, .. } => Some(*mem),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        + 1;
    let known = |objects: &Vec<MemObject>, m: u64| {
        objects.iter().any(|o| {
            matches!(o, MemObject::Buffer { id, .. } | MemObject::SubBuffer { id, .. } | MemObject::Image { id, .. } if *id == m)
        })
    };
    // Parents first: a sub-buffer's parent is created before any sub-buffer.
    let mut order: Vec<usize> = (0..input.args.len()).collect();
    order.sort_by_key(|i| matches!(input.args[*i], InputArg::SubBuffer { .. }));
    let mut per_arg: Vec<Option<PlanArg>> = vec![None; input.args.len()];
    for i in order {
        let a = &input.args[i];
        let mut id_of = |m: &Option<u64>| {
            m.unwrap_or_else(|| {
                fresh += 1;
                fresh - 1
            })
        };
        per_arg[i] = Some(match a {
            InputArg::Scalar(b) => PlanArg::Bytes(b.clone()),
            InputArg::Local(n) => PlanArg::Local(*n),
            InputArg::NullBuffer => PlanArg::Null,
            InputArg::Buffer { mem, flags, bytes } => {
                let id = id_of(mem);
                if !known(&objects, id) {
                    objects.push(MemObject::Buffer {
                        id,
                        flags: access_flags(*flags),
                        size: bytes.len() as u64,
                    });
                    contents.push((id, copy_content(l, i, bytes)?));
                }
                PlanArg::Mem(id)
            }
            InputArg::SubBuffer {
                mem,
                parent,
                origin,
                size,
                flags,
            } => {
                let id = id_of(mem);
                if !known(&objects, id) {
                    objects.push(MemObject::SubBuffer {
                        id,
                        parent: *parent,
                        origin: *origin,
                        size: *size,
                        flags: access_flags(*flags),
                    });
                }
                PlanArg::Mem(id)
            }
            InputArg::Image {
                mem,
                flags,
                image,
                bytes,
            } => {
                if image.image_type == 0x10F6 {
                    return Err(unsupported(
                        l,
                        format!("argument {i} is a 1-D image made from a buffer"),
                    ));
                }
                let id = id_of(mem);
                if !known(&objects, id) {
                    objects.push(MemObject::Image {
                        id,
                        flags: access_flags(*flags),
                        image: image.clone(),
                    });
                    contents.push((id, copy_content(l, i, bytes)?));
                }
                PlanArg::Mem(id)
            }
            InputArg::Sampler {
                normalized_coords,
                addressing_mode,
                filter_mode,
            } => PlanArg::Sampler {
                normalized: *normalized_coords,
                addressing: *addressing_mode,
                filter: *filter_mode,
            },
        });
    }
    for (i, a) in per_arg.into_iter().enumerate() {
        let a = a.ok_or_else(|| unsupported(l, format!("argument {i} could not be planned")))?;
        arg_mem.push(match &a {
            PlanArg::Mem(m) => Some(*m),
            _ => None,
        });
        args.push(a);
    }
    let mut checks = Vec::new();
    let mut unchecked = Vec::new();
    for (i, e) in expected.into_iter().enumerate() {
        let (Some(e), Some(Some(mem))) = (e, arg_mem.get(i)) else {
            continue;
        };
        let info = l.args[i].info();
        let label = if info.name.is_empty() {
            format!("argument {i}")
        } else {
            format!("argument {i} ({})", info.name)
        };
        match e {
            Expected::Bytes(bytes) => {
                let (element, kind) = match &l.args[i] {
                    ArgRecord::Image { image, .. } => image_element(image),
                    _ => element_of(&info.type_name),
                };
                checks.push((
                    Check {
                        index: i,
                        label,
                        mem: *mem,
                        size: bytes.len() as u64,
                        element,
                        kind,
                        file: format!("arg{i}.expected.bin"),
                    },
                    bytes,
                ));
            }
            Expected::Digest(..) => unchecked.push(format!(
                "{label}: only a digest of its result was recorded (buffer mode `hash`)"
            )),
            Expected::Unknown(why) => unchecked.push(format!("{label}: not recorded ({why})")),
        }
    }
    let notes = input
        .stand_ins
        .iter()
        .map(|i| {
            format!(
                "argument {i} is write-only and its contents before the launch were not recorded: it starts as zeros (where the kernel does not overwrite it, `cltrap replay` skips the launch instead)"
            )
        })
        .collect();
    let d = &l.device;
    Ok(Plan {
        id,
        kernel: l.kernel.clone(),
        source,
        options: program.options.clone(),
        units,
        captured_on: format!("{} ({})", d.name, d.platform),
        work_dim: l.work_dim,
        global_offset: l.global_offset.clone(),
        global_size: l.global_size.clone(),
        local_size: l.local_size.clone(),
        objects,
        contents,
        args,
        checks,
        unchecked,
        notes,
    })
}

/// Writes the data files every reproducer variant reads: `program.cl`, `mem<M>.bin`,
/// `arg<I>.expected.bin`.
pub fn write_data(plan: &Plan, dir: &Path) -> Result<(), ExportError> {
    // Refused before anything is written when the files would not fit on the folder's
    // filesystem (a capture may claim gigabytes of zeros in a few kilobytes).
    let total: u64 = plan
        .contents
        .iter()
        .map(|(_, b)| b.len() as u64)
        .chain(plan.checks.iter().map(|(_, b)| b.len() as u64))
        .sum();
    if let Some(free) = cltrap_capture::spool::free_bytes(dir).filter(|&f| total > f) {
        return Err(ExportError::NoRoom {
            dir: dir.to_path_buf(),
            needed: total,
            free,
        });
    }
    write_file(dir, "program.cl", plan.source.as_bytes())?;
    for (i, u) in plan.units.iter().enumerate() {
        write_file(dir, &format!("unit{i}.cl"), u.source.as_bytes())?;
        for (j, (_, text)) in u.headers.iter().enumerate() {
            write_file(dir, &format!("unit{i}.header{j}.h"), text.as_bytes())?;
        }
    }
    for (id, bytes) in &plan.contents {
        write_file(dir, &format!("mem{id}.bin"), bytes)?;
    }
    for (c, bytes) in &plan.checks {
        write_file(dir, &c.file, bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_kinds_follow_the_pointee_type() {
        assert_eq!(element_of("float*"), (4, ElementKind::Float));
        assert_eq!(element_of("int4*"), (4, ElementKind::Signed));
        assert_eq!(element_of("uchar*"), (1, ElementKind::Unsigned));
        assert_eq!(element_of("struct s*"), (1, ElementKind::Bytes));
    }
}
