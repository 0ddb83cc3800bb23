//! The two `sbatch` scripts of a Slurm campaign: a job array whose task K runs shard K of the
//! command, and a merge job that combines the shards once every task has succeeded.
//!
//! Every word that comes from the user (the command's arguments, paths) is shell-quoted
//! ([`shlex`]), so no argument can run code in the job; the only unquoted expansions are the
//! script's own (`$SLURM_ARRAY_TASK_ID`, `$(hostname)`). `#SBATCH` lines are read by sbatch,
//! not by a shell, and cannot carry quoting: their values are checked ([`sbatch_safe`]) before
//! a plan is made, and no user word ever goes into a comment line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a Slurm campaign runs, where, and with which resources.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The `cltrap` executable the jobs run (absolute; on a filesystem the nodes see).
    pub exe: PathBuf,
    /// The folder the command was given in: relative paths of the command are relative to it.
    pub cwd: PathBuf,
    /// The campaign command and its arguments, after `cltrap` (`check CAPTURE --json`).
    pub command: Vec<String>,
    /// Inputs the command reads (the capture): checked at the start of every task.
    pub inputs: Vec<PathBuf>,
    /// The campaign's folder (absolute): scripts, `shard-K`, `merged`, `logs`.
    pub dir: PathBuf,
    /// Array tasks, one shard each.
    pub tasks: u32,
    /// GPUs of each task (`--gres=gpu:G`), when the command runs on GPUs.
    pub gpus_per_task: Option<u32>,
    /// Slurm partition.
    pub partition: Option<String>,
    /// Wall-time limit of each job, in Slurm's syntax.
    pub time: Option<String>,
    /// Whether the command line sets its own `--devices` (else the tasks get `--devices all`).
    pub own_devices: bool,
}

/// The job array's script.
pub const TASKS_FILE: &str = "tasks.sbatch";
/// The merge job's script.
pub const MERGE_FILE: &str = "merge.sbatch";
/// The merged report: the merge's standard output (the report the command prints).
pub const REPORT_FILE: &str = "report.txt";

impl Plan {
    /// Shard K's campaign folder.
    pub fn shard_dir(&self, k: u32) -> PathBuf {
        self.dir.join(format!("shard-{k}"))
    }

    /// Where `cltrap merge` writes the report files and the merged journal.
    pub fn merged_dir(&self) -> PathBuf {
        self.dir.join("merged")
    }

    /// The merged report (the command's terminal or JSON report).
    pub fn report(&self) -> PathBuf {
        self.merged_dir().join(REPORT_FILE)
    }

    /// Where the jobs' output goes.
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// The `#SBATCH` lines both jobs share.
    fn common_directives(&self, s: &mut String) {
        if let Some(p) = &self.partition {
            let _ = writeln!(s, "#SBATCH --partition={p}");
        }
        if let Some(t) = &self.time {
            let _ = writeln!(s, "#SBATCH --time={t}");
        }
    }

