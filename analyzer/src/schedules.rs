//! `cltrap replay --schedules N`: does a launch's result depend on the order its work-groups
//! run in? (CLFuzz's schedule amplifier, done right.)
//!
//! Each program is rewritten once by `cltrap_kernel::permute` so its logical work-group ids come
//! from a table passed as an extra argument, and built once. Each launch then runs M times under
//! the identity table (repeats) and once under each of N random shape-preserving tables
//! (schedules, seeds `S`, `S+1`, …). The verdict:
//! - `deterministic`: every run gave the same outputs;
//! - `schedule-dependent`: the repeats agree but some schedule gives other outputs, and gives
//!   them again when re-run — an inter-work-group race (or a kernel relying on group order);
//! - `nondeterministic`: two runs of the same schedule differ — an intra-group race or other
//!   nondeterminism (atomics whose order leaks into the result, uninitialised memory).
//!
//! Besides, the identity schedule's output is checked bit-exactly against what the application
//! saw, which checks the rewrite itself (and the replay).
//!
//! What a device can show (verified with the fixtures of `tests/kernels/`): on PoCL's CPU
//! device with one worker thread (`POCL_MAX_PTHREAD_COUNT=1`) work-groups run in order, so an
//! inter-group race (an in-place stencil across groups, a "last group sums the partials"
//! reduction) is `schedule-dependent`; with several worker threads or on a GPU (NVIDIA H100)
//! the same races also differ between repeats and are `nondeterministic`. A local-memory
//! reduction relying on lock-step execution without barriers is `nondeterministic` on both:
//! on PoCL because each work-item runs to its end before the next starts and reads stale local
//! memory, on the GPU because warps do not run in lock-step with each other. Race-free kernels
//! (vector add, tiled matrix multiply, barrier-synchronised reduction) stayed `deterministic`.
//! When the application passed a NULL local size, cltrap chooses one (up to 64 work-items
//! dividing the global size) so the table has groups to permute, and says so.
//!
//! Long captures: with `--per-kernel N` ([`per_kernel`]) launches of one kernel and NDRange
//! are classified once per distinct input, at most N inputs each; every other launch gets a
//! line saying which classified launch it repeats, or that the limit was reached. The race
//! check of the launches flagged runs on the native engine by default ([`races`]).

pub mod campaign;
mod per_kernel;
mod races;

use crate::check::Engine;
use crate::compare::Difference;
use crate::executor::{
    check_outputs, Deriver, DeviceSelector, ExecError, Expected, LaunchInput, Mismatch, RunOutput,
    Session,
};
use crate::replay::select;
use crate::variant::{word_buffer, DiskCache, Failure, VariantCache, VariantError};
use cltrap_capture::{ArgInfo, Capture, LaunchRecord};
use cltrap_kernel::permute::{
    group_counts, identity_permutation, permute_schedule, random_permutation, PermuteMap,
};
use per_kernel::{Decision, Limiter};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run and how to judge it.
#[derive(Debug, Clone)]
pub struct ScheduleOptions {
    /// Launch ids; `None` = all.
    pub ids: Option<Vec<u64>>,
    /// Where to run.
    pub device: DeviceSelector,
    /// Random schedules per launch (N).
    pub schedules: u32,
    /// Runs of the identity schedule per launch (M, at least 1).
    pub repeats: u32,
    /// Seed of the first schedule; schedule `k` uses `seed + k`.
    pub seed: u64,
    /// How close floating-point outputs of two runs must be (default: bit-exact).
    pub closeness: crate::compare::Closeness,
    /// Keep permuted sources in this directory and reuse them (no libclang needed on a hit).
    pub instrument_cache: Option<PathBuf>,
    /// Run the race check ([`crate::check`]) on every schedule-dependent or
    /// nondeterministic launch, within this much wall time in all; `None` = do not.
    pub race_check: Option<Duration>,
    /// The engine of the race check (native by default; Oclgrind on request).
    pub race_engine: Engine,
    /// Classify launches of one kernel and NDRange once per distinct input, at most this many
    /// inputs per kernel and NDRange (see [`per_kernel`]); `None` = every launch.
    pub per_kernel: Option<u32>,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        ScheduleOptions {
            ids: None,
            device: DeviceSelector::default(),
            schedules: 10,
            repeats: 3,
            seed: 1,
            closeness: crate::compare::Closeness::EXACT,
            instrument_cache: None,
            race_check: Some(Duration::from_secs(120)),
            race_engine: Engine::Native,
            per_kernel: None,
        }
    }
}

