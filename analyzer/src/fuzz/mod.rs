//! `cltrap fuzz`: coverage-guided test generation seeded by captured launches (or by an
//! interface file), CLFuzz's loop made faster by compiling once per kernel; with `--solve`,
//! z3 then targets every branch fuzzing did not reach ([`crate::solve`]).
//!
//! - [`mutate`]: type-aware mutations; [`spec`]: the interface file (`--init`);
//! - [`classes`] + [`roles`]: the input classes run besides the seeds (all-zero, small,
//!   role-aware values inside the buffers' extents), so a crashing seed ends nothing;
//! - [`campaign`]: the loop for one kernel; [`runner`] + [`wire`]: executions in this process
//!   or in a worker process under a watchdog;
//! - [`reduce`]: large launches fuzzed on a few of their work-groups, their buffers kept in
//!   the worker, every kept case confirmed on the whole launch;
//! - [`suite`]: writing the suite (capture format) and its report;
//! - [`units`]: the command as a campaign of the runner ([`crate::campaign`]): one unit per
//!   kernel, in worker processes on every device, in shards, resumable.

pub mod campaign;
pub mod classes;
pub mod error;
pub mod mutate;
pub mod reduce;
pub mod roles;
pub mod runner;
pub mod spec;
pub mod suite;
pub mod target;
pub mod units;
pub mod wire;

use crate::executor::{Deriver, DeviceSelector, LaunchInput, Session};
use crate::headers::Headers;
use crate::variant::program_source;
use campaign::{Budget, Campaign};
use cltrap_capture::Capture;
use cltrap_kernel::{interface, Program};
pub use error::FuzzError;
use runner::Runner;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use suite::{KernelReport, SlotReport, SlotStatus, SuiteProgram};
pub use target::{Settings, Target};

/// `cltrap fuzz` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct FuzzArgs {
    /// A capture directory (seeds: its launches) or an OpenCL C file.
    #[arg(required_unless_present = "worker")]
    pub input: Option<PathBuf>,
    /// Only this kernel (default: every kernel of the capture or file).
    #[arg(long)]
    pub kernel: Option<String>,
    /// With KERNEL.cl: print an interface file (JSON) to edit, then pass it with --interface.
    #[arg(long)]
    pub init: bool,
    /// With KERNEL.cl: the interface file (sizes, fills, outputs, global/local size).
    #[arg(long, value_name = "FILE")]
    pub interface: Option<PathBuf>,
    /// With KERNEL.cl: build options.
    #[arg(long, default_value = "", value_name = "OPTIONS")]
    pub build_options: String,
    /// Stop after a time (`30s`, `2m`) or a number of executions (`5000`) for the whole
    /// campaign: each kernel gets an even share of it (so a kernel's campaign does not
    /// depend on where or after which other kernel it runs).
    #[arg(long)]
    pub budget: Option<String>,
    /// Stop after this many mutations without new coverage (default: 50 per mutable argument).
    #[arg(long, value_name = "K")]
    pub saturation: Option<u64>,
    /// Random seed (a campaign is reproducible from it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Then solve for every branch still uncovered (z3) and add the confirmed cases.
    #[arg(long)]
    pub solve: bool,
    /// The suite directory to write (capture format).
    #[arg(long, value_name = "SUITE")]
    pub out: Option<PathBuf>,
    /// Where to run (`--platform`, `--device`).
    #[command(flatten)]
    pub device: DeviceSelector,
    /// Seconds one execution may take before the watchdog kills the worker.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub watchdog: f64,
    /// Run executions in this process (faster start; a hang cannot be stopped).
    #[arg(long)]
    pub in_process: bool,
    /// (internal) serve executions on stdin/stdout.
    #[arg(long, hide = true)]
    pub worker: bool,
    /// Print timings (for benchmarks).
    #[arg(long, hide = true)]
    pub timing: bool,
    /// (benchmarks) Mutate until --budget runs out, even at full coverage or saturation.
    #[arg(long, hide = true)]
    pub exhaust_budget: bool,
    /// With a capture: keep integer scalar arguments inside the range the application used
    /// (`cltrap show CAP --kernel NAME`), so generated cases are ones it could produce.
    #[arg(long)]
    pub captured_ranges: bool,
    /// With --solve: loop iterations unrolled per loop entry.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub loop_bound: u32,
    /// With --solve: seconds of symbolic execution per kernel.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub solver_time: f64,
    /// Do not run the bounds check (Oclgrind) on the kept cases (a case that reads or writes
    /// out of a buffer is a finding) nor on the saved inputs of crashes and writes out of
    /// bounds to name the line that overran (there it runs only with --out; 120 s at most).
    #[arg(long)]
    pub no_locate: bool,
    /// Run every execution on the whole launch. By default a launch of 65,536 work-items
    /// or more runs on a few of its work-groups (the corner groups and some drawn from the
    /// seed), its buffers kept in the worker, and every kept case is confirmed on the whole
    /// launch.
    #[arg(long)]
    pub full_launches: bool,
    /// Devices, shards, `--resume` (one unit per kernel).
    #[command(flatten)]
    pub campaign: crate::campaign::CampaignArgs,
}

