//! `cltrap check`: precise bug reports on the kernel's own lines (data races, out-of-bounds
//! and uninitialised accesses, barrier divergence), with two engines.
//!
//! Each selected launch runs in a child `cltrap check-worker` process with a deadline, through
//! the same executor as `replay`. Engine `native` ([`native`], the default) runs the kernel
//! instrumented by `cltrap_kernel::sanitize` on the real device and reads the records it
//! wrote; engine `oclgrind` runs it on Oclgrind (registered as the only OpenCL platform of
//! that child) and parses its stderr ([`oclgrind`], addresses mapped back to arguments). A
//! launch the native engine cannot do (a program the pass or the device refuses, a worker that
//! crashed) falls back to Oclgrind; every launch says which engine produced its result. Both
//! give the same [`finding::Diagnostic`]s, deduplicated ([`finding`]) and reported
//! ([`report`], [`sarif`]) alike. [`check`] is the one entry point.

pub mod api;
pub mod campaign;
pub mod finding;
pub mod html;
pub mod launch;
pub mod locate;
pub mod native;
pub mod oclgrind;
pub mod private;
pub mod report;
pub mod sarif;

use crate::executor::{BuildOptions, DeviceSelector, FromFiles, InputArg, LaunchInput, Session};
use cltrap_capture::Capture;
use finding::{Diagnostic, Family, Finding, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which engine checks a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// The instrumented kernel on the real device; Oclgrind for what it cannot do.
    #[default]
    Native,
    /// Oclgrind, the simulator (also the only one that sees barrier divergence).
    Oclgrind,
}

impl Engine {
    /// `native` / `oclgrind`, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Native => "native",
            Engine::Oclgrind => "oclgrind",
        }
    }
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Launch ids; `None` = all.
    pub ids: Option<Vec<u64>>,
    /// The families asked for; empty = all.
    pub families: Vec<Family>,
    /// Oclgrind's first-and-last-work-group mode.
    pub quick: bool,
    /// Wall-clock limit per launch.
    pub deadline: Duration,
    /// The engine asked for.
    pub engine: Engine,
    /// The device the native engine runs on (Oclgrind is its own platform).
    pub device: DeviceSelector,
    /// Native engine: also run each launch uninstrumented and report both device times.
    pub baseline: bool,
    /// Wall-clock limit for the whole check (`replay --schedules`, `fuzz` and `mutate` run it
    /// inside their own work): launches left when it runs out are skipped, and say so.
    pub budget: Option<Duration>,
    /// Run this program instead of the launch's own (a mutant), see [`Variant`]; such a
    /// check runs on Oclgrind.
    pub variant: Option<Variant>,
    /// Stop a launch at its first access out of bounds (locating a finding needs no more,
    /// and the input of a crash may make the rest of the launch run for minutes there).
    pub first_overrun: bool,
}

impl CheckOptions {
    /// The check of `ids` for the `families` asked, with a per-launch deadline and nothing
    /// else, as other commands run it (`replay --schedules`, `fuzz`, `mutate`): on Oclgrind,
    /// the engine their line-locating and race reports were validated with.
    pub fn of(ids: Vec<u64>, families: Vec<Family>, deadline: Duration) -> CheckOptions {
        CheckOptions {
            ids: Some(ids),
            families,
            deadline,
            engine: Engine::Oclgrind,
            ..CheckOptions::default()
        }
    }
}

/// Another source for the launches' program: a mutant of `cltrap mutate` (its lines are the
/// original's: mutation never adds lines), built with extra options and run with the
/// mutation's selector and watchdog arguments set to run the original code path's mutant.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The file holding the program text.
    pub source: PathBuf,
    /// Options added to the recorded build options.
    pub extra_options: String,
    /// Pass `cltrap mutate`'s selector (0) and watchdog (no budget) arguments after the
    /// kernel's own.
    pub mutant_args: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            ids: None,
            families: Vec::new(),
            quick: false,
            deadline: Duration::from_secs(300),
            engine: Engine::Native,
            device: DeviceSelector::default(),
            baseline: false,
            budget: None,
            variant: None,
            first_overrun: false,
        }
    }
}

