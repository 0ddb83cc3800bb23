//! The `cltrap mutate` command line: flags, the run, the reports. `main.rs` only registers it.

use super::{report, MutateOptions};
use crate::executor::DeviceSelector;
use cltrap_capture::Capture;
use cltrap_kernel::mutate::Operator;
use std::io::Write;
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
    /// Worker processes (default: the number of cores).
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
    /// Output directory: state file (resume), rendered sources, worker logs
    /// (default: DIR/mutate).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Ignore the state of an earlier run and evaluate every mutant again.
    #[arg(long)]
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
}

/// Runs `cltrap mutate`; the error is one sentence for the user.
pub fn main(args: MutateArgs, stdout: &mut dyn Write) -> Result<u8, String> {
    // Damaged launch lines are named once and left out; the run then ends with exit 2.
    let capture = Capture::open_keeping_damaged(&args.dir).map_err(|e| e.to_string())?;
    let damaged = crate::damage::report(&capture, "mutation analysis");
    if let Some(why) = crate::damage::nothing_left(&capture) {
        return Err(why);
    }
    let operators = Operator::parse_list(&args.operators).map_err(|e| e.to_string())?;
    let ids = if args.ids.is_empty() {
        None
    } else {
        Some(crate::ids::parse_ids(&args.ids.join(",")).map_err(|e| e.to_string())?)
    };
    let ids = crate::damage::drop_damaged(&capture, ids)?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the cltrap executable: {e}"))?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
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
        fresh: args.fresh,
        compare_optimised: !args.no_tce,
        locate_overruns: !args.no_locate,
    };
    let started = std::time::Instant::now();
    let r = super::run(&capture, &opts).map_err(|e| e.to_string())?;
    let _ = write!(stdout, "{}", report::terminal(&r));
    if let Some(p) = &args.json {
        let text =
            serde_json::to_string_pretty(&report::stryker_json(&r)).map_err(|e| e.to_string())?;
        std::fs::write(p, text).map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    if let Some(p) = &args.html {
        std::fs::write(p, report::html(&r)).map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    if args.timing {
        let total: usize = r.programs.iter().map(|p| p.mutants.len()).sum();
        let secs = started.elapsed().as_secs_f64();
        let _ = writeln!(
            stdout,
            "timing: mutants {total} evaluated-by-running {} compiles {} deadline {} ms total {secs:.3} s eval {:.3} s rate {:.2} mutants/s",
            r.evaluated,
            r.compiles,
            r.deadline.as_millis(),
            r.eval_time.as_secs_f64(),
            total as f64 / secs.max(1e-9)
        );
        let ph = &r.phases;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let _ = writeln!(
            stdout,
            "phases: open {:.0} ms, render {:.0} ms, compile {:.0} ms, check {:.0} ms, coverage {:.0} ms, worker start {:.0} ms (slowest of {} spawns), eval {:.0} ms, tce {:.0} ms, eval rate {:.2} mutants/s",
            ms(ph.open),
            ms(ph.render),
            ms(ph.compile),
            ms(ph.check),
            ms(ph.coverage),
            ms(ph.worker_start),
            ph.worker_spawns,
            ms(r.eval_time),
            ms(ph.tce),
            f64::from(r.evaluated) / r.eval_time.as_secs_f64().max(1e-9)
        );
    }
    Ok(crate::damage::exit_code(0, damaged))
}
