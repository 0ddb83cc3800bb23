//! `cltrap solve SUITE` (and `cltrap fuzz --solve`): selective constraint solving. For every
//! branch side or loop-boundary class that no case covers, the kernel is executed
//! symbolically ([`cltrap_kernel::symbolic`]); each model becomes a concrete case (the base
//! case with the solved scalars and buffer elements), which is **run** — only cases whose
//! counters show the slot covered enter the suite.
//!
//! `cltrap solve` runs as a campaign of the runner, one unit per kernel ([`units`]).

pub mod units;

use crate::executor::{DeviceSelector, InputArg, LaunchInput};
use crate::fuzz::campaign::{Campaign, KeptCase};
use crate::fuzz::error::FuzzError;
use crate::fuzz::runner::Runner;
use crate::fuzz::suite::SlotStatus;
use cltrap_kernel::interface::ArgKind;
use cltrap_kernel::symbolic::{self, Assignment, Geometry, Limits, SymArg, Target, Verdict};
use cltrap_kernel::Program;
use std::path::PathBuf;
use std::time::Duration;

/// `cltrap solve` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SolveArgs {
    /// The suite (or any capture) to complete; confirmed cases are appended to it.
    pub suite: PathBuf,
    /// Only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub device: DeviceSelector,
    /// Run executions in this process instead of a worker process.
    #[arg(long)]
    pub in_process: bool,
    /// Loop iterations unrolled per loop entry.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub loop_bound: u32,
    /// Seconds of symbolic execution per kernel.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub solver_time: f64,
    /// Devices, shards, `--resume` (one unit per kernel).
    #[command(flatten)]
    pub campaign: crate::campaign::CampaignArgs,
}

/// The solver's view of the arguments of `base`.
fn sym_args(c: &Campaign, base: &LaunchInput) -> Vec<SymArg> {
    base.args
        .iter()
        .enumerate()
        .map(|(i, a)| match (c.iface.args.get(i).map(|x| &x.kind), a) {
            (Some(ArgKind::Value { ty }), InputArg::Scalar(b)) if b.len() == ty.size() => {
                SymArg::Value(*ty)
            }
            (
                Some(ArgKind::Buffer {
                    layout: Some(l), ..
                }),
                InputArg::Buffer { bytes, .. },
            ) if l.size > 0 => SymArg::StructBuffer {
                layout: l.clone(),
                len: (bytes.len() / l.size) as u64,
            },
            (Some(ArgKind::Opaque { layout: Some(l) }), InputArg::Scalar(b))
                if b.len() == l.size =>
            {
                SymArg::Struct(l.clone())
            }
            (Some(ArgKind::Buffer { elem: Some(t), .. }), InputArg::Buffer { bytes, .. }) => {
                SymArg::Buffer {
                    elem: *t,
                    len: (bytes.len() / t.size()) as u64,
                }
            }
            (Some(ArgKind::Local { elem }), _) => SymArg::Local { elem: *elem },
            _ => SymArg::Other,
        })
        .collect()
}

/// Whether kernel `name` (or a helper it calls) asks for local ids, group ids or local sizes.
fn uses_local_ids(program: &Program, name: &str) -> bool {
    const IDS: &[&str] = &[
        "get_local_id",
        "get_group_id",
        "get_local_size",
        "get_num_groups",
        "get_enqueued_local_size",
    ];
    let mut todo = vec![name.to_string()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        let Some(func) = program.function(&f) else {
            continue;
        };
        if func.calls.iter().any(|c| IDS.contains(&c.as_str())) {
            return true;
        }
        todo.extend(func.calls.iter().cloned());
    }
    false
}

/// The constructs the solver does not model, each named once with where it is and how many
/// branch sides it kept the solver from answering (`built-in foo at line 3:5 (2 sides)`), so a
/// kernel's report says what is still missing instead of only listing sides.
pub fn unsupported_constructs(statuses: &[(u32, SlotStatus, Option<Duration>)]) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for (_, s, _) in statuses {
        if let SlotStatus::Unsupported { what } = s {
            match seen.iter_mut().find(|(w, _)| w == what) {
                Some((_, n)) => *n += 1,
                None => seen.push((what.clone(), 1)),
            }
        }
    }
    seen.into_iter()
        .map(|(w, n)| format!("{w} ({n} side{})", if n == 1 { "" } else { "s" }))
        .collect()
}

