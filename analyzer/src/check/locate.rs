//! The line that overran, for `fuzz` and `mutate` findings: the bounds check of `cltrap check`
//! run on a finding's saved input (a launch of a capture, replayable exactly), with a budget.
//!
//! Why: a guard zone (see [`crate::executor::GuardBreach`]) or a crash says *that* a buffer
//! was overrun, not *where*. Oclgrind sees each access, so it names the line, the argument and
//! the offset — at the simulator's speed, which is why only findings are checked, each
//! distinct one once, in child processes with a deadline and a total budget.

use super::finding::{Family, Finding, Kind, Target};
use super::report::source_name;
use super::{check, CheckOptions, LaunchStatus, Variant};
use cltrap_capture::Capture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Default wall-clock budget for locating all findings of one command.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(120);
/// Most time one finding's check may take.
pub const PER_FINDING: Duration = Duration::from_secs(60);

/// Where an out-of-bounds access happened, as the bounds check found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrun {
    /// `invalid-write` or `invalid-read`.
    pub kind: String,
    /// The program's file name in reports (`program-<hash>.cl`).
    pub file: String,
    /// 1-based line in the program's source.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// The source line.
    pub code: String,
    /// The argument whose buffer was overrun, when the address maps to one.
    pub arg_index: Option<usize>,
    /// Its name.
    pub arg_name: Option<String>,
    /// Byte offset of the access into that buffer (its size or more: past the end; negative:
    /// before its start).
    pub offset: i64,
    /// The buffer's size in bytes.
    pub arg_size: Option<u64>,
    /// The work-item, as Oclgrind names it (`work-item (63,0,0) of group (3,0,0)`).
    pub by: String,
}

impl std::fmt::Display for Overrun {
    /// `program-x.cl:40:16: write out of bounds, argument 0 (out), byte offset 256 of a
    /// 256-byte buffer, by work-item (63,0,0) of group (3,0,0)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.kind == Kind::InvalidWrite.rule_id() {
            "write out of bounds"
        } else {
            "read out of bounds"
        };
        write!(f, "{}:{}:{}: {what}", self.file, self.line, self.column)?;
        match (&self.arg_index, &self.arg_name, self.arg_size) {
            (Some(i), Some(n), Some(s)) => write!(
                f,
                ", argument {i} ({n}), byte offset {} of a {s}-byte buffer",
                self.offset
            )?,
            _ => write!(f, ", byte offset {}", self.offset)?,
        }
        write!(f, ", by {}", self.by)
    }
}

fn overrun(f: &Finding) -> Option<Overrun> {
    let a = f.example.first.as_ref()?;
    let t = f.example.target.as_ref();
    Some(Overrun {
        kind: f.kind.rule_id().to_string(),
        file: source_name(&f.program),
        line: a.line,
        column: a.column,
        code: a.code.clone(),
        arg_index: t.and_then(|t| t.arg_index),
        arg_name: t.and_then(|t| t.arg_name.clone()),
        offset: t.map_or(0, Target::signed_offset),
        arg_size: t.and_then(|t| t.arg_size),
        by: a.who(),
    })
}

/// What the check said about each launch asked for.
#[derive(Debug, Clone)]
pub enum Located {
    /// The first write out of bounds (or, with none, the first read) in source order.
    At(Overrun),
    /// Checked to the end: Oclgrind saw no access out of bounds.
    NotFound,
    /// Not checked: the deadline or budget ran out, or the child failed (why).
    NotChecked(String),
}

/// Runs the bounds check on launches `ids` of the capture in `dir` (optionally with another
/// program, a mutant) within `budget` in all, and says per launch where it overran.
pub fn overruns(
    dir: &Path,
    capture: &Capture,
    ids: Vec<u64>,
    variant: Option<Variant>,
    budget: Duration,
) -> Result<BTreeMap<u64, Located>, String> {
    let mut opts = CheckOptions::of(ids, vec![Family::Bounds], PER_FINDING.min(budget));
    opts.budget = Some(budget);
    opts.variant = variant;
    opts.first_overrun = true;
    let report = check(dir, capture, &opts, |_| {})?;
    let mut out = BTreeMap::new();
    for l in &report.launches {
        let found = |kind: Kind| {
            report
                .findings
                .iter()
                .filter(|f| f.kind == kind && f.launches.contains(&l.id))
                .find_map(overrun)
        };
        let located = match found(Kind::InvalidWrite).or_else(|| found(Kind::InvalidRead)) {
            Some(o) => Located::At(o),
            None => match &l.status {
                LaunchStatus::Checked { .. } => Located::NotFound,
                LaunchStatus::Skipped { reason }
                | LaunchStatus::Failed { reason }
                | LaunchStatus::EngineLimit { reason } => Located::NotChecked(reason.clone()),
                LaunchStatus::TimedOut { seconds } => {
                    Located::NotChecked(format!("the bounds check took more than {seconds} s"))
                }
            },
        };
        out.insert(l.id, located);
    }
    Ok(out)
}
