//! Evaluating one mutant's [`Job`] in this process: a worker of the `cltrap mutate`
//! campaign ([`super::campaign`]) runs jobs one after the other on its pinned device, keeping
//! the device session, built programs (a schema is compiled once per worker) and loaded test
//! cases between jobs. The campaign runner (`crate::campaign::runner`) isolates the process:
//! a mutant that crashes the driver or hangs is that unit's RUNTIME-ERROR or TIMEOUT.
//!
//! The worker calls `alive(warm)` after each compile and before each kernel run (`warm`: a
//! run of the mutant whose program, kernel and sizes already ran in this process, so it holds
//! no driver compile), so a deadline can be one compile or one run, never the whole job.
//!
//! A job whose kernel run faulted (the device returned an error, the run wrote into a guard
//! zone, or it changed this process's copy of the test cases) leaves the worker *spent*
//! ([`Evaluator::spent`]): the campaign retires the process after that job, so the next
//! mutant runs in a fresh one and its verdict cannot inherit the fault (a sticky CUDA
//! context error, a corrupted heap) — which mutant would have come next in this process
//! depends on the number of workers.

use super::{error_line, Status};
use crate::executor::{
    check_outputs, BuildOptions, BuiltProgram, DeviceSelector, Expected, FromFiles, InputArg,
    LaunchInput, Session,
};
use crate::variant::{selector_extras, word_buffer, words};
use cltrap_capture::{ArgInfo, Capture};
use cltrap_kernel::mutate::LaunchChange;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// One test case of a job: a launch of the capture, and the schedule seeds under which the
/// original was checked to give the recorded outputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestRef {
    /// Launch id in the capture.
    pub launch: u64,
    /// Permuted-schedule seeds to run besides the launch's own schedule.
    pub seeds: Vec<u64>,
    /// The original itself writes out of bounds on this test case, so a mutant's writes into
    /// the guard zones (see [`crate::executor::GuardBreach`]) say nothing about the mutant.
    #[serde(default)]
    pub unguarded: bool,
    /// Files holding the launch's derived inputs by argument index (contents the capture
    /// keeps only as digests, re-created by the parent: [`crate::executor::Deriver`]).
    #[serde(default)]
    pub derived: BTreeMap<u32, PathBuf>,
}

/// One mutant to evaluate against its tests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// Capture directory (the worker reads launches and programs itself).
    pub capture: PathBuf,
    /// Program record hash in the capture (its build options are used).
    pub program: String,
    /// File holding the source to build (a schema, one mutant, or the original).
    pub source: PathBuf,
    /// The same source with permuted work-group schedules (for `--schedules`).
    pub permuted: Option<PathBuf>,
    /// Extra build options (the watchdog budget).
    pub extra_options: String,
    /// Keep the built program for later jobs (schemata); one-mutant programs are dropped.
    pub cache: bool,
    /// Selector value (0 = original).
    pub mutant: u32,
    /// Kernels launched under another name for this mutant: the schema's renamed copies of
    /// barrier mutants (original name → copy). Others run under their own name.
    #[serde(default)]
    pub kernel_names: BTreeMap<String, String>,
    /// The program whose selector 0 is the original (the schema, or the original with the
    /// extra parameters), and its permuted twin: the original's barrier-loop need per test
    /// case is measured with it, when `barrier_loops` says the budget matters.
    pub reference: PathBuf,
    /// The permuted reference, for the need under permuted schedules.
    pub reference_permuted: Option<PathBuf>,
    /// Whether the program has loops with a barrier.
    pub barrier_loops: bool,
    /// Launch-geometry change, if any.
    pub launch: Option<LaunchChange>,
    /// Test cases.
    pub tests: Vec<TestRef>,
    /// Runs per test case and schedule (UNDECIDED when only some of them kill).
    pub repeats: u32,
    /// Floating-point tolerance.
    pub ulp: u64,
    /// Build the permuted programs even when no test case of `tests` has schedule seeds: a
    /// batch of a job whose other test cases have some ([`super::batches::split`]), so that a
    /// permuted program that does not compile decides every batch as it decides the walk.
    #[serde(default)]
    pub permuted_builds: bool,
}

/// What a job found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    /// The verdict.
    pub status: Status,
    /// One sentence: which launch killed it and how, or the error.
    pub detail: String,
    /// Kernel runs made.
    pub runs: u32,
}

struct Loaded {
    input: LaunchInput,
    expected: Vec<Option<Expected>>,
    infos: Vec<ArgInfo>,
    /// [`fingerprint`] of `input` and `expected` when loaded.
    print: String,
}

