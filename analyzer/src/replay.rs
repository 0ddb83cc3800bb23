//! `cltrap replay`: re-run captured launches and check each against what the application saw.

use crate::compare::Closeness;
use crate::executor::{
    check_outputs, BuiltProgram, Chain, Deriver, DeviceSelector, DeviceVerification, ExecError,
    LaunchInput, Mismatch, Ran, Session, Traffic,
};
use cltrap_capture::{ArgRecord, Capture, Content, LaunchRecord, ReadError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What to replay and how to judge it.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Launch ids to replay; `None` = all.
    pub ids: Option<Vec<u64>>,
    /// Where to replay.
    pub device: DeviceSelector,
    /// How close floating-point outputs must be (default: bit-exact).
    pub closeness: Closeness,
}

/// The verdict on one launch.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Every output matched. Carries the kernel's device time when known.
    Ok { kernel_ns: Option<u64> },
    /// The first argument that differs.
    Mismatch(Mismatch),
    /// Not replayable from this capture (reason).
    Skipped(String),
    /// Not replayable on this device: an input is kept only as a digest, and the launch that
    /// produced it computes other bits here than on the capture's device (the reason names
    /// it). Not a failure of the replay: the capture does not hold what this device needs.
    NotHere(String),
    /// Replay failed (build error, refused argument, ...): one line, and the full message.
    Error { line: String, full: String },
}

/// One launch's result.
#[derive(Debug, Clone)]
pub struct LaunchResult {
    /// Launch id in the capture.
    pub id: u64,
    /// Kernel name.
    pub kernel: String,
    /// The verdict.
    pub outcome: Outcome,
    /// With a mismatch: the other arguments that differ too, in argument order.
    pub other_mismatches: Vec<Mismatch>,
}

impl std::fmt::Display for LaunchResult {
    /// The stable line other tools parse: `launch <id> <kernel>: ok|MISMATCH …|skipped: …|not
    /// replayable on this device: …|error: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "launch {} {}: ", self.id, self.kernel)?;
        match &self.outcome {
            Outcome::Ok { .. } => write!(f, "ok"),
            Outcome::Mismatch(m) => {
                write!(f, "MISMATCH {m}")?;
                for other in &self.other_mismatches {
                    write!(f, "; also {other}")?;
                }
                Ok(())
            }
            Outcome::Skipped(r) => write!(f, "skipped: {r}"),
            Outcome::NotHere(r) => write!(f, "{NOT_HERE}: {r}"),
            Outcome::Error { line, .. } => write!(f, "error: {line}"),
        }
    }
}

/// Where the replay of launches spent its time on the host, summed over them (for
/// `--timing`): a replay much slower than the application names its costly step, on
/// whatever device it runs. Nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phases {
    /// Restoring inputs: from the capture or the cache, deriving included.
    pub restore_ns: u64,
    /// Running: creating and uploading what is not bound, the kernel, reading outputs back
    /// (or digesting them on the device and reading back the digests' partials).
    pub run_ns: u64,
    /// The kernels' own device time, where the driver reports it (part of `run_ns`).
    pub kernel_ns: u64,
    /// Checking outputs read back against their recorded digests, on the host.
    pub verify_ns: u64,
    /// Loading the expected contents of outputs not verified by digest and comparing them.
    pub compare_ns: u64,
    /// Where the runs' host time went (part of `run_ns`).
    #[serde(default)]
    pub split: crate::executor::RunSplit,
}

impl Phases {
    /// The time of `self` since `earlier` (a snapshot of the same sums).
    pub fn since(&self, earlier: &Phases) -> Phases {
        Phases {
            restore_ns: self.restore_ns.saturating_sub(earlier.restore_ns),
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            kernel_ns: self.kernel_ns.saturating_sub(earlier.kernel_ns),
            verify_ns: self.verify_ns.saturating_sub(earlier.verify_ns),
            compare_ns: self.compare_ns.saturating_sub(earlier.compare_ns),
            split: self.split.since(&earlier.split),
        }
    }

    /// Adds `other`'s sums to these.
    pub fn add(&mut self, other: &Phases) {
        self.restore_ns += other.restore_ns;
        self.run_ns += other.run_ns;
        self.kernel_ns += other.kernel_ns;
        self.verify_ns += other.verify_ns;
        self.compare_ns += other.compare_ns;
        self.split.add(&other.split);
    }

    /// All host phases together.
    pub fn total_ns(&self) -> u64 {
        self.restore_ns + self.run_ns + self.verify_ns + self.compare_ns
    }
}

/// Nanoseconds since `t`.
fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// The verdict word of [`Outcome::NotHere`] in per-launch and summary lines.
pub const NOT_HERE: &str = "not replayable on this device";

