//! The preparation's device work as units: one unit per test case (`case-<launch id>`), which
//! re-creates the launch's derived inputs, runs the original on it once (twice on the first
//! run of a kernel and sizes in the worker, whose first run holds the driver's compile), checks
//! its outputs against the recording, reads its coverage counters and tries its permuted
//! schedules.
//!
//! These units run before the mutants, in the same runner ([`crate::campaign::runner::drive`])
//! and so in worker processes on every device of the campaign, with the original built once
//! per worker (the coverage build, or the captured program itself when there is none or it
//! fails in the worker; never the mutants' schema, which a driver may be unable to run: a
//! `schema-<launch>` unit checks that apart) and run in the worker's own process: a case that
//! crashes or hangs the driver costs that worker, and is "not a test case". Their results are journaled in the campaign folder's `cases/` folder,
//! so `--resume` and `cltrap merge` (which reads the shards' `cases/` journals) take them from
//! there instead of running the original again; a merge runs in this process only the cases
//! no shard journaled.

use super::BranchKey;
use crate::campaign::{journal, Campaign, CampaignArgs, Finished, Lost, Unit, UnitContext};
use crate::executor::{
    check_outputs, BuildOptions, BuiltProgram, Deriver, DeviceSelector, ExecError, LaunchInput,
    Session,
};
use crate::variant::{selector_extras, word_buffer, words};
use cltrap_capture::Capture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The folder of a campaign folder that holds the test cases' journal.
pub const CASES_DIR: &str = "cases";

/// How long a worker may stay silent on one case: a compile, one run of the original, or
/// re-creating the case's derived inputs (its producers run again, from the last stored
/// versions on).
pub const CASE_DEADLINE: Duration = Duration::from_secs(120);

/// One test case to check: what a worker needs to run the original on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseJob {
    /// Capture directory.
    pub capture: PathBuf,
    /// Program record hash.
    pub program: String,
    /// Launch id.
    pub launch: u64,
    /// Kernel launched (for the notes).
    pub kernel: String,
    /// The mutants' base program (the schema, or the original with the mutation parameters):
    /// what a schema check runs, with selector 0.
    pub base: PathBuf,
    /// The permuted base, for `--schedules`.
    pub permuted: Option<PathBuf>,
    /// Instrument the original for coverage (the parent's instrumentation worked).
    pub coverage: bool,
    /// Extra build options (the watchdog budget).
    pub extra_options: String,
    /// Permuted schedules to try.
    pub schedules: u32,
    /// Floating-point tolerance.
    pub ulp: u64,
    /// Where derived inputs are written for the mutants' workers.
    pub inputs: PathBuf,
    /// A check of the schema instead (`schema-<launch>`): run the original through the base
    /// program (selector 0) once, to find a schema the driver cannot run (it crashes or
    /// hangs where the original does not).
    #[serde(default)]
    pub schema_check: bool,
}

impl CaseJob {
    /// The job's unit id: `case-<launch>`, or `schema-<launch>` for a schema check.
    pub fn unit(&self) -> String {
        if self.schema_check {
            format!("schema-{}", self.launch)
        } else {
            unit_id(self.launch)
        }
    }
}

/// For tests only: when set (to anything), a worker running the original through the schema
/// dies of SIGABRT, as a driver that crashes on the schema would make it.
pub const SCHEMA_CRASH_KNOB: &str = "CLTRAP_TEST_SCHEMA_CRASH";

/// For tests only: when set (to anything), the coverage build fails in the worker, as on a
/// device whose compiler rejects the instrumented program the parent's accepted.
pub const COVERAGE_BUILD_FAIL_KNOB: &str = "CLTRAP_TEST_COVERAGE_BUILD_FAIL";