/// A digest of a test case's inputs and expected outputs as this worker holds them. On a CPU
/// device (PoCL) kernels run inside the worker process, so a mutant that writes out of bounds
/// can overwrite the worker's own copy of the suite; every later verdict in that process would
/// then compare against damaged data (false kills). Checked after every job on a CPU device.
fn fingerprint(input: &LaunchInput, expected: &[Option<Expected>]) -> String {
    let mut h = blake3::Hasher::new();
    for a in &input.args {
        match a {
            InputArg::Scalar(b)
            | InputArg::Buffer { bytes: b, .. }
            | InputArg::Image { bytes: b, .. } => {
                h.update(&(b.len() as u64).to_le_bytes());
                h.update(b);
            }
            _ => {
                h.update(&[0xff]);
            }
        }
    }
    for e in expected {
        match e {
            Some(Expected::Bytes(b)) => {
                h.update(&(b.len() as u64).to_le_bytes());
                h.update(b);
            }
            Some(Expected::Digest(_, d)) => {
                h.update(d.as_bytes());
            }
            _ => {
                h.update(&[0xfe]);
            }
        }
    }
    h.finalize().to_hex().to_string()
}

/// A program, kernel, global and local size that already ran in this worker.
type WarmKey = (PathBuf, String, Vec<u64>, Option<Vec<u64>>);

struct WorkerState {
    session: Option<Session>,
    captures: HashMap<PathBuf, Capture>,
    programs: HashMap<(PathBuf, String), BuiltProgram>,
    launches: HashMap<(PathBuf, u64), Loaded>,
    warm: std::collections::HashSet<WarmKey>,
    /// The original's barrier-loop need per program, launch and schedule seed.
    needs: HashMap<(PathBuf, u64, Option<u64>), u32>,
    /// A kernel run of the current job returned an error from the device or wrote into a
    /// guard zone of a guarded test case (reset at each job).
    faulted: bool,
}

fn result(status: Status, detail: impl Into<String>, runs: u32) -> JobResult {
    JobResult {
        status,
        detail: detail.into(),
        runs,
    }
}

impl WorkerState {
    fn empty() -> WorkerState {
        WorkerState {
            session: None,
            captures: HashMap::new(),
            programs: HashMap::new(),
            launches: HashMap::new(),
            warm: Default::default(),
            needs: HashMap::new(),
            faulted: false,
        }
    }

    /// Whether any test case this worker holds no longer matches its [`fingerprint`]. Only a
    /// CPU device's kernels run in this process and can write into its memory: on any other
    /// device the check (a digest of every test case held, after every job) is skipped.
    fn damaged(&self) -> bool {
        if self
            .session
            .as_ref()
            .is_some_and(|s| !s.runs_in_this_process())
        {
            return false;
        }
        self.launches
            .values()
            .any(|l| fingerprint(&l.input, &l.expected) != l.print)
    }

