//! `cltrap mutate`: mutation testing of captured kernels, with a capture (or a generated suite
//! in the same format) as the test suite — each replayable launch is one test case whose
//! expected outputs are the recorded ones.
//!
//! Steps: parse each program and find its mutants (`cltrap_kernel::mutate`); render one
//! *schema* per program (all mutants behind a run-time selector; compile once) and, for
//! mutants that cannot live in it (or with `--per-mutant-compile`), one program per mutant;
//! compile the schema in this process (one that does not compile falls back to one compile per
//! mutant); then run the original on every test case as units of the campaign runner
//! ([`cases`]: `case-<launch>` checks the recording, reads the coverage counters and tries the
//! permuted schedules; `schema-<launch>` runs the original through the schema once per kernel
//! and sizes, and a program whose schema the driver cannot run falls back to one compile per
//! mutant), spread over the campaign's devices and journaled in its `cases/` folder for
//! `--resume` and `cltrap merge`; mark NO-COVERAGE mutants; then evaluate the rest as units of
//! the same runner ([`campaign`]: one unit per mutant, or per batch of a schema mutant's test
//! cases ([`batches`]), run in the runner's worker processes,
//! which survive hangs and crashes, on one or more devices, in shards, resumable from the
//! campaign's journal); a worker evaluates a mutant's job in its own process ([`worker`]).
//! [`report`] writes the terminal summary, the mutation-testing-report-schema JSON and the
//! HTML report.
//!
//! A case that writes past the guard zones or crashes costs a worker and is "not a test case",
//! never a dead parent. Mutants that write into a guard zone are RUNTIME-ERROR without losing
//! the worker ([`overrun`] then names the line), and only *undetected* mutants go through TCE
//! ([`tce`]): a detected mutant cannot be equivalent. A campaign with no test case is an error
//! (exit 2), never a score.

pub mod batches;
pub mod campaign;
pub mod cases;
pub mod cli;
mod overrun;
mod quiet;
pub mod report;
pub mod tce;
pub mod worker;

use crate::executor::{BuildOptions, DeviceSelector, ExecError, Session};
use crate::variant::program_source;
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::coverage::{instrument_coverage, Outcome};
use cltrap_kernel::mutate::{self as km, Mutant, Operator};
use cltrap_kernel::{parse_program, Program};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worker::{Job, JobResult, TestRef};

/// The verdict on one mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING-KEBAB-CASE")]
pub enum Status {
    /// Some test case's outputs differ from the recorded ones (in every repeat).
    Killed,
    /// Every test case gave the recorded outputs.
    Survived,
    /// Its code never ran in any test case (coverage of the original); not run.
    NoCoverage,
    /// The watchdog fired or the run missed its deadline.
    Timeout,
    /// The run failed or the worker process died (crash).
    RuntimeError,
    /// The mutated program does not compile.
    CompileError,
    /// Killed in some but not all repeats: schedule-dependent.
    Undecided,
    /// Trivially equivalent: to the original (syntax, or the same optimised code), or a
    /// duplicate of an earlier undetected mutant (same optimised code).
    Equivalent,
    /// Not applicable to any test case (launch changes that are illegal everywhere).
    Ignored,
}

impl Status {
    /// The name printed in tables (`NO-COVERAGE`).
    pub fn label(self) -> &'static str {
        match self {
            Status::Killed => "KILLED",
            Status::Survived => "SURVIVED",
            Status::NoCoverage => "NO-COVERAGE",
            Status::Timeout => "TIMEOUT",
            Status::RuntimeError => "RUNTIME-ERROR",
            Status::CompileError => "COMPILE-ERROR",
            Status::Undecided => "UNDECIDED",
            Status::Equivalent => "EQUIVALENT",
            Status::Ignored => "IGNORED",
        }
    }

    /// Detected by the suite: killed, or made the kernel hang or crash (as in CLTestCheck and
    /// the GPU mutation-testing literature, a crash or hang counts as noticed).
    pub fn detected(self) -> bool {
        matches!(
            self,
            Status::Killed | Status::Timeout | Status::RuntimeError
        )
    }

    /// Left out of the score's denominator.
    pub fn excluded(self) -> bool {
        matches!(
            self,
            Status::Equivalent | Status::CompileError | Status::Ignored
        )
    }
}

/// What `cltrap mutate` was asked to do.
#[derive(Debug, Clone)]
pub struct MutateOptions {
    /// Only this kernel (and the helpers it calls).
    pub kernel: Option<String>,
    /// Operators; empty = all.
    pub operators: Vec<Operator>,
    /// Launch ids; `None` = all replayable launches.
    pub ids: Option<Vec<u64>>,
    /// Permuted schedules per test case (0 = only the launch's own).
    pub schedules: u32,
    /// Runs per test case and schedule.
    pub repeats: u32,
    /// Floating-point tolerance in ulp.
    pub ulp: u64,
    /// Worker processes.
    pub jobs: usize,
    /// Deadline of one kernel run; `None` = 1 s plus 20 times the slowest run of the
    /// original over the suite (measured while checking the suite).
    pub timeout: Option<Duration>,
    /// Compile every mutant on its own (no schema).
    pub per_mutant_compile: bool,
    /// Where to run.
    pub device: DeviceSelector,
    /// Output directory (rendered sources, derived inputs, build logs).
    pub out_dir: PathBuf,
    /// Loop-iteration budget per work-item and function call before the watchdog fires.
    pub loop_budget: u32,
    /// The `cltrap` executable to start workers from.
    pub worker_exe: PathBuf,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
    /// Compare the undetected mutants' optimised code with the original's ([`tce`]) to find
    /// EQUIVALENT and duplicate mutants.
    pub compare_optimised: bool,
    /// Name the line where each RUNTIME-ERROR mutant that wrote out of bounds or crashed
    /// overran, with the bounds check on Oclgrind ([`overrun`]).
    pub locate_overruns: bool,
}