/// Everything one kernel's campaign produced.
pub struct Outcome {
    /// The campaign (cases, coverage, counts).
    pub campaign: Campaign,
    /// Per slot: how it ended up.
    pub report: KernelReport,
    /// The target fuzzed.
    pub target: Target,
    /// Wall time, compile included.
    pub total: Duration,
}

/// Solver bounds from the command line.
pub fn limits(loop_bound: u32, seconds: f64) -> cltrap_kernel::symbolic::Limits {
    cltrap_kernel::symbolic::Limits {
        loop_bound: loop_bound.max(1),
        time: Duration::from_secs_f64(seconds.max(0.1)),
        ..Default::default()
    }
}

/// Parses a budget: `30s`, `2m`, `500ms` (time) or a plain number (executions).
pub fn parse_budget(text: &str) -> Result<Budget, FuzzError> {
    let bad = || FuzzError::Interface(format!("--budget {text:?}: give 30s, 2m, 500ms or 1000"));
    let t = text.trim();
    let mut b = Budget {
        executions: None,
        time: None,
        fruitless: None,
        exhaust: false,
    };
    if let Some(ms) = t.strip_suffix("ms") {
        b.time = Some(Duration::from_millis(ms.parse().map_err(|_| bad())?));
    } else if let Some(s) = t.strip_suffix('s') {
        b.time = Some(Duration::from_secs_f64(s.parse().map_err(|_| bad())?));
    } else if let Some(m) = t.strip_suffix('m') {
        b.time = Some(Duration::from_secs_f64(
            60.0 * m.parse::<f64>().map_err(|_| bad())?,
        ));
    } else {
        b.executions = Some(t.parse().map_err(|_| bad())?);
    }
    Ok(b)
}

