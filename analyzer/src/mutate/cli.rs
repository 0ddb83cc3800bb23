//! The `cltrap mutate` command line: flags, the run, the reports. `main.rs` only registers it.

use super::campaign::MutateCampaign;
use super::MutateOptions;
use crate::campaign::CampaignArgs;
use crate::executor::DeviceSelector;
use cltrap_capture::Capture;
use cltrap_kernel::mutate::Operator;
use std::path::PathBuf;
use std::time::Duration;

/// Mutation testing: mutate the captured kernels and run every mutant against the launches of
/// the capture (or of a generated suite in the same format) as test cases.
#[derive(Debug, Clone, clap::Args)]
pub struct MutateArgs {
    /// Capture directory or generated suite.
    pub dir: PathBuf,
    /// Launch ids: 3, 0,2,5, 2-7, or several such words (default: all).
    pub ids: Vec<String>,
    /// Only this kernel (and the helpers it calls).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Operators, comma-separated: names (relational_boundary, barrier_removal, ...) or the
    /// groups traditional, gpu, all.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub operators: String,
    /// Write the mutation-testing-report-schema JSON (Stryker's format).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also run every test case under N permuted work-group schedules.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub schedules: u32,
    /// Runs per test case and schedule; killed in some but not all = UNDECIDED.
    #[arg(long, default_value_t = 1, value_name = "R")]
    pub repeats: u32,
    /// Allow floating-point outputs to differ by up to N ulp.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub ulp: u64,
    /// Worker processes on the one device (default: the number of cores); with `--devices`,
    /// `--workers-per-device` says how many per device.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Deadline of one kernel run in a worker, TIMEOUT when missed (default: 2 s plus 20
    /// times the slowest run of the original).
    #[arg(long, value_name = "T")]
    pub timeout_ms: Option<u64>,
    /// Loop iterations per work-item and call before the in-kernel watchdog fires.
    #[arg(long, default_value_t = cltrap_kernel::mutate::DEFAULT_BUDGET, value_name = "N")]
    pub loop_budget: u32,
    /// Compile every mutant on its own instead of one schema per program (slow; for checks).
    #[arg(long)]
    pub per_mutant_compile: bool,
    /// Output directory: rendered sources, derived inputs, build logs (default: DIR/mutate).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Evaluate every mutant again (what every run without `--resume` does; kept so that
    /// older command lines still parse).
    #[arg(long, hide = true)]
    pub fresh: bool,
    /// Where to run (`--platform`, `--device`).
    #[command(flatten)]
    pub device: DeviceSelector,
    /// Do not compare the surviving mutants' optimised code (clang -O2) with the original's
    /// to find EQUIVALENT and duplicate mutants (Trivial Compiler Equivalence).
    #[arg(long)]
    pub no_tce: bool,
    /// Do not run the bounds check (Oclgrind) on RUNTIME-ERROR mutants that wrote out of
    /// bounds or crashed to name the line that overran (120 s at most per campaign).
    #[arg(long)]
    pub no_locate: bool,
    /// Print how many mutants were evaluated, in what time, and the compiles (for benchmarks).
    #[arg(long, hide = true)]
    pub timing: bool,
    /// Devices, workers, shards, resume.
    #[command(flatten)]
    pub campaign: CampaignArgs,
}

/// The campaign `cltrap mutate` runs, its campaign flags and its device; the error is one
/// sentence for the user. In a worker (`--unit-worker`) the capture is not opened here: each
/// job names it.
pub fn campaign(
    args: MutateArgs,
) -> Result<(MutateCampaign, CampaignArgs, DeviceSelector), String> {
    let mut flags = args.campaign.clone();
    let operators = Operator::parse_list(&args.operators).map_err(|e| e.to_string())?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    // On one device, `--jobs` (default: the number of cores) is the number of workers.
    if flags.devices.is_none() && flags.workers_per_device == 1 {
        flags.workers_per_device = jobs.max(1);
    }
    let (capture, ids, damaged) = if flags.unit_worker {
        (None, None, 0)
    } else {
        // Damaged launch lines are named once and left out; the run then ends with exit 2.
        let capture = Capture::open_keeping_damaged(&args.dir).map_err(|e| e.to_string())?;
        let damaged = crate::damage::report(&capture, "mutation analysis");
        if let Some(why) = crate::damage::nothing_left(&capture) {
            return Err(why);
        }
        let ids = if args.ids.is_empty() {
            None
        } else {
            Some(
                crate::ids::parse_ids_in(&args.ids.join(","), &capture)
                    .map_err(|e| e.to_string())?,
            )
        };
        let ids = crate::damage::drop_damaged(&capture, ids)?;
        (Some(capture), ids, damaged)
    };
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the cltrap executable: {e}"))?;
    let opts = MutateOptions {
        kernel: args.kernel.clone(),
        operators,
        ids,
        schedules: args.schedules,
        repeats: args.repeats.max(1),
        ulp: args.ulp,
        jobs,
        timeout: args.timeout_ms.map(|t| Duration::from_millis(t.max(1))),
        per_mutant_compile: args.per_mutant_compile,
        device: args.device.clone(),
        out_dir: args.out.clone().unwrap_or_else(|| args.dir.join("mutate")),
        loop_budget: args.loop_budget.max(1),
        worker_exe: exe,
        progress: true,
        compare_optimised: !args.no_tce,
        locate_overruns: !args.no_locate,
    };
    let mut c = MutateCampaign::new(args.dir.clone(), capture, opts);
    c.json = args.json;
    c.html = args.html;
    c.timing = args.timing;
    c.damaged = damaged;
    c.flags = flags.clone();
    c.device = args.device.clone();
    Ok((c, flags, args.device))
}
