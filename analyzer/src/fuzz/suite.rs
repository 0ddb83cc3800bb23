//! Writing a generated suite: a directory in the capture format (so `cltrap replay`, `cover`
//! and `replay --schedules` work on it unchanged), one launch per kept case with its inputs as
//! `before` and the unmodified kernel's results as `after`, plus `fuzz.json`: per kernel the
//! branches and loop-boundary classes, how each was covered (or why not), and what each case
//! covers.

use super::campaign::Campaign;
use super::error::FuzzError;
use crate::executor::{DeviceInfo, InputArg, LaunchInput};
use crate::values::hex;
use cltrap_capture::{
    ArgInfo, ArgRecord, CaptureWriter, Content, DeviceRecord, LaunchApi, LaunchRecord, Manifest,
    MemId, ProgramOrigin, ProgramRecord,
};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How one slot ended up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum SlotStatus {
    /// Reached by a fuzzed (or seed) case.
    CoveredByFuzzing,
    /// A solver-made case reached it, confirmed by running it.
    SolvedAndConfirmed,
    /// No input reaches it (the path constraint is unsatisfiable).
    Unsatisfiable,
    /// The solver met a construct it does not model.
    Unsupported {
        /// The construct and where it is.
        what: String,
    },
    /// The solver ran out of time, paths or loop unrolling (which one, and where).
    Timeout {
        /// Why.
        why: String,
    },
    /// The solver found inputs, but running them did not reach the slot.
    NotConfirmed,
    /// Not covered, solver not run.
    Uncovered,
}

/// One slot in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlotReport {
    /// Counter index.
    pub index: u32,
    /// Human label (`if (x == -2987) true`).
    pub label: String,
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// Outcome.
    #[serde(flatten)]
    pub status: SlotStatus,
    /// Solver time for this slot (ms), when it was solved for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solve_ms: Option<f64>,
}

/// One kernel in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelReport {
    /// Kernel name.
    pub kernel: String,
    /// The capture's program the kernel is of (absent for a kernel file): one capture can
    /// hold kernels of one name in several programs, and this tells them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Every slot.
    pub slots: Vec<SlotReport>,
    /// Launch ids in the suite, with the slots each covers and how it was made.
    pub cases: Vec<(u64, Vec<u32>, String)>,
    /// Crashes and hangs (what happened).
    pub findings: Vec<String>,
    /// Where the bounds check found each distinct crash or guard-zone write overran (its
    /// first input's launch in `findings/KERNEL`), when it could.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overruns: Vec<LocatedFinding>,
    /// Executions.
    pub executions: u64,
    /// Compile time (ms) of the first build.
    pub compile_ms: f64,
    /// Builds of the instrumented program (1, plus one per worker restart after a crash or
    /// hang).
    #[serde(default)]
    pub compiles: usize,
    /// Execution time (ms).
    pub run_ms: f64,
    /// Time to the last new coverage by fuzzing (ms, compile excluded).
    pub saturation_ms: f64,
    /// Total solver time (ms).
    #[serde(default)]
    pub solve_ms: f64,
    /// The constructs the solver does not model in this kernel, each once, with the number
    /// of branch sides they kept it from answering (`solve::unsupported_constructs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported: Vec<String>,
    /// The reduced executions' geometry (`fuzz::reduce`), when the campaign ran them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced: Option<String>,
    /// Runs on the whole launch that confirmed cases kept by reduced executions (counted in
    /// `executions`), and their time (ms, counted in `run_ms`).
    #[serde(default)]
    pub confirm_runs: u64,
    /// See `confirm_runs`.
    #[serde(default)]
    pub confirm_ms: f64,
    /// Confirmed cases that reached on the reduced launch a slot they do not reach on the
    /// whole launch (`Campaign::subset_only`).
    #[serde(default)]
    pub subset_only: usize,
}