/// What the original did on one test case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// Why the launch is not a test case (the whole note), or `None` for a test case.
    pub dropped: Option<String>,
    /// The original itself wrote out of bounds: the note saying so.
    pub unguarded: Option<String>,
    /// Branch outcomes the run hit; `None` when the run gave no counters.
    pub hits: Option<Vec<BranchKey>>,
    /// Why the counters could not be evaluated.
    pub coverage_error: Option<String>,
    /// Why the coverage build failed in the worker (the run went through the captured program
    /// itself).
    pub coverage_build: Option<String>,
    /// Schedule seeds under which the original kept its outputs.
    pub seeds: Vec<u64>,
    /// Notes on the seeds dropped.
    pub seed_notes: Vec<String>,
    /// Derived input files by argument index.
    pub derived: BTreeMap<u32, PathBuf>,
    /// Time of the first run in microseconds (a timing).
    pub first_us: u64,
    /// Time of a warm run in microseconds (a timing).
    pub warm_us: u64,
}

impl CaseResult {
    fn dropped(note: String) -> CaseResult {
        CaseResult {
            dropped: Some(note),
            unguarded: None,
            hits: None,
            coverage_error: None,
            coverage_build: None,
            seeds: Vec::new(),
            seed_notes: Vec::new(),
            derived: BTreeMap::new(),
            first_us: 0,
            warm_us: 0,
        }
    }

    /// The result of a case whose worker died or hung.
    pub fn lost(job: &CaseJob, why: &Lost) -> CaseResult {
        let e = match why {
            Lost::Crashed(w) => format!("the original crashed the worker ({w})"),
            Lost::Failed(w) => format!("the original could not run: {w}"),
            Lost::TimedOut(d) => format!("the original ran past {} s", d.as_secs()),
        };
        CaseResult::dropped(format!(
            "launch {} ({}): not a test case: {e}",
            job.launch, job.kernel
        ))
    }
}

/// A program's builds in one worker.
struct Builds {
    /// The instrumented original and its build (or why there is none).
    coverage: Option<Result<(cltrap_kernel::coverage::Instrumented, BuiltProgram), String>>,
    /// The captured program itself, unchanged: what a case runs without a coverage build,
    /// so that a schema the driver cannot run costs no test case (the schema's own check
    /// finds it, and its mutants fall back to one compile each).
    original: Option<Result<BuiltProgram, String>>,
    /// The mutants' base (the schema), for a schema check only.
    base: Option<Result<BuiltProgram, String>>,
    permuted: Option<Result<BuiltProgram, String>>,
}

/// Runs case jobs in this process (a worker of the campaign, or a merge), keeping the
/// session, the capture, the builds and the derived inputs' producers between cases.
#[derive(Default)]
pub struct CaseEvaluator {
    session: Option<Session>,
    /// Captures opened, by directory; leaked so the derivers may borrow them for the
    /// process's life (a worker serves one campaign, over one capture).
    captures: HashMap<PathBuf, &'static Capture>,
    derivers: HashMap<PathBuf, Deriver<'static>>,
    builds: HashMap<(PathBuf, String, PathBuf, bool), Builds>,
    /// Program, kernel and sizes already run in this process.
    warm: HashSet<(String, bool, String, Vec<u64>, Option<Vec<u64>>)>,
}

impl CaseEvaluator {
    fn key(job: &CaseJob) -> (PathBuf, String, PathBuf, bool) {
        (
            job.capture.clone(),
            job.program.clone(),
            job.base.clone(),
            job.schema_check,
        )
    }

