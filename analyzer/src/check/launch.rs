//! One launch's check, as a value that can cross a process: [`Checker::launch`] runs it (the
//! native engine in a child, Oclgrind for what that cannot do) and gives a [`LaunchOutcome`];
//! [`assemble`] turns the outcomes of a selection, in order, into the [`CheckReport`].
//!
//! Splitting the two lets `cltrap check` run launches as campaign units (in workers, on several
//! devices, in shards) and still write the report one in-order run writes: everything the
//! report counts once per kernel, or keeps per place, is decided in `assemble`, in launch order.

use super::finding::{self, Diagnostic, Family};
use super::{
    api, native, native_outcome, oclgrind, private, program_source, run_native, AccessCount,
    CheckOptions, CheckReport, Child, Engine, LaunchCheck, LaunchStatus, NativeOutcome, NotChecked,
};
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::sanitize::Unchecked;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What checking one launch gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchOutcome {
    /// Launch id.
    pub id: u64,
    /// Kernel.
    pub kernel: String,
    /// Program hash.
    pub program: String,
    /// How it ended.
    pub status: LaunchStatus,
    /// Whether the native engine handed it to Oclgrind (or a variant ran there).
    pub engine: EngineName,
    /// Device time of the instrumented kernel (a timing).
    pub kernel_ns: Option<u64>,
    /// Device time uninstrumented (a timing).
    pub baseline_kernel_ns: Option<u64>,
    /// Checks switched off, and why.
    pub notes: Vec<String>,
    /// Access sites checked (native engine).
    pub checked_sites: Option<usize>,
    /// Accesses not checked (native engine), one entry per access.
    pub unchecked: Option<Vec<Unchecked>>,
    /// The launch's diagnostics, of the families asked for.
    pub diagnostics: Vec<Diagnostic>,
    /// The program's source, when the capture has it.
    pub source: Option<String>,
}

/// The engine whose result a launch's is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineName {
    /// The instrumented kernel on the device.
    Native,
    /// The simulator.
    Oclgrind,
}

impl From<Engine> for EngineName {
    fn from(e: Engine) -> Self {
        match e {
            Engine::Native => EngineName::Native,
            Engine::Oclgrind => EngineName::Oclgrind,
        }
    }
}

impl EngineName {
    fn name(self) -> &'static str {
        match self {
            EngineName::Native => "native",
            EngineName::Oclgrind => "oclgrind",
        }
    }
}

impl LaunchOutcome {
    /// A launch left out with `reason` (a budget that ran out, a launch not replayable).
    pub fn skipped(l: &LaunchRecord, opts: &CheckOptions, reason: String) -> LaunchOutcome {
        LaunchOutcome::ended(l, opts, LaunchStatus::Skipped { reason })
    }

    /// A launch that ended with `status` and nothing else (its worker crashed or hung).
    pub fn ended(l: &LaunchRecord, opts: &CheckOptions, status: LaunchStatus) -> LaunchOutcome {
        LaunchOutcome {
            id: l.id,
            kernel: l.kernel.clone(),
            program: l.program.clone(),
            status,
            engine: opts.engine.into(),
            kernel_ns: None,
            baseline_kernel_ns: None,
            notes: vec![],
            checked_sites: None,
            unchecked: None,
            diagnostics: vec![],
            source: None,
        }
    }
}

/// Checks launches one at a time; keeps what later launches reuse (Oclgrind's private
/// vendors folder, made on first use and removed when the checker drops).
pub struct Checker {
    exe: PathBuf,
    dir: PathBuf,
    opts: CheckOptions,
    oclgrind: Option<Result<PathBuf, String>>,
    vendors: Option<tempfile::TempDir>,
    /// The native engine in this process (a campaign worker, itself isolated), kept between
    /// launches; `None` until first used. Without it, each launch's native check runs in a
    /// `check-worker` child.
    in_process: Option<Option<Result<native::NativeEngine, String>>>,
    /// The capture the in-process engine checks (the campaign's, for the process's life).
    worker_capture: Option<&'static Capture>,
    /// Private folder for the derived inputs handed to Oclgrind children.
    inputs_dir: Option<tempfile::TempDir>,
}

