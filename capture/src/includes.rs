//! Which files a program includes, found the way an OpenCL driver finds them at build time,
//! so a capture can carry them (the shim calls [`scan`] after every successful build) and the
//! analyzer can point every later build at the captured copies ([`directives`] locates the
//! header names to redirect).
//!
//! This is not a preprocessor (the shim must not link libclang): it follows every
//! `#include` it sees, in every branch of every conditional, so it records a superset of
//! what the driver read. A file it cannot find is recorded by name, without content: that
//! is harmless when the directive sat in a branch the driver skipped, and named by
//! `cltrap show` / `replay` otherwise. `#include MACRO(...)` is followed by expanding it
//! with the macros of the build options and of the `#define`s met so far
//! ([`crate::macros`]); one that does not expand to a file name is recorded as not followed.
//!
//! Search order, as PoCL (and clang with `-I.`) resolve: a `"quoted"` name first in the
//! directory of the file that includes it (not for the program's own source, which the
//! driver compiles from a file of its own), then the application's working directory at
//! build time, then each `-I` directory in order; an `<angled>` name in the working
//! directory, then each `-I` directory. An absolute name is taken as it is.

use crate::macros::Macros;
use crate::model::IncludeForm;
use std::collections::{HashSet, VecDeque};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

/// One `#include` directive of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The name between the delimiters, or the macro's name.
    pub name: String,
    /// How the name is written.
    pub form: IncludeForm,
    /// Byte range of the name *with* its quotes or brackets, to rewrite it in place.
    pub range: Range<usize>,
}