    fn build(&mut self, job: &Job, path: &PathBuf, alive: &dyn Fn(bool)) -> Result<(), JobResult> {
        let key = (path.clone(), job.extra_options.clone());
        if self.programs.contains_key(&key) {
            return Ok(());
        }
        let fail = |s: Status, m: String| result(s, m, 0);
        let session = self
            .session
            .as_ref()
            .ok_or_else(|| fail(Status::RuntimeError, "no device".into()))?;
        let capture = self
            .captures
            .get(&job.capture)
            .ok_or_else(|| fail(Status::RuntimeError, "capture not open".into()))?;
        let record = capture
            .program(&job.program)
            .map_err(|e| fail(Status::RuntimeError, e.to_string()))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(Status::RuntimeError, format!("{}: {e}", path.display())))?;
        let built = session
            .build(
                capture,
                &record,
                &BuildOptions {
                    source: Some(text),
                    extra_options: job.extra_options.clone(),
                },
            )
            .map_err(|e| {
                let text = e.to_string();
                let line =
                    error_line(&text).unwrap_or_else(|| text.lines().next().unwrap_or("").trim());
                fail(Status::CompileError, line.to_string())
            })?;
        alive(false);
        self.programs.insert(key, built);
        Ok(())
    }

    fn load(&mut self, job: &Job, test: &TestRef) -> Result<(), JobResult> {
        let id = test.launch;
        let key = (job.capture.clone(), id);
        if self.launches.contains_key(&key) {
            return Ok(());
        }
        let fail = |m: String| result(Status::RuntimeError, m, 0);
        let capture = self
            .captures
            .get(&job.capture)
            .ok_or_else(|| fail("capture not open".into()))?;
        let rec = capture.launch(id).map_err(|e| fail(e.to_string()))?;
        let input = LaunchInput::from_record_with_files(capture, rec, &test.derived).map_err(
            |e| match e {
                FromFiles::Unread(e) => fail(format!("derived input of launch {id}: {e}")),
                FromFiles::Exec(e) => fail(e.to_string()),
            },
        )?;
        let expected =
            LaunchInput::expected_outputs(capture, rec).map_err(|e| fail(e.to_string()))?;
        let infos = rec.args.iter().map(|a| a.info().clone()).collect();
        let print = fingerprint(&input, &expected);
        self.launches.insert(
            key,
            Loaded {
                input,
                expected,
                infos,
                print,
            },
        );
        Ok(())
    }

    /// Opens the device and the capture of `job` where they are not open yet.
    fn open(&mut self, job: &Job, device: &DeviceSelector) -> Result<(), JobResult> {
        if self.session.is_none() {
            match Session::open(device) {
                Ok(s) => self.session = Some(s),
                Err(e) => return Err(result(Status::RuntimeError, e.to_string(), 0)),
            }
        }
        if !self.captures.contains_key(&job.capture) {
            // The parent named the damaged launch lines; a job is one intact launch.
            match Capture::open_keeping_damaged(&job.capture) {
                Ok(c) => {
                    self.captures.insert(job.capture.clone(), c);
                }
                Err(e) => return Err(result(Status::RuntimeError, e.to_string(), 0)),
            }
        }
        Ok(())
    }

    fn job(&mut self, job: &Job, device: &DeviceSelector, alive: &dyn Fn(bool)) -> JobResult {
        if let Err(r) = self.open(job, device) {
            return r;
        }
        let out = self.evaluate(job, alive);
        if !job.cache {
            self.programs
                .retain(|(p, _), _| *p != job.source && Some(p) != job.permuted.as_ref());
        }
        out
    }

    fn evaluate(&mut self, job: &Job, alive: &dyn Fn(bool)) -> JobResult {
        if let Err(r) = self.build(job, &job.source, alive) {
            return r;
        }
        let seeded = job.permuted_builds || job.tests.iter().any(|t| !t.seeds.is_empty());
        if let Some(pp) = &job.permuted {
            if seeded {
                if let Err(r) = self.build(job, pp, alive) {
                    return r;
                }
            }
        }
        if job.barrier_loops {
            if let Err(r) = self.build(job, &job.reference, alive) {
                return r;
            }
            if let (Some(rp), true) = (&job.reference_permuted, seeded) {
                if let Err(r) = self.build(job, rp, alive) {
                    return r;
                }
            }
        }
        let mut runs = 0u32;
        let mut undecided: Option<String> = None;
        let mut any_test = false;
        for t in &job.tests {
            // Test cases are loaded as they come: most mutants die on the first, and a worker
            // that loaded every test case before its first run paid for all of them (seconds
            // on a large capture) at its start and after every restart.
            if let Err(mut r) = self.load(job, t) {
                r.runs = runs;
                return r;
            }
            let Some(session) = self.session.as_ref() else {
                return result(Status::RuntimeError, "no device", runs);
            };
            let Some(loaded) = self.launches.get(&(job.capture.clone(), t.launch)) else {
                continue;
            };
            let mut input = loaded.input.clone();
            let copy = job.kernel_names.get(&input.kernel).cloned();
            if let Some(name) = &copy {
                input.kernel = name.clone();
            }
            if let Some(change) = job.launch {
                let Some((g, l)) = change.apply(&input.global_size, input.local_size.as_deref())
                else {
                    continue;
                };
                input.global_size = g;
                input.local_size = Some(l);
            }
            any_test = true;
            // The launch's own schedule, then each permuted one.
            let mut schedules: Vec<Option<u64>> = vec![None];
            schedules.extend(t.seeds.iter().map(|s| Some(*s)));
            for seed in schedules {
                let program_path = if seed.is_some() {
                    match &job.permuted {
                        Some(p) => p,
                        None => continue,
                    }
                } else {
                    &job.source
                };
                let Some(program) = self
                    .programs
                    .get(&(program_path.clone(), job.extra_options.clone()))
                else {
                    continue;
                };
                let perm = |input: &LaunchInput, s: u64| {
                    let local = input
                        .local_size
                        .clone()
                        .unwrap_or_else(|| vec![1; input.global_size.len()]);
                    word_buffer(&cltrap_kernel::permute::random_permutation(
                        &input.global_size,
                        &local,
                        s,
                    ))
                };
                // The barrier-loop budget of this test case: from what the original needs on
                // it (one run of the original per program, test case and schedule, which is
                // also the warm-up of its kernel and sizes). Measured here, not in the parent,
                // so a driver that crashes on the schema takes down a worker, not the campaign.
                let reference_path = if seed.is_some() {
                    job.reference_permuted.as_ref()
                } else {
                    Some(&job.reference)
                };
                let reference = reference_path.and_then(|p| {
                    self.programs
                        .get(&(p.clone(), job.extra_options.clone()))
                        .map(|b| (p, b))
                });
                let need_key = reference_path.map(|p| (p.clone(), t.launch, seed));
                let need = match (&need_key, reference) {
                    (Some(key), _) if self.needs.contains_key(key) => self.needs[key],
                    (Some(key), Some((reference_path, reference))) if job.barrier_loops => {
                        let original = &loaded.input;
                        let warm = (
                            reference_path.clone(),
                            original.kernel.clone(),
                            original.global_size.clone(),
                            original.local_size.clone(),
                        );
                        alive(false);
                        let mut extras = selector_extras(0, u32::MAX);
                        extras.extend(seed.map(|s| perm(original, s)));
                        let ran = session.run_guarded(reference, original, &extras);
                        self.faulted |= ran.is_err();
                        let need = ran
                            .ok()
                            .and_then(|(out, _)| out.outputs.get(original.args.len() + 1).cloned())
                            .flatten()
                            .and_then(|b| words(&b).get(2).copied())
                            .unwrap_or(0);
                        self.warm.insert(warm);
                        self.needs.insert(key.clone(), need);
                        need
                    }
                    _ => 0,
                };
                let budget = cltrap_kernel::mutate::barrier_loop_budget(need);
                let mut extras = selector_extras(job.mutant, budget);
                if let Some(s) = seed {
                    extras.push(perm(&input, s));
                }
                let under = seed.map_or(String::new(), |s| format!(" under schedule seed {s}"));
                let mut kills = 0u32;
                let mut first = String::new();
                // A warm-up run of the original for each new program, kernel and sizes: the
                // driver's lazy compile happens there, under the compile deadline, so the
                // mutant's own runs get the run deadline. A kernel copy is the mutant itself:
                // its first run is the cold one, and it counts.
                let warm = (
                    program_path.clone(),
                    input.kernel.clone(),
                    input.global_size.clone(),
                    input.local_size.clone(),
                );
                let mut cold_copy = copy.is_some() && !self.warm.contains(&warm);
                if cold_copy {
                    self.warm.insert(warm);
                } else if !self.warm.contains(&warm) {
                    alive(false);
                    let mut warm_extras = selector_extras(0, budget);
                    warm_extras.extend(extras.iter().skip(2).cloned());
                    let ran = session.run_guarded(program, &input, &warm_extras);
                    self.faulted |= ran.is_err();
                    self.warm.insert(warm);
                }
                for _ in 0..job.repeats.max(1) {
                    alive(!cold_copy);
                    cold_copy = false;
                    runs += 1;
                    let (out, breaches) = match session.run_guarded(program, &input, &extras) {
                        Ok(o) => o,
                        Err(e) => {
                            self.faulted = true;
                            return result(
                                Status::RuntimeError,
                                format!("launch {}{under}: {e}", t.launch),
                                runs,
                            );
                        }
                    };
                    // Whatever the verdict (a watchdog's TIMEOUT is decided first): a write
                    // into a guard zone may have gone further, into memory nothing guards.
                    self.faulted |= !t.unguarded && !breaches.is_empty();
                    let wd_index = input.args.len() + 1;
                    let fired = out
                        .outputs
                        .get(wd_index)
                        .and_then(|o| o.as_ref())
                        .map_or(0, |b| words(b).first().copied().unwrap_or(0));
                    if fired != 0 {
                        let what = if fired == 2 {
                            format!(
                                "a loop with a barrier ran past its budget of {budget} iterations ({} times what the original needed, at least {})",
                                cltrap_kernel::mutate::BARRIER_BUDGET_FACTOR,
                                cltrap_kernel::mutate::BARRIER_BUDGET_MIN
                            )
                        } else {
                            "a loop ran out of its iteration budget".to_string()
                        };
                        return result(
                            Status::Timeout,
                            format!("launch {}{under}: {what} (watchdog)", t.launch),
                            runs,
                        );
                    }
                    if let (false, Some(b)) = (t.unguarded, breaches.first()) {
                        let info = loaded.infos.get(b.arg_index).cloned().unwrap_or_default();
                        return result(
                            Status::RuntimeError,
                            format!(
                                "launch {}{under}: {} (caught in its guard zone)",
                                t.launch,
                                b.describe(&info.name, &info.type_name)
                            ),
                            runs,
                        );
                    }
                    let m = check_outputs(&input, &loaded.infos, &loaded.expected, &out, job.ulp);
                    if let Some(first_m) = m.first() {
                        kills += 1;
                        if first.is_empty() {
                            first = format!("launch {}{under}: {first_m}", t.launch);
                        }
                    }
                }
                if kills == job.repeats.max(1) {
                    return result(Status::Killed, first, runs);
                }
                if kills > 0 && undecided.is_none() {
                    undecided = Some(format!(
                        "killed in {kills} of {} repeats ({first})",
                        job.repeats.max(1)
                    ));
                }
            }
        }
        if !any_test {
            return result(
                Status::Ignored,
                "the change is not legal for any launch of the suite",
                runs,
            );
        }
        match undecided {
            Some(d) => result(Status::Undecided, d, runs),
            None => result(Status::Survived, "no test case noticed it", runs),
        }
    }
}

