//! `cltrap show`: everything the capture knows about one launch, for a person.

use crate::list::{escape_controls, format_dims, format_offset, format_scalars};
use crate::site::Resolver;
use crate::values::{human_bytes, unhex};
use cltrap_capture::replayable::Replayability;
use cltrap_capture::{
    ArgRecord, Capture, CompiledInput, Content, DigestKind, LaunchRecord, ProgramOrigin,
};
use std::fmt::Write;

/// Where `kernel` is defined in `source`: 1-based line of the `NAME(` that follows a
/// `kernel`/`__kernel` qualifier (comments are not parsed; the first definition wins).
/// `None` for an empty name (a damaged capture's): it names no definition.
pub fn kernel_definition_line(source: &str, kernel: &str) -> Option<usize> {
    if kernel.is_empty() {
        return None;
    }
    let bytes = source.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(pos) = source[from..].find(kernel) {
        let start = from + pos;
        let end = start + kernel.len();
        from = end;
        if start > 0 && is_ident(bytes[start - 1]) {
            continue;
        }
        if end < bytes.len() && is_ident(bytes[end]) {
            continue;
        }
        if !source[end..].trim_start().starts_with('(') {
            continue;
        }
        // The declaration runs back to the previous `;`, `}` or `{`.
        let decl_start = source[..start]
            .rfind([';', '}', '{'])
            .map(|p| p + 1)
            .unwrap_or(0);
        let decl = &source[decl_start..start];
        let has_kernel = decl
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == "kernel" || w == "__kernel");
        if has_kernel {
            return Some(source[..start].matches('\n').count() + 1);
        }
    }
    None
}