/// Every `#include` directive of `text`, in order; directives inside comments and string
/// literals are not directives.
pub fn directives(text: &[u8]) -> Vec<Directive> {
    preprocessing(text)
        .into_iter()
        .filter_map(|p| match p {
            Pp::Include(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// The directives the include scan acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pp {
    Include(Directive),
    /// `#define` with the rest of its line.
    Define(String),
    /// `#undef` with the rest of its line.
    Undef(String),
}

/// Every `#include`, `#define` and `#undef` of `text`, in order.
fn preprocessing(text: &[u8]) -> Vec<Pp> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let n = text.len();
    while i < n {
        let c = text[i];
        match c {
            b'\\' if text.get(i + 1) == Some(&b'\n') => i += 2,
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => i += 1,
            b'/' if text.get(i + 1) == Some(&b'/') => {
                while i < n && text[i] != b'\n' {
                    i += if text[i] == b'\\' && text.get(i + 1) == Some(&b'\n') {
                        2
                    } else {
                        1
                    };
                }
            }
            b'/' if text.get(i + 1) == Some(&b'*') => i = block_comment_end(text, i + 2),
            b'"' | b'\'' => {
                line_start = false;
                i = literal_end(text, i + 1, c);
            }
            b'#' if line_start => {
                line_start = false;
                let (directive, end) = directive_at(text, i + 1);
                out.extend(directive);
                i = end;
            }
            _ => {
                line_start = false;
                i += 1;
            }
        }
    }
    out
}

fn block_comment_end(text: &[u8], mut i: usize) -> usize {
    while i + 1 < text.len() {
        if text[i] == b'*' && text[i + 1] == b'/' {
            return i + 2;
        }
        i += 1;
    }
    text.len()
}

fn literal_end(text: &[u8], mut i: usize, quote: u8) -> usize {
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// Skips spaces, tabs, line splices and block comments inside a directive line.
fn skip_blank(text: &[u8], mut i: usize) -> usize {
    loop {
        match text.get(i) {
            Some(b' ' | b'\t' | b'\r') => i += 1,
            Some(b'\\') if text.get(i + 1) == Some(&b'\n') => i += 2,
            Some(b'/') if text.get(i + 1) == Some(&b'*') => i = block_comment_end(text, i + 2),
            _ => return i,
        }
    }
}

fn identifier_end(text: &[u8], mut i: usize) -> usize {
    while i < text.len() && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
        i += 1;
    }
    i
}

/// Where the logical line that holds `i` ends (at its newline, line splices joined), and
/// where its text ends before a trailing `//` comment and white space.
fn line_end(text: &[u8], mut i: usize) -> (usize, usize) {
    let start = i;
    let mut text_end = None;
    while i < text.len() && text[i] != b'\n' {
        match text[i] {
            b'\\' if text.get(i + 1) == Some(&b'\n') => i += 2,
            b'/' if text.get(i + 1) == Some(&b'/') && text_end.is_none() => {
                text_end = Some(i);
                i += 2;
            }
            b'/' if text.get(i + 1) == Some(&b'*') && text_end.is_none() => {
                i = block_comment_end(text, i + 2)
            }
            q @ (b'"' | b'\'') if text_end.is_none() => i = literal_end(text, i + 1, q),
            _ => i += 1,
        }
    }
    let i = i.min(text.len());
    let mut end = text_end.unwrap_or(i);
    while end > start && text[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    (i, end)
}

/// The directive after a `#` at `i` (if the scan acts on it) and where scanning goes on.
fn directive_at(text: &[u8], i: usize) -> (Option<Pp>, usize) {
    let i = skip_blank(text, i);
    let word_end = identifier_end(text, i);
    let word = &text[i..word_end];
    if word == b"define" || word == b"undef" {
        let (end, text_end) = line_end(text, word_end);
        let rest = String::from_utf8_lossy(&text[word_end..text_end.max(word_end)]).into_owned();
        let pp = if word == b"define" {
            Pp::Define(rest)
        } else {
            Pp::Undef(rest)
        };
        return (Some(pp), end);
    }
    if word != b"include" {
        return (None, word_end.max(i));
    }
    let i = skip_blank(text, word_end);
    let (close, form) = match text.get(i) {
        Some(b'"') => (b'"', IncludeForm::Quoted),
        Some(b'<') => (b'>', IncludeForm::Angled),
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            // `#include MACRO...`: the whole rest of the line, which the scan expands.
            let (end, text_end) = line_end(text, i);
            let name = String::from_utf8_lossy(&text[i..text_end]).into_owned();
            let d = Directive {
                name,
                form: IncludeForm::Macro,
                range: i..text_end,
            };
            return (Some(Pp::Include(d)), end);
        }
        _ => return (None, i),
    };
    let mut j = i + 1;
    while j < text.len() && text[j] != close && text[j] != b'\n' {
        j += 1;
    }
    if text.get(j) != Some(&close) {
        return (None, j);
    }
    let name = String::from_utf8_lossy(&text[i + 1..j]).into_owned();
    (
        Some(Pp::Include(Directive {
            name,
            form,
            range: i..j + 1,
        })),
        j + 1,
    )
}

/// `path` without `.` components and with `..` applied to the component before it (what a
/// person reads; the file system is not asked).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`; a relative path keeps its leading `..`.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where the driver would find `name`, included from `includer` (`None`: the program's own
/// source), with working directory `cwd` and `-I` directories `dirs`.
pub fn resolve(
    name: &str,
    form: IncludeForm,
    includer: Option<&Path>,
    cwd: &Path,
    dirs: &[PathBuf],
) -> Option<PathBuf> {
    if form == IncludeForm::Macro || name.is_empty() {
        return None;
    }
    if Path::new(name).is_absolute() {
        let p = normalize(Path::new(name));
        return p.is_file().then_some(p);
    }
    let own_dir = match form {
        IncludeForm::Quoted => includer.and_then(Path::parent),
        _ => None,
    };
    own_dir
        .into_iter()
        .chain(std::iter::once(cwd))
        .chain(dirs.iter().map(PathBuf::as_path))
        .map(|d| normalize(&d.join(name)))
        .find(|p| p.is_file())
}

/// One include the scan met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// As written in the directive.
    pub name: String,
    /// How it is written.
    pub form: IncludeForm,
    /// The file holding the directive (`None`: the program's own source).
    pub from: Option<PathBuf>,
    /// Where it was found (`None`: nowhere, or a macro).
    pub path: Option<PathBuf>,
    /// Its content, once per path (the first entry naming a path carries it).
    pub bytes: Option<Vec<u8>>,
}

/// Bounds that keep a scan cheap inside the application, whatever it includes.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Files read at most.
    pub files: usize,
    /// Bytes read at most.
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            files: 1024,
            bytes: 64 << 20,
        }
    }
}

