//! `cltrap cover` as a campaign: one unit per launch, measured in workers (on several devices,
//! in shards, resumable) and merged into the report in launch order, whatever ran where.
//!
//! A worker keeps its [`Measurer`] across the launches it runs (each program instrumented and
//! built once per worker, derived inputs kept), and returns each launch's counters evaluated
//! against its program's map ([`LaunchCoverage`]). The report re-creates each program's source
//! and map itself (one instrumentation per distinct program, from `--instrument-cache` when
//! given), so a launch's result stays small. A launch that crashes or hangs its worker is
//! counted as failed and named; the other launches are still measured.

use super::{print, CoverTiming, LaunchCoverage, Measurer, Merger, Problem, ReportPaths};
use crate::campaign::kept::{error_lines, Kept};
use crate::campaign::{Campaign, Finished, Lost, Unit, UnitContext};
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::coverage::CoverageMap;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The coverage of a capture's selected launches, and where its reports go.
pub struct CoverCampaign {
    dir: PathBuf,
    /// The capture, for the whole process (a worker's derived inputs borrow it).
    capture: &'static Capture,
    ids: Option<Vec<u64>>,
    instrument_cache: Option<PathBuf>,
    /// The report files.
    pub paths: ReportPaths,
    /// `--timing`: per-launch times, instrumented against plain.
    pub timing: bool,
    /// Damaged launch lines of the capture (left out; exit 2).
    pub damaged: usize,
    /// Longest silence of a worker on one launch (its program's instrumenting and compile
    /// included).
    pub watchdog: Duration,
    /// A worker's session and what it built there, kept between launches.
    here: Option<Kept<Measurer<'static>>>,
}

impl CoverCampaign {
    /// The coverage of the launches `ids` (all when `None`) of `capture`, opened from `dir`.
    pub fn new(
        dir: &Path,
        capture: Capture,
        ids: Option<Vec<u64>>,
        instrument_cache: Option<PathBuf>,
    ) -> CoverCampaign {
        CoverCampaign {
            dir: dir.to_path_buf(),
            capture: Box::leak(Box::new(capture)),
            ids,
            instrument_cache,
            paths: ReportPaths::default(),
            timing: false,
            damaged: 0,
            watchdog: Duration::from_secs(300),
            here: None,
        }
    }

    fn launch_of(&self, unit: &Unit) -> Result<&'static LaunchRecord, String> {
        unit.launch_in(self.capture)
    }
}

impl Campaign for CoverCampaign {
    fn command(&self) -> &'static str {
        "cover"
    }

    /// Launches in order, whose derived inputs the worker's deriver re-creates.
    fn contiguous(&self) -> bool {
        true
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        Unit::launches(self.capture, self.ids.as_deref())
    }

    fn deadline(&self) -> Duration {
        self.watchdog
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        let l = self.launch_of(unit)?;
        let (capture, cache, timing) = (self.capture, self.instrument_cache.clone(), self.timing);
        let here = match Kept::on(&mut self.here, cx.device, || {
            Measurer::new(capture, cache, timing)
        }) {
            Ok(h) => h,
            Err(e) => {
                let (line, full) = error_lines(&e);
                let lc = failed(l, line, Some(full));
                return serde_json::to_value(lc).map_err(|e| e.to_string());
            }
        };
        let lc = here.state.measure(&here.session, l);
        serde_json::to_value(lc).map_err(|e| e.to_string())
    }

    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        let Ok(l) = self.launch_of(unit) else {
            return Value::Null;
        };
        let why = match why {
            Lost::Crashed(w) => format!("crashed the cover worker ({w})"),
            Lost::Failed(w) => format!("could not be covered: {w}"),
            Lost::TimedOut(d) => format!(
                "hung (no progress within {} s; the watchdog stopped the cover worker)",
                d.as_secs()
            ),
        };
        let lc = failed(
            l,
            format!("the kernel {why}; left out of the coverage"),
            None,
        );
        serde_json::to_value(lc).unwrap_or(Value::Null)
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        _complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        let disk = self
            .instrument_cache
            .clone()
            .map(|dir| crate::variant::DiskCache {
                dir,
                pass: "coverage",
            });
        let capture = self.capture;
        let mut made: HashMap<String, (String, CoverageMap)> = HashMap::new();
        let mut program = |hash: &str| -> Result<(String, CoverageMap), String> {
            if let Some(m) = made.get(hash) {
                return Ok(m.clone());
            }
            let (_, i) =
                crate::variant::instrument(capture, hash, disk.as_ref(), super::coverage_pass)
                    .map_err(|e| format!("cannot instrument program {hash} for the report: {e}"))?;
            made.insert(hash.to_string(), (i.original.clone(), i.pass.clone()));
            Ok((i.original, i.pass))
        };
        let mut merger = Merger::default();
        let mut device: Option<String> = None;
        for (u, f) in results {
            let lc: LaunchCoverage = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!(
                    "the campaign's result for {} is not a launch's coverage: {e}",
                    u.id
                )
            })?;
            if device.is_none() {
                device.clone_from(&lc.device);
            }
            merger.add(&lc, &mut program)?;
        }
        let (report, times): (_, Vec<CoverTiming>) = merger.finish();
        let device = device.unwrap_or_else(|| "unknown (no launch ran to its end)".into());
        let code = print(&report, &times, &self.paths, self.timing, &device, out)?;
        crate::damage::note(out, self.damaged, "measured");
        Ok(crate::damage::exit_code(code as u8, self.damaged))
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        let p = &mut self.paths;
        p.lcov
            .iter_mut()
            .chain(p.html.iter_mut())
            .chain(p.json.iter_mut())
            .collect()
    }

    fn home(&self) -> PathBuf {
        self.dir.join("campaigns")
    }
}

/// The result of a launch that gave no coverage: `message` its problem's line, `detail` the
/// whole error where there is more to say.
fn failed(l: &LaunchRecord, message: String, detail: Option<String>) -> LaunchCoverage {
    LaunchCoverage {
        launch: l.id,
        kernel: l.kernel.clone(),
        program: l.program.clone(),
        result: None,
        problem: Some(Problem {
            launch: l.id,
            kernel: l.kernel.clone(),
            kind: "error".into(),
            message,
        }),
        detail,
        device: None,
        timing: None,
    }
}
