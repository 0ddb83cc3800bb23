//! Worker processes: mutants that hang or crash the driver must not take the campaign down, so
//! every mutant run happens in a `cltrap mutate-worker` child with its own OpenCL context.
//!
//! Protocol: one JSON [`Job`] per line on the worker's stdin; the worker answers with
//! [`Event`] lines on stdout (`built` after compiling, `run` before every kernel run, then
//! `done` with the result). The parent ([`Pool`]) restarts the deadline at each event, kills a
//! worker that misses it (TIMEOUT) and turns a worker that dies into RUNTIME-ERROR, then starts
//! a fresh one and goes on.

use super::{error_line, selector_extras, Status};
use crate::executor::{
    check_outputs, BuildOptions, BuiltProgram, DeviceSelector, Expected, InputArg, LaunchInput,
    Session,
};
use crate::variant::{word_buffer, words};
use cltrap_capture::{ArgInfo, Capture};
use cltrap_kernel::mutate::LaunchChange;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Platform selector.
    pub platform: Option<String>,
    /// Device selector.
    pub device: Option<String>,
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
    /// The worker died running the original through this program: the driver cannot run the
    /// program at all, so the verdict says nothing about the mutant.
    #[serde(default)]
    pub unrunnable: bool,
    /// The worker's own memory changed during the run (see [`fingerprint`]): the worker
    /// exits after this result and the pool starts a fresh one for the next job.
    #[serde(default)]
    pub retire: bool,
    /// The deadline was missed while the driver compiled (the program's build, or the
    /// warm-up run of the original that carries the lazy compile for its sizes), not while
    /// the mutant ran: the pool tries again with longer deadlines instead of calling the
    /// mutant a TIMEOUT.
    #[serde(default)]
    pub slow_compile: bool,
}

/// A line from a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A program was compiled (compiles may take longer than a run).
    Built,
    /// A kernel run starts (the run deadline restarts). `warm` is false for the first run of
    /// a program with a given kernel and sizes: drivers such as PoCL compile the kernel for
    /// its work-group size then, so that run gets the compile deadline.
    Run {
        /// The program already ran this kernel with these sizes in this worker.
        warm: bool,
        /// This run is of the original (selector 0), not of the mutant: a crash here means
        /// the driver cannot run the program at all, whatever the mutant.
        #[serde(default)]
        original: bool,
        /// The warm-up run of the original through the schema, which carries the driver's
        /// lazy compile for these sizes: missing its deadline says nothing of the mutant.
        #[serde(default)]
        warmup: bool,
    },
    /// The job is finished.
    Done {
        /// Its result.
        result: JobResult,
    },
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
/// then compare against damaged data (false kills). Checked after every job.
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
}

fn emit(e: &Event) {
    let mut out = std::io::stdout().lock();
    if let Ok(s) = serde_json::to_string(e) {
        let _ = writeln!(out, "{s}");
        let _ = out.flush();
    }
}

fn result(status: Status, detail: impl Into<String>, runs: u32) -> JobResult {
    JobResult {
        status,
        detail: detail.into(),
        runs,
        unrunnable: false,
        retire: false,
        slow_compile: false,
    }
}

impl WorkerState {
    /// Whether any test case this worker holds no longer matches its [`fingerprint`].
    fn damaged(&self) -> bool {
        self.launches
            .values()
            .any(|l| fingerprint(&l.input, &l.expected) != l.print)
    }

