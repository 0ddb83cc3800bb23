//! `cltrap mutate` as a campaign: one unit per mutant left to run (`mutant-<program>-<n>`:
//! the program's position in the campaign and the mutant's number) or, for a schema mutant
//! with many test cases, one per batch of its test cases (`mutant-<program>-<n>-cases-<b>`,
//! [`super::batches`]), run in workers (on several devices, in shards, resumable), and the
//! reports written from the verdicts in unit order, whatever ran where: a split mutant's
//! verdict is its batches' merge ([`super::batches::merge`]), the verdict of one walk over all
//! its test cases.
//!
//! The preparation (test cases, mutants, schemata) runs in [`Campaign::units`], in the parent
//! and in `cltrap merge`; its device work per test case runs first as units of their own
//! (`case-<launch>`, `schema-<launch>`: [`super::cases`]) in the same workers, which serve
//! both kinds, journaled in the campaign folder's `cases/` ([`Campaign::folders`] names it)
//! and reused from there by `--resume` and by a merge. Each mutant unit's payload carries the
//! mutant's [`Job`] (what to build and which test cases to run) and the run deadline. A worker evaluates jobs in its own process
//! ([`Evaluator`]) on its pinned device; a watchdog thread ends the worker with
//! [`RUN_DEADLINE_EXIT`] when a kernel run outlives the run deadline, which [`Campaign::lost`]
//! turns into TIMEOUT, as it turns a crash into RUNTIME-ERROR. The runner's own per-unit
//! deadline covers compiles (restarted at each compile and run). A mutant whose run faulted
//! without killing its worker (a device error, a write into a guard zone: RUNTIME-ERROR)
//! retires it ([`Campaign::spent`], [`Evaluator::spent`]), so the next mutant runs in a fresh
//! worker and the verdicts do not depend on how many workers share the mutants.

use super::worker::{Evaluator, Job, JobResult};
use super::{report, CampaignReport, MutateOptions, Prepared, Status};
use crate::campaign::{Campaign, Finished, Lost, Unit, UnitContext};
use cltrap_capture::Capture;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit status of a worker whose kernel run outlived the run deadline (its watchdog ends it).
pub const RUN_DEADLINE_EXIT: i32 = 124;

/// A unit's payload: the mutant's job and the deadline of one warm kernel run.
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    job: Job,
    run_ms: u64,
}

/// The mutation campaign over a capture, and where its reports go.
pub struct MutateCampaign {
    /// Capture directory.
    pub dir: PathBuf,
    /// The capture (opened in the parent and in `cltrap merge`; workers read it per job).
    pub capture: Option<Capture>,
    /// What to mutate and how.
    pub opts: MutateOptions,
    /// Mutation-testing-report-schema JSON to write.
    pub json: Option<PathBuf>,
    /// HTML report to write.
    pub html: Option<PathBuf>,
    /// Print the timing lines (benchmarks).
    pub timing: bool,
    /// Damaged launch lines of the capture (left out; exit 2).
    pub damaged: usize,
    /// The campaign flags (the test cases run on the same devices and workers).
    pub flags: crate::campaign::CampaignArgs,
    /// The command's own device selection.
    pub device: crate::executor::DeviceSelector,
    /// This run's campaign folder, and the folders of earlier runs ([`Campaign::folders`]).
    folders: Option<(PathBuf, Vec<PathBuf>)>,
    cases: super::cases::CaseEvaluator,
    prepared: Option<Prepared>,
    /// Unit id → job index and batch ([`super::batches`]).
    index: HashMap<String, (usize, usize)>,
    /// Unit ids per job, in batch order (one per batch).
    ids: Vec<Vec<String>>,
    evaluator: Evaluator,
    watchdog: Option<Watchdog>,
    started: Instant,
}

impl MutateCampaign {
    /// The campaign of `opts` over the capture in `dir` (`capture` is `None` in a worker).
    pub fn new(dir: PathBuf, capture: Option<Capture>, opts: MutateOptions) -> MutateCampaign {
        MutateCampaign {
            dir,
            capture,
            opts,
            json: None,
            html: None,
            timing: false,
            damaged: 0,
            flags: Default::default(),
            device: Default::default(),
            folders: None,
            cases: Default::default(),
            prepared: None,
            index: HashMap::new(),
            ids: Vec::new(),
            evaluator: Evaluator::new(),
            watchdog: None,
            started: Instant::now(),
        }
    }

    fn run_deadline(&self) -> Duration {
        self.prepared
            .as_ref()
            .map(|p| p.report.deadline)
            .or(self.opts.timeout)
            .unwrap_or(Duration::from_secs(2))
    }

