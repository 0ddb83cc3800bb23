//! `cltrap`: the command line. Glue only — the work is in the `cltrap_analyzer` library.

use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use cltrap_analyzer::campaign::{self, Campaign, CampaignArgs};
use cltrap_analyzer::check::{self, finding::Family, CheckOptions};
use cltrap_analyzer::compare::Closeness;
use cltrap_analyzer::cover::{self, ReportPaths};
use cltrap_analyzer::executor::{list_devices, DeviceSelector};
use cltrap_analyzer::launcher::{self, RunRequest};
use cltrap_analyzer::schedules::{self, ScheduleOptions};
use cltrap_analyzer::site::Resolver;
use cltrap_analyzer::{damage, ids, list, show};
use cltrap_capture::{Capture, CONTROLS};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod instrument_cmd;

/// Capture OpenCL kernel launches of unmodified applications, then list, show and replay them.
#[derive(Parser)]
#[command(name = "cltrap", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run APP with the capture shim loaded; capture flags below (one per CLTRAP_* control).
    Run {
        /// The shim library (default: $CLTRAP_SHIM, or libcltrap.so next to cltrap).
        #[arg(long, value_name = "PATH")]
        shim: Option<PathBuf>,
        /// The application and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "APP"
        )]
        command: Vec<OsString>,
    },
    /// Compact a capture's spool (contents the application stored raw) into compressed,
    /// deduplicated chunks; other commands do it once on their own, `cltrap run` while the
    /// application runs. It leaves 512 MB free on the capture's filesystem
    /// ($CLTRAP_COMPACT_KEEP_FREE_MB): short of that it stops, exit status 2, and the rest
    /// stays in the spool, readable as it is.
    Compact {
        /// Capture directory.
        dir: PathBuf,
    },
    /// One line per captured launch: kernel, sizes, scalar arguments, launch site.
    List {
        /// Capture directory.
        dir: PathBuf,
    },
    /// Everything about one launch, or (--kernel) how a kernel's launches vary.
    Show {
        dir: PathBuf,
        #[arg(required_unless_present = "kernel")]
        id: Option<u64>,
        /// Generalise over all launches of kernel NAME: constant / varying parameters, relations.
        #[arg(long, value_name = "NAME", conflicts_with = "id")]
        kernel: Option<String>,
        /// Print JSON: the raw launch record, its program record and how it replays
        /// (`replay`: stored, derived with its inputs' producers, or blocked with why; with
        /// --kernel: the generalisation).
        #[arg(long)]
        json: bool,
    },
    /// Hand launches to other tools: GPUVerify (--gpuverify) or standalone reproducers (--c, --python).
    Export(cltrap_analyzer::export::ExportArgs),
    /// Re-run launches and compare every buffer with what the application saw.
    Replay {
        dir: PathBuf,
        /// Launch ids: 3, 0,2,5, 2-7, or several such words (default: all).
        ids: Vec<String>,
        #[command(flatten)]
        device: DeviceSelector,
        /// Allow floating-point outputs to differ by up to N ulp.
        #[arg(long, default_value_t = 0, value_name = "N")]
        ulp: u64,
        /// Relative tolerance, as NumPy's allclose: |got − expected| ≤ atol + rtol·|expected|
        /// (floating-point outputs and normalized image channels; NaN equals NaN).
        #[arg(long, default_value_t = 0.0, value_name = "R")]
        rtol: f64,
        /// Absolute tolerance, as NumPy's allclose (see --rtol).
        #[arg(long, default_value_t = 0.0, value_name = "A")]
        atol: f64,
        /// Run each launch under N random work-group schedules and classify it:
        /// deterministic, schedule-dependent (inter-group race) or nondeterministic.
        #[arg(long, value_name = "N")]
        schedules: Option<u32>,
        /// With --schedules: runs of the identity schedule per launch.
        #[arg(long, default_value_t = 3, value_name = "M", requires = "schedules")]
        repeats: u32,
        /// With --schedules: seed of the first schedule (schedule k uses SEED+k).
        #[arg(long, default_value_t = 1, value_name = "SEED", requires = "schedules")]
        seed: u64,
        /// With --schedules: do not run the race check on the launches whose results depend
        /// on the schedule.
        #[arg(long, requires = "schedules")]
        no_race_check: bool,
        /// With --schedules: the race check's engine: native (the instrumented kernel on the
        /// device; a launch it could not check whole is checked again on Oclgrind) or
        /// oclgrind (the simulator, much slower on large launches).
        #[arg(
            long,
            value_enum,
            default_value_t = check::Engine::Native,
            value_name = "ENGINE",
            requires = "schedules"
        )]
        race_engine: check::Engine,
        /// With --schedules: classify launches of one kernel with the same global and local
        /// sizes once per distinct input (the contents of their arguments before the launch),
        /// at most N inputs per kernel and sizes; the other launches are listed as not
        /// classified again or skipped at the limit, and counted in the summary.
        #[arg(
            long,
            value_name = "N",
            value_parser = clap::value_parser!(u32).range(1..),
            requires = "schedules"
        )]
        per_kernel: Option<u32>,
        /// With --schedules: wall-clock limit of the race check, all launches together; what
        /// it could not finish is reported as skipped and the replay's verdicts stand.
        #[arg(
            long,
            default_value_t = 120,
            value_name = "SECS",
            requires = "schedules"
        )]
        race_deadline: u64,
        /// Print timings on stderr (for benchmarks): the replay's wall time, launches per
        /// second and how buffer inputs reached the device; with --schedules, compile time
        /// and per-run times.
        #[arg(long, hide = true)]
        timing: bool,
        /// With --schedules: keep permuted sources in DIR and reuse them (no libclang on a hit).
        #[arg(long, hide = true, value_name = "DIR", requires = "schedules")]
        instrument_cache: Option<PathBuf>,
        /// Replay in this process: no worker to start, but a launch that crashes or hangs
        /// the driver takes cltrap with it (by default launches run in a worker process, and
        /// such a launch is reported as failed and the replay goes on).
        #[arg(long)]
        in_process: bool,
        /// Seconds a replay worker may go without a result (a program's compile included)
        /// before it is stopped and its launch reported as hung.
        #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
        watchdog: f64,
        /// Devices, shards and resuming.
        #[command(flatten)]
        campaign: CampaignArgs,
    },
    /// Branch, loop-boundary and barrier coverage of kernels, measured on replayed launches.
    Cover {
        dir: PathBuf,
        /// Launch ids: 3, 0,2,5, 2-7, or several such words (default: all).
        ids: Vec<String>,
        #[command(flatten)]
        device: DeviceSelector,
        /// Write an LCOV tracefile (kernel sources are written next to it, for genhtml).
        #[arg(long, value_name = "FILE")]
        lcov: Option<PathBuf>,
        /// Write an HTML report (index.html, annotated kernel sources) into DIR.
        #[arg(long, value_name = "DIR")]
        html: Option<PathBuf>,
        /// Write the JSON report.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Print instrumentation, compile and run times, instrumented vs plain (for benchmarks).
        #[arg(long, hide = true)]
        timing: bool,
        /// Keep instrumented sources in DIR and reuse them (no libclang on a hit).
        #[arg(long, hide = true, value_name = "DIR")]
        instrument_cache: Option<PathBuf>,
        /// Cover in this process: no worker to start, but a launch that crashes or hangs the
        /// driver takes cltrap with it (by default such a launch is left out and named).
        #[arg(long)]
        in_process: bool,
        /// Seconds one launch may take in a cover worker before it is stopped as hung.
        #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
        watchdog: f64,
        /// Devices, shards and resuming.
        #[command(flatten)]
        campaign: CampaignArgs,
    },
    /// The capture controls (env variables and `cltrap run` flags).
    Controls {
        /// As the guide's markdown table (docs/src/controls.md).
        #[arg(long)]
        markdown: bool,
    },
    /// The OpenCL platforms and devices a replay can use.
    Devices,
    /// Coverage-guided test generation (seeded by a capture or an interface file) into a suite.
    Fuzz(cltrap_analyzer::fuzz::FuzzArgs),
    /// Solve (z3) for every branch a suite does not cover; confirmed cases are added.
    Solve(cltrap_analyzer::solve::SolveArgs),
    /// Mutation testing of the captured kernels, the launches being the test cases.
    Mutate(cltrap_analyzer::mutate::cli::MutateArgs),
    /// Find data races, out-of-bounds and uninitialised accesses and divergent barriers in
    /// captured launches, on the kernel's own lines. Engine `native` (default): the kernel
    /// instrumented and run on the device; `oclgrind` (Debian `oclgrind`): the simulator, also
    /// the fallback for what the native engine cannot do. One child process per launch.
    /// Exit status: 1 when something is found, 0 when everything was checked and clean, 2 when a
    /// launch could not be checked, 3 (incomplete) when nothing was found but some accesses,
    /// checks or launches were not checked.
    Check {
        /// Capture directory.
        dir: PathBuf,
        /// Launch ids: 3, 0,2,5, 2-7, or several such words (default: all).
        ids: Vec<String>,
        /// Check for data races (with none of --races/--bounds/--uninit: all three).
        #[arg(long)]
        races: bool,
        /// Check for reads and writes out of bounds.
        #[arg(long)]
        bounds: bool,
        /// Check for uses of uninitialised values.
        #[arg(long)]
        uninit: bool,
        /// Run only the first and last work-group of each launch (Oclgrind's quick mode).
        #[arg(long)]
        quick: bool,
        /// Print the report as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Write a SARIF 2.1.0 log (kernel sources are written to FILE.sources/).
        #[arg(long, value_name = "FILE")]
        sarif: Option<PathBuf>,
        /// Write a self-contained HTML report: findings by kind and source location, with
        /// their source lines, work-items, counts and the launches.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Wall-clock limit per launch, in seconds.
        #[arg(long, default_value_t = 300, value_name = "SECS")]
        deadline: u64,
        /// The engine: `native` (instrumented, on the device) or `oclgrind` (the simulator).
        #[arg(long, value_enum, default_value_t = check::Engine::Native)]
        engine: check::Engine,
        /// The device of the native engine.
        #[command(flatten)]
        device: DeviceSelector,
        /// Native engine: also run each launch uninstrumented, and report both device times
        /// (what the checks cost).
        #[arg(long)]
        baseline: bool,
        /// Devices, shards and resuming.
        #[command(flatten)]
        campaign: CampaignArgs,
    },
    /// Combine the shard folders of one campaign (`--shard I/N` runs) into the report one run
    /// would have written: printed here, and its files written into OUT.
    Merge {
        /// Folder for the merged journal and the report files the command names.
        out: PathBuf,
        /// The shards' campaign folders (`--campaign-dir` of each shard).
        #[arg(required = true)]
        shards: Vec<PathBuf>,
    },
    /// Internal: runs one launch for `cltrap check` (on Oclgrind, or instrumented).
    #[command(hide = true)]
    CheckWorker {
        dir: PathBuf,
        id: u64,
        #[arg(long, value_enum, default_value_t = check::Engine::Oclgrind)]
        engine: check::Engine,
        #[arg(long, default_value_t = 15)]
        flags: u32,
        #[command(flatten)]
        device: DeviceSelector,
        #[arg(long)]
        baseline: bool,
        /// Build this program text instead of the launch's (a mutant).
        #[arg(long, value_name = "FILE")]
        source: Option<PathBuf>,
        /// Options added to the recorded build options.
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        extra_options: String,
        /// Pass `cltrap mutate`'s selector and watchdog arguments.
        #[arg(long)]
        mutant_args: bool,
        /// A derived input, `ARG=FILE`: argument ARG's contents before the launch, which the
        /// capture keeps only as a digest, re-created by the parent on a real device.
        #[arg(long = "input", value_name = "ARG=FILE")]
        inputs: Vec<String>,
    },
    /// Spread a campaign command over a Slurm cluster: a job array of --tasks shards and a
    /// merge job that writes the report (captures and outputs on a filesystem all nodes see).
    Slurm(cltrap_analyzer::slurm::SlurmArgs),
}