/// Every include reachable from `sources` (the program's own text, and any headers embedded
/// by `clCompileProgram`), following found files recursively, with each file read once.
/// `embedded` names are the embedded headers' include names: the driver takes those from
/// memory, so they are not searched on disk.
pub fn scan(
    sources: &[&[u8]],
    embedded: &[&str],
    options: &str,
    cwd: &Path,
    limits: Limits,
) -> Vec<Found> {
    let dirs = crate::options::include_dirs(options, cwd);
    let mut out: Vec<Found> = Vec::new();
    let mut seen: HashSet<(Option<PathBuf>, String, IncludeForm)> = HashSet::new();
    let mut read: HashSet<PathBuf> = HashSet::new();
    let mut queue: VecDeque<(Option<PathBuf>, Vec<u8>)> =
        sources.iter().map(|s| (None, s.to_vec())).collect();
    let mut bytes_read = 0usize;
    let mut macros = Macros::from_options(options);
    while let Some((from, text)) = queue.pop_front() {
        for pp in preprocessing(&text) {
            let d = match pp {
                Pp::Define(line) => {
                    macros.define(&line);
                    continue;
                }
                Pp::Undef(line) => {
                    macros.undef(&line);
                    continue;
                }
                Pp::Include(d) => d,
            };
            if from.is_none() && embedded.contains(&d.name.as_str()) {
                continue;
            }
            if !seen.insert((from.clone(), d.name.clone(), d.form)) {
                continue;
            }
            let path = match d.form {
                IncludeForm::Macro => macros
                    .include_target(&d.name)
                    .and_then(|(name, form)| resolve(&name, form, from.as_deref(), cwd, &dirs)),
                form => resolve(&d.name, form, from.as_deref(), cwd, &dirs),
            };
            let mut bytes = None;
            if let Some(p) = &path {
                if read.len() < limits.files && !read.contains(p) {
                    if let Ok(b) = std::fs::read(p) {
                        if bytes_read + b.len() <= limits.bytes {
                            bytes_read += b.len();
                            read.insert(p.clone());
                            queue.push_back((Some(p.clone()), b.clone()));
                            bytes = Some(b);
                        }
                    }
                }
            }
            out.push(Found {
                name: d.name,
                form: d.form,
                from: from.clone(),
                path: path.filter(|p| read.contains(p)),
                bytes,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, IncludeForm)> {
        directives(text.as_bytes())
            .into_iter()
            .map(|d| (d.name, d.form))
            .collect()
    }

    #[test]
    fn directives_are_found_in_every_spelling_and_never_in_comments_or_strings() {
        let text = "#include \"a.h\"\n  #  include <b.h> // c\n#include/**/\"c.h\"\n\
                    // #include \"no1.h\"\n/* #include \"no2.h\"\n*/ #include \"e.h\"\n\
                    char *s = \"#include \\\"no4.h\\\"\";\n#define X \\\n#include \"no5.h\"\n\
                    #ifdef Y\n#include HEADER\n#else\n#include \"d.h\"\n#endif\n#import \"no6.h\"\n";
        assert_eq!(
            names(text),
            [
                ("a.h".into(), IncludeForm::Quoted),
                ("b.h".into(), IncludeForm::Angled),
                ("c.h".into(), IncludeForm::Quoted),
                // A comment is one space: the directive starts its line.
                ("e.h".into(), IncludeForm::Quoted),
                ("HEADER".into(), IncludeForm::Macro),
                ("d.h".into(), IncludeForm::Quoted),
            ]
        );
        let d = &directives(text.as_bytes())[0];
        assert_eq!(&text[d.range.clone()], "\"a.h\"");
    }

    #[test]
    fn a_macro_include_expanding_to_an_unterminated_literal_is_recorded_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let src = b"#define Q \"\n#include Q\n#define R \"a.h\n#include R\n";
        let found = scan(&[src], &[], "", dir.path(), Limits::default());
        let names: Vec<_> = found
            .iter()
            .map(|f| (f.name.as_str(), f.path.is_none()))
            .collect();
        assert_eq!(names, [("Q", true), ("R", true)]);
    }

    #[test]
    fn a_scan_follows_nested_includes_in_the_drivers_order_and_names_what_it_cannot_find() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let app = root.join("app");
        std::fs::create_dir_all(app.join("inc/sub")).unwrap();
        std::fs::write(app.join("main.h"), "#define A 1\n").unwrap();
        std::fs::write(
            app.join("inc/defs.h"),
            "#include \"sub/inner.h\"\n#include \"main.h\"\n",
        )
        .unwrap();
        std::fs::write(app.join("inc/sub/inner.h"), "#define B 2\n").unwrap();
        // Shadowed by the working directory's main.h for quoted names from the program.
        std::fs::write(app.join("inc/main.h"), "#define A 9\n").unwrap();
        let src = b"#include \"./main.h\"\n#include <defs.h>\n#ifdef NOPE\n#include \"gone.h\"\n#endif\n#include \"emb.h\"\n";
        let found = scan(&[src], &["emb.h"], "-I inc", &app, Limits::default());
        let rows: Vec<(String, Option<PathBuf>, Option<PathBuf>, bool)> = found
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    f.from.clone(),
                    f.path.clone(),
                    f.bytes.is_some(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("./main.h".into(), None, Some(app.join("main.h")), true),
                ("defs.h".into(), None, Some(app.join("inc/defs.h")), true),
                ("gone.h".into(), None, None, false),
                (
                    "sub/inner.h".into(),
                    Some(app.join("inc/defs.h")),
                    Some(app.join("inc/sub/inner.h")),
                    true
                ),
                // Its own directory first: inc/main.h, read once.
                (
                    "main.h".into(),
                    Some(app.join("inc/defs.h")),
                    Some(app.join("inc/main.h")),
                    true
                ),
            ]
        );
    }

    #[test]
    fn macro_includes_are_followed_with_the_options_and_the_files_defines() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let lib = root.join("share/OpenCL");
        std::fs::create_dir_all(&lib).unwrap();
        // hashcat's pattern: the path through -D macros, a header naming another through a
        // macro defined in the including file.
        std::fs::write(lib.join("inc_vendor.h"), "#define V 1\n").unwrap();
        std::fs::write(
            lib.join("inc_common.cl"),
            "#define NEXT M2S(INCLUDE_PATH/inc_types.h)\n#include NEXT // trailing\n",
        )
        .unwrap();
        std::fs::write(lib.join("inc_types.h"), "typedef ulong u64;\n").unwrap();
        let src = b"#include M2S(INCLUDE_PATH/inc_vendor.h)\n#include M2S(INCLUDE_PATH/inc_common.cl)\n#include NOT_DEFINED\n";
        let options = format!(
            "-D INCLUDE_PATH={} -D XM2S(x)=#x -D M2S(x)=XM2S(x) -w",
            lib.display()
        );
        let found = scan(&[src], &[], &options, root, Limits::default());
        let rows: Vec<(String, IncludeForm, Option<PathBuf>)> = found
            .iter()
            .map(|f| (f.name.clone(), f.form, f.path.clone()))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "M2S(INCLUDE_PATH/inc_vendor.h)".into(),
                    IncludeForm::Macro,
                    Some(lib.join("inc_vendor.h"))
                ),
                (
                    "M2S(INCLUDE_PATH/inc_common.cl)".into(),
                    IncludeForm::Macro,
                    Some(lib.join("inc_common.cl"))
                ),
                ("NOT_DEFINED".into(), IncludeForm::Macro, None),
                (
                    "NEXT".into(),
                    IncludeForm::Macro,
                    Some(lib.join("inc_types.h"))
                ),
            ]
        );
        // The directive's range is the whole invocation, to point it at a copy.
        let d = &directives(src)[0];
        assert_eq!(&src[d.range.clone()], b"M2S(INCLUDE_PATH/inc_vendor.h)");
    }

    #[test]
    fn paths_are_normalized_without_asking_the_file_system() {
        assert_eq!(
            normalize(Path::new("/a/./b/../c.h")),
            PathBuf::from("/a/c.h")
        );
    }
}