    /// Opens the device and the capture of `job` and builds its programs, where not done
    /// yet; the capture.
    fn ready(
        &mut self,
        job: &CaseJob,
        device: &DeviceSelector,
        alive: &dyn Fn(),
    ) -> Result<&'static Capture, String> {
        if self.session.is_none() {
            self.session = Some(Session::open(device).map_err(|e| e.to_string())?);
        }
        let capture: &'static Capture = match self.captures.get(&job.capture) {
            Some(c) => c,
            None => {
                let c = Capture::open_keeping_damaged(&job.capture).map_err(|e| e.to_string())?;
                let c: &'static Capture = Box::leak(Box::new(c));
                self.captures.insert(job.capture.clone(), c);
                c
            }
        };
        let session = self.session.as_ref().ok_or("no device")?;
        let key = Self::key(job);
        if !self.builds.contains_key(&key) {
            let b = build(capture, session, job, alive);
            self.builds.insert(key, b);
        }
        Ok(capture)
    }

    /// Gets ready for cases like `job` without running one (a spare worker): the device, the
    /// capture and the builds. A failure is left for the case that meets it.
    pub fn prepare(&mut self, job: &CaseJob, device: &DeviceSelector) {
        let _ = self.ready(job, device, &|| {});
    }

    /// Checks one test case on `device`; `alive` is called after each compile and before
    /// each run.
    pub fn run(&mut self, job: &CaseJob, device: &DeviceSelector, alive: &dyn Fn()) -> CaseResult {
        let not_case = |e: String| {
            CaseResult::dropped(format!(
                "launch {} ({}): not a test case: {e}",
                job.launch, job.kernel
            ))
        };
        let capture = match self.ready(job, device, alive) {
            Ok(c) => c,
            Err(e) => return not_case(e),
        };
        let Some(session) = self.session.as_ref() else {
            return not_case("no device".into());
        };
        let key = Self::key(job);
        let Some(builds) = self.builds.get(&key) else {
            return not_case("no build".into());
        };
        let rec = match capture.launch(job.launch) {
            Ok(r) => r,
            Err(e) => return not_case(e.to_string()),
        };
        let deriver = self
            .derivers
            .entry(job.capture.clone())
            .or_insert_with(|| Deriver::new(capture));
        let mut derived = BTreeMap::new();
        let made = deriver.derived(session, rec).and_then(|got| {
            let input = LaunchInput::from_record_with(capture, rec, &mut |arg, _| {
                got.get(&arg).map(|b| b.as_ref().clone())
            })?;
            for (arg, bytes) in &got {
                let path = job.inputs.join(format!("{}-{arg}.bin", job.launch));
                super::write_input(&path, bytes).map_err(|e| {
                    ExecError::NotReplayable(format!("cannot write {}: {e}", path.display()))
                })?;
                derived.insert(*arg, path);
            }
            Ok(input)
        });
        let (input, expected) =
            match made.and_then(|i| LaunchInput::expected_outputs(capture, rec).map(|e| (i, e))) {
                Ok(x) => x,
                Err(e) => return not_case(e.to_string()),
            };
        let infos: Vec<_> = rec.args.iter().map(|a| a.info().clone()).collect();
        let ok = |out: &crate::executor::RunOutput| {
            check_outputs(&input, &infos, &expected, out, job.ulp)
                .first()
                .map(|m| m.to_string())
        };
        if job.schema_check {
            if std::env::var_os(SCHEMA_CRASH_KNOB).is_some() {
                std::process::abort();
            }
            let mut r = CaseResult::dropped(String::new());
            r.dropped = match &builds.base {
                Some(Ok(b)) => {
                    alive();
                    session
                        .run_guarded(b, &input, &selector_extras(0, u32::MAX))
                        .err()
                        .map(|e| e.to_string())
                }
                Some(Err(e)) => Some(e.clone()),
                None => Some("the schema was not built".into()),
            };
            return r;
        }
        let cov = builds.coverage.as_ref().and_then(|c| c.as_ref().ok());
        // Without a coverage build the case runs the captured program itself: a mutant's
        // base (the schema) that the driver cannot run must not cost the test case.
        let original = match (&builds.original, cov) {
            (_, Some(_)) => None,
            (Some(Ok(b)), None) => Some(b),
            (Some(Err(e)), None) => {
                return not_case(format!("the original does not build here: {e}"))
            }
            (None, None) => return not_case("the original was not built".into()),
        };

        let run_original = || match cov {
            Some((c, built)) => {
                let init = c
                    .map
                    .initial_buffer(&input.global_size, input.local_size.as_deref());
                session
                    .run_guarded(built, &input, &[word_buffer(&init)])
                    .map(|(out, b)| {
                        let counters = out.outputs.last().cloned().flatten().map(|b| words(&b));
                        (out, counters, b)
                    })
                    .map_err(|e| e.to_string())
            }
            None => match original {
                Some(built) => session
                    .run_guarded(built, &input, &[])
                    .map(|(o, b)| (o, None, b))
                    .map_err(|e| e.to_string()),
                None => Err("the original does not build".to_string()),
            },
        };
        // The first run of a kernel and sizes in this process may include the driver's
        // compile for its work-group size: then it runs twice, and the second is the time a
        // run takes.
        let warm_key = (
            job.program.clone(),
            cov.is_some(),
            input.kernel.clone(),
            input.global_size.clone(),
            input.local_size.clone(),
        );
        alive();
        let t0 = Instant::now();
        let mut ran = run_original();
        let first = t0.elapsed();
        let mut warm = first;
        if !self.warm.contains(&warm_key) {
            alive();
            let t0 = Instant::now();
            ran = run_original();
            warm = t0.elapsed();
            self.warm.insert(warm_key);
        }
        let mut r = CaseResult::dropped(String::new());
        r.dropped = None;
        r.first_us = first.as_micros() as u64;
        r.warm_us = warm.as_micros() as u64;
        r.coverage_build = builds
            .coverage
            .as_ref()
            .and_then(|c| c.as_ref().err().cloned());
        let (id, kernel) = (job.launch, &job.kernel);
        match ran {
            Ok((out, counters, breaches)) => {
                if let Some(m) = ok(&out) {
                    r.dropped = Some(format!(
                        "launch {id} ({kernel}): the original does not reproduce the recording ({m}); not a test case"
                    ));
                    return r;
                }
                if let Some(b) = breaches.first() {
                    let info = infos.get(b.arg_index).cloned().unwrap_or_default();
                    r.unguarded = Some(format!(
                        "launch {id} ({kernel}): the original itself {}; mutants' writes out of bounds are not looked for on this launch",
                        b.describe(&info.name, &info.type_name)
                    ));
                }
                if let (Some(words), Some((c, _))) = (counters, cov) {
                    match hits(c, kernel, &words, &input) {
                        Ok(keys) => r.hits = Some(keys),
                        Err(e) => r.coverage_error = Some(e),
                    }
                }
            }
            Err(e) => {
                r.dropped = Some(format!("launch {id} ({kernel}): not a test case: {e}"));
                return r;
            }
        }
        if let Some(Ok(pb)) = &builds.permuted {
            let local = input
                .local_size
                .clone()
                .unwrap_or_else(|| vec![1; input.global_size.len()]);
            for s in 1..=u64::from(job.schedules) {
                let mut extras = selector_extras(0, u32::MAX);
                extras.push(word_buffer(&cltrap_kernel::permute::random_permutation(
                    &input.global_size,
                    &local,
                    s,
                )));
                alive();
                match session.run(pb, &input, &extras) {
                    Ok(out) if ok(&out).is_none() => r.seeds.push(s),
                    _ => r.seed_notes.push(format!(
                        "launch {id} ({kernel}): the original itself changes under schedule seed {s}; that schedule is not used"
                    )),
                }
            }
        }
        r.derived = derived;
        r
    }
}

