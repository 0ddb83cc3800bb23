//! `cltrap slurm` on a real Slurm cluster: Debian's slurm-wlm (munged, slurmctld and slurmd on
//! this machine, configured and started in a private folder by `scripts/slurm-setup.sh`, and
//! stopped at the end). `cltrap slurm check … --tasks 3 --submit` and `cltrap slurm mutate …
//! --tasks 4 --submit` run on a fixture capture as a job array plus a merge job, and the merged
//! report must be the single-process run's report (the same bytes apart from timing fields).
//!
//! The test says `SKIP: reason` and passes only where the cluster cannot run in this
//! environment (the setup script exits 77: the packages cannot be installed, or a daemon exits
//! at start). Waiting for the jobs has a generous limit (the verdict never depends on load).

use cltrap_e2e::campaign::without_timings;
use cltrap_e2e::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long the jobs of one campaign may take on a loaded 2-core machine before the test gives
/// up (a hang, not a slow run).
const JOB_LIMIT: Duration = Duration::from_secs(1800);

/// A single-node cluster, stopped when dropped.
struct Cluster {
    state: tempfile::TempDir,
    port: u16,
}

/// Why the cluster cannot run here (the script's `cannot start:` line).
struct CannotRun(String);

impl Cluster {
    fn script() -> PathBuf {
        workspace_root().join("scripts/slurm-setup.sh")
    }

    /// Starts a cluster; `n` tells apart the clusters of one test process.
    fn start(n: u16) -> Result<Cluster, CannotRun> {
        let state = tempfile::Builder::new()
            .prefix("cltrap-slurm-")
            .tempdir()
            .expect("a temporary folder for the cluster");
        // Ports of their own, so clusters of tests running at the same time do not meet.
        let port = 20000 + (std::process::id() % 5000) as u16 * 8 + n * 2;
        let out = Command::new(Self::script())
            .arg("start")
            .arg(state.path())
            .env("CLTRAP_SLURM_PORT", port.to_string())
            .output()
            .expect("scripts/slurm-setup.sh runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(77) {
            let reason = stderr
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("cannot start: "))
                .unwrap_or("the setup script gave no reason")
                .to_string();
            return Err(CannotRun(reason));
        }
        let cluster = Cluster { state, port };
        assert!(
            out.status.success(),
            "scripts/slurm-setup.sh start failed ({}):\n{stderr}\n{}",
            out.status,
            cluster.logs()
        );
        Ok(cluster)
    }

    fn conf(&self) -> PathBuf {
        self.state.path().join("slurm.conf")
    }

    /// A Slurm client command against this cluster.
    fn client(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The daemons' last log lines, for failure messages.
    fn logs(&self) -> String {
        let mut s = String::new();
        for log in ["slurmctld.log", "slurmd.log", "munge/munged.log"] {
            let text = std::fs::read_to_string(self.state.path().join(log)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            s.push_str(&format!("--- {log} ---\n{}\n", tail.join("\n")));
        }
        s
    }

    /// Waits until `jobs` have left the queue; panics past [`JOB_LIMIT`].
    fn wait(&self, jobs: &[&str], what: &str) {
        let start = Instant::now();
        let list = jobs.join(",");
        loop {
            let queued = self.client("squeue", &["-h", "-j", &list, "-o", "%i %T %r"]);
            if queued.trim().is_empty() {
                return;
            }
            assert!(
                start.elapsed() < JOB_LIMIT,
                "{what}: jobs {list} still queued after {JOB_LIMIT:?}:\n{queued}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_secs(2));
        }
    }

    /// `JobState` and `ExitCode` of a finished job (`scontrol show job`).
    fn outcome(&self, job: &str) -> (String, String) {
        let text = self.client("scontrol", &["show", "job", job]);
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or("?")
                .to_string()
        };
        (field("JobState="), field("ExitCode="))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(Self::script())
            .arg("stop")
            .arg(self.state.path())
            .env("CLTRAP_SLURM_PORT", self.port.to_string())
            .output();
    }
}

/// A capture of the `check` fixture app launching `kernels` (one launch each).
fn capture(label: &str, kernels: &[&str]) -> TestDir {
    let dir = fresh_capture_dir(label);
    let out = run_captured(&dir, &[], &fixture("check"), kernels);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

/// Runs `cltrap ARGS` in `cwd` with `env` added (and, given a cluster, its clients; the jobs
/// inherit that environment).
fn cltrap_env(
    cluster: Option<&Cluster>,
    cwd: &Path,
    args: &[String],
    env: &[(&str, &str)],
) -> Outcome {
    let t = tools();
    let conf = cluster.map(Cluster::conf);
    let mut all: Vec<(&str, &OsStr)> = vec![("CLTRAP_SHIM", t.shim.as_os_str())];
    if let Some(c) = &conf {
        all.push(("SLURM_CONF", c.as_os_str()));
    }
    all.extend(env.iter().map(|(k, v)| (*k, OsStr::new(*v))));
    run_with_env(&t.cltrap, args, &all, Some(cwd))
}

/// The job ids `cltrap slurm --submit` printed: (array, merge).
fn job_ids(out: &Outcome) -> (String, String) {
    let text = out.stdout_text();
    let after = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| panic!("no `{prefix}ID` line\n{}", out.describe()))
            .to_string()
    };
    (after("job array "), after("merge job "))
}