/// The names rows and progress lines give kernels identified by (name, program): the name, or
/// `name (program-<first 12 hex digits>)` (as `cover` names programs) when kernels of that
/// name come from several programs, so two kernels never share a row name.
pub fn row_names(ids: &[(&str, Option<&str>)]) -> Vec<String> {
    ids.iter()
        .map(|(name, program)| {
            let shared = ids.iter().any(|(other, p)| other == name && p != program);
            match program {
                Some(p) if shared => {
                    let key: String = p
                        .chars()
                        .filter(|c| c.is_ascii_alphanumeric())
                        .take(12)
                        .collect();
                    format!("{name} (program-{key})")
                }
                _ => name.to_string(),
            }
        })
        .collect()
}

/// A campaign result's milliseconds as a duration: none when negative or not a number,
/// the longest one when too large (a result read back from a journal is input).
pub fn millis(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms.max(0.0) / 1e3).unwrap_or(Duration::MAX)
}

/// The folder name under `findings/` for a kernel of row name `row` (its words joined by
/// `-`, without parentheses): `scale`, or `scale-program-3ab1c2d4e5f6`.
pub fn findings_dir_name(row: &str) -> String {
    row.replace(['(', ')'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
}

impl KernelReport {
    /// Which kernel this is: its name and program (see [`row_names`]).
    pub fn id(&self) -> (&str, Option<&str>) {
        (&self.kernel, self.program.as_deref())
    }

    /// Executions per second of the fuzzing loop (confirmation runs on the whole launch
    /// left out).
    pub fn fuzz_rate(&self) -> f64 {
        let ms = self.run_ms - self.confirm_ms;
        if ms > 0.0 {
            self.executions.saturating_sub(self.confirm_runs) as f64 / (ms / 1e3)
        } else {
            0.0
        }
    }
}

/// A fuzzing finding and the line that overran (see [`crate::check::locate`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocatedFinding {
    /// The finding, as in [`KernelReport::findings`].
    pub finding: String,
    /// The launch of `findings/KERNEL` (the saved input) the check ran.
    pub launch: u64,
    /// Where it overran.
    pub at: crate::check::locate::Overrun,
}

/// The whole `fuzz.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SuiteReport {
    /// Per kernel.
    pub kernels: Vec<KernelReport>,
}

/// File name of the report inside the suite.
pub const REPORT: &str = "fuzz.json";

fn arg_records(
    w: &CaptureWriter,
    c: &Campaign,
    input: &LaunchInput,
    outputs: &[Option<Vec<u8>>],
) -> Result<Vec<ArgRecord>, FuzzError> {
    let mut out = Vec::new();
    let aliases = alias_slots(input);
    for (i, a) in input.args.iter().enumerate() {
        let ia = c.iface.args.get(i);
        // Arguments that name one memory object in the run are one object in the suite too
        // (same `mem`, the first argument's contents), or a replay would run them apart.
        let (first, mem) = aliases[i];
        let bytes_of = |b: &'_ [u8]| -> Vec<u8> {
            match input.args.get(first) {
                Some(InputArg::Buffer { bytes, .. } | InputArg::Image { bytes, .. }) => {
                    bytes.clone()
                }
                _ => b.to_vec(),
            }
        };
        let info = ArgInfo {
            index: i as u32,
            name: ia.map(|a| a.name.clone()).unwrap_or_default().into(),
            type_name: ia
                .map(|a| {
                    cltrap_kernel::interface::strip_qualifiers(&a.ty)
                        .replace(" *", "*")
                        .trim_end_matches(" restrict")
                        .to_string()
                })
                .unwrap_or_default()
                .into(),
            address_space: ia
                .map(|a| format!("{:?}", a.address_space).to_lowercase())
                .unwrap_or_default()
                .into(),
            qualifiers: Default::default(),
        };
        let blob = |b: &[u8]| -> Result<Content, FuzzError> {
            Ok(Content::Blob {
                hash: w.blobs.put(b)?,
                size: b.len() as u64,
            })
        };
        out.push(match a {
            InputArg::Scalar(b) => ArgRecord::Scalar {
                info,
                bytes: hex(b),
            },
            InputArg::Local(n) => ArgRecord::Local { info, size: *n },
            InputArg::NullBuffer => ArgRecord::NullBuffer { info },
            InputArg::Buffer { flags, bytes, .. } => {
                let after = match outputs.get(i).cloned().flatten() {
                    Some(o) => blob(&o)?,
                    None => Content::Missing {
                        note: "not read back".into(),
                    },
                };
                let before = bytes_of(bytes);
                ArgRecord::Buffer {
                    info,
                    mem,
                    flags: *flags,
                    size: before.len() as u64,
                    sub_of: None,
                    before: blob(&before)?,
                    after,
                }
            }
            InputArg::Image {
                flags,
                image,
                bytes,
                ..
            } => {
                let after = match outputs.get(i).cloned().flatten() {
                    Some(o) => blob(&o)?,
                    None => Content::Missing {
                        note: "not read back".into(),
                    },
                };
                ArgRecord::Image {
                    info,
                    mem,
                    flags: *flags,
                    image: image.clone(),
                    before: blob(&bytes_of(bytes))?,
                    after,
                }
            }
            InputArg::Sampler {
                normalized_coords,
                addressing_mode,
                filter_mode,
            } => ArgRecord::Sampler {
                info,
                normalized_coords: *normalized_coords,
                addressing_mode: *addressing_mode,
                filter_mode: *filter_mode,
            },
            InputArg::SubBuffer { .. } => {
                return Err(FuzzError::Interface(format!(
                    "argument {i}: sub-buffers are not written to suites yet"
                )))
            }
        });
    }
    Ok(out)
}