/// The targets of a capture directory: one per (program, kernel), seeded by its launches.
///
/// With `session`, a launch whose inputs the capture keeps only as digests (derived inputs
/// past the disk budget) seeds too: its inputs are re-created by re-executing their producers
/// on that device ([`Deriver`], whose cache of re-created contents is bounded), and checked
/// against their digests. A launch that still cannot seed (no session, a producer that does
/// not reproduce, ...) is named on stderr.
pub fn targets_from_capture(
    capture: &Capture,
    only: Option<&str>,
    session: Option<&Session>,
) -> Result<Vec<Target>, FuzzError> {
    let mut out: Vec<(String, Target)> = Vec::new();
    let mut unseeded = 0usize;
    let mut deriver = session.map(|s| (s, Deriver::new(capture)));
    for l in &capture.launches {
        if only.is_some_and(|k| k != l.kernel) {
            continue;
        }
        let Ok(record) = capture.program(&l.program) else {
            continue;
        };
        // One source unit (built from source, or linked from one compiled unit).
        if record.source_unit().is_err() {
            continue;
        }
        let seed = match &mut deriver {
            Some((session, d)) => d.input(session, l),
            None => LaunchInput::from_record(capture, l),
        };
        let seed = match seed {
            Ok(seed) => seed,
            Err(e) => {
                // Said, not silently dropped: e.g. a launch whose derived input's producer
                // does not reproduce on this device seeds nothing.
                unseeded += 1;
                if unseeded <= 3 {
                    eprintln!(
                        "cltrap: fuzz: launch {} of {} does not seed the campaign: {e}",
                        l.id, l.kernel
                    );
                }
                continue;
            }
        };
        let key = format!("{}/{}", l.program, l.kernel);
        if let Some((_, t)) = out.iter_mut().find(|(k, _)| *k == key) {
            t.seeds.push(seed);
            continue;
        }
        let headers = std::sync::Arc::new(Headers::from_capture(capture, &record.includes)?);
        // Macro and absolute includes point at their captured copies (`parse_source`).
        let source = headers.parse_source(&program_source(capture, &record)?);
        out.push((
            key,
            Target {
                source,
                options: record
                    .source_unit()
                    .map_or_else(|_| record.options.clone(), |u| u.build_options()),
                kernel: l.kernel.clone(),
                program: Some(l.program.clone()),
                row_name: l.kernel.clone(),
                seeds: vec![seed],
                scalar_bounds: None,
                headers,
            },
        ));
    }
    if unseeded > 3 {
        eprintln!(
            "cltrap: fuzz: {} more launch(es) do not seed the campaign (the first 3 are named above)",
            unseeded - 3
        );
    }
    if out.is_empty() {
        return Err(FuzzError::Interface(match only {
            Some(k) => {
                format!("the capture has no replayable launch of kernel {k} built from source")
            }
            None => "the capture has no replayable launch of a kernel built from source".into(),
        }));
    }
    let mut targets: Vec<Target> = out.into_iter().map(|(_, t)| t).collect();
    let ids: Vec<(&str, Option<&str>)> = targets
        .iter()
        .map(|t| (t.kernel.as_str(), t.program.as_deref()))
        .collect();
    let names = suite::row_names(&ids);
    for (t, name) in targets.iter_mut().zip(names) {
        t.row_name = name;
    }
    Ok(targets)
}

/// The targets of an OpenCL C file: `kernel` (or every kernel), seeded from `interface`;
/// `headers` are the files it includes (see [`Headers::from_disk`]).
pub fn targets_from_source(
    source: &str,
    options: &str,
    kernel: Option<&str>,
    interface: Option<(&spec::InterfaceFile, &Path)>,
    seed: u64,
    headers: Headers,
) -> Result<Vec<Target>, FuzzError> {
    let headers = std::sync::Arc::new(headers);
    let program = cltrap_kernel::parse_program(source, &headers.options(options))?;
    let names: Vec<String> = match (kernel, interface) {
        (Some(k), Some((spec, _))) if spec.kernel != k => {
            return Err(FuzzError::Interface(format!(
                "the interface file describes kernel `{}`, not `{k}` (given with --kernel)",
                spec.kernel
            )))
        }
        (Some(k), _) => vec![k.to_string()],
        (None, Some((spec, _))) => vec![spec.kernel.clone()],
        (None, None) => program.kernels().map(|k| k.name.clone()).collect(),
    };
    let mut out = Vec::new();
    for name in names {
        let iface = interface::derive(&program, &name)?;
        let seeds = match interface {
            Some((spec, base)) => vec![spec::to_input(spec, &iface, base, seed)?],
            None => vec![spec::to_input(
                &spec::initial(&iface, options),
                &iface,
                Path::new("."),
                seed,
            )?],
        };
        out.push(Target {
            source: source.to_string(),
            options: options.to_string(),
            program: None,
            row_name: name.clone(),
            kernel: name,
            seeds,
            scalar_bounds: None,
            headers: headers.clone(),
        });
    }
    Ok(out)
}