/// The classification of one launch.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// All runs agreed.
    Deterministic,
    /// A schedule reproducibly gives other outputs than the identity.
    ScheduleDependent {
        /// The seed of the schedule (`--seed SEED --schedules 1` reproduces it).
        seed: u64,
        /// First difference: `expected` is the identity's value, `got` the schedule's.
        diff: Mismatch,
    },
    /// Two runs of one schedule differ.
    Nondeterministic {
        /// `None`: two repeats of the identity differ; `Some(seed)`: two runs of that schedule.
        seed: Option<u64>,
        /// First difference between the two runs (`expected` = the earlier run).
        diff: Mismatch,
    },
    /// Not runnable from this capture (reason).
    Skipped(String),
    /// Not classified again (`--per-kernel`): the same kernel, NDRange and inputs as an
    /// earlier launch that was.
    SameAs {
        /// The classified launch.
        launch: u64,
        /// Its verdict in one word (`deterministic`, `schedule-dependent`, ...).
        verdict: &'static str,
    },
    /// Not classified (`--per-kernel N`): its kernel and NDRange already had N classified
    /// inputs, none of them this launch's.
    OverLimit {
        /// N.
        limit: u32,
        /// The kernel and NDRange in words.
        class: String,
        /// The launches classified for it.
        classified: Vec<u64>,
    },
    /// Instrumenting, building or running failed: one line, and the full message.
    Error {
        /// One line for the report.
        line: String,
        /// Everything (build log included).
        full: String,
    },
}

/// Time spent on one launch, for `--timing`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ScheduleTiming {
    /// Parse + rewrite of the program (0 when it was cached from an earlier launch).
    pub instrument: Duration,
    /// Compile of the permuted program (0 when cached).
    pub compile: Duration,
    /// Wall time of every run (host side: buffers in, kernel, buffers out).
    pub runs: Vec<Duration>,
    /// Device time of every run's kernel, when the driver reports it.
    pub kernel_ns: Vec<u64>,
}

/// One launch's result.
#[derive(Debug, Clone)]
pub struct ScheduleResult {
    /// Launch id.
    pub id: u64,
    /// Kernel name.
    pub kernel: String,
    /// Random schedules run.
    pub schedules: u32,
    /// Identity repeats run.
    pub repeats: u32,
    /// Work-groups of the launch (schedules cannot differ with one).
    pub groups: u64,
    /// The local size cltrap chose when the application passed NULL.
    pub chosen_local: Option<Vec<u64>>,
    /// The verdict.
    pub verdict: Verdict,
    /// Where the identity schedule's output differs from what the application saw (bit-exact).
    pub identity_vs_recorded: Option<Mismatch>,
    /// Time spent.
    pub timing: ScheduleTiming,
}

fn difference_text(d: &Difference) -> (String, String, String) {
    match d {
        Difference::Value {
            element_index,
            scalar,
            expected,
            got,
            ..
        } => {
            let f = |b: &[u8]| match scalar {
                Some(s) => s.format(b),
                None => format!("0x{:02x}", b.first().copied().unwrap_or(0)),
            };
            let unit = if scalar.is_some() { "element" } else { "byte" };
            (format!("{unit} {element_index}"), f(expected), f(got))
        }
        Difference::Size { expected, got } => (
            "size".into(),
            format!("{expected} bytes"),
            format!("{got} bytes"),
        ),
        Difference::Digest { expected, got } => ("digest".into(), expected.clone(), got.clone()),
    }
}

fn arg_text(m: &Mismatch) -> String {
    let name = if m.arg_name.is_empty() {
        "?"
    } else {
        &m.arg_name
    };
    let at = m
        .location
        .as_ref()
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    format!("argument {} ({name}){at}", m.arg_index)
}

