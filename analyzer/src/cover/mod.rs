//! `cltrap cover`: branch, loop-boundary and barrier coverage of kernels, measured on the
//! launches an application really made (replayed from a capture or a generated suite).
//!
//! Each distinct program is instrumented once by `cltrap_kernel::coverage` (an extra trailing
//! counter buffer) and built once; each selected launch is replayed with a fresh counter buffer
//! appended; the counters are evaluated and merged per kernel ([`ProgramCoverage`]). The
//! reports ([`report`]) are written from that merged model, which the live-app path (the shim
//! swapping instrumented kernels into the running application) builds the same way with
//! [`ProgramCoverage::add_counters`] and hands to [`write::write`].
//!
//! Programs are merged when their source text and counter map are the same (the same kernel
//! built twice). Divergent barriers are undefined behaviour and devices differ: PoCL's CPU
//! device runs a barrier inside a branch for all or none of a group's work-items (it takes the
//! branch of the group as a whole), so divergence is not observable there; on an NVIDIA H100
//! the fixture `diverge` (k = 2 of 4) is reported as 2 arrivals for 4 work-items in each group.
//! The exit status is 0 when every launch was measured (divergence is a finding, not a failure)
//! and 2 when some launch could not be instrumented, built or run.

pub mod campaign;
pub mod html;
pub mod report;
pub mod write;

use crate::executor::{
    check_outputs, BuildOptions, BuiltProgram, Deriver, DeviceSelector, ExecError, LaunchInput,
    Mismatch, Session,
};
use crate::replay::select;
use crate::variant::{word_buffer, words, DiskCache, Failure, VariantCache, VariantError};
use cltrap_capture::writer::digest;
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::coverage::{instrument_coverage, CoverageMap, CoverageOptions};
use cltrap_kernel::coverage_result::CoverageResult;
use cltrap_kernel::KernelError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use write::ReportPaths;

/// What to measure.
#[derive(Debug, Clone, Default)]
pub struct CoverOptions {
    /// Launch ids; `None` = all.
    pub ids: Option<Vec<u64>>,
    /// Where to replay.
    pub device: DeviceSelector,
    /// Keep instrumented sources in this directory and reuse them (no libclang needed on a hit).
    pub instrument_cache: Option<PathBuf>,
}

/// A work-group that reached a barrier with only some of its work-items (undefined behaviour).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The launch it happened in (`None` when the caller does not number launches).
    pub launch: Option<u64>,
    /// Barrier number in the map.
    pub barrier: u32,
    /// Line of the barrier call in the user's source.
    pub line: u32,
    /// Column of the call.
    pub col: u32,
    /// Work-group id per dimension.
    pub group: [u64; 3],
    /// Arrivals counted (summed over executions of the barrier).
    pub arrivals: u64,
    /// Work-items in the group.
    pub work_items: u64,
}

/// One kernel's coverage, merged over its launches.
#[derive(Debug, Clone)]
pub struct KernelCoverage {
    /// Kernel name.
    pub kernel: String,
    /// Launches measured (ids, in order).
    pub launches: Vec<u64>,
    /// Launches measured without an id (live-app callers that do not number them).
    pub unnumbered_launches: u64,
    /// Merged result (a side is covered if any launch covered it).
    pub result: CoverageResult,
    /// Every divergence seen, with its launch.
    pub divergences: Vec<Divergence>,
}

/// One program's coverage: the user's source, the counter map, and the merged results of its
/// kernels. This is what every report is written from.
#[derive(Debug, Clone)]
pub struct ProgramCoverage {
    /// Identity of the program: the capture's program hash (the first one seen, when several
    /// programs with the same source text and map were merged), or any stable key.
    pub program: String,
    /// The user's original source text (reports annotate it line by line).
    pub source: String,
    /// The map of the instrumented program.
    pub map: CoverageMap,
    /// Kernels measured, in order of first launch.
    pub kernels: Vec<KernelCoverage>,
}

impl ProgramCoverage {
    /// An empty coverage record for a program instrumented with `map`.
    pub fn new(program: impl Into<String>, source: impl Into<String>, map: CoverageMap) -> Self {
        ProgramCoverage {
            program: program.into(),
            source: source.into(),
            map,
            kernels: Vec::new(),
        }
    }

    /// A short name for files and headings: `program-<first 12 hex digits>`.
    pub fn short_name(&self) -> String {
        let key: String = self
            .program
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(12)
            .collect();
        format!("program-{key}")
    }

