//! `cltrap fuzz` as a campaign of the runner ([`crate::campaign`]): one unit per kernel (its
//! whole campaign: fuzzing, `--solve`, the checks of its cases, locating its findings), run
//! in worker processes on every device, in shards, resumable; the suite and the report are
//! written from the units' results in kernel order, whatever ran where.
//!
//! A kernel's campaign depends only on the arguments and the kernel: its random seed is
//! `--seed`, and `--budget` is shared evenly among the kernels ([`share`]) instead of each
//! kernel getting what the ones before it left. With a budget of executions (or none) the
//! units' results are the same in every run; with a wall-time budget what a kernel finds
//! depends on the machine's speed and load, and the report says so.
//!
//! A unit's result ([`KernelResult`]) is the kernel's report and the lines it says; with
//! `--out`, the worker also writes the kernel's kept cases and its findings' inputs as two
//! captures into the unit's folder, `<home>/fuzz-units-<key>/<unit id>/{cases,findings}`
//! (`home`: the capture's `campaigns/`; for a kernel file the suite's `campaigns/`, or the
//! user's own `$XDG_CACHE_HOME/cltrap/campaigns/` (private, 0700) without `--out`; `key`: a
//! digest of the command's arguments, so every process of the campaign, shards and `cltrap merge` included, finds
//! them there whatever `--campaign-dir` says). The report
//! ([`crate::campaign::Campaign::report`]) appends them to the suite
//! ([`suite::append_capture`]) in kernel order and renumbers the report's launch ids, so the
//! suite is the one a single in-order run writes. The suite is written only by a
//! complete report: after Ctrl-C, `--resume` writes it once, whole.
//!
//! The executions inside a unit keep their own worker ([`super::runner`]): it serves
//! thousands of executions per second against a program built once and buffers kept
//! resident, and each execution depends on the campaign's state so far (its corpus, its
//! coverage), so executions are not independent units to journal, shard or hand to another
//! device; they share nothing with the runner's protocol but the idea of JSON lines.

use super::suite::{self, KernelReport, SuiteProgram};
use super::{
    file_targets, locate_findings, run_target, targets_from_capture, whole_budget, write_outcome,
    FuzzArgs, Settings, Target,
};
use crate::campaign::{self, CampaignArgs, Finished, Lost, Unit, UnitContext};
use crate::executor::{DeviceSelector, Session};
use crate::fuzz::campaign::Budget;
use cltrap_capture::Capture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A line a kernel's unit says on the terminal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Said {
    /// A line as it is.
    Line(String),
    /// A line naming the kernel's findings folder in the suite (`before`, the folder,
    /// `after`): where the suite goes is known only when the report is written (`cltrap
    /// merge` writes it into its own folder).
    AtFindings {
        /// Text before the folder.
        before: String,
        /// Text after it.
        after: String,
    },
    /// A finding the bounds check located on its saved input (`launch`: its id in the unit's
    /// findings capture, renumbered as the suite's findings folder gets it).
    Located {
        /// The finding and where it overran.
        shown: String,
        /// Launch id in the unit's findings capture.
        launch: u64,
    },
}

/// What one kernel's campaign gave: a unit's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelResult {
    /// The kernel's row name.
    pub row: String,
    /// Its share of `--budget` was nothing: not fuzzed.
    #[serde(default)]
    pub unfuzzed: bool,
    /// Why its campaign could not run or finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it says on the terminal, in order.
    #[serde(default)]
    pub said: Vec<Said>,
    /// Its report (case ids: launch ids in the unit's cases capture with `--out`, indices
    /// without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<KernelReport>,
    /// Kept cases.
    #[serde(default)]
    pub cases: usize,
    /// Wall time in milliseconds, compile included (a timing).
    #[serde(default)]
    pub total_ms: f64,
    /// The unit's folder holds its cases capture.
    #[serde(default)]
    pub wrote_cases: bool,
    /// The unit's folder holds its findings capture.
    #[serde(default)]
    pub wrote_findings: bool,
}