impl std::fmt::Display for ScheduleResult {
    /// The stable line tests and tools parse:
    /// `launch <id> <kernel>: deterministic (N schedules, M repeats)`,
    /// `launch <id> <kernel>: schedule-dependent: argument i (name) element k differs under schedule seed S: identity X, schedule Y`,
    /// `launch <id> <kernel>: nondeterministic: argument i (name) element k differs between repeats of the identity schedule: X, then Y`,
    /// `… skipped: …`, `… error: …`; a second line `  note: …` when the identity schedule does
    /// not reproduce the recorded output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "launch {} {}: ", self.id, self.kernel)?;
        match &self.verdict {
            Verdict::Deterministic => {
                write!(
                    f,
                    "deterministic ({} schedules, {} repeats)",
                    self.schedules, self.repeats
                )?;
                if self.groups <= 1 {
                    write!(f, " (one work-group: schedules cannot differ)")?;
                }
            }
            Verdict::ScheduleDependent { seed, diff } => {
                let (at, a, b) = difference_text(&diff.difference);
                write!(
                    f,
                    "schedule-dependent: {} {at} differs under schedule seed {seed}: identity {a}, schedule {b}",
                    arg_text(diff)
                )?;
            }
            Verdict::Nondeterministic { seed, diff } => {
                let (at, a, b) = difference_text(&diff.difference);
                let which = match seed {
                    None => "repeats of the identity schedule".to_string(),
                    Some(s) => format!("two runs of schedule seed {s}"),
                };
                write!(
                    f,
                    "nondeterministic: {} {at} differs between {which}: {a}, then {b}",
                    arg_text(diff)
                )?;
            }
            Verdict::Skipped(r) => write!(f, "skipped: {r}")?,
            Verdict::Error { line, .. } => write!(f, "error: {line}")?,
            Verdict::SameAs { launch, verdict } => write!(
                f,
                "same kernel, sizes and inputs as launch #{launch}: not classified again (launch #{launch}: {verdict})"
            )?,
            Verdict::OverLimit {
                limit,
                class,
                classified,
            } => {
                let ids: Vec<String> = classified.iter().map(|i| format!("#{i}")).collect();
                write!(
                    f,
                    "skipped: per-kernel limit {limit} reached ({class}: inputs of launch(es) {} classified, this launch's differ)",
                    ids.join(", ")
                )?
            }
        }
        if let Some(l) = &self.chosen_local {
            let l: Vec<String> = l.iter().map(u64::to_string).collect();
            write!(
                f,
                " [local size NULL in the capture; ran with {}]",
                l.join("x")
            )?;
        }
        if let Some(m) = &self.identity_vs_recorded {
            write!(
                f,
                "\n  note: the identity schedule does not reproduce the recorded output: {m}"
            )?;
        }
        Ok(())
    }
}

/// Counts of a whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleSummary {
    /// Launches whose runs all agreed.
    pub deterministic: usize,
    /// Launches with an inter-work-group race.
    pub schedule_dependent: usize,
    /// Launches whose repeated runs differ.
    pub nondeterministic: usize,
    /// Launches not runnable from the capture.
    pub skipped: usize,
    /// Launches that failed.
    pub errors: usize,
    /// Launches not classified again: the inputs of a classified launch (`--per-kernel`).
    pub same_inputs: usize,
    /// Launches not classified: past the per-kernel limit (`--per-kernel`).
    pub over_limit: usize,
    /// N of `--per-kernel N`, when given.
    pub per_kernel: Option<u32>,
    /// Launches whose identity schedule differs from the recorded output.
    pub identity_mismatches: usize,
    /// Distinct permuted programs built.
    pub programs_built: usize,
}

impl ScheduleSummary {
    /// Exit status: 2 if anything failed, 1 if any launch is schedule-dependent or
    /// nondeterministic, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            2
        } else if self.schedule_dependent + self.nondeterministic > 0 {
            1
        } else {
            0
        }
    }
}

impl std::fmt::Display for ScheduleSummary {
    /// `schedules: T launch(es): ...`; with `--per-kernel N` the launches not classified are
    /// counted after the verdicts, and included in T.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "schedules: {} launch(es): {} deterministic, {} schedule-dependent, {} nondeterministic, {} skipped, {} failed",
            self.deterministic
                + self.schedule_dependent
                + self.nondeterministic
                + self.skipped
                + self.errors
                + self.same_inputs
                + self.over_limit,
            self.deterministic,
            self.schedule_dependent,
            self.nondeterministic,
            self.skipped,
            self.errors,
        )?;
        if let Some(n) = self.per_kernel {
            write!(
                f,
                "; --per-kernel {n}: {} not classified again (same kernel, sizes and inputs as a classified launch), {} skipped at the per-kernel limit",
                self.same_inputs, self.over_limit
            )?;
        }
        write!(
            f,
            "; {} identity run(s) differ from the recording; {} program(s) built",
            self.identity_mismatches, self.programs_built
        )
    }
}

