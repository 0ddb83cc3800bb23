//! `cltrap export`: captured launches handed to tools outside cltrap.
//!
//! - [`gpuverify`]: one kernel file per distinct configuration, the `gpuverify` invocation it
//!   needs and GVKI's `log.json` (KernelInterceptor's workflow, on a cltrap capture);
//! - [`reproducer_c`] and [`reproducer_py`]: one launch as a self-contained host program
//!   (C with `-lOpenCL`, or pyopencl) plus data files, which rebuilds the program, restores
//!   every argument, runs the launch and compares the outputs with the recorded ones — a
//!   bug report a driver vendor can run without cltrap.
//!
//! This module holds what they share: the program's text with its headers inlined, and the
//! one error type. Nothing here talks to OpenCL; exports are files. `program_headers` is the
//! one place that knows where a capture keeps headers; `inline_headers` adds `#line`
//! directives so messages keep the user's files and lines; [`unrecorded`] refuses a program
//! whose text still includes, on a line the build reaches, a header the capture lacks. Both
//! reproducers render the same [`plan::Plan`], built from `executor::LaunchInput::from_record`,
//! so they restore exactly what `replay` restores.

pub mod gpuverify;
pub mod plan;
pub mod reproducer_c;
pub mod reproducer_py;
pub mod unrecorded;

use cltrap_capture::includes::directives;
use cltrap_capture::reader::TextBudget;
use cltrap_capture::{
    Capture, Hash, IncludeForm, Includes, ProgramOrigin, ProgramRecord, ReadError,
};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Why an export could not be written. `Display` is one sentence for the CLI.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The capture could not be read.
    #[error("{0}")]
    Capture(#[from] ReadError),
    /// The program has no OpenCL C text to export.
    #[error("launch {id} ({kernel}) cannot be exported: {why}")]
    Unsupported {
        /// Launch id.
        id: u64,
        /// Kernel name.
        kernel: String,
        /// The reason, e.g. "its program was created from a binary".
        why: String,
    },
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The data files would not fit on the output folder's filesystem.
    #[error("the reproducer's data files take {needed} bytes, more than the {free} bytes free where {dir} is")]
    NoRoom {
        /// The output folder.
        dir: PathBuf,
        /// Bytes of data files.
        needed: u64,
        /// Bytes free on its filesystem.
        free: u64,
    },
    /// The capture holds no launch to export.
    #[error("the capture holds no launch of a kernel built from OpenCL C source to export")]
    Nothing,
    /// Every kernel to export includes a header the capture did not record (the first).
    #[error("{0}")]
    Incomplete(String),
}

/// Why a program has no OpenCL C text a standalone export can use. `Display` is a sentence
/// part (`launch 3 (k) cannot be exported: <this>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoText {
    /// Not made from source, or its headers cannot be inlined: the reason.
    Other(String),
    /// Its text includes a header the capture did not record and the build reaches it
    /// ([`unrecorded`]): the export would not compile.
    Unrecorded {
        /// The header as the `#include` names it.
        header: String,
        /// Why it counts as reached without being checked, when it was not checked.
        unchecked: Option<&'static str>,
    },
}

impl std::fmt::Display for NoText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoText::Other(why) => write!(f, "{why}"),
            NoText::Unrecorded { header, unchecked } => {
                write!(
                    f,
                    "its source includes {}, which the capture did not record, so an exported program would not compile",
                    crate::list::clip(&format!("{header:?}"), 200)
                )?;
                if let Some(why) = unchecked {
                    write!(f, " ({why})")?;
                }
                Ok(())
            }
        }
    }
}

/// Arguments of `cltrap export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Capture directory.
    pub dir: PathBuf,
    /// Launch id (with --c / --python).
    pub id: Option<u64>,
    /// Write GPUVerify kernel files, invocations and GVKI's log.json into DIR.
    #[arg(long, value_name = "DIR")]
    pub gpuverify: Option<PathBuf>,
    /// Write a standalone C reproducer of launch ID into DIR (`cc main.c -lOpenCL`).
    #[arg(long = "c", value_name = "DIR", requires = "id")]
    pub c: Option<PathBuf>,
    /// Write a standalone pyopencl reproducer of launch ID into DIR.
    #[arg(long, value_name = "DIR", requires = "id")]
    pub python: Option<PathBuf>,
}