    /// Adds one launch's raw counter buffer (read back after launching `kernel` with `global`
    /// size): evaluates it against the map and merges it into the kernel's result.
    pub fn add_counters(
        &mut self,
        kernel: &str,
        launch: Option<u64>,
        counters: &[u32],
        global: &[u64],
    ) -> Result<(), KernelError> {
        let res = self.map.evaluate(kernel, counters, global)?;
        self.add_result(kernel, launch, res);
        Ok(())
    }

    /// Adds one launch's counters already evaluated against this program's map (by a
    /// campaign's worker): merges them into the kernel's result and keeps its divergences.
    pub fn add_result(&mut self, kernel: &str, launch: Option<u64>, res: CoverageResult) {
        let map = &self.map;
        let divergences: Vec<Divergence> = res
            .barriers
            .iter()
            .flat_map(|b| {
                let col = map.barrier_site(b.barrier).map_or(0, |s| s.col);
                b.divergent.iter().map(move |d| Divergence {
                    launch,
                    barrier: b.barrier,
                    line: b.line,
                    col,
                    group: d.group,
                    arrivals: d.arrivals,
                    work_items: d.work_items,
                })
            })
            .collect();
        match self.kernels.iter_mut().find(|k| k.kernel == kernel) {
            Some(k) => {
                k.result.merge(&res);
                k.divergences.extend(divergences);
                match launch {
                    Some(id) => k.launches.push(id),
                    None => k.unnumbered_launches += 1,
                }
            }
            None => self.kernels.push(KernelCoverage {
                kernel: kernel.to_string(),
                launches: launch.into_iter().collect(),
                unnumbered_launches: u64::from(launch.is_none()),
                result: res,
                divergences,
            }),
        }
    }
}

/// A launch that was not measured, or a note about one that was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Launch id.
    pub launch: u64,
    /// Kernel name.
    pub kernel: String,
    /// `skipped` (not replayable from the capture), `error` (instrumenting, building or
    /// running failed) or `note` (measured, but its outputs differ from the recording).
    pub kind: String,
    /// One sentence.
    pub message: String,
}

/// Everything `cltrap cover` measured.
#[derive(Debug, Clone, Default)]
pub struct CoverageReport {
    /// Per program, in order of first launch.
    pub programs: Vec<ProgramCoverage>,
    /// Launches not measured (and notes).
    pub problems: Vec<Problem>,
    /// Full messages of errors (build logs), one per distinct error, for stderr.
    pub details: Vec<String>,
}

impl CoverageReport {
    /// Exit status of `cltrap cover`: 2 when some launch failed, else 0 (coverage is a
    /// measurement, not a verdict; divergent barriers are reported, not failed on).
    pub fn exit_code(&self) -> i32 {
        if self.problems.iter().any(|p| p.kind == "error") {
            2
        } else {
            0
        }
    }
}

/// Times of one launch, for `--timing`: the instrumented kernel against the plain one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CoverTiming {
    /// Launch id.
    pub launch: u64,
    /// Kernel name.
    pub kernel: String,
    /// Parse + instrumentation of the program (0 when cached).
    pub instrument: Duration,
    /// Compile of the instrumented program (0 when cached).
    pub compile: Duration,
    /// Device time of the plain kernel, per run.
    pub plain_ns: Vec<u64>,
    /// Device time of the instrumented kernel, per run.
    pub instrumented_ns: Vec<u64>,
    /// Wall time of the plain runs.
    pub plain_wall: Vec<Duration>,
    /// Wall time of the instrumented runs.
    pub instrumented_wall: Vec<Duration>,
}

/// Runs per launch and variant when timing.
const TIMING_RUNS: usize = 3;

/// One launch's coverage as it was measured (in a campaign's worker, or in this process):
/// what the report merges, in launch order, whatever ran where.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchCoverage {
    /// Launch id.
    pub launch: u64,
    /// Kernel name.
    pub kernel: String,
    /// The capture's program hash.
    pub program: String,
    /// The kernel's counters evaluated against its program's map, when the launch was measured.
    pub result: Option<CoverageResult>,
    /// Why it was not measured, or a note about it.
    pub problem: Option<Problem>,
    /// The full message of an error (build log), for stderr.
    pub detail: Option<String>,
    /// The device it ran on, `name (platform)`.
    pub device: Option<String>,
    /// `--timing`: its times (a timing: not part of the report's identity).
    pub timing: Option<CoverTiming>,
}

