//! The headers a program included, laid out where every later build finds them instead of
//! the application's file system.
//!
//! A capture stores each included file by content (`ProgramRecord::includes`). Before a
//! build or a parse, [`Headers::materialize`] writes them into a private directory named
//! by their digest (under the user's own cache folder, `$XDG_CACHE_HOME/cltrap/headers`,
//! mode 0700 and owned by the user, checked before use; shared by every process of that
//! user that needs the same set; each copy checked against what it must hold and rewritten
//! atomically when it does not), mirroring their absolute paths at capture time, so nested
//! `"relative"` includes resolve between the copies exactly as they did between the
//! originals. A path that would leave the mirror (`..`, not absolute) is refused, never
//! cleaned. Then:
//! - every `#include` the capture resolved (in the program's text and in each copied
//!   header) is pointed at its copy's absolute path ([`Headers::source`]), so no search
//!   happens at all — not even in the directory cltrap runs in, which PoCL searches first;
//! - the build options' `-I` directories and the build directory are rewritten to their
//!   mirrors ([`Headers::options`]), for libclang (which parses the user's own text) and
//!   for plain relative names the capture did not find;
//! - last, every text handed to a compiler (source, parse text, each copy) is checked as
//!   clang's lexer reads it — trigraphs, digraphs, line splices, comments, `#import`,
//!   `#include_next`, `__has_include`, file-naming pragmas ([`confine_includes`]): a plain
//!   name that leaves the mirror points at a file that cannot exist, and a name the capture
//!   did not resolve to a copy (an `#include MACRO` it could not expand) is refused in place
//!   with an `#error` naming the directive and its line, so nothing outside the capture is
//!   ever opened.

use cltrap_capture::includes::{directives, Found};
use cltrap_capture::options::rewrite_include_dirs;
use cltrap_capture::writer::digest;
use cltrap_capture::{Capture, Hash, IncludeForm, IncludedFile, Includes, ReadError};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

mod confine;
use confine::confine_includes;
pub use confine::ASM_WORDS;
#[cfg(test)]
use confine::{line_breaks, Lexed, FILE_DIRECTIVES, FILE_QUERIES, REFUSED};

/// Why captured headers could not be laid out.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    /// A header's blob is missing or damaged.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The private directory could not be written.
    #[error("cannot write the captured header {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A recorded path would leave the header mirror.
    #[error("the capture names the header path {path:?}, which is not an absolute path without `..`; it is refused")]
    Escape {
        /// The path as recorded.
        path: String,
    },
    /// The header cache folder is not the user's own private folder.
    #[error("{path} is refused as the header cache: {why}")]
    Unsafe {
        /// The folder.
        path: PathBuf,
        /// Why (owner, kind).
        why: String,
    },
}

/// A program's included files with their bytes, and (when there are any) their private
/// copies on disk.
#[derive(Debug, Clone, Default)]
pub struct Headers {
    /// What was included, as recorded.
    pub includes: Includes,
    /// The bytes of every recorded file, by digest.
    pub blobs: HashMap<Hash, Vec<u8>>,
    /// The private directory the copies live in (`None`: nothing to lay out).
    root: Option<PathBuf>,
    /// The temporary folder `root` lies in when the user has no cache folder (removed with
    /// the last clone).
    scratch: Option<Arc<tempfile::TempDir>>,
}

impl Headers {
    /// The headers of a captured program, laid out on disk.
    pub fn from_capture(capture: &Capture, includes: &Includes) -> Result<Headers, HeaderError> {
        // Each file read once; all of them bounded together as one program's texts are
        // ([`Capture::source_texts`]): distinct large headers that share their chunks take
        // little room in a capture and much in memory.
        let mut blobs = HashMap::new();
        let mut budget = cltrap_capture::reader::TextBudget::default();
        for f in &includes.files {
            if let Some(h) = &f.content {
                if !blobs.contains_key(h) {
                    let bytes = capture.blob(h)?;
                    budget.charge(bytes.len())?;
                    blobs.insert(h.clone(), bytes);
                }
            }
        }
        Headers {
            includes: includes.clone(),
            blobs,
            root: None,
            scratch: None,
        }
        .materialize(true)
    }

    /// The headers of an OpenCL C file on disk (`cltrap fuzz K.cl`): searched in `dir` (the
    /// file's folder) first, then in the `-I` directories of `options` (made absolute
    /// against the current directory first, as a user typing them means). Returns the
    /// options with absolute `-I` directories too.
    pub fn from_disk(
        source: &str,
        options: &str,
        dir: &Path,
    ) -> Result<(Headers, String), HeaderError> {
        let here = std::env::current_dir().unwrap_or_default();
        let dir = cltrap_capture::includes::normalize(&here.join(dir));
        let options = rewrite_include_dirs(options, &[], |d| {
            cltrap_capture::includes::normalize(&here.join(d))
                .to_string_lossy()
                .into_owned()
        });
        let found = cltrap_capture::includes::scan(
            &[source.as_bytes()],
            &[],
            &options,
            &dir,
            Default::default(),
        );
        let headers = Headers::from_found(&dir, found).materialize(false)?;
        Ok((headers, options))
    }