/// Largest divisor of `n` that is at most `cap` (at least 1).
fn divisor_at_most(n: u64, cap: u64) -> u64 {
    (1..=cap.min(n).max(1))
        .rev()
        .find(|d| n.is_multiple_of(*d))
        .unwrap_or(1)
}

/// A local size for a launch whose application passed NULL: the table needs a group count.
/// Up to 64 work-items per group, dividing the global size evenly (no partial groups).
pub fn choose_local_size(global: &[u64]) -> Vec<u64> {
    let mut room = 64u64;
    global
        .iter()
        .map(|g| {
            let l = divisor_at_most(*g, room);
            room = (room / l).max(1);
            l
        })
        .collect()
}

/// Runs the selected launches under permuted schedules on an opened session, calling
/// `report` after each one.
pub fn run_on(
    session: &Session,
    capture: &Capture,
    launches: &[&LaunchRecord],
    opts: &ScheduleOptions,
    report: impl FnMut(&ScheduleResult),
) -> ScheduleSummary {
    run_with(session, capture, launches, opts, |_| {}, report)
}

/// The verdict in one word, as a launch with the same inputs quotes it.
fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Deterministic => "deterministic",
        Verdict::ScheduleDependent { .. } => "schedule-dependent",
        Verdict::Nondeterministic { .. } => "nondeterministic",
        Verdict::Skipped(_) | Verdict::OverLimit { .. } => "skipped",
        Verdict::Error { .. } => "failed",
        Verdict::SameAs { verdict, .. } => verdict,
    }
}

/// [`run_on`], calling `starting` before each launch (a progress bar names it).
fn run_with(
    session: &Session,
    capture: &Capture,
    launches: &[&LaunchRecord],
    opts: &ScheduleOptions,
    mut starting: impl FnMut(&LaunchRecord),
    mut report: impl FnMut(&ScheduleResult),
) -> ScheduleSummary {
    let mut cache: VariantCache<PermuteMap> =
        VariantCache::with_disk(opts.instrument_cache.clone().map(|dir| DiskCache {
            dir,
            pass: "permute",
        }));
    let mut summary = ScheduleSummary {
        per_kernel: opts.per_kernel,
        ..ScheduleSummary::default()
    };
    let mut deriver = Deriver::new(capture);
    let mut limiter = opts.per_kernel.map(Limiter::new);
    // The verdicts of classified launches, for the launches that repeat their inputs.
    let mut words: HashMap<u64, &'static str> = HashMap::new();
    for l in launches {
        starting(l);
        let decision = limiter
            .as_mut()
            .map_or(Decision::Classify, |lim| lim.decide(l));
        let r = match decision {
            Decision::Classify => {
                one_launch(session, capture, l, opts, &mut cache, &mut deriver, &|| {})
            }
            Decision::SameAs(first) => not_classified(
                l,
                Verdict::SameAs {
                    launch: first,
                    verdict: words.get(&first).copied().unwrap_or("skipped"),
                },
            ),
            Decision::OverLimit {
                limit,
                class,
                classified,
            } => not_classified(
                l,
                Verdict::OverLimit {
                    limit,
                    class,
                    classified,
                },
            ),
        };
        match &r.verdict {
            Verdict::Deterministic => summary.deterministic += 1,
            Verdict::ScheduleDependent { .. } => summary.schedule_dependent += 1,
            Verdict::Nondeterministic { .. } => summary.nondeterministic += 1,
            Verdict::Skipped(_) => summary.skipped += 1,
            Verdict::Error { .. } => summary.errors += 1,
            Verdict::SameAs { .. } => summary.same_inputs += 1,
            Verdict::OverLimit { .. } => summary.over_limit += 1,
        }
        words.insert(r.id, verdict_word(&r.verdict));
        summary.identity_mismatches += r.identity_vs_recorded.is_some() as usize;
        report(&r);
    }
    summary.programs_built = cache.built();
    summary
}