/// Evaluates jobs in this process, keeping the device session, built programs and loaded
/// test cases from one job to the next.
pub struct Evaluator {
    state: WorkerState,
    /// The last job faulted ([`Evaluator::spent`]).
    spent: bool,
}

impl Default for Evaluator {
    fn default() -> Self {
        Evaluator::new()
    }
}

impl Evaluator {
    /// An evaluator with nothing loaded yet.
    pub fn new() -> Evaluator {
        Evaluator {
            state: WorkerState::empty(),
            spent: false,
        }
    }

    /// Whether the last job left this process untrustworthy, so it must evaluate no other
    /// job: one of its kernel runs returned an error from the device (on CUDA an illegal
    /// address is a sticky error of the process's whole context, and every later run in it
    /// fails too), wrote into a guard zone of a guarded test case (the write may have gone
    /// past the zone, into the driver's or this process's memory), or changed this process's
    /// copy of the test cases. The mutant's own such runs make it RUNTIME-ERROR, except one
    /// that also fired the in-kernel watchdog (TIMEOUT, decided first); a failed warm-up or
    /// reference run of the original decides no verdict. Either way the process is spent.
    ///
    /// Not spent: COMPILE-ERROR (nothing ran), KILLED and SURVIVED (the runs completed within
    /// their buffers), and a TIMEOUT by the in-kernel watchdog alone: it ends the kernel's
    /// loops from inside, so the kernel returns normally and leaves nothing behind. A kernel
    /// that outlives the run deadline is different: the worker's watchdog ends the whole
    /// process, so nothing is left to retire. Nor a RUNTIME-ERROR that ran nothing (a test
    /// case that could not be loaded, a device that could not be opened): retiring would only
    /// start a fresh worker that meets the same error.
    pub fn spent(&self) -> bool {
        self.spent
    }

