//! Campaigns: every analysis that runs many independent pieces of work (a launch to check,
//! cover or replay, a mutant batch, a kernel to fuzz) describes them as **units** and hands
//! them to one runner.
//!
//! The runner ([`runner`]) executes units in worker processes (isolation, a deadline per unit,
//! restart, progress, Ctrl-C), on one or more devices ([`devices`]), writes each finished unit
//! to an append-only journal ([`journal`]) so that `--resume` skips it, and can run one shard
//! of the units (`--shard I/N`, [`args::Shard`]); `cltrap merge` ([`merge`]) combines shard
//! folders. The analysis only says what its units are, how one runs, what a lost one (crashed,
//! hung) counts as, and how results become its report: [`Campaign`].
//!
//! A worker is the same `cltrap` command with the hidden `--unit-worker` flag: it builds the
//! same [`Campaign`] from the same arguments and serves units from its stdin ([`protocol`]),
//! until the runner closes it or a unit leaves it untrustworthy ([`Campaign::spent`]: it
//! retires, and a fresh worker takes the next unit).

pub mod args;
pub mod devices;
pub mod here;
pub mod journal;
pub mod kept;
pub mod merge;
pub mod protocol;
mod queue;
pub mod runner;
pub mod seal;

pub use args::{CampaignArgs, Shard};

use crate::executor::DeviceSelector;
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// One independent piece of work. `id` is unique within the campaign and the same in every
/// run over the same arguments (it keys the journal, shards and merges); `payload` is what the
/// worker needs beyond the command's own arguments (often nothing).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Unit {
    /// Stable id, e.g. `launch-12` or `mutant-0-3-cases-1`.
    pub id: String,
    /// What the worker needs to run it (`null` when the id says all).
    #[serde(default)]
    pub payload: Value,
}

/// Why a unit has no result from its worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Lost {
    /// The worker died (a signal, an exit) while running it: the reason.
    Crashed(String),
    /// The unit failed in a way its analysis could not put in a result
    /// ([`Campaign::run_unit`]'s `Err`: an input it cannot read, a folder it refuses): why.
    Failed(String),
    /// The worker stayed silent past the unit's deadline and was killed.
    TimedOut(Duration),
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::Crashed(why) => write!(f, "the worker crashed: {why}"),
            Lost::Failed(why) => write!(f, "it could not run: {why}"),
            Lost::TimedOut(d) => write!(f, "timed out after {} s", d.as_secs()),
        }
    }
}

impl Unit {
    /// The unit of launch `id`, for campaigns of one unit per launch.
    pub fn launch(id: u64, payload: Value) -> Unit {
        Unit {
            id: format!("launch-{id}"),
            payload,
        }
    }

    /// One unit per selected launch of `capture` (`ids`, or all), in launch order, with no
    /// payload: the units of `cover` and `replay`.
    pub fn launches(
        capture: &cltrap_capture::Capture,
        ids: Option<&[u64]>,
    ) -> Result<Vec<Unit>, String> {
        let launches = crate::replay::select(capture, ids).map_err(|e| e.to_string())?;
        Ok(launches
            .iter()
            .map(|l| Unit::launch(l.id, Value::Null))
            .collect())
    }

    /// The launch of a unit made by [`Unit::launch`], found in `capture`.
    pub fn launch_in<'c>(
        &self,
        capture: &'c cltrap_capture::Capture,
    ) -> Result<&'c cltrap_capture::LaunchRecord, String> {
        let id: u64 = self
            .id
            .strip_prefix("launch-")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("`{}` is not a launch unit", self.id))?;
        capture
            .launch(id)
            .map_err(|_| format!("the capture has no launch {id}"))
    }
}

/// What a worker knows while it runs a unit.
pub struct UnitContext<'a> {
    /// The device this worker is pinned to.
    pub device: &'a DeviceSelector,
    /// Restarts the unit's deadline (long units call it at each step they finish).
    pub alive: &'a dyn Fn(),
}

/// A unit's result as the journal keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Finished {
    /// The unit.
    pub unit: String,
    /// The device it ran on (platform and device name), or empty for a lost unit.
    #[serde(default)]
    pub device: String,
    /// Wall time of the unit, in milliseconds (a timing: not part of reports' identity).
    #[serde(default)]
    pub millis: u64,
    /// The analysis's result for it ([`Campaign::run_unit`] or [`Campaign::lost`]).
    pub result: Value,
}

/// The ids of the units that the results in `done` make pointless
/// ([`Campaign::superseded`]), over `units`: what a resumed run does not hand out and what a
/// merge does not miss.
pub(crate) fn superseded_by<'u>(
    c: &dyn Campaign,
    units: impl IntoIterator<Item = &'u Unit>,
    done: &std::collections::BTreeMap<String, Finished>,
) -> std::collections::HashSet<String> {
    units
        .into_iter()
        .filter_map(|u| done.get(&u.id).map(|f| c.superseded(u, &f.result)))
        .flatten()
        .collect()
}