/// Names of the set bits of a `cl_mem_flags` value.
pub fn mem_flags(flags: u64) -> String {
    const NAMES: [(u64, &str); 9] = [
        (1, "READ_WRITE"),
        (2, "WRITE_ONLY"),
        (4, "READ_ONLY"),
        (8, "USE_HOST_PTR"),
        (16, "ALLOC_HOST_PTR"),
        (32, "COPY_HOST_PTR"),
        (128, "HOST_WRITE_ONLY"),
        (256, "HOST_READ_ONLY"),
        (512, "HOST_NO_ACCESS"),
    ];
    let mut names: Vec<String> = NAMES
        .iter()
        .filter(|(b, _)| flags & b != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let rest = flags & !NAMES.iter().fold(0, |a, (b, _)| a | b);
    if rest != 0 {
        names.push(format!("0x{rest:x}"));
    }
    if names.is_empty() {
        "READ_WRITE (default)".into()
    } else {
        names.join("|")
    }
}

fn queue_props(p: u64) -> String {
    let mut v = Vec::new();
    if p & 1 != 0 {
        v.push("OUT_OF_ORDER_EXEC_MODE_ENABLE");
    }
    if p & 2 != 0 {
        v.push("PROFILING_ENABLE");
    }
    if v.is_empty() {
        "in-order".into()
    } else {
        v.join("|")
    }
}

fn content(c: &Content) -> String {
    match c {
        Content::Blob { hash, size } => {
            format!("{} stored ({})", short(hash), human_bytes(*size))
        }
        Content::Digest {
            hash,
            size,
            algo: DigestKind::Blake3,
        } => format!("{} digest only ({})", short(hash), human_bytes(*size)),
        Content::Digest { hash, size, .. } => format!(
            "{} digest only, computed on the device ({})",
            short(hash),
            human_bytes(*size)
        ),
        Content::Missing { note } if note.is_empty() => "not recorded".into(),
        Content::Missing { note } => format!("not recorded ({})", esc(note)),
    }
}

/// The first 12 characters of a digest (escaped: a damaged capture's "digest" may be any
/// text).
fn short(h: &str) -> String {
    esc(h.get(..12).unwrap_or(h))
}

/// A capture's string as `show` prints it: control characters escaped
/// ([`escape_controls`], as `cltrap list` does), so that a capture cannot break a line of
/// the description or drive the terminal.
fn esc(s: &str) -> String {
    escape_controls(s)
}

/// The last guard on the whole description: every control character but the line breaks
/// `render` writes itself is escaped (each capture string is already escaped by [`esc`]
/// where it is printed; this keeps one that a later change forgets off the terminal).
fn escape_all_but_newlines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn image_type(t: u32) -> String {
    match t {
        0x10F1 => "image2d".into(),
        0x10F2 => "image3d".into(),
        0x10F3 => "image2d_array".into(),
        0x10F4 => "image1d".into(),
        0x10F5 => "image1d_array".into(),
        0x10F6 => "image1d_buffer".into(),
        other => format!("0x{other:x}"),
    }
}

fn sampler_text(normalized: bool, addressing: u32, filter: u32) -> String {
    let a = match addressing {
        0x1130 => "NONE",
        0x1131 => "CLAMP_TO_EDGE",
        0x1132 => "CLAMP",
        0x1133 => "REPEAT",
        0x1134 => "MIRRORED_REPEAT",
        _ => "?",
    };
    let f = match filter {
        0x1140 => "NEAREST",
        0x1141 => "LINEAR",
        _ => "?",
    };
    format!(
        "{} coords, address {a} (0x{addressing:x}), filter {f} (0x{filter:x})",
        if normalized {
            "normalized"
        } else {
            "unnormalized"
        }
    )
}

fn describe_origin(
    out: &mut String,
    capture: &Capture,
    origin: &ProgramOrigin,
    kernel: &str,
    indent: &str,
) {
    match origin {
        ProgramOrigin::Source { sources } => {
            let _ = writeln!(
                out,
                "{indent}origin: clCreateProgramWithSource, {} source string(s)",
                sources.len()
            );
            // What each distinct source says, read once: a record may name one many times.
            let mut said: std::collections::HashMap<&str, String> = Default::default();
            for (i, h) in sources.iter().enumerate() {
                let what = said
                    .entry(h)
                    .or_insert_with(|| match capture.source_text(h) {
                        Ok(text) => {
                            let mut what = format!(
                                "{} lines, {}, blobs/{}/{}",
                                text.lines().count(),
                                human_bytes(text.len() as u64),
                                esc(h.get(..2).unwrap_or("")),
                                esc(h)
                            );
                            if let Some(l) = kernel_definition_line(&text, kernel) {
                                let code = esc(text.lines().nth(l - 1).unwrap_or("").trim());
                                what.push_str(&format!(
                                    "\n{indent}    `{}` defined at line {l}: {code}",
                                    esc(kernel)
                                ));
                            }
                            what
                        }
                        Err(e) => format!("unreadable: {}", esc(&e.to_string())),
                    });
                let _ = writeln!(out, "{indent}  source[{i}]: {what}");
            }
        }
        ProgramOrigin::Binary { binaries } => {
            let _ = writeln!(
                out,
                "{indent}origin: clCreateProgramWithBinary, {} binary(ies)",
                binaries.len()
            );
            for (i, h) in binaries.iter().enumerate() {
                let _ = writeln!(out, "{indent}  binary[{i}]: {}", short(h));
            }
        }
        ProgramOrigin::Il { il } => {
            let _ = writeln!(
                out,
                "{indent}origin: clCreateProgramWithIL (SPIR-V {})",
                short(il)
            );
        }
        ProgramOrigin::BuiltIn { kernel_names } => {
            let _ = writeln!(out, "{indent}origin: built-in kernels {kernel_names:?}");
        }
        ProgramOrigin::Linked { inputs } => {
            let _ = writeln!(
                out,
                "{indent}origin: clLinkProgram of {} compiled program(s)",
                inputs.len()
            );
            for (
                i,
                CompiledInput {
                    origin,
                    compile_options,
                    headers,
                },
            ) in inputs.iter().enumerate()
            {
                let _ = writeln!(
                    out,
                    "{indent}  input[{i}]: compile options {compile_options:?}"
                );
                for (name, h) in headers {
                    let _ = writeln!(out, "{indent}    header {name:?}: {}", short(h));
                }
                describe_origin(out, capture, origin, kernel, &format!("{indent}    "));
            }
        }
    }
}

/// Renders the full description of `launch`.
pub fn render(capture: &Capture, launch: &LaunchRecord, resolver: &mut Resolver) -> String {
    let mut o = String::new();
    let l = launch;
    let _ = writeln!(o, "launch {} (enqueue #{} of the application)", l.id, l.seq);
    let _ = writeln!(o, "kernel: {}", esc(&l.kernel));
    let _ = writeln!(o, "api: {:?}, enqueue returned {}", l.api, l.status);
    let _ = writeln!(
        o,
        "ndrange: work_dim {}, global {}, local {}, offset {}",
        l.work_dim,
        format_dims(Some(&l.global_size)),
        format_dims(l.local_size.as_deref()),
        l.global_offset
            .as_deref()
            .map(format_offset)
            .unwrap_or_else(|| "NULL".into())
    );
    // Parsed at most once, and only for a scalar whose type name is not a known one.
    let mut param_types = crate::param_types::ParamTypes::default();
    let scalars = format_scalars(capture, l, &mut param_types);
    if !scalars.is_empty() {
        let _ = writeln!(o, "scalars: {}", esc(&scalars));
    }
    let d = &l.device;
    let facts: Vec<String> = [
        (&d.vendor, ""),
        (&d.platform, "platform "),
        (&d.version, ""),
        (&d.driver_version, "driver "),
    ]
    .iter()
    .filter(|(v, _)| !v.is_empty())
    .map(|(v, label)| format!("{label}{}", esc(v)))
    .collect();
    let name = if d.name.is_empty() {
        "unknown".to_string()
    } else {
        esc(&d.name)
    };
    if facts.is_empty() {
        let _ = writeln!(o, "device: {name}");
    } else {
        let _ = writeln!(o, "device: {name} ({})", facts.join(", "));
    }
    let _ = writeln!(o, "queue: {}", queue_props(l.queue_properties));
    let _ = writeln!(o, "thread: {}", l.thread);
    let site = l
        .launch_site
        .as_ref()
        .map(|s| esc(&resolver.describe(s)))
        .unwrap_or_else(|| "unknown".into());
    let _ = writeln!(o, "launched at: {site}");
    let _ = writeln!(o, "program {}:", short(&l.program));
    match capture.program(&l.program) {
        Ok(p) => {
            describe_origin(&mut o, capture, &p.origin, &l.kernel, "  ");
            let _ = writeln!(o, "  options: {:?}", p.options);
            let devices: Vec<String> = p.devices.iter().map(|d| esc(d)).collect();
            let _ = writeln!(o, "  devices: {}", devices.join(", "));
            let built = p
                .build_site
                .as_ref()
                .map(|s| esc(&resolver.describe(s)))
                .unwrap_or_else(|| "unknown".into());
            let _ = writeln!(o, "  built at: {built}");
            describe_includes(&mut o, &p.includes);
        }
        Err(e) => {
            let _ = writeln!(o, "  unreadable: {}", esc(&e.to_string()));
        }
    }
    let _ = writeln!(o, "arguments:");
    for a in &l.args {
        let info = a.info();
        let mut head = format!(
            "  [{}] {}",
            info.index,
            if info.name.is_empty() {
                "?".to_string()
            } else {
                esc(&info.name)
            }
        );
        let mut quals = Vec::new();
        if !info.address_space.is_empty() && info.address_space != "private" {
            quals.push(esc(&info.address_space));
        }
        if !info.qualifiers.is_empty() {
            quals.push(esc(&info.qualifiers));
        }
        let _ = write!(
            head,
            ": {}",
            if info.type_name.is_empty() {
                "?".to_string()
            } else {
                esc(&info.type_name)
            }
        );
        if !quals.is_empty() {
            let _ = write!(head, " ({})", quals.join(" "));
        }
        let body = match a {
            ArgRecord::Scalar { bytes, .. } => match unhex(bytes) {
                Some(b) => {
                    // A typedef the value decoding does not know (CLBlast's `real_arg`):
                    // the type clang gives the parameter, from the program's own text.
                    match param_types.decode(capture, l, info.index, &info.type_name, &b) {
                        (v, Some(ty)) => format!(
                            "value {} (`{}` is `{}`; {} bytes in memory order: {})",
                            esc(&v),
                            esc(&info.type_name),
                            esc(&ty),
                            b.len(),
                            esc(bytes)
                        ),
                        (shown, None) => format!(
                            "value {} ({} bytes in memory order: {})",
                            esc(&shown),
                            b.len(),
                            esc(bytes)
                        ),
                    }
                }
                None => format!("value <bad hex {bytes:?}>"),
            },
            ArgRecord::Local { size, .. } => format!("__local, {}", human_bytes(*size)),
            ArgRecord::NullBuffer { .. } => "NULL buffer".into(),
            ArgRecord::Buffer { mem, flags, size, sub_of, before, after, .. } => {
                let mut s = format!("buffer #{mem}, {}, {}", human_bytes(*size), mem_flags(*flags));
                if let Some((parent, origin)) = sub_of {
                    let _ = write!(s, ", sub-buffer of #{parent} at offset {origin}");
                }
                let aliases: Vec<String> = l
                    .args
                    .iter()
                    .filter(|b| b.info().index != info.index)
                    .filter(|b| matches!(b, ArgRecord::Buffer { mem: m, .. } | ArgRecord::Image { mem: m, .. } if m == mem))
                    .map(|b| format!("[{}]", b.info().index))
                    .collect();
                if !aliases.is_empty() {
                    let _ = write!(s, ", same object as {}", aliases.join(" "));
                }
                let _ = write!(s, "\n      before: {}\n      after:  {}", content(before), content(after));
                s
            }
            ArgRecord::Image { mem, flags, image, before, after, .. } => format!(
                "{} #{mem}, {}x{}x{} (array {}), order 0x{:x}, type 0x{:x}, {} B/pixel, {}\n      before: {}\n      after:  {}",
                image_type(image.image_type),
                image.width,
                image.height,
                image.depth,
                image.array_size,
                image.channel_order,
                image.channel_data_type,
                image.element_size,
                mem_flags(*flags),
                content(before),
                content(after)
            ),
            ArgRecord::Sampler { normalized_coords, addressing_mode, filter_mode, .. } => {
                format!("sampler: {}", sampler_text(*normalized_coords, *addressing_mode, *filter_mode))
            }
            ArgRecord::Svm { pointer, .. } => format!("SVM pointer 0x{pointer:x} (not replayable)"),
            ArgRecord::Unset { .. } => "never set by the application".into(),
        };
        let _ = writeln!(o, "{head}\n      {body}");
    }
    let index = cltrap_capture::replayable::ReplayIndex::of(&capture.launches);
    match index.get(l.id) {
        Some(Replayability::Stored) => {
            let _ = writeln!(o, "replayable: yes");
        }
        Some(Replayability::Derived {
            inputs,
            chain,
            checkpoint,
        }) => {
            let _ = writeln!(
                o,
                "replayable: yes, with derived inputs (a replay re-executes a chain of {chain} launch(es) back to launch {checkpoint}, whose inputs are stored)"
            );
            for d in inputs {
                let name = |args: &[ArgRecord], i: u32| {
                    args.get(i as usize)
                        .map(|a| a.info().name.clone())
                        .filter(|n| !n.is_empty())
                        .map_or(format!("argument {i}"), |n| format!("`{}`", esc(&n)))
                };
                let _ = writeln!(
                    o,
                    "  - input {} re-created by re-executing launch {} (its argument {})",
                    name(&l.args, d.arg),
                    d.producer,
                    d.producer_arg
                );
            }
        }
        Some(Replayability::Blocked { why }) => {
            let _ = writeln!(o, "replayable: no");
            for r in why {
                let _ = writeln!(o, "  - {}", esc(&r.to_string()));
            }
        }
        None => {
            let _ = writeln!(o, "replayable: no (the launch is not in the capture's log)");
        }
    }
    escape_all_but_newlines(&o)
}

/// The files the program included, as captured, and those that were not found.
fn describe_includes(o: &mut impl Write, includes: &cltrap_capture::Includes) {
    if includes.is_empty() {
        return;
    }
    let _ = writeln!(o, "  built in: {}", esc(&includes.build_dir));
    for f in &includes.files {
        let from = f
            .from
            .as_deref()
            .map(|p| format!(" (from {})", esc(p)))
            .unwrap_or_default();
        let what = match (&f.path, &f.content) {
            (Some(p), Some(h)) => format!("{}, captured ({})", esc(p), short(h)),
            (Some(p), None) => format!("{}, as above", esc(p)),
            (None, _) if f.form == cltrap_capture::IncludeForm::Macro => {
                "a macro include that did not expand to an existing file at capture".into()
            }
            // The scan follows every conditional branch: a header named in a branch the
            // build skipped (hashcat's `metal_stdlib`) was never needed.
            (None, _) => {
                "NOT FOUND when the program was built (harmless if its #include sits in a branch the build skipped)".into()
            }
        };
        let _ = writeln!(o, "  includes {:?}{from}: {what}", f.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_definitions_are_found_by_line() {
        let src = "// vadd( in a comment without qualifier\nfloat helper(float x) { return x; }\n\n__kernel void\nvadd(__global float* a) {\n  helper(1);\n}\nkernel void vadd2 (global int* b) {}\n";
        assert_eq!(kernel_definition_line(src, "vadd"), Some(5));
        assert_eq!(kernel_definition_line(src, "vadd2"), Some(8));
        assert_eq!(kernel_definition_line(src, "helper"), None);
        assert_eq!(kernel_definition_line(src, "missing"), None);
        assert_eq!(kernel_definition_line(src, ""), None);
    }

    #[test]
    fn mem_flags_are_named() {
        assert_eq!(mem_flags(4 | 32), "READ_ONLY|COPY_HOST_PTR");
        assert_eq!(mem_flags(0), "READ_WRITE (default)");
        assert_eq!(mem_flags(1 << 20), "0x100000");
    }
}