/// Builds what a program's cases run: the coverage build (when asked for), the base program
/// and its permuted twin. Errors are their first line.
fn build(capture: &Capture, session: &Session, job: &CaseJob, alive: &dyn Fn()) -> Builds {
    let first_line = |e: String| e.lines().next().unwrap_or("").to_string();
    let record = match capture.program(&job.program) {
        Ok(r) => r,
        Err(e) => {
            let e = e.to_string();
            return Builds {
                coverage: None,
                original: Some(Err(e.clone())),
                base: Some(Err(e)),
                permuted: None,
            };
        }
    };
    let coverage = (job.coverage && !job.schema_check).then(|| {
        if std::env::var_os(COVERAGE_BUILD_FAIL_KNOB).is_some() {
            return Err(format!("{COVERAGE_BUILD_FAIL_KNOB} is set"));
        }
        let h = crate::headers::Headers::from_capture(capture, &record.includes)
            .map_err(|e| first_line(e.to_string()))?;
        let source = crate::variant::program_source(capture, &record)
            .map_err(|e| first_line(e.to_string()))?;
        let options = crate::variant::parse_options(&h, &record);
        let parsed = cltrap_kernel::parse_program(&h.parse_source(&source), &options)
            .map_err(|e| first_line(e.to_string()))?;
        let c = cltrap_kernel::coverage::instrument_coverage(&parsed, Default::default())
            .map_err(|e| first_line(e.to_string()))?;
        let built = super::quiet::stderr_to(&job.inputs.with_file_name("build.log"), || {
            session.build_source(&h.source(&c.source), &options)
        })
        .map_err(|e| first_line(e.to_string()))?;
        alive();
        Ok((c, built))
    });
    // The captured program built with `options`, the driver's output into build.log.
    let build_with = |options: &BuildOptions| -> Result<BuiltProgram, String> {
        let b = super::quiet::stderr_to(&job.inputs.with_file_name("build.log"), || {
            session.build(capture, &record, options)
        })
        .map_err(|e| first_line(e.to_string()));
        alive();
        b
    };
    let build_file = |path: &Path| -> Result<BuiltProgram, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        build_with(&BuildOptions {
            source: Some(text),
            extra_options: job.extra_options.clone(),
        })
    };
    let without_coverage = !coverage.as_ref().is_some_and(|c| c.is_ok());
    let original =
        (without_coverage && !job.schema_check).then(|| build_with(&BuildOptions::default()));
    let base = job.schema_check.then(|| build_file(&job.base));
    let permuted = (job.schedules > 0 && !job.schema_check)
        .then(|| job.permuted.as_deref().map(build_file))
        .flatten();
    Builds {
        coverage,
        original,
        base,
        permuted,
    }
}