/// An analysis that runs as units. The same value is built from the same arguments in the
/// parent, in every worker and in `cltrap merge`, so everything here must follow from the
/// command's arguments and the inputs they name.
pub trait Campaign {
    /// The subcommand, as typed (`check`).
    fn command(&self) -> &'static str;
    /// Every unit of the campaign, in their deterministic order (the report's order).
    fn units(&mut self) -> Result<Vec<Unit>, String>;
    /// The longest silence of a worker on one unit.
    fn deadline(&self) -> Duration;
    /// Prepares this worker for units like `like` (opens the device, reads the inputs,
    /// builds the program) without running it: the runner keeps a warmed spare worker to
    /// replace one that dies. Failures are left for the unit that meets them to report. The
    /// default prepares nothing.
    fn warm_up(&mut self, _like: &Unit, _cx: &UnitContext) {}
    /// Runs one unit in this process (a worker). `Err` is a failure of the unit that the
    /// analysis could not express in its result; it is recorded as [`Lost::Failed`].
    fn run_unit(&mut self, unit: &Unit, cx: &UnitContext) -> Result<Value, String>;
    /// Whether this worker process must not run another unit, asked after each unit that has
    /// a result: the unit's kernel faulted on the device or wrote outside its memory, and
    /// the process's device context or heap can no longer be trusted (CUDA keeps a device
    /// fault as a sticky error of the whole process; a wild write on a CPU device lands in
    /// the worker's own memory). The unit's result stands; the worker retires and the runner
    /// gives the next unit to a fresh worker, so no unit's result depends on which unit ran
    /// before it in the same process, that is, on the number of workers. The default: never.
    fn spent(&self) -> bool {
        false
    }
    /// A second try for a unit whose worker died or hung (the same id, another payload: say,
    /// another engine), run in a fresh worker; `None` (the default) records it as lost. A unit
    /// is tried again at most once.
    fn retry(&self, _unit: &Unit, _why: &Lost) -> Option<Unit> {
        None
    }
    /// The ids of units that `result` (of `unit`) makes pointless: whatever they would give,
    /// the report is the same (mutate: the later batches of a mutant that an earlier batch
    /// decided). The runner drops those not handed out yet; they get no result, and
    /// [`Campaign::report`] must not need one (nor `cltrap merge`, which asks the same of
    /// every shard's results). The answer must follow from the unit and its result alone, so
    /// that which units run never depends on the number of workers in a way the report shows.
    /// The default: none.
    fn superseded(&self, _unit: &Unit, _result: &Value) -> Vec<String> {
        Vec::new()
    }
    /// The result of a unit whose worker died or hung.
    fn lost(&self, unit: &Unit, why: &Lost) -> Value;
    /// Writes the report over `results` (in unit order; all units when `complete`, else
    /// those that finished before a Ctrl-C) to `out` and to the report files the arguments
    /// name; returns the exit status.
    fn report(
        &mut self,
        results: &[(Unit, Finished)],
        complete: bool,
        out: &mut dyn Write,
    ) -> Result<u8, String>;
    /// A line for the terminal when a unit finishes (printed above the progress bar).
    fn progress_line(&self, _unit: &Unit, _done: &Finished) -> Option<String> {
        None
    }
    /// The report files the arguments name, for `cltrap merge` to write them into its folder.
    fn report_files(&mut self) -> Vec<&mut PathBuf>;
    /// Where the campaign's journal goes when `--campaign-dir` is not given (a folder of its
    /// own inside the capture, or the output folder).
    fn home(&self) -> PathBuf;
    /// Called before [`Campaign::units`] with the campaign's folder (`own`: the run's, or the
    /// merge's output folder) and the folders of earlier runs whose journals hold results
    /// (`earlier`: the same folder on `--resume`, the shard folders in `cltrap merge`), so a
    /// campaign whose unit list needs device work of its own can journal that work there and
    /// reuse it instead of doing it again. The default ignores them.
    fn folders(&mut self, _own: &std::path::Path, _earlier: &[PathBuf]) {}
    /// What the units are, for a command that runs more than one campaign (mutate: its test
    /// cases, then its mutants): the runner's lines on stderr name it. None: the command's one
    /// campaign.
    fn phase(&self) -> Option<&'static str> {
        None
    }
    /// Whether neighbouring units share work a worker keeps, so each worker should take a run
    /// of neighbours rather than every n-th unit ([`queue`]): units that are launches in
    /// order, whose inputs the capture may hold only as digests and the worker's deriver
    /// re-creates by re-executing the launches before them. The default: no (one shared
    /// queue in the campaign's order, which mutate's batches rely on).
    fn contiguous(&self) -> bool {
        false
    }
}
