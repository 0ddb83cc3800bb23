//! `cltrap slurm COMMAND ARGS… --tasks N`: a campaign command spread over a Slurm cluster.
//!
//! Nothing here schedules, moves data or retries: Slurm places the jobs, a job array fans the
//! campaign out (task K runs `--shard K/N` of the command into `DIR/shard-K`, with
//! `--devices all` on the GPUs Slurm gave it), the shared filesystem carries the capture and
//! the shards, and `--resume` is the retry: every task runs with it, so a task that Slurm
//! requeues or that is submitted again (`sbatch --array=K DIR/tasks.sbatch`) finishes only
//! the units it had not finished. A merge job (`--dependency=afterok:ARRAY`) runs
//! `cltrap merge DIR/merged DIR/shard-0 …` and writes the report one process would have
//! written to `DIR/merged/report.txt` (report files the command names go into `DIR/merged`).
//!
//! The command line is parsed here with cltrap's own parser before anything is written, so a
//! typo fails now and not on the nodes; the inputs it names (the capture) must be readable
//! here, and every task checks them again on its node (the capture, DIR and cltrap itself
//! must be on a filesystem all nodes see). Both scripts are plain files in DIR, to read,
//! edit or submit again; every user word in them is shell-quoted ([`script`]).

pub mod script;
pub mod submit;

use crate::campaign::args::fingerprint;
use clap::parser::ValueSource;
use script::{sbatch_safe, Plan, MERGE_FILE, TASKS_FILE};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `cltrap slurm`'s arguments: its flags (before the command, or among the command's
/// arguments up to a `--`) and the command.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "cltrap slurm's flags may also follow the command (cltrap slurm check CAPTURE \
--tasks 3); words after a `--` go to the command, for a flag of the command that has the name of \
one of these (cltrap slurm mutate CAPTURE --tasks 4 --out DIR -- --out MUTATE_OUT)."
)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub flags: SlurmFlags,
    /// The campaign command and its arguments (`check CAPTURE --json`).
    #[command(subcommand)]
    pub command: SlurmCommand,
}

/// The campaign command `cltrap slurm` spreads: any word, checked against cltrap's own
/// parser in [`cli`].
#[derive(clap::Subcommand, Debug, Clone)]
pub enum SlurmCommand {
    /// The command's name and arguments.
    #[command(external_subcommand)]
    Run(Vec<String>),
}

/// `cltrap slurm`'s own flags.
#[derive(clap::Args, Debug, Clone, Default, PartialEq)]
pub struct SlurmFlags {
    /// Tasks of the job array (required): the campaign is cut into this many shards.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub tasks: Option<u32>,
    /// GPUs of each task (`--gres=gpu:G`); without it the jobs ask for no GPU.
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_task: Option<u32>,
    /// Slurm partition of the jobs.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Wall-time limit of each job, as sbatch takes it (`30`, `2:00:00`, `1-00:00:00`).
    #[arg(long, value_name = "T")]
    pub time: Option<String>,
    /// Submit both jobs with sbatch (without it, or without sbatch on PATH, the commands that
    /// submit them are printed).
    #[arg(long)]
    pub submit: bool,
    /// The campaign's folder, on a filesystem every node sees: the scripts, shard-K, merged/,
    /// logs/ (default: cltrap-slurm-COMMAND-FINGERPRINT in the current folder).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl SlurmFlags {
    /// These flags and `later` ones together; a flag given in both is an error.
    fn and(self, later: SlurmFlags) -> Result<SlurmFlags, String> {
        fn one<T>(a: Option<T>, b: Option<T>, flag: &str) -> Result<Option<T>, String> {
            match (a, b) {
                (Some(_), Some(_)) => Err(format!("cltrap slurm got {flag} twice")),
                (a, b) => Ok(a.or(b)),
            }
        }
        Ok(SlurmFlags {
            tasks: one(self.tasks, later.tasks, "--tasks")?,
            gpus_per_task: one(self.gpus_per_task, later.gpus_per_task, "--gpus-per-task")?,
            partition: one(self.partition, later.partition, "--partition")?,
            time: one(self.time, later.time, "--time")?,
            submit: self.submit || later.submit,
            out: one(self.out, later.out, "--out")?,
        })
    }
}