/// The coverage pass every program of a capture goes through.
fn coverage_pass(src: &str, options: &str) -> Result<(String, CoverageMap), KernelError> {
    let model = cltrap_kernel::parse_program(src, options)?;
    let c = instrument_coverage(&model, CoverageOptions::default())?;
    Ok((c.source, c.map))
}

/// The instrumented-source cache `--instrument-cache DIR` names.
fn disk_cache(dir: Option<PathBuf>) -> Option<DiskCache> {
    dir.map(|dir| DiskCache {
        dir,
        pass: "coverage",
    })
}

/// Measures launches one at a time on a session, keeping what the next launch reuses: each
/// program instrumented and built once, the plain builds of `--timing`, and the inputs derived
/// so far. A campaign's worker keeps one across the launches it runs.
pub struct Measurer<'a> {
    capture: &'a Capture,
    variants: VariantCache<CoverageMap>,
    plain: HashMap<String, Result<BuiltProgram, String>>,
    timing: bool,
    /// Restores inputs the capture keeps only as digests (past its disk budget).
    deriver: Deriver<'a>,
}

impl<'a> Measurer<'a> {
    /// A measurer over `capture`; `instrument_cache` keeps instrumented sources on disk;
    /// with `timing`, each launch also runs plain and instrumented several times.
    pub fn new(capture: &'a Capture, instrument_cache: Option<PathBuf>, timing: bool) -> Self {
        Measurer {
            capture,
            variants: VariantCache::with_disk(disk_cache(instrument_cache)),
            plain: HashMap::new(),
            timing,
            deriver: Deriver::new(capture),
        }
    }

    /// Replays `l` with coverage counters on `session` (always the same session for one
    /// measurer: it keeps programs built there).
    pub fn measure(&mut self, session: &Session, l: &LaunchRecord) -> LaunchCoverage {
        let info = session.info();
        let mut lc = LaunchCoverage {
            launch: l.id,
            kernel: l.kernel.clone(),
            program: l.program.clone(),
            result: None,
            problem: None,
            detail: None,
            device: Some(format!("{} ({})", info.name, info.platform)),
            timing: None,
        };
        match self.one(session, l) {
            Ok((result, differs, timing)) => {
                lc.result = Some(result);
                lc.timing = timing;
                lc.problem = differs.map(|m| Problem {
                    launch: l.id,
                    kernel: l.kernel.clone(),
                    kind: "note".into(),
                    message: format!(
                        "the instrumented kernel's output differs from the recording: {m}"
                    ),
                });
            }
            Err(f) => {
                lc.problem = Some(Problem {
                    launch: l.id,
                    kernel: l.kernel.clone(),
                    kind: if f.skip { "skipped" } else { "error" }.into(),
                    message: f.line.trim_start_matches("not replayable: ").to_string(),
                });
                lc.detail = (!f.skip).then_some(f.full);
            }
        }
        lc
    }

    /// The original source and map of a program this measurer instrumented.
    fn instrumented(&self, program: &str) -> Option<(String, CoverageMap)> {
        self.variants
            .variants()
            .find(|(k, _)| k.as_str() == program)
            .map(|(_, v)| (v.original.clone(), v.pass.clone()))
    }

    #[allow(clippy::type_complexity)]
    fn one(
        &mut self,
        session: &Session,
        l: &LaunchRecord,
    ) -> Result<(CoverageResult, Option<Mismatch>, Option<CoverTiming>), Failure> {
        let input = self.deriver.input(session, l).map_err(failure)?;
        let (variant, fresh) =
            self.variants
                .get(session, self.capture, &l.program, coverage_pass)?;
        let map = &variant.pass;
        if !map.kernels.iter().any(|k| k.name == l.kernel) {
            return Err(failure(ExecError::NoKernel {
                kernel: l.kernel.clone(),
            }));
        }
        let init = map.initial_buffer(&input.global_size, input.local_size.as_deref());
        let extra = [word_buffer(&init)];
        let start = Instant::now();
        let out = session
            .run(&variant.built, &input, &extra)
            .map_err(failure)?;
        let first_wall = start.elapsed();
        let n = input.args.len();
        let counters = out
            .outputs
            .get(n)
            .and_then(|o| o.as_deref())
            .map(words)
            .unwrap_or_default();

        let expected = LaunchInput::expected_outputs(self.capture, l)
            .ok()
            .map(|e| input.without_stand_ins(e));
        let infos: Vec<_> = l.args.iter().map(|a| a.info().clone()).collect();
        let differs: Option<Mismatch> = expected.and_then(|e| {
            check_outputs(&input, &infos, &e, &out, 0)
                .into_iter()
                .next()
        });

        let mut times = self.timing.then(|| CoverTiming {
            launch: l.id,
            kernel: l.kernel.clone(),
            instrument: if fresh {
                variant.instrument_time
            } else {
                Duration::ZERO
            },
            compile: if fresh {
                variant.compile_time
            } else {
                Duration::ZERO
            },
            instrumented_ns: out.kernel_ns.into_iter().collect(),
            instrumented_wall: vec![first_wall],
            ..Default::default()
        });
        if let Some(t) = times.as_mut() {
            for _ in 1..TIMING_RUNS {
                let start = Instant::now();
                let o = session
                    .run(&variant.built, &input, &extra)
                    .map_err(failure)?;
                t.instrumented_wall.push(start.elapsed());
                t.instrumented_ns.extend(o.kernel_ns);
            }
        }
        let result = map
            .evaluate(&l.kernel, &counters, &input.global_size)
            .map_err(failure)?;
        if let Some(t) = times.as_mut() {
            self.time_plain(session, l, &input, t);
        }
        Ok((result, differs, times))
    }

