//! `cltrap export CAP --gpuverify DIR`: the captured kernels, ready for GPUVerify.
//!
//! One record per distinct (program, kernel, local size, global size, global offset) — the
//! program fixes the source and the build options — with the number of launches it covers.
//! Each record is a kernel file `<kernel>.<M>.cl` (GVKI's naming; headers inlined, the first
//! line a `//--local_size=… --num_groups=…` comment as in GPUVerify's own test kernels, then
//! `#line 1` so GPUVerify's messages point at the user's lines), the `gpuverify` command line
//! it needs (`--local_size=`, `--num_groups=` or `--global_size=`, `-D`/`-I`, and
//! `--kernel-args=` with every by-value scalar that is the same in all the launches it
//! covers), and an entry of GVKI's `log.json` (the JSON GPUVerify reads with
//! `gpuverify --json log.json --check-all-intercepted`); buffer contents that are the same
//! before every launch a record covers go to `<kernel>.<M>.arg<I>.bin`, named by the entry's
//! `data` as GVKI's `--log-data` does. `intercepted.txt` and the printed
//! listing are the `gpuverify --show-intercepted` view; `run_gpuverify.sh` runs them all.

use super::{program_text, safe_name, write_file, ExportError};
use crate::generalise::{arg_name, generalise, Param, Value};
use crate::ids::format_ids;
use crate::list::escape_controls;
use crate::site::Resolver;
use crate::values::{hex_le, parse_value_type, unhex};
use cltrap_capture::{ArgRecord, Capture, Content, Hash, LaunchRecord, Site};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// One exported configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// `<kernel>.<M>.cl`, relative to the export directory.
    pub kernel_file: String,
    /// The kernel's name.
    pub entry_point: String,
    /// The program blob.
    pub program: Hash,
    /// Build options as the application gave them.
    pub compiler_flags: String,
    /// Global size per dimension.
    pub global_size: Vec<u64>,
    /// `None` when the application let the implementation choose.
    pub local_size: Option<Vec<u64>>,
    /// `None` (or all zeros) when there is no offset.
    pub global_offset: Option<Vec<u64>>,
    /// Ids of the launches this record covers.
    pub launches: Vec<u64>,
    /// GVKI `kernel_arguments` entries, one per kernel argument.
    pub kernel_arguments: Vec<Json>,
    /// `(file name, blob)`: buffer contents before the launch, the same in every launch the
    /// record covers (GVKI's `data`).
    pub data_files: Vec<(String, Hash)>,
    /// GVKI `host_api_calls` entries (where the program was built and the kernel launched).
    pub host_api_calls: Vec<Json>,
    /// `gpuverify` arguments, the kernel file last.
    pub invocation: Vec<String>,
    /// Build options GPUVerify takes no equivalent of (all but `-D` and `-I`).
    pub dropped_options: Vec<String>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// One per distinct configuration, in order of first launch.
    pub records: Vec<Record>,
    /// Launches left out and why (binary programs, failed enqueues).
    pub skipped: Vec<(u64, String)>,
    /// Kernels left out because their program includes a header the capture did not record
    /// (a kernel file would not compile): one sentence per program and kernel, for stderr;
    /// the export then ends with exit 2.
    pub incomplete: Vec<String>,
}

/// Sizes as GPUVerify's documentation writes them: `64` for one dimension, `[16,16]` else.
pub fn dims(d: &[String]) -> String {
    if d.len() == 1 {
        d[0].clone()
    } else {
        format!("[{}]", d.join(","))
    }
}

fn nums(d: &[u64]) -> Vec<String> {
    d.iter().map(u64::to_string).collect()
}

/// The sizing arguments: `--local_size=` with `--num_groups=` when the local size divides the
/// global size, `--global_size=` otherwise; `*` (unconstrained) for a NULL local size.
pub fn sizing(global: &[u64], local: Option<&[u64]>) -> Vec<String> {
    match local {
        Some(l)
            if l.len() == global.len()
                && l.iter().zip(global).all(|(l, g)| *l > 0 && g % l == 0) =>
        {
            let groups: Vec<u64> = global.iter().zip(l).map(|(g, l)| g / l).collect();
            vec![
                format!("--local_size={}", dims(&nums(l))),
                format!("--num_groups={}", dims(&nums(&groups))),
            ]
        }
        Some(l) => vec![
            format!("--local_size={}", dims(&nums(l))),
            format!("--global_size={}", dims(&nums(global))),
        ],
        None => vec![
            format!(
                "--local_size={}",
                dims(&vec!["*".to_string(); global.len()])
            ),
            format!("--global_size={}", dims(&nums(global))),
        ],
    }
}