/// Counts of a whole replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Launches whose outputs all matched.
    pub ok: usize,
    /// Launches with a differing output.
    pub mismatches: usize,
    /// Launches that cannot be replayed from the capture.
    pub skipped: usize,
    /// Launches whose replay failed.
    pub errors: usize,
    /// Launches whose derived inputs this device cannot re-create ([`Outcome::NotHere`]).
    pub not_here: usize,
    /// Distinct programs built.
    pub programs_built: usize,
    /// Earlier launches re-executed to re-create derived inputs (the cost of deriving: about
    /// 0 for a replay of a whole capture in order, the chain's length for one late launch).
    pub rederived: u64,
}

impl Summary {
    /// Process exit status: 2 if any launch could not be replayed for an error, 1 on any
    /// mismatch, else 0 (skipped launches and launches not replayable on this device do not
    /// fail a replay; the summary names them).
    pub fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            2
        } else if self.mismatches > 0 {
            1
        } else {
            0
        }
    }
}

impl std::fmt::Display for Summary {
    /// One line; it never contains the word `ok`, so tools counting `ok` lines count launches.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "replayed {} launch(es): {} matched, {} mismatched, {} skipped, {} failed",
            self.ok + self.mismatches + self.skipped + self.errors + self.not_here,
            self.ok,
            self.mismatches,
            self.skipped,
            self.errors,
        )?;
        if self.not_here > 0 {
            write!(f, ", {} {NOT_HERE}", self.not_here)?;
        }
        write!(f, "; {} program(s) built", self.programs_built)?;
        if self.rederived > 0 {
            write!(
                f,
                "; {} earlier launch(es) re-executed to derive inputs",
                self.rederived
            )?;
        }
        Ok(())
    }
}

/// The launches `ids` selects, in the order given; an unknown id is an error.
pub fn select<'a>(
    capture: &'a Capture,
    ids: Option<&[u64]>,
) -> Result<Vec<&'a LaunchRecord>, ExecError> {
    match ids {
        None => Ok(capture.launches.iter().collect()),
        Some(ids) => {
            // One pass to index, so selecting a range of a huge capture stays linear.
            let by_id: HashMap<u64, &LaunchRecord> =
                capture.launches.iter().map(|l| (l.id, l)).collect();
            ids.iter()
                .map(|id| {
                    by_id
                        .get(id)
                        .copied()
                        .ok_or(ExecError::Capture(ReadError::NoSuchLaunch {
                            id: *id,
                            count: capture.launches.len(),
                        }))
                })
                .collect()
        }
    }
}

fn one_line(e: &ExecError) -> String {
    match e {
        ExecError::Build { device, log } => {
            let first = log
                .lines()
                .find(|l| l.contains("error"))
                .or_else(|| log.lines().next())
                .unwrap_or("");
            format!("the program does not build on {device}: {}", first.trim())
        }
        other => other.to_string().lines().next().unwrap_or("").to_string(),
    }
}

/// Replays the selected launches on `session`, calling `report` after each one.
/// Each distinct program is built once and reused for all its launches. Inputs the capture
/// keeps only as digests are derived by re-executing their producers ([`Deriver`]).
pub fn replay_on(
    session: &Session,
    capture: &Capture,
    launches: &[&LaunchRecord],
    closeness: impl Into<Closeness>,
    mut report: impl FnMut(&LaunchResult),
) -> Summary {
    let mut r = Replayer::new(capture, closeness);
    for l in launches {
        report(&r.one(session, l));
    }
    r.summary.rederived = r.deriver.executed;
    r.summary
}

/// Replays launches one at a time on one session, keeping what the next launch reuses: each
/// program built once, the outputs that derived inputs are re-created from, and the last
/// launch's verified output buffers on the device ([`Chain`]: a next launch that reads them
/// binds them instead of uploading). A campaign's worker keeps one across the launches it
/// runs, so one worker replaying in order re-executes nothing twice.
pub struct Replayer<'c> {
    capture: &'c Capture,
    closeness: Closeness,
    programs: HashMap<String, Result<Rc<BuiltProgram>, (String, String)>>,
    deriver: Deriver<'c>,
    chain: Chain,
    /// Counts of the launches replayed so far (`rederived` is filled by [`replay_on`]).
    pub summary: Summary,
    /// Where the launches replayed so far spent their time.
    pub phases: Phases,
}