    /// Headers from a scan (the shim's at capture, or [`Headers::from_disk`]).
    pub fn from_found(build_dir: &Path, found: Vec<Found>) -> Headers {
        let mut blobs = HashMap::new();
        let text = |p: &PathBuf| p.to_string_lossy().into_owned();
        let files = found
            .into_iter()
            .map(|f| {
                let content = f.bytes.map(|b| {
                    let h = digest(&b);
                    blobs.insert(h.clone(), b);
                    h
                });
                IncludedFile {
                    name: f.name,
                    form: f.form,
                    from: f.from.as_ref().map(text),
                    path: f.path.as_ref().map(text),
                    content,
                }
            })
            .collect();
        Headers {
            includes: Includes {
                build_dir: text(&build_dir.to_path_buf()),
                files,
            },
            blobs,
            root: None,
            scratch: None,
        }
    }

    /// One line per include that was not found at capture time (`name (from FILE)`).
    pub fn missing(includes: &Includes) -> Vec<String> {
        includes
            .missing()
            .map(|f| {
                let from = f.from.as_deref().unwrap_or("the program's source");
                match f.form {
                    IncludeForm::Macro => {
                        format!(
                            "{} (a macro include in {from}; it did not expand to a file that exists)",
                            f.name
                        )
                    }
                    _ => format!("{} (included from {from})", f.name),
                }
            })
            .collect()
    }

    /// Where the copy of a file captured at `path` lives: below `root`, or an error for a
    /// path that is not absolute or has a `..` (refused, not cleaned: a capture naming one
    /// is hostile or damaged).
    fn mirror(root: &Path, path: &str) -> Result<PathBuf, HeaderError> {
        if !cltrap_capture::validate::is_confined_absolute(path) {
            return Err(HeaderError::Escape {
                path: path.chars().take(200).collect(),
            });
        }
        Ok(root.join(path.trim_start_matches('/')))
    }

    /// Writes the copies (once per set of contents) and remembers where. `always`: lay out a
    /// (possibly empty) mirror even when nothing was included, so a capture's `-I`
    /// directories are mirrored too and never reach the analyst's file system.
    fn materialize(mut self, always: bool) -> Result<Headers, HeaderError> {
        if self.includes.is_empty() && !always {
            return Ok(self);
        }
        let key = serde_json::to_vec(&self.includes).unwrap_or_default();
        let (base, scratch) = cache_folder()?;
        let root = base.join(&digest(&key)[..24]);
        for f in &self.includes.files {
            let (Some(path), Some(hash)) = (&f.path, &f.content) else {
                continue;
            };
            let Some(bytes) = self.blobs.get(hash) else {
                continue;
            };
            let dest = Self::mirror(&root, path)?;
            let text = self.redirect(&root, Some(path), bytes)?;
            if holds(&dest, &text) {
                continue;
            }
            write_atomically(&dest, &text)?;
        }
        let build_dir = if self.includes.build_dir.is_empty() {
            root.clone()
        } else {
            Self::mirror(&root, &self.includes.build_dir)?
        };
        std::fs::create_dir_all(&build_dir).map_err(|source| HeaderError::Io {
            path: build_dir,
            source,
        })?;
        self.root = Some(root);
        self.scratch = scratch;
        Ok(self)
    }

    /// `text` (the program's source when `from` is `None`, else the header captured at
    /// `from`) with each directive the capture resolved pointed at its copy.
    fn redirect(
        &self,
        root: &Path,
        from: Option<&str>,
        text: &[u8],
    ) -> Result<Vec<u8>, HeaderError> {
        self.redirect_where(root, from, text, |_| true)
    }