/// One mutant and its verdict.
#[derive(Debug, Clone, Serialize)]
pub struct MutantResult {
    /// The mutant.
    pub mutant: Mutant,
    /// Verdict.
    pub status: Status,
    /// One sentence on why.
    pub detail: String,
    /// Compiled on its own rather than selected in the schema.
    pub own_program: bool,
    /// For a RUNTIME-ERROR mutant that overran: where, as the bounds check found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overran: Option<crate::check::locate::Overrun>,
    /// No test case launches a kernel that runs its code: its verdict says nothing about
    /// the suite's strength, so it counts in no score.
    #[serde(skip)]
    pub untested: bool,
}

/// One program's campaign.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramResult {
    /// Program record hash.
    pub program: String,
    /// A file name for reports.
    pub file: String,
    /// The user's source.
    pub source: String,
    /// Kernels tested, with their test-case (launch) ids.
    pub kernels: Vec<(String, Vec<u64>)>,
    /// Every mutant, by number.
    pub mutants: Vec<MutantResult>,
}

/// The whole campaign.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CampaignReport {
    /// Per program.
    pub programs: Vec<ProgramResult>,
    /// Notes for the user: dropped test cases, schema exclusions, skipped launches.
    pub notes: Vec<String>,
    /// Device compiles made (parent and workers).
    pub compiles: u32,
    /// Wall time of the evaluation phase (workers).
    pub eval_time: Duration,
    /// Mutants evaluated by running them (not decided statically).
    pub evaluated: u32,
    /// The slowest run of the original over the suite (wall time, in this process).
    pub slowest_original: Duration,
    /// The slowest first run of a program (which includes the driver's lazy compile).
    pub slowest_first: Duration,
    /// The deadline used per kernel run.
    pub deadline: Duration,
    /// Where the wall time before and around the evaluation went (`--timing`).
    pub phases: Phases,
    /// Launches kept as test cases (the original reproduced their recording).
    pub test_cases: u32,
    /// Launches asked for that are not test cases (the notes say why, one each).
    pub dropped: u32,
}

/// Wall time per phase of a campaign, so `--timing` shows which fixed cost dominates a
/// small suite (the evaluation rate alone hides them).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    /// Opening the device and reading the capture.
    pub open: Duration,
    /// Parsing, finding mutants, rendering and writing the sources.
    pub render: Duration,
    /// Device compiles in this process (the schema or the original with the mutation
    /// parameters, and its permuted twin).
    pub compile: Duration,
    /// Wall time of the test cases' units ([`cases`]: the original's check, coverage and
    /// schedules on every test case, in the campaign's workers), or of reading them back
    /// from the journal.
    pub check: Duration,
    /// Instrumenting the original for coverage (its compile and runs are the test cases'
    /// units, in `check`).
    pub coverage: Duration,
    /// Longest time from a worker's start to its first program built (process start,
    /// device open, compile or driver cache hit).
    pub worker_start: Duration,
    /// Worker processes that reached a built program (more than the pool size means
    /// restarts after timeouts and crashes).
    pub worker_spawns: u32,
    /// Compiling the undetected mutants with clang to compare optimised code ([`tce`]).
    pub tce: Duration,
    /// Locating the overruns of RUNTIME-ERROR mutants on the bounds check ([`overrun`]).
    pub locate: Duration,
}

/// Adds the time `f` takes to `slot`.
fn timed<T>(slot: &std::cell::Cell<Duration>, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    slot.set(slot.get() + t.elapsed());
    r
}