/// Per argument of `input`: the first argument that names the same memory object (itself
/// when it has none or is the first) and the suite's memory id for it (one id per object),
/// the way the executor creates one object per distinct memory id.
fn alias_slots(input: &LaunchInput) -> Vec<(usize, u64)> {
    let mut firsts: std::collections::HashMap<MemId, usize> = std::collections::HashMap::new();
    input
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let id = match a {
                InputArg::Buffer { mem, .. } | InputArg::Image { mem, .. } => *mem,
                _ => None,
            };
            let first = id.map_or(i, |m| *firsts.entry(m).or_insert(i));
            (first, first as u64 + 1)
        })
        .collect()
}

/// A kernel's program for the suite: its source, options and included files.
pub struct SuiteProgram<'a> {
    /// OpenCL C source (the user's, not instrumented).
    pub source: &'a str,
    /// Build options.
    pub options: &'a str,
    /// The files it includes: the suite carries them like a capture does.
    pub headers: &'a crate::headers::Headers,
}

/// Appends the cases of `c` with index ≥ `from` to the suite in `dir` (created when new);
/// returns the launch ids given to all of `c`'s cases written so far plus these.
pub fn write_cases(
    dir: &Path,
    program: &SuiteProgram,
    c: &Campaign,
    from: usize,
    device: &DeviceInfo,
) -> Result<Vec<(u64, usize)>, FuzzError> {
    let items: Vec<Item> = c
        .cases
        .iter()
        .enumerate()
        .skip(from)
        .map(|(k, case)| (k, &case.input, case.outputs.as_slice()))
        .collect();
    write_launches(dir, program, c, &items, device)
}

/// One launch to write: its position in the campaign, input and outputs (empty: none).
type Item<'a> = (usize, &'a LaunchInput, &'a [Option<Vec<u8>>]);

/// Most findings written per kernel (the rest are only counted).
pub const MAX_FINDINGS: usize = 20;

/// Writes the inputs of `c`'s findings (at most [`MAX_FINDINGS`]) as a capture in `dir`, so
/// `cltrap show` / `replay` reproduce them; no expected outputs. Returns (launch id in that
/// capture, index of the finding) per input written.
pub fn write_findings(
    dir: &Path,
    program: &SuiteProgram,
    c: &Campaign,
    device: &DeviceInfo,
) -> Result<Vec<(u64, usize)>, FuzzError> {
    let items: Vec<Item> = c
        .findings
        .iter()
        .take(MAX_FINDINGS)
        .enumerate()
        .map(|(k, f)| (k, &f.input, &[][..]))
        .collect();
    write_launches(dir, program, c, &items, device)
}

