//! Writing a coverage report's files (LCOV, HTML, JSON and the kernel sources they name), apart
//! from the report's contents ([`super::report`]) and its HTML page ([`super::html`]), both of
//! which this module uses.

use super::report::{json, lcov};
use super::CoverageReport;
use std::path::{Path, PathBuf};

/// Which report files to write (`None` = not wanted).
#[derive(Debug, Clone, Default)]
pub struct ReportPaths {
    /// LCOV tracefile.
    pub lcov: Option<PathBuf>,
    /// Directory for the HTML report (`index.html`, and `src/` with the kernel sources).
    pub html: Option<PathBuf>,
    /// JSON report.
    pub json: Option<PathBuf>,
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Creating or writing a file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Writes each program's source as `<dir>/<program-hash12>.cl` (the files LCOV and HTML name).
fn write_sources(report: &CoverageReport, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut files = Vec::new();
    for p in &report.programs {
        let f = absolute(&dir.join(format!("{}.cl", p.short_name())));
        std::fs::write(&f, &p.source).map_err(io(&f))?;
        files.push(f);
    }
    Ok(files)
}

fn create_parent(path: &Path) -> Result<(), ReportError> {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::create_dir_all(d).map_err(io(d)),
        _ => Ok(()),
    }
}

/// Writes the requested reports and returns the paths written. The kernel sources go to
/// `<html dir>/src/` when an HTML report is wanted, else to `<lcov file>.src/` next to the
/// tracefile; LCOV's `SF:` names them by absolute path so `genhtml` finds them from anywhere.
pub fn write(report: &CoverageReport, paths: &ReportPaths) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    let sources_dir = match (&paths.html, &paths.lcov) {
        (Some(h), _) => Some(h.join("src")),
        (None, Some(l)) => {
            let mut name = l.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            name.push(".src");
            Some(l.with_file_name(name))
        }
        (None, None) => None,
    };
    let sources = match &sources_dir {
        Some(d) => Some(write_sources(report, d)?),
        None => None,
    };
    if let (Some(l), Some(files)) = (&paths.lcov, &sources) {
        create_parent(l)?;
        std::fs::write(l, lcov(report, files)).map_err(io(l))?;
        written.push(l.clone());
    }
    if let Some(h) = &paths.html {
        std::fs::create_dir_all(h).map_err(io(h))?;
        let index = h.join("index.html");
        std::fs::write(&index, super::html::render(report)).map_err(io(&index))?;
        written.push(index);
    }
    if let Some(j) = &paths.json {
        create_parent(j)?;
        let files: Vec<Option<PathBuf>> = match &sources {
            Some(f) => f.iter().cloned().map(Some).collect(),
            None => vec![None; report.programs.len()],
        };
        let text = serde_json::to_string_pretty(&json(report, &files))
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        std::fs::write(j, text + "\n").map_err(io(j))?;
        written.push(j.clone());
    }
    Ok(written)
}