    fn write(&self, r: &CampaignReport, out: &mut dyn Write) -> Result<(), String> {
        let _ = write!(out, "{}", report::terminal(r));
        if let Some(p) = &self.json {
            let text = serde_json::to_string_pretty(&report::stryker_json(r))
                .map_err(|e| e.to_string())?;
            std::fs::write(p, text).map_err(|e| format!("writing {}: {e}", p.display()))?;
        }
        if let Some(p) = &self.html {
            std::fs::write(p, report::html(r))
                .map_err(|e| format!("writing {}: {e}", p.display()))?;
        }
        if self.timing {
            let total: usize = r.programs.iter().map(|p| p.mutants.len()).sum();
            let secs = self.started.elapsed().as_secs_f64();
            let _ = writeln!(
                out,
                "timing: mutants {total} evaluated-by-running {} compiles {} deadline {} ms total {secs:.3} s eval {:.3} s rate {:.2} mutants/s",
                r.evaluated,
                r.compiles,
                r.deadline.as_millis(),
                r.eval_time.as_secs_f64(),
                total as f64 / secs.max(1e-9)
            );
            let ph = &r.phases;
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let _ = writeln!(
                out,
                "phases: open {:.0} ms, render {:.0} ms, compile {:.0} ms, check {:.0} ms, coverage {:.0} ms, eval {:.0} ms, locate {:.0} ms, tce {:.0} ms, eval rate {:.2} mutants/s",
                ms(ph.open),
                ms(ph.render),
                ms(ph.compile),
                ms(ph.check),
                ms(ph.coverage),
                ms(r.eval_time),
                ms(ph.locate),
                ms(ph.tce),
                f64::from(r.evaluated) / r.eval_time.as_secs_f64().max(1e-9)
            );
        }
        Ok(())
    }
}

/// Ends this worker process when a kernel run outlives its deadline: a hung kernel cannot be
/// interrupted inside the process, and the runner's deadline must also cover compiles.
struct Watchdog {
    /// When the armed run must end, in milliseconds since `epoch`; 0 = disarmed.
    until: Arc<AtomicU64>,
    epoch: Instant,
}

impl Watchdog {
    fn start() -> Watchdog {
        let until = Arc::new(AtomicU64::new(0));
        let epoch = Instant::now();
        let u = until.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(50));
            let t = u.load(Ordering::SeqCst);
            if t != 0 && epoch.elapsed().as_millis() as u64 > t {
                // SAFETY: ends this process at once; nothing is left half-written that the
                // runner reads (it sees the exit status).
                unsafe { libc::_exit(RUN_DEADLINE_EXIT) };
            }
        });
        Watchdog { until, epoch }
    }

    /// Arms the watchdog for `d` from now (`None` disarms it).
    fn arm(&self, d: Option<Duration>) {
        let v = d.map_or(0, |d| (self.epoch.elapsed() + d).as_millis().max(1) as u64);
        self.until.store(v, Ordering::SeqCst);
    }
}

/// A crashed worker's end, as the verdict's detail names it (`SIGSEGV`: a wild access).
pub(super) fn died(why: &str) -> String {
    let signal = why
        .strip_prefix("killed by signal ")
        .and_then(|n| n.trim().parse::<i32>().ok());
    match signal {
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
        None => format!("the worker process ended without a verdict ({why})"),
    }
}