/// Splits build options into GPUVerify's `-D`/`-I` arguments and the rest (dropped).
pub fn defines_and_includes(options: &str) -> (Vec<String>, Vec<String>) {
    let words = cltrap_kernel::options::split_options(options);
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if (w == "-D" || w == "-I") && i + 1 < words.len() {
            kept.push(format!("{w}{}", words[i + 1]));
            i += 2;
            continue;
        }
        if w.len() > 2 && (w.starts_with("-D") || w.starts_with("-I")) {
            kept.push(w.clone());
        } else {
            dropped.push(w.clone());
        }
        i += 1;
    }
    (kept, dropped)
}

/// A by-value argument's value as GPUVerify reads it (`0x` and the number, most significant
/// digit first), when it is a plain scalar; vectors and structs have none.
fn scalar_hex(type_name: &str, bytes_hex: &str) -> Option<String> {
    let t = parse_value_type(type_name)?;
    let bytes = unhex(bytes_hex)?;
    (t.lanes == 1 && bytes.len() == t.size()).then(|| hex_le(&bytes))
}

/// `cl_mem_flags` as GPUVerify's JSON reader wants them: an array of names
/// (`["CL_MEM_READ_ONLY", "CL_MEM_COPY_HOST_PTR"]`); unknown bits as hex.
pub fn flag_names(flags: u64) -> Vec<String> {
    if flags == 0 {
        return vec!["CL_MEM_READ_WRITE".into()];
    }
    crate::show::mem_flags(flags)
        .split('|')
        .map(|n| {
            if n.starts_with("0x") {
                n.to_string()
            } else {
                format!("CL_MEM_{n}")
            }
        })
        .collect()
}

/// The address spaces GPUVerify's JSON reader accepts; anything else (no argument info) is
/// left out.
fn address_space(space: &str) -> Option<&'static str> {
    match space {
        "global" => Some("global"),
        "local" => Some("local"),
        "constant" => Some("constant"),
        _ => None,
    }
}

fn constant(p: &crate::generalise::KernelParams, name: &str) -> Option<Value> {
    p.get(name).and_then(Param::constant).cloned()
}

/// What [`arguments`] derives from a group of launches.
struct Arguments {
    /// GVKI `kernel_arguments`.
    entries: Vec<Json>,
    /// GPUVerify `--kernel-args=` values, one per by-value argument (`*` = unconstrained).
    scalar_values: Vec<String>,
    /// `(file name, blob)` of buffer contents that are the same before every launch.
    data_files: Vec<(String, Hash)>,
}