/// Takes `cltrap slurm`'s flags out of the command's words (up to a `--`, which is dropped;
/// the words after it are the command's): the flags, and the command.
fn split_flags(words: &[String]) -> Result<(SlurmFlags, Vec<String>), String> {
    use clap::{Args, FromArgMatches};
    let parser = SlurmFlags::augment_args(clap::Command::new("cltrap slurm").no_binary_name(true));
    let ours_named = |w: &str| -> Option<bool> {
        let name = w.strip_prefix("--")?.split('=').next()?;
        parser
            .get_arguments()
            .find(|a| a.get_long() == Some(name))
            .map(|a| a.get_action().takes_values() && !w.contains('='))
    };
    let mut ours: Vec<&str> = Vec::new();
    let mut theirs: Vec<String> = Vec::new();
    let mut it = words.iter();
    if let Some(name) = it.next() {
        theirs.push(name.clone());
    }
    while let Some(w) = it.next() {
        if w == "--" {
            theirs.extend(it.by_ref().cloned());
            break;
        }
        match ours_named(w) {
            Some(takes_value) => {
                ours.push(w);
                if takes_value {
                    ours.extend(it.next().map(String::as_str));
                }
            }
            None => theirs.push(w.clone()),
        }
    }
    let m = parser.clone().try_get_matches_from(ours).map_err(|e| {
        let text = e.render().to_string();
        text.lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string()
    })?;
    let flags = SlurmFlags::from_arg_matches(&m).map_err(|e| e.to_string())?;
    Ok((flags, theirs))
}

/// The campaign flags `cltrap slurm` sets on every task itself.
const SET_HERE: [(&str, &str); 4] = [
    ("shard", "--shard"),
    ("campaign_dir", "--campaign-dir"),
    ("resume", "--resume"),
    ("unit_worker", "--unit-worker"),
];

/// What the command line of a campaign says, once parsed.
#[derive(Debug)]
struct Parsed {
    /// The inputs it reads (positional paths, `--interface`).
    inputs: Vec<PathBuf>,
    /// Whether it chose its own `--devices`.
    own_devices: bool,
}

/// Runs `cltrap slurm`; `cli` is cltrap's whole command-line parser (to check the command).
pub fn cli(args: &SlurmArgs, cli: &clap::Command, out: &mut dyn Write) -> Result<u8, String> {
    let SlurmCommand::Run(words) = &args.command;
    let (later, command) = split_flags(words)?;
    let args = args.flags.clone().and(later)?;
    let tasks = args
        .tasks
        .ok_or("cltrap slurm needs --tasks N (the number of shards)")?;
    let parsed = parse_command(cli, &command)?;
    for input in &parsed.inputs {
        readable(input)?;
    }
    check_slurm_values(&args)?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let dir = campaign_dir(&cwd, args.out.as_deref(), &command)?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find cltrap itself: {e}"))?;
    let plan = Plan {
        exe,
        cwd,
        command,
        inputs: parsed.inputs,
        dir,
        tasks,
        gpus_per_task: args.gpus_per_task,
        partition: args.partition.clone(),
        time: args.time.clone(),
        own_devices: parsed.own_devices,
    };
    write_scripts(&plan)?;
    eprintln!(
        "cltrap: the capture, {} and {} must be on a filesystem every node sees",
        plan.dir.display(),
        plan.exe.display()
    );
    let sbatch = submit::find_sbatch();
    match (&sbatch, args.submit) {
        (Some(sbatch), true) => {
            let ids = submit::submit(sbatch, &plan)?;
            let _ = writeln!(
                out,
                "job array {}: {} task(s), shards into {}/shard-K (logs in {})",
                ids.array,
                plan.tasks,
                plan.dir.display(),
                plan.logs_dir().display()
            );
            let _ = writeln!(
                out,
                "merge job {} (after every task succeeds): report in {}, report files in {}",
                ids.merge,
                plan.report().display(),
                plan.merged_dir().display()
            );
        }
        _ => {
            if args.submit {
                eprintln!("cltrap: sbatch is not on PATH: nothing submitted");
            }
            let _ = writeln!(
                out,
                "wrote {} (a job array of {} task(s)) and {}; submit them with:",
                plan.dir.join(TASKS_FILE).display(),
                plan.tasks,
                plan.dir.join(MERGE_FILE).display()
            );
            for c in submit::commands(&plan)? {
                let _ = writeln!(out, "  {c}");
            }
            let _ = writeln!(out, "the report will be in {}", plan.report().display());
        }
    }
    Ok(0)
}

