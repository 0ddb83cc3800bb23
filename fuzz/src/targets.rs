//! The fuzz targets: each takes arbitrary bytes, feeds them to one of cltrap's parsers of
//! outside data the way the program does, and panics only when the parser misbehaves (a
//! panic of its own, or a broken invariant checked here). A parser that refuses the bytes
//! with an error is the expected outcome for most inputs.
//!
//! The same functions run under AFL++ (`fuzz/src/bin/*.rs`, `scripts/fuzz.sh`) and in the
//! seeded test of the analyzer (`analyzer/tests/fuzz_seeds.rs`, which includes this file),
//! so the short run in `cargo test` and the long run exercise identical code.
//!
//! Inputs made of several files are split at NUL bytes (a byte none of the text formats
//! parsed here can hold), in the order each target documents.

use std::path::{Path, PathBuf};

/// The targets by name, as `scripts/fuzz.sh` and the seed corpus folders name them.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("capture", capture),
    ("interface", interface),
    ("includes", includes),
    ("macros", macros),
];

/// Splits `data` at NUL bytes into at most `n` parts (the last keeps any further NULs).
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |b| *b == 0).collect()
}

/// A private folder that lives as long as the process (one per thread: a fuzzing process
/// runs its target many times and rewrites the same few files).
fn scratch() -> PathBuf {
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::Builder::new()
            .prefix("cltrap-fuzz-")
            .tempdir()
            .expect("a private temporary folder for the fuzz target");
    }
    DIR.with(|d| d.path().to_path_buf())
}