impl Checker {
    /// A checker of the capture in `dir` with `opts`. Oclgrind is needed up front for its
    /// engine, and only on a fallback for the native one.
    pub fn new(dir: &Path, opts: &CheckOptions) -> Result<Checker, String> {
        let mut c = Checker {
            exe: std::env::current_exe().map_err(|e| format!("cannot find cltrap itself: {e}"))?,
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            oclgrind: None,
            vendors: None,
            in_process: None,
            worker_capture: None,
            inputs_dir: None,
        };
        if opts.engine == Engine::Oclgrind {
            c.icd_vendors()?;
        }
        Ok(c)
    }

    /// Points the native engine at `device` (a campaign worker's pinned device) and runs it
    /// in this process from now on, over `capture`: the caller is a worker process of its own.
    pub fn in_worker(
        &mut self,
        device: &crate::executor::DeviceSelector,
        capture: &'static Capture,
    ) {
        if self.opts.device != *device || self.in_process.is_none() {
            self.opts.device = device.clone();
            self.in_process = Some(None);
        }
        self.worker_capture = Some(capture);
    }

    /// The inputs of `l` that the capture keeps only as digests, for its Oclgrind child, as
    /// files: re-created on this campaign worker's own device by its native engine's deriver
    /// (Oclgrind re-executing the launches before would take hours). None outside a campaign
    /// worker (the child then says the launch cannot be checked) or when `l` has none.
    fn derived_inputs(&mut self, l: &LaunchRecord) -> Result<Vec<(u32, PathBuf)>, String> {
        let digest_only = l.args.iter().any(|a| match a {
            cltrap_capture::ArgRecord::Buffer { before, .. }
            | cltrap_capture::ArgRecord::Image { before, .. } => {
                matches!(before, cltrap_capture::Content::Digest { .. })
            }
            _ => false,
        });
        let (true, Some(slot), Some(capture)) =
            (digest_only, self.in_process.as_mut(), self.worker_capture)
        else {
            return Ok(Vec::new());
        };
        let device = &self.opts.device;
        let engine = slot
            .get_or_insert_with(|| native::NativeEngine::open(device).map_err(|(_, m)| m))
            .as_mut()
            .map_err(|m| format!("its derived inputs need a device to re-create them: {m}"))?;
        let got = engine
            .derived(capture, l)
            .map_err(|e| format!("its derived inputs could not be re-created: {e}"))?;
        if got.is_empty() {
            return Ok(Vec::new());
        }
        let dir = match &self.inputs_dir {
            Some(d) => d.path().to_path_buf(),
            None => {
                let d = private::temp_dir("cltrap-check-")
                    .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
                self.inputs_dir.insert(d).path().to_path_buf()
            }
        };
        got.iter()
            .map(|(arg, bytes)| {
                let path = dir.join(format!("{}-{arg}.bin", l.id));
                std::fs::write(&path, bytes.as_slice())
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                Ok((*arg, path))
            })
            .collect()
    }

    /// The native engine's outcome for `l`, in this process or in a child.
    fn native(&mut self, l: &LaunchRecord, deadline: Duration) -> NativeOutcome {
        let flags = native::flags(&self.opts.families);
        let (Some(slot), Some(capture)) = (self.in_process.as_mut(), self.worker_capture) else {
            return run_native(&self.exe, &self.dir, l.id, &flags, &self.opts, deadline);
        };
        let started = Instant::now();
        let engine = slot.get_or_insert_with(|| {
            native::NativeEngine::open(&self.opts.device).map_err(|(_, m)| m)
        });
        let reply = match engine {
            Ok(e) => e
                .check(capture, l.id, flags, self.opts.baseline)
                .unwrap_or_else(|(o, m)| native::NativeReply::failed(o, m)),
            Err(m) => native::NativeReply::failed("error", m.clone()),
        };
        native_outcome(reply, started.elapsed().as_millis() as u64)
    }