    fn time_plain(
        &mut self,
        session: &Session,
        l: &LaunchRecord,
        input: &LaunchInput,
        t: &mut CoverTiming,
    ) {
        let capture = self.capture;
        let built = self.plain.entry(l.program.clone()).or_insert_with(|| {
            capture
                .program(&l.program)
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    session
                        .build(capture, &r, &BuildOptions::default())
                        .map_err(|e| e.to_string())
                })
        });
        let Ok(built) = built else { return };
        for _ in 0..TIMING_RUNS {
            let start = Instant::now();
            if let Ok(o) = session.run(built, input, &[]) {
                t.plain_wall.push(start.elapsed());
                t.plain_ns.extend(o.kernel_ns);
            }
        }
    }
}

/// Gives a program's original source and map by its capture hash (the instrumented variant a
/// measurer kept, or the program instrumented again for a campaign's report).
pub type ProgramSource<'a> = &'a mut dyn FnMut(&str) -> Result<(String, CoverageMap), String>;

/// Merges launches' coverage, in launch order, into the report: programs with the same
/// source text and map are one program, each in the order of its first measured launch.
#[derive(Default)]
pub struct Merger {
    /// Capture program hash → key of the merged program (source text and map).
    merge_keys: HashMap<String, String>,
    /// Merged program key → position in the report.
    index: HashMap<String, usize>,
    report: CoverageReport,
    timing: Vec<CoverTiming>,
}

impl Merger {
    /// Adds one launch; `program` gives a program's original source and map (called once per
    /// program hash).
    pub fn add(&mut self, lc: &LaunchCoverage, program: ProgramSource) -> Result<(), String> {
        if let Some(result) = &lc.result {
            let key = match self.merge_keys.get(&lc.program) {
                Some(k) => k.clone(),
                None => {
                    let (original, map) = program(&lc.program)?;
                    let text = serde_json::to_string(&map).unwrap_or_default();
                    let key = digest(format!("{original}\0{text}").as_bytes());
                    if !self.index.contains_key(&key) {
                        self.report.programs.push(ProgramCoverage::new(
                            lc.program.clone(),
                            original,
                            map,
                        ));
                        self.index
                            .insert(key.clone(), self.report.programs.len() - 1);
                    }
                    self.merge_keys.insert(lc.program.clone(), key.clone());
                    key
                }
            };
            let at = self.index[&key];
            self.report.programs[at].add_result(&lc.kernel, Some(lc.launch), result.clone());
        }
        if let Some(d) = &lc.detail {
            if !self.report.details.contains(d) {
                self.report.details.push(d.clone());
            }
        }
        if let Some(p) = &lc.problem {
            self.report.problems.push(p.clone());
        }
        if let Some(t) = &lc.timing {
            self.timing.push(t.clone());
        }
        Ok(())
    }

    /// The report (problems in launch-id order) and the launches' times.
    pub fn finish(mut self) -> (CoverageReport, Vec<CoverTiming>) {
        self.report.problems.sort_by_key(|p| p.launch);
        (self.report, self.timing)
    }
}