/// GVKI's `kernel_arguments` (with `data` files named `<stem>.arg<I>.bin` for buffers whose
/// pre-launch contents are the same in every launch) and GPUVerify's `--kernel-args=` values.
fn arguments(group: &[&LaunchRecord], stem: &str) -> Arguments {
    let first = group[0];
    let params = generalise(&first.kernel, group);
    let mut entries = Vec::new();
    let mut kernel_args = Vec::new();
    let mut data_files = Vec::new();
    for (i, a) in first.args.iter().enumerate() {
        let name = arg_name(a);
        let mut e = Map::new();
        match a {
            ArgRecord::Scalar { info, bytes } => {
                e.insert("type".into(), "scalar".into());
                let value =
                    constant(&params, &name).and_then(|_| scalar_hex(&info.type_name, bytes));
                match value {
                    Some(v) => {
                        e.insert("value".into(), v.clone().into());
                        kernel_args.push(v);
                    }
                    None => kernel_args.push("*".into()),
                }
            }
            ArgRecord::Buffer {
                info,
                flags,
                before,
                ..
            } => {
                e.insert("type".into(), "array".into());
                if let Some(space) = address_space(&info.address_space) {
                    e.insert("address_space".into(), space.into());
                }
                if group.iter().all(|l| match l.args.get(i) {
                    Some(ArgRecord::Buffer { flags: f, .. }) => f == flags,
                    _ => false,
                }) {
                    e.insert("flags".into(), json!(flag_names(*flags)));
                }
                if let Some(Value::Int(s @ 1..)) = constant(&params, &format!("{name}.bytes")) {
                    e.insert("size".into(), json!(s as u64));
                }
                if let Content::Blob { hash, .. } = before {
                    let same = group.iter().all(|l| {
                        matches!(l.args.get(i), Some(ArgRecord::Buffer { before: Content::Blob { hash: h, .. }, .. }) if h == hash)
                    });
                    if same {
                        let file = format!("{stem}.arg{i}.bin");
                        e.insert("data".into(), file.clone().into());
                        data_files.push((file, hash.clone()));
                    }
                }
            }
            ArgRecord::Local { .. } => {
                e.insert("type".into(), "array".into());
                e.insert("address_space".into(), "local".into());
                if let Some(Value::Int(s @ 1..)) = constant(&params, &format!("{name}.bytes")) {
                    e.insert("size".into(), json!(s as u64));
                }
            }
            ArgRecord::Image { .. } => {
                e.insert("type".into(), "image".into());
            }
            ArgRecord::Sampler { .. } => {
                e.insert("type".into(), "sampler".into());
            }
            ArgRecord::NullBuffer { info }
            | ArgRecord::Svm { info, .. }
            | ArgRecord::Unset { info } => {
                e.insert("type".into(), "array".into());
                if let Some(space) = address_space(&info.address_space) {
                    e.insert("address_space".into(), space.into());
                }
            }
        }
        entries.push(Json::Object(e));
    }
    Arguments {
        entries,
        scalar_values: kernel_args,
        data_files,
    }
}

fn host_call(resolver: &mut Resolver, function: &str, site: Option<&Site>) -> Option<Json> {
    let location =
        site.and_then(|s| s.location.clone().or_else(|| resolver.resolve(s)?.location))?;
    let (file, line) = location.rsplit_once(':')?;
    let line: u64 = line.trim().parse().ok().filter(|l| *l > 0)?;
    Some(json!({
        "function_name": function,
        "compilation_unit": file,
        "line_number": line,
    }))
}