/// Refuses `--partition` and `--time` values that are not Slurm's (they go into `#SBATCH`
/// lines, where nothing is quoted).
fn check_slurm_values(args: &SlurmFlags) -> Result<(), String> {
    if let Some(p) = &args.partition {
        if !sbatch_safe(p) {
            return Err(format!(
                "--partition `{}` is not a Slurm partition name",
                p.escape_debug()
            ));
        }
    }
    if let Some(t) = &args.time {
        if t.is_empty()
            || !t
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '-')
        {
            return Err(format!(
                "--time `{}` is not a Slurm time limit (minutes, H:MM:SS or D-HH:MM:SS)",
                t.escape_debug()
            ));
        }
    }
    Ok(())
}

/// The campaign folder (absolute): `--out`, or one named after the command line. It must fit
/// an `#SBATCH` line and not hold an earlier Slurm campaign.
fn campaign_dir(cwd: &Path, out: Option<&Path>, command: &[String]) -> Result<PathBuf, String> {
    let dir = match out {
        Some(d) => cwd.join(d),
        None => cwd.join(format!(
            "cltrap-slurm-{}-{}",
            command[0],
            fingerprint(command)
        )),
    };
    let dir = normalise(&dir);
    if !dir.to_str().is_some_and(sbatch_safe) {
        return Err(format!(
            "the campaign folder {} cannot go into an #SBATCH line (no spaces, quotes, `%`, `#`, `$` or `\\`): give --out a plainer folder",
            dir.display()
        ));
    }
    if dir.join(TASKS_FILE).exists() || dir.join("shard-0").exists() {
        return Err(format!(
            "{} already holds a Slurm campaign: submit its scripts again to finish it (the tasks resume) or give another --out",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Parses `cltrap COMMAND ARGS…` with cltrap's parser: it must be a campaign command
/// (one that takes `--shard`), without the flags the tasks get from here.
fn parse_command(cli: &clap::Command, command: &[String]) -> Result<Parsed, String> {
    let name = command
        .first()
        .ok_or("cltrap slurm needs a command to run")?;
    let campaigns: Vec<String> = cli
        .get_subcommands()
        .filter(|s| s.get_arguments().any(|a| a.get_id() == "shard"))
        .map(|s| s.get_name().to_string())
        .collect();
    let sub = cli
        .find_subcommand(name)
        .filter(|s| campaigns.iter().any(|c| c == s.get_name()))
        .ok_or_else(|| {
            format!(
                "cltrap slurm runs a campaign command ({}), not `{}`",
                if campaigns.is_empty() {
                    "none yet".to_string()
                } else {
                    campaigns.join(", ")
                },
                name.escape_debug()
            )
        })?;
    let argv = std::iter::once("cltrap").chain(command.iter().map(String::as_str));
    let m = cli.clone().try_get_matches_from(argv).map_err(|e| {
        let text = e.render().to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string();
        format!(
            "`cltrap {}` is not a valid command: {first}",
            command.join(" ")
        )
    })?;
    let (_, sm) = m
        .subcommand()
        .ok_or_else(|| format!("`cltrap {}` names no command", command.join(" ")))?;
    for (id, flag) in SET_HERE {
        if sm.value_source(id) == Some(ValueSource::CommandLine) {
            return Err(format!(
                "cltrap slurm gives every task its own {flag}: leave it out of the command"
            ));
        }
    }
    let mut inputs = Vec::new();
    for arg in sub.get_arguments() {
        let id = arg.get_id().as_str();
        if !(arg.is_positional() || id == "interface") {
            continue;
        }
        if let Ok(Some(paths)) = sm.try_get_many::<PathBuf>(id) {
            inputs.extend(paths.cloned());
        }
    }
    Ok(Parsed {
        inputs,
        own_devices: sm.value_source("devices") == Some(ValueSource::CommandLine),
    })
}

/// Refuses an input that cannot be read here (a folder that cannot be listed, a file that
/// cannot be opened).
fn readable(p: &Path) -> Result<(), String> {
    let r = if p.is_dir() {
        std::fs::read_dir(p).map(|_| ())
    } else {
        std::fs::File::open(p).map(|_| ())
    };
    r.map_err(|e| {
        format!(
            "{} cannot be read ({e}): the command's capture and inputs must be readable here and on every node, on a filesystem all nodes see",
            p.display()
        )
    })
}

/// `a/./b/../c` → `a/c`, without touching the filesystem (DIR need not exist yet).
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Writes both scripts (executable) into the campaign folder, with its logs folder.
fn write_scripts(plan: &Plan) -> Result<(), String> {
    let tasks = plan.tasks_script()?;
    let merge = plan.merge_script()?;
    let logs = plan.logs_dir();
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    for (name, text) in [(TASKS_FILE, tasks), (MERGE_FILE, merge)] {
        let path = plan.dir.join(name);
        // Replaced, never written through a link planted there (a campaign folder on a
        // shared filesystem), and executable before it takes the name.
        crate::campaign::journal::replace_file_with_mode(&path, text.as_bytes(), Some(0o755))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Parser, Subcommand};

    /// A command line shaped like cltrap's: one campaign command, one that is not.
    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        Check {
            dir: PathBuf,
            ids: Vec<String>,
            #[arg(long)]
            json: bool,
            #[command(flatten)]
            campaign: crate::campaign::CampaignArgs,
        },
        List {
            dir: PathBuf,
        },
        Slurm(SlurmArgs),
    }

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_is_parsed_by_cltraps_parser() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let p = parse_command(&cli, &words(&["check", "cap", "3", "--json"])).unwrap();
        assert_eq!(p.inputs, vec![PathBuf::from("cap")]);
        assert!(!p.own_devices);
        let p = parse_command(&cli, &words(&["check", "cap", "--devices=0,1"])).unwrap();
        assert!(p.own_devices);
        let e = parse_command(&cli, &words(&["list", "cap"])).unwrap_err();
        assert_eq!(
            e,
            "cltrap slurm runs a campaign command (check), not `list`"
        );
        let e = parse_command(&cli, &words(&["check", "cap", "--jsn"])).unwrap_err();
        assert!(
            e.starts_with(
                "`cltrap check cap --jsn` is not a valid command: unexpected argument '--jsn'"
            ),
            "{e}"
        );
        for flag in [
            &["--shard", "0/2"][..],
            &["--campaign-dir=x"],
            &["--resume"],
        ] {
            let mut c = words(&["check", "cap"]);
            c.extend(words(flag));
            let e = parse_command(&cli, &c).unwrap_err();
            assert!(
                e.starts_with("cltrap slurm gives every task its own --"),
                "{e}"
            );
        }
    }

    /// `cltrap slurm ARGV…` parsed as cltrap parses it: its flags and the command.
    fn slurm(argv: &[&str]) -> Result<(SlurmFlags, Vec<String>), String> {
        let mut full = words(&["cltrap", "slurm"]);
        full.extend(words(argv));
        let Cmd::Slurm(a) = Cli::try_parse_from(full).map_err(|e| e.to_string())?.cmd else {
            panic!("not slurm")
        };
        let SlurmCommand::Run(w) = a.command;
        let (later, command) = split_flags(&w)?;
        Ok((a.flags.and(later)?, command))
    }

    #[test]
    fn slurm_flags_are_taken_around_the_command_and_not_after_a_double_dash() {
        let (f, c) = slurm(&["check", "cap", "--json", "--tasks", "3", "--submit", "7"]).unwrap();
        assert_eq!(c, words(&["check", "cap", "--json", "7"]));
        assert_eq!((f.tasks, f.submit), (Some(3), true));
        let (f, c) =
            slurm(&["--tasks=2", "--time", "10", "check", "cap", "--partition=p"]).unwrap();
        assert_eq!(c, words(&["check", "cap"]));
        assert_eq!(
            (f.tasks, f.time.as_deref(), f.partition.as_deref()),
            (Some(2), Some("10"), Some("p"))
        );
        let (f, c) = slurm(&[
            "mutate", "cap", "--tasks", "4", "--out", "D", "--", "--out", "M", "--",
        ])
        .unwrap();
        assert_eq!(c, words(&["mutate", "cap", "--out", "M", "--"]));
        assert_eq!((f.tasks, f.out), (Some(4), Some(PathBuf::from("D"))));
        assert!(slurm(&["check", "cap", "--tasks", "0"])
            .unwrap_err()
            .contains("--tasks"));
        assert_eq!(
            slurm(&["--tasks", "2", "check", "cap", "--tasks", "3"]).unwrap_err(),
            "cltrap slurm got --tasks twice"
        );
    }

    #[test]
    fn an_unreadable_input_is_refused_in_one_sentence() {
        let e = readable(Path::new("/no/such/capture")).unwrap_err();
        assert!(e.starts_with("/no/such/capture cannot be read ("), "{e}");
        assert!(e.ends_with("on a filesystem all nodes see"), "{e}");
        assert!(readable(Path::new("/")).is_ok());
    }

    #[test]
    fn the_campaign_folder_fits_sbatch_and_is_new() {
        let tmp = tempfile::tempdir().unwrap();
        let cmd = words(&["check", "cap"]);
        let d = campaign_dir(tmp.path(), None, &cmd).unwrap();
        assert_eq!(
            d,
            tmp.path()
                .join(format!("cltrap-slurm-check-{}", fingerprint(&cmd)))
        );
        assert_eq!(
            campaign_dir(tmp.path(), Some(Path::new("a/../b")), &cmd).unwrap(),
            tmp.path().join("b")
        );
        let e = campaign_dir(tmp.path(), Some(Path::new("my runs")), &cmd).unwrap_err();
        assert!(e.contains("cannot go into an #SBATCH line"), "{e}");
        std::fs::create_dir_all(tmp.path().join("b/shard-0")).unwrap();
        let e = campaign_dir(tmp.path(), Some(Path::new("b")), &cmd).unwrap_err();
        assert!(e.contains("already holds a Slurm campaign"), "{e}");
        let bad = SlurmFlags {
            time: Some("1;rm".into()),
            ..Default::default()
        };
        assert!(check_slurm_values(&bad)
            .unwrap_err()
            .starts_with("--time `1;rm`"));
        let bad = SlurmFlags {
            partition: Some("gpu\n#SBATCH --x".into()),
            ..Default::default()
        };
        assert!(check_slurm_values(&bad)
            .unwrap_err()
            .starts_with("--partition"));
    }

    #[test]
    fn paths_are_normalised_without_the_filesystem() {
        assert_eq!(normalise(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