/// How one launch's check ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum LaunchStatus {
    /// Oclgrind ran the launch to the end.
    Checked {
        /// Wall time of the child, in milliseconds.
        millis: u64,
    },
    /// The launch cannot be replayed from the capture.
    Skipped { reason: String },
    /// The deadline ran out; findings printed before that are kept.
    TimedOut { seconds: u64 },
    /// The child failed (build error, crash): the reason.
    Failed { reason: String },
    /// The engine cannot run this legal launch (a limit of Oclgrind's simulated device, such as
    /// its 1 024 work-items per group, for a launch the captured device ran, or an
    /// instruction Oclgrind cannot simulate): not checked, and not the application's fault.
    EngineLimit { reason: String },
}

/// One launch's result.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchCheck {
    /// Launch id.
    pub id: u64,
    /// Kernel.
    pub kernel: String,
    /// How it ended.
    pub status: LaunchStatus,
    /// Diagnostics the engine produced (before deduplication).
    pub diagnostics: usize,
    /// The engine whose result this is (`native` or `oclgrind`).
    pub engine: &'static str,
    /// Device time of the instrumented kernel (native engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_ns: Option<u64>,
    /// Device time of the same launch uninstrumented (native engine, `--baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_kernel_ns: Option<u64>,
    /// Checks switched off for this launch, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Access sites of the kernel the native engine checks (not counting what it names
    /// in `not_checked`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_sites: Option<usize>,
    /// Accesses of the kernel (and the helpers it calls) the native engine could not check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked_sites: Option<usize>,
}

impl LaunchCheck {
    /// Whether this launch ran to the end without being checked whole: an engine that could
    /// not run it, accesses it could not check, or checks it switched off (its `notes`).
    pub fn incomplete(&self) -> bool {
        matches!(
            self.status,
            LaunchStatus::Skipped { .. } | LaunchStatus::EngineLimit { .. }
        ) || self.unchecked_sites.unwrap_or(0) > 0
            || !self.notes.is_empty()
    }
}

/// One place the native engine could not check, with the kernel and program it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotChecked {
    /// The program (its hash in the capture) whose source the line refers to.
    pub program: String,
    /// The kernel whose launch reached it.
    pub kernel: String,
    /// Where and why.
    #[serde(flatten)]
    pub at: cltrap_kernel::sanitize::Unchecked,
    /// How many accesses of the kernel it stands for: several written in one macro use share
    /// its place and reason, and the per-reason counts of the summary count each of them.
    pub accesses: usize,
}

/// How many accesses the native engine checked, over the distinct kernels it ran.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AccessCount {
    /// Accesses instrumented (each kernel counted once, whatever its launches).
    pub checked: usize,
    /// Accesses that could not be (listed in `not_checked`).
    pub not_checked: usize,
}

/// Exit status of `cltrap check` when nothing was found but not everything was checked.
pub const EXIT_INCOMPLETE: u8 = 3;

/// Everything `cltrap check` found.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The engine(s) that ran: `native`, `oclgrind`, or `native+oclgrind` (fallbacks).
    pub engine: &'static str,
    /// Per launch, in the order checked.
    pub launches: Vec<LaunchCheck>,
    /// Deduplicated findings.
    pub findings: Vec<Finding>,
    /// What the native engine could not see in the kernels it checked (one per place).
    pub not_checked: Vec<NotChecked>,
    /// Accesses checked and not checked by the native engine.
    pub accesses: AccessCount,
    /// Program hash → its source text (the concatenation of its sources), for reports.
    #[serde(skip)]
    pub sources: BTreeMap<String, String>,
}

impl CheckReport {
    /// 1 when something was found, 2 when a launch could not be checked (it failed or ran
    /// out of time), [`EXIT_INCOMPLETE`] (3) when nothing was found but a launch was checked
    /// only in part ([`LaunchCheck::incomplete`]), 0 when everything was checked and clean.
    pub fn exit_code(&self) -> u8 {
        if !self.findings.is_empty() {
            1
        } else if self.launches.iter().any(|l| {
            matches!(
                l.status,
                LaunchStatus::Failed { .. } | LaunchStatus::TimedOut { .. }
            )
        }) {
            2
        } else if self.launches.iter().any(LaunchCheck::incomplete) {
            EXIT_INCOMPLETE
        } else {
            0
        }
    }
}

/// What a worker tells its parent on stdout (one JSON line).
#[derive(Debug, Serialize, Deserialize)]
struct WorkerReply {
    /// Memory objects in creation order: (argument index, name, size in bytes).
    buffers: Vec<(usize, String, u64)>,
    /// `running` (said before the run), `ok`, `skipped` or `error`.
    outcome: String,
    /// The reason for `skipped` / `error`.
    message: String,
}

