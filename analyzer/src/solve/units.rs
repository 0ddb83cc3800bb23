//! `cltrap solve SUITE` as a campaign of the runner ([`crate::campaign`]): one unit per
//! kernel, in worker processes on every device, in shards, resumable; the suite's new cases
//! and `fuzz.json` are written from the units' results in kernel order.
//!
//! The unit is the kernel, not the branch: the branches of one kernel are solved in order
//! against one campaign (its seeds run first), and a case solved for one branch often covers
//! others, which are then not solved for; solving them apart would give other cases and
//! other verdicts than one run.
//!
//! A unit writes the kernel's confirmed cases as a capture into its folder,
//! `<SUITE>/campaigns/solve-units-<key>/<unit id>/cases` (`key`: a digest of the arguments);
//! the report appends them to the suite in kernel order ([`suite::append_capture`]), so the
//! suite gets the launch ids one in-order run gives. Only a complete report writes the suite.

use super::SolveArgs;
use crate::campaign::{self, CampaignArgs, Finished, Lost, Unit, UnitContext};
use crate::executor::{DeviceSelector, Session};
use crate::fuzz;
use crate::fuzz::suite::{self, KernelReport};
use crate::fuzz::target::{Settings, Target};
use cltrap_capture::Capture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What solving one kernel gave: a unit's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SolvedKernel {
    /// The kernel's row name.
    pub row: String,
    /// Why it could not be solved for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its report; the cases from `from` on are the solved ones (launch ids in the unit's
    /// cases capture), those before it are the suite's (positions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<KernelReport>,
    /// The first solved case.
    #[serde(default)]
    pub from: usize,
    /// Cases of the campaign (the suite's and the solved ones).
    #[serde(default)]
    pub cases: usize,
    /// Wall time in milliseconds (a timing).
    #[serde(default)]
    pub total_ms: f64,
}

/// The solving campaign over the kernels of a suite.
pub struct SolveUnits {
    args: SolveArgs,
    capture: Capture,
    targets: Option<Vec<Target>>,
    session: Option<Session>,
    units_dir: PathBuf,
}

impl SolveUnits {
    /// The campaign over `args.suite`.
    pub fn new(args: &SolveArgs) -> Result<SolveUnits, String> {
        let capture = Capture::open(&args.suite).map_err(|e| e.to_string())?;
        let mut a = args.clone();
        a.campaign = CampaignArgs::default();
        let key = blake3::hash(format!("{a:?}").as_bytes()).to_hex()[..16].to_string();
        Ok(SolveUnits {
            args: args.clone(),
            capture,
            targets: None,
            session: None,
            units_dir: args
                .suite
                .join("campaigns")
                .join(format!("solve-units-{key}")),
        })
    }

    /// The targets, listed on `device` (derived inputs are re-created there).
    fn targets(&mut self, device: &DeviceSelector) -> Result<&[Target], String> {
        if self.targets.is_none() {
            if self.session.is_none() {
                self.session = Some(Session::open(device).map_err(|e| e.to_string())?);
            }
            let t = fuzz::targets_from_capture(
                &self.capture,
                self.args.kernel.as_deref(),
                self.session.as_ref(),
            )
            .map_err(|e| e.to_string())?;
            self.targets = Some(t);
        }
        Ok(self.targets.as_deref().unwrap_or_default())
    }

    fn settings(&self, device: &DeviceSelector) -> Result<Settings, String> {
        Ok(Settings {
            budget: fuzz::campaign::Budget {
                executions: None,
                time: None,
                fruitless: Some(0),
                exhaust: false,
            },
            seed: 1,
            solve: true,
            worker: if self.args.in_process {
                None
            } else {
                Some(std::env::current_exe().map_err(|e| e.to_string())?)
            },
            watchdog: Duration::from_secs(10),
            progress: false,
            device: device.clone(),
            limits: fuzz::limits(self.args.loop_bound, self.args.solver_time),
            full_launches: true,
            check_cases: false,
        })
    }
}