impl<'c> Replayer<'c> {
    /// A replayer over `capture`, judging outputs with `closeness`.
    pub fn new(capture: &'c Capture, closeness: impl Into<Closeness>) -> Replayer<'c> {
        Replayer {
            capture,
            closeness: closeness.into(),
            programs: HashMap::new(),
            deriver: Deriver::new(capture),
            chain: Chain::new(),
            summary: Summary::default(),
            phases: Phases::default(),
        }
    }

    /// Replays `l` on `session` (always the same session for one replayer) and counts it.
    pub fn one(&mut self, session: &Session, l: &LaunchRecord) -> LaunchResult {
        say_fallback(session, &self.chain);
        let mut other_mismatches = Vec::new();
        let (outcome, waits) = session.waited(|| {
            replay_one(
                session,
                self.capture,
                l,
                self.closeness,
                &mut other_mismatches,
                &mut self.programs,
                &mut self.summary,
                &mut self.deriver,
                &mut self.chain,
                &mut self.phases,
            )
        });
        self.chain.traffic.waits += waits;
        match &outcome {
            Outcome::Ok { .. } => self.summary.ok += 1,
            Outcome::Mismatch(_) => self.summary.mismatches += 1,
            Outcome::Skipped(_) => self.summary.skipped += 1,
            Outcome::NotHere(_) => self.summary.not_here += 1,
            Outcome::Error { .. } => self.summary.errors += 1,
        }
        LaunchResult {
            id: l.id,
            kernel: l.kernel.clone(),
            outcome,
            other_mismatches,
        }
    }

    /// Whether the program `hash` was built here (by a launch of it replayed so far).
    pub fn built(&self, hash: &str) -> bool {
        matches!(self.programs.get(hash), Some(Ok(_)))
    }

    /// Earlier launches re-executed so far to re-create derived inputs.
    pub fn rederived(&self) -> u64 {
        self.deriver.executed
    }

    /// How the buffer inputs replayed so far reached the device (bound from the previous
    /// launch's outputs, or uploaded), and how often the host waited for it.
    pub fn traffic(&self) -> Traffic {
        self.chain.traffic
    }
}

/// Says once per process, on stderr, that outputs recorded as `dd128` digests are read back
/// because the device cannot digest them ([`DeviceVerification::Unavailable`]).
fn say_fallback(session: &Session, chain: &Chain) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if SAID.load(Ordering::Relaxed) {
        return;
    }
    if let DeviceVerification::Unavailable(why) = chain.device_verification(session) {
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!(
                "cltrap: outputs cannot be verified on the device ({why}); they are read back instead"
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn replay_one(
    session: &Session,
    capture: &Capture,
    l: &LaunchRecord,
    closeness: Closeness,
    other_mismatches: &mut Vec<Mismatch>,
    programs: &mut HashMap<String, Result<Rc<BuiltProgram>, (String, String)>>,
    summary: &mut Summary,
    deriver: &mut Deriver<'_>,
    chain: &mut Chain,
    phases: &mut Phases,
) -> Outcome {
    let error = |e: &ExecError| {
        if let ExecError::NotDerivable {
            producer,
            producer_arg,
            ..
        } = e
        {
            return Outcome::NotHere(format!(
                "its input derives from launch {producer} (argument {producer_arg}), which computes other bits here than on the capture's device (or is nondeterministic); capture with a larger budget (--derive-after-mb) or replay on the capture device"
            ));
        }
        if e.is_skip() {
            Outcome::Skipped(match e {
                ExecError::NotReplayable(r) => r.clone(),
                ExecError::Capture(ReadError::NotRecorded { what, why }) => {
                    format!("{what} were not recorded: {why}")
                }
                other => other.to_string(),
            })
        } else {
            Outcome::Error {
                line: one_line(e),
                full: e.to_string(),
            }
        }
    };
    let executed = deriver.executed;
    let started = Instant::now();
    // Inputs the chain holds on the device only (verified there) are bound, not restored;
    // what it holds that this launch does not bind reaches the host first where a later
    // launch derives from it.
    let mut plan = chain.plan(l);
    chain.settle(session, &plan, deriver, l.id);
    if deriver.will_execute(l, &plan.resident()) {
        plan.restore_all();
        chain.settle(session, &plan, deriver, l.id);
    }
    let restored = deriver.input_except(session, l, &plan.resident());
    phases.restore_ns += ns(started);
    let mut input = match restored {
        Ok(i) => i,
        Err(e) => {
            plan.restore_all();
            chain.settle(session, &plan, deriver, l.id);
            chain.clear();
            return error(&e);
        }
    };
    if deriver.executed != executed {
        // Producers ran on the device since the chain's launch.
        if let Err(e) = chain.fill(session, &mut input, &mut plan) {
            chain.clear();
            return error(&e);
        }
        chain.clear();
    }
    if !programs.contains_key(&l.program) {
        let (built, missing) = match capture.program(&l.program) {
            Ok(record) => (
                deriver.program(session, &l.program),
                crate::headers::Headers::missing(&record.includes),
            ),
            Err(e) => (Err(ExecError::from(e)), Vec::new()),
        };
        if built.is_ok() {
            summary.programs_built += 1;
        }
        let entry = built.map_err(|e| {
            let mut line = one_line(&e);
            let mut full = e.to_string();
            if !missing.is_empty() {
                // The likeliest cause: a header the application's build could not find either
                // was captured by name only.
                let names = missing.join(", ");
                line = format!("{line} (not found when the program was captured: {names})");
                full = format!("{full}\nnot found when the program was captured: {names}");
            }
            (line, full)
        });
        programs.insert(l.program.clone(), entry);
    }
    let program = match programs.get(&l.program) {
        Some(Ok(p)) => p,
        Some(Err((line, full))) => {
            if line.starts_with("not replayable") {
                return Outcome::Skipped(line.trim_start_matches("not replayable: ").to_string());
            }
            return Outcome::Error {
                line: line.clone(),
                full: full.clone(),
            };
        }
        None => {
            return Outcome::Error {
                line: "internal: program cache".into(),
                full: String::new(),
            }
        }
    };
    let afters: Vec<&Content> = l
        .args
        .iter()
        .filter_map(|a| match a {
            ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. } => Some(after),
            _ => None,
        })
        .collect();
    let nothing_to_compare =
        !afters.is_empty() && afters.iter().all(|c| matches!(c, Content::Missing { .. }));
    // Run even then: a fuzzing finding (saved without outputs) must reproduce its crash,
    // hang or failure here.
    // A launch with stand-ins runs twice: the chain is not used for it.
    let started = Instant::now();
    let split = session.run_split();
    let run = if input.stand_ins.is_empty() {
        let (ran, waits) = session.waited(|| chain.run(session, program, l, &input, &plan));
        chain.traffic.run_waits += waits;
        ran
    } else {
        let filled = chain.fill(session, &mut input, &mut plan);
        chain.clear();
        filled.and_then(|()| {
            let (out, waits) = session.waited(|| session.run(program, &input, &[]));
            chain.traffic.run_waits += waits;
            out.map(|out| Ran {
                out,
                objects: Vec::new(),
                on_device: Vec::new(),
            })
        })
    };
    phases.run_ns += ns(started);
    phases.split.add(&session.run_split().since(&split));
    let Ran {
        mut out,
        objects,
        on_device,
    } = match run {
        Ok(o) => o,
        Err(e) => return error(&e),
    };
    phases.kernel_ns += out.kernel_ns.unwrap_or(0);
    if nothing_to_compare {
        return Outcome::Skipped(
            "ran, but no buffer contents after the launch were recorded, so there is nothing to compare"
                .into(),
        );
    }
    if !input.stand_ins.is_empty() {
        let started = Instant::now();
        let split = session.run_split();
        let (other, waits) =
            session.waited(|| session.run(program, &input.with_stand_in_fill(0xa5), &[]));
        chain.traffic.run_waits += waits;
        phases.run_ns += ns(started);
        phases.split.add(&session.run_split().since(&split));
        let other = match other {
            Ok(o) => o,
            Err(e) => return error(&e),
        };
        for i in &input.stand_ins {
            if out.outputs.get(*i) != other.outputs.get(*i) {
                let name = l
                    .args
                    .get(*i)
                    .map(|a| a.info().name.clone())
                    .unwrap_or_default();
                return Outcome::Skipped(format!(
                    "argument {i} ({name}) is write-only and its contents before the launch were not recorded; the kernel does not overwrite all of it"
                ));
            }
        }
    }
    let infos: Vec<_> = l.args.iter().map(|a| a.info().clone()).collect();
    // Outputs equal to their recorded contents need no comparison (and their recorded bytes
    // no reading); the rest are compared with the tolerance.
    let started = Instant::now();
    let mut verified = deriver.verify(l, &input, &out);
    for (v, d) in verified.iter_mut().zip(&on_device) {
        *v |= *d;
    }
    phases.verify_ns += ns(started);
    chain.keep(l, &input, objects, &verified, &on_device);
    deriver.offer(l, &mut out, &verified);
    let started = Instant::now();
    let expected = match LaunchInput::expected_outputs_except(capture, l, &verified) {
        Ok(x) => x,
        Err(e) => return error(&e),
    };
    let mut mismatches = check_outputs(&input, &infos, &expected, &out, closeness).into_iter();
    phases.compare_ns += ns(started);
    chain.recycle(input);
    match mismatches.next() {
        Some(m) => {
            other_mismatches.extend(mismatches);
            Outcome::Mismatch(m)
        }
        None => Outcome::Ok {
            kernel_ns: out.kernel_ns,
        },
    }
}

/// Opens the selected device and replays; the `Session` error (no device) is returned as is.
pub fn replay(
    capture: &Capture,
    opts: &ReplayOptions,
    report: impl FnMut(&LaunchResult),
) -> Result<(Session, Summary), ExecError> {
    let launches = select(capture, opts.ids.as_deref())?;
    let session = Session::open(&opts.device)?;
    let summary = replay_on(&session, capture, &launches, opts.closeness, report);
    Ok((session, summary))
}