fn make_runner<'s>(
    session: &'s Session,
    source: &str,
    options: &str,
    settings: &Settings,
) -> Result<Box<dyn Runner + 's>, FuzzError> {
    Ok(match &settings.worker {
        Some(exe) => Box::new(runner::Worker::new(
            exe.clone(),
            source,
            options,
            &settings.device,
            settings.watchdog,
        )?),
        None => Box::new(runner::InProcess::new(session, source, options)?),
    })
}

/// The reduced executions of `target` (from its first seed), with the program rewritten to
/// take the subset table: `None` when its launch is too small to gain from it, `Some(Err)`
/// with the reason when it is large but cannot be reduced.
fn plan_reduction(
    target: &Target,
    iface: &interface::KernelInterface,
    instrumented: &str,
    options: &str,
    seed: u64,
) -> Option<Result<(reduce::Residency, String), String>> {
    let first = target.seeds.first()?;
    let items: u64 = first.global_size.iter().product();
    if items < reduce::MIN_WORK_ITEMS {
        return None;
    }
    let plan = || -> Result<(reduce::Residency, String), String> {
        let reduction = reduce::Reduction::plan(first, seed)?;
        let layout = reduce::layout(iface, first)?;
        let parsed = cltrap_kernel::parse_program(instrumented, options)
            .map_err(|e| format!("the instrumented program: {e}"))?;
        let subset = cltrap_kernel::permute::subset_groups(&parsed).map_err(|e| e.to_string())?;
        Ok((reduce::Residency::new(layout, reduction), subset.source))
    };
    Some(plan())
}