/// Solves one kernel; its solved cases go to `udir/cases`.
fn kernel(session: &Session, t: Target, settings: &Settings, udir: &Path) -> SolvedKernel {
    let mut r = SolvedKernel {
        row: t.row_name.clone(),
        ..SolvedKernel::default()
    };
    let o = match fuzz::run_target(session, t, settings) {
        Ok(o) => o,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.from = o
        .campaign
        .cases
        .iter()
        .position(|c| c.origin.starts_with("solved"))
        .unwrap_or(o.campaign.cases.len());
    match fuzz::write_outcome(&udir.join("cases"), &o, r.from, session.info()) {
        Ok(report) => r.report = Some(report),
        Err(e) => r.error = Some(e.to_string()),
    }
    r.cases = o.campaign.cases.len();
    r.total_ms = o.total.as_secs_f64() * 1e3;
    r
}

impl campaign::Campaign for SolveUnits {
    fn command(&self) -> &'static str {
        "solve"
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        let device = self.args.device.clone();
        let targets = self.targets(&device)?;
        let mut ids: Vec<String> = Vec::with_capacity(targets.len());
        let mut units = Vec::with_capacity(targets.len());
        for (index, t) in targets.iter().enumerate() {
            let base = format!("kernel-{}", suite::findings_dir_name(&t.row_name));
            let mut id = base.clone();
            let mut n = 2;
            while ids.contains(&id) {
                id = format!("{base}-{n}");
                n += 1;
            }
            ids.push(id.clone());
            units.push(Unit {
                id,
                payload: serde_json::json!({ "index": index, "row": t.row_name }),
            });
        }
        Ok(units)
    }

    fn deadline(&self) -> Duration {
        // Silent until the kernel is solved: the seeds, the solver, the confirming runs.
        Duration::from_secs_f64(self.args.solver_time.max(0.0)) + Duration::from_secs(1800)
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        let index = unit.payload["index"].as_u64().unwrap_or(u64::MAX) as usize;
        let row = unit.payload["row"].as_str().unwrap_or_default().to_string();
        let t = self
            .targets(cx.device)?
            .get(index)
            .filter(|t| t.row_name == row)
            .cloned()
            .ok_or_else(|| format!("the suite has no kernel {row} at {index} any more"))?;
        let settings = self.settings(cx.device)?;
        let session = self.session.as_ref().ok_or("no device")?;
        // Never through a link planted in a campaign folder that came with the input.
        let udir = crate::campaign::runner::unit_folder(&self.units_dir, &unit.id)?;
        // What an earlier, killed run of this unit left.
        let _ = std::fs::remove_dir_all(&udir);
        serde_json::to_value(kernel(session, t, &settings, &udir)).map_err(|e| e.to_string())
    }

    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        let r = SolvedKernel {
            row: unit.payload["row"].as_str().unwrap_or(&unit.id).to_string(),
            error: Some(format!("its solving ended without a result: {why}")),
            ..SolvedKernel::default()
        };
        serde_json::to_value(r).unwrap_or(Value::Null)
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        let mut all = suite::read_report(&self.args.suite);
        let mut reports = Vec::new();
        let mut rows = Vec::new();
        let mut failed = false;
        for (u, f) in results {
            let r: SolvedKernel = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!("the campaign's result for {} is not a kernel's: {e}", u.id)
            })?;
            if let Some(e) = &r.error {
                failed = true;
                let _ = writeln!(
                    out,
                    "kernel {}: {}",
                    crate::list::escape_controls(&r.row),
                    crate::list::escape_controls(e)
                );
                continue;
            }
            let mut report = r
                .report
                .ok_or_else(|| format!("the campaign's result for {} has no report", u.id))?;
            let mut solved: Vec<_> = report.cases.split_off(r.from.min(report.cases.len()));
            if complete {
                // Never through a link planted in a campaign folder that came with the suite.
                let udir = crate::campaign::runner::unit_folder(&self.units_dir, &u.id)?;
                let ids = suite::append_capture(&udir.join("cases"), &self.args.suite)
                    .map_err(|e| format!("kernel {}: its cases: {e}", r.row))?;
                for c in solved.iter_mut() {
                    c.0 = *ids.get(&c.0).unwrap_or(&c.0);
                }
            }
            if let Some(old) = all.kernels.iter().find(|k| k.kernel == report.kernel) {
                report.cases = old.cases.clone();
            }
            report.cases.extend(solved);
            rows.push((r.cases, suite::millis(r.total_ms)));
            reports.push(report);
        }
        fuzz::print_slots(out, &reports);
        for r in &reports {
            if !r.unsupported.is_empty() {
                let _ = writeln!(
                    out,
                    "{}: the solver does not model: {}",
                    r.kernel,
                    r.unsupported.join("; ")
                );
            }
        }
        let table: Vec<_> = reports
            .iter()
            .zip(&rows)
            .map(|(r, (n, t))| (r, *n, *t))
            .collect();
        fuzz::print_table(out, &table);
        if complete {
            all.kernels
                .retain(|k| !reports.iter().any(|r| r.kernel == k.kernel));
            all.kernels.extend(reports);
            suite::write_report(&self.args.suite, &all).map_err(|e| e.to_string())?;
        } else {
            let _ = writeln!(
                out,
                "no case written to {}: the campaign was interrupted (the same command with --resume writes them)",
                self.args.suite.display()
            );
        }
        Ok(if failed { 1 } else { 0 })
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        // The suite is the input and the output: the merge completes it where it is.
        Vec::new()
    }

    fn home(&self) -> PathBuf {
        self.args.suite.join("campaigns")
    }
}

/// `cltrap solve SUITE`.
pub fn cli(args: &SolveArgs, out: &mut dyn Write) -> Result<u8, String> {
    let mut c = SolveUnits::new(args)?;
    crate::campaign::runner::drive(&mut c, &args.campaign, &args.device, out)
}
