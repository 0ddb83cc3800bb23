//! `cltrap replay --schedules` as a campaign: one unit per launch (its identity repeats and
//! its N schedules run together, as they share the reference run), classified in workers (on
//! several devices, in shards, resumable); the per-launch lines, the summary and the race check
//! of the launches flagged are written by the report, in launch order.
//!
//! `--per-kernel N` decides from the launch records alone which launches are classified
//! ([`Limiter`], in capture order), so the decision is made once, in [`Campaign::units`], and
//! travels in each unit; a launch not classified again quotes the verdict of the launch it
//! repeats, which the report looks up among the results. A worker keeps its permuted programs
//! and derived inputs across the launches it runs.

use super::per_kernel::{Decision, Limiter};
use super::{
    mean_ms, ms, not_classified, one_launch, races, timing_line, verdict_word, ScheduleOptions,
    ScheduleResult, ScheduleSummary, ScheduleTiming, Verdict,
};
use crate::campaign::kept::{error_lines, Kept};
use crate::campaign::{Campaign, Finished, Lost, Unit, UnitContext};
use crate::executor::Deriver;
use crate::variant::{DiskCache, VariantCache};
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::permute::PermuteMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A launch's verdict, as the summary counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// All runs agreed.
    Deterministic,
    /// A schedule reproducibly gives other outputs.
    ScheduleDependent,
    /// Two runs of one schedule differ.
    Nondeterministic,
    /// Not runnable from the capture.
    Skipped,
    /// Failed.
    Error,
    /// Not classified again: the inputs of the launch `same_as`.
    SameAs,
    /// Not classified: past the per-kernel limit.
    OverLimit,
}

impl Kind {
    fn of(v: &Verdict) -> Kind {
        match v {
            Verdict::Deterministic => Kind::Deterministic,
            Verdict::ScheduleDependent { .. } => Kind::ScheduleDependent,
            Verdict::Nondeterministic { .. } => Kind::Nondeterministic,
            Verdict::Skipped(_) => Kind::Skipped,
            Verdict::Error { .. } => Kind::Error,
            Verdict::SameAs { .. } => Kind::SameAs,
            Verdict::OverLimit { .. } => Kind::OverLimit,
        }
    }

    /// The verdict in one word, as a launch with the same inputs quotes it.
    fn word(self) -> &'static str {
        match self {
            Kind::Deterministic => verdict_word(&Verdict::Deterministic),
            Kind::ScheduleDependent => "schedule-dependent",
            Kind::Nondeterministic => "nondeterministic",
            Kind::Skipped | Kind::OverLimit | Kind::SameAs => "skipped",
            Kind::Error => "failed",
        }
    }
}

/// One launch's classification as a worker returns it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Classified {
    /// Launch id.
    pub launch: u64,
    /// Kernel name.
    pub kernel: String,
    /// Its verdict.
    pub kind: Kind,
    /// Its line (for [`Kind::SameAs`], the report writes the line with the quoted verdict).
    pub line: String,
    /// The classified launch it repeats ([`Kind::SameAs`]).
    pub same_as: Option<u64>,
    /// Whether the identity schedule differs from the recording.
    pub identity_mismatch: bool,
    /// The whole message of an error, for stderr.
    pub full: Option<String>,
    /// The permuted program's hash, when it built.
    pub built: Option<String>,
    /// The device, `name (platform)`, when one was opened.
    pub device: Option<String>,
    /// `--timing`: its times (timings: not part of the report's identity).
    pub timing: ScheduleTiming,
}

impl Classified {
    fn of(r: &ScheduleResult) -> Classified {
        Classified {
            launch: r.id,
            kernel: r.kernel.clone(),
            kind: Kind::of(&r.verdict),
            line: r.to_string(),
            same_as: match r.verdict {
                Verdict::SameAs { launch, .. } => Some(launch),
                _ => None,
            },
            identity_mismatch: r.identity_vs_recorded.is_some(),
            full: match &r.verdict {
                Verdict::Error { full, .. } => Some(full.clone()),
                _ => None,
            },
            built: None,
            device: None,
            timing: r.timing.clone(),
        }
    }
}

/// A launch's classification under permuted schedules, over a capture's selected launches.
pub struct ScheduleCampaign {
    dir: PathBuf,
    /// The capture, for the whole process (a worker's derived inputs borrow it).
    capture: &'static Capture,
    opts: ScheduleOptions,
    /// `--timing`: per-launch and total times.
    pub timing: bool,
    /// Damaged launch lines of the capture: each an error line (exit 2).
    pub damaged: Vec<String>,
    /// Longest silence of a worker: one run of a launch (the first with its compile).
    pub watchdog: Duration,
    here: Option<Kept<Worker>>,
}