/// Builds the records of `capture` (nothing is written).
pub fn records(capture: &Capture, resolver: &mut Resolver) -> Result<Export, ExportError> {
    type Key = (Hash, String, Option<Vec<u64>>, Vec<u64>, Option<Vec<u64>>);
    let mut groups: Vec<(Key, Vec<&LaunchRecord>)> = Vec::new();
    let mut index: BTreeMap<Key, usize> = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut texts: BTreeMap<Hash, Result<(String, String), super::NoText>> = BTreeMap::new();
    let mut incomplete: Vec<String> = Vec::new();
    for l in &capture.launches {
        if l.status != 0 {
            skipped.push((l.id, format!("the enqueue failed ({})", l.status)));
            continue;
        }
        // The name goes into file names, a shell script and GPUVerify's arguments.
        if let Some(why) = super::kernel_name_problem(&l.kernel) {
            skipped.push((l.id, why));
            continue;
        }
        if !texts.contains_key(&l.program) {
            let program = capture.program(&l.program)?;
            let text = program_text(capture, &program, "program.cl")?;
            texts.insert(l.program.clone(), text.map(|t| (t, program.options)));
        }
        if let Some(Err(why)) = texts.get(&l.program) {
            skipped.push((l.id, why.to_string()));
            if matches!(why, super::NoText::Unrecorded { .. }) {
                let sentence = format!(
                    "kernel {} is not exported: {why}",
                    crate::list::clip(&l.kernel, 64)
                );
                if !incomplete.contains(&sentence) {
                    incomplete.push(sentence);
                }
            }
            continue;
        }
        let offset = l
            .global_offset
            .clone()
            .filter(|o| o.iter().any(|v| *v != 0));
        let key: Key = (
            l.program.clone(),
            l.kernel.clone(),
            l.local_size.clone(),
            l.global_size.clone(),
            offset,
        );
        match index.get(&key) {
            Some(&i) => groups[i].1.push(l),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, vec![l]));
            }
        }
    }
    let mut per_kernel: BTreeMap<String, usize> = BTreeMap::new();
    let mut records = Vec::new();
    for ((program, kernel, local, global, offset), group) in groups {
        let Some(Ok((_, options))) = texts.get(&program) else {
            continue;
        };
        let n = per_kernel.entry(kernel.clone()).or_insert(0);
        let kernel_file = format!("{}.{n}.cl", safe_name(&kernel));
        *n += 1;
        let Arguments {
            entries: kernel_arguments,
            scalar_values,
            data_files,
        } = arguments(&group, kernel_file.trim_end_matches(".cl"));
        let (flags, dropped_options) = defines_and_includes(options);
        let mut invocation = sizing(&global, local.as_deref());
        invocation.extend(flags);
        if !scalar_values.is_empty() && scalar_values.iter().any(|v| v != "*") {
            invocation.push(format!(
                "--kernel-args={kernel},{}",
                scalar_values.join(",")
            ));
        }
        invocation.push(kernel_file.clone());
        let program_record = capture.program(&program)?;
        let host_api_calls = [
            host_call(
                resolver,
                "clBuildProgram",
                program_record.build_site.as_ref(),
            ),
            host_call(
                resolver,
                "clEnqueueNDRangeKernel",
                group[0].launch_site.as_ref(),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        records.push(Record {
            kernel_file,
            entry_point: kernel,
            program,
            compiler_flags: options.clone(),
            global_size: global,
            local_size: local,
            global_offset: offset,
            launches: group.iter().map(|l| l.id).collect(),
            kernel_arguments,
            data_files,
            host_api_calls,
            invocation,
            dropped_options,
        });
    }
    Ok(Export {
        records,
        skipped,
        incomplete,
    })
}

/// GVKI's `log.json`: an array of kernel instantiations in the JSON format GPUVerify reads.
pub fn log_json(export: &Export) -> Json {
    Json::Array(
        export
            .records
            .iter()
            .map(|r| {
                let mut e = Map::new();
                e.insert("language".into(), "OpenCL".into());
                e.insert("endianness".into(), "little".into());
                e.insert("kernel_file".into(), r.kernel_file.clone().into());
                e.insert("entry_point".into(), r.entry_point.clone().into());
                e.insert("compiler_flags".into(), r.compiler_flags.clone().into());
                e.insert("global_size".into(), json!(r.global_size));
                // GPUVerify's reader takes an offset only as positive numbers.
                if let Some(o) = r
                    .global_offset
                    .as_ref()
                    .filter(|o| o.iter().all(|v| *v > 0))
                {
                    e.insert("global_offset".into(), json!(o));
                }
                if let Some(l) = &r.local_size {
                    e.insert("local_size".into(), json!(l));
                }
                e.insert(
                    "kernel_arguments".into(),
                    Json::Array(r.kernel_arguments.clone()),
                );
                e.insert(
                    "host_api_calls".into(),
                    Json::Array(r.host_api_calls.clone()),
                );
                Json::Object(e)
            })
            .collect(),
    )
}

/// The `--show-intercepted`-style listing: one entry per record with the launches it covers
/// and its `gpuverify` command line.
pub fn listing(export: &Export) -> String {
    let mut o = String::new();
    for (i, r) in export.records.iter().enumerate() {
        let groups = match &r.local_size {
            Some(l) if l.len() == r.global_size.len() && l.iter().all(|v| *v > 0) => format!(
                " ({} groups)",
                r.global_size
                    .iter()
                    .zip(l)
                    .map(|(g, l)| g.div_ceil(*l).to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "[{i}] {}: kernel {}, local {}, global {}{groups}, {} launch(es) (ids {})",
            r.kernel_file,
            r.entry_point,
            crate::list::format_dims(r.local_size.as_deref()),
            crate::list::format_dims(Some(&r.global_size)),
            r.launches.len(),
            format_ids(&r.launches)
        );
        let _ = writeln!(
            o,
            "    gpuverify {}",
            escape_controls(&r.invocation.join(" "))
        );
        if !r.dropped_options.is_empty() {
            let _ = writeln!(
                o,
                "    build options GPUVerify does not take: {}",
                escape_controls(&r.dropped_options.join(" "))
            );
        }
    }
    for (id, why) in &export.skipped {
        let _ = writeln!(o, "launch {id} not exported: {why}");
    }
    o
}

/// `s` safe as the text of a `//` comment: control characters escaped (a newline would end
/// the comment), and a trailing backslash (which would continue it onto the next line) kept
/// from ending the line.
fn line_comment(s: &str) -> String {
    let mut o = crate::list::escape_controls(s);
    if o.ends_with('\\') {
        o.push_str(" //");
    }
    o
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+[]".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// Writes the records into `dir`: kernel files, `log.json`, `intercepted.txt`,
/// `run_gpuverify.sh`. Returns the export (for the listing).
pub fn export(capture: &Capture, dir: &Path) -> Result<Export, ExportError> {
    let ex = records(capture, &mut Resolver::new())?;
    if ex.records.is_empty() {
        return Err(match ex.incomplete.first() {
            Some(why) => ExportError::Incomplete(why.clone()),
            None => ExportError::Nothing,
        });
    }
    for r in &ex.records {
        let text = capture
            .program(&r.program)
            .and_then(|p| program_text(capture, &p, &r.kernel_file))?;
        let Ok(text) = text else { continue };
        let args = &r.invocation[..r.invocation.len() - 1];
        let file = format!("//{}\n#line 1\n{text}", line_comment(&args.join(" ")));
        write_file(dir, &r.kernel_file, file.as_bytes())?;
        for (name, hash) in &r.data_files {
            write_file(dir, name, &capture.blob(hash)?)?;
        }
    }
    let json = serde_json::to_string_pretty(&log_json(&ex)).unwrap_or_default();
    write_file(dir, "log.json", format!("{json}\n").as_bytes())?;
    write_file(dir, "intercepted.txt", listing(&ex).as_bytes())?;
    let mut sh = String::from(
        "#!/bin/sh\n# Runs GPUVerify on every exported configuration (written by cltrap export).\ncd \"$(dirname \"$0\")\" || exit 2\nstatus=0\n",
    );
    for r in &ex.records {
        let words: Vec<String> = r.invocation.iter().map(|w| shell_word(w)).collect();
        let _ = writeln!(sh, "gpuverify {} || status=1", words.join(" "));
    }
    sh.push_str("exit $status\n");
    write_file(dir, "run_gpuverify.sh", sh.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(
            dir.join("run_gpuverify.sh"),
            std::fs::Permissions::from_mode(0o755),
        );
    }
    Ok(ex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_follows_gpuverify_usage() {
        assert_eq!(
            sizing(&[1024], Some(&[64])),
            ["--local_size=64", "--num_groups=16"]
        );
        assert_eq!(
            sizing(&[64, 32], Some(&[16, 8])),
            ["--local_size=[16,8]", "--num_groups=[4,4]"]
        );
        assert_eq!(
            sizing(&[100], Some(&[64])),
            ["--local_size=64", "--global_size=100"]
        );
        assert_eq!(
            sizing(&[8, 8], None),
            ["--local_size=[*,*]", "--global_size=[8,8]"]
        );
    }

    #[test]
    fn only_defines_and_includes_are_passed() {
        let (kept, dropped) =
            defines_and_includes("-D N=4 -DM=2 -I inc -Idir -cl-fast-relaxed-math -w");
        assert_eq!(kept, ["-DN=4", "-DM=2", "-Iinc", "-Idir"]);
        assert_eq!(dropped, ["-cl-fast-relaxed-math", "-w"]);
    }

    #[test]
    fn scalar_values_are_numbers_most_significant_digit_first() {
        assert_eq!(scalar_hex("uint", "00040000"), Some("0x00000400".into()));
        assert_eq!(scalar_hex("float", "0000803f"), Some("0x3f800000".into()));
        assert_eq!(
            scalar_hex("float4", "00000000000000000000000000000000"),
            None
        );
        assert_eq!(scalar_hex("struct p", "00"), None);
    }

    #[test]
    fn comment_lines_stay_one_line() {
        assert_eq!(line_comment("-DX=1"), "-DX=1");
        assert_eq!(line_comment("-DX=a\nkernel"), "-DX=a\\nkernel");
        assert_eq!(line_comment("-DX=\\"), "-DX=\\ //");
    }

    #[test]
    fn flags_are_named_as_gpuverify_reads_them() {
        assert_eq!(
            flag_names(4 | 32),
            ["CL_MEM_READ_ONLY", "CL_MEM_COPY_HOST_PTR"]
        );
        assert_eq!(flag_names(0), ["CL_MEM_READ_WRITE"]);
        assert_eq!(address_space("private"), None);
    }
}