    fn build(&mut self, job: &Job, path: &PathBuf) -> Result<(), JobResult> {
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
        emit(&Event::Built);
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
        let mut unread = None;
        let input = LaunchInput::from_record_with(capture, rec, &mut |arg, _| {
            let path = test.derived.get(&arg)?;
            std::fs::read(path)
                .map_err(|e| unread = Some(format!("{}: {e}", path.display())))
                .ok()
        });
        if let Some(e) = unread {
            return Err(fail(format!("derived input of launch {id}: {e}")));
        }
        let input = input.map_err(|e| fail(e.to_string()))?;
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

    fn job(&mut self, job: &Job) -> JobResult {
        if self.session.is_none() {
            match Session::open(&DeviceSelector {
                platform: job.platform.clone(),
                device: job.device.clone(),
            }) {
                Ok(s) => self.session = Some(s),
                Err(e) => return result(Status::RuntimeError, e.to_string(), 0),
            }
        }
        if !self.captures.contains_key(&job.capture) {
            // The parent named the damaged launch lines; a job is one intact launch.
            match Capture::open_keeping_damaged(&job.capture) {
                Ok(c) => {
                    self.captures.insert(job.capture.clone(), c);
                }
                Err(e) => return result(Status::RuntimeError, e.to_string(), 0),
            }
        }
        let out = self.evaluate(job);
        if !job.cache {
            self.programs
                .retain(|(p, _), _| *p != job.source && Some(p) != job.permuted.as_ref());
        }
        out
    }

    fn evaluate(&mut self, job: &Job) -> JobResult {
        if let Err(r) = self.build(job, &job.source) {
            return r;
        }
        for t in &job.tests {
            if let Err(r) = self.load(job, t) {
                return r;
            }
        }
        let seeded = job.tests.iter().any(|t| !t.seeds.is_empty());
        if let Some(pp) = &job.permuted {
            if seeded {
                if let Err(r) = self.build(job, pp) {
                    return r;
                }
            }
        }
        if job.barrier_loops {
            if let Err(r) = self.build(job, &job.reference) {
                return r;
            }
            if let (Some(rp), true) = (&job.reference_permuted, seeded) {
                if let Err(r) = self.build(job, rp) {
                    return r;
                }
            }
        }
        let Some(session) = self.session.as_ref() else {
            return result(Status::RuntimeError, "no device", 0);
        };
        let mut runs = 0u32;
        let mut undecided: Option<String> = None;
        let mut any_test = false;
        for t in &job.tests {
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
                        emit(&Event::Run {
                            warm: self.warm.contains(&warm),
                            original: true,
                            warmup: false,
                        });
                        let mut extras = selector_extras(0, u32::MAX);
                        extras.extend(seed.map(|s| perm(original, s)));
                        let need = session
                            .run_guarded(reference, original, &extras)
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
                    emit(&Event::Run {
                        warm: false,
                        original: job.source == job.reference,
                        warmup: true,
                    });
                    let mut warm_extras = selector_extras(0, budget);
                    warm_extras.extend(extras.iter().skip(2).cloned());
                    let _ = session.run_guarded(program, &input, &warm_extras);
                    self.warm.insert(warm);
                }
                for _ in 0..job.repeats.max(1) {
                    emit(&Event::Run {
                        warm: !cold_copy,
                        original: false,
                        warmup: false,
                    });
                    cold_copy = false;
                    runs += 1;
                    let (out, breaches) = match session.run_guarded(program, &input, &extras) {
                        Ok(o) => o,
                        Err(e) => {
                            return result(
                                Status::RuntimeError,
                                format!("launch {}{under}: {e}", t.launch),
                                runs,
                            )
                        }
                    };
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

/// `cltrap mutate-worker`: evaluates jobs from stdin until it closes. Returns the exit code.
pub fn worker_main() -> u8 {
    let mut state = WorkerState {
        session: None,
        captures: HashMap::new(),
        programs: HashMap::new(),
        launches: HashMap::new(),
        warm: Default::default(),
        needs: HashMap::new(),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let mut r = match serde_json::from_str::<Job>(&line) {
            Ok(job) => state.job(&job),
            Err(e) => result(Status::RuntimeError, format!("bad job: {e}"), 0),
        };
        if state.damaged() {
            r.status = Status::RuntimeError;
            r.detail = format!(
                "the run wrote outside its buffers: the worker's copy of the test cases changed ({})",
                r.detail
            );
            r.retire = true;
            emit(&Event::Done { result: r });
            break;
        }
        emit(&Event::Done { result: r });
    }
    0
}

/// Where and how to start workers.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// The `cltrap` executable (its `mutate-worker` subcommand).
    pub exe: PathBuf,
    /// Number of workers.
    pub workers: usize,
    /// Deadline per kernel run (and 20× that for a compile).
    pub run_timeout: Duration,
    /// Deadline of a first run of a program with new sizes (it includes the driver's lazy
    /// compile).
    pub cold_timeout: Duration,
    /// Directory for worker logs (their stderr).
    pub log_dir: PathBuf,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    events: Receiver<Option<Event>>,
}

fn spawn(opts: &PoolOptions, n: usize) -> Result<Worker, String> {
    let log = std::fs::File::create(opts.log_dir.join(format!("worker-{n}.log")))
        .map_err(|e| format!("creating the worker log in {}: {e}", opts.log_dir.display()))?;
    let mut child = Command::new(&opts.exe)
        .arg("mutate-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .map_err(|e| format!("starting {} mutate-worker: {e}", opts.exe.display()))?;
    let stdin = child.stdin.take().ok_or("worker has no stdin")?;
    let stdout = child.stdout.take().ok_or("worker has no stdout")?;
    let (tx, rx): (Sender<Option<Event>>, _) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(e) = serde_json::from_str::<Event>(&line) {
                if tx.send(Some(e)).is_err() {
                    return;
                }
            }
        }
        let _ = tx.send(None);
    });
    Ok(Worker {
        child,
        stdin,
        events: rx,
    })
}

fn describe_exit(child: &mut Child) -> String {
    match child.wait() {
        Ok(st) => {
            use std::os::unix::process::ExitStatusExt;
            match st.signal() {
                Some(sig) => {
                    let name = match sig {
                        libc::SIGSEGV => "SIGSEGV",
                        libc::SIGBUS => "SIGBUS",
                        libc::SIGFPE => "SIGFPE",
                        libc::SIGABRT => "SIGABRT",
                        libc::SIGILL => "SIGILL",
                        _ => "a signal",
                    };
                    format!("the worker process died of {name} ({sig})")
                }
                None => format!("the worker process exited with {st}"),
            }
        }
        Err(e) => format!("the worker process was lost: {e}"),
    }
}

/// Deadline of a program build in a worker.
fn compile_deadline(opts: &PoolOptions) -> Duration {
    opts.run_timeout * 20 + Duration::from_secs(30)
}

/// Deadline of one kernel run. A cold run (the first of a program with a kernel and sizes
/// in this worker) includes the driver's lazy compile for those sizes (PoCL compiles the
/// work-group function then), which for a schema of many mutants (an image kernel with
/// hundreds of inlined `read_image` calls) takes seconds however fast the kernel itself
/// runs: it gets the compile deadline, so that compile is never judged a mutant's TIMEOUT.
fn run_deadline(opts: &PoolOptions, warm: bool, stretch: u32) -> Duration {
    if warm {
        opts.run_timeout
    } else {
        opts.cold_timeout.max(compile_deadline(opts)) * stretch
    }
}

/// Tries of a job whose deadline ran out while the driver compiled: the deadlines of
/// compiles double from one try to the next (a large schema on a loaded machine).
const COMPILE_TRIES: u32 = 3;

/// Runs one job on `w`, enforcing the deadlines: the result, whether the worker may be kept,
/// and (through `built_at`) when its first program was ready (the `built` event, for the
/// start-up time).
fn run_on(
    w: &mut Worker,
    job: &Job,
    opts: &PoolOptions,
    built_at: &mut Option<Instant>,
    stretch: u32,
) -> (JobResult, bool) {
    let line = match serde_json::to_string(job) {
        Ok(l) => l,
        Err(e) => return (result(Status::RuntimeError, e.to_string(), 0), true),
    };
    if writeln!(w.stdin, "{line}")
        .and_then(|_| w.stdin.flush())
        .is_err()
    {
        let why = describe_exit(&mut w.child);
        return (result(Status::RuntimeError, why, 0), false);
    }
    let compile = compile_deadline(opts) * stretch;
    let mut deadline = compile;
    let mut runs = 0u32;
    let mut in_original = false;
    let mut in_warmup = false;
    loop {
        match w.events.recv_timeout(deadline) {
            Ok(Some(Event::Built)) => {
                built_at.get_or_insert_with(Instant::now);
                deadline = opts.run_timeout;
            }
            Ok(Some(Event::Run {
                warm,
                original,
                warmup,
            })) => {
                runs += 1;
                in_original = original;
                in_warmup = warmup;
                deadline = run_deadline(opts, warm, stretch);
            }
            Ok(Some(Event::Done { result })) => {
                let keep = !result.retire;
                if !keep {
                    let _ = w.child.wait();
                }
                return (result, keep);
            }
            Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                let why = describe_exit(&mut w.child);
                let what = if in_original {
                    " (a run of the original through this program: the driver cannot run it, whatever the mutant)"
                } else {
                    ""
                };
                let mut r = result(
                    Status::RuntimeError,
                    format!("{why} during run {runs}{what}"),
                    runs,
                );
                r.unrunnable = in_original;
                return (r, false);
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = w.child.kill();
                let _ = w.child.wait();
                let what = if runs == 0 {
                    "compiling"
                } else if in_warmup {
                    "the warm-up run of the original (with the driver's compile for its sizes)"
                } else if deadline > opts.run_timeout {
                    "a first run (with the driver's compile for its sizes)"
                } else {
                    "a kernel run"
                };
                let mut r = result(
                    Status::Timeout,
                    format!(
                        "{what} missed its deadline of {} ms; the worker was killed",
                        deadline.as_millis()
                    ),
                    runs,
                );
                r.slow_compile = runs == 0 || in_warmup;
                return (r, false);
            }
        }
    }
}