/// The base case with the solved values written in.
fn apply(base: &LaunchInput, c: &Campaign, a: &Assignment) -> LaunchInput {
    let mut input = base.clone();
    for (i, bytes) in &a.scalars {
        if let Some(InputArg::Scalar(b)) = input.args.get_mut(*i) {
            if b.len() == bytes.len() {
                b.copy_from_slice(bytes);
            }
        }
    }
    for (i, idx, bytes) in &a.elements {
        let width = match c.iface.args.get(*i).map(|x| &x.kind) {
            Some(ArgKind::Buffer {
                layout: Some(l), ..
            }) => l.size,
            Some(ArgKind::Buffer { elem: Some(t), .. }) => t.size(),
            _ => continue,
        };
        if let Some(InputArg::Buffer { bytes: b, .. }) = input.args.get_mut(*i) {
            let at = *idx as usize * width;
            if let Some(dst) = b.get_mut(at..at + width) {
                let n = bytes.len().min(width);
                dst[..n].copy_from_slice(&bytes[..n]);
            }
        }
    }
    input
}

/// Solves for every uncovered slot of `c`, runs each model, keeps the confirmed cases.
/// Returns per attempted slot its status and solver time.
pub fn solve_campaign(
    c: &mut Campaign,
    program: &Program,
    runner: &mut dyn Runner,
    limits: &Limits,
) -> Result<Vec<(u32, SlotStatus, Duration)>, FuzzError> {
    let open: Vec<Target> = c
        .slots
        .iter()
        .filter(|s| !c.covered.contains(&s.index))
        .map(Target::from)
        .collect();
    if open.is_empty() {
        return Ok(Vec::new());
    }
    let Some(base) = c
        .cases
        .iter()
        .find(|k| k.input.local_size.is_some())
        .or_else(|| c.cases.first())
        .map(|k| k.input.clone())
    else {
        return Ok(Vec::new());
    };
    // A NULL local size leaves local and group ids unknown: choose one (the solved case is
    // launched with it) when the kernel asks for them.
    let mut base = base;
    if base.local_size.is_none() && uses_local_ids(program, &c.kernel) {
        base.local_size = Some(
            base.global_size
                .iter()
                .enumerate()
                .map(|(d, g)| {
                    let cap = if d == 0 { 64 } else { 1 };
                    (1..=cap.min(*g)).rev().find(|l| g % l == 0).unwrap_or(1)
                })
                .collect(),
        );
    }
    let geometry = Geometry {
        global: base.global_size.clone(),
        local: base.local_size.clone(),
        offset: base.global_offset.clone(),
    };
    let args = sym_args(c, &base);
    // A defect in the solver must not end the campaign: open slots are then reported as
    // unsupported with the reason.
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        symbolic::solve(program, &c.kernel, &geometry, &args, &open, limits)
    }));
    let results = match run {
        Ok(r) => r?,
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown".into());
            return Ok(open
                .iter()
                .map(|t| {
                    (
                        t.id,
                        SlotStatus::Unsupported {
                            what: format!("internal solver error: {why}"),
                        },
                        Duration::ZERO,
                    )
                })
                .collect());
        }
    };
    let mut out = Vec::new();
    for r in results {
        let status = match r.verdict {
            Verdict::Solved(a) => {
                if c.covered.contains(&r.id) {
                    // An earlier solved case of this round already reached it.
                    SlotStatus::SolvedAndConfirmed
                } else {
                    let input = apply(&base, c, &a);
                    match c.execute(runner, &input)? {
                        Some((hits, outputs)) if hits.contains(&r.id) => {
                            c.covered.extend(hits.iter().copied());
                            c.cases.push(KeptCase {
                                input,
                                outputs,
                                covers: hits,
                                origin: format!("solved for slot {}", r.id),
                            });
                            SlotStatus::SolvedAndConfirmed
                        }
                        _ => SlotStatus::NotConfirmed,
                    }
                }
            }
            Verdict::Unsat => SlotStatus::Unsatisfiable,
            Verdict::Unsupported(what) => SlotStatus::Unsupported { what },
            Verdict::Timeout(why) => SlotStatus::Timeout { why },
        };
        out.push((r.id, status, r.time));
    }
    // A confirmed case may also reach slots solved separately (or not at all).
    for o in &mut out {
        if o.1 != SlotStatus::SolvedAndConfirmed && c.covered.contains(&o.0) {
            o.1 = SlotStatus::SolvedAndConfirmed;
        }
    }
    Ok(out)
}
