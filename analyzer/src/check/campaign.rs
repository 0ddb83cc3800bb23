//! `cltrap check` as a campaign: one unit per launch ([`super::launch`]), run in workers
//! (on several devices, in shards, resumable), and the report written from the launches'
//! outcomes in launch order, whatever ran where.

use super::launch::{assemble, Checker, LaunchOutcome};
use super::{CheckOptions, CheckReport, LaunchStatus};
use crate::campaign::{Campaign, Finished, Lost, Unit, UnitContext};
use cltrap_capture::Capture;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The check of a capture's selected launches, and where its report goes.
pub struct CheckCampaign {
    /// Capture directory.
    pub dir: PathBuf,
    /// The capture (damaged lines kept aside). Leaked: a campaign serves one capture for the
    /// process's life, and a worker's native engine keeps a deriver that borrows it from one
    /// launch to the next.
    pub capture: &'static Capture,
    /// What to check and how.
    pub opts: CheckOptions,
    /// Print the report as JSON on stdout.
    pub json: bool,
    /// SARIF log to write.
    pub sarif: Option<PathBuf>,
    /// HTML report to write.
    pub html: Option<PathBuf>,
    /// Damaged launch lines of the capture (left out; exit 2).
    pub damaged: usize,
    checker: Option<Checker>,
}

impl CheckCampaign {
    /// The campaign over `capture` (opened from `dir`).
    pub fn new(dir: &Path, capture: Capture, opts: CheckOptions) -> CheckCampaign {
        CheckCampaign {
            dir: dir.to_path_buf(),
            capture: Box::leak(Box::new(capture)),
            opts,
            json: false,
            sarif: None,
            html: None,
            damaged: 0,
            checker: None,
        }
    }

    fn launch_of(&self, unit: &Unit) -> Result<&cltrap_capture::LaunchRecord, String> {
        unit.launch_in(self.capture)
    }

    /// Writes the report files and the terminal (or JSON) report; returns the exit status.
    fn write(&self, report: &CheckReport, out: &mut dyn Write) -> Result<u8, String> {
        if let Some(path) = &self.sarif {
            super::write_sarif(path, report)?;
        }
        if let Some(path) = &self.html {
            std::fs::write(path, super::html::render(report))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        if self.json {
            let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
            let _ = writeln!(out, "{text}");
        } else {
            let _ = write!(out, "{}", super::report::render(report));
            crate::damage::note(out, self.damaged, "checked");
        }
        Ok(crate::damage::exit_code(report.exit_code(), self.damaged))
    }
}

impl Campaign for CheckCampaign {
    fn command(&self) -> &'static str {
        "check"
    }

    /// Launches in order: a worker's native engine keeps its deriver from one to the next.
    fn contiguous(&self) -> bool {
        true
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        let launches = crate::replay::select(self.capture, self.opts.ids.as_deref())
            .map_err(|e| e.to_string())?;
        let total = launches.len();
        Ok(launches
            .iter()
            .enumerate()
            .map(|(n, l)| Unit::launch(l.id, serde_json::json!({ "nth": n + 1, "of": total })))
            .collect())
    }

    fn deadline(&self) -> Duration {
        // The launch's own deadline kills its engine child; the worker answers soon after.
        self.opts.deadline + Duration::from_secs(60)
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        if self.checker.is_none() {
            self.checker = Some(Checker::new(&self.dir, &self.opts)?);
        }
        let l = self.launch_of(unit)?.clone();
        let nth = (
            unit.payload["nth"].as_u64().unwrap_or(1) as usize,
            unit.payload["of"].as_u64().unwrap_or(1) as usize,
        );
        let deadline = self.opts.deadline;
        let checker = self.checker.as_mut().ok_or("no checker")?;
        // This worker is isolated: the native engine runs here, kept between launches.
        checker.in_worker(cx.device, self.capture);
        let fallback = unit.payload["fallback"].as_str();
        // Whole lines in one write: workers on other devices write to the same stderr.
        let o = checker.launch(self.capture, &l, nth, deadline, fallback, &mut |line| {
            let _ = std::io::stderr().write_all(format!("cltrap: {line}\n").as_bytes());
        });
        serde_json::to_value(o).map_err(|e| e.to_string())
    }

    fn retry(&self, unit: &Unit, why: &Lost) -> Option<Unit> {
        // A launch whose instrumented run crashed its worker, or failed in it, goes to
        // Oclgrind, once.
        let (Lost::Crashed(reason) | Lost::Failed(reason)) = why else {
            return None;
        };
        if unit.payload.get("fallback").is_some() || self.opts.engine != super::Engine::Native {
            return None;
        }
        let mut again = unit.clone();
        again.payload["fallback"] =
            Value::from(format!("the worker ended without a result ({reason})"));
        Some(again)
    }

    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        let status = match why {
            Lost::TimedOut(_) => LaunchStatus::TimedOut {
                seconds: self.opts.deadline.as_secs(),
            },
            Lost::Crashed(w) => LaunchStatus::Failed {
                reason: format!("the check's worker ended without a result: {w}"),
            },
            Lost::Failed(w) => LaunchStatus::Failed {
                reason: format!("the check could not run: {w}"),
            },
        };
        match self.launch_of(unit) {
            Ok(l) => serde_json::to_value(LaunchOutcome::ended(l, &self.opts, status))
                .unwrap_or(Value::Null),
            Err(_) => Value::Null,
        }
    }

    fn progress_line(&self, _unit: &Unit, _done: &Finished) -> Option<String> {
        None
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        _complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        let mut outcomes = Vec::with_capacity(results.len());
        for (u, f) in results {
            let o: LaunchOutcome = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!(
                    "the campaign's result for {} is not a launch's check: {e}",
                    u.id
                )
            })?;
            outcomes.push(o);
        }
        let report = assemble(&outcomes, &self.opts);
        self.write(&report, out)
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        self.sarif.iter_mut().chain(self.html.iter_mut()).collect()
    }

    fn home(&self) -> PathBuf {
        self.dir.join("campaigns")
    }
}