fn json_of(text: &str, what: &str) -> Value {
    let v: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON ({e}):\n{text}"));
    without_timings(v)
}

/// A report as compared: JSON without its timing fields, or text with its durations masked.
#[derive(Debug, PartialEq)]
enum Report {
    Json(Value),
    Text(String),
}

impl Report {
    fn of(text: &str, what: &str) -> Report {
        match text.trim_start().starts_with(['{', '[']) {
            true => Report::Json(json_of(text, what)),
            false => Report::Text(mask_durations(text)),
        }
    }
}

/// `12.5 s`, `3ms`, `0.2 s` → `<t>`: the durations a terminal report prints.
fn mask_durations(text: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_number =
            chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if starts_number {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let mut k = j;
            if k < chars.len() && chars[k] == ' ' {
                k += 1;
            }
            let unit: String = chars[k..]
                .iter()
                .take_while(|c| c.is_alphabetic())
                .collect();
            if ["s", "ms", "us", "µs", "ns", "min"].contains(&unit.as_str()) {
                out.push_str("<t>");
                i = k + unit.chars().count();
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// What the single-process run and the merge job must agree on.
struct Expected {
    /// The report the command prints.
    stdout: Report,
    /// Its exit status.
    code: i32,
    /// Report files: (the single run's, the name the merge writes into merged/).
    files: Vec<(PathBuf, String)>,
}

/// Waits for a campaign's jobs and checks its merged report in `out_dir` against the single
/// run's.
fn assert_merged_equals(
    cluster: &Cluster,
    what: &str,
    out_dir: &Path,
    jobs: &(String, String),
    want: &Expected,
) {
    cluster.wait(&[&jobs.0, &jobs.1], what);
    let logs = || {
        let mut s = String::new();
        if let Ok(rd) = std::fs::read_dir(out_dir.join("logs")) {
            for e in rd.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                s.push_str(&format!("--- {} ---\n{text}\n", e.path().display()));
            }
        }
        s
    };
    let (array_state, _) = cluster.outcome(&jobs.0);
    let (merge_state, merge_exit) = cluster.outcome(&jobs.1);
    let report = std::fs::read_to_string(out_dir.join("merged/report.txt")).unwrap_or_else(|e| {
        panic!(
            "{what}: no merged report ({e}); array {array_state}, merge {merge_state} {merge_exit}\n{}\n{}",
            logs(),
            cluster.logs()
        )
    });
    assert_eq!(
        Report::of(&report, what),
        want.stdout,
        "{what}: the merged report differs from the single run's\n{}",
        logs()
    );
    assert_eq!(
        merge_exit,
        format!("{}:0", want.code),
        "{what}: the merge job ({merge_state}) did not exit as the single run\n{}",
        logs()
    );
    for (single, merged) in &want.files {
        let a = std::fs::read_to_string(single).expect("the single run's report file");
        let b = std::fs::read_to_string(out_dir.join("merged").join(merged))
            .unwrap_or_else(|e| panic!("{what}: merged/{merged} is missing ({e})\n{}", logs()));
        assert_eq!(
            Report::of(&b, merged),
            Report::of(&a, merged),
            "{what}: merged/{merged} differs from the single run's"
        );
    }
    // The merged journal holds every unit, and each shard's journal only its own.
    let merged_units = journal_units(&out_dir.join("merged"));
    let mut from_shards = 0;
    for k in 0.. {
        let shard = out_dir.join(format!("shard-{k}"));
        if !shard.is_dir() {
            break;
        }
        from_shards += journal_units(&shard);
    }
    assert_eq!(
        from_shards, merged_units,
        "{what}: the shards' units are not the merged ones"
    );
}

/// Finished units in a campaign folder's journal.
fn journal_units(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("units.jsonl"))
        .unwrap_or_else(|e| panic!("{}: no journal ({e})", dir.display()));
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}

#[test]
fn durations_are_masked_and_other_numbers_kept() {
    assert_eq!(
        mask_durations("3 mutants in 12.5 s, 40ms each; 2 killed, x1 s2"),
        "3 mutants in <t>, <t> each; 2 killed, x1 s2"
    );
}

/// One cluster at a time: the tests of this file take turns.
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `single` (a campaign command, from `work`), then the same through
/// `cltrap slurm … --tasks TASKS --submit --out work/D`, and compares the merged report with
/// the single run's; `files` are the report files the command line names (relative: the
/// single run writes them into work/single, the merge into D/merged).
fn slurm_equals_single(
    label: &str,
    n: u16,
    single: &[&str],
    tasks: u32,
    files: &[&str],
    env: &[(&str, &str)],
    then: impl FnOnce(&Cluster, &Path),
) {
    let _turn = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = match Cluster::start(n) {
        Ok(c) => c,
        Err(CannotRun(reason)) => {
            println!("SKIP: {reason}");
            skip(label, &reason);
            return;
        }
    };
    let work = fresh_dir("slurm", label);
    // The single-process run first, alone on the machine; its report files in work/single
    // (the same names: a SARIF log names its sources folder after its own file name).
    std::fs::create_dir_all(work.join("single")).expect("work/single");
    let mut args: Vec<String> = single.iter().map(|s| s.to_string()).collect();
    for f in files {
        let pos = args
            .iter()
            .position(|a| a == f)
            .expect("a report file argument");
        args[pos] = format!("single/{f}");
    }
    let one = cltrap_env(None, &work, &args, env);
    one.assert_no_panic();
    let want = Expected {
        stdout: Report::of(&one.stdout_text(), label),
        code: one.code.unwrap_or(-1),
        files: files
            .iter()
            .map(|f| (work.join("single").join(f), f.to_string()))
            .collect(),
    };
    for (path, _) in &want.files {
        assert!(
            path.is_file(),
            "the single run wrote no {}\n{}",
            path.display(),
            one.describe()
        );
    }
    // The same campaign as a Slurm job array and a merge job.
    let out_dir = work.join("D");
    let mut args: Vec<String> = vec!["slurm".into()];
    args.extend(single.iter().map(|s| s.to_string()));
    args.extend([
        "--tasks".into(),
        tasks.to_string(),
        "--submit".into(),
        "--out".into(),
    ]);
    args.push(out_dir.to_str().expect("UTF-8 path").into());
    let submitted = cltrap_env(Some(&cluster), &work, &args, env);
    submitted.assert_no_panic();
    assert!(
        submitted.success(),
        "{}\n{}",
        submitted.describe(),
        cluster.logs()
    );
    let jobs = job_ids(&submitted);
    assert_merged_equals(&cluster, label, &out_dir, &jobs, &want);
    then(&cluster, &out_dir);
    drop(cluster);
}

/// The documented retry: task 1 submitted again (`sbatch --array=1 DIR/tasks.sbatch`) resumes
/// its shard and runs none of the units it finished.
fn retry_resumes(cluster: &Cluster, out_dir: &Path) {
    let log = out_dir.join("logs/task-1.out");
    let before = std::fs::read_to_string(&log).unwrap_or_default();
    let tasks = out_dir.join("tasks.sbatch");
    let id = cluster.client(
        "sbatch",
        &[
            "--parsable",
            "--array=1",
            tasks.to_str().expect("UTF-8 path"),
        ],
    );
    let id = id.trim().split(';').next().unwrap_or("").to_string();
    assert!(
        !id.is_empty(),
        "sbatch did not take tasks.sbatch again\n{}",
        cluster.logs()
    );
    cluster.wait(&[&id], "the task submitted again");
    let after = std::fs::read_to_string(&log).unwrap_or_default();
    let again = after.strip_prefix(before.as_str()).unwrap_or(&after);
    assert!(
        again.contains("cltrap: --resume: 1 of 1 unit(s) finished before; running the other 0"),
        "task 1 submitted again did not resume (the log appends):\n{after}"
    );
    assert_eq!(cluster.outcome(&id).0, "COMPLETED", "{again}");
}

#[test]
fn check_through_slurm_equals_a_single_run() {
    let cap = capture(
        "slurm-check",
        &[
            "local_race",
            "local_race_fixed",
            "off_by_one",
            "off_by_one_fixed",
        ],
    );
    let cap = cap.to_str().expect("UTF-8 path").to_string();
    slurm_equals_single(
        "slurm-check",
        0,
        &["check", &cap, "--json", "--sarif", "check.sarif"],
        3,
        &["check.sarif"],
        // Whole reports are compared: the race check's counts depend on the order
        // work-groups run in, which several PoCL threads make vary from run to run.
        &[("POCL_MAX_PTHREAD_COUNT", "1")],
        retry_resumes,
    );
}

#[test]
fn mutate_through_slurm_equals_a_single_run() {
    let cap = capture("slurm-mutate", &["off_by_one_fixed", "local_race_fixed"]);
    let cap = cap.to_str().expect("UTF-8 path").to_string();
    slurm_equals_single(
        "slurm-mutate",
        1,
        &[
            "mutate",
            &cap,
            "--kernel",
            "off_by_one_fixed",
            "--timeout-ms",
            "20000",
            "--no-locate",
            "--json",
            "mutate.json",
        ],
        4,
        &["mutate.json"],
        // One PoCL thread, and no deadline a loaded machine could miss: verdicts that do not
        // depend on the machine (as in the mutate campaign tests).
        &[("POCL_MAX_PTHREAD_COUNT", "1")],
        |_, _| {},
    );
}

/// What `cltrap slurm` refuses, before writing anything: one sentence on stderr, exit 2.
#[test]
fn bad_slurm_command_lines_are_refused_in_one_sentence() {
    let work = fresh_dir("slurm", "refused");
    let cases: [(&[&str], &str); 4] = [
        (
            &["slurm", "list", "cap", "--tasks", "2"],
            "cltrap: cltrap slurm runs a campaign command (",
        ),
        (
            &["slurm", "check", "no-such-capture", "--tasks", "2"],
            "cltrap: no-such-capture cannot be read (",
        ),
        (
            &["slurm", "check", "no-such-capture"],
            "cltrap: cltrap slurm needs --tasks N",
        ),
        (
            &["slurm", "--tasks", "2", "check", "x", "--tasks", "3"],
            "cltrap: cltrap slurm got --tasks twice",
        ),
    ];
    for (args, start) in cases {
        let out = cltrap_in(&work, args);
        out.assert_no_panic();
        assert_eq!(out.code, Some(2), "{}", out.describe());
        let lines = meaningful_stderr_lines(&out.stderr);
        assert_eq!(lines.len(), 1, "{}", out.describe());
        assert!(lines[0].starts_with(start), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
    assert_eq!(
        std::fs::read_dir(&work).expect("work folder").count(),
        0,
        "a refused command wrote something"
    );
}

/// Without sbatch on PATH, `--submit` says so and prints the commands that submit the scripts
/// it wrote; the task script names this cltrap by its absolute path.
#[test]
fn without_sbatch_the_submit_commands_are_printed() {
    let work = fresh_dir("slurm", "no-sbatch");
    let capture = workspace_root().join("tests/fixtures/capture-v3");
    let t = tools();
    let out = run_with_env(
        &t.cltrap,
        &[
            "slurm",
            "check",
            capture.to_str().expect("UTF-8"),
            "--tasks",
            "2",
            "--submit",
            "--out",
            "D",
        ],
        &[("PATH", OsStr::new("/nonexistent"))],
        Some(&work),
    );
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("cltrap: sbatch is not on PATH: nothing submitted"),
        "{}",
        out.describe()
    );
    let dir = work.join("D");
    let stdout = out.stdout_text();
    assert!(
        stdout.contains(&format!(
            "  array=$(sbatch --parsable {}/tasks.sbatch)\n",
            dir.display()
        )) && stdout.contains(&format!(
            "  sbatch --dependency=afterok:\"${{array%%;*}}\" {}/merge.sbatch\n",
            dir.display()
        )),
        "{}",
        out.describe()
    );
    let tasks = std::fs::read_to_string(dir.join("tasks.sbatch")).expect("tasks.sbatch");
    assert!(tasks.contains("#SBATCH --array=0-1\n"), "{tasks}");
    let exe = t.cltrap.canonicalize().expect("cltrap's path");
    assert!(
        tasks.contains(&format!("exec {} check --shard ", exe.display())),
        "{tasks}"
    );
    let merge = std::fs::read_to_string(dir.join("merge.sbatch")).expect("merge.sbatch");
    assert!(
        merge.contains(&format!("{}/shard-1 \\\n", dir.display())),
        "{merge}"
    );
}