/// The result of a launch `--per-kernel` does not classify.
fn not_classified(l: &LaunchRecord, verdict: Verdict) -> ScheduleResult {
    ScheduleResult {
        id: l.id,
        kernel: l.kernel.clone(),
        schedules: 0,
        repeats: 0,
        groups: 0,
        chosen_local: None,
        verdict,
        identity_vs_recorded: None,
        timing: ScheduleTiming::default(),
    }
}

/// Opens the selected device and runs; the `Session` error (no device) is returned as is.
pub fn run(
    capture: &Capture,
    opts: &ScheduleOptions,
    report: impl FnMut(&ScheduleResult),
) -> Result<(Session, ScheduleSummary), ExecError> {
    let launches = select(capture, opts.ids.as_deref())?;
    let session = Session::open(&opts.device)?;
    let summary = run_on(&session, capture, &launches, opts, report);
    Ok((session, summary))
}

fn failed(f: Failure) -> Verdict {
    if f.skip {
        Verdict::Skipped(f.line.trim_start_matches("not replayable: ").to_string())
    } else {
        Verdict::Error {
            line: f.line,
            full: f.full,
        }
    }
}

/// A failure of this launch (not cached: it concerns the launch, not the program).
fn launch_failure(e: impl Into<VariantError>) -> Failure {
    Failure::from(&e.into())
}

/// Outputs of the kernel's own arguments as the expectation for the next run.
fn as_expected(out: &RunOutput, n: usize) -> Vec<Option<Expected>> {
    out.outputs
        .iter()
        .take(n)
        .map(|o| o.as_ref().map(|b| Expected::Bytes(b.clone())))
        .collect()
}

fn one_launch(
    session: &Session,
    capture: &Capture,
    l: &LaunchRecord,
    opts: &ScheduleOptions,
    cache: &mut VariantCache<PermuteMap>,
    deriver: &mut Deriver<'_>,
    alive: &dyn Fn(),
) -> ScheduleResult {
    let mut r = ScheduleResult {
        id: l.id,
        kernel: l.kernel.clone(),
        schedules: opts.schedules,
        repeats: opts.repeats.max(1),
        groups: 0,
        chosen_local: None,
        verdict: Verdict::Deterministic,
        identity_vs_recorded: None,
        timing: ScheduleTiming::default(),
    };
    r.verdict = match classify(session, capture, l, opts, cache, &mut r, deriver, alive) {
        Ok(v) => v,
        Err(f) => failed(f),
    };
    r
}