/// The source text of a program's one unit (what Oclgrind's and the native engine's lines
/// count), or `None` for programs of other origins.
fn program_source(capture: &Capture, hash: &str) -> Option<String> {
    let record = capture.program(hash).ok()?;
    crate::variant::program_source(capture, &record).ok()
}

/// Runs the check: one child per launch, `progress` told before each one. The one entry
/// point of other commands (`replay --schedules`, `fuzz`, `mutate` run it inside their own
/// work); `cltrap check` runs the same per-launch step as a campaign ([`campaign`]).
pub fn check(
    dir: &Path,
    capture: &Capture,
    opts: &CheckOptions,
    mut progress: impl FnMut(&str),
) -> Result<CheckReport, String> {
    let launches =
        crate::replay::select(capture, opts.ids.as_deref()).map_err(|e| e.to_string())?;
    let mut checker = launch::Checker::new(dir, opts)?;
    let started = Instant::now();
    let mut outcomes = Vec::with_capacity(launches.len());
    for (n, l) in launches.iter().enumerate() {
        let left = opts.budget.map(|b| b.saturating_sub(started.elapsed()));
        if left.is_some_and(|t| t < Duration::from_millis(500)) {
            outcomes.push(launch::LaunchOutcome::skipped(
                l,
                opts,
                format!(
                    "the check's time budget of {} s ran out before this launch",
                    opts.budget.unwrap_or_default().as_secs()
                ),
            ));
            continue;
        }
        let deadline = left.map_or(opts.deadline, |t| t.min(opts.deadline));
        outcomes.push(checker.launch(
            capture,
            l,
            (n + 1, launches.len()),
            deadline,
            None,
            &mut progress,
        ));
    }
    Ok(launch::assemble(&outcomes, opts))
}

/// Writes the SARIF log of `report` to `path`, the kernels' sources next to it.
pub fn write_sarif(path: &Path, report: &CheckReport) -> Result<(), String> {
    let sources = sarif_sources_dir(path);
    std::fs::create_dir_all(&sources)
        .map_err(|e| format!("cannot create {}: {e}", sources.display()))?;
    for (program, text) in &report.sources {
        let file = sources.join(report::source_name(program));
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    let uri = sources
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = sarif::render(report, &uri).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// What the native attempt at a launch gave.
enum NativeOutcome {
    /// A result (checked, skipped, timed out or failed at run time).
    Done(LaunchStatus, native::NativeReply),
    /// The native engine cannot do this launch: the reason; Oclgrind takes it.
    Fallback(String),
}

/// Runs one launch in a native worker child.
fn run_native(
    exe: &Path,
    dir: &Path,
    id: u64,
    flags: &u32,
    opts: &CheckOptions,
    deadline: Duration,
) -> NativeOutcome {
    let mut cmd = Command::new(exe);
    cmd.arg("check-worker").arg(dir).arg(id.to_string()).args([
        "--engine",
        "native",
        "--flags",
        &flags.to_string(),
    ]);
    if opts.baseline {
        cmd.arg("--baseline");
    }
    if let Some(p) = &opts.device.platform {
        cmd.args(["--platform", p]);
    }
    if let Some(d) = &opts.device.device {
        cmd.args(["--device", d]);
    }
    cmd.env_remove("LD_PRELOAD").env_remove("OPENCL_LAYERS");
    crate::orphan::end_with_parent(&mut cmd, libc::SIGKILL);
    let done = run_with_deadline(cmd, deadline, false);
    let reply: Option<native::NativeReply> = done
        .stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok());
    match reply {
        _ if done.timed_out => NativeOutcome::Done(
            LaunchStatus::TimedOut {
                seconds: deadline.as_secs(),
            },
            native::NativeReply::empty(),
        ),
        Some(r) => native_outcome(r, done.millis),
        None => NativeOutcome::Fallback(done.no_result("the worker")),
    }
}

/// What the native engine's reply to a launch checked in `millis` means for the check.
fn native_outcome(r: native::NativeReply, millis: u64) -> NativeOutcome {
    match r.outcome.as_str() {
        "ok" => NativeOutcome::Done(LaunchStatus::Checked { millis }, r),
        "skipped" => NativeOutcome::Done(
            LaunchStatus::Skipped {
                reason: r.message.clone(),
            },
            r,
        ),
        _ => NativeOutcome::Fallback(first_line(&r.message)),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// What a child process left.
struct ChildEnd {
    stdout: String,
    stderr: String,
    /// Its exit status, when it ended by itself.
    exit: Option<String>,
    timed_out: bool,
    /// Killed on purpose after its first whole diagnostic of an access out of bounds.
    stopped: bool,
    millis: u64,
}

impl ChildEnd {
    /// Why a child that printed no reply gave none: its exit status and last stderr line.
    fn no_result(&self, who: &str) -> String {
        format!(
            "{who} ended without a result ({}){}",
            self.exit.as_deref().unwrap_or("no status"),
            self.stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default()
        )
    }
}

/// Runs `cmd` (stdin closed, both outputs read whole), killed at `deadline`, or as soon as
/// its stderr holds a whole Oclgrind diagnostic of an access out of bounds (its headline,
/// then the blank line that ends it) when `stop_at_overrun`.
fn run_with_deadline(mut cmd: Command, deadline: Duration, stop_at_overrun: bool) -> ChildEnd {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return ChildEnd {
                stdout: String::new(),
                stderr: format!("cannot start {:?}: {e}", cmd.get_program()),
                exit: None,
                timed_out: false,
                stopped: false,
                millis: 0,
            }
        }
    };
    let out = {
        let p = child.stdout.take();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    // Stderr line by line, raising `overran` at the end of a diagnostic out of bounds.
    let overran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let err = {
        let overran = overran.clone();
        let p = child.stderr.take();
        std::thread::spawn(move || {
            let mut s = String::new();
            let Some(p) = p else { return s };
            let mut in_overrun = false;
            for line in std::io::BufRead::split(std::io::BufReader::new(p), b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).into_owned();
                if line.starts_with("Invalid write") || line.starts_with("Invalid read") {
                    in_overrun = true;
                } else if in_overrun && line.trim().is_empty() {
                    overran.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                s.push_str(&line);
                s.push('\n');
            }
            s
        })
    };
    let mut timed_out = false;
    let mut stopped = false;
    let exit = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s.to_string()),
            Ok(None) if stop_at_overrun && overran.load(std::sync::atomic::Ordering::Relaxed) => {
                let _ = child.kill();
                let _ = child.wait();
                stopped = true;
                break None;
            }
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    ChildEnd {
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        exit,
        timed_out,
        stopped,
        millis: start.elapsed().as_millis() as u64,
    }
}

/// How to run one launch in a child on Oclgrind.
struct Child<'a> {
    exe: &'a Path,
    dir: &'a Path,
    vendors: &'a Path,
    checks: oclgrind::Checks,
    /// The child is killed when it runs out.
    deadline: Duration,
    variant: Option<&'a Variant>,
    first_overrun: bool,
    /// Files holding the launch's derived inputs, by argument (see [`worker_main`]).
    inputs: &'a [(u32, PathBuf)],
}