/// Fuzzes (and with `settings.solve`, solves) one target.
pub fn run_target(
    session: &Session,
    target: Target,
    settings: &Settings,
) -> Result<Outcome, FuzzError> {
    let start = Instant::now();
    let options = target.build_options();
    let program: Program = cltrap_kernel::parse_program(&target.source, &options)?;
    let iface = interface::derive(&program, &target.kernel)?;
    let inst = cltrap_kernel::coverage::instrument_coverage(&program, Default::default())?;
    let reduction = match settings.full_launches {
        true => None,
        false => plan_reduction(&target, &iface, &inst.source, &options, settings.seed),
    };
    let mut campaign = Campaign::new(&target.kernel, iface, inst.map);
    campaign.row_name = target.row_name.clone();
    campaign.scalar_bounds = target.scalar_bounds.clone();
    campaign.roles = roles::derive(&program, &target.kernel);
    let cover_source = target.headers.source(&inst.source);
    let mut instrumented = inst.source;
    campaign.reduced_note = match reduction {
        Some(Ok((residency, source))) => {
            instrumented = source;
            campaign.subset_param = true;
            let note = residency.reduction.describe();
            campaign.reduced = Some(residency);
            Some(note)
        }
        Some(Err(why)) => Some(format!("whole launches: {why}")),
        None => None,
    };
    let t0 = Instant::now();
    let built_source = target.headers.source(&instrumented);
    let mut runner = make_runner(session, &built_source, &options, settings)?;
    campaign.compile_time = t0.elapsed();
    // A time budget is wall time from the start of this kernel: parsing and the compile
    // above count, and fuzzing gets what they left.
    let deadline = settings.budget.time.map(|t| start + t);
    let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let mut fuzz_budget = settings.budget.clone();
    fuzz_budget.time = left();
    campaign.fuzz(
        runner.as_mut(),
        target.seeds.clone(),
        &fuzz_budget,
        settings.seed,
        settings.progress,
    )?;
    let mut statuses: Vec<(u32, SlotStatus, Option<Duration>)> = campaign
        .slots
        .iter()
        .map(|s| {
            let st = if campaign.covered.contains(&s.index) {
                SlotStatus::CoveredByFuzzing
            } else {
                SlotStatus::Uncovered
            };
            (s.index, st, None)
        })
        .collect();
    let mut solve_time = Duration::ZERO;
    // The solver's time limit is cut to what the budget left; with nothing left it does not
    // run (the slots stay uncovered, and the summary says the budget ran out).
    let solve_limits = {
        let mut l = settings.limits.clone();
        if let Some(t) = left() {
            l.time = l.time.min(t);
        }
        l
    };
    if settings.solve && !solve_limits.time.is_zero() {
        let t = Instant::now();
        let solved =
            crate::solve::solve_campaign(&mut campaign, &program, runner.as_mut(), &solve_limits)?;
        solve_time = t.elapsed();
        for (index, status, took) in solved {
            if let Some(s) = statuses.iter_mut().find(|s| s.0 == index) {
                s.1 = status;
                s.2 = Some(took);
            }
        }
    }
    let original_source = target.headers.source(&target.source);
    for round in 0..CHECK_ROUNDS {
        if round > 0 {
            // The checks took out cases that alone reached some slots: fuzz again for what
            // is left of the budget, and check the new cases.
            let lost = statuses.iter().any(|s| {
                matches!(
                    s.1,
                    SlotStatus::CoveredByFuzzing | SlotStatus::SolvedAndConfirmed
                ) && !campaign.covered.contains(&s.0)
            });
            let mut again = settings.budget.clone();
            again.time = left();
            if !lost
                || again.time.is_some_and(|t| t.is_zero())
                || again.executions.is_some_and(|n| campaign.executions >= n)
            {
                break;
            }
            campaign.resume(
                runner.as_mut(),
                &again,
                settings.seed.wrapping_add(round as u64),
                settings.progress,
            )?;
            for s in statuses.iter_mut() {
                if campaign.covered.contains(&s.0) && !matches!(s.1, SlotStatus::SolvedAndConfirmed)
                {
                    s.1 = SlotStatus::CoveredByFuzzing;
                }
            }
        }
        // Every kept case once more, through the user's program in a runner of its own:
        // only cases that reproduce their outputs there go to the suite.
        let mut original = make_runner(session, &original_source, &options, settings)?;
        campaign.verify(original.as_mut())?;
        drop(original);
        // And once more as `cltrap cover` runs a suite's launch (no guard zones): only cases
        // that reach the same branches and leave the same outputs there are kept.
        let mut cover = make_runner(session, &cover_source, &options, settings)?;
        campaign.reproduce(cover.as_mut())?;
        drop(cover);
        if settings.check_cases {
            // Oclgrind gets what the budget left, but never less than
            // `MIN_CHECK_TIME`: a case the check did not finish on stays (as without
            // Oclgrind), so a spent budget must not skip the check altogether.
            let time = left().map_or(DEFAULT_CHECK_TIME, |t| {
                t.clamp(MIN_CHECK_TIME, DEFAULT_CHECK_TIME)
            });
            bounds_check_cases(session, &target, &mut campaign, time);
        }
        campaign.settled = campaign.cases.len();
    }
    for s in statuses.iter_mut() {
        if !campaign.covered.contains(&s.0) {
            if matches!(s.1, SlotStatus::SolvedAndConfirmed) {
                s.1 = SlotStatus::NotConfirmed;
            } else if matches!(s.1, SlotStatus::CoveredByFuzzing) {
                s.1 = SlotStatus::Uncovered;
            }
        }
    }
    let mut report = kernel_report(&campaign, &statuses, solve_time);
    report.compiles = runner.compiles();
    report.program = target.program.clone();
    Ok(Outcome {
        campaign,
        report,
        target,
        total: start.elapsed(),
    })
}

/// The bounds check's time on the kept cases of one kernel when the budget leaves more (or
/// has no time limit): [`crate::check::locate::DEFAULT_BUDGET`].
const DEFAULT_CHECK_TIME: Duration = crate::check::locate::DEFAULT_BUDGET;

/// The bounds check's time on the kept cases of one kernel when the budget is spent: enough
/// for Oclgrind on a small launch, so no case skips the check for lack of budget.
const MIN_CHECK_TIME: Duration = Duration::from_secs(20);

/// How many times a campaign checks its kept cases (and, after the first, fuzzes again from
/// the cases left when the checks took out the only case of some slot).
pub const CHECK_ROUNDS: usize = 3;