    /// The job array's script: task K runs
    /// `cltrap COMMAND --shard K/N --campaign-dir DIR/shard-K --devices all --resume ARGS…`.
    pub fn tasks_script(&self) -> Result<String, String> {
        let mut s = String::from("#!/bin/bash\n");
        let _ = writeln!(s, "#SBATCH --job-name=cltrap-{}", self.name());
        let _ = writeln!(s, "#SBATCH --array=0-{}", self.tasks.saturating_sub(1));
        let _ = writeln!(s, "#SBATCH --ntasks=1");
        if let Some(g) = self.gpus_per_task {
            let _ = writeln!(s, "#SBATCH --gres=gpu:{g}");
        }
        self.common_directives(&mut s);
        let _ = writeln!(
            s,
            "#SBATCH --output={}/task-%a.out",
            self.logs_dir().display()
        );
        let _ = writeln!(s, "#SBATCH --open-mode=append");
        s.push_str(
            "# Task K runs shard K of the campaign into shard-K of this folder. Every task runs\n\
             # with --resume: a task Slurm requeues, or one submitted again with\n\
             # `sbatch --array=K tasks.sbatch`, skips the units it finished before.\n",
        );
        s.push_str(PRELUDE);
        self.enter_and_check(&mut s)?;
        // The campaign flags go right after the subcommand, before any `--` of its arguments.
        let (sub, rest) = self
            .command
            .split_first()
            .ok_or("cltrap slurm needs a command to run")?;
        let mut line = String::from("exec ");
        line.push_str(&quote_path(&self.exe)?);
        line.push(' ');
        line.push_str(&quote(sub)?);
        let _ = write!(
            line,
            " --shard \"$SLURM_ARRAY_TASK_ID\"/{} --campaign-dir {}/shard-\"$SLURM_ARRAY_TASK_ID\"",
            self.tasks,
            quote_path(&self.dir)?
        );
        if !self.own_devices {
            line.push_str(" --devices all");
        }
        line.push_str(" --resume");
        for a in rest {
            line.push(' ');
            line.push_str(&quote(a)?);
        }
        line.push('\n');
        s.push_str(&line);
        Ok(s)
    }

    /// The merge job's script: `cltrap merge DIR/merged DIR/shard-0 … DIR/shard-(N-1)`, its
    /// report into `DIR/merged/report.txt`; its exit status is the command's.
    pub fn merge_script(&self) -> Result<String, String> {
        let mut s = String::from("#!/bin/bash\n");
        let _ = writeln!(s, "#SBATCH --job-name=cltrap-{}-merge", self.name());
        let _ = writeln!(s, "#SBATCH --ntasks=1");
        self.common_directives(&mut s);
        let _ = writeln!(
            s,
            "#SBATCH --output={}/merge.out",
            self.logs_dir().display()
        );
        let _ = writeln!(s, "#SBATCH --open-mode=append");
        // A task that failed makes the dependency unsatisfiable: end the merge job then
        // instead of leaving it pending forever.
        let _ = writeln!(s, "#SBATCH --kill-on-invalid-dep=yes");
        s.push_str(
            "# Combines the shards into the report one process would have written, once every\n\
             # task of the array has succeeded (sbatch --dependency=afterok:ARRAY_JOB_ID).\n",
        );
        s.push_str(PRELUDE);
        self.enter_and_check(&mut s)?;
        let merged = quote_path(&self.merged_dir())?;
        let _ = writeln!(s, "mkdir -p -- {merged} || fail 'cannot create' {merged}");
        let mut line = String::from("exec ");
        line.push_str(&quote_path(&self.exe)?);
        line.push_str(" merge ");
        line.push_str(&merged);
        for k in 0..self.tasks {
            line.push_str(" \\\n    ");
            line.push_str(&quote_path(&self.shard_dir(k))?);
        }
        let _ = writeln!(line, " \\\n    >{}", quote_path(&self.report())?);
        s.push_str(&line);
        Ok(s)
    }

    /// `cd` into the command's folder and the readability check of its inputs, each failing
    /// with one sentence that names the node.
    fn enter_and_check(&self, s: &mut String) -> Result<(), String> {
        let cwd = quote_path(&self.cwd)?;
        let _ = writeln!(
            s,
            "cd -- {cwd} || fail 'cannot enter' {cwd} \"on $(hostname):\" \"$SHARED\""
        );
        for i in &self.inputs {
            let q = quote_path(i)?;
            let _ = writeln!(
                s,
                "[ -r {q} ] || fail {q} \"cannot be read on $(hostname):\" \"$SHARED\""
            );
        }
        Ok(())
    }