impl Child<'_> {
    /// Runs `launch` on Oclgrind; when only Oclgrind's uninitialised-value plugin cannot
    /// simulate it (it stops at `freeze`, which clang puts on the operands of a `/` and `%`
    /// pair), or Oclgrind crashed with that plugin on (Debian's Oclgrind 21.10 dies of
    /// SIGSEGV on GEGL's brightness-contrast kernel, which assigns a `float4` by swizzles),
    /// runs it again without that plugin, so that races and bounds are still checked, and
    /// says so in the notes (the launch is then incomplete, exit status 3).
    fn run(
        &self,
        launch: &cltrap_capture::LaunchRecord,
    ) -> (LaunchStatus, Vec<Diagnostic>, Vec<String>) {
        let (status, diags, failures, crash) = self.run_once(launch, self.checks);
        let stopped = !failures.is_empty() && failures.iter().all(|f| f.in_uninitialized_plugin());
        // Why the plugin is left out of a second run, when it is.
        let without_plugin = match (failures.first(), &crash) {
            _ if !self.checks.uninit => None,
            (Some(first), _) if stopped || crash.is_some() => Some(format!(
                "Oclgrind's uninitialised-value plugin cannot simulate this kernel ({})",
                first.message
            )),
            (None, Some(crash)) => Some(format!(
                "Oclgrind crashes on this kernel with its uninitialised-value plugin on ({crash}), and ran it whole without"
            )),
            _ => None,
        };
        if let Some(why) = without_plugin {
            let checks = oclgrind::Checks {
                uninit: false,
                ..self.checks
            };
            let (again_status, mut again, again_failures, again_crash) =
                self.run_once(launch, checks);
            if again_failures.is_empty() && again_crash.is_none() {
                // What the plugin found before it stopped stands.
                again.extend(diags.into_iter().filter(|d| d.kind == Kind::Uninitialized));
                let note = format!("uninitialised values not checked: {why}");
                return (again_status, again, vec![note]);
            }
        }
        let Some(first) = failures.first() else {
            return (status, diags, vec![]);
        };
        let reason = format!(
            "Oclgrind cannot simulate this kernel: {} (a limit of Oclgrind, not a defect of the application)",
            first.message
        );
        (LaunchStatus::EngineLimit { reason }, diags, vec![])
    }

    /// Runs `launch` in a child on Oclgrind with `checks`, killed at the deadline: how it
    /// ended, its diagnostics, what Oclgrind said it cannot simulate, and, when the child
    /// died by a signal before its reply, how it died.
    fn run_once(
        &self,
        launch: &cltrap_capture::LaunchRecord,
        checks: oclgrind::Checks,
    ) -> (
        LaunchStatus,
        Vec<Diagnostic>,
        Vec<oclgrind::EngineFailure>,
        Option<String>,
    ) {
        let mut cmd = Command::new(self.exe);
        cmd.arg("check-worker")
            .arg(self.dir)
            .arg(launch.id.to_string());
        if let Some(v) = self.variant {
            cmd.arg("--source").arg(&v.source);
            cmd.arg(format!("--extra-options={}", v.extra_options));
            if v.mutant_args {
                cmd.arg("--mutant-args");
            }
        }
        for (arg, path) in self.inputs {
            let mut spec = std::ffi::OsString::from(format!("--input={arg}="));
            spec.push(path);
            cmd.arg(spec);
        }
        for (k, v) in oclgrind::environment(self.vendors, checks) {
            cmd.env(k, v);
        }
        // Oclgrind runs work-groups on several threads, so which overrun it reports first, and
        // which pair of work-items it gives as a race's example, change from run to run (with
        // the machine's load). On one thread it names the same ones every time: a report must
        // not depend on the run (a campaign's shards, its resumed runs and a single run give
        // the same report). The user's own OCLGRIND_NUM_THREADS is left as it is.
        if std::env::var_os("OCLGRIND_NUM_THREADS").is_none() {
            cmd.env("OCLGRIND_NUM_THREADS", "1");
        }
        // OCL_ICD_FILENAMES would add other platforms next to the private vendors folder.
        cmd.env_remove("LD_PRELOAD")
            .env_remove("OPENCL_LAYERS")
            .env_remove("OCL_ICD_FILENAMES");
        crate::orphan::end_with_parent(&mut cmd, libc::SIGKILL);
        let done = run_with_deadline(cmd, self.deadline, self.first_overrun);
        // The worker says its buffers before the run (`running`), then how the run ended.
        let replies: Vec<WorkerReply> = done
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mut diags = oclgrind::parse(&done.stderr);
        let failures = oclgrind::engine_failures(&done.stderr);
        if let Some(r) = replies.first() {
            for d in &mut diags {
                if let Some(t) = &mut d.target {
                    oclgrind::map_target(t, &r.buffers);
                }
            }
        }
        let reply = replies.into_iter().rfind(|r| r.outcome != "running");
        let crash = (reply.is_none() && !done.timed_out && !done.stopped)
            .then_some(done.exit.as_deref())
            .flatten()
            .filter(|e| e.contains("signal"))
            .map(str::to_string);
        api::keep_launch_errors(&mut diags, &launch.kernel);
        // A limit of Oclgrind's device on a launch the captured device ran is Oclgrind's.
        let limit = (launch.status == 0)
            .then(|| api::take_engine_limits(&mut diags))
            .flatten();
        let status = if let Some(reason) = limit {
            LaunchStatus::EngineLimit { reason }
        } else if done.stopped {
            // Stopped on purpose at its first access out of bounds (`first_overrun`).
            LaunchStatus::Checked {
                millis: done.millis,
            }
        } else if done.timed_out {
            LaunchStatus::TimedOut {
                seconds: self.deadline.as_secs(),
            }
        } else {
            match reply {
                Some(r) if r.outcome == "ok" => LaunchStatus::Checked {
                    millis: done.millis,
                },
                Some(r) if r.outcome == "skipped" => LaunchStatus::Skipped { reason: r.message },
                Some(r) => LaunchStatus::Failed { reason: r.message },
                None => LaunchStatus::Failed {
                    reason: done.no_result("the Oclgrind child"),
                },
            }
        };
        (status, diags, failures, crash)
    }
}