/// The branch outcomes one run hit.
fn hits(
    c: &cltrap_kernel::coverage::Instrumented,
    kernel: &str,
    counters: &[u32],
    input: &LaunchInput,
) -> Result<Vec<BranchKey>, String> {
    let res = c
        .map
        .evaluate(kernel, counters, &input.global_size)
        .map_err(|e| e.to_string())?;
    Ok(res
        .slots
        .iter()
        .filter(|s| s.hit)
        .filter_map(|s| c.map.slots.iter().find(|x| x.index == s.index))
        .filter_map(|slot| super::branch_outcome(slot.outcome).map(|b| (slot.start, slot.end, b)))
        .collect())
}

/// The case units' campaign in the parent: what the runner hands out, what a lost case
/// counts as, and the results it collects (its report writes nothing).
struct CaseCampaign {
    units: Vec<Unit>,
    jobs: HashMap<String, CaseJob>,
    results: BTreeMap<String, CaseResult>,
    home: PathBuf,
}

impl Campaign for CaseCampaign {
    fn command(&self) -> &'static str {
        "mutate"
    }
    fn phase(&self) -> Option<&'static str> {
        Some("test cases")
    }
    /// Test cases are launches in order, whose derived inputs the worker's deriver re-creates.
    fn contiguous(&self) -> bool {
        true
    }
    fn units(&mut self) -> Result<Vec<Unit>, String> {
        Ok(self.units.clone())
    }
    fn deadline(&self) -> Duration {
        CASE_DEADLINE
    }
    fn run_unit(&mut self, unit: &Unit, _cx: &UnitContext) -> Result<Value, String> {
        Err(format!(
            "{} runs in a worker of the mutate campaign",
            unit.id
        ))
    }
    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        match self.jobs.get(&unit.id) {
            Some(j) => serde_json::to_value(CaseResult::lost(j, why)).unwrap_or(Value::Null),
            None => Value::Null,
        }
    }
    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        _complete: bool,
        _out: &mut dyn Write,
    ) -> Result<u8, String> {
        for (u, f) in results {
            if let Ok(r) = serde_json::from_value::<CaseResult>(f.result.clone()) {
                self.results.insert(u.id.clone(), r);
            }
        }
        Ok(0)
    }
    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        Vec::new()
    }
    fn home(&self) -> PathBuf {
        self.home.clone()
    }
}