/// Writes `bytes` to `dir/name`, or removes it when `bytes` is `None`.
fn put(dir: &Path, name: &str, bytes: Option<&[u8]>) {
    let path = dir.join(name);
    match bytes {
        Some(b) => std::fs::write(&path, b).expect("writing into the fuzz target's own folder"),
        None => {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The capture reader. Parts: `manifest.json`, `launches.jsonl` (whole records and delta
/// records, see `cltrap_capture::delta`), a program record (a blob's JSON), a chunk index
/// (`.chunks`) and one chunk file. The first two are written into a capture folder opened
/// with `Capture::open`, exactly as every command opens one; the others go through the
/// parsers the reader applies to those files. Every launch record read must also survive
/// being written back and read again unchanged (the delta writer relies on it).
pub fn capture(data: &[u8]) {
    use cltrap_capture::model::{LaunchRecord, ProgramRecord};
    let p = parts(data, 5);
    let dir = scratch().join("capture");
    std::fs::create_dir_all(&dir).expect("the fuzz target's capture folder");
    put(&dir, "manifest.json", p.first().copied());
    put(&dir, cltrap_capture::LAUNCHES_FILE, p.get(1).copied());
    if let Ok(c) = cltrap_capture::reader::Capture::open(&dir) {
        for l in &c.launches {
            for a in &l.args {
                let _ = a.info();
            }
            let text = serde_json::to_vec(l).expect("a launch record read back serialises");
            let again: LaunchRecord =
                serde_json::from_slice(&text).expect("a serialised launch record reads back");
            assert_eq!(
                &again, l,
                "a launch record changes when written and read back"
            );
        }
        let _ = c.launch(0);
    }
    if let Some(program) = p.get(2) {
        if let Ok(r) = serde_json::from_slice::<ProgramRecord>(program) {
            if let Ok(unit) = r.source_unit() {
                let _ = unit.build_options();
            }
            let _ = r.includes.missing().count();
        }
    }
    if let Some(index) = p.get(3).and_then(|i| std::str::from_utf8(i).ok()) {
        if let Ok((size, chunks)) = cltrap_capture::chunks::parse_index(index) {
            let total: u64 = chunks.iter().map(|c| c.len as u64).sum();
            assert_eq!(total, size, "an accepted index's chunks add up to its size");
            if let (Some(file), Some(first)) = (p.get(4), chunks.first()) {
                if let Ok(bytes) = cltrap_capture::chunks::decode(file, first.len) {
                    assert_eq!(
                        bytes.len(),
                        first.len,
                        "a decoded chunk has its index length"
                    );
                }
            }
        }
    }
}

/// Struct definitions the interface target lays out when its input carries no source.
const STRUCTS: &str = "typedef struct { float x; int n[2]; } S; struct P { char c; double d; };";

/// The interface file of `cltrap fuzz --interface` (JSON), optionally followed by OpenCL C
/// source after a NUL. The file is parsed as the command parses it; each argument's `type`
/// is classified with the kernel crate's type parsers (`parse_value_type`, `pointee`,
/// `parse_structs` over the source, `layout_of`), the way `interface::derive` classifies
/// the types libclang reports, and the resulting interface and file are turned into the
/// campaign's first test case by `spec::to_input_within` (with a 1 MiB bound on the bytes
/// asked for, so a run stays fast; the command's bound is larger, the checks are the same).
pub fn interface(data: &[u8]) {
    use cltrap_analyzer::fuzz::spec::{self, Fill, InterfaceFile};
    use cltrap_kernel::interface::{
        layout_of, parse_structs, parse_value_type, pointee, strip_qualifiers, ArgInterface,
        ArgKind, KernelInterface, Role,
    };
    use cltrap_kernel::model::AddressSpace;
    let p = parts(data, 2);
    let source = p
        .get(1)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_else(|| STRUCTS.to_string());
    let structs = parse_structs(&source);
    for s in &structs {
        for f in &s.fields {
            assert!(
                f.offset + f.ty.size() <= s.size,
                "field {} of struct {} ends past the struct's size",
                f.name,
                s.name
            );
        }
    }
    let Ok(file) = serde_json::from_slice::<InterfaceFile>(p[0]) else {
        return;
    };
    let args = file
        .args
        .iter()
        .enumerate()
        .map(|(index, a)| {
            let words: Vec<&str> = a.ty.split_whitespace().collect();
            let local = words.iter().any(|w| *w == "__local" || *w == "local");
            let kind = if a.ty.contains("image") {
                ArgKind::Image
            } else if a.ty.contains("sampler_t") {
                ArgKind::Sampler
            } else if let Some(elem) = pointee(&a.ty) {
                let ty = parse_value_type(&elem);
                if local {
                    ArgKind::Local { elem: ty }
                } else {
                    ArgKind::Buffer {
                        elem: ty,
                        elem_name: elem.clone(),
                        role: if a.output { Role::Both } else { Role::Input },
                        layout: layout_of(&structs, &elem).cloned(),
                    }
                }
            } else if let Some(ty) = parse_value_type(&a.ty) {
                ArgKind::Value { ty }
            } else {
                ArgKind::Opaque {
                    layout: layout_of(&structs, &strip_qualifiers(&a.ty)).cloned(),
                }
            };
            ArgInterface {
                index,
                name: a.name.clone(),
                ty: a.ty.clone(),
                address_space: if local {
                    AddressSpace::Local
                } else {
                    AddressSpace::Global
                },
                kind,
            }
        })
        .collect();
    let iface = KernelInterface {
        kernel: file.kernel.clone(),
        args,
        int_constants: vec![0, 1, -1, 255],
        float_constants: vec![0.5],
    };
    // `file` fills name files next to the interface file: only plain names inside the
    // target's own folder are followed (a fuzzer could otherwise name /dev/zero).
    let base = scratch().join("interface");
    std::fs::create_dir_all(&base).expect("the fuzz target's interface folder");
    put(&base, "n.bin", Some(&[9, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]));
    let outside = file.args.iter().any(|a| match &a.fill {
        Fill::File(p) => p.components().count() != 1 || p.is_absolute() || p != Path::new("n.bin"),
        _ => false,
    });
    if outside {
        return;
    }
    let _ = spec::to_input_within(&file, &iface, &base, 1, 1 << 20);
}

/// The include scanner. Parts: a program's source, its build options, then up to three
/// headers written as `a.h`, `inc/b.h` and `inc/sub/c.h` in the build's working folder
/// (where `-I inc` and `#include "sub/c.h"` find them). Runs `includes::directives` (whose
/// ranges the analyzer rewrites in place, so they must lie on the name's delimiters) and
/// `includes::scan`, as the shim does after a build.
pub fn includes(data: &[u8]) {
    use cltrap_capture::includes::{directives, scan, Limits};
    use cltrap_capture::model::IncludeForm;
    let p = parts(data, 5);
    let source = p[0];
    for d in directives(source) {
        assert!(
            d.range.start <= d.range.end && d.range.end <= source.len(),
            "directive range {:?} is outside a text of {} bytes",
            d.range,
            source.len()
        );
        let quoted = &source[d.range.clone()];
        match d.form {
            IncludeForm::Quoted => assert!(
                quoted.len() >= 2 && quoted.starts_with(b"\"") && quoted.ends_with(b"\""),
                "a quoted include's range {:?} is not on its quotes",
                d.range
            ),
            IncludeForm::Angled => assert!(
                quoted.len() >= 2 && quoted.starts_with(b"<") && quoted.ends_with(b">"),
                "an angled include's range {:?} is not on its brackets",
                d.range
            ),
            IncludeForm::Macro => assert!(!quoted.is_empty(), "an empty macro include"),
        }
    }
    let cwd = scratch().join("includes");
    std::fs::create_dir_all(cwd.join("inc/sub")).expect("the fuzz target's include folders");
    for (name, part) in ["a.h", "inc/b.h", "inc/sub/c.h"].iter().zip(2..) {
        put(&cwd, name, p.get(part).copied());
    }
    let options = p.get(1).map(|o| String::from_utf8_lossy(o).into_owned());
    let limits = Limits {
        files: 16,
        bytes: 1 << 20,
    };
    let found = scan(
        &[source],
        &[],
        options.as_deref().unwrap_or(""),
        &cwd,
        limits,
    );
    let read: usize = found
        .iter()
        .filter_map(|f| f.bytes.as_ref())
        .map(Vec::len)
        .sum();
    assert!(
        read <= limits.bytes,
        "the scan read {read} bytes past its limit"
    );
}

/// The macro expander behind `#include MACRO(...)`. Lines: the first is a build's options
/// (`-D`/`-U`); then `#define` and `#undef` lines are applied in order, and every
/// `#include` line's rest is expanded to the header it names.
pub fn macros(data: &[u8]) {
    use cltrap_capture::macros::Macros;
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let mut m = Macros::from_options(lines.next().unwrap_or(""));
    for line in lines {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(def) = rest.strip_prefix("define") {
            m.define(def);
        } else if let Some(name) = rest.strip_prefix("undef") {
            m.undef(name);
        } else if let Some(target) = rest.strip_prefix("include") {
            if let Some((name, _)) = m.include_target(target) {
                assert!(!name.is_empty(), "an include expands to an empty name");
            }
        }
    }
}
