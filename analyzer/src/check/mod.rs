//! `cltrap check`: precise bug reports on the kernel's own lines (data races, out-of-bounds
//! and uninitialised accesses, barrier divergence), with Oclgrind as the engine.
//!
//! Each selected launch runs in a child `cltrap check-worker` process on Oclgrind (registered
//! as the only OpenCL platform of that child), through the same executor as `replay`; the
//! parent gives each child a deadline, reads its stderr, parses Oclgrind's diagnostics
//! ([`oclgrind`]), maps addresses back to arguments, deduplicates ([`finding`]) and reports
//! ([`report`], [`sarif`]). The native instrumented engine of issue 11 does not exist yet.

pub mod api;
pub mod finding;
pub mod html;
pub mod locate;
pub mod oclgrind;
pub mod report;
pub mod sarif;

use crate::executor::{BuildOptions, DeviceSelector, InputArg, LaunchInput, Session};
use cltrap_capture::{Capture, ProgramOrigin};
use finding::{Diagnostic, Family, Finding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    /// Wall-clock limit for the whole check (`replay --schedules`, `fuzz` and `mutate` run it
    /// inside their own work): launches left when it runs out are skipped, and say so.
    pub budget: Option<Duration>,
    /// Run this program instead of the launch's own (a mutant), see [`Variant`].
    pub variant: Option<Variant>,
    /// Stop a launch at its first access out of bounds (locating a finding needs no more,
    /// and the input of a crash may make the rest of the launch run for minutes there).
    pub first_overrun: bool,
}

