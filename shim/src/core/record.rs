//! Program records: each program's `ProgramRecord` is written once (as a JSON blob) and its
//! hash cached on the program, so thousands of launches share one record.

use super::info;
use super::track::{lock, tables, Origin, Program, Scanned};
use crate::Next;
use cltrap_capture::{
    CaptureWriter, CompiledInput, Hash, IncludedFile, Includes, ProgramOrigin, ProgramRecord,
    WriteError,
};
use opencl_sys::*;

/// The blob hash of `program`'s record, plus reasons it may not be replayable. `kernel`: the
/// kernel whose launch asks (named when the program turns out to be a binary).
pub fn program_hash(
    next: &Next,
    writer: &CaptureWriter,
    program: usize,
    kernel: &str,
) -> Result<(Hash, Vec<String>), WriteError> {
    let mut notes = Vec::new();
    let known = {
        let programs = lock(&tables().programs);
        match programs.get(&program) {
            // The common case: written already (no copy of the program).
            Some(Program {
                record: Some(h), ..
            }) => return Ok((h.clone(), notes)),
            other => other.cloned(),
        }
    };
    let p = match known {
        Some(p) => p,
        None => {
            notes.push("the program was created before cltrap could see it; recorded from clGetProgramInfo".into());
            unseen(next, program)
        }
    };
    if let Some(h) = &p.record {
        return Ok((h.clone(), notes));
    }
    if matches!(&*p.origin, Origin::Source(s) if s.is_empty()) {
        notes.push("the program's source is unknown".into());
    }
    if matches!(&*p.origin, Origin::Binary(_)) {
        binary_said_once(kernel);
    }
    let rec = ProgramRecord {
        origin: origin(writer, &p.origin)?,
        options: p.options.clone(),
        devices: p.devices.clone(),
        build_site: p.site.clone(),
        includes: includes(writer, &p)?,
    };
    let hash = writer.blobs.put(&serde_json::to_vec(&rec)?)?;
    if let Some(entry) = lock(&tables().programs).get_mut(&program) {
        entry.record = Some(hash.clone());
    }
    Ok((hash, notes))
}

/// Says once per process that launches come from a program the application created from a
/// binary (typically its own on-disk cache of compiled kernels): analyses need sources, and
/// the capture would otherwise look complete while `cover`, `check` or `export` find nothing
/// to read. Names the first such kernel and the control that makes the application build
/// from source instead.
fn binary_said_once(kernel: &str) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    crate::say::say(&format!(
        "kernel '{kernel}' comes from a program created from a binary (clCreateProgramWithBinary, often an application's own kernel cache): its launches are captured without source, so analyses cannot read its code; capture with --refuse-binaries (CLTRAP_REFUSE_BINARIES=on) to make the application build from source where it can"
    ));
}

fn origin(writer: &CaptureWriter, o: &Origin) -> Result<ProgramOrigin, WriteError> {
    let put_all = |v: &Vec<Vec<u8>>| {
        v.iter()
            .map(|b| writer.blobs.put(b))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(match o {
        Origin::Source(s) => ProgramOrigin::Source {
            sources: put_all(s)?,
        },
        Origin::Binary(b) => ProgramOrigin::Binary {
            binaries: put_all(b)?,
        },
        Origin::Il(il) => ProgramOrigin::Il {
            il: writer.blobs.put(il)?,
        },
        Origin::BuiltIn(names) => ProgramOrigin::BuiltIn {
            kernel_names: names.clone(),
        },
        Origin::Linked(inputs) => ProgramOrigin::Linked {
            inputs: inputs
                .iter()
                .map(|c| {
                    Ok(CompiledInput {
                        origin: Box::new(origin(writer, &c.origin)?),
                        compile_options: c.compile_options.clone(),
                        headers: c
                            .headers
                            .iter()
                            .map(|(n, src)| Ok((n.clone(), writer.blobs.put(src)?)))
                            .collect::<Result<Vec<_>, WriteError>>()?,
                    })
                })
                .collect::<Result<Vec<_>, WriteError>>()?,
        },
    })
}

/// The included files of a program, stored as blobs: its own build's, or for a linked
/// program those of every input's compile (one list: a replay gives every input the same
/// private copy of the files).
fn includes(writer: &CaptureWriter, p: &Program) -> Result<Includes, WriteError> {
    let scans: Vec<&Scanned> = match &*p.origin {
        Origin::Linked(inputs) => inputs
            .iter()
            .filter_map(|c| c.includes.as_deref())
            .collect(),
        _ => p.includes.as_deref().into_iter().collect(),
    };
    let mut out = Includes::default();
    for scan in scans {
        if out.build_dir.is_empty() {
            out.build_dir = scan.cwd.clone();
        }
        for f in &scan.files {
            let text = |p: &std::path::PathBuf| p.to_string_lossy().into_owned();
            let entry = IncludedFile {
                name: f.name.clone(),
                form: f.form,
                from: f.from.as_ref().map(text),
                path: f.path.as_ref().map(text),
                content: f.bytes.as_ref().map(|b| writer.blobs.put(b)).transpose()?,
            };
            if !out.files.contains(&entry) {
                out.files.push(entry);
            }
        }
    }
    Ok(out)
}

/// A program the shim never saw created: what the driver can still tell about it.
fn unseen(next: &Next, program: usize) -> Program {
    let prog = program as cl_program;
    let source = next
        .clGetProgramInfo
        // SAFETY: standard info query.
        .and_then(|f| info::string(|s, p, r| unsafe { f(prog, CL_PROGRAM_SOURCE, s, p, r) }))
        .unwrap_or_default();
    let sources = if source.is_empty() {
        Vec::new()
    } else {
        vec![source.into_bytes()]
    };
    let p = Program::new(Origin::Source(sources), Vec::new(), None);
    lock(&tables().programs)
        .entry(program)
        .or_insert_with(|| p.clone());
    p
}