/// `cltrap check-worker DIR ID`: runs one launch on the Oclgrind platform (the only one its
/// parent registered) and prints a [`WorkerReply`] line; Oclgrind prints its diagnostics on
/// stderr. Exit status 0 whenever a reply was printed.
pub fn worker_main(dir: &Path, id: u64, variant: Option<&Variant>, inputs: &[String]) -> u8 {
    let reply = worker(dir, id, variant, inputs).unwrap_or_else(|(outcome, message)| WorkerReply {
        buffers: vec![],
        outcome: outcome.into(),
        message,
    });
    print_reply(&reply)
}

/// A worker's last word: its reply as one JSON line on stdout. Exit status 0 when printed.
fn print_reply(reply: &impl Serialize) -> u8 {
    match serde_json::to_string(reply) {
        Ok(s) => {
            println!("{s}");
            0
        }
        Err(_) => 2,
    }
}

fn worker(
    dir: &Path,
    id: u64,
    variant: Option<&Variant>,
    inputs: &[String],
) -> Result<WorkerReply, (&'static str, String)> {
    let fail = |e: crate::executor::ExecError| {
        (if e.is_skip() { "skipped" } else { "error" }, e.to_string())
    };
    // The parent named the capture's damaged launch lines; this child checks one intact one.
    let capture = Capture::open_keeping_damaged(dir).map_err(|e| ("error", e.to_string()))?;
    let record = capture.launch(id).map_err(|e| ("error", e.to_string()))?;
    // Derived inputs come from the parent, re-created on a real device (`--input ARG=FILE`):
    // Oclgrind re-executing the launches before this one would take hours.
    let mut files = std::collections::BTreeMap::new();
    for spec in inputs {
        let (arg, path) = spec
            .split_once('=')
            .and_then(|(a, p)| Some((a.parse::<u32>().ok()?, PathBuf::from(p))))
            .ok_or_else(|| ("error", format!("--input {spec}: not ARG=FILE")))?;
        files.insert(arg, path);
    }
    let input =
        LaunchInput::from_record_with_files(&capture, record, &files).map_err(|e| match e {
            FromFiles::Unread(e) => ("error", format!("derived input of launch {id}: {e}")),
            FromFiles::Exec(e) => fail(e),
        })?;
    let session = Session::open(&DeviceSelector {
        platform: Some("oclgrind".into()),
        device: None,
    })
    .map_err(fail)?;
    let program = capture
        .program(&record.program)
        .map_err(|e| ("error", e.to_string()))?;
    let mut options = BuildOptions::default();
    let mut extras = Vec::new();
    if let Some(v) = variant {
        let text = std::fs::read_to_string(&v.source)
            .map_err(|e| ("error", format!("{}: {e}", v.source.display())))?;
        options.source = Some(text);
        options.extra_options = v.extra_options.clone();
        if v.mutant_args {
            extras = crate::variant::selector_extras(0, u32::MAX);
        }
    }
    let built = session.build(&capture, &program, &options).map_err(fail)?;
    // The executor creates one memory object per buffer or image argument, in order, except
    // for arguments that share one (the same memory object passed twice: the first names it).
    let mut seen = std::collections::HashSet::new();
    let buffers = input
        .args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let (size, mem) = match a {
                InputArg::Buffer { bytes, mem, .. } | InputArg::Image { bytes, mem, .. } => {
                    (bytes.len(), *mem)
                }
                _ => return None,
            };
            if mem.is_some_and(|m| !seen.insert(m)) {
                return None;
            }
            let name = record
                .args
                .get(i)
                .map(|r| r.info().name.to_string())
                .unwrap_or_default();
            Some((i, name, size as u64))
        })
        .collect();
    // The buffers first: a parent that stops the run early still maps addresses to them.
    let running = WorkerReply {
        buffers,
        outcome: "running".into(),
        message: String::new(),
    };
    if let Ok(line) = serde_json::to_string(&running) {
        println!("{line}");
        let _ = std::io::Write::flush(&mut std::io::stdout());
    }
    let buffers = running.buffers;
    session.run(&built, &input, &extras).map_err(fail)?;
    Ok(WorkerReply {
        buffers,
        outcome: "ok".into(),
        message: String::new(),
    })
}

/// Where `--sarif FILE` puts the kernel sources it points at: `FILE.sources/`.
pub fn sarif_sources_dir(sarif: &Path) -> PathBuf {
    let mut s = sarif.as_os_str().to_owned();
    s.push(".sources");
    PathBuf::from(s)
}