    /// Gets ready for jobs like `job` without running anything: opens the device and the
    /// capture and, when `job` builds a program kept between jobs (a schema), builds it and
    /// the reference. A failure is left for the job that meets it.
    pub fn prepare(&mut self, job: &Job, device: &DeviceSelector) {
        if self.state.open(job, device).is_err() || !job.cache {
            return;
        }
        let _ = self.state.build(job, &job.source, &|_| {});
        if job.barrier_loops {
            let _ = self.state.build(job, &job.reference, &|_| {});
        }
    }

    /// Evaluates `job` on `device`; `alive(warm)` is called after each compile and before
    /// each kernel run (`warm`: a run of the mutant with no driver compile in it). A run that wrote into this process's copy of the test cases makes the
    /// job a RUNTIME-ERROR and drops everything loaded (the next job starts afresh). Whether
    /// the job left this process spent is [`Evaluator::spent`] until the next job.
    pub fn evaluate(
        &mut self,
        job: &Job,
        device: &DeviceSelector,
        alive: &dyn Fn(bool),
    ) -> JobResult {
        self.state.faulted = false;
        let mut r = self.state.job(job, device, alive);
        self.spent = self.state.faulted;
        if self.state.damaged() {
            r.status = Status::RuntimeError;
            r.detail = format!(
                "the run wrote outside its buffers: the worker's copy of the test cases changed ({})",
                r.detail
            );
            self.state = WorkerState::empty();
            self.spent = true;
        }
        r
    }
}