/// Runs the bounds check (Oclgrind) on every kept case whose launch is run whole (below
/// [`reduce::MIN_WORK_ITEMS`] work-items: a larger one would take the check's whole budget)
/// and turns each case that reads or writes out of a buffer into a finding: a write past the
/// guard zones does not crash the fuzzing worker but may corrupt the memory of `cltrap cover`
/// or `mutate` when they run the suite. When the check cannot run (no Oclgrind), the cases
/// stay as they are.
fn bounds_check_cases(session: &Session, target: &Target, campaign: &mut Campaign, time: Duration) {
    use crate::check::locate::{overruns, Located};
    let small = |c: &campaign::KeptCase| {
        c.input.global_size.iter().product::<u64>() < reduce::MIN_WORK_ITEMS
    };
    // Cases settled by an earlier round were checked then.
    let settled = campaign.settled;
    if !campaign.cases.iter().skip(settled).any(small) {
        return;
    }
    let Ok(tmp) = tempfile::tempdir() else {
        return;
    };
    let program = SuiteProgram {
        source: &target.source,
        options: &target.options,
        headers: &target.headers,
    };
    let Ok(ids) = suite::write_cases(tmp.path(), &program, campaign, 0, session.info()) else {
        return;
    };
    let Ok(capture) = Capture::open(tmp.path()) else {
        return;
    };
    let checked: Vec<u64> = ids
        .iter()
        .filter(|(_, k)| *k >= settled && campaign.cases.get(*k).is_some_and(small))
        .map(|(id, _)| *id)
        .collect();
    let Ok(found) = overruns(tmp.path(), &capture, checked, None, time) else {
        return;
    };
    let why: std::collections::BTreeMap<usize, String> = ids
        .iter()
        .filter_map(|(id, k)| match found.get(id) {
            Some(Located::At(at)) => Some((
                *k,
                format!("out of bounds (the bounds check on the case): overran at {at}"),
            )),
            _ => None,
        })
        .collect();
    campaign.drop_cases(&why);
}

/// The report of one campaign (case ids are indices until the suite is written).
pub fn kernel_report(
    c: &Campaign,
    statuses: &[(u32, SlotStatus, Option<Duration>)],
    solve_time: Duration,
) -> KernelReport {
    KernelReport {
        unsupported: crate::solve::unsupported_constructs(statuses),
        kernel: c.kernel.clone(),
        program: None,
        slots: c
            .slots
            .iter()
            .map(|s| {
                let (status, ms) = statuses
                    .iter()
                    .find(|x| x.0 == s.index)
                    .map(|x| (x.1.clone(), x.2.map(|d| d.as_secs_f64() * 1e3)))
                    .unwrap_or((SlotStatus::Uncovered, None));
                SlotReport {
                    index: s.index,
                    label: s.label.clone(),
                    line: s.line,
                    col: s.col,
                    status,
                    solve_ms: ms,
                }
            })
            .collect(),
        cases: c
            .cases
            .iter()
            .enumerate()
            .map(|(i, k)| {
                (
                    i as u64,
                    k.covers.iter().copied().collect(),
                    k.origin.clone(),
                )
            })
            .collect(),
        findings: c.findings.iter().map(|f| f.what.clone()).collect(),
        overruns: Vec::new(),
        executions: c.executions,
        compile_ms: c.compile_time.as_secs_f64() * 1e3,
        compiles: 1,
        run_ms: c.run_time.as_secs_f64() * 1e3,
        saturation_ms: c.saturation_time.as_secs_f64() * 1e3,
        solve_ms: solve_time.as_secs_f64() * 1e3,
        reduced: c.reduced.as_ref().map(|r| r.reduction.describe()),
        confirm_runs: c.confirm_cost.0,
        confirm_ms: c.confirm_cost.1.as_secs_f64() * 1e3,
        subset_only: c.subset_only,
    }
}

/// Counts of a kernel report for the final table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Slots (branch sides and loop-boundary classes).
    pub total: usize,
    /// Covered by fuzzing (or seeds).
    pub fuzzed: usize,
    /// Solved and confirmed.
    pub solved: usize,
    /// Proven unreachable.
    pub dead: usize,
    /// Unsupported constructs.
    pub unsupported: usize,
    /// Timeouts, unconfirmed or never tried.
    pub open: usize,
}