/// Replays the selected launches with coverage counters on an opened session and merges the
/// results (`opts.ids` and `opts.device` are not used here: the caller chose). With `timing`,
/// each launch also runs plain and instrumented several times.
pub fn collect_on(
    session: &Session,
    capture: &Capture,
    launches: &[&LaunchRecord],
    opts: &CoverOptions,
    timing: bool,
) -> (CoverageReport, Vec<CoverTiming>) {
    let mut m = Measurer::new(capture, opts.instrument_cache.clone(), timing);
    let mut merger = Merger::default();
    for l in launches {
        let lc = m.measure(session, l);
        let _ = merger.add(&lc, &mut |p| {
            m.instrumented(p)
                .ok_or_else(|| format!("program {p} was not instrumented"))
        });
    }
    merger.finish()
}

/// Opens the selected device, then [`collect_on`].
pub fn collect(
    capture: &Capture,
    opts: &CoverOptions,
    timing: bool,
) -> Result<(Session, CoverageReport, Vec<CoverTiming>), ExecError> {
    let launches = select(capture, opts.ids.as_deref())?;
    let session = Session::open(&opts.device)?;
    let (report, times) = collect_on(&session, capture, &launches, opts, timing);
    Ok((session, report, times))
}

fn failure(e: impl Into<VariantError>) -> Failure {
    Failure::from(&e.into())
}

fn mean(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|&n| n as f64).sum::<f64>() / v.len() as f64)
}

fn mean_wall(v: &[Duration]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64)
}

/// The `--timing` line of one launch:
/// `timing launch <id> <kernel>: instrument X ms, compile Y ms, plain kernel A ms, instrumented kernel B ms (Rx); wall plain C ms, instrumented D ms`.
pub fn timing_line(t: &CoverTiming) -> String {
    let f = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{:.3} ms", x));
    let plain = mean(&t.plain_ns).map(|x| x / 1e6);
    let ins = mean(&t.instrumented_ns).map(|x| x / 1e6);
    let ratio = match (plain, ins) {
        (Some(p), Some(i)) if p > 0.0 => format!(" ({:.2}x)", i / p),
        _ => String::new(),
    };
    format!(
        "timing launch {} {}: instrument {:.1} ms, compile {:.1} ms, plain kernel {}, instrumented kernel {}{ratio}; wall plain {}, instrumented {}",
        t.launch,
        t.kernel,
        t.instrument.as_secs_f64() * 1e3,
        t.compile.as_secs_f64() * 1e3,
        f(plain),
        f(ins),
        f(mean_wall(&t.plain_wall).map(|x| x * 1e3)),
        f(mean_wall(&t.instrumented_wall).map(|x| x * 1e3)),
    )
}

/// The `--timing` total over all launches:
/// `timing total: instrument X ms, compile Y ms, plain kernels A ms, instrumented kernels B ms (Rx)`.
pub fn timing_total(times: &[CoverTiming]) -> String {
    let sum = |f: fn(&CoverTiming) -> &Vec<u64>| -> f64 {
        times
            .iter()
            .flat_map(|t| f(t).iter())
            .map(|&n| n as f64)
            .sum::<f64>()
            / 1e6
    };
    let (plain, ins) = (sum(|t| &t.plain_ns), sum(|t| &t.instrumented_ns));
    let ratio = if plain > 0.0 {
        format!(" ({:.2}x)", ins / plain)
    } else {
        String::new()
    };
    format!(
        "timing total: instrument {:.1} ms, compile {:.1} ms, plain kernels {plain:.3} ms, instrumented kernels {ins:.3} ms{ratio} ({TIMING_RUNS} runs each per launch)",
        times.iter().map(|t| t.instrument.as_secs_f64()).sum::<f64>() * 1e3,
        times.iter().map(|t| t.compile.as_secs_f64()).sum::<f64>() * 1e3,
    )
}

/// Prints the terminal summary (and `--timing` lines) and writes the requested reports;
/// `device` names where the launches ran. Returns the exit status; errors are one sentence.
pub fn print(
    report: &CoverageReport,
    times: &[CoverTiming],
    paths: &ReportPaths,
    timing: bool,
    device: &str,
    out: &mut dyn std::io::Write,
) -> Result<i32, String> {
    for d in &report.details {
        eprintln!("cltrap: {d}");
    }
    let _ = write!(out, "{}", report::summary(report));
    for t in times {
        let _ = writeln!(out, "{}", timing_line(t));
    }
    if timing {
        let _ = writeln!(out, "{}", timing_total(times));
    }
    let written = write::write(report, paths).map_err(|e| e.to_string())?;
    for p in written {
        let _ = writeln!(out, "wrote {}", p.display());
    }
    let _ = writeln!(out, "device {device}");
    Ok(report.exit_code())
}