/// `cltrap export`: runs the exports asked for, prints what was written. Exit status 0; 2
/// with an error sentence when the launch asked for cannot be exported, and 2 after the
/// others are written when the capture has damaged launch lines or a kernel's program
/// includes a header the capture did not record (each named once on stderr).
pub fn cli(args: &ExportArgs, out: &mut impl std::io::Write) -> Result<u8, String> {
    if args.gpuverify.is_none() && args.c.is_none() && args.python.is_none() {
        return Err(
            "say what to export: --gpuverify DIR, or a launch id with --c DIR / --python DIR"
                .into(),
        );
    }
    let capture = Capture::open_keeping_damaged(&args.dir).map_err(|e| e.to_string())?;
    // A damaged launch line: the launch asked for cannot be exported (one sentence); any
    // other is named once and left out, and the export ends with exit 2.
    if let Some(d) = args.id.and_then(|id| crate::damage::line_of(&capture, id)) {
        return Err(format!(
            "launch {} cannot be exported: {}",
            args.id.unwrap_or_default(),
            crate::damage::describe(&capture, d)
        ));
    }
    let damaged = crate::damage::report(&capture, "export");
    if let Some(why) = crate::damage::nothing_left(&capture) {
        return Err(why);
    }
    // 2 when something asked for was left out (a kernel whose program is incomplete).
    let mut status = 0;
    if let Some(dir) = &args.gpuverify {
        let ex = gpuverify::export(&capture, dir).map_err(|e| e.to_string())?;
        for why in &ex.incomplete {
            eprintln!("cltrap: {why}");
            status = 2;
        }
        let covered: usize = ex.records.iter().map(|r| r.launches.len()).sum();
        let _ = write!(out, "{}", gpuverify::listing(&ex));
        let _ = writeln!(
            out,
            "{} configuration(s) covering {covered} launch(es) written to {} (log.json: `gpuverify --json log.json --check-all-intercepted`)",
            ex.records.len(),
            dir.display()
        );
    }
    for (dir, python) in [(&args.c, false), (&args.python, true)] {
        let (Some(dir), Some(id)) = (dir, args.id) else {
            continue;
        };
        let plan = if python {
            reproducer_py::export(&capture, id, dir)
        } else {
            reproducer_c::export(&capture, id, dir)
        }
        .map_err(|e| e.to_string())?;
        let run = if python {
            "python3 repro.py [PLATFORM [DEVICE]]"
        } else {
            "cc main.c -o repro -lOpenCL && ./repro [PLATFORM [DEVICE]]"
        };
        let _ = writeln!(
            out,
            "launch {id} ({}): reproducer written to {} ({} output(s) compared); run: cd {} && {run}",
            plan.kernel,
            dir.display(),
            plan.checks.len(),
            dir.display()
        );
    }
    Ok(crate::damage::exit_code(status, damaged))
}

/// Writes `bytes` to `dir/name`, creating `dir`.
pub(crate) fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ExportError> {
    let path = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, bytes))
        .map_err(|source| ExportError::Write { path, source })
}