#[allow(clippy::too_many_arguments)]
fn classify(
    session: &Session,
    capture: &Capture,
    l: &LaunchRecord,
    opts: &ScheduleOptions,
    cache: &mut VariantCache<PermuteMap>,
    r: &mut ScheduleResult,
    deriver: &mut Deriver<'_>,
    alive: &dyn Fn(),
) -> Result<Verdict, Failure> {
    let mut input = deriver.input(session, l).map_err(launch_failure)?;
    // Write-only buffers whose pre-launch contents were not recorded start as stand-ins in
    // every run alike: only the runs compare them, not the recording.
    let expected =
        input.without_stand_ins(LaunchInput::expected_outputs(capture, l).map_err(launch_failure)?);
    let (variant, fresh) = cache.get(session, capture, &l.program, |src, options| {
        let model = cltrap_kernel::parse_program(src, options)?;
        let p = permute_schedule(&model)?;
        Ok((p.source, p.map))
    })?;
    if fresh {
        r.timing.instrument = variant.instrument_time;
        r.timing.compile = variant.compile_time;
    }
    if !variant.pass.kernels.iter().any(|k| k.name == l.kernel) {
        return Err(launch_failure(ExecError::NoKernel {
            kernel: l.kernel.clone(),
        }));
    }
    if input.local_size.is_none() {
        let chosen = choose_local_size(&input.global_size);
        input.local_size = Some(chosen.clone());
        r.chosen_local = Some(chosen);
    }
    let local = input.local_size.clone().unwrap_or_default();
    let n = group_counts(&input.global_size, &local);
    r.groups = n[0] * n[1] * n[2];
    let infos: Vec<ArgInfo> = l.args.iter().map(|a| a.info().clone()).collect();
    let args = input.args.len();
    let run = |table: &[u32], timing: &mut ScheduleTiming| -> Result<RunOutput, Failure> {
        let start = Instant::now();
        let out = session
            .run(&variant.built, &input, &[word_buffer(table)])
            .map_err(launch_failure)?;
        timing.runs.push(start.elapsed());
        timing.kernel_ns.extend(out.kernel_ns);
        // Each run restarts a campaign worker's deadline: a launch is many runs.
        alive();
        Ok(out)
    };
    let diff = |a: &RunOutput, b: &RunOutput, closeness: crate::compare::Closeness| {
        check_outputs(&input, &infos, &as_expected(a, args), b, closeness)
            .into_iter()
            .next()
    };

    let identity = identity_permutation(&input.global_size, &local);
    let reference = run(&identity, &mut r.timing)?;
    if r.chosen_local.is_none() {
        r.identity_vs_recorded = check_outputs(&input, &infos, &expected, &reference, 0)
            .into_iter()
            .next();
    }
    for _ in 1..r.repeats {
        let again = run(&identity, &mut r.timing)?;
        if let Some(d) = diff(&reference, &again, opts.closeness) {
            return Ok(Verdict::Nondeterministic {
                seed: None,
                diff: d,
            });
        }
    }
    for k in 0..opts.schedules {
        let seed = opts.seed.wrapping_add(u64::from(k));
        let table = random_permutation(&input.global_size, &local, seed);
        let out = run(&table, &mut r.timing)?;
        if let Some(d) = diff(&reference, &out, opts.closeness) {
            // Confirm: the same schedule again must give the same outputs, or the difference
            // is not the schedule's doing.
            let again = run(&table, &mut r.timing)?;
            if let Some(d2) = diff(&out, &again, opts.closeness) {
                return Ok(Verdict::Nondeterministic {
                    seed: Some(seed),
                    diff: d2,
                });
            }
            return Ok(Verdict::ScheduleDependent { seed, diff: d });
        }
    }
    Ok(Verdict::Deterministic)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mean_ms(v: &[Duration]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64
    }
}

/// The `--timing` line of one launch: one compile against N runs (the cost model of schedule
/// amplification), `timing launch <id> <kernel>: instrument X ms, compile Y ms, R runs: mean Z ms wall, mean W ms kernel`.
pub fn timing_line(r: &ScheduleResult) -> String {
    let t = &r.timing;
    let kernel = if t.kernel_ns.is_empty() {
        "n/a".to_string()
    } else {
        format!(
            "{:.3} ms",
            t.kernel_ns.iter().map(|&n| n as f64).sum::<f64>() / t.kernel_ns.len() as f64 / 1e6
        )
    };
    format!(
        "timing launch {} {}: instrument {:.1} ms, compile {:.1} ms, {} runs: mean {:.3} ms wall, mean {kernel} kernel",
        r.id,
        r.kernel,
        ms(t.instrument),
        ms(t.compile),
        t.runs.len(),
        mean_ms(&t.runs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_local_size_divides_the_global_size_and_stays_small() {
        assert_eq!(choose_local_size(&[1024]), [64]);
        assert_eq!(choose_local_size(&[1000]), [50]);
        assert_eq!(choose_local_size(&[97]), [1]);
        assert_eq!(choose_local_size(&[64, 64]), [64, 1]);
        assert_eq!(choose_local_size(&[6, 10, 7]), [6, 10, 1]);
        for g in [[12u64, 9, 5], [640, 480, 1], [1, 1, 1]] {
            let l = choose_local_size(&g);
            assert!(l.iter().product::<u64>() <= 64);
            assert!(g.iter().zip(&l).all(|(g, l)| g % l == 0), "{g:?} {l:?}");
        }
    }

    #[test]
    fn exit_codes_put_errors_before_races() {
        let mut s = ScheduleSummary {
            deterministic: 3,
            ..Default::default()
        };
        assert_eq!(s.exit_code(), 0);
        s.nondeterministic = 1;
        assert_eq!(s.exit_code(), 1);
        s.errors = 1;
        assert_eq!(s.exit_code(), 2);
    }
}
