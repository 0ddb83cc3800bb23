//! Coverage reports from merged results ([`CoverageReport`]): the terminal summary, the JSON
//! report, an LCOV tracefile (with the kernel sources written next to it so `genhtml` can open
//! them) and a self-contained HTML report ([`super::html`]).
//!
//! The live-app path calls [`write`] too: it builds [`super::ProgramCoverage`] values from the
//! counters the shim reads back ([`super::ProgramCoverage::add_counters`]) and hands them over
//! in a [`CoverageReport`].

use super::{CoverageReport, Divergence, KernelCoverage, Problem, ProgramCoverage};
use cltrap_kernel::coverage::{Outcome, Slot, SlotKind};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The map slot a result's slot stands for.
pub fn slot_of(p: &ProgramCoverage, index: u32) -> Option<&Slot> {
    p.map.slots.iter().find(|s| s.index == index)
}

/// Status of one barrier call site, merged over launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BarrierStatus {
    /// Some group reached it with all its work-items, and none diverged.
    Covered,
    /// No work-item of any group reached it.
    NeverReached,
    /// Some group reached it with only some of its work-items.
    Divergent,
}

/// JSON report, format `cltrap-coverage` version 1. Stable schema:
///
/// ```text
/// { "format": "cltrap-coverage", "version": 1,
///   "programs": [ { "program": "<capture program hash or key>", "name": "program-<hash12>",
///       "source_file": "<path of the written source, or null>",
///       "skipped": [ { "construct", "line", "col", "why" } ],     // not instrumented (macros)
///       "kernels": [ { "kernel", "launches": [ids], "unnumbered_launches": n,
///           "branches": { "covered", "total" }, "loop_boundaries": { "covered", "total" },
///           "barriers": { "covered", "never_reached", "divergent", "total" },
///           "overflow": bool,                                      // counters incomplete
///           "items": [ { "kind": "branch"|"loop_boundary", "construct": "if"|"conditional"|
///                        "short_circuit"|"while"|"for"|"do"|"case"|"default"|"implicit_default",
///                        "outcome": "true"|"false"|"taken"|"zero"|"once"|"many",
///                        "line", "col", "label", "hit": bool } ],
///           "barrier_sites": [ { "barrier", "line", "col", "label", "status":
///                        "covered"|"never_reached"|"divergent", "groups_all", "groups_none",
///                        "divergent_groups" } ],
///           "divergences": [ { "launch", "barrier", "line", "col", "group": [x,y,z],
///                        "arrivals", "work_items" } ] } ] } ],
///   "problems": [ { "launch", "kernel", "kind": "skipped"|"error"|"note", "message" } ] }
/// ```
/// Lines and columns are 1-based, on the user's own source.
#[derive(Debug, Serialize)]
pub struct JsonReport {
    /// Always `cltrap-coverage`.
    pub format: &'static str,
    /// Schema version (1).
    pub version: u32,
    /// Per program.
    pub programs: Vec<JsonProgram>,
    /// Launches not measured, and notes.
    pub problems: Vec<Problem>,
}

/// A program in the JSON report.
#[derive(Debug, Serialize)]
pub struct JsonProgram {
    /// The program key (capture program hash).
    pub program: String,
    /// `program-<hash12>`.
    pub name: String,
    /// Where its source was written, when it was.
    pub source_file: Option<String>,
    /// Constructs left uninstrumented.
    pub skipped: Vec<JsonSkipped>,
    /// Per kernel.
    pub kernels: Vec<JsonKernel>,
}

/// A construct the pass could not instrument.
#[derive(Debug, Serialize)]
pub struct JsonSkipped {
    /// What it is.
    pub construct: String,
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// Why.
    pub why: String,
}

/// Covered / total.
#[derive(Debug, Serialize, PartialEq, Eq, Clone, Copy)]
pub struct Ratio {
    /// Covered.
    pub covered: u32,
    /// Total.
    pub total: u32,
}

/// Barrier tallies of a kernel.
#[derive(Debug, Serialize, PartialEq, Eq, Clone, Copy, Default)]
pub struct BarrierCounts {
    /// Reached by all work-items of some group, never divergent.
    pub covered: u32,
    /// Never reached.
    pub never_reached: u32,
    /// Divergent in some group.
    pub divergent: u32,
    /// Barrier call sites.
    pub total: u32,
}

/// A kernel in the JSON report.
#[derive(Debug, Serialize)]
pub struct JsonKernel {
    /// Kernel name.
    pub kernel: String,
    /// Launch ids measured.
    pub launches: Vec<u64>,
    /// Launches measured without an id.
    pub unnumbered_launches: u64,
    /// Branch sides.
    pub branches: Ratio,
    /// Loop-boundary classes.
    pub loop_boundaries: Ratio,
    /// Barriers.
    pub barriers: BarrierCounts,
    /// The counter buffer overflowed (results incomplete).
    pub overflow: bool,
    /// Every branch side and loop-boundary class.
    pub items: Vec<JsonItem>,
    /// Every barrier call site.
    pub barrier_sites: Vec<JsonBarrier>,
    /// Every divergence.
    pub divergences: Vec<Divergence>,
}

