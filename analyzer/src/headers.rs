//! The headers a program included, laid out where every later build finds them instead of
//! the application's file system.
//!
//! A capture stores each included file by content (`ProgramRecord::includes`). Before a
//! build or a parse, [`Headers::materialize`] writes them into a private directory named
//! by their digest (shared by every process that needs the same set, written once,
//! atomically), mirroring their absolute paths at capture time, so nested `"relative"`
//! includes resolve between the copies exactly as they did between the originals. Then:
//! - every `#include` the capture resolved (in the program's text and in each copied
//!   header) is pointed at its copy's absolute path ([`Headers::source`]), so no search
//!   happens at all — not even in the directory cltrap runs in, which PoCL searches first;
//! - the build options' `-I` directories and the build directory are rewritten to their
//!   mirrors ([`Headers::options`]), for libclang (which parses the user's own text) and
//!   for includes the capture could not resolve (an `#include MACRO` that did not expand to
//!   a file name at capture).

use cltrap_capture::includes::{directives, Found};
use cltrap_capture::options::rewrite_include_dirs;
use cltrap_capture::writer::digest;
use cltrap_capture::{Capture, Hash, IncludeForm, IncludedFile, Includes, ReadError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
}

impl Headers {
    /// The headers of a captured program, laid out on disk.
    pub fn from_capture(capture: &Capture, includes: &Includes) -> Result<Headers, HeaderError> {
        let mut blobs = HashMap::new();
        for f in &includes.files {
            if let Some(h) = &f.content {
                if !blobs.contains_key(h) {
                    blobs.insert(h.clone(), capture.blob(h)?);
                }
            }
        }
        Headers {
            includes: includes.clone(),
            blobs,
            root: None,
        }
        .materialize()
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
        let headers = Headers::from_found(&dir, found).materialize()?;
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

    /// Where the copy of a file captured at `path` lives.
    fn mirror(root: &Path, path: &str) -> PathBuf {
        root.join(path.trim_start_matches('/'))
    }

    /// Writes the copies (once per set of contents) and remembers where.
    fn materialize(mut self) -> Result<Headers, HeaderError> {
        if self.includes.is_empty() {
            return Ok(self);
        }
        let key = serde_json::to_vec(&self.includes).unwrap_or_default();
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let root = std::env::temp_dir()
            .join(format!("cltrap-headers-{uid}"))
            .join(&digest(&key)[..24]);
        for f in &self.includes.files {
            let (Some(path), Some(hash)) = (&f.path, &f.content) else {
                continue;
            };
            let Some(bytes) = self.blobs.get(hash) else {
                continue;
            };
            let dest = Self::mirror(&root, path);
            if dest.is_file() {
                continue;
            }
            let text = self.redirect(&root, Some(path), bytes);
            write_atomically(&dest, &text)?;
        }
        let build_dir = Self::mirror(&root, &self.includes.build_dir);
        std::fs::create_dir_all(&build_dir).map_err(|source| HeaderError::Io {
            path: build_dir,
            source,
        })?;
        self.root = Some(root);
        Ok(self)
    }

    /// `text` (the program's source when `from` is `None`, else the header captured at
    /// `from`) with each directive the capture resolved pointed at its copy.
    fn redirect(&self, root: &Path, from: Option<&str>, text: &[u8]) -> Vec<u8> {
        self.redirect_where(root, from, text, |_| true)
    }

    /// [`Headers::redirect`] of the directives `wanted` picks.
    fn redirect_where(
        &self,
        root: &Path,
        from: Option<&str>,
        text: &[u8],
        wanted: impl Fn(&cltrap_capture::includes::Directive) -> bool,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut at = 0;
        for d in directives(text).into_iter().filter(|d| wanted(d)) {
            let target = self
                .includes
                .files
                .iter()
                .find(|f| f.from.as_deref() == from && f.name == d.name && f.form == d.form);
            let Some(path) = target.and_then(|f| f.path.as_deref()) else {
                continue;
            };
            out.extend_from_slice(&text[at..d.range.start]);
            out.extend_from_slice(format!("\"{}\"", Self::mirror(root, path).display()).as_bytes());
            at = d.range.end;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    /// The program text for the driver: includes pointed at the copies.
    pub fn source(&self, text: &str) -> String {
        match &self.root {
            Some(root) => {
                String::from_utf8_lossy(&self.redirect(root, None, text.as_bytes())).into_owned()
            }
            None => text.to_string(),
        }
    }

    /// The program text a pass parses and rewrites: the user's own text, except directives
    /// that [`Headers::options`]' mirrored directories cannot serve — `#include MACRO(...)`
    /// and absolute names (hashcat's `-D INCLUDE_PATH=/usr/share/hashcat/OpenCL`) — pointed
    /// at their copies, so a capture is analysed where the application's headers are gone.
    /// Lines stay where they were; only those directives' lines change.
    pub fn parse_source(&self, text: &str) -> String {
        match &self.root {
            Some(root) => {
                String::from_utf8_lossy(&self.redirect_where(root, None, text.as_bytes(), |d| {
                    d.form == IncludeForm::Macro || Path::new(&d.name).is_absolute()
                }))
                .into_owned()
            }
            None => text.to_string(),
        }
    }

    /// Build options for the copies: the build directory's mirror first (the driver looked
    /// in the working directory first), then each `-I` directory's mirror.
    pub fn options(&self, options: &str) -> String {
        let Some(root) = &self.root else {
            return options.to_string();
        };
        let build_dir = Path::new(&self.includes.build_dir);
        let first = Self::mirror(root, &self.includes.build_dir);
        rewrite_include_dirs(
            options,
            &["-I".into(), first.to_string_lossy().into_owned()],
            |d| {
                let abs = cltrap_capture::includes::normalize(&build_dir.join(d));
                let m = Self::mirror(root, &abs.to_string_lossy());
                // Missing directories are harmless to clang; create them for tidy logs.
                let _ = std::fs::create_dir_all(&m);
                m.to_string_lossy().into_owned()
            },
        )
    }
}

fn write_atomically(dest: &Path, bytes: &[u8]) -> Result<(), HeaderError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HeaderError::Io { path, source }
    };
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let tmp = dest.with_extension(format!("cltrap-tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, dest).map_err(io(dest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_resolve_between_themselves_and_the_source_points_at_them() {
        let base = std::env::temp_dir().join(format!("cltrap-headers-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
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
        let h = Headers::from_found(&app, found).materialize().unwrap();
        // The originals go away: only the copies remain.
        std::fs::remove_dir_all(&app).unwrap();
        let rewritten = h.source(src);
        assert_eq!(rewritten.lines().count(), src.lines().count());
        let root = h.root.clone().unwrap();
        let defs = Headers::mirror(&root, &app.join("inc/defs.h").to_string_lossy());
        assert!(
            rewritten.contains(&format!("\"{}\"", defs.display())),
            "{rewritten}"
        );
        let copy = std::fs::read_to_string(&defs).unwrap();
        assert!(
            copy.contains(&format!(
                "\"{}\"",
                Headers::mirror(&root, &app.join("main.h").to_string_lossy()).display()
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
        let _ = std::fs::remove_dir_all(&base);
    }
}