/// Why a campaign could not run. One sentence each.
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// Reading the capture failed.
    #[error("{0}")]
    Capture(#[from] cltrap_capture::ReadError),
    /// Opening the device or running the original failed.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// Nothing to test.
    #[error("{0}")]
    Nothing(String),
    /// The output directory could not be written.
    #[error("{0}")]
    Io(String),
    /// Worker processes could not be started.
    #[error("{0}")]
    Workers(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MutateError + '_ {
    move |e| MutateError::Io(format!("{}: {e}", path.display()))
}

/// A program of the capture with its tests, parsed and mutated.
struct Plan {
    hash: String,
    source: String,
    parsed: Program,
    options: String,
    kernels: BTreeMap<String, Vec<u64>>,
    mutants: Vec<Mutant>,
}

/// The first line of a build error's text that names an error (build logs are long), trimmed.
fn error_line(text: &str) -> Option<&str> {
    text.lines().find(|l| l.contains("error")).map(str::trim)
}

/// `line` with the paths of the driver's temporary copies of a source (`/root/.cache/pocl/
/// kcache/tempfile_wLnfFK.cl:7:134`) named `name` instead: the user knows the rendered
/// file in the output directory, not the driver's cache.
fn name_driver_file(line: &str, name: &str) -> String {
    line.split(' ')
        .map(|w| match w.find(".cl:") {
            Some(at) if w[..at].contains('/') => format!("{name}{}", &w[at + 3..]),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn short(hash: &str) -> String {
    hash.chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect()
}

/// A campaign ready to evaluate: the report so far (test cases, notes, statically decided
/// mutants) and one [`Job`] per mutant left to run, in a deterministic order.
pub struct Prepared {
    /// The report with every mutant that needs no run decided.
    pub report: CampaignReport,
    /// The mutants to run, in order.
    pub jobs: Vec<Job>,
    /// For each job, its mutant as (program, mutant) indices into `report.programs`.
    pub slots: Vec<(usize, usize)>,
    plans: Vec<Plan>,
}

/// Prepares a campaign on `opts.device` (in the parent process): test cases, mutants,
/// schemata, the original's check and coverage, and the jobs of the mutants to run.
pub fn prepare_campaign(
    capture: &Capture,
    opts: &MutateOptions,
    at: &cases::CaseRun,
) -> Result<Prepared, MutateError> {
    // An output folder inside the capture (the default, `CAP/mutate`) is untrusted: never
    // through a link planted there (its files are replaced, not written through). A folder
    // the user named elsewhere may be a link of theirs.
    let inside = opts.out_dir.starts_with(capture.dir());
    let planted = [
        opts.out_dir.clone(),
        opts.out_dir.join("src"),
        opts.out_dir.join("inputs"),
    ];
    for d in planted.iter().filter(|_| inside) {
        if cltrap_capture::safe_open::is_link(d) {
            return Err(MutateError::Io(format!(
                "{} is a symbolic link: give --out a folder of your own",
                d.display()
            )));
        }
    }
    std::fs::create_dir_all(opts.out_dir.join("src")).map_err(io(&opts.out_dir))?;
    let mut report = CampaignReport::default();
    // 1. Test cases, by program and kernel.
    let launches: Vec<&LaunchRecord> =
        crate::replay::select(capture, opts.ids.as_deref()).map_err(MutateError::Exec)?;
    let mut by_program: BTreeMap<String, BTreeMap<String, Vec<u64>>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for l in launches {
        if opts.kernel.as_ref().is_some_and(|k| *k != l.kernel) {
            continue;
        }
        if !l.not_replayable.is_empty() || l.status != 0 {
            report.notes.push(format!(
                "launch {} ({}) is not replayable; not a test case",
                l.id, l.kernel
            ));
            report.dropped += 1;
            continue;
        }
        if !by_program.contains_key(&l.program) {
            order.push(l.program.clone());
        }
        by_program
            .entry(l.program.clone())
            .or_default()
            .entry(l.kernel.clone())
            .or_default()
            .push(l.id);
    }
    if order.is_empty() {
        return Err(MutateError::Nothing(match &opts.kernel {
            Some(k) => format!(
                "no replayable launch of kernel {k:?} in {}",
                capture.dir().display()
            ),
            None => format!("no replayable launch in {}", capture.dir().display()),
        }));
    }
    let opened = Instant::now();
    let session = Session::open(&opts.device)?;
    report.phases.open = opened.elapsed();
    let budget = format!("-D__CLTRAP_BUDGET={}u", opts.loop_budget);

    let mut jobs: Vec<(usize, Job)> = Vec::new();
    let mut slots: Vec<(usize, usize)> = Vec::new();
    let mut plans: Vec<Plan> = Vec::new();
    // The phases before and after the evaluation take minutes on large programs: a spinner
    // says which one runs (on standard error, drawn only on a terminal).
    let phase = phase_spinner(opts.progress);
    let programs = order.len();
    // Each program's notes, and its plan and stage once prepared, in the campaign's order:
    // the reports keep the notes of one program together.
    let mut staged: Vec<(Vec<String>, Option<(Plan, Stage)>)> = Vec::new();
    for (n, hash) in order.iter().enumerate() {
        let start = report.notes.len();
        phase.set_message(format!(
            "program {}/{programs}: rendering, compiling the schema, checking the suite",
            n + 1
        ));
        let rendering = Instant::now();
        let record = capture.program(hash)?;
        let kernels = by_program.remove(hash).unwrap_or_default();
        let source = match program_source(capture, &record) {
            Ok(s) => s,
            Err(e) => {
                report.notes.push(format!("program {}: {e}", short(hash)));
                staged.push((report.notes.split_off(start), None));
                continue;
            }
        };
        // Parsing, schemata and TCE all read the captured headers' copies.
        let (source, options) =
            match crate::headers::Headers::from_capture(capture, &record.includes) {
                Ok(h) => (
                    h.parse_source(&source),
                    crate::variant::parse_options(&h, &record),
                ),
                Err(e) => {
                    report.notes.push(format!("program {}: {e}", short(hash)));
                    staged.push((report.notes.split_off(start), None));
                    continue;
                }
            };
        let parsed = match parse_program(&source, &options) {
            Ok(p) => p,
            Err(e) => {
                report.notes.push(format!(
                    "program {}: the kernel source cannot be parsed: {e}",
                    short(hash)
                ));
                staged.push((report.notes.split_off(start), None));
                continue;
            }
        };
        let mutants = km::find_mutants(
            &parsed,
            &km::MutateOptions {
                operators: opts.operators.clone(),
                kernels: kernels.keys().cloned().collect(),
            },
        );
        report.phases.render += rendering.elapsed();
        let mut plan = Plan {
            hash: hash.clone(),
            source,
            parsed,
            options,
            kernels,
            mutants,
        };
        let stage = prepare(capture, &session, &mut plan, opts, &budget, &mut report)?;
        let stage = match stage {
            Stage::Pending(mut p) => {
                p.cov_note_at -= start;
                Stage::Pending(p)
            }
            done => done,
        };
        staged.push((report.notes.split_off(start), Some((plan, stage))));
    }

    // The test cases of every program, as units spread over the campaign's workers.
    phase.set_message("running the original on the test cases");
    let all_cases: Vec<cases::CaseJob> = staged
        .iter()
        .filter_map(|(_, s)| match s {
            Some((_, Stage::Pending(p))) => Some(p.cases.iter().chain(&p.schema_checks).cloned()),
            _ => None,
        })
        .flatten()
        .collect();
    let checking = Instant::now();
    let case_results = cases::run_cases(&all_cases, at).map_err(MutateError::Workers)?;
    report.phases.check += checking.elapsed();
    for (mut notes, s) in staged {
        let Some((mut plan, stage)) = s else {
            report.notes.extend(notes);
            continue;
        };
        let pi = report.programs.len();
        let (prog_jobs, result) = match stage {
            Stage::Done(j, r) => {
                report.notes.extend(notes);
                (j, r)
            }
            Stage::Pending(p) => {
                let failed = p.cases.iter().find_map(|j| {
                    case_results
                        .get(&j.unit())
                        .and_then(|r| r.coverage_build.clone())
                });
                if let Some(e) = failed {
                    notes.insert(
                        p.cov_note_at.min(notes.len()),
                        format!(
                            "{}: the coverage build failed ({e}); every mutant in a launched kernel is run",
                            p.file
                        ),
                    );
                }
                report.notes.extend(notes);
                // A schema the driver cannot run on a test case: one compile per mutant.
                let unrunnable = p.schema_checks.iter().any(|s| {
                    let case = case_results.get(&cases::unit_id(s.launch));
                    case.is_some_and(|r| r.dropped.is_none())
                        && case_results
                            .get(&s.unit())
                            .is_some_and(|r| r.dropped.is_some())
                });
                if unrunnable {
                    report.notes.push(format!(
                        "{}: the driver cannot run the original through the mutant schema (it crashed, hung or failed); its mutants are compiled one by one",
                        p.file
                    ));
                    let mut fallback = opts.clone();
                    fallback.per_mutant_compile = true;
                    match prepare(
                        capture,
                        &session,
                        &mut plan,
                        &fallback,
                        &budget,
                        &mut report,
                    )? {
                        Stage::Done(j, r) => (j, r),
                        Stage::Pending(p) => finish_program(
                            capture,
                            &plan,
                            p,
                            &case_results,
                            &fallback,
                            &budget,
                            &mut report,
                        )?,
                    }
                } else {
                    finish_program(capture, &plan, p, &case_results, opts, &budget, &mut report)?
                }
            }
        };
        report.programs.push(result);
        plans.push(plan);
        for (mi, job) in prog_jobs {
            slots.push((pi, mi));
            jobs.push((slots.len() - 1, job));
        }
    }

    // A campaign without a test case has no score to give: every mutant would be
    // NO-COVERAGE and "0%" would read as a weak suite rather than as no suite.
    if report.test_cases == 0 {
        let why = report
            .notes
            .iter()
            .find(|n| n.contains("not a test case"))
            .or_else(|| report.notes.first())
            .cloned()
            .unwrap_or_else(|| "no program could be prepared".into());
        return Err(MutateError::Nothing(format!(
            "no test case: none of the {} launch(es) asked for could be used as one, so no mutant was run and there is no score (first reason: {why})",
            report.dropped.max(1)
        )));
    }

    report.evaluated = jobs.len() as u32;
    report.compiles += jobs
        .iter()
        .filter(|(_, j)| !j.cache)
        .map(|(_, j)| 1 + u32::from(j.permuted.is_some()))
        .sum::<u32>()
        + if jobs.iter().any(|(_, j)| j.cache) {
            opts.jobs.max(1).min(jobs.len()) as u32
        } else {
            0
        };
    phase.finish_and_clear();
    report.deadline = opts
        .timeout
        .unwrap_or(Duration::from_secs(2) + report.slowest_original * 20);
    Ok(Prepared {
        report,
        jobs: jobs.into_iter().map(|(_, j)| j).collect(),
        slots,
        plans,
    })
}

impl Prepared {
    /// The longest silence of a worker on one job: a compile (a schema of many mutants, or
    /// the driver's lazy compile on a first run) may take 20 runs' time and more; the
    /// in-kernel watchdog stops most endless loops long before.
    pub fn unit_deadline(&self) -> Duration {
        let run = self.report.deadline;
        (run * 20 + Duration::from_secs(30))
            .max(run + self.report.slowest_first * 4 + Duration::from_secs(2))
    }

    /// The whole report from the jobs' results (`results[i]` for job `i`, `None` for a job
    /// with no result, after Ctrl-C): verdicts, overrun locations, TCE and the notes.
    pub fn finish(
        mut self,
        capture: &Capture,
        opts: &MutateOptions,
        results: &[Option<JobResult>],
        eval_time: Duration,
    ) -> CampaignReport {
        let mut report = std::mem::take(&mut self.report);
        for (i, r) in results.iter().enumerate() {
            let (Some(r), Some(&(pi, mi))) = (r, self.slots.get(i)) else {
                continue;
            };
            let Some(m) = report
                .programs
                .get_mut(pi)
                .and_then(|p| p.mutants.get_mut(mi))
            else {
                continue;
            };
            m.status = r.status;
            m.detail = r.detail.clone();
        }
        report.eval_time = eval_time;
        let phase = phase_spinner(opts.progress);
        if opts.locate_overruns {
            phase.set_message("locating the overruns of RUNTIME-ERROR mutants (Oclgrind)");
            let started = Instant::now();
            overrun::locate(capture, &self.plans, &mut report, opts);
            report.phases.locate = started.elapsed();
        }
        // 3. Equivalent and duplicate mutants among those the suite did not detect.
        if opts.compare_optimised {
            phase.set_message("comparing the undetected mutants' optimised code (TCE)");
            let started = Instant::now();
            for (plan, prog) in self.plans.iter().zip(report.programs.iter_mut()) {
                let kernels: Vec<String> = plan.kernels.keys().cloned().collect();
                tce::judge(
                    &plan.parsed,
                    &plan.options,
                    &kernels,
                    &prog.file,
                    &mut prog.mutants,
                    &mut report.notes,
                );
            }
            report.phases.tce = started.elapsed();
        }
        let suspicious = report::all_timeout_notes(&report, report.deadline);
        report.notes.extend(suspicious);
        phase.finish_and_clear();
        report
    }
}

/// A spinner naming the phase that runs (hidden when `show` is false or standard error is
/// not a terminal).
fn phase_spinner(show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar =
        indicatif::ProgressBar::new_spinner().with_finish(indicatif::ProgressFinish::AndClear);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} mutate: {msg} {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Writes a derived input for the workers (whole, or not at all: a file of that name is
/// complete).
fn write_input(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::campaign::journal::replace_file(path, bytes)
}

/// Parent-side preparation of one program: renders and checks the schema, measures coverage,
/// decides what can be decided without running, and returns the jobs for the rest.
#[allow(clippy::too_many_arguments)]
fn prepare(
    capture: &Capture,
    session: &Session,
    plan: &mut Plan,
    opts: &MutateOptions,
    budget: &str,
    report: &mut CampaignReport,
) -> Result<Stage, MutateError> {
    let tag = short(&plan.hash);
    let file = format!("program-{tag}.cl");
    let record = capture.program(&plan.hash)?;
    let mut results: Vec<MutantResult> = plan
        .mutants
        .iter()
        .map(|m| MutantResult {
            mutant: m.clone(),
            status: Status::Survived,
            detail: String::new(),
            own_program: opts.per_mutant_compile || !m.in_schema,
            overran: None,
            untested: false,
        })
        .collect();
    let fail_all = |results: &mut Vec<MutantResult>, why: String| {
        for r in results.iter_mut() {
            r.status = Status::CompileError;
            r.detail = why.clone();
        }
    };
    let write = |name: &str, text: &str| write_source(opts, name, text);
    let result = |results: Vec<MutantResult>| program_result(plan, &file, results);

    // The base program every test runs the original with: the schema, or (per-mutant mode)
    // the original with the same extra parameters.
    let base = if opts.per_mutant_compile {
        km::original(&plan.parsed)
    } else {
        km::schema(&plan.parsed, &plan.mutants)
    };
    let base = match base {
        Ok(b) => b,
        Err(e) => {
            fail_all(
                &mut results,
                format!("the program cannot be rewritten: {e}"),
            );
            report.notes.push(format!(
                "{file}: the program cannot be rewritten for mutation: {e}"
            ));
            return Ok(Stage::Done(vec![], result(results)));
        }
    };
    for (n, why) in &base.excluded {
        if let Some(r) = results.iter_mut().find(|r| r.mutant.number == *n) {
            r.own_program = true;
            if !opts.per_mutant_compile {
                report.notes.push(format!(
                    "{file}: mutant {n} ({}, line {}) is compiled on its own: {why}",
                    r.mutant.operator, r.mutant.line
                ));
            }
        }
    }
    let base_name = if opts.per_mutant_compile {
        format!("{tag}-original.cl")
    } else {
        format!("{tag}-schema.cl")
    };
    let base_path = write(&base_name, &base.source)?;
    let compile_time = std::cell::Cell::new(Duration::ZERO);
    // What the driver's compiler prints goes to a log, not the terminal (see `quiet`).
    let build_log = opts.out_dir.join("build.log");
    let build = |src: &str| {
        timed(&compile_time, || {
            quiet::stderr_to(&build_log, || {
                session.build(
                    capture,
                    &record,
                    &BuildOptions {
                        source: Some(src.to_string()),
                        extra_options: budget.to_string(),
                    },
                )
            })
        })
    };
    // The suite is checked with the coverage build of the original when it works: one run
    // per test case checks the outputs and records coverage. The schema is still compiled
    // here (a schema that does not compile falls back to one compile per mutant, and the
    // workers then find it in the driver's cache); with one compile per mutant, the base
    // program is compiled only when there is no coverage build to check the suite with.
    // (Compiling the schema in a worker process meanwhile was tried: slower on two busy
    // cores, where compiles compete for the CPU.)
    // The two compiles are independent: the coverage build runs on a session of its own in a
    // second thread (PoCL builds in parallel within one process).
    let covering = Instant::now();
    let instrumented = CoverageRun::instrument(plan, report);
    report.phases.coverage += covering.elapsed();
    // The coverage build itself happens in the case units' workers (see [`cases`]); its
    // failure is noted here, at this place among the program's notes.
    let cov_note_at = report.notes.len();
    let compiling = Instant::now();
    let schema_built = build(&base.source);
    report.phases.compile += compiling.elapsed();
    compile_time.set(Duration::ZERO);
    if instrumented.is_some() {
        report.compiles += 1;
    }
    {
        report.compiles += 1;
        match schema_built {
            Ok(_) => {}
            Err(e) if !opts.per_mutant_compile => {
                let text = e.to_string();
                let log = opts.out_dir.join("src").join(format!("{tag}-schema.log"));
                let kept = crate::campaign::journal::replace_file(&log, text.as_bytes()).is_ok();
                report.notes.push(format!(
                    "{file}: the mutant schema does not compile ({}); falling back to one compile per mutant{}",
                    name_driver_file(error_line(&text).unwrap_or(""), &base_name),
                    if kept {
                        format!(" (build log: {})", log.display())
                    } else {
                        String::new()
                    }
                ));
                let mut fallback = opts.clone();
                fallback.per_mutant_compile = true;
                report.phases.compile += compile_time.get();
                return prepare(capture, session, plan, &fallback, budget, report);
            }
            Err(e) => {
                report.notes.push(format!(
                    "{file}: the program with the mutation parameters does not compile ({}); every mutant is reported COMPILE-ERROR",
                    error_line(&e.to_string()).unwrap_or("")
                ));
                fail_all(
                    &mut results,
                    "the program does not compile with the mutation parameters".into(),
                );
                report.phases.compile += compile_time.get();
                return Ok(Stage::Done(vec![], result(results)));
            }
        }
    };
    // The permuted base, for --schedules.
    let permuted_path = if opts.schedules > 0 {
        let permuted = parse_program(&base.source, &plan.options)
            .and_then(|p| cltrap_kernel::permute::permute_schedule(&p));
        match permuted {
            Ok(p) => Some((write(&format!("{tag}-permuted.cl"), &p.source)?, p.source)),
            Err(e) => {
                report
                    .notes
                    .push(format!("{file}: no permuted schedules: {e}"));
                None
            }
        }
    } else {
        None
    };
    let permuted_ok = match &permuted_path {
        Some((_, src)) => {
            report.compiles += 1;
            match build(src) {
                Ok(_) => true,
                Err(e) => {
                    report.notes.push(format!(
                        "{file}: the permuted program does not compile: {}",
                        e.to_string().lines().next().unwrap_or("")
                    ));
                    false
                }
            }
        }
        None => false,
    };
    report.phases.compile += compile_time.get();
    // Every test case must give its recorded outputs with the original, under its own
    // schedule and under each permuted one kept for it: one case unit each.
    let mut case_jobs = Vec::new();
    for (kernel, ids) in &plan.kernels {
        for &id in ids {
            case_jobs.push(cases::CaseJob {
                capture: capture.dir().to_path_buf(),
                program: plan.hash.clone(),
                launch: id,
                kernel: kernel.clone(),
                base: base_path.clone(),
                permuted: permuted_path
                    .as_ref()
                    .filter(|_| permuted_ok)
                    .map(|(p, _)| p.clone()),
                coverage: instrumented.is_some(),
                extra_options: budget.to_string(),
                schedules: opts.schedules,
                ulp: opts.ulp,
                inputs: opts.out_dir.join("inputs"),
                schema_check: false,
            });
        }
    }
    // The original through the schema, once per kernel and sizes (where a driver's lazy
    // compile for them happens), in units of their own: a driver that crashes or hangs on
    // the schema costs that unit, and the program's mutants are then compiled one by one.
    // Without a coverage build, the test cases themselves run through the schema.
    let mut schema_checks = Vec::new();
    if !opts.per_mutant_compile && instrumented.is_some() {
        let mut shapes = HashSet::new();
        for j in &case_jobs {
            let rec = capture.launch(j.launch)?;
            if shapes.insert((&j.kernel, rec.global_size.clone(), rec.local_size.clone())) {
                schema_checks.push(cases::CaseJob {
                    schema_check: true,
                    ..j.clone()
                });
            }
        }
    }
    let known = instrumented.map(|c| {
        c.map
            .slots
            .iter()
            .filter_map(|s| branch_outcome(s.outcome).map(|b| (s.start, s.end, b)))
            .collect()
    });
    Ok(Stage::Pending(Pending {
        tag,
        file,
        results,
        base,
        base_path,
        permuted_path: permuted_path.map(|(p, _)| p),
        known,
        cases: case_jobs,
        schema_checks,
        cov_note_at,
    }))
}

/// What a program's preparation left for after its test cases ran ([`cases`]).
struct Pending {
    tag: String,
    file: String,
    results: Vec<MutantResult>,
    base: km::Rendered,
    base_path: PathBuf,
    permuted_path: Option<PathBuf>,
    /// Branch outcomes the coverage instrumentation knows; `None` without coverage.
    known: Option<HashSet<BranchKey>>,
    cases: Vec<cases::CaseJob>,
    /// Runs of the original through the schema.
    schema_checks: Vec<cases::CaseJob>,
    /// Where in the report's notes the coverage build's failure goes.
    cov_note_at: usize,
}

/// A program's preparation: decided without running (`Done`), or waiting for its cases.
enum Stage {
    Done(Vec<(usize, Job)>, ProgramResult),
    Pending(Pending),
}

/// The rest of a program's preparation once its test cases ran: the test cases kept, the
/// coverage, the mutants decided without running, and the jobs of the others.
#[allow(clippy::too_many_arguments)]
fn finish_program(
    capture: &Capture,
    plan: &Plan,
    p: Pending,
    case_results: &std::collections::HashMap<String, cases::CaseResult>,
    opts: &MutateOptions,
    budget: &str,
    report: &mut CampaignReport,
) -> Result<(Vec<(usize, Job)>, ProgramResult), MutateError> {
    let Pending {
        tag,
        file,
        mut results,
        base,
        base_path,
        permuted_path,
        known,
        cases: case_jobs,
        schema_checks: _,
        cov_note_at: _,
    } = p;
    let write = |name: &str, text: &str| write_source(opts, name, text);
    let result = |results: Vec<MutantResult>| program_result(plan, &file, results);
    let permuted_path = permuted_path.map(|p| (p, ()));
    let mut tests: BTreeMap<String, Vec<TestRef>> = BTreeMap::new();
    let mut inputs: Vec<(String, Vec<u64>, Option<Vec<u64>>)> = Vec::new();
    let cov_failed = case_jobs.iter().any(|j| {
        case_results
            .get(&j.unit())
            .is_some_and(|r| r.coverage_build.is_some())
    });
    let mut hit: Option<HashSet<BranchKey>> = known
        .as_ref()
        .filter(|_| !cov_failed)
        .map(|_| HashSet::new());
    for j in &case_jobs {
        let (id, kernel) = (j.launch, &j.kernel);
        let Some(r) = case_results.get(&j.unit()) else {
            report.notes.push(format!(
                "launch {id} ({kernel}): not a test case: the original did not run on it"
            ));
            report.dropped += 1;
            continue;
        };
        report.slowest_first = report.slowest_first.max(Duration::from_micros(r.first_us));
        report.slowest_original = report
            .slowest_original
            .max(Duration::from_micros(r.warm_us));
        if let Some(note) = &r.dropped {
            report.notes.push(note.clone());
            report.dropped += 1;
            continue;
        }
        if let Some(note) = &r.unguarded {
            report.notes.push(note.clone());
        }
        if hit.is_some() {
            match (&r.hits, &r.coverage_error) {
                (_, Some(e)) => {
                    report.notes.push(format!(
                        "{file}: coverage of {kernel} not evaluated ({e}); every mutant in a launched kernel is run"
                    ));
                    hit = None;
                }
                (Some(keys), None) => {
                    if let Some(h) = hit.as_mut() {
                        h.extend(keys.iter().copied());
                    }
                }
                (None, None) => hit = None,
            }
        }
        report.notes.extend(r.seed_notes.iter().cloned());
        report.test_cases += 1;
        let rec = capture.launch(id)?;
        tests.entry(kernel.clone()).or_default().push(TestRef {
            launch: id,
            seeds: r.seeds.clone(),
            unguarded: r.unguarded.is_some(),
            derived: r.derived.clone(),
        });
        inputs.push((
            kernel.clone(),
            rec.global_size.clone(),
            rec.local_size.clone(),
        ));
    }
    let covered = match (known, hit) {
        (Some(known), Some(hit)) => Some(Covered { known, hit }),
        _ => None,
    };

    // Decide statically what can be, then make jobs.
    let mut jobs = Vec::new();
    for (mi, r) in results.iter_mut().enumerate() {
        let m = &r.mutant;
        if let Some(why) = &m.equivalent {
            r.status = Status::Equivalent;
            r.detail = format!("trivially equivalent: {why}");
            continue;
        }
        // Kernels whose launches run this mutant's function.
        let callers =
            cltrap_kernel::rewrite::callers_closure(&plan.parsed, &[m.function.clone()].into());
        let reach: Vec<&String> = plan
            .kernels
            .keys()
            .filter(|k| callers.contains(*k))
            .collect();
        let test_refs: Vec<TestRef> = reach
            .iter()
            .flat_map(|k| tests.get(*k).cloned().unwrap_or_default())
            .collect();
        if test_refs.is_empty() {
            r.untested = true;
            r.status = Status::NoCoverage;
            r.detail = "no test case launches a kernel that runs this code".into();
            continue;
        }
        if let Some(cov) = &covered {
            if let Some(g) = m.guards.iter().find(|g| !cov.satisfied(g)) {
                r.status = Status::NoCoverage;
                r.detail = format!(
                    "never reached: the condition at {} was never {} in any test case",
                    {
                        let (l, c) = plan.parsed.line_col(g.start);
                        format!("{l}:{c}")
                    },
                    g.outcome
                );
                continue;
            }
        }
        if let Some(change) = m.launch {
            if !inputs.iter().any(|(k, global, local)| {
                reach.contains(&k) && change.apply(global, local.as_deref()).is_some()
            }) {
                r.status = Status::Ignored;
                r.detail = "the launch change is not legal for any test case".into();
                continue;
            }
        }
        let kernel_names = if r.own_program {
            BTreeMap::new()
        } else {
            base.launch_names
                .get(&m.number)
                .cloned()
                .unwrap_or_default()
        };
        let (source, cache, number) = if r.own_program && m.launch.is_none() {
            let single = match km::single(&plan.parsed, m) {
                Ok(s) => s,
                Err(e) => {
                    r.status = Status::CompileError;
                    r.detail = format!("cannot be rendered: {e}");
                    continue;
                }
            };
            (
                write(&format!("{tag}-m{}.cl", m.number), &single.source)?,
                false,
                0,
            )
        } else if m.launch.is_some() {
            (base_path.clone(), true, 0)
        } else {
            (base_path.clone(), true, m.number)
        };
        let permuted = if cache {
            permuted_path.as_ref().map(|(p, _)| p.clone())
        } else if opts.schedules > 0 {
            // The mutant's own program, permuted too (one more compile for this mutant).
            let text = std::fs::read_to_string(&source).map_err(io(&source))?;
            match parse_program(&text, &plan.options)
                .and_then(|p| cltrap_kernel::permute::permute_schedule(&p))
            {
                Ok(pp) => Some(write(
                    &format!("{tag}-m{}-permuted.cl", m.number),
                    &pp.source,
                )?),
                Err(_) => None,
            }
        } else {
            None
        };
        let mut refs = test_refs;
        if permuted.is_none() {
            for t in &mut refs {
                t.seeds.clear();
            }
        }
        jobs.push((
            mi,
            Job {
                capture: capture.dir().to_path_buf(),
                program: plan.hash.clone(),
                source,
                permuted,
                extra_options: budget.to_string(),
                cache,
                mutant: number,
                kernel_names,
                reference: base_path.clone(),
                reference_permuted: permuted_path.as_ref().map(|(p, _)| p.clone()),
                barrier_loops: base.barrier_loops,
                launch: m.launch,
                tests: refs,
                repeats: opts.repeats.max(1),
                ulp: opts.ulp,
                permuted_builds: false,
            },
        ));
    }
    Ok((jobs, result(results)))
}

/// Branch outcomes seen when running the original over the suite.
struct Covered {
    known: HashSet<(u32, u32, bool)>,
    hit: HashSet<(u32, u32, bool)>,
}

impl Covered {
    fn satisfied(&self, g: &km::Guard) -> bool {
        let k = (g.start, g.end, g.outcome);
        !self.known.contains(&k) || self.hit.contains(&k)
    }
}

/// A branch outcome's key: the condition's byte range and the outcome (as in `Guard`).
type BranchKey = (u32, u32, bool);

/// The coverage instrumentation of the original (its build and runs are the case units':
/// [`cases`]).
struct CoverageRun;

fn branch_outcome(o: Outcome) -> Option<bool> {
    match o {
        Outcome::True => Some(true),
        Outcome::False => Some(false),
        _ => None,
    }
}

impl CoverageRun {
    /// Instruments the original; `None` (with a note) when the pass refuses it.
    fn instrument(
        plan: &Plan,
        report: &mut CampaignReport,
    ) -> Option<cltrap_kernel::coverage::Instrumented> {
        match instrument_coverage(&plan.parsed, Default::default()) {
            Ok(c) => Some(c),
            Err(e) => {
                report.notes.push(format!(
                    "program-{}.cl: no coverage ({e}); every mutant in a launched kernel is run",
                    short(&plan.hash)
                ));
                None
            }
        }
    }
}

/// Writes a program's source (original, schema or mutant) as `<out>/src/<name>`.
fn write_source(opts: &MutateOptions, name: &str, text: &str) -> Result<PathBuf, MutateError> {
    let p = opts.out_dir.join("src").join(name);
    crate::campaign::journal::replace_file(&p, text.as_bytes()).map_err(io(&p))?;
    Ok(p)
}

/// A program's part of the report, with the verdicts `results` of its mutants.
fn program_result(plan: &Plan, file: &str, results: Vec<MutantResult>) -> ProgramResult {
    ProgramResult {
        program: plan.hash.clone(),
        file: file.to_string(),
        source: plan.source.clone(),
        kernels: plan
            .kernels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        mutants: results,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn driver_paths_in_an_error_line_name_the_rendered_file() {
        assert_eq!(
            super::name_driver_file(
                "error: /root/.cache/pocl/kcache/tempfile_wLnfFK.cl:7:134: expected ')'",
                "ab12-schema.cl"
            ),
            "error: ab12-schema.cl:7:134: expected ')'"
        );
    }
}