/// A case's unit id.
pub fn unit_id(launch: u64) -> String {
    format!("case-{launch}")
}

/// Where the cases run and what earlier runs journaled.
pub struct CaseRun<'a> {
    /// The mutate campaign's flags (devices, workers, resume).
    pub flags: &'a CampaignArgs,
    /// The command's own device selection.
    pub device: &'a DeviceSelector,
    /// The campaign folder of this run (`None`: run every case in this process).
    pub own: Option<&'a Path>,
    /// Folders of earlier runs whose `cases/` journals may hold results.
    pub earlier: &'a [PathBuf],
}

/// Results of `jobs` by launch id: from the earlier runs' journals where they hold one, the
/// rest in the runner's workers (journaled in `own/cases`), or in this process in a merge.
/// `Err` when the run was interrupted or the runner failed.
pub fn run_cases(jobs: &[CaseJob], at: &CaseRun) -> Result<HashMap<String, CaseResult>, String> {
    let mut known: BTreeMap<String, CaseResult> = BTreeMap::new();
    for dir in at.earlier {
        match journal::read(&dir.join(CASES_DIR)) {
            Ok(j) => {
                if j.refused > 0 {
                    eprintln!(
                        "cltrap: {} test-case result line(s) in {} carry no seal of your journal key; those cases are run again",
                        j.refused,
                        dir.display()
                    );
                }
                for (id, f) in j.finished {
                    if let Ok(r) = serde_json::from_value::<CaseResult>(f.result) {
                        known.entry(id).or_insert(r);
                    }
                }
            }
            // No earlier run of the cases there: they run now.
            Err(journal::JournalError::Missing(_)) => {}
            // Refused or damaged: said, and the cases it would have held run again.
            Err(e) => eprintln!(
                "cltrap: {}; the test cases it holds are run again",
                crate::list::escape_controls(&e.to_string())
            ),
        }
    }
    let merging = at.own.is_some_and(|o| at.earlier.iter().any(|e| e != o));
    let missing: Vec<&CaseJob> = jobs
        .iter()
        .filter(|j| !known.contains_key(&j.unit()))
        .collect();
    if !missing.is_empty() {
        match at.own {
            Some(own) if !merging => {
                let dir = own.join(CASES_DIR);
                if cltrap_capture::safe_open::is_link(&dir) {
                    return Err(format!(
                        "{} is a symbolic link: a campaign folder must be its own",
                        dir.display()
                    ));
                }
                let mut c = CaseCampaign {
                    units: Vec::with_capacity(jobs.len()),
                    jobs: HashMap::new(),
                    results: BTreeMap::new(),
                    home: own.to_path_buf(),
                };
                // Every case, so the journal stays whole; those it holds are skipped.
                for j in jobs {
                    let id = j.unit();
                    let payload = serde_json::to_value(j).map_err(|e| e.to_string())?;
                    c.units.push(Unit {
                        id: id.clone(),
                        payload,
                    });
                    c.jobs.insert(id, j.clone());
                }
                let flags = CampaignArgs {
                    devices: at.flags.devices.clone(),
                    workers_per_device: at.flags.workers_per_device,
                    shard: None,
                    resume: at.flags.resume,
                    campaign_dir: Some(dir),
                    unit_worker: false,
                };
                let code = crate::campaign::runner::drive(
                    &mut c,
                    &flags,
                    at.device,
                    &mut std::io::sink(),
                )?;
                if code != 0 {
                    return Err(
                        "interrupted while running the original on the test cases; the same command with --resume goes on"
                            .into(),
                    );
                }
                known.extend(c.results);
            }
            _ => {
                let mut ev = CaseEvaluator::default();
                for j in missing {
                    let r = ev.run(j, at.device, &|| {});
                    known.insert(j.unit(), r);
                }
            }
        }
    }
    Ok(jobs
        .iter()
        .filter_map(|j| known.remove(&j.unit()).map(|r| (j.unit(), r)))
        .collect())
}
