//! `cltrap replay` as a campaign: one unit per launch, replayed in workers (on several
//! devices, in shards, resumable), the per-launch lines and the summary written by the report
//! in launch order, whatever ran where.
//!
//! A worker keeps its [`Replayer`] (programs built, the outputs derived inputs come from)
//! across the launches it runs, so one worker replaying in order re-executes nothing twice;
//! with several workers or shards each re-derives what its launches need (the summary's count
//! of re-executed launches is what this run paid, the one number that depends on how units were
//! spread). A launch that crashes or hangs its worker is that launch's error and the replay goes
//! on in a fresh worker, so `cltrap replay SUITE/findings/KERNEL` reproduces fuzzing findings
//! without taking cltrap down.

use crate::campaign::kept::{error_lines, Kept};
use crate::campaign::{Campaign, Finished, Lost, Unit, UnitContext};
use crate::compare::Closeness;
use crate::executor::Traffic;
use crate::replay::{LaunchResult, Outcome, Phases, Replayer, Summary};
use cltrap_capture::{Capture, LaunchRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The verdict of a replayed launch, as the summary counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every output matched.
    Ok,
    /// An output differs.
    Mismatch,
    /// Not replayable from the capture.
    Skipped,
    /// Not replayable on this device.
    NotHere,
    /// The replay failed.
    Error,
}

/// One launch's replay as a worker returns it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Replayed {
    /// Launch id.
    pub launch: u64,
    /// Kernel name.
    pub kernel: String,
    /// The per-launch line (`launch ID KERNEL: ok`, …).
    pub line: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// The whole message of an error (a build log), for stderr.
    pub full: Option<String>,
    /// The launch's program hash, when the program built.
    pub built: Option<String>,
    /// Earlier launches this worker re-executed for it (a cost, not part of the verdict).
    pub rederived: u64,
    /// The device, `name (platform)`, when one was opened.
    pub device: Option<String>,
    /// How its buffer inputs reached the device (a cost, not part of the verdict).
    #[serde(default)]
    pub traffic: Traffic,
    /// Where its replay spent its time (a cost, not part of the verdict).
    #[serde(default)]
    pub phases: Phases,
}

impl Replayed {
    fn of(r: &LaunchResult) -> Replayed {
        let (verdict, full) = match &r.outcome {
            Outcome::Ok { .. } => (Verdict::Ok, None),
            Outcome::Mismatch(_) => (Verdict::Mismatch, None),
            Outcome::Skipped(_) => (Verdict::Skipped, None),
            Outcome::NotHere(_) => (Verdict::NotHere, None),
            Outcome::Error { full, .. } => (Verdict::Error, Some(full.clone())),
        };
        Replayed {
            launch: r.id,
            kernel: r.kernel.clone(),
            line: r.to_string(),
            verdict,
            full,
            built: None,
            rederived: 0,
            device: None,
            traffic: Traffic::default(),
            phases: Phases::default(),
        }
    }

    fn error(l: &LaunchRecord, line: String, full: Option<String>) -> Replayed {
        Replayed {
            launch: l.id,
            kernel: l.kernel.clone(),
            line: format!("launch {} {}: error: {line}", l.id, l.kernel),
            verdict: Verdict::Error,
            full,
            built: None,
            rederived: 0,
            device: None,
            traffic: Traffic::default(),
            phases: Phases::default(),
        }
    }
}

/// The replay of a capture's selected launches.
pub struct ReplayCampaign {
    dir: PathBuf,
    /// The capture, for the whole process (a worker's derived inputs borrow it).
    capture: &'static Capture,
    ids: Option<Vec<u64>>,
    closeness: Closeness,
    /// Damaged launch lines of the capture: each is an error line of the replay (exit 2).
    pub damaged: Vec<String>,
    /// Longest silence of a worker on one launch (a program's compile included).
    pub watchdog: Duration,
    /// Print the replay's wall time, launches per second and how its buffer inputs reached
    /// the device, on stderr after the summary (for benchmarks).
    pub timing: bool,
    started: std::time::Instant,
    /// A worker's session and what it built and derived there, kept between launches.
    here: Option<Kept<Replayer<'static>>>,
}

impl ReplayCampaign {
    /// The replay of the launches `ids` (all when `None`) of `capture`, opened from `dir`.
    pub fn new(dir: &Path, capture: Capture, ids: Option<Vec<u64>>, closeness: Closeness) -> Self {
        ReplayCampaign {
            dir: dir.to_path_buf(),
            capture: Box::leak(Box::new(capture)),
            ids,
            closeness,
            damaged: Vec::new(),
            watchdog: Duration::from_secs(300),
            timing: false,
            started: std::time::Instant::now(),
            here: None,
        }
    }

    fn launch_of(&self, unit: &Unit) -> Result<&'static LaunchRecord, String> {
        unit.launch_in(self.capture)
    }
}