impl Campaign for MutateCampaign {
    fn command(&self) -> &'static str {
        "mutate"
    }

    fn phase(&self) -> Option<&'static str> {
        Some("mutants")
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        let capture = self
            .capture
            .as_ref()
            .ok_or("the campaign's capture is not open")?;
        let at = super::cases::CaseRun {
            flags: &self.flags,
            device: &self.device,
            own: self.folders.as_ref().map(|(o, _)| o.as_path()),
            earlier: self.folders.as_ref().map_or(&[][..], |(_, e)| e.as_slice()),
        };
        let prepared =
            super::prepare_campaign(capture, &self.opts, &at).map_err(|e| e.to_string())?;
        let run_ms = prepared.report.deadline.as_millis() as u64;
        let per_unit = super::batches::cases_per_unit();
        let mut units: Vec<Vec<Unit>> = Vec::with_capacity(prepared.jobs.len());
        self.index.clear();
        for (i, (job, &(pi, mi))) in prepared.jobs.iter().zip(&prepared.slots).enumerate() {
            let number = prepared
                .report
                .programs
                .get(pi)
                .and_then(|p| p.mutants.get(mi))
                .map(|m| m.mutant.number)
                .ok_or("a job names no mutant")?;
            let parts = super::batches::split(job, per_unit);
            let batches = parts.len();
            let mut mine = Vec::with_capacity(batches);
            for (b, part) in parts.into_iter().enumerate() {
                let id = super::batches::unit_id(pi, number, b, batches);
                self.index.insert(id.clone(), (i, b));
                let payload = serde_json::to_value(Payload { job: part, run_ms })
                    .map_err(|e| e.to_string())?;
                mine.push(Unit { id, payload });
            }
            units.push(mine);
        }
        self.ids = units
            .iter()
            .map(|m| m.iter().map(|u| u.id.clone()).collect())
            .collect();
        self.prepared = Some(prepared);
        Ok(super::batches::batch_major(units))
    }

    fn deadline(&self) -> Duration {
        match &self.prepared {
            Some(p) => p.unit_deadline(),
            None => self.run_deadline() * 20 + Duration::from_secs(30),
        }
    }

    fn warm_up(&mut self, like: &Unit, cx: &UnitContext) {
        if like.id.starts_with("case-") || like.id.starts_with("schema-") {
            if let Ok(job) = serde_json::from_value::<super::cases::CaseJob>(like.payload.clone()) {
                self.cases.prepare(&job, cx.device);
            }
        } else if let Ok(p) = serde_json::from_value::<Payload>(like.payload.clone()) {
            self.evaluator.prepare(&p.job, cx.device);
        }
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        if unit.id.starts_with("case-") || unit.id.starts_with("schema-") {
            let job: super::cases::CaseJob = serde_json::from_value(unit.payload.clone())
                .map_err(|e| format!("`{}` is not a test case's job: {e}", unit.id))?;
            let r = self.cases.run(&job, cx.device, cx.alive);
            return serde_json::to_value(r).map_err(|e| e.to_string());
        }
        let p: Payload = serde_json::from_value(unit.payload.clone())
            .map_err(|e| format!("`{}` is not a mutant's job: {e}", unit.id))?;
        let watchdog = self.watchdog.get_or_insert_with(Watchdog::start);
        let run = Duration::from_millis(p.run_ms.max(1));
        // Each event restarts the runner's deadline; a warm run also arms the watchdog.
        let alive = |warm: bool| {
            (cx.alive)();
            watchdog.arm(warm.then_some(run));
        };
        let r = self.evaluator.evaluate(&p.job, cx.device, &alive);
        watchdog.arm(None);
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    fn spent(&self) -> bool {
        self.evaluator.spent()
    }

    fn superseded(&self, unit: &Unit, result: &Value) -> Vec<String> {
        let Some(&(i, b)) = self.index.get(&unit.id) else {
            return Vec::new();
        };
        match serde_json::from_value::<JobResult>(result.clone()) {
            Ok(r) if super::batches::decisive(r.status) => self
                .ids
                .get(i)
                .map(|ids| ids.iter().skip(b + 1).cloned().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn lost(&self, _unit: &Unit, why: &Lost) -> Value {
        let r = match why {
            Lost::Crashed(w) if w == &format!("exited with status {RUN_DEADLINE_EXIT}") => {
                JobResult {
                    status: Status::Timeout,
                    detail: format!(
                        "a kernel run missed its deadline of {} ms; the worker was killed",
                        self.run_deadline().as_millis()
                    ),
                    runs: 0,
                }
            }
            Lost::Crashed(w) => JobResult {
                status: Status::RuntimeError,
                detail: died(w),
                runs: 0,
            },
            Lost::Failed(w) => JobResult {
                status: Status::RuntimeError,
                detail: format!("the mutant could not run: {w}"),
                runs: 0,
            },
            Lost::TimedOut(d) => JobResult {
                status: Status::Timeout,
                detail: format!(
                    "a compile or first run missed its deadline of {} ms; the worker was killed",
                    d.as_millis()
                ),
                runs: 0,
            },
        };
        serde_json::to_value(r).unwrap_or(Value::Null)
    }

    fn progress_line(&self, _unit: &Unit, _done: &Finished) -> Option<String> {
        None
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        let prepared = self
            .prepared
            .take()
            .ok_or("the campaign was not prepared")?;
        let mut by_batch: Vec<Vec<Option<JobResult>>> =
            self.ids.iter().map(|ids| vec![None; ids.len()]).collect();
        let mut eval_ms = 0u64;
        for (u, f) in results {
            let r: JobResult = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!(
                    "the campaign's result for {} is not a mutant's verdict: {e}",
                    u.id
                )
            })?;
            let slot = self
                .index
                .get(&u.id)
                .and_then(|&(i, b)| by_batch.get_mut(i)?.get_mut(b))
                .ok_or_else(|| format!("the campaign has no unit {}", u.id))?;
            *slot = Some(r);
            eval_ms = eval_ms.saturating_add(f.millis);
        }
        // A mutant's batches give the verdict of its sequential walk; one that the batches
        // finished so far cannot decide has none (an interrupted campaign: not evaluated).
        let mut by_job: Vec<Option<JobResult>> =
            by_batch.iter().map(|b| super::batches::merge(b)).collect();
        if !complete {
            for r in by_job.iter_mut().filter(|r| r.is_none()) {
                *r = Some(JobResult {
                    status: Status::Ignored,
                    detail: "not evaluated: the campaign was interrupted (--resume evaluates it)"
                        .into(),
                    runs: 0,
                });
            }
        }
        let capture = self
            .capture
            .as_ref()
            .ok_or("the campaign's capture is not open")?;
        let r = prepared.finish(capture, &self.opts, &by_job, Duration::from_millis(eval_ms));
        self.write(&r, out)?;
        Ok(crate::damage::exit_code(0, self.damaged))
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        self.json.iter_mut().chain(self.html.iter_mut()).collect()
    }

    fn home(&self) -> PathBuf {
        self.dir.join("campaigns")
    }

    fn folders(&mut self, own: &std::path::Path, earlier: &[PathBuf]) {
        self.folders = Some((own.to_path_buf(), earlier.to_vec()));
    }
}