/// One branch side or loop-boundary class.
#[derive(Debug, Serialize)]
pub struct JsonItem {
    /// `branch` or `loop_boundary`.
    pub kind: SlotKind,
    /// The construct.
    pub construct: cltrap_kernel::coverage::Construct,
    /// The outcome counted.
    pub outcome: Outcome,
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// Human label.
    pub label: String,
    /// Reached by some work-item of some launch.
    pub hit: bool,
}

/// One barrier call site.
#[derive(Debug, Serialize)]
pub struct JsonBarrier {
    /// Barrier number.
    pub barrier: u32,
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// The call's text.
    pub label: String,
    /// Merged status.
    pub status: BarrierStatus,
    /// Groups (over all launches) in which all work-items reached it.
    pub groups_all: u64,
    /// Groups in which none did.
    pub groups_none: u64,
    /// Groups in which only some did.
    pub divergent_groups: u64,
}

/// The items of one kernel, with their map slots.
pub fn items(p: &ProgramCoverage, k: &KernelCoverage) -> Vec<JsonItem> {
    k.result
        .slots
        .iter()
        .filter_map(|h| {
            slot_of(p, h.index).map(|s| JsonItem {
                kind: s.kind,
                construct: s.construct,
                outcome: s.outcome,
                line: s.line,
                col: s.col,
                label: s.label.clone(),
                hit: h.hit,
            })
        })
        .collect()
}

/// The barrier sites of one kernel, with their merged status.
pub fn barrier_sites(p: &ProgramCoverage, k: &KernelCoverage) -> Vec<JsonBarrier> {
    k.result
        .barriers
        .iter()
        .map(|b| {
            let site = p.map.barrier_site(b.barrier);
            let status = if !b.divergent.is_empty() {
                BarrierStatus::Divergent
            } else if b.covered() {
                BarrierStatus::Covered
            } else {
                BarrierStatus::NeverReached
            };
            JsonBarrier {
                barrier: b.barrier,
                line: b.line,
                col: site.map_or(0, |s| s.col),
                label: site.map_or_else(String::new, |s| s.label.clone()),
                status,
                groups_all: b.groups_all,
                groups_none: b.groups_none,
                divergent_groups: b.divergent.len() as u64,
            }
        })
        .collect()
}

/// Barrier tallies of one kernel.
pub fn barrier_counts(sites: &[JsonBarrier]) -> BarrierCounts {
    let mut c = BarrierCounts {
        total: sites.len() as u32,
        ..Default::default()
    };
    for s in sites {
        match s.status {
            BarrierStatus::Covered => c.covered += 1,
            BarrierStatus::NeverReached => c.never_reached += 1,
            BarrierStatus::Divergent => c.divergent += 1,
        }
    }
    c
}

/// The JSON report (`source_files[i]`: where program `i`'s source was written, if it was).
pub fn json(report: &CoverageReport, source_files: &[Option<PathBuf>]) -> JsonReport {
    JsonReport {
        format: "cltrap-coverage",
        version: 1,
        programs: report
            .programs
            .iter()
            .enumerate()
            .map(|(i, p)| JsonProgram {
                program: p.program.clone(),
                name: p.short_name(),
                source_file: source_files
                    .get(i)
                    .cloned()
                    .flatten()
                    .map(|f| f.display().to_string()),
                skipped: p
                    .map
                    .skipped
                    .iter()
                    .map(|s| JsonSkipped {
                        construct: s.construct.clone(),
                        line: s.line,
                        col: s.col,
                        why: s.why.clone(),
                    })
                    .collect(),
                kernels: p
                    .kernels
                    .iter()
                    .map(|k| {
                        let sites = barrier_sites(p, k);
                        JsonKernel {
                            kernel: k.kernel.clone(),
                            launches: k.launches.clone(),
                            unnumbered_launches: k.unnumbered_launches,
                            branches: Ratio {
                                covered: k.result.branches.0,
                                total: k.result.branches.1,
                            },
                            loop_boundaries: Ratio {
                                covered: k.result.loop_boundaries.0,
                                total: k.result.loop_boundaries.1,
                            },
                            barriers: barrier_counts(&sites),
                            overflow: k.result.overflow,
                            items: items(p, k),
                            barrier_sites: sites,
                            divergences: k.divergences.clone(),
                        }
                    })
                    .collect(),
            })
            .collect(),
        problems: report.problems.clone(),
    }
}

fn percent(a: u32, b: u32) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * f64::from(a) / f64::from(b))
    }
}

fn launch_list(k: &KernelCoverage) -> String {
    let n = k.launches.len() as u64 + k.unnumbered_launches;
    let mut ids: Vec<String> = k.launches.iter().take(8).map(u64::to_string).collect();
    if k.launches.len() > 8 {
        ids.push("…".into());
    }
    if ids.is_empty() {
        format!("{n} launch(es)")
    } else {
        format!("{n} launch(es): {}", ids.join(","))
    }
}