/// What a worker keeps on its device between launches.
struct Worker {
    cache: VariantCache<PermuteMap>,
    deriver: Deriver<'static>,
}

impl ScheduleCampaign {
    /// The classification `opts` asks for over `capture`, opened from `dir`.
    pub fn new(dir: &Path, capture: Capture, opts: ScheduleOptions) -> ScheduleCampaign {
        ScheduleCampaign {
            dir: dir.to_path_buf(),
            capture: Box::leak(Box::new(capture)),
            opts,
            timing: false,
            damaged: Vec::new(),
            watchdog: Duration::from_secs(300),
            here: None,
        }
    }

    fn launch_of(&self, unit: &Unit) -> Result<&'static LaunchRecord, String> {
        unit.launch_in(self.capture)
    }

    fn error(l: &LaunchRecord, line: String, full: Option<String>) -> Classified {
        let r = not_classified(
            l,
            Verdict::Error {
                line,
                full: full.clone().unwrap_or_default(),
            },
        );
        Classified {
            full,
            ..Classified::of(&r)
        }
    }
}

impl Campaign for ScheduleCampaign {
    fn command(&self) -> &'static str {
        "replay"
    }

    /// Launches in order, whose derived inputs the worker's deriver re-creates.
    fn contiguous(&self) -> bool {
        true
    }

    fn units(&mut self) -> Result<Vec<Unit>, String> {
        let launches = crate::replay::select(self.capture, self.opts.ids.as_deref())
            .map_err(|e| e.to_string())?;
        let mut limiter = self.opts.per_kernel.map(Limiter::new);
        Ok(launches
            .iter()
            .map(|l| {
                let payload = match limiter.as_mut().map_or(Decision::Classify, |m| m.decide(l)) {
                    Decision::Classify => Value::Null,
                    Decision::SameAs(first) => json!({ "same_as": first }),
                    Decision::OverLimit {
                        limit,
                        class,
                        classified,
                    } => json!({ "over_limit": limit, "class": class, "classified": classified }),
                };
                Unit::launch(l.id, payload)
            })
            .collect())
    }

    fn deadline(&self) -> Duration {
        // Per run of the launch (its program's compile included in the first): each run
        // tells the runner it is alive.
        self.watchdog
    }

    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String> {
        let l = self.launch_of(unit)?;
        let p = &unit.payload;
        if let Some(first) = p["same_as"].as_u64() {
            let r = not_classified(
                l,
                Verdict::SameAs {
                    launch: first,
                    verdict: "skipped",
                },
            );
            return serde_json::to_value(Classified::of(&r)).map_err(|e| e.to_string());
        }
        if let Some(limit) = p["over_limit"].as_u64() {
            let r = not_classified(
                l,
                Verdict::OverLimit {
                    limit: limit as u32,
                    class: p["class"].as_str().unwrap_or_default().to_string(),
                    classified: serde_json::from_value(p["classified"].clone()).unwrap_or_default(),
                },
            );
            return serde_json::to_value(Classified::of(&r)).map_err(|e| e.to_string());
        }
        let (capture, cache_dir) = (self.capture, self.opts.instrument_cache.clone());
        let make = || Worker {
            cache: VariantCache::with_disk(cache_dir.map(|dir| DiskCache {
                dir,
                pass: "permute",
            })),
            deriver: Deriver::new(capture),
        };
        let here = match Kept::on(&mut self.here, cx.device, make) {
            Ok(h) => h,
            Err(e) => {
                let (line, full) = error_lines(&e);
                let c = Self::error(l, line, Some(full));
                return serde_json::to_value(c).map_err(|e| e.to_string());
            }
        };
        let r = one_launch(
            &here.session,
            self.capture,
            l,
            &self.opts,
            &mut here.state.cache,
            &mut here.state.deriver,
            cx.alive,
        );
        let built = here.state.cache.variants().any(|(k, _)| k == &l.program);
        let info = here.session.info();
        let c = Classified {
            built: built.then(|| l.program.clone()),
            device: Some(format!("{} ({})", info.name, info.platform)),
            ..Classified::of(&r)
        };
        serde_json::to_value(c).map_err(|e| e.to_string())
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
        serde_json::to_value(Self::error(l, line, None)).unwrap_or(Value::Null)
    }

    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        _complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String> {
        for d in &self.damaged {
            let _ = writeln!(out, "damaged launch record: error: {d}");
            eprintln!("cltrap: {d}");
        }
        let mut all: Vec<Classified> = Vec::with_capacity(results.len());
        for (u, f) in results {
            all.push(serde_json::from_value(f.result.clone()).map_err(|e| {
                format!(
                    "the campaign's result for {} is not a launch's classification: {e}",
                    u.id
                )
            })?);
        }
        let words: HashMap<u64, &'static str> =
            all.iter().map(|c| (c.launch, c.kind.word())).collect();
        let mut summary = ScheduleSummary {
            per_kernel: self.opts.per_kernel,
            ..ScheduleSummary::default()
        };
        let mut total = ScheduleTiming::default();
        let mut told: HashSet<String> = HashSet::new();
        let mut built: HashSet<String> = HashSet::new();
        let mut racy: Vec<u64> = Vec::new();
        let mut device: Option<String> = None;
        for c in &all {
            let shell = ScheduleResult {
                timing: c.timing.clone(),
                ..not_classified_shell(c)
            };
            match (c.kind, c.same_as) {
                (Kind::SameAs, Some(first)) => {
                    let r = ScheduleResult {
                        verdict: Verdict::SameAs {
                            launch: first,
                            verdict: words.get(&first).copied().unwrap_or("skipped"),
                        },
                        ..not_classified_shell(c)
                    };
                    let _ = writeln!(out, "{r}");
                }
                _ => {
                    let _ = writeln!(out, "{}", crate::list::escape_controls(&c.line));
                }
            }
            if self.timing && !matches!(c.kind, Kind::SameAs | Kind::OverLimit) {
                let _ = writeln!(out, "{}", timing_line(&shell));
            }
            if let Some(full) = &c.full {
                if told.insert(full.clone()) {
                    eprintln!("cltrap: launch {} ({}): {full}", c.launch, c.kernel);
                }
            }
            match c.kind {
                Kind::Deterministic => summary.deterministic += 1,
                Kind::ScheduleDependent => summary.schedule_dependent += 1,
                Kind::Nondeterministic => summary.nondeterministic += 1,
                Kind::Skipped => summary.skipped += 1,
                Kind::Error => summary.errors += 1,
                Kind::SameAs => summary.same_inputs += 1,
                Kind::OverLimit => summary.over_limit += 1,
            }
            if matches!(c.kind, Kind::ScheduleDependent | Kind::Nondeterministic) {
                racy.push(c.launch);
            }
            summary.identity_mismatches += usize::from(c.identity_mismatch);
            built.extend(c.built.clone());
            if device.is_none() {
                device.clone_from(&c.device);
            }
            // Saturating: a result read back from a journal is input, and its durations may
            // add up past what a duration holds.
            total.instrument = total.instrument.saturating_add(c.timing.instrument);
            total.compile = total.compile.saturating_add(c.timing.compile);
            total.runs.extend(c.timing.runs.iter().copied());
            total.kernel_ns.extend(c.timing.kernel_ns.iter().copied());
        }
        summary.programs_built = built.len();
        if self.timing {
            let wall = (total.runs.iter()).fold(Duration::ZERO, |a, r| a.saturating_add(*r));
            let _ = writeln!(
                out,
                "timing total: instrument {:.1} ms, compile {:.1} ms ({} program(s)), {} runs {:.1} ms wall ({:.3} ms each), kernels {:.3} ms",
                ms(total.instrument),
                ms(total.compile),
                summary.programs_built,
                total.runs.len(),
                ms(wall),
                mean_ms(&total.runs),
                total.kernel_ns.iter().map(|&n| n as f64).sum::<f64>() / 1e6
            );
        }
        let device = device.unwrap_or_else(|| "unknown (no launch was classified)".into());
        let _ = writeln!(out, "{summary}; device {device}");
        if let (Some(budget), false) = (self.opts.race_check, racy.is_empty()) {
            let mut to = &mut *out;
            races::race_check(self.capture, racy, budget, self.opts.race_engine, &mut to);
        }
        let _ = out.flush();
        let code = summary.exit_code() as u8;
        Ok(if self.damaged.is_empty() { code } else { 2 })
    }

    fn report_files(&mut self) -> Vec<&mut PathBuf> {
        Vec::new()
    }

    fn home(&self) -> PathBuf {
        self.dir.join("campaigns")
    }
}

/// A result with `c`'s launch and kernel and nothing run (to render lines from).
fn not_classified_shell(c: &Classified) -> ScheduleResult {
    ScheduleResult {
        id: c.launch,
        kernel: c.kernel.clone(),
        schedules: 0,
        repeats: 0,
        groups: 0,
        chosen_local: None,
        verdict: Verdict::Skipped(String::new()),
        identity_vs_recorded: None,
        timing: ScheduleTiming::default(),
    }
}