impl Campaign for ReplayCampaign {
    fn command(&self) -> &'static str {
        "replay"
    }

    /// Launches in order: the worker's deriver and resident contents carry from one to the next.
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
        let (capture, closeness) = (self.capture, self.closeness);
        let here = match Kept::on(&mut self.here, cx.device, || {
            Replayer::new(capture, closeness)
        }) {
            Ok(h) => h,
            Err(e) => {
                let (line, full) = error_lines(&e);
                let r = Replayed::error(l, line, Some(full));
                return serde_json::to_value(r).map_err(|e| e.to_string());
            }
        };
        let before = here.state.rederived();
        let traffic = here.state.traffic();
        let phases = here.state.phases;
        let result = here.state.one(&here.session, l);
        let info = here.session.info();
        let r = Replayed {
            built: here.state.built(&l.program).then(|| l.program.clone()),
            rederived: here.state.rederived() - before,
            traffic: here.state.traffic().since(&traffic),
            phases: here.state.phases.since(&phases),
            device: Some(format!("{} ({})", info.name, info.platform)),
            ..Replayed::of(&result)
        };
        serde_json::to_value(r).map_err(|e| e.to_string())
    }

    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        let Ok(l) = self.launch_of(unit) else {
            return Value::Null;
        };
        let line = match why {
            Lost::Crashed(w) => format!("the kernel crashed the replay worker ({w})"),
            Lost::Failed(w) => format!("could not be replayed: {w}"),
            Lost::TimedOut(d) => format!(
                "hung: no result within {} s, the watchdog stopped the replay worker",
                d.as_secs()
            ),
        };
        serde_json::to_value(Replayed::error(l, line, None)).unwrap_or(Value::Null)
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        _complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        let mut summary = Summary {
            errors: self.damaged.len(),
            ..Summary::default()
        };
        for d in &self.damaged {
            let _ = writeln!(out, "damaged launch record: error: {d}");
            eprintln!("cltrap: {d}");
        }
        let mut built: HashSet<String> = HashSet::new();
        let mut told: HashSet<String> = HashSet::new();
        let mut device: Option<String> = None;
        let mut traffic = Traffic::default();
        let mut phases = Phases::default();
        for (u, f) in results {
            let r: Replayed = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!(
                    "the campaign's result for {} is not a launch's replay: {e}",
                    u.id
                )
            })?;
            // Lines hold the capture's strings (reasons, logs): never raw to a terminal.
            let _ = writeln!(out, "{}", crate::list::escape_controls(&r.line));
            match r.verdict {
                Verdict::Ok => summary.ok += 1,
                Verdict::Mismatch => summary.mismatches += 1,
                Verdict::Skipped => summary.skipped += 1,
                Verdict::NotHere => summary.not_here += 1,
                Verdict::Error => summary.errors += 1,
            }
            if let Some(full) = &r.full {
                if told.insert(full.clone()) {
                    eprintln!(
                        "cltrap: launch {} ({}): {}",
                        r.launch,
                        crate::list::escape_controls(&r.kernel),
                        crate::list::escape_controls_keep_lines(full)
                    );
                }
            }
            built.extend(r.built);
            summary.rederived += r.rederived;
            traffic.add(&r.traffic);
            phases.add(&r.phases);
            if device.is_none() {
                device = r.device;
            }
        }
        summary.programs_built = built.len();
        let device = device.unwrap_or_else(|| "unknown (every worker crashed)".into());
        let _ = writeln!(out, "{summary}; device {device}");
        let _ = out.flush();
        if self.timing {
            let secs = self.started.elapsed().as_secs_f64();
            let n = results.len();
            let mb = |b: u64| b as f64 / 1e6;
            eprintln!(
                "cltrap: replay timing: {n} launch(es) in {secs:.3} s ({:.1} launches/s); buffer inputs: {} bound on the device ({:.1} MB not uploaded), {} uploaded ({:.1} MB); outputs: {} verified on the device, {} read back ({:.1} MB)",
                n as f64 / secs.max(1e-9),
                traffic.bound,
                mb(traffic.bound_bytes),
                traffic.uploaded,
                mb(traffic.uploaded_bytes),
                traffic.device_verified,
                traffic.read_back,
                mb(traffic.read_back_bytes),
            );
            // Each wait for the device is a round trip; one per launch run is the least a replay
            // that judges every launch as it goes can make.
            eprintln!(
                "cltrap: replay device waits: {} for {n} launch(es); {} running them, {} restoring inputs",
                traffic.waits,
                traffic.run_waits,
                traffic.waits.saturating_sub(traffic.run_waits),
            );
            // Per launch, in microseconds; what is left of the wall time went to starting up,
            // building programs and the campaign (workers, journal).
            let per = |ns: u64| ns as f64 / 1e3 / n.max(1) as f64;
            eprintln!(
                "cltrap: replay time per launch: restore {:.0} us, run {:.0} us (kernel object {:.0} us, memory objects {:.0} us, arguments and enqueues {:.0} us, waiting {:.0} us; kernel {:.0} us on the device), verify {:.0} us, compare {:.0} us; outside the launches: {:.3} s",
                per(phases.restore_ns),
                per(phases.run_ns),
                per(phases.split.kernel_ns),
                per(phases.split.objects_ns),
                per(phases.split.enqueue_ns),
                per(phases.split.wait_ns),
                per(phases.kernel_ns),
                per(phases.verify_ns),
                per(phases.compare_ns),
                (secs - phases.total_ns() as f64 / 1e9).max(0.0),
            );
        }
        Ok(summary.exit_code() as u8)
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        Vec::new()
    }

    fn home(&self) -> PathBuf {
        self.dir.join("campaigns")
    }
}
