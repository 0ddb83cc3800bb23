//! `cltrap cover`: branch, loop-boundary and barrier coverage of kernels, measured on the
//! launches an application really made (replayed from a capture or a generated suite).
//!
//! Each distinct program is instrumented once by `cltrap_kernel::coverage` (an extra trailing
//! counter buffer) and built once; each selected launch is replayed with a fresh counter buffer
//! appended; the counters are evaluated and merged per kernel ([`ProgramCoverage`]). The
//! reports ([`report`]) are written from that merged model, which the live-app path (the shim
//! swapping instrumented kernels into the running application) builds the same way with
//! [`ProgramCoverage::add_counters`] and hands to [`report::write`].
//!
//! Programs are merged when their source text and counter map are the same (the same kernel
//! built twice). Divergent barriers are undefined behaviour and devices differ: PoCL's CPU
//! device runs a barrier inside a branch for all or none of a group's work-items (it takes the
//! branch of the group as a whole), so divergence is not observable there; on an NVIDIA H100
//! the fixture `diverge` (k = 2 of 4) is reported as 2 arrivals for 4 work-items in each group.
//! The exit status is 0 when every launch was measured (divergence is a finding, not a failure)
//! and 2 when some launch could not be instrumented, built or run.

pub mod html;
pub mod report;
pub mod worker;

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
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use report::ReportPaths;

/// What to measure.
#[derive(Debug, Clone, Default)]
pub struct CoverOptions {
    /// Launch ids; `None` = all.
    pub ids: Option<Vec<u64>>,
    /// Where to replay.
    pub device: DeviceSelector,
    /// Keep instrumented sources in this directory and reuse them (no libclang needed on a hit).
    pub instrument_cache: Option<PathBuf>,
    /// Launches already tried elsewhere that failed (id, why in words: a launch that crashed
    /// or hung an earlier cover worker): not run again, counted as failed in the report.
    pub failed_elsewhere: Vec<(u64, String)>,
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
        Ok(())
    }
}

/// A launch that was not measured, or a note about one that was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Default)]
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

struct Collector<'a> {
    session: &'a Session,
    capture: &'a Capture,
    variants: VariantCache<CoverageMap>,
    plain: HashMap<String, Result<BuiltProgram, String>>,
    /// Capture program hash → key of the merged program (source text and map).
    merge_keys: HashMap<String, String>,
    /// Merged program key → position in the report.
    index: HashMap<String, usize>,
    report: CoverageReport,
    timing: Option<Vec<CoverTiming>>,
    /// Restores inputs the capture keeps only as digests (past its disk budget).
    deriver: Deriver<'a>,
}

/// Replays the selected launches with coverage counters on an opened session and merges the
/// results (`opts.ids` and `opts.device` are not used here: the caller chose). With `timing`, each launch also runs plain and instrumented several times.
pub fn collect_on(
    session: &Session,
    capture: &Capture,
    launches: &[&LaunchRecord],
    opts: &CoverOptions,
    timing: bool,
) -> (CoverageReport, Vec<CoverTiming>) {
    let mut c = Collector {
        session,
        capture,
        variants: VariantCache::with_disk(opts.instrument_cache.clone().map(|dir| DiskCache {
            dir,
            pass: "coverage",
        })),
        plain: HashMap::new(),
        merge_keys: HashMap::new(),
        index: HashMap::new(),
        report: CoverageReport::default(),
        timing: timing.then(Vec::new),
        deriver: Deriver::new(capture),
    };
    for l in launches {
        worker::announce(l.id);
        if let Err(f) = c.one(l) {
            let kind = if f.skip { "skipped" } else { "error" };
            if !f.skip && !c.report.details.contains(&f.full) {
                c.report.details.push(f.full.clone());
            }
            c.report.problems.push(Problem {
                launch: l.id,
                kernel: l.kernel.clone(),
                kind: kind.into(),
                message: f.line.trim_start_matches("not replayable: ").to_string(),
            });
        }
    }
    (c.report, c.timing.unwrap_or_default())
}

/// Opens the selected device, then [`collect_on`].
pub fn collect(
    capture: &Capture,
    opts: &CoverOptions,
    timing: bool,
) -> Result<(Session, CoverageReport, Vec<CoverTiming>), ExecError> {
    let launches = select(capture, opts.ids.as_deref())?;
    let session = Session::open(&opts.device)?;
    let (mut report, times) = collect_on(&session, capture, &launches, opts, timing);
    for (id, why) in &opts.failed_elsewhere {
        let kernel = capture
            .launches
            .iter()
            .find(|l| l.id == *id)
            .map_or_else(|| "?".to_string(), |l| l.kernel.clone());
        report.problems.push(Problem {
            launch: *id,
            kernel,
            kind: "error".into(),
            message: format!("the kernel {why}; left out of the coverage"),
        });
    }
    report.problems.sort_by_key(|p| p.launch);
    Ok((session, report, times))
}