impl CheckOptions {
    /// The check of `ids` for the `families` asked, with a per-launch deadline and nothing else.
    pub fn of(ids: Vec<u64>, families: Vec<Family>, deadline: Duration) -> CheckOptions {
        CheckOptions {
            ids: Some(ids),
            families,
            quick: false,
            deadline,
            budget: None,
            variant: None,
            first_overrun: false,
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

/// How one launch's check ended.
#[derive(Debug, Clone, Serialize)]
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
    /// Diagnostics Oclgrind printed (before deduplication).
    pub diagnostics: usize,
}

/// Everything `cltrap check` found.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The engine that ran (`oclgrind`).
    pub engine: &'static str,
    /// Per launch, in the order checked.
    pub launches: Vec<LaunchCheck>,
    /// Deduplicated findings.
    pub findings: Vec<Finding>,
    /// Program hash → its source text (the concatenation of its sources), for reports.
    #[serde(skip)]
    pub sources: BTreeMap<String, String>,
}

impl CheckReport {
    /// 1 when something was found, 2 when a launch could not be checked, else 0.
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

/// The concatenated source of a program created from source (what Oclgrind's lines count).
fn program_source(capture: &Capture, hash: &str) -> Option<String> {
    match capture.program(hash).ok()?.origin {
        ProgramOrigin::Source { sources } => sources
            .iter()
            .map(|h| capture.source_text(h).ok())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat()),
        _ => None,
    }
}

/// Runs the check: one child per launch, `progress` told before each one.
pub fn check(
    dir: &Path,
    capture: &Capture,
    opts: &CheckOptions,
    mut progress: impl FnMut(&str),
) -> Result<CheckReport, String> {
    let launches =
        crate::replay::select(capture, opts.ids.as_deref()).map_err(|e| e.to_string())?;
    let icd = oclgrind::find_icd()?;
    let vendors = std::env::temp_dir().join(format!("cltrap-check-{}", std::process::id()));
    oclgrind::vendors_dir(&icd, &vendors)
        .map_err(|e| format!("cannot write {}: {e}", vendors.display()))?;
    let wants = |f: Family| opts.families.is_empty() || opts.families.contains(&f);
    let checks = oclgrind::Checks {
        races: wants(Family::Races),
        uninit: wants(Family::Uninit),
        quick: opts.quick,
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find cltrap itself: {e}"))?;
    let mut report = CheckReport {
        engine: "oclgrind",
        launches: Vec::new(),
        findings: Vec::new(),
        sources: BTreeMap::new(),
    };
    let mut all: Vec<(u64, String, Diagnostic)> = Vec::new();
    let started = Instant::now();
    for (n, l) in launches.iter().enumerate() {
        let left = opts.budget.map(|b| b.saturating_sub(started.elapsed()));
        if left.is_some_and(|t| t < Duration::from_millis(500)) {
            report.launches.push(LaunchCheck {
                id: l.id,
                kernel: l.kernel.clone(),
                status: LaunchStatus::Skipped {
                    reason: format!(
                        "the check's time budget of {} s ran out before this launch",
                        opts.budget.unwrap_or_default().as_secs()
                    ),
                },
                diagnostics: 0,
            });
            continue;
        }
        let deadline = left.map_or(opts.deadline, |t| t.min(opts.deadline));
        let items: u64 = l.global_size.iter().product();
        progress(&format!(
            "[{}/{}] launch {} {}: {items} work-item(s) on Oclgrind{}",
            n + 1,
            launches.len(),
            l.id,
            l.kernel,
            if opts.quick {
                " (first and last work-group only)"
            } else {
                ""
            }
        ));
        let child = Child {
            exe: &exe,
            dir,
            vendors: &vendors,
            checks,
            deadline,
            variant: opts.variant.as_ref(),
            first_overrun: opts.first_overrun,
        };
        let (status, mut diags) = child.run(l);
        if let Ok(p) = capture.program(&l.program) {
            diags.extend(api::capture_misuse(l, &p.options));
        }
        let diags: Vec<Diagnostic> = diags
            .into_iter()
            .filter(|d| d.kind.family().is_none_or(wants))
            .collect();
        if let LaunchStatus::Checked { millis } = &status {
            progress(&format!(
                "  launch {}: {} diagnostic(s) in {:.1} s",
                l.id,
                diags.len(),
                *millis as f64 / 1000.0
            ));
        }
        report.launches.push(LaunchCheck {
            id: l.id,
            kernel: l.kernel.clone(),
            status,
            diagnostics: diags.len(),
        });
        if !report.sources.contains_key(&l.program) {
            if let Some(s) = program_source(capture, &l.program) {
                report.sources.insert(l.program.clone(), s);
            }
        }
        all.extend(diags.into_iter().map(|d| (l.id, l.program.clone(), d)));
    }
    let _ = std::fs::remove_dir_all(&vendors);
    report.findings = finding::deduplicate(all);
    Ok(report)
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
}

impl Child<'_> {
    fn run(&self, launch: &cltrap_capture::LaunchRecord) -> (LaunchStatus, Vec<Diagnostic>) {
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
        run_child(
            cmd,
            launch,
            self.vendors,
            self.checks,
            self.deadline,
            self.first_overrun,
        )
    }
}

/// Runs one launch in a child on Oclgrind, killed at `deadline`.
fn run_child(
    mut cmd: Command,
    launch: &cltrap_capture::LaunchRecord,
    vendors: &Path,
    checks: oclgrind::Checks,
    deadline: Duration,
    first_overrun: bool,
) -> (LaunchStatus, Vec<Diagnostic>) {
    for (k, v) in oclgrind::environment(vendors, checks) {
        cmd.env(k, v);
    }
    // OCL_ICD_FILENAMES would add other platforms next to the private vendors folder.
    cmd.env_remove("LD_PRELOAD")
        .env_remove("OPENCL_LAYERS")
        .env_remove("OCL_ICD_FILENAMES");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return (
                LaunchStatus::Failed {
                    reason: format!("cannot start {:?}: {e}", cmd.get_program()),
                },
                vec![],
            )
        }
    };
    let pipe = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let mut bytes = Vec::new();
                let _ = p.read_to_end(&mut bytes);
                s = String::from_utf8_lossy(&bytes).into_owned();
            }
            s
        })
    };
    let out = pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    // Stderr line by line: a whole diagnostic of an access out of bounds (its headline, then
    // the blank line that ends it) raises `overran`.
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
            Ok(Some(s)) => break Some(s),
            Ok(None) if first_overrun && overran.load(std::sync::atomic::Ordering::Relaxed) => {
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
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    // The worker says its buffers before the run (`running`), then how the run ended.
    let replies: Vec<WorkerReply> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut diags = oclgrind::parse(&stderr);
    if let Some(r) = replies.first() {
        for d in &mut diags {
            if let Some(t) = &mut d.target {
                oclgrind::map_target(t, &r.buffers);
            }
        }
    }
    let reply = replies.into_iter().rfind(|r| r.outcome != "running");
    api::keep_launch_errors(&mut diags, &launch.kernel);
    let status = if stopped {
        // Stopped on purpose at its first access out of bounds (`first_overrun`).
        LaunchStatus::Checked {
            millis: start.elapsed().as_millis() as u64,
        }
    } else if timed_out {
        LaunchStatus::TimedOut {
            seconds: deadline.as_secs(),
        }
    } else {
        match reply {
            Some(r) if r.outcome == "ok" => LaunchStatus::Checked {
                millis: start.elapsed().as_millis() as u64,
            },
            Some(r) if r.outcome == "skipped" => LaunchStatus::Skipped { reason: r.message },
            Some(r) => LaunchStatus::Failed { reason: r.message },
            None => LaunchStatus::Failed {
                reason: format!(
                    "the Oclgrind child ended without a result ({}){}",
                    exit.map(|s| s.to_string())
                        .unwrap_or_else(|| "no status".into()),
                    stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| format!(": {}", l.trim()))
                        .unwrap_or_default()
                ),
            },
        }
    };
    (status, diags)
}

/// `cltrap check-worker DIR ID`: runs one launch on the Oclgrind platform (the only one its
/// parent registered) and prints a [`WorkerReply`] line; Oclgrind prints its diagnostics on
/// stderr. Exit status 0 whenever a reply was printed.
pub fn worker_main(dir: &Path, id: u64, variant: Option<&Variant>) -> u8 {
    let reply = worker(dir, id, variant).unwrap_or_else(|(outcome, message)| WorkerReply {
        buffers: vec![],
        outcome: outcome.into(),
        message,
    });
    match serde_json::to_string(&reply) {
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
) -> Result<WorkerReply, (&'static str, String)> {
    let fail = |e: crate::executor::ExecError| {
        (if e.is_skip() { "skipped" } else { "error" }, e.to_string())
    };
    let capture = Capture::open(dir).map_err(|e| ("error", e.to_string()))?;
    let record = capture.launch(id).map_err(|e| ("error", e.to_string()))?;
    let input = LaunchInput::from_record(&capture, record).map_err(fail)?;
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
            extras = crate::mutate::selector_extras(0, u32::MAX);
        }
    }
    let built = session.build(&capture, &program, &options).map_err(fail)?;
    // The executor creates one memory object per buffer or image argument, in order.
    let buffers = input
        .args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let size = match a {
                InputArg::Buffer { bytes, .. } | InputArg::Image { bytes, .. } => bytes.len(),
                _ => return None,
            };
            let name = record
                .args
                .get(i)
                .map(|r| r.info().name.clone())
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