    /// The command's name, for job names (a subcommand name: letters and dashes).
    fn name(&self) -> String {
        self.command
            .first()
            .map(|c| {
                c.chars()
                    .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '-')
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The lines every script runs first (no user word in them).
const PRELUDE: &str = "set -u\n\
SHARED='the capture, the campaign folder and cltrap must be on a filesystem every node sees'\n\
fail() { printf 'cltrap slurm: %s\\n' \"$*\" >&2; exit 2; }\n";

/// One shell word for `s`.
pub fn quote(s: &str) -> Result<String, String> {
    shlex::try_quote(s)
        .map(|q| q.into_owned())
        .map_err(|e| format!("`{}` cannot go into a job script: {e}", s.escape_debug()))
}

/// One shell word for a path (which must be UTF-8 to be written into a script).
pub fn quote_path(p: &Path) -> Result<String, String> {
    let s = p.to_str().ok_or_else(|| {
        format!(
            "{} is not UTF-8 and cannot go into a job script",
            p.display()
        )
    })?;
    quote(s)
}

/// Whether `s` can be an `#SBATCH` value as is: sbatch splits those lines on white space and
/// does its own `%` substitutions in file names, with no shell quoting to lean on.
pub fn sbatch_safe(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !"\"'\\%#$`".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    fn plan(dir: &Path, command: &[&str]) -> Plan {
        Plan {
            exe: PathBuf::from("/opt/cltrap/bin/cltrap"),
            cwd: dir.to_path_buf(),
            command: command.iter().map(|s| s.to_string()).collect(),
            inputs: vec![PathBuf::from("cap")],
            dir: dir.join("camp"),
            tasks: 3,
            gpus_per_task: None,
            partition: None,
            time: None,
            own_devices: false,
        }
    }

    #[test]
    fn the_array_script_runs_one_shard_per_task() {
        let p = Plan {
            gpus_per_task: Some(2),
            partition: Some("gpu".into()),
            time: Some("1-00:00:00".into()),
            ..plan(Path::new("/shared/work"), &["check", "cap", "--json"])
        };
        let s = p.tasks_script().unwrap();
        assert!(
            s.starts_with("#!/bin/bash\n#SBATCH --job-name=cltrap-check\n#SBATCH --array=0-2\n"),
            "{s}"
        );
        assert!(s.contains("#SBATCH --gres=gpu:2\n"), "{s}");
        assert!(
            s.contains("#SBATCH --partition=gpu\n#SBATCH --time=1-00:00:00\n"),
            "{s}"
        );
        assert!(
            s.contains("#SBATCH --output=/shared/work/camp/logs/task-%a.out\n"),
            "{s}"
        );
        assert!(s.contains("cd -- /shared/work || fail"), "{s}");
        assert!(s.contains("[ -r cap ] || fail cap"), "{s}");
        assert!(s.ends_with(
            "exec /opt/cltrap/bin/cltrap check --shard \"$SLURM_ARRAY_TASK_ID\"/3 \
             --campaign-dir /shared/work/camp/shard-\"$SLURM_ARRAY_TASK_ID\" --devices all --resume \
             cap --json\n"
        ), "{s}");
        // Every #SBATCH line comes before the first command (sbatch stops reading there).
        let first_command = s.lines().position(|l| !l.starts_with('#')).unwrap();
        assert!(s
            .lines()
            .skip(first_command)
            .all(|l| !l.starts_with("#SBATCH")));
    }

    #[test]
    fn gpus_only_when_asked_and_own_devices_kept() {
        let p = Plan {
            own_devices: true,
            ..plan(Path::new("/w"), &["mutate", "cap", "--devices", "0,1"])
        };
        let s = p.tasks_script().unwrap();
        assert!(!s.contains("gres") && !s.contains("gpu"), "{s}");
        assert!(!s.contains("--devices all"), "{s}");
        assert!(s.contains(" --resume cap --devices '0,1'\n"), "{s}");
    }

    #[test]
    fn the_merge_script_names_every_shard() {
        let p = plan(Path::new("/w"), &["check", "cap"]);
        let s = p.merge_script().unwrap();
        assert!(s.contains("#SBATCH --job-name=cltrap-check-merge\n"), "{s}");
        assert!(s.contains("#SBATCH --kill-on-invalid-dep=yes\n"), "{s}");
        assert!(!s.contains("--array"), "{s}");
        assert!(
            s.contains(
                "exec /opt/cltrap/bin/cltrap merge /w/camp/merged \\\n    /w/camp/shard-0 \\\n    \
             /w/camp/shard-1 \\\n    /w/camp/shard-2 \\\n    >/w/camp/merged/report.txt\n"
            ),
            "{s}"
        );
    }

    #[test]
    fn sbatch_values_with_shell_or_sbatch_syntax_are_not_safe() {
        for ok in ["/shared/run-1/camp", "gpu,debug", "1-00:00"] {
            assert!(sbatch_safe(ok), "{ok}");
        }
        for bad in [
            "", "a b", "a\nb", "a%j", "a#b", "a'b", "a\"b", "a\\b", "$(x)", "a\tb",
        ] {
            assert!(!sbatch_safe(bad), "{bad:?}");
        }
    }

    /// The scripts run under bash with hostile arguments: the command gets exactly the words
    /// it was given, and none of them runs code.
    #[test]
    fn hostile_arguments_reach_the_command_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("it's a \"work\" dir $(touch pwned-cwd)");
        std::fs::create_dir_all(&work).unwrap();
        let input = "cap; touch pwned-input";
        std::fs::create_dir_all(work.join(input)).unwrap();
        // A stand-in for cltrap that writes its arguments NUL-separated.
        let exe = tmp.path().join("fake `cltrap`");
        let dump = tmp.path().join("args");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/bash\nprintf '%s\\0' \"$@\" > {}\n",
                quote_path(&dump).unwrap()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let hostile = [
            "check",
            input,
            "$(touch pwned-1)",
            "`touch pwned-2`",
            "; touch pwned-3",
            "a'b\"c",
            "line\ntouch pwned-4",
            "*",
            "~",
            "{a,b}",
            "!x",
            "back\\slash",
            "",
            "-n",
            "tab\there",
            "ünï ¢ødé",
        ];
        let p = Plan {
            exe: exe.clone(),
            cwd: work.clone(),
            inputs: vec![PathBuf::from(input)],
            dir: tmp.path().join("camp $(touch pwned-dir)"),
            ..plan(&work, &hostile)
        };
        let script = tmp.path().join("tasks.sbatch");
        std::fs::write(&script, p.tasks_script().unwrap()).unwrap();
        let out = Command::new("bash")
            .arg(&script)
            .env("SLURM_ARRAY_TASK_ID", "1")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read(&dump).unwrap();
        let got: Vec<String> = got
            .split(|b| *b == 0)
            .map(|w| String::from_utf8(w.to_vec()).unwrap())
            .collect();
        let mut want: Vec<String> = vec![
            "check".into(),
            "--shard".into(),
            "1/3".into(),
            "--campaign-dir".into(),
            format!("{}/shard-1", p.dir.display()),
            "--devices".into(),
            "all".into(),
            "--resume".into(),
        ];
        want.extend(hostile[1..].iter().map(|s| s.to_string()));
        want.push(String::new()); // after the last NUL
        assert_eq!(got, want);
        for d in [tmp.path(), work.as_path()] {
            for e in std::fs::read_dir(d).unwrap() {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                assert!(!name.starts_with("pwned"), "an argument ran code: {name}");
            }
        }
    }

    /// A node that cannot read the capture stops the task with one sentence naming it.
    #[test]
    fn an_unreadable_input_stops_the_task_with_a_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let p = Plan {
            exe: PathBuf::from("/bin/true"),
            inputs: vec![PathBuf::from("no such capture")],
            ..plan(tmp.path(), &["check", "no such capture"])
        };
        let script = tmp.path().join("tasks.sbatch");
        std::fs::write(&script, p.tasks_script().unwrap()).unwrap();
        let out = Command::new("bash")
            .arg(&script)
            .env("SLURM_ARRAY_TASK_ID", "0")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("cltrap slurm: no such capture cannot be read on ")
                && err.contains("must be on a filesystem every node sees"),
            "{err}"
        );
    }
}