    /// The private vendors folder naming Oclgrind as the only platform.
    fn icd_vendors(&mut self) -> Result<PathBuf, String> {
        if self.oclgrind.is_none() {
            let made = (|| {
                let icd = oclgrind::find_icd()?;
                let dir = private::temp_dir("cltrap-check-")
                    .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
                oclgrind::vendors_dir(&icd, dir.path())
                    .map_err(|e| format!("cannot write {}: {e}", dir.path().display()))?;
                let path = dir.path().to_path_buf();
                self.vendors = Some(dir);
                Ok(path)
            })();
            self.oclgrind = Some(made);
        }
        self.oclgrind
            .clone()
            .unwrap_or_else(|| Err("no Oclgrind".into()))
    }

    /// Checks launch `l` (number `nth.0` of `nth.1` in the selection) with `deadline`,
    /// telling `progress` what it does. With `fallback` (why the native engine could not:
    /// it crashed the worker that ran it in-process), the launch goes to Oclgrind.
    pub fn launch(
        &mut self,
        capture: &Capture,
        l: &LaunchRecord,
        nth: (usize, usize),
        deadline: Duration,
        fallback: Option<&str>,
        progress: &mut dyn FnMut(&str),
    ) -> LaunchOutcome {
        let opts = self.opts.clone();
        let wants = |f: Family| opts.families.is_empty() || opts.families.contains(&f);
        let checks = oclgrind::Checks {
            races: wants(Family::Races),
            uninit: wants(Family::Uninit),
            quick: opts.quick,
        };
        let items: u64 = l.global_size.iter().product();
        let head = format!(
            "[{}/{}] launch {} {}: {items} work-item(s)",
            nth.0, nth.1, l.id, l.kernel
        );
        // A variant (a mutant) runs on Oclgrind: the native pass instruments recorded programs.
        let mut engine = if opts.variant.is_some() {
            Engine::Oclgrind
        } else {
            opts.engine
        };
        let mut outcome = None;
        if let (Engine::Native, Some(why)) = (engine, fallback) {
            progress(&format!("{head} on the device, instrumented"));
            progress(&format!(
                "  launch {}: native engine cannot: {why}; falling back to Oclgrind",
                l.id
            ));
            engine = Engine::Oclgrind;
        }
        if engine == Engine::Native {
            progress(&format!("{head} on the device, instrumented"));
            match self.native(l, deadline) {
                NativeOutcome::Done(status, reply) => outcome = Some((status, reply)),
                NativeOutcome::Fallback(why) => {
                    progress(&format!(
                        "  launch {}: native engine cannot: {why}; falling back to Oclgrind",
                        l.id
                    ));
                    engine = Engine::Oclgrind;
                }
            }
        }
        let mut out = LaunchOutcome::ended(
            l,
            &opts,
            LaunchStatus::Failed {
                reason: String::new(),
            },
        );
        out.engine = engine.into();
        let diags = match outcome {
            Some((status, reply)) => {
                if reply.dropped > 0 {
                    progress(&format!(
                        "  launch {}: {} more record(s) than the report buffer holds were counted, not kept",
                        l.id, reply.dropped
                    ));
                }
                out.status = status;
                out.unchecked = Some(reply.unchecked);
                out.checked_sites = Some(reply.checked_sites);
                out.baseline_kernel_ns = reply.baseline_kernel_ns;
                out.kernel_ns = reply.kernel_ns;
                out.notes = reply.notes;
                reply.diagnostics
            }
            None => {
                progress(&format!(
                    "{head} on Oclgrind{}",
                    if opts.quick {
                        " (first and last work-group only)"
                    } else {
                        ""
                    }
                ));
                match self
                    .icd_vendors()
                    .and_then(|v| Ok((v, self.derived_inputs(l)?)))
                {
                    Ok((v, inputs)) => {
                        let child = Child {
                            exe: &self.exe,
                            dir: &self.dir,
                            vendors: &v,
                            checks,
                            deadline,
                            variant: opts.variant.as_ref(),
                            first_overrun: opts.first_overrun,
                            inputs: &inputs,
                        };
                        let (s, d, notes) = child.run(l);
                        for (_, path) in &inputs {
                            let _ = std::fs::remove_file(path);
                        }
                        out.status = s;
                        out.notes = notes;
                        d
                    }
                    Err(e) => {
                        out.status = LaunchStatus::Failed { reason: e };
                        vec![]
                    }
                }
            }
        };
        let mut diags = diags;
        if let Ok(p) = capture.program(&l.program) {
            diags.extend(api::capture_misuse(l, &p.options));
        }
        out.diagnostics = diags
            .into_iter()
            .filter(|d| d.kind.family().is_none_or(wants))
            .collect();
        if let LaunchStatus::Checked { millis } = &out.status {
            progress(&format!(
                "  launch {}: {} diagnostic(s) in {:.1} s ({})",
                l.id,
                out.diagnostics.len(),
                *millis as f64 / 1000.0,
                engine.name()
            ));
        }
        out.source = program_source(capture, &l.program);
        out
    }
}