    /// [`Headers::redirect`] of the directives `wanted` picks.
    fn redirect_where(
        &self,
        root: &Path,
        from: Option<&str>,
        text: &[u8],
        wanted: impl Fn(&cltrap_capture::includes::Directive) -> bool,
    ) -> Result<Vec<u8>, HeaderError> {
        let mut out = Vec::with_capacity(text.len());
        let mut at = 0;
        for d in directives(text).into_iter().filter(|d| wanted(d)) {
            let target = self
                .includes
                .files
                .iter()
                .find(|f| f.from.as_deref() == from && f.name == d.name && f.form == d.form);
            let Some(path) = target.and_then(|f| f.path.as_deref()) else {
                // A name already pointed into the mirror (a pass's text built again) stays.
                if escapes(&d.name) && !Path::new(&d.name).starts_with(root) {
                    // The capture recorded no file for it: the analyst's own file of that
                    // name must never be read in its place (`#include "/etc/shadow"` would
                    // print its first line in the compiler's error), so the directive names
                    // a file of the mirror that does not exist, and the build fails there.
                    out.extend_from_slice(&text[at..d.range.start]);
                    out.extend_from_slice(format!("\"{UNRECORDED}\"").as_bytes());
                    at = d.range.end;
                }
                continue;
            };
            out.extend_from_slice(&text[at..d.range.start]);
            let copy = Self::mirror(root, path)?;
            out.extend_from_slice(format!("\"{}\"", copy.display()).as_bytes());
            at = d.range.end;
        }
        out.extend_from_slice(&text[at..]);
        // Whatever the rewriting above did or did not recognise, the text the compiler gets
        // names no file outside the mirror.
        Ok(confine_includes(&out, Some(root)))
    }

    /// The program text for the driver: includes pointed at the copies. (Every recorded
    /// path was checked when the copies were laid out, so none is refused here.)
    pub fn source(&self, text: &str) -> String {
        match &self.root {
            Some(root) => match self.redirect(root, None, text.as_bytes()) {
                Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                Err(_) => without_escaping_includes(text),
            },
            None => without_escaping_includes(text),
        }
    }

    /// The program text a pass parses and rewrites: the user's own text, except directives
    /// that [`Headers::options`]' mirrored directories cannot serve — `#include MACRO(...)`
    /// and absolute names (hashcat's `-D INCLUDE_PATH=/usr/share/hashcat/OpenCL`) — pointed
    /// at their copies, so a capture is analysed where the application's headers are gone.
    /// Lines stay where they were; only those directives' lines change.
    pub fn parse_source(&self, text: &str) -> String {
        match &self.root {
            Some(root) => match self.redirect_where(root, None, text.as_bytes(), |d| {
                d.form == IncludeForm::Macro || Path::new(&d.name).is_absolute() || escapes(&d.name)
            }) {
                Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                Err(_) => without_escaping_includes(text),
            },
            None => without_escaping_includes(text),
        }
    }

    /// Build options for the copies: the build directory's mirror first (the driver looked
    /// in the working directory first), then each `-I` directory's mirror.
    pub fn options(&self, options: &str) -> String {
        let Some(root) = &self.root else {
            return options.to_string();
        };
        let build_dir = Path::new(&self.includes.build_dir);
        let first = Self::mirror(root, &self.includes.build_dir).unwrap_or_else(|_| root.clone());
        rewrite_include_dirs(
            options,
            &["-I".into(), first.to_string_lossy().into_owned()],
            |d| {
                // `..` above the root stays at the root (`/..` is `/`), so no `-I` leaves
                // the mirror.
                let abs = confine(&Path::new("/").join(build_dir).join(d));
                let m = root.join(abs.strip_prefix("/").unwrap_or(&abs));
                // Missing directories are harmless to clang; create them for tidy logs.
                let _ = std::fs::create_dir_all(&m);
                m.to_string_lossy().into_owned()
            },
        )
    }
}

/// `path` made absolute without `.` or `..`: a `..` pops a name, and at the root stays there.
fn confine(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The folder the mirrors live in: `$XDG_CACHE_HOME/cltrap/headers` (each level below the
/// cache folder made 0700 and checked to be a folder, not a link, owned by the user), or a
/// fresh private temporary folder when the user has no cache folder.
fn cache_folder() -> Result<(PathBuf, Option<Arc<tempfile::TempDir>>), HeaderError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HeaderError::Io { path, source }
    };
    let Some(cache) = dirs::cache_dir() else {
        let t = tempfile::Builder::new()
            .prefix("cltrap-headers-")
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?;
        return Ok((t.path().to_path_buf(), Some(Arc::new(t))));
    };
    std::fs::create_dir_all(&cache).map_err(io(&cache))?;
    let mut dir = cache;
    for level in ["cltrap", "headers"] {
        dir.push(level);
        private_folder(&dir)?;
    }
    Ok((dir, None))
}