impl KernelReport {
    /// The counts of the final table.
    pub fn tally(&self) -> Tally {
        let mut t = Tally {
            total: self.slots.len(),
            ..Tally::default()
        };
        for s in &self.slots {
            match s.status {
                SlotStatus::CoveredByFuzzing => t.fuzzed += 1,
                SlotStatus::SolvedAndConfirmed => t.solved += 1,
                SlotStatus::Unsatisfiable => t.dead += 1,
                SlotStatus::Unsupported { .. } => t.unsupported += 1,
                _ => t.open += 1,
            }
        }
        t
    }
}

/// Writes the final table.
pub fn print_table(out: &mut dyn Write, outcomes: &[(&KernelReport, usize, Duration)]) {
    let ids: Vec<(&str, Option<&str>)> = outcomes.iter().map(|o| o.0.id()).collect();
    let names = suite::row_names(&ids);
    // The first column fits the longest row name (a kernel with its program is longer).
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    let _ = writeln!(
        out,
        "{:<w$} {:>6} {:>7} {:>7} {:>5} {:>11} {:>5} {:>6} {:>9} {:>8}",
        "kernel",
        "slots",
        "fuzzed",
        "solved",
        "dead",
        "unsupported",
        "open",
        "tests",
        "time",
        "exec/s"
    );
    for ((r, tests, total), name) in outcomes.iter().zip(names) {
        let t = r.tally();
        let eps = r.fuzz_rate();
        let _ = writeln!(
            out,
            "{:<w$} {:>6} {:>7} {:>7} {:>5} {:>11} {:>5} {:>6} {:>8.2}s {:>8.0}",
            name,
            t.total,
            t.fuzzed,
            t.solved,
            t.dead,
            t.unsupported,
            t.open,
            tests,
            total.as_secs_f64(),
            eps
        );
    }
}

/// Writes the outcome's cases to the suite and returns its report with suite launch ids.
pub fn write_outcome(
    dir: &Path,
    o: &Outcome,
    from: usize,
    device: &crate::executor::DeviceInfo,
) -> Result<KernelReport, FuzzError> {
    let ids = suite::write_cases(
        dir,
        &SuiteProgram {
            source: &o.target.source,
            options: &o.target.options,
            headers: &o.target.headers,
        },
        &o.campaign,
        from,
        device,
    )?;
    let mut report = o.report.clone();
    for (id, k) in ids {
        if let Some(c) = report.cases.get_mut(k) {
            c.0 = id;
        }
    }
    Ok(report)
}

/// The whole campaign's budget from the command line (`--budget`, `--saturation`,
/// `--exhaust-budget`).
pub fn whole_budget(args: &FuzzArgs) -> Result<Budget, String> {
    let mut budget = match &args.budget {
        Some(b) => parse_budget(b).map_err(|e| e.to_string())?,
        None => Budget {
            executions: None,
            time: None,
            fruitless: None,
            exhaust: false,
        },
    };
    budget.fruitless = args.saturation;
    budget.exhaust = args.exhaust_budget;
    if args.exhaust_budget && args.budget.is_none() {
        return Err("--exhaust-budget needs --budget".into());
    }
    Ok(budget)
}

/// The targets of the kernel file `input` (its interface file, its included files); lines
/// for the report (included files not found) go to `notes`.
pub fn file_targets(
    args: &FuzzArgs,
    input: &Path,
    notes: &mut Vec<String>,
) -> Result<Vec<Target>, String> {
    // Not UTF-8 (a Latin-1 comment, which drivers accept): the odd bytes become U+FFFD.
    let source = std::fs::read(input)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let folder = input.parent().unwrap_or(Path::new("."));
    let spec = match &args.interface {
        Some(p) => {
            let text = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            let spec: spec::InterfaceFile =
                serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            Some((spec, p.parent().unwrap_or(Path::new(".")).to_path_buf()))
        }
        None => None,
    };
    let options = match &spec {
        Some((s, _)) if args.build_options.is_empty() => s.build_options.clone(),
        _ => args.build_options.clone(),
    };
    // Includes are searched in the kernel file's folder first, then in `-I`.
    let (headers, options) =
        Headers::from_disk(&source, &options, folder).map_err(|e| e.to_string())?;
    for m in Headers::missing(&headers.includes) {
        notes.push(format!(
            "note: {} includes {m}, which was not found",
            input.display()
        ));
    }
    targets_from_source(
        &source,
        &options,
        args.kernel.as_deref(),
        spec.as_ref().map(|(s, b)| (s, b.as_path())),
        args.seed,
        headers,
    )
    .map_err(|e| e.to_string())
}