/// Kernel `index`'s share of `whole` among `kernels`: an even split of the executions (the
/// first ones get the remainder) and of the time. `None`: nothing left for it.
pub fn share(whole: &Budget, index: usize, kernels: usize) -> Option<Budget> {
    let k = kernels.max(1) as u64;
    let mut b = whole.clone();
    if let Some(n) = whole.executions {
        let mine = n / k + u64::from((index as u64) < n % k);
        if mine == 0 {
            return None;
        }
        b.executions = Some(mine);
    }
    if let Some(t) = whole.time {
        let mine = t / k as u32;
        if mine.is_zero() && !t.is_zero() {
            return None;
        }
        b.time = Some(mine);
    }
    Some(b)
}

/// The fuzzing campaign over the kernels of a capture or a kernel file.
pub struct FuzzUnits {
    args: FuzzArgs,
    budget: Budget,
    capture: Option<Capture>,
    targets: Option<Vec<Target>>,
    session: Option<Session>,
    notes: Vec<String>,
    damaged: usize,
    home: PathBuf,
    units_dir: PathBuf,
}

/// A digest of the command's arguments (campaign flags left out): names the folder of the
/// units' files, the same in every process of one campaign.
fn key(args: &FuzzArgs) -> String {
    let mut a = args.clone();
    a.campaign = CampaignArgs::default();
    blake3::hash(format!("{a:?}").as_bytes()).to_hex()[..16].to_string()
}

impl FuzzUnits {
    /// The campaign the arguments describe (a capture is opened; its kernels are listed
    /// when a device is open: [`crate::campaign::Campaign::units`]).
    pub fn new(args: &FuzzArgs) -> Result<FuzzUnits, String> {
        let input = args
            .input
            .as_ref()
            .ok_or("give a capture directory or a kernel file")?;
        let budget = whole_budget(args)?;
        let mut notes = Vec::new();
        let mut damaged = 0;
        let (capture, targets) = if input.is_dir() {
            let c = Capture::open_keeping_damaged(input).map_err(|e| e.to_string())?;
            // Damaged launch lines are named once and left out; the run then ends with exit 2.
            damaged = if args.campaign.unit_worker {
                c.damaged.len()
            } else {
                crate::damage::report(&c, "fuzzing")
            };
            if let Some(why) = crate::damage::nothing_left(&c) {
                return Err(why);
            }
            (Some(c), None)
        } else {
            (None, Some(file_targets(args, input, &mut notes)?))
        };
        let home = match (&capture, &args.out) {
            (Some(_), _) => input.join("campaigns"),
            (None, Some(out)) => out.join("campaigns"),
            // Private to the user: a fixed folder in `/tmp` another user could prepare.
            (None, None) => crate::check::private::private_cache_dir("campaigns")?,
        };
        let units_dir = home.join(format!("fuzz-units-{}", key(args)));
        Ok(FuzzUnits {
            args: args.clone(),
            budget,
            capture,
            targets,
            session: None,
            notes,
            damaged,
            home,
            units_dir,
        })
    }

    /// The targets, listed on `device` when the input is a capture (its derived inputs are
    /// re-created there).
    fn targets(&mut self, device: &DeviceSelector) -> Result<&[Target], String> {
        if self.targets.is_none() {
            let capture = self.capture.as_ref().ok_or("no input")?;
            if self.session.is_none() {
                self.session = Some(Session::open(device).map_err(|e| e.to_string())?);
            }
            let mut t =
                targets_from_capture(capture, self.args.kernel.as_deref(), self.session.as_ref())
                    .map_err(|e| e.to_string())?;
            if self.args.captured_ranges {
                super::target::bound_targets(capture, &mut t);
            }
            self.targets = Some(t);
        }
        Ok(self.targets.as_deref().unwrap_or_default())
    }