/// The manifest of a suite (or findings capture) this process writes.
fn manifest() -> Manifest {
    Manifest {
        format: "cltrap-capture".into(),
        version: 1,
        writer: format!("cltrap fuzz {}", env!("CARGO_PKG_VERSION")),
        pid: std::process::id(),
        argv: std::env::args().collect(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        buffer_mode: "full".into(),
    }
}

fn write_launches(
    dir: &Path,
    program: &SuiteProgram,
    c: &Campaign,
    items: &[Item],
    device: &DeviceInfo,
) -> Result<Vec<(u64, usize)>, FuzzError> {
    let w = CaptureWriter::create(dir, &manifest())?;
    let src = w.blobs.put(program.source.as_bytes())?;
    for bytes in program.headers.blobs.values() {
        w.blobs.put(bytes)?;
    }
    let record = ProgramRecord {
        origin: ProgramOrigin::Source { sources: vec![src] },
        options: program.options.to_string(),
        devices: vec![device.name.clone()],
        build_site: None,
        includes: program.headers.includes.clone(),
    };
    let program_hash = w
        .blobs
        .put(&serde_json::to_vec(&record).map_err(cltrap_capture::WriteError::from)?)?;
    let mut ids = Vec::new();
    for (k, input, outputs) in items {
        let (k, input) = (*k, *input);
        let args = arg_records(&w, c, input, outputs)?;
        let l = LaunchRecord {
            id: 0,
            seq: k as u64,
            kernel: c.kernel.clone(),
            program: program_hash.clone(),
            api: LaunchApi::NdRange,
            work_dim: input.work_dim,
            global_offset: input.global_offset.clone(),
            global_size: input.global_size.clone(),
            local_size: input.local_size.clone(),
            args,
            device: DeviceRecord {
                platform: device.platform.clone().into(),
                name: device.name.clone().into(),
                vendor: Default::default(),
                driver_version: device.driver_version.clone().into(),
                version: device.version.clone().into(),
            },
            queue_properties: 0,
            launch_site: None,
            thread: 0,
            status: 0,
            not_replayable: Vec::new(),
        };
        ids.push((w.append(l)?, k));
    }
    Ok(ids)
}

/// Appends the launches of the capture in `from` to the capture in `to` (created when new),
/// in id order, with every blob of `from` (blobs are named by their contents, so a copy never
/// replaces a different one); returns each launch's id in `to` by its id in `from`.
///
/// A campaign unit writes a kernel's cases and findings into a capture of its own; the
/// report appends them to the suite in kernel order, so the suite's launch ids are the ones
/// one in-order run gives, wherever and in whatever order the kernels ran.
pub fn append_capture(
    from: &Path,
    to: &Path,
) -> Result<std::collections::BTreeMap<u64, u64>, FuzzError> {
    // A campaign's unit folder may have come with its input: its captures and their blobs
    // are read where they are, never through a link planted there (which would copy the
    // user's own files into the suite).
    for p in [from.to_path_buf(), from.join("blobs")] {
        if cltrap_capture::safe_open::is_link(&p) {
            return Err(FuzzError::Interface(format!(
                "{} is a symbolic link: a campaign's folders are read only where they are",
                p.display()
            )));
        }
    }
    let capture = cltrap_capture::Capture::open(from)?;
    let w = CaptureWriter::create(to, &manifest())?;
    copy_new_files(&from.join("blobs"), &to.join("blobs"))?;
    let mut ids = std::collections::BTreeMap::new();
    for l in &capture.launches {
        let old = l.id;
        ids.insert(old, w.append(l.clone())?);
    }
    Ok(ids)
}

/// Copies every file under `from` that `to` does not have yet (folders as needed).
fn copy_new_files(from: &Path, to: &Path) -> Result<(), FuzzError> {
    let fail = |p: &Path, e: std::io::Error| {
        FuzzError::Interface(format!("cannot copy {} into the suite: {e}", p.display()))
    };
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(fail(from, e)),
    };
    std::fs::create_dir_all(to).map_err(|e| fail(to, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| fail(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| fail(&src, e))?;
        if kind.is_dir() {
            copy_new_files(&src, &dst)?;
        } else if kind.is_file() && std::fs::symlink_metadata(&dst).is_err() {
            std::fs::copy(&src, &dst).map_err(|e| fail(&src, e))?;
        }
    }
    Ok(())
}

/// Most bytes of a suite's report read back.
const MAX_REPORT: u64 = 256 << 20;

/// Reads the suite's report (empty when absent or unreadable). A suite is a capture, so
/// untrusted: its report is read as the reader reads a capture's files (not through a link,
/// a FIFO refused without blocking, its size bounded).
pub fn read_report(dir: &Path) -> SuiteReport {
    cltrap_capture::safe_open::read_inside(dir, &[REPORT], MAX_REPORT)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Writes the suite's report: a new file renamed over the old name, so a link planted there
/// is replaced, never written through.
pub fn write_report(dir: &Path, r: &SuiteReport) -> Result<(), FuzzError> {
    let text = serde_json::to_vec_pretty(r).map_err(|e| FuzzError::Interface(e.to_string()))?;
    let path = dir.join(REPORT);
    std::fs::create_dir_all(dir)
        .and_then(|_| crate::campaign::journal::replace_file(&path, &text))
        .map_err(|e| FuzzError::Interface(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod report_file_tests {
    use super::*;

    #[test]
    fn a_results_milliseconds_never_panic() {
        assert_eq!(millis(1500.0), Duration::from_millis(1500));
        assert_eq!(millis(-3.0), Duration::ZERO);
        assert_eq!(millis(f64::NAN), Duration::ZERO);
        assert_eq!(millis(1e300), Duration::MAX);
        assert_eq!(millis(f64::INFINITY), Duration::MAX);
    }

    /// A unit folder that came with a campaign is read where it is: a capture or a `blobs`
    /// folder planted there as a link to the user's own files is refused, nothing copied.
    #[test]
    fn cases_are_never_appended_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("id_rsa"), "key").unwrap();
        let suite = dir.path().join("suite");
        let linked = dir.path().join("cases");
        std::os::unix::fs::symlink(&secret, &linked).unwrap();
        let e = append_capture(&linked, &suite).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let cases = dir.path().join("unit-cases");
        std::fs::create_dir_all(&cases).unwrap();
        std::os::unix::fs::symlink(&secret, cases.join("blobs")).unwrap();
        let e = append_capture(&cases, &suite).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!suite.join("blobs").join("id_rsa").exists());
    }

    /// A suite is a capture, so untrusted: its report is never written through a link
    /// planted at its name, and a FIFO there is not waited on.
    #[test]
    fn the_report_is_replaced_not_written_through_and_a_fifo_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        // A valid report of another suite: read through the link, it would have one kernel.
        let other = dir.path().join("other");
        let one: SuiteReport = serde_json::from_value(serde_json::json!({"kernels": [{
            "kernel": "k", "slots": [], "cases": [], "findings": [], "executions": 0,
            "compile_ms": 0.0, "run_ms": 0.0, "saturation_ms": 0.0
        }]}))
        .unwrap();
        write_report(&other, &one).unwrap();
        let outside = other.join(REPORT);
        let precious = std::fs::read(&outside).unwrap();
        assert_eq!(read_report(&other).kernels.len(), 1);
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(&suite).unwrap();
        std::os::unix::fs::symlink(&outside, suite.join(REPORT)).unwrap();
        assert_eq!(read_report(&suite).kernels.len(), 0);
        write_report(&suite, &SuiteReport::default()).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), precious);
        std::fs::remove_file(suite.join(REPORT)).unwrap();
        let path = std::ffi::CString::new(suite.join(REPORT).to_str().unwrap()).unwrap();
        // SAFETY: a FIFO made at a path of this test's own temporary folder.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert_eq!(read_report(&suite).kernels.len(), 0);
    }
}