/// Divergences listed per kernel in the terminal summary (the JSON has all).
const MAX_DIVERGENCES_SHOWN: usize = 10;

/// The terminal summary: per kernel a line of tallies, then what was not covered (line:col
/// and label), divergent barriers (launch, group, arrivals), constructs not instrumented;
/// then the launches not measured, and a total line.
pub fn summary(report: &CoverageReport) -> String {
    let mut s = String::new();
    let (mut bc, mut bt, mut lc, mut lt, mut kernels, mut launches) = (0, 0, 0, 0, 0, 0u64);
    let mut barrier_total = BarrierCounts::default();
    for p in &report.programs {
        for k in &p.kernels {
            kernels += 1;
            launches += k.launches.len() as u64 + k.unnumbered_launches;
            let sites = barrier_sites(p, k);
            let b = barrier_counts(&sites);
            barrier_total.covered += b.covered;
            barrier_total.never_reached += b.never_reached;
            barrier_total.divergent += b.divergent;
            barrier_total.total += b.total;
            let (br, lb) = (k.result.branches, k.result.loop_boundaries);
            bc += br.0;
            bt += br.1;
            lc += lb.0;
            lt += lb.1;
            let _ = writeln!(
                s,
                "kernel {} ({}, {}): branches {}/{} ({}), loop boundaries {}/{} ({}), barriers {} ok / {} divergent / {} never reached (of {})",
                k.kernel,
                p.short_name(),
                launch_list(k),
                br.0,
                br.1,
                percent(br.0, br.1),
                lb.0,
                lb.1,
                percent(lb.0, lb.1),
                b.covered,
                b.divergent,
                b.never_reached,
                b.total
            );
            for i in items(p, k).iter().filter(|i| !i.hit) {
                let _ = writeln!(s, "  not covered: {}:{} {}", i.line, i.col, i.label);
            }
            for b in sites
                .iter()
                .filter(|b| b.status == BarrierStatus::NeverReached)
            {
                let _ = writeln!(
                    s,
                    "  barrier never reached: {}:{} {}",
                    b.line, b.col, b.label
                );
            }
            for d in k.divergences.iter().take(MAX_DIVERGENCES_SHOWN) {
                let label = p
                    .map
                    .barrier_site(d.barrier)
                    .map_or("barrier", |b| b.label.as_str());
                let launch = d
                    .launch
                    .map(|l| format!("launch {l}, "))
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  BARRIER DIVERGENCE: {}:{} {label}: {launch}group ({},{},{}): {} arrival(s) for {} work-item(s)",
                    d.line, d.col, d.group[0], d.group[1], d.group[2], d.arrivals, d.work_items
                );
            }
            if k.divergences.len() > MAX_DIVERGENCES_SHOWN {
                let _ = writeln!(
                    s,
                    "  … and {} more divergent group(s) (see the JSON report)",
                    k.divergences.len() - MAX_DIVERGENCES_SHOWN
                );
            }
            if k.result.overflow {
                let _ = writeln!(
                    s,
                    "  warning: the counter buffer overflowed; barrier results are incomplete"
                );
            }
        }
        for sk in &p.map.skipped {
            let _ = writeln!(
                s,
                "  {}: not instrumented: {}:{} {} ({})",
                p.short_name(),
                sk.line,
                sk.col,
                sk.construct,
                sk.why
            );
        }
    }
    for pr in &report.problems {
        let _ = writeln!(
            s,
            "launch {} {}: {}: {}",
            pr.launch, pr.kernel, pr.kind, pr.message
        );
    }
    let count = |kind: &str| report.problems.iter().filter(|p| p.kind == kind).count();
    let _ = writeln!(
        s,
        "coverage: {kernels} kernel(s) in {} program(s) over {launches} launch(es) ({} skipped, {} failed): branches {bc}/{bt} ({}), loop boundaries {lc}/{lt} ({}), barriers {} ok / {} divergent / {} never reached (of {})",
        report.programs.len(),
        count("skipped"),
        count("error"),
        percent(bc, bt),
        percent(lc, lt),
        barrier_total.covered,
        barrier_total.divergent,
        barrier_total.never_reached,
        barrier_total.total
    );
    let (skipped, failed) = (count("skipped"), count("error"));
    if skipped + failed > 0 {
        let _ = writeln!(
            s,
            "not measured: {} launch(es) ({skipped} skipped, {failed} failed, listed above); the numbers above leave them out",
            skipped + failed
        );
    }
    s
}

/// The LCOV tracefile: one record per program, `SF:` naming `source_files[i]`.
pub fn lcov(report: &CoverageReport, source_files: &[PathBuf]) -> String {
    report
        .programs
        .iter()
        .zip(source_files)
        .map(|(p, f)| {
            let results: Vec<_> = p.kernels.iter().map(|k| k.result.clone()).collect();
            cltrap_kernel::lcov::to_lcov(&p.map, &results, "cltrap", &f.display().to_string())
        })
        .collect()
}