/// Names the line that overran for each distinct crash or write out of bounds of a campaign
/// (hangs excluded), by the bounds check on its first saved input in `fdir` (`written`:
/// launch id there, finding index); says one line each.
pub(crate) fn locate_findings(
    fdir: &Path,
    c: &Campaign,
    written: &[(u64, usize)],
    said: &mut Vec<units::Said>,
) -> Vec<suite::LocatedFinding> {
    use crate::check::locate::{overruns, Located, DEFAULT_BUDGET};
    let mut firsts: Vec<(u64, &str)> = Vec::new();
    for (id, k) in written {
        let Some(f) = c.findings.get(*k) else {
            continue;
        };
        if !f.what.starts_with("hang") && !firsts.iter().any(|x| x.1 == f.what) {
            firsts.push((*id, &f.what));
        }
    }
    if firsts.is_empty() {
        return Vec::new();
    }
    let capture = match Capture::open(fdir) {
        Ok(c) => c,
        Err(e) => {
            said.push(units::Said::Line(format!(
                "note: the overrunning lines were not looked for: {e}"
            )));
            return Vec::new();
        }
    };
    let ids = firsts.iter().map(|x| x.0).collect();
    let found = match overruns(fdir, &capture, ids, None, DEFAULT_BUDGET) {
        Ok(f) => f,
        Err(why) => {
            said.push(units::Said::Line(format!(
                "note: the overrunning lines were not looked for: {why}"
            )));
            return Vec::new();
        }
    };
    let mut located = Vec::new();
    for (id, what) in firsts {
        let line = match found.get(&id) {
            Some(Located::At(at)) => {
                located.push(suite::LocatedFinding {
                    finding: what.to_string(),
                    launch: id,
                    at: at.clone(),
                });
                format!("overran at {at}")
            }
            Some(Located::NotFound) => {
                "the bounds check saw no access out of bounds on its input".to_string()
            }
            Some(Located::NotChecked(why)) => format!("not located: {why}"),
            None => continue,
        };
        // A finding the bounds check on kept cases already located says where it overran.
        let shown = if what.contains("overran at ") {
            what.to_string()
        } else {
            format!("{what}: {line}")
        };
        said.push(units::Said::Located { shown, launch: id });
    }
    located
}

/// Lists every slot not covered by fuzzing, with its status.
pub fn print_slots(out: &mut dyn Write, reports: &[KernelReport]) {
    let ids: Vec<(&str, Option<&str>)> = reports.iter().map(KernelReport::id).collect();
    for (r, name) in reports.iter().zip(suite::row_names(&ids)) {
        for s in &r.slots {
            let what = match &s.status {
                SlotStatus::CoveredByFuzzing => continue,
                SlotStatus::SolvedAndConfirmed => "solved and confirmed".to_string(),
                SlotStatus::Unsatisfiable => "unsatisfiable (dead)".to_string(),
                SlotStatus::Unsupported { what } => format!("unsupported: {what}"),
                SlotStatus::Timeout { why } => format!("timeout: {why}"),
                SlotStatus::NotConfirmed => "solved but not confirmed by running".to_string(),
                SlotStatus::Uncovered => "uncovered".to_string(),
            };
            let ms = s
                .solve_ms
                .map(|m| format!(" ({m:.1} ms)"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{}:{}:{}: {}: {what}{ms}",
                name, s.line, s.col, s.label
            );
        }
    }
}