fn failure(e: impl Into<VariantError>) -> Failure {
    Failure::from(&e.into())
}

impl Collector<'_> {
    fn one(&mut self, l: &LaunchRecord) -> Result<(), Failure> {
        let input = self.deriver.input(self.session, l).map_err(failure)?;
        let (variant, fresh) =
            self.variants
                .get(self.session, self.capture, &l.program, |src, options| {
                    let model = cltrap_kernel::parse_program(src, options)?;
                    let c = instrument_coverage(&model, CoverageOptions::default())?;
                    Ok((c.source, c.map))
                })?;
        let map = &variant.pass;
        if !map.kernels.iter().any(|k| k.name == l.kernel) {
            return Err(failure(ExecError::NoKernel {
                kernel: l.kernel.clone(),
            }));
        }
        let init = map.initial_buffer(&input.global_size, input.local_size.as_deref());
        let extra = [word_buffer(&init)];
        let start = Instant::now();
        let out = self
            .session
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

        let mut times = self.timing.is_some().then(|| CoverTiming {
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
                let o = self
                    .session
                    .run(&variant.built, &input, &extra)
                    .map_err(failure)?;
                t.instrumented_wall.push(start.elapsed());
                t.instrumented_ns.extend(o.kernel_ns);
            }
        }
        // Programs created separately from the same text with the same map (the same source
        // built twice, or with options that change nothing) are one program to the user.
        let key = self
            .merge_keys
            .entry(l.program.clone())
            .or_insert_with(|| {
                let map = serde_json::to_string(&variant.pass).unwrap_or_default();
                digest(format!("{}\0{map}", variant.original).as_bytes())
            })
            .clone();
        let at = match self.index.get(&key) {
            Some(i) => *i,
            None => {
                self.report.programs.push(ProgramCoverage::new(
                    l.program.clone(),
                    variant.original.clone(),
                    variant.pass.clone(),
                ));
                self.index.insert(key, self.report.programs.len() - 1);
                self.report.programs.len() - 1
            }
        };
        self.report.programs[at]
            .add_counters(&l.kernel, Some(l.id), &counters, &input.global_size)
            .map_err(failure)?;
        if let Some(m) = differs {
            self.report.problems.push(Problem {
                launch: l.id,
                kernel: l.kernel.clone(),
                kind: "note".into(),
                message: format!(
                    "the instrumented kernel's output differs from the recording: {m}"
                ),
            });
        }
        if let (Some(mut t), Some(_)) = (times.take(), self.timing.as_ref()) {
            self.time_plain(l, &input, &mut t);
            if let Some(all) = self.timing.as_mut() {
                all.push(t);
            }
        }
        Ok(())
    }

    fn time_plain(&mut self, l: &LaunchRecord, input: &LaunchInput, t: &mut CoverTiming) {
        let (session, capture) = (self.session, self.capture);
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

fn mean(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / v.len() as f64)
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
        times.iter().flat_map(|t| f(t).iter()).sum::<u64>() as f64 / 1e6
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

/// `cltrap cover`: measures, prints the terminal summary (and `--timing` lines), writes the
/// requested reports, and returns the exit status; errors are one sentence.
pub fn cli(
    capture: &Capture,
    opts: &CoverOptions,
    paths: &ReportPaths,
    timing: bool,
    out: &mut impl std::io::Write,
) -> Result<i32, String> {
    let (session, report, times) = collect(capture, opts, timing).map_err(|e| e.to_string())?;
    for d in &report.details {
        eprintln!("cltrap: {d}");
    }
    let _ = write!(out, "{}", report::summary(&report));
    for t in &times {
        let _ = writeln!(out, "{}", timing_line(t));
    }
    if timing {
        let _ = writeln!(out, "{}", timing_total(&times));
    }
    let written = report::write(&report, paths).map_err(|e| e.to_string())?;
    for p in written {
        let _ = writeln!(out, "wrote {}", p.display());
    }
    let info = session.info();
    let _ = writeln!(out, "device {} ({})", info.name, info.platform);
    Ok(report.exit_code())
}