/// Makes `dir` (mode 0700) unless it exists, then checks it is a folder (not a link) owned by
/// this user and closes it to others if it was open.
fn private_folder(dir: &Path) -> Result<(), HeaderError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let unsafe_dir = |why: String| HeaderError::Unsafe {
        path: dir.to_path_buf(),
        why,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(HeaderError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|source| HeaderError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir("it is not a folder (a link or a file)".into()));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if meta.uid() != uid {
        return Err(unsafe_dir(format!(
            "it belongs to user {}, not to this user ({uid})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| HeaderError::Io {
                path: dir.to_path_buf(),
                source,
            },
        )?;
    }
    Ok(())
}

/// Whether `dest` is a regular file (not a link) holding exactly `bytes`: a copy laid out
/// before, and not changed since.
fn holds(dest: &Path, bytes: &[u8]) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dest)
    else {
        return false;
    };
    if !file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
    {
        return false;
    }
    let mut have = Vec::with_capacity(bytes.len());
    file.take(bytes.len() as u64 + 1)
        .read_to_end(&mut have)
        .is_ok()
        && have == bytes
}

/// Writes `dest` whole or not at all: a fresh temporary file next to it (created
/// exclusively), renamed over it (over a link, never through it).
fn write_atomically(dest: &Path, bytes: &[u8]) -> Result<(), HeaderError> {
    use std::io::Write;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HeaderError::Io { path, source }
    };
    let parent = dest.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(io(parent))?;
    tmp.write_all(bytes).map_err(io(tmp.path()))?;
    tmp.persist(dest).map_err(|e| HeaderError::Io {
        path: dest.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// The file an `#include` that escapes (absolute, or with a `..` component) and that the
/// capture resolved to no file is pointed at: below `/dev/null`, so it can never exist.
const UNRECORDED: &str = "/dev/null/cltrap-unrecorded-include.h";

/// `text` with every escaping `#include` pointed at [`UNRECORDED`] and every include the
/// capture cannot have resolved refused (a program whose capture recorded no headers at
/// all): [`confine_includes`] without a mirror. Public for the texts that leave cltrap for
/// another compiler (an export's reproducer builds them with the user's driver).
pub fn without_escaping_includes(text: &str) -> String {
    String::from_utf8_lossy(&confine_includes(text.as_bytes(), None)).into_owned()
}

/// Whether an include name could reach a file outside the mirror's search path on the
/// analyst's machine: absolute, or climbing with `..`.
fn escapes(name: &str) -> bool {
    let path = Path::new(name);
    path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `#include` of a file outside the capture that the capture never recorded is not
    /// handed to the compiler: it would read the analyst's own file (a hostile capture's
    /// `#include "/etc/shadow"` printed its first line in the build error).
    #[test]
    fn unrecorded_includes_that_escape_never_reach_the_analysts_files() {
        let app = tempfile::tempdir().unwrap();
        let src = "#include \"/etc/passwd\"\n#include \"../../../../etc/hostname\"\n#include \"local.h\"\nkernel void k() {}\n";
        let h = Headers::from_found(app.path(), Vec::new())
            .materialize(false)
            .unwrap();
        for text in [h.source(src), h.parse_source(src)] {
            assert!(!text.contains("/etc/"), "{text}");
            assert!(!Path::new(UNRECORDED).exists());
            assert!(text.contains(UNRECORDED), "{text}");
            assert!(
                text.contains("#include \"local.h\""),
                "a plain name stays: {text}"
            );
            assert_eq!(text.lines().count(), src.lines().count());
        }
    }

    #[test]
    fn copies_resolve_between_themselves_and_the_source_points_at_them() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let app = base.join("app");
        std::fs::create_dir_all(app.join("inc")).unwrap();
        std::fs::write(app.join("main.h"), "#define A 1\n").unwrap();
        std::fs::write(app.join("inc/defs.h"), "#include \"main.h\"\n#define B 2\n").unwrap();
        let src = "#include \"main.h\"\n#include <defs.h>\nkernel void k() {}\n";
        let found = cltrap_capture::includes::scan(
            &[src.as_bytes()],
            &[],
            "-I inc",
            &app,
            Default::default(),
        );
        let h = Headers::from_found(&app, found).materialize(false).unwrap();
        // The originals go away: only the copies remain.
        std::fs::remove_dir_all(&app).unwrap();
        let rewritten = h.source(src);
        assert_eq!(rewritten.lines().count(), src.lines().count());
        let root = h.root.clone().unwrap();
        let defs = Headers::mirror(&root, &app.join("inc/defs.h").to_string_lossy()).unwrap();
        assert!(
            rewritten.contains(&format!("\"{}\"", defs.display())),
            "{rewritten}"
        );
        let copy = std::fs::read_to_string(&defs).unwrap();
        assert!(
            copy.contains(&format!(
                "\"{}\"",
                Headers::mirror(&root, &app.join("main.h").to_string_lossy())
                    .unwrap()
                    .display()
            )),
            "{copy}"
        );
        let opts = h.options("-DX -I inc");
        let words = cltrap_capture::options::split_options(&opts);
        assert_eq!(words[0], "-I");
        assert!(words[1].ends_with("app"), "{opts}");
        assert_eq!(words[2], "-DX");
        assert!(
            words[4].ends_with("app/inc") && words[4].starts_with(&*root.to_string_lossy()),
            "{opts}"
        );
    }

    /// Headers as a capture records them: one file at `path`, included from the source.
    fn recorded(build_dir: &str, path: &str, bytes: &[u8]) -> Headers {
        let h = digest(bytes);
        Headers {
            includes: Includes {
                build_dir: build_dir.into(),
                files: vec![IncludedFile {
                    name: "x.h".into(),
                    form: IncludeForm::Quoted,
                    from: None,
                    path: Some(path.into()),
                    content: Some(h.clone()),
                }],
            },
            blobs: [(h, bytes.to_vec())].into(),
            root: None,
            scratch: None,
        }
    }

    #[test]
    fn paths_that_would_leave_the_mirror_are_refused_and_nothing_is_written() {
        let tag = format!("cltrap-escape-{}", std::process::id());
        for (build_dir, path) in [
            ("/app", format!("/../../../../../../tmp/{tag}-a")),
            ("/app", format!("/app/../../../../../../../tmp/{tag}-b")),
            ("/app", format!("tmp/{tag}-c")),
            ("/../../../../../tmp", format!("/app/{tag}-d")),
            ("/app/../../../../../../tmp", format!("/app/{tag}-e")),
        ] {
            let e = recorded(build_dir, &path, b"#define X 1\n")
                .materialize(true)
                .unwrap_err();
            assert!(matches!(e, HeaderError::Escape { .. }), "{path}: {e}");
        }
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&tag))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn include_dirs_above_the_root_stay_inside_the_mirror() {
        let h = recorded("/app/build", "/app/inc/x.h", b"#define X 1\n")
            .materialize(true)
            .unwrap();
        let root = h.root.clone().unwrap();
        let opts = h.options("-I ../../../../.. -I/../../etc -I ../inc");
        let words = cltrap_capture::options::split_options(&opts);
        for w in words.iter().filter(|w| *w != "-I") {
            let p = Path::new(w);
            assert!(
                p.starts_with(&root) && !p.components().any(|c| c == Component::ParentDir),
                "{w} leaves {}",
                root.display()
            );
        }
        assert_eq!(words[7], root.join("app/inc").to_string_lossy());
    }

    #[test]
    fn a_changed_copy_is_laid_out_again_from_the_capture() {
        let bytes = format!("#define PLANTED_TEST {}\n", std::process::id());
        let h = recorded("/app", "/app/planted.h", bytes.as_bytes())
            .materialize(true)
            .unwrap();
        let copy = Headers::mirror(h.root.as_ref().unwrap(), "/app/planted.h").unwrap();
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), bytes);
        // Another process of the user, or anything else, changed it: replaced, not trusted.
        std::fs::write(&copy, "#define PLANTED_TEST 100\n").unwrap();
        let again = recorded("/app", "/app/planted.h", bytes.as_bytes())
            .materialize(true)
            .unwrap();
        assert_eq!(again.root, h.root);
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), bytes);
        // A link in its place is replaced, its target left alone.
        let target = tempfile::NamedTempFile::new().unwrap();
        std::fs::remove_file(&copy).unwrap();
        std::os::unix::fs::symlink(target.path(), &copy).unwrap();
        recorded("/app", "/app/planted.h", bytes.as_bytes())
            .materialize(true)
            .unwrap();
        assert!(!std::fs::symlink_metadata(&copy)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(target.path()).unwrap(), b"");
        // The cache folder is the user's alone.
        use std::os::unix::fs::PermissionsExt;
        let base = h.root.as_ref().unwrap().parent().unwrap();
        let mode = std::fs::metadata(base).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    /// A file outside every mirror that each hostile spelling below names.
    const OUTSIDE: &str = "/tmp/cltrap-outside-test/hdr.h";

    /// What a hostile spelling must become.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Becomes {
        /// Its name points at [`UNRECORDED`].
        Sentinel,
        /// The directive is an `#error` naming it and its line.
        Refused,
        /// `__has_include` with a computed name is renamed.
        Renamed,
        /// A `dependency` pragma outside a directive is a `GCC error` pragma.
        PragmaError,
    }

    /// Sources that made clang 15 (PoCL's) open `OUTSIDE` (checked with `clang -E -x cl`
    /// under strace) before their directives were found as clang's lexer reads them.
    fn hostile_spellings() -> Vec<(&'static str, String, Becomes)> {
        use Becomes::*;
        let o = OUTSIDE;
        let spliced = o.replace("outside", "out\\\nside");
        vec![
            (
                "object-like macro",
                format!("#define P \"{o}\"\n#include P\n"),
                Refused,
            ),
            (
                "function-like macro",
                format!("#define S(x) #x\n#include S({o})\n"),
                Refused,
            ),
            (
                "angled macro",
                format!("#define A <{o}>\n#include A\n"),
                Refused,
            ),
            ("digraph", format!("%:include \"{o}\"\n"), Sentinel),
            (
                "digraph, blanks",
                format!("  %:  include <{o}>\n"),
                Sentinel,
            ),
            ("trigraph", format!("??=include \"{o}\"\n"), Sentinel),
            (
                "trigraph, macro",
                format!("#define P \"{o}\"\n??=include P\n"),
                Refused,
            ),
            ("import", format!("#import \"{o}\"\n"), Sentinel),
            ("include_next", format!("#include_next <{o}>\n"), Sentinel),
            (
                "include_next, macro",
                format!("#define P \"{o}\"\n#include_next P\n"),
                Refused,
            ),
            (
                "splice in the name",
                format!("#inc\\\nlude \"{o}\"\n"),
                Sentinel,
            ),
            (
                "splice after #",
                format!("#\\\n include \"{o}\"\n"),
                Sentinel,
            ),
            (
                "splice, blanks",
                format!("#inc\\  \nlude \"{o}\"\n"),
                Sentinel,
            ),
            (
                "splice, CRLF",
                format!("#inc\\\r\nlude \"{o}\"\r\n"),
                Sentinel,
            ),
            (
                "splice in the path",
                format!("#include \"{spliced}\"\n"),
                Sentinel,
            ),
            (
                "trigraph splice",
                format!("#inc??/\nlude \"{o}\"\n"),
                Sentinel,
            ),
            (
                "comment after #",
                format!("#/*\n*/include \"{o}\"\n"),
                Sentinel,
            ),
            (
                "comment before #",
                format!("/* a\n*/ #include \"{o}\"\n"),
                Sentinel,
            ),
            (
                "comment before name",
                format!("#include /*\n*/ \"{o}\"\n"),
                Sentinel,
            ),
            ("lone CR", format!("int x;\r#include \"{o}\"\r"), Sentinel),
            ("NUL", format!("#\0include \"{o}\"\n"), Sentinel),
            (
                "escaped quote",
                format!("#include \"a\\\"/../../../../../../..{o}\"\n"),
                Sentinel,
            ),
            (
                "escaped bracket",
                format!("#include <a\\>/../../../../../../..{o}>\n"),
                Sentinel,
            ),
            (
                "__has_include",
                format!("#if __has_include(\"{o}\")\n#endif\n"),
                Sentinel,
            ),
            (
                "__has_include, macro",
                format!("#define H(x) __has_include(x)\n#if H(\"{o}\")\n#endif\n"),
                Renamed,
            ),
            (
                "pragma dependency",
                format!("#pragma GCC dependency \"{o}\"\n"),
                Refused,
            ),
            (
                "digraph pragma",
                format!("%:pragma GCC dependency <{o}>\n"),
                Refused,
            ),
            (
                "_Pragma dependency",
                format!("_Pragma(\"GCC dependency \\\"{o}\\\"\")\n"),
                PragmaError,
            ),
            (
                "pragma through a macro",
                format!("#define PR(x) _Pragma(#x)\nPR(GCC dependency \"{o}\")\n"),
                PragmaError,
            ),
        ]
    }

    /// Whether `text`, as clang's lexer reads it, still has a directive naming `OUTSIDE`
    /// (checked line by line on the text with trigraphs, splices and comments gone; not
    /// through `file_edits`).
    fn names_outside_in_a_directive(text: &str) -> bool {
        let chars = Lexed::new(text.as_bytes()).chars;
        let mut plain = String::from_utf8_lossy(&chars).replace('\0', " ");
        while let Some(a) = plain.find("/*") {
            let b = plain[a + 2..]
                .find("*/")
                .map_or(plain.len(), |b| a + 2 + b + 2);
            plain.replace_range(a..b, " ");
        }
        plain.split(['\n', '\r']).any(|line| {
            let line = line.trim_start();
            let Some(rest) = line.strip_prefix('#').or_else(|| line.strip_prefix("%:")) else {
                return false;
            };
            let rest = rest.trim_start();
            let query = FILE_QUERIES.iter().any(|q| {
                rest.match_indices(q).any(|(i, _)| {
                    !rest[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
            });
            let opens = FILE_DIRECTIVES.iter().any(|d| rest.starts_with(d))
                || (rest.starts_with("if") || rest.starts_with("elif")) && query
                || rest.starts_with("pragma");
            opens && rest.contains("cltrap-outside")
        })
    }

    fn assert_confined(what: &str, source: &str, out: &str, becomes: Becomes) {
        let found = match becomes {
            Becomes::Sentinel => out.contains(UNRECORDED),
            Becomes::Refused => out.contains(&format!("#error \"{REFUSED} the ")),
            Becomes::Renamed => out.contains("cltrap_refuses_a_computed___has_include"),
            Becomes::PragmaError => out.contains("GCC error") && !out.contains("dependency"),
        };
        assert!(found, "{what}: expected {becomes:?}:\n{out}");
        assert!(!names_outside_in_a_directive(out), "{what}:\n{out}");
        assert_eq!(
            line_breaks(out.as_bytes()),
            line_breaks(source.as_bytes()),
            "{what}: lines moved:\n{out}"
        );
        // Checked again, nothing changes.
        assert_eq!(
            String::from_utf8_lossy(&confine_includes(out.as_bytes(), None)),
            out,
            "{what}"
        );
    }

    /// A hostile capture's source (and its recorded headers) cannot make the compiler open a
    /// file outside the mirror in any spelling clang accepts: the directive is refused with
    /// a sentence naming it and its line, or its name points at the sentinel.
    #[test]
    fn no_spelling_of_an_include_reaches_a_file_outside_the_mirror() {
        let h = recorded("/app", "/app/x.h", b"#define X 1\n")
            .materialize(true)
            .unwrap();
        for (what, src, becomes) in hostile_spellings() {
            for out in [
                h.source(&src),
                h.parse_source(&src),
                without_escaping_includes(&src),
            ] {
                assert_confined(what, &src, &out, becomes);
            }
            // The same text as a recorded header: its copy in the mirror is confined too.
            let header = recorded("/app", "/app/hostile.h", src.as_bytes())
                .materialize(true)
                .unwrap();
            let copy = Headers::mirror(header.root.as_ref().unwrap(), "/app/hostile.h").unwrap();
            assert_confined(what, &src, &std::fs::read_to_string(copy).unwrap(), becomes);
        }
    }

    #[test]
    fn a_refusal_names_the_directive_and_its_line() {
        let h = recorded("/app", "/app/x.h", b"#define X 1\n")
            .materialize(true)
            .unwrap();
        let src =
            "kernel void k() {}\n#define P \"/etc/passwd\"\n\n#inc\\\nlude_next P // x\nint y;\n";
        let out = h.source(src);
        assert!(
            out.contains("#error \"cltrap refuses the include_next directive on line 4: its file is named by a macro"),
            "{out}"
        );
        assert!(out.contains("\\\n P // x\nint y;\n"), "{out}");
        assert_eq!(out.lines().count(), src.lines().count());
    }

    /// A text cannot take back the definitions that keep inline assembly out of a CPU
    /// device's build (`executor::cpu_code`), in any spelling of the directive.
    #[test]
    fn no_text_redefines_the_assembly_keyword() {
        for (what, src) in [
            ("define", "#define __asm__ __asm__\nkernel void k() {}\n"),
            ("undef", "#undef asm\nkernel void k() {}\n"),
            ("digraph", "%:undef __asm\nkernel void k() {}\n"),
            ("trigraph", "??=define asm __asm__\nkernel void k() {}\n"),
            ("splice", "#unde\\\nf __asm__\nkernel void k() {}\n"),
            (
                "comment",
                "# /* x */ define /* y */ __asm__ __asm__\nkernel void k() {}\n",
            ),
        ] {
            let out = without_escaping_includes(src);
            assert!(
                out.contains("#error \"cltrap refuses the ")
                    && out.contains("directive on line 1: it redefines the assembly keyword"),
                "{what}: {out}"
            );
            assert_eq!(out.lines().count(), src.lines().count(), "{what}");
        }
        // Other macros, and the word elsewhere, are left alone.
        let plain = "#define asmx 1\n#define N __asm__\nint y;\n";
        assert_eq!(without_escaping_includes(plain), plain);
    }

    /// A recorded header's name that the rewriting pointed at a copy, but whose copy path
    /// clang would read differently (a backslash before the closing quote), is not trusted:
    /// the name clang reads climbs out of the mirror, so it is pointed at the sentinel.
    #[test]
    fn a_name_that_reads_differently_to_clang_is_checked_as_clang_reads_it() {
        let dots = "../".repeat(40);
        let h = recorded("/app", "/app/a\\", b"#define X 1\n")
            .materialize(true)
            .unwrap();
        let src = format!("#include \"x.h\\\"/{dots}etc/passwd\"\n");
        let mut h2 = h.clone();
        h2.includes.files[0].name = "x.h\\".into();
        let out = h2.source(&src);
        assert_eq!(out, format!("#include \"{UNRECORDED}\"\n"));
    }

    /// Programs that include only what their capture recorded build as before: quoted,
    /// angled and macro includes (the hashcat pattern: a function-like macro through `-D`,
    /// and a macro defined in a header) point at the copies, nothing is refused, and the
    /// rest of the text is left byte for byte.
    #[test]
    fn recorded_includes_of_every_form_still_point_at_their_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let lib = base.join("share/OpenCL");
        std::fs::create_dir_all(base.join("app/inc")).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("inc_vendor.h"), "#define V 1\n").unwrap();
        std::fs::write(
            lib.join("inc_common.cl"),
            "#define NEXT M2S(INCLUDE_PATH/inc_types.h)\n#include NEXT // trailing\n",
        )
        .unwrap();
        std::fs::write(lib.join("inc_types.h"), "typedef ulong u64;\n").unwrap();
        std::fs::write(
            base.join("app/main.h"),
            "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
        )
        .unwrap();
        std::fs::write(
            base.join("app/inc/defs.h"),
            "#include \"main.h\"\n#define B 2\n",
        )
        .unwrap();
        let src = "#include M2S(INCLUDE_PATH/inc_vendor.h)\n#include M2S(INCLUDE_PATH/inc_common.cl)\n\
                   #include \"main.h\"\n#include <defs.h>\n#if defined(__has_include)\n#ifdef __has_include\n\
                   #if __has_include(\"main.h\") && __has_include(<defs.h>)\n#endif\n#endif\n#endif\n\
                   #define PRAGMA(x) _Pragma(#x)\n/* a comment ??= */\n\
                   kernel void k(global int *dependency) {\n  const char *s = \"??= #include X\";\n\
                   #pragma unroll 4\n  for (int i = 0; i < 4; i++) dependency[i] = V + B;\n  PRAGMA(unroll)\n}\n";
        let app = base.join("app");
        let options = format!(
            "-I inc -D INCLUDE_PATH={} -D XM2S(x)=#x -D M2S(x)=XM2S(x)",
            lib.display()
        );
        let found = cltrap_capture::includes::scan(
            &[src.as_bytes()],
            &[],
            &options,
            &app,
            Default::default(),
        );
        assert!(found.iter().all(|f| f.path.is_some()), "{found:?}");
        let h = Headers::from_found(&app, found).materialize(false).unwrap();
        std::fs::remove_dir_all(base).unwrap();
        let root = h.root.clone().unwrap();
        let copy = |p: &Path| Headers::mirror(&root, &p.to_string_lossy()).unwrap();
        for out in [h.source(src), h.parse_source(src)] {
            assert!(!out.contains(REFUSED) && !out.contains(UNRECORDED), "{out}");
            assert_eq!(out.lines().count(), src.lines().count());
            for (a, b) in src.lines().zip(out.lines()) {
                if !a.starts_with("#include") {
                    assert_eq!(a, b);
                }
            }
            assert!(
                out.contains(&format!(
                    "#include \"{}\"",
                    copy(&lib.join("inc_vendor.h")).display()
                )),
                "{out}"
            );
            assert!(
                out.contains(&format!(
                    "#include \"{}\"",
                    copy(&lib.join("inc_common.cl")).display()
                )),
                "{out}"
            );
        }
        assert!(h.source(src).contains(&format!(
            "#include \"{}\"",
            copy(&app.join("inc/defs.h")).display()
        )));
        let common = std::fs::read_to_string(copy(&lib.join("inc_common.cl"))).unwrap();
        assert_eq!(
            common,
            format!(
                "#define NEXT M2S(INCLUDE_PATH/inc_types.h)\n#include \"{}\" // trailing\n",
                copy(&lib.join("inc_types.h")).display()
            )
        );
        let defs = std::fs::read_to_string(copy(&app.join("inc/defs.h"))).unwrap();
        assert!(
            defs.contains(&format!("\"{}\"", copy(&app.join("main.h")).display())),
            "{defs}"
        );
    }

    /// A text that keeps the scan going over the same stretch is refused whole, quickly.
    #[test]
    fn a_text_built_to_slow_the_scan_is_refused_whole() {
        let mut src = "#include /*\n".repeat(50_000);
        src.push_str("*/ ");
        src.push_str(&"/**/".repeat(200_000));
        src.push_str(" P\n");
        let t = std::time::Instant::now();
        let out = without_escaping_includes(&src);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t.elapsed()
        );
        assert!(
            out.starts_with(&format!("#error \"{REFUSED} ")),
            "{}",
            &out[..200]
        );
        assert_eq!(line_breaks(out.as_bytes()), line_breaks(src.as_bytes()));
    }
}