/// The report over `outcomes`, in the selection's order: per-launch lines, findings
/// deduplicated, places not checked kept once per kernel and place, and each kernel's
/// accesses counted at its first launch that ran.
pub fn assemble(outcomes: &[LaunchOutcome], opts: &CheckOptions) -> CheckReport {
    let mut report = CheckReport {
        engine: opts.engine.name(),
        launches: Vec::new(),
        findings: Vec::new(),
        not_checked: Vec::new(),
        accesses: AccessCount::default(),
        sources: BTreeMap::new(),
    };
    let mut counted: BTreeSet<(String, String)> = BTreeSet::new();
    let mut all: Vec<(u64, String, Diagnostic)> = Vec::new();
    for o in outcomes {
        if let Some(unchecked) = &o.unchecked {
            let ran = matches!(o.status, LaunchStatus::Checked { .. });
            if ran && counted.insert((o.program.clone(), o.kernel.clone())) {
                report.accesses.checked += o.checked_sites.unwrap_or(0);
                report.accesses.not_checked += unchecked.len();
            }
            // One entry per place and reason, counting the accesses there, for each kernel
            // once (its later launches have the same ones).
            let mut places: Vec<NotChecked> = Vec::new();
            for u in unchecked {
                match places.iter_mut().find(|n| n.at == *u) {
                    Some(n) => n.accesses += 1,
                    None => places.push(NotChecked {
                        program: o.program.clone(),
                        kernel: o.kernel.clone(),
                        at: u.clone(),
                        accesses: 1,
                    }),
                }
            }
            for n in places {
                if !report
                    .not_checked
                    .iter()
                    .any(|x| x.program == n.program && x.kernel == n.kernel && x.at == n.at)
                {
                    report.not_checked.push(n);
                }
            }
        }
        if EngineName::from(opts.engine) != o.engine {
            report.engine = "native+oclgrind";
        }
        report.launches.push(LaunchCheck {
            id: o.id,
            kernel: o.kernel.clone(),
            status: o.status.clone(),
            diagnostics: o.diagnostics.len(),
            engine: o.engine.name(),
            kernel_ns: o.kernel_ns,
            baseline_kernel_ns: o.baseline_kernel_ns,
            notes: o.notes.clone(),
            checked_sites: o.checked_sites,
            unchecked_sites: o.unchecked.as_ref().map(Vec::len),
        });
        if let Some(s) = &o.source {
            report
                .sources
                .entry(o.program.clone())
                .or_insert_with(|| s.clone());
        }
        all.extend(
            o.diagnostics
                .iter()
                .map(|d| (o.id, o.program.clone(), d.clone())),
        );
    }
    report.findings = finding::deduplicate(all);
    report
}