/// What the pool spent on worker processes, for `--timing`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PoolStats {
    /// Worker processes that got as far as a built program (restarts after timeouts and
    /// crashes included; one that died before its first build is not counted).
    pub spawns: u32,
    /// Longest time from a worker's start to its first program built.
    pub slowest_start: Duration,
}

enum Msg {
    Result(usize, JobResult),
    Started(Duration),
}

/// A pool of workers evaluating `jobs`; `on_result(index, result)` is called on the calling
/// thread as results arrive (so it may update a progress bar and the state file).
pub fn run_jobs(
    jobs: Vec<(usize, Job)>,
    opts: &PoolOptions,
    mut on_result: impl FnMut(usize, JobResult),
) -> Result<PoolStats, String> {
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<VecDeque<_>>()));
    // Programs the driver cannot run (it crashed on the original through them): their other
    // jobs are answered without running, each crash would only cost a worker restart.
    let unrunnable: Arc<Mutex<std::collections::HashSet<PathBuf>>> = Arc::default();
    let (tx, rx) = channel::<Result<Msg, String>>();
    let mut handles = Vec::new();
    for n in 0..opts.workers.max(1) {
        let queue = Arc::clone(&queue);
        let unrunnable = Arc::clone(&unrunnable);
        let tx = tx.clone();
        let opts = opts.clone();
        handles.push(std::thread::spawn(move || {
            let mut worker: Option<Worker> = None;
            let mut spawned_at: Option<Instant> = None;
            // Jobs the current worker process finished before the one it runs now.
            let mut done_by_worker = 0u32;
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .pop_front();
                let Some((index, job)) = next else { break };
                let skip = unrunnable
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .contains(&job.source);
                if skip {
                    let mut r = result(
                        Status::RuntimeError,
                        "not run: the driver cannot run the original through this program",
                        0,
                    );
                    r.unrunnable = true;
                    if tx.send(Ok(Msg::Result(index, r))).is_err() {
                        break;
                    }
                    continue;
                }
                // On a CPU device the kernels run inside the worker process, so a mutant that
                // wrote out of bounds can corrupt its heap and the crash come later, in the
                // next job's run of the original. A program is only judged unrunnable when the
                // original crashes in a worker that ran nothing before: such a job runs once
                // more, in a fresh worker.
                let mut second_chance = false;
                let mut tries = 0u32;
                let (mut r, keep) = loop {
                    if worker.is_none() {
                        match spawn(&opts, n) {
                            Ok(w) => {
                                worker = Some(w);
                                spawned_at = Some(Instant::now());
                                done_by_worker = 0;
                            }
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        }
                    }
                    let Some(w) = worker.as_mut() else { return };
                    let mut built_at = None;
                    tries += 1;
                    let (r, keep) = run_on(w, &job, &opts, &mut built_at, 1 << (tries - 1));
                    done_by_worker += 1;
                    if let (Some(s), Some(b)) = (spawned_at, built_at) {
                        let _ = tx.send(Ok(Msg::Started(b.duration_since(s))));
                        spawned_at = None;
                    }
                    if r.unrunnable && done_by_worker > 1 && !second_chance {
                        second_chance = true;
                        worker = None;
                        continue;
                    }
                    if r.slow_compile && tries < COMPILE_TRIES {
                        worker = None;
                        continue;
                    }
                    break (r, keep);
                };
                if r.slow_compile {
                    // The driver could not compile the program in time, however long it was
                    // given: the verdict says nothing of the mutant. A schema's mutants are
                    // evaluated again with one (much smaller) program each.
                    r.unrunnable = true;
                    r.detail = format!(
                        "not judged: {} ({COMPILE_TRIES} tries, the compile deadlines doubled each time)",
                        r.detail
                    );
                }
                if r.unrunnable {
                    unrunnable
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(job.source.clone());
                }
                if !keep {
                    worker = None;
                }
                if tx.send(Ok(Msg::Result(index, r))).is_err() {
                    break;
                }
            }
            if let Some(mut w) = worker {
                drop(w.stdin);
                let _ = w.child.wait();
            }
        }));
    }
    drop(tx);
    let mut first_error = None;
    let mut stats = PoolStats::default();
    for r in rx {
        match r {
            Ok(Msg::Result(i, res)) => on_result(i, res),
            Ok(Msg::Started(t)) => {
                stats.spawns += 1;
                stats.slowest_start = stats.slowest_start.max(t);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(run_ms: u64) -> PoolOptions {
        PoolOptions {
            exe: PathBuf::from("cltrap"),
            workers: 1,
            run_timeout: Duration::from_millis(run_ms),
            cold_timeout: Duration::from_millis(run_ms) + Duration::from_secs(2),
            log_dir: PathBuf::from("."),
        }
    }

    /// The first run of a program with new sizes includes the driver's compile for them: it
    /// gets the compile deadline, never the shorter run deadline.
    #[test]
    fn a_cold_run_gets_the_compile_deadline() {
        let o = opts(2000);
        assert_eq!(run_deadline(&o, true, 1), Duration::from_millis(2000));
        assert!(run_deadline(&o, false, 1) >= compile_deadline(&o));
        assert!(compile_deadline(&o) >= Duration::from_secs(30));
        // A try after a compile that missed its deadline doubles the cold deadline only.
        assert_eq!(run_deadline(&o, true, 2), Duration::from_millis(2000));
        assert_eq!(run_deadline(&o, false, 2), run_deadline(&o, false, 1) * 2);
    }
}