/// Exit status for bad input.
const BAD_INPUT: u8 = 2;

/// The `run` subcommand gets one flag per control, derived from the table.
fn command() -> clap::Command {
    Cli::command().mut_subcommand("run", |mut run| {
        for c in CONTROLS {
            let help = format!(
                "{} [env {}; default: {}]",
                c.help,
                c.env,
                if c.default.is_empty() {
                    "unset"
                } else {
                    c.default
                }
            );
            let arg = Arg::new(c.flag)
                .long(c.flag)
                .help(help)
                .action(ArgAction::Set);
            // A switch (`--coverage`) never takes the next word, which may be the application.
            run = run.arg(if c.is_switch() {
                arg.num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("on")
            } else {
                arg.value_name(c.value_name)
            });
        }
        run
    })
}

fn parse_selection(ids: &[String], capture: &Capture) -> Result<Option<Vec<u64>>, String> {
    if ids.is_empty() {
        Ok(None)
    } else {
        ids::parse_ids_in(&ids.join(","), capture)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// Opens a capture for a command: damaged launch lines are kept aside for the command to
/// report (`damage.rs`); it works on the other launches.
fn open_keeping_damaged(dir: &Path) -> Result<Capture, String> {
    Capture::open_keeping_damaged(dir).map_err(|e| e.to_string())
}

/// Refuses a capture with no launch to replay, in one sentence.
fn replay_has_launches(dir: &Path, capture: &Capture) -> Result<(), String> {
    let damaged = capture.damaged.len();
    if capture.launches.is_empty() && damaged > 0 {
        return Err(format!(
            "{} holds no launch that is not damaged ({damaged} damaged line(s)): nothing to replay",
            dir.display()
        ));
    }
    if capture.launches.is_empty() {
        return Err(format!(
            "{} holds no launches ({} is empty): nothing to replay",
            dir.display(),
            cltrap_capture::LAUNCHES_FILE
        ));
    }
    Ok(())
}

/// A campaign command, ready to run: the analysis, its campaign flags and its device.
type CampaignRun = (Box<dyn Campaign>, CampaignArgs, DeviceSelector);

/// The campaign a command runs as; `None` for commands that are not campaigns.
fn campaign_of(cmd: Cmd) -> Option<Result<CampaignRun, String>> {
    match cmd {
        Cmd::Check {
            dir,
            ids,
            races,
            bounds,
            uninit,
            quick,
            json,
            sarif,
            html,
            deadline,
            engine,
            device,
            baseline,
            campaign,
        } => Some((|| {
            let capture = open_keeping_damaged(&dir)?;
            // Damaged launch lines: named once, left out of the check, and exit 2.
            let damaged = if campaign.unit_worker {
                capture.damaged.len()
            } else {
                damage::report(&capture, "check")
            };
            if let Some(why) = damage::nothing_left(&capture) {
                return Err(why);
            }
            let families = [
                (races, Family::Races),
                (bounds, Family::Bounds),
                (uninit, Family::Uninit),
            ]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect();
            let opts = CheckOptions {
                ids: damage::drop_damaged(&capture, parse_selection(&ids, &capture)?)?,
                families,
                quick,
                deadline: std::time::Duration::from_secs(deadline.max(1)),
                engine,
                device: device.clone(),
                baseline,
                budget: None,
                variant: None,
                first_overrun: false,
            };
            let mut c = check::campaign::CheckCampaign::new(&dir, capture, opts);
            c.json = json;
            c.sarif = sarif;
            c.html = html;
            c.damaged = damaged;
            Ok((Box::new(c) as Box<dyn Campaign>, campaign, device))
        })()),
        Cmd::Mutate(args) => Some(
            cltrap_analyzer::mutate::cli::campaign(args)
                .map(|(c, flags, device)| (Box::new(c) as Box<dyn Campaign>, flags, device)),
        ),
        Cmd::Replay {
            dir,
            ids,
            device,
            ulp,
            rtol,
            atol,
            schedules,
            repeats,
            seed,
            no_race_check,
            race_engine,
            per_kernel,
            race_deadline,
            timing,
            instrument_cache,
            in_process: _,
            watchdog,
            campaign,
        } => Some((|| {
            let closeness = Closeness::new(ulp, rtol, atol)?;
            // Where outputs recorded as `dd128` digests are verified: refused at once when
            // misspelt, not in every worker.
            cltrap_analyzer::executor::DeviceVerifyMode::from_env()?;
            let capture = open_keeping_damaged(&dir)?;
            // A capture with nothing to replay: its damaged lines, then the refusal.
            if capture.launches.is_empty() && !campaign.unit_worker {
                for d in &capture.damaged {
                    println!("damaged launch record: error: {d}");
                    eprintln!("cltrap: {d}");
                }
            }
            replay_has_launches(&dir, &capture)?;
            let ids = parse_selection(&ids, &capture)?;
            let damaged = capture.damaged.iter().map(|d| d.to_string()).collect();
            let watchdog = std::time::Duration::from_secs_f64(watchdog.max(0.1));
            let c: Box<dyn Campaign> = match schedules {
                Some(n) => {
                    let opts = ScheduleOptions {
                        ids,
                        device: device.clone(),
                        schedules: n,
                        repeats,
                        seed,
                        closeness,
                        instrument_cache,
                        race_check: (!no_race_check)
                            .then(|| std::time::Duration::from_secs(race_deadline.max(1))),
                        race_engine,
                        per_kernel,
                    };
                    let mut c = schedules::campaign::ScheduleCampaign::new(&dir, capture, opts);
                    c.timing = timing;
                    c.damaged = damaged;
                    c.watchdog = watchdog;
                    Box::new(c)
                }
                None => {
                    let mut c = cltrap_analyzer::replay_campaign::ReplayCampaign::new(
                        &dir, capture, ids, closeness,
                    );
                    c.damaged = damaged;
                    c.watchdog = watchdog;
                    c.timing = timing;
                    Box::new(c)
                }
            };
            Ok((c, campaign, device))
        })()),
        Cmd::Cover {
            dir,
            ids,
            device,
            lcov,
            html,
            json,
            timing,
            instrument_cache,
            in_process: _,
            watchdog,
            campaign,
        } => Some((|| {
            let capture = open_keeping_damaged(&dir)?;
            // Damaged launch lines: named once (by the parent, not again by its workers),
            // left out of the coverage, and the command ends with exit 2.
            let damaged = if campaign.unit_worker {
                capture.damaged.len()
            } else {
                damage::report(&capture, "coverage")
            };
            if let Some(why) = damage::nothing_left(&capture) {
                return Err(why);
            }
            let ids = damage::drop_damaged(&capture, parse_selection(&ids, &capture)?)?;
            let mut c = cover::campaign::CoverCampaign::new(&dir, capture, ids, instrument_cache);
            c.paths = ReportPaths { lcov, html, json };
            c.timing = timing;
            c.damaged = damaged;
            c.watchdog = std::time::Duration::from_secs_f64(watchdog.max(0.1));
            Ok((Box::new(c) as Box<dyn Campaign>, campaign, device))
        })()),
        Cmd::Fuzz(a) => Some(cltrap_analyzer::fuzz::units::FuzzUnits::new(&a).map(|c| {
            (
                Box::new(c) as Box<dyn Campaign>,
                a.campaign.clone(),
                a.device.clone(),
            )
        })),
        Cmd::Solve(a) => Some(cltrap_analyzer::solve::units::SolveUnits::new(&a).map(|c| {
            (
                Box::new(c) as Box<dyn Campaign>,
                a.campaign.clone(),
                a.device.clone(),
            )
        })),
        _ => None,
    }
}

/// Builds the campaign of a command line (after `cltrap`), for `cltrap merge`.
fn build_campaign(args: &[String]) -> Result<Box<dyn Campaign>, String> {
    let matches = command()
        .try_get_matches_from(std::iter::once("cltrap".to_string()).chain(args.iter().cloned()))
        .map_err(|e| format!("the shards' command line does not parse: {e}"))?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.to_string())?;
    match campaign_of(cli.command) {
        Some(r) => r.map(|(c, _, _)| c),
        None => Err(format!(
            "`cltrap {}` is not a campaign command",
            args.join(" ")
        )),
    }
}

fn main() -> ExitCode {
    if let Some(code) = instrument_cmd::intercept() {
        return code;
    }
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match dispatch(cli, &matches) {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            eprintln!("cltrap: {msg}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

fn dispatch(cli: Cli, matches: &ArgMatches) -> Result<u8, String> {
    let mut stdout = std::io::stdout().lock();
    // The first command that opens a capture with a spool compacts it (once: then it has none).
    match &cli.command {
        Cmd::List { dir }
        | Cmd::Show { dir, .. }
        | Cmd::Replay { dir, .. }
        | Cmd::Cover { dir, .. }
        | Cmd::Check { dir, .. } => cltrap_analyzer::compact::implicit(dir),
        _ => {}
    }
    match cli.command {
        Cmd::Compact { dir } => {
            if !dir.join("manifest.json").exists() {
                return Err(format!(
                    "{} is not a cltrap capture: it has no manifest.json",
                    dir.display()
                ));
            }
            let r = cltrap_analyzer::compact::compact(&dir).map_err(|e| e.to_string())?;
            eprintln!("cltrap: {}", r.line(&dir));
            for p in &r.problems {
                eprintln!("cltrap: {p}");
            }
            Ok(if r.problems.is_empty() && r.short_of_space.is_none() {
                0
            } else {
                2
            })
        }
        Cmd::Run { shim, command } => {
            let sub = matches.subcommand_matches("run");
            let controls = CONTROLS
                .iter()
                .filter_map(|c| {
                    sub.and_then(|m| m.get_one::<String>(c.flag))
                        .map(|v| (*c, v.clone()))
                })
                .collect();
            let shim = launcher::find_shim(shim.as_deref()).map_err(|e| e.to_string())?;
            let report = launcher::run(&RunRequest {
                controls,
                shim,
                command,
            })
            .map_err(|e| e.to_string())?;
            eprintln!("cltrap: {}", report.summary);
            instrument_cmd::after_run(&report);
            Ok(u8::try_from(report.exit_code & 0xff).unwrap_or(1))
        }
        Cmd::List { dir } => {
            let capture = open_keeping_damaged(&dir)?;
            let _ = write!(stdout, "{}", list::render(&capture, &mut Resolver::new()));
            // The other launches are listed, but a damaged capture still ends with exit 2
            // and one sentence naming the file and the first damaged line.
            match capture.damaged.first() {
                Some(first) => {
                    eprintln!(
                        "cltrap: {} is corrupt: {first} ({} damaged line(s), listed above)",
                        dir.join(cltrap_capture::LAUNCHES_FILE).display(),
                        capture.damaged.len()
                    );
                    Ok(2)
                }
                None => Ok(0),
            }
        }
        Cmd::Show {
            dir,
            kernel: Some(kernel),
            json,
            ..
        } => {
            // Damaged launch lines: named once, left out, and exit 2.
            let capture = open_keeping_damaged(&dir)?;
            let damaged = damage::report(&capture, "generalisation");
            if let Some(why) = damage::nothing_left(&capture) {
                return Err(why);
            }
            cltrap_analyzer::generalise::cli(&capture, &kernel, json, &mut stdout)
                .map(|c| damage::exit_code(c, damaged))
        }
        Cmd::Export(args) => cltrap_analyzer::export::cli(&args, &mut stdout),
        Cmd::Show { dir, id, json, .. } => {
            let capture = open_keeping_damaged(&dir)?;
            let id = id.ok_or("give a launch id or --kernel NAME")?;
            if let Some(d) = capture.damaged.iter().find(|d| d.id == Some(id)) {
                return Err(format!("launch {id} cannot be shown: {d}"));
            }
            let launch = capture
                .launch(id)
                .map_err(|_| ids::IdsError::not_in(&capture, id).to_string())?;
            if json {
                let program = capture.program(&launch.program).ok();
                let replay = cltrap_capture::replayable::ReplayIndex::of(&capture.launches)
                    .get(id)
                    .cloned();
                let value =
                    serde_json::json!({ "launch": launch, "program": program, "replay": replay });
                let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
                let _ = writeln!(stdout, "{text}");
            } else {
                let _ = write!(
                    stdout,
                    "{}",
                    show::render(&capture, launch, &mut Resolver::new())
                );
            }
            Ok(0)
        }
        cmd @ Cmd::Replay { .. } => {
            let in_process = matches!(
                cmd,
                Cmd::Replay {
                    in_process: true,
                    ..
                }
            );
            let (mut c, flags, device) = match campaign_of(cmd) {
                Some(r) => r?,
                None => return Err("not a campaign".into()),
            };
            if in_process {
                return campaign::here::run(c.as_mut(), &device, &mut stdout);
            }
            campaign::runner::drive(c.as_mut(), &flags, &device, &mut stdout)
        }
        cmd @ Cmd::Cover { .. } => {
            let in_process = matches!(
                cmd,
                Cmd::Cover {
                    in_process: true,
                    ..
                }
            );
            let (mut c, flags, device) = match campaign_of(cmd) {
                Some(r) => r?,
                None => return Err("not a campaign".into()),
            };
            if in_process {
                return campaign::here::run(c.as_mut(), &device, &mut stdout);
            }
            campaign::runner::drive(c.as_mut(), &flags, &device, &mut stdout)
        }
        Cmd::Controls { markdown } => {
            if markdown {
                let _ = write!(stdout, "{}", cltrap_capture::controls::markdown_table());
            } else {
                let w = CONTROLS.iter().map(|c| c.env.len()).max().unwrap_or(0);
                let f = CONTROLS
                    .iter()
                    .map(|c| c.flag.len() + c.value_name.len() + 3)
                    .max()
                    .unwrap_or(0);
                for c in CONTROLS {
                    let flag = format!("--{} {}", c.flag, c.value_name);
                    let default = if c.default.is_empty() {
                        "(unset)"
                    } else {
                        c.default
                    };
                    let _ = writeln!(
                        stdout,
                        "{:<w$}  {flag:<f$}  default {default}: {}",
                        c.env, c.help
                    );
                }
            }
            Ok(0)
        }
        cmd @ (Cmd::Check { .. } | Cmd::Mutate(_)) => {
            let (mut c, flags, device) = match campaign_of(cmd) {
                Some(r) => r?,
                None => return Err("not a campaign".into()),
            };
            campaign::runner::drive(c.as_mut(), &flags, &device, &mut stdout)
        }
        Cmd::Merge { out, shards } => {
            campaign::merge::merge(&out, &shards, &build_campaign, &mut stdout)
        }
        Cmd::CheckWorker {
            dir,
            id,
            engine,
            flags,
            device,
            baseline,
            source,
            extra_options,
            mutant_args,
            inputs,
        } => Ok(match engine {
            check::Engine::Oclgrind => {
                let variant = source.map(|source| check::Variant {
                    source,
                    extra_options,
                    mutant_args,
                });
                check::worker_main(&dir, id, variant.as_ref(), &inputs)
            }
            check::Engine::Native => check::native::worker_main(&dir, id, flags, &device, baseline),
        }),
        Cmd::Slurm(a) => cltrap_analyzer::slurm::cli(&a, &command(), &mut stdout),
        Cmd::Fuzz(a) => cltrap_analyzer::fuzz::units::cli(&a, &mut stdout),
        Cmd::Solve(a) => cltrap_analyzer::solve::units::cli(&a, &mut stdout),
        Cmd::Devices => {
            let all = list_devices().map_err(|e| e.to_string())?;
            for (i, (p, devs)) in all.iter().enumerate() {
                let _ = writeln!(stdout, "platform {i}: {p}");
                for (j, d) in devs.iter().enumerate() {
                    let _ = writeln!(stdout, "  device {j}: {d}");
                }
            }
            Ok(0)
        }
    }
}