    fn settings(&self, budget: Budget, device: &DeviceSelector) -> Result<Settings, String> {
        let a = &self.args;
        Ok(Settings {
            budget,
            seed: a.seed,
            solve: a.solve,
            worker: if a.in_process {
                None
            } else {
                Some(std::env::current_exe().map_err(|e| e.to_string())?)
            },
            watchdog: Duration::from_secs_f64(a.watchdog.max(0.1)),
            // The runner's bar is the campaign's progress.
            progress: false,
            device: device.clone(),
            limits: super::limits(a.loop_bound, a.solver_time),
            full_launches: a.full_launches,
            check_cases: !a.no_locate,
        })
    }
}

/// Unit ids of the targets: `kernel-NAME` (the row name as its findings folder is named).
fn unit_ids(targets: &[Target]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::with_capacity(targets.len());
    for t in targets {
        let base = format!("kernel-{}", suite::findings_dir_name(&t.row_name));
        let mut id = base.clone();
        let mut n = 2;
        while ids.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        ids.push(id);
    }
    ids
}

/// Runs one kernel's campaign and writes its files into `udir` (with `--out`).
fn kernel(
    session: &Session,
    t: Target,
    settings: &Settings,
    args: &FuzzArgs,
    udir: &Path,
) -> KernelResult {
    let name = t.row_name.clone();
    let mut r = KernelResult {
        row: name.clone(),
        ..KernelResult::default()
    };
    let started = Instant::now();
    let o = match run_target(session, t, settings) {
        Ok(o) => o,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    let mut say = |s: String| r.said.push(Said::Line(s));
    if let Some(note) = &o.campaign.reduced_note {
        say(format!("kernel {name}: {note}"));
    }
    if o.campaign.reduced.is_some() {
        let (ok, failed) = o.campaign.confirmed;
        say(format!(
            "kernel {name}: {ok} case(s) confirmed on the whole launch, {failed} failed there \
             (findings)"
        ));
        if o.campaign.subset_only > 0 {
            say(format!(
                "kernel {name}: warning: {} case(s) reached on the reduced launch what they do \
                 not reach on the whole launch (work-groups that depend on each other or on \
                 timing?); the suite records the whole launch",
                o.campaign.subset_only
            ));
        }
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for f in &o.campaign.findings {
        match kinds.iter_mut().find(|k| k.0 == f.what) {
            Some(k) => k.1 += 1,
            None => kinds.push((&f.what, 1)),
        }
    }
    for (what, n) in kinds {
        say(format!("finding in {name}: {what} ({n} input(s))"));
    }
    if let Some(why) = &o.campaign.no_case {
        let solve = if settings.solve {
            "; nothing to solve from"
        } else {
            ""
        };
        say(format!("kernel {name}: no test case: {why}{solve}"));
    }
    let program = SuiteProgram {
        source: &o.target.source,
        options: &o.target.options,
        headers: &o.target.headers,
    };
    let report = match &args.out {
        Some(_) => {
            let mut located = Vec::new();
            if !o.campaign.findings.is_empty() {
                let fdir = udir.join("findings");
                let n = match suite::write_findings(&fdir, &program, &o.campaign, session.info()) {
                    Ok(n) => n,
                    Err(e) => {
                        r.error = Some(e.to_string());
                        return r;
                    }
                };
                r.wrote_findings = true;
                r.said.push(Said::AtFindings {
                    before: format!("{} finding input(s) of {name} written to ", n.len()),
                    after: " (cltrap show / replay)".into(),
                });
                // Locating runs Oclgrind on every kind of finding: not past the kernel's
                // share of a time budget.
                let spent = settings
                    .budget
                    .time
                    .is_some_and(|limit| started.elapsed() >= limit);
                if !args.no_locate && spent {
                    r.said.push(Said::AtFindings {
                        before: format!(
                            "note: the overrunning lines of {name}'s findings were not looked \
                             for: the campaign's --budget ran out (`cltrap check "
                        ),
                        after: "` locates them)".into(),
                    });
                } else if !args.no_locate {
                    located = locate_findings(&fdir, &o.campaign, &n, &mut r.said);
                }
            }
            match write_outcome(&udir.join("cases"), &o, 0, session.info()) {
                Ok(mut rep) => {
                    r.wrote_cases = true;
                    rep.overruns = located;
                    rep
                }
                Err(e) => {
                    r.error = Some(e.to_string());
                    return r;
                }
            }
        }
        None => o.report.clone(),
    };
    if args.timing {
        let x = &report;
        r.said.push(Said::Line(format!(
            "timing {}: compile {:.1} ms, saturation {:.1} ms (compile excluded), {} executions \
             in {:.1} ms ({} confirmation runs in {:.1} ms), solve {:.1} ms, total {:.1} ms, \
             {} build(s)",
            name,
            x.compile_ms,
            x.saturation_ms,
            x.executions,
            x.run_ms,
            x.confirm_runs,
            x.confirm_ms,
            x.solve_ms,
            o.total.as_secs_f64() * 1e3,
            x.compiles
        )));
    }
    r.cases = o.campaign.cases.len();
    r.total_ms = o.total.as_secs_f64() * 1e3;
    r.report = Some(report);
    r
}

impl campaign::Campaign for FuzzUnits {
    fn command(&self) -> &'static str {
        "fuzz"
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        let device = self.args.device.clone();
        let targets = self.targets(&device)?;
        let ids = unit_ids(targets);
        let of = targets.len();
        Ok(targets
            .iter()
            .zip(ids)
            .enumerate()
            .map(|(index, (t, id))| Unit {
                id,
                payload: serde_json::json!({ "index": index, "of": of, "row": t.row_name }),
            })
            .collect())
    }

    fn deadline(&self) -> Duration {
        // A kernel's campaign is silent until it ends: its share of the time (or a long
        // day without one), the solver, the bounds checks of its cases and findings.
        let check = crate::check::locate::DEFAULT_BUDGET;
        self.budget.time.unwrap_or(Duration::from_secs(6 * 3600))
            + Duration::from_secs_f64(self.args.solver_time.max(0.0))
            + check * (super::CHECK_ROUNDS as u32 + 1)
            + Duration::from_secs(600)
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        let index = unit.payload["index"].as_u64().unwrap_or(u64::MAX) as usize;
        let row = unit.payload["row"].as_str().unwrap_or_default().to_string();
        let targets = self.targets(cx.device)?;
        let of = targets.len();
        let t = targets
            .get(index)
            .filter(|t| t.row_name == row)
            .cloned()
            .ok_or_else(|| format!("the input has no kernel {row} at {index} any more"))?;
        let result = match share(&self.budget, index, of) {
            None => KernelResult {
                row,
                unfuzzed: true,
                ..KernelResult::default()
            },
            Some(budget) => {
                let settings = self.settings(budget, cx.device)?;
                if self.session.is_none() {
                    self.session = Some(Session::open(cx.device).map_err(|e| e.to_string())?);
                }
                let session = self.session.as_ref().ok_or("no device")?;
                // Never through a link planted in a campaign folder that came with the input.
                let udir = crate::campaign::runner::unit_folder(&self.units_dir, &unit.id)?;
                // What an earlier, killed run of this unit left.
                let _ = std::fs::remove_dir_all(&udir);
                kernel(session, t, &settings, &self.args, &udir)
            }
        };
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    fn lost(&self, unit: &Unit, why: &Lost) -> Value {
        let r = KernelResult {
            row: unit.payload["row"].as_str().unwrap_or(&unit.id).to_string(),
            error: Some(format!("its campaign ended without a result: {why}")),
            ..KernelResult::default()
        };
        serde_json::to_value(r).unwrap_or(Value::Null)
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        for n in &self.notes {
            let _ = writeln!(out, "{n}");
        }
        let kernels = self.targets.as_ref().map_or(results.len(), Vec::len);
        if let (Some(b), Some(_)) = (&self.args.budget, self.budget.time) {
            let _ = writeln!(
                out,
                "note: --budget {b} is wall time, shared evenly by the {kernels} kernel(s): what \
                 each kernel's campaign found depends on the machine's speed and load (a budget \
                 of executions does not)"
            );
        }
        let suite_dir = self.args.out.clone().filter(|_| complete);
        let mut reports = Vec::new();
        let mut rows = Vec::new();
        let mut failed = false;
        let mut unfuzzed: Vec<String> = Vec::new();
        for (u, f) in results {
            let r: KernelResult = serde_json::from_value(f.result.clone()).map_err(|e| {
                format!("the campaign's result for {} is not a kernel's: {e}", u.id)
            })?;
            if r.unfuzzed {
                unfuzzed.push(r.row);
                continue;
            }
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
            // Never through a link planted in a campaign folder that came with the input.
            let udir = crate::campaign::runner::unit_folder(&self.units_dir, &u.id)?;
            // The folder is named from the target this run computed, never from a result that
            // may have been read back from a journal (input: its row may name any path).
            let row = u.payload["row"].as_str().unwrap_or(&u.id);
            let findings = suite::findings_dir_name(row);
            if !cltrap_capture::safe_open::is_plain_name(&findings) {
                return Err(format!(
                    "kernel {}: its findings folder would be named {:?}, which is not a plain name",
                    crate::list::clip(row, 64),
                    crate::list::clip(&findings, 64)
                ));
            }
            let fdir = self
                .args
                .out
                .as_ref()
                .map(|d| d.join("findings").join(&findings));
            let mut fids = BTreeMap::new();
            if let (Some(_), Some(fdir), true) = (&suite_dir, &fdir, r.wrote_findings) {
                fids = suite::append_capture(&udir.join("findings"), fdir)
                    .map_err(|e| format!("kernel {}: its findings: {e}", r.row))?;
            }
            let shown_fdir = fdir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            for s in &r.said {
                let _ = match s {
                    Said::Line(l) => writeln!(out, "{}", crate::list::escape_controls(l)),
                    Said::AtFindings { before, after } => {
                        writeln!(out, "{before}{shown_fdir}{after}")
                    }
                    Said::Located { shown, launch } => writeln!(
                        out,
                        "finding in {}: {} (its input: launch {} of {shown_fdir})",
                        crate::list::escape_controls(&r.row),
                        crate::list::escape_controls(shown),
                        fids.get(launch).unwrap_or(launch)
                    ),
                };
            }
            let mut report = r
                .report
                .ok_or_else(|| format!("the campaign's result for {} has no report", u.id))?;
            for o in report.overruns.iter_mut() {
                o.launch = *fids.get(&o.launch).unwrap_or(&o.launch);
            }
            if let (Some(dir), true) = (&suite_dir, r.wrote_cases) {
                let ids = suite::append_capture(&udir.join("cases"), dir)
                    .map_err(|e| format!("kernel {}: its cases: {e}", r.row))?;
                for c in report.cases.iter_mut() {
                    c.0 = *ids.get(&c.0).unwrap_or(&c.0);
                }
            }
            rows.push((r.cases, suite::millis(r.total_ms)));
            reports.push(report);
        }
        if !unfuzzed.is_empty() {
            let _ = writeln!(
                out,
                "not fuzzed: {} of {kernels} kernel(s) ({}): the campaign's --budget ran out before them",
                unfuzzed.len(),
                unfuzzed.join(", ")
            );
        }
        super::print_slots(out, &reports);
        let table: Vec<(&KernelReport, usize, Duration)> = reports
            .iter()
            .zip(&rows)
            .map(|(r, (n, t))| (r, *n, *t))
            .collect();
        super::print_table(out, &table);
        match &self.args.out {
            Some(dir) if !complete => {
                let _ = writeln!(
                    out,
                    "no suite written to {}: the campaign was interrupted (the same command with --resume writes it)",
                    dir.display()
                );
            }
            // Nothing ran (e.g. the instrumented program did not build): the reason was
            // said above; there is no suite to report on.
            Some(dir) if reports.is_empty() => {
                let _ = writeln!(
                    out,
                    "no suite written to {}: no kernel was fuzzed",
                    dir.display()
                );
            }
            Some(dir) => {
                let mut all = suite::read_report(dir);
                all.kernels
                    .retain(|k| !reports.iter().any(|r| r.id() == k.id()));
                all.kernels.extend(reports.iter().cloned());
                suite::write_report(dir, &all).map_err(|e| e.to_string())?;
                let _ = writeln!(out, "suite written to {}", dir.display());
            }
            None => {}
        }
        let code = if failed { 1 } else { 0 };
        Ok(crate::damage::exit_code(code, self.damaged))
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        self.args.out.iter_mut().collect()
    }

    fn home(&self) -> PathBuf {
        self.home.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(executions: Option<u64>, time: Option<Duration>) -> Budget {
        Budget {
            executions,
            time,
            fruitless: None,
            exhaust: false,
        }
    }

    #[test]
    fn the_budget_is_shared_evenly_and_by_position_only() {
        let b = budget(Some(10), None);
        let got: Vec<Option<u64>> = (0..4)
            .map(|i| share(&b, i, 4).and_then(|s| s.executions))
            .collect();
        assert_eq!(got, vec![Some(3), Some(3), Some(2), Some(2)]);
        // One execution over three kernels: the first gets it, the others are not fuzzed.
        assert_eq!(
            share(&budget(Some(1), None), 0, 3).and_then(|s| s.executions),
            Some(1)
        );
        assert!(share(&budget(Some(1), None), 1, 3).is_none());
        let t = share(&budget(None, Some(Duration::from_secs(9))), 2, 3).unwrap();
        assert_eq!(t.time, Some(Duration::from_secs(3)));
        assert!(share(&budget(None, None), 5, 6).is_some());
    }
}

/// `cltrap fuzz`: the execution worker (`--worker`), the interface file (`--init`), or the
/// campaign over the kernels ([`units::FuzzUnits`], run by [`crate::campaign::runner`]).
pub fn cli(args: &FuzzArgs, out: &mut dyn Write) -> Result<u8, String> {
    let device = args.device.clone();
    if args.worker {
        let session = Session::open(&device).map_err(|e| e.to_string())?;
        return super::runner::serve(&session)
            .map(|_| 0)
            .map_err(|e| e.to_string());
    }
    let Some(input) = &args.input else {
        return Err("give a capture directory or a kernel file".into());
    };
    if args.init && !input.is_dir() {
        let source = std::fs::read(input)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
        let folder = input.parent().unwrap_or(Path::new("."));
        let (headers, options) =
            crate::headers::Headers::from_disk(&source, &args.build_options, folder)
                .map_err(|e| e.to_string())?;
        let program = cltrap_kernel::parse_program(&source, &headers.options(&options))
            .map_err(|e| e.to_string())?;
        let name = match &args.kernel {
            Some(k) => k.clone(),
            None => program
                .kernels()
                .next()
                .map(|k| k.name.clone())
                .ok_or("the file defines no kernel")?,
        };
        let iface = cltrap_kernel::interface::derive(&program, &name).map_err(|e| e.to_string())?;
        let spec = super::spec::initial(&iface, &args.build_options);
        let text = serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "{text}");
        return Ok(0);
    }
    let mut c = FuzzUnits::new(args)?;
    crate::campaign::runner::drive(&mut c, &args.campaign, &device, out)
}