/// The headers a program was compiled with, as `(include name, source blob)`: the one place
/// that knows where a capture keeps them. Programs linked from separately compiled inputs
/// carry the headers given to `clCompileProgram`; source programs carry none in this
/// capture format version.
pub fn program_headers(origin: &ProgramOrigin) -> Vec<(String, Hash)> {
    match origin {
        ProgramOrigin::Linked { inputs } => inputs.iter().flat_map(|i| i.headers.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Replaces every `#include "NAME"` / `#include <NAME>` line whose NAME (or its last path
/// component) is one of `headers` by that header's text, recursively (a header already being
/// inlined is not inlined again inside itself). `#line` directives around each inlined
/// header keep compiler and verifier messages pointing at the user's own files and lines:
/// the header's lines under its own name, the rest under `main_name`. `Err` with the reason
/// once the result would pass [`MAX_INLINED_BYTES`] (a header is copied wherever it is
/// included, so headers that include each other twice would double at every level) or
/// [`MAX_INCLUDE_DEPTH`] nested includes.
pub fn inline_headers(
    text: &str,
    headers: &[(String, String)],
    main_name: &str,
) -> Result<String, String> {
    fn go(
        text: &str,
        headers: &[(String, String)],
        file: &str,
        stack: &mut Vec<String>,
        out: &mut String,
    ) -> Result<(), String> {
        if stack.len() > MAX_INCLUDE_DEPTH {
            return Err(format!(
                "its includes nest deeper than {MAX_INCLUDE_DEPTH} files"
            ));
        }
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let found = included_name(line).and_then(|inc| {
                headers.iter().find(|(name, _)| {
                    *name == inc || Path::new(name).file_name() == Path::new(&inc).file_name()
                })
            });
            match found {
                Some((name, body)) if !stack.contains(name) => {
                    out.push_str(&format!("#line 1 {}\n", reproducer_c::c_string(name)));
                    stack.push(name.clone());
                    go(body, headers, name, stack, out)?;
                    stack.pop();
                    if !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(&format!(
                        "#line {} {}\n",
                        n + 2,
                        reproducer_c::c_string(file)
                    ));
                }
                _ => out.push_str(line),
            }
            if out.len() > MAX_INLINED_BYTES {
                return Err(too_large());
            }
        }
        Ok(())
    }
    let mut out = String::new();
    go(text, headers, main_name, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// Why an export has no text: [`MAX_INLINED_BYTES`] passed.
fn too_large() -> String {
    format!(
        "its text with the included headers inlined exceeds {} MiB",
        MAX_INLINED_BYTES >> 20
    )
}

/// The NAME of an `#include "NAME"` or `#include <NAME>` line.
fn included_name(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let (open, close) = match rest.chars().next()? {
        '"' => ('"', '"'),
        '<' => ('<', '>'),
        _ => return None,
    };
    let inner = rest.strip_prefix(open)?;
    Some(inner[..inner.find(close)?].to_string())
}

/// A program's OpenCL C text, headers inlined: the sources in order, every `#include` the
/// capture resolved replaced by the captured file's text ([`inline_captured`]); for a linked
/// program, each input's sources after its own headers are inlined. `Err` with the reason
/// when the program was not made from source, its headers cannot be inlined, or it still
/// includes a header the capture did not record and the build reaches ([`unrecorded`]).
pub fn program_text(
    capture: &Capture,
    record: &ProgramRecord,
    main_name: &str,
) -> Result<Result<String, NoText>, ReadError> {
    fn origin_text(
        capture: &Capture,
        origin: &ProgramOrigin,
        headers: &[(String, Hash)],
        main_name: &str,
        budget: &mut TextBudget,
    ) -> Result<Result<String, String>, ReadError> {
        let texts = capture.source_texts_in(headers.iter().map(|(_, h)| h.as_str()), budget)?;
        let loaded: Vec<(String, String)> = (headers.iter().map(|(name, _)| name.clone()))
            .zip(texts)
            .collect();
        Ok(match origin {
            ProgramOrigin::Source { sources } => {
                let text = capture
                    .source_texts_in(sources.iter().map(String::as_str), budget)?
                    .concat();
                inline_headers(&text, &loaded, main_name)
            }
            ProgramOrigin::Linked { inputs } => {
                let mut text = String::new();
                for i in inputs {
                    match origin_text(capture, &i.origin, &i.headers, main_name, budget)? {
                        Ok(t) => {
                            text.push_str(&t);
                            if !text.ends_with('\n') {
                                text.push('\n');
                            }
                            // Each input is bounded; so are all of them together.
                            if text.len() > MAX_INLINED_BYTES {
                                return Ok(Err(too_large()));
                            }
                        }
                        Err(why) => return Ok(Err(why)),
                    }
                }
                Ok(text)
            }
            ProgramOrigin::Binary { .. } => Err("its program was created from a binary".into()),
            ProgramOrigin::Il { .. } => Err("its program was created from SPIR-V".into()),
            ProgramOrigin::BuiltIn { .. } => Err("it is a built-in kernel".into()),
        })
    }
    let headers = match &record.origin {
        ProgramOrigin::Linked { .. } => Vec::new(), // each input inlines its own
        o => program_headers(o),
    };
    // One budget for every text of the program, those of a linked program's inputs too.
    let budget = &mut TextBudget::default();
    let text = match origin_text(capture, &record.origin, &headers, main_name, budget)? {
        Ok(t) => t,
        Err(why) => return Ok(Err(NoText::Other(why))),
    };
    let text = match &record.origin {
        ProgramOrigin::Source { .. } => {
            match inline_captured(capture, &record.includes, &text, main_name)? {
                Ok(t) => t,
                Err(why) => return Ok(Err(NoText::Other(why))),
            }
        }
        _ => text,
    };
    // An include left in the text names a file the export does not have. What the driver
    // builds is checked as clang's lexer reads it: no spelling of an include opens a file
    // outside the reproducer's folder ([`crate::headers::without_escaping_includes`]).
    Ok(match unrecorded::first_reached(&text, &record.options) {
        Some((header, unchecked)) => Err(NoText::Unrecorded { header, unchecked }),
        None => Ok(crate::headers::without_escaping_includes(&text)),
    })
}

/// The most text [`inline_captured`] makes (a header included from many places is copied
/// each time; a hostile capture could make that exponential).
const MAX_INLINED_BYTES: usize = 64 << 20;

/// The deepest nesting of includes [`inline_captured`] follows (GCC's own limit).
const MAX_INCLUDE_DEPTH: usize = 200;

/// `text` (a source program's text) with every `#include` whose file the capture recorded
/// replaced by that file's text, recursively, between `#line` directives that keep the
/// compiler's and verifier's messages pointing at the original files and lines. What the
/// capture did not resolve (a header in a branch the build skipped) stays as written. A
/// header already being inlined (a cycle) and a `#pragma once` header already inlined give
/// an empty line; `#pragma once` itself is dropped (in one file it would only warn).
/// `Err` with the reason when the result would exceed 64 MiB or 200 nested includes.
pub fn inline_captured(
    capture: &Capture,
    includes: &Includes,
    text: &str,
    main_name: &str,
) -> Result<Result<String, String>, ReadError> {
    use std::rc::Rc;
    /// A captured header's text (its `#pragma once` lines blanked) and whether it had one.
    struct Header {
        kept: Rc<str>,
        pragma_once: bool,
    }
    struct Inliner<'a> {
        capture: &'a Capture,
        /// Where each directive the capture resolved led, by (file holding it, name, form).
        found: HashMap<(Option<&'a str>, &'a str, IncludeForm), Option<&'a str>>,
        /// Blob of each captured path (the first entry that reached it holds it).
        content: HashMap<&'a str, &'a Hash>,
        /// Each header read, once ([`TextBudget`]: a chain of 200 distinct headers of
        /// 256 MiB each would otherwise be held at once).
        texts: HashMap<String, Rc<Header>>,
        budget: TextBudget,
        stack: Vec<String>,
        once: HashSet<String>,
        out: String,
    }
    impl Inliner<'_> {
        fn header(&mut self, path: &str) -> Result<Option<Rc<Header>>, ReadError> {
            if let Some(h) = self.texts.get(path) {
                return Ok(Some(h.clone()));
            }
            let Some(h) = self.content.get(path) else {
                return Ok(None);
            };
            let body = (self
                .capture
                .source_texts_in([h.as_str()], &mut self.budget)?)
            .pop()
            .unwrap_or_default();
            let pragma_once = body.lines().any(is_pragma_once);
            let kept: String = body
                .split_inclusive('\n')
                .map(|l| if is_pragma_once(l) { "\n" } else { l })
                .collect();
            let header = Rc::new(Header {
                kept: kept.into(),
                pragma_once,
            });
            self.texts.insert(path.to_string(), header.clone());
            Ok(Some(header))
        }

        fn go(
            &mut self,
            text: &str,
            from: Option<&str>,
            file: &str,
        ) -> Result<Result<(), String>, ReadError> {
            if self.stack.len() > MAX_INCLUDE_DEPTH {
                return Ok(Err(format!(
                    "its includes nest deeper than {MAX_INCLUDE_DEPTH} files"
                )));
            }
            let mut at = 0;
            // Lines up to `counted`, counted as the directives go (not from the start each time).
            let (mut counted, mut lines) = (0, 0);
            for d in directives(text.as_bytes()) {
                let Some(&Some(path)) = self.found.get(&(from, d.name.as_str(), d.form)) else {
                    continue;
                };
                if !self.content.contains_key(path) {
                    continue;
                }
                let start = text[..d.range.start].rfind('\n').map_or(0, |p| p + 1);
                let end = text[d.range.end..]
                    .find('\n')
                    .map_or(text.len(), |p| d.range.end + p + 1);
                if start < at {
                    continue;
                }
                self.out.push_str(&text[at..start]);
                lines += text[counted..end].matches('\n').count();
                counted = end;
                let next_line = lines + 1;
                // A cycle, or a `#pragma once` header inlined already: an empty line, decided
                // before its text is touched again.
                let repeat = self.stack.iter().any(|p| p == path)
                    || (self.once.contains(path)
                        && self.texts.get(path).is_some_and(|h| h.pragma_once));
                if repeat {
                    self.out.push('\n');
                } else if let Some(header) = self.header(path)? {
                    self.once.insert(path.to_string());
                    self.out
                        .push_str(&format!("#line 1 {}\n", reproducer_c::c_string(path)));
                    self.stack.push(path.to_string());
                    if let Err(why) = self.go(&header.kept, Some(path), path)? {
                        return Ok(Err(why));
                    }
                    self.stack.pop();
                    if !self.out.ends_with('\n') {
                        self.out.push('\n');
                    }
                    self.out.push_str(&format!(
                        "#line {next_line} {}\n",
                        reproducer_c::c_string(file)
                    ));
                }
                at = end;
                if self.out.len() > MAX_INLINED_BYTES {
                    return Ok(Err(too_large()));
                }
            }
            self.out.push_str(&text[at..]);
            if self.out.len() > MAX_INLINED_BYTES {
                return Ok(Err(too_large()));
            }
            Ok(Ok(()))
        }
    }
    fn is_pragma_once(line: &str) -> bool {
        let words: Vec<&str> = line
            .trim()
            .trim_start_matches('#')
            .split_whitespace()
            .collect();
        line.trim_start().starts_with('#') && words == ["pragma", "once"]
    }
    if includes.is_empty() {
        return Ok(Ok(text.to_string()));
    }
    let mut content = HashMap::new();
    let mut found = HashMap::new();
    for f in &includes.files {
        if let (Some(p), Some(h)) = (&f.path, &f.content) {
            content.entry(p.as_str()).or_insert(h);
        }
        // The first entry of a directive wins (found or not), as a search of the list did.
        found
            .entry((f.from.as_deref(), f.name.as_str(), f.form))
            .or_insert(f.path.as_deref());
    }
    let mut inliner = Inliner {
        capture,
        found,
        content,
        texts: HashMap::new(),
        budget: TextBudget::default(),
        stack: Vec::new(),
        once: HashSet::new(),
        out: String::new(),
    };
    Ok(inliner.go(text, None, main_name)?.map(|()| inliner.out))
}

/// True when `name` is an OpenCL C identifier (letters, digits, `_`, not starting with a
/// digit): the only kernel names an export writes into generated code and file names.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why kernel `name` cannot be exported, or `None`: it must be an identifier of at most
/// 1024 characters (a damaged or hostile capture may name anything).
pub fn kernel_name_problem(name: &str) -> Option<String> {
    if !is_identifier(name) {
        Some(format!(
            "its kernel name {} is not an OpenCL C identifier",
            crate::list::clip(&format!("{name:?}"), 64)
        ))
    } else if name.len() > 1024 {
        Some(format!(
            "its kernel name is {} characters long (at most 1024 are exported)",
            name.len()
        ))
    } else {
        None
    }
}

/// `s` safe inside a C block comment (`/* ... */`): `*/` cannot end the comment early (nor
/// `/*` draw a warning), `??`
/// cannot start a trigraph (`-std=c99`), control characters are escaped (a string of the
/// capture written for people to read).
pub fn c_comment(s: &str) -> String {
    crate::list::escape_controls(s)
        .replace("*/", "* /")
        .replace("/*", "/ *")
        .replace("??", "? ?")
}

/// A file name made of `kernel` (letters, digits, `_`; anything else becomes `_`).
pub(crate) fn safe_name(kernel: &str) -> String {
    let s: String = kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "kernel".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_inlined_with_line_directives() {
        let headers = vec![
            (
                "inc/mix.h".to_string(),
                "#include \"util.h\"\nint mix(int);\n".to_string(),
            ),
            ("util.h".to_string(), "#define TWO 2\n".to_string()),
        ];
        let src = "#include \"mix.h\"\n#include <stdint.h>\nkernel void k() {}\n";
        let out = inline_headers(src, &headers, "k.cl").expect("small");
        assert_eq!(
            out,
            "#line 1 \"inc/mix.h\"\n#line 1 \"util.h\"\n#define TWO 2\n#line 2 \"inc/mix.h\"\nint mix(int);\n#line 2 \"k.cl\"\n#include <stdint.h>\nkernel void k() {}\n"
        );
    }

    #[test]
    fn a_header_including_itself_is_not_inlined_forever() {
        let headers = vec![("a.h".to_string(), "#include \"a.h\"\nx\n".to_string())];
        let out = inline_headers("#include \"a.h\"\n", &headers, "m.cl").expect("small");
        assert_eq!(out.matches("#line 1 \"a.h\"").count(), 1);
        assert!(out.contains("#include \"a.h\"\nx\n"));
    }

    #[test]
    fn headers_that_include_each_other_twice_are_refused_before_they_grow_exponentially() {
        // h0 includes h1 twice, h1 includes h2 twice, ...: 2^40 copies of h40 when inlined.
        let headers: Vec<(String, String)> = (0..40)
            .map(|i| {
                let next = format!("#include \"h{}.h\"\n", i + 1);
                (format!("h{i}.h"), format!("{next}{next}int v{i};\n"))
            })
            .chain([("h40.h".to_string(), "x".repeat(1 << 10))])
            .collect();
        let why = inline_headers("#include \"h0.h\"\n", &headers, "m.cl")
            .expect_err("refused past the bound");
        assert!(why.contains("exceeds 64 MiB"), "{why}");
        // A chain deeper than the nesting bound (distinct headers, so no cycle) is refused too.
        let deep: Vec<(String, String)> = (0..=MAX_INCLUDE_DEPTH + 1)
            .map(|i| (format!("d{i}.h"), format!("#include \"d{}.h\"\n", i + 1)))
            .collect();
        let why = inline_headers("#include \"d0.h\"\n", &deep, "m.cl").expect_err("too deep");
        assert!(why.contains("nest deeper"), "{why}");
    }

    #[test]
    fn comments_cannot_be_closed_from_inside() {
        assert_eq!(c_comment("a */ b\nc ??/ /*"), "a * / b\\nc ? ?/ / *");
        assert!(is_identifier("_k9") && !is_identifier("9k") && !is_identifier(""));
        assert!(kernel_name_problem("k\") ; system(\"x\")").is_some());
        assert!(kernel_name_problem(&"k".repeat(2000)).is_some());
    }

    #[test]
    fn include_names_are_parsed() {
        assert_eq!(
            included_name("  # include \"a/b.h\" // x"),
            Some("a/b.h".into())
        );
        assert_eq!(included_name("#include <c.h>"), Some("c.h".into()));
        assert_eq!(included_name("#define X"), None);
    }
}
