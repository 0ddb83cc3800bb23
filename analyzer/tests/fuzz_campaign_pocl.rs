//! `cltrap fuzz` as a campaign (one unit per kernel): three shards merged, a run killed
//! partway and resumed, and a run spread over two devices all give the suite (launches,
//! blobs, `fuzz.json`) and the report of one plain run, apart from timings. On the real
//! OpenCL runtime (PoCL); `POCL_DEVICES="pthread pthread"` gives it two CPU devices.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Four kernels; `d` writes far out of its buffer for large `w` (a crash: findings). Fuzzing
/// leaves a branch each of `a`, `b` and `d` to the solver (so a suite whose solved cases are
/// appended in the order shards ran differs from one run's).
const KERNELS: &str = "__kernel void a(__global int *out, int x)\n\
{\n\
  int i = get_global_id(0);\n\
  if (x == 1234) out[i] = 1; else out[i] = 2;\n\
  if (x > 100) out[i] += 3;\n\
}\n\
__kernel void b(__global int *out, int y)\n\
{\n\
  int i = get_global_id(0);\n\
  if (y < -5) out[i] = 7;\n\
  else if (y == 3) out[i] = 9;\n\
}\n\
__kernel void c(__global int *out, int z)\n\
{\n\
  int i = get_global_id(0);\n\
  if (z & 4) out[i] = z;\n\
}\n\
__kernel void d(__global int *out, int w)\n\
{\n\
  int i = get_global_id(0);\n\
  if (w > 1000) out[i + 100000000] = 1;\n\
  else if (w == -4321) out[i] = 5;\n\
  else out[i] = w;\n\
}\n";

fn setup(name: &str) -> (PathBuf, String) {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("k.cl");
    std::fs::write(&k, KERNELS).unwrap();
    (dir, k.to_str().unwrap().to_string())
}

/// The report without timings (the last two columns of the table) and with the suite's
/// folder written as `SUITE`.
fn normal_report(text: &str, suite: &Path) -> String {
    let text = text.replace(suite.to_str().unwrap(), "SUITE");
    text.lines()
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let timed = words.len() >= 10
                && words[words.len() - 2]
                    .strip_suffix('s')
                    .is_some_and(|t| t.parse::<f64>().is_ok());
            if timed {
                words[..words.len() - 2].join(" ")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `fuzz.json` without its timings.
fn normal_json(suite: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    for k in v["kernels"].as_array_mut().unwrap() {
        let k = k.as_object_mut().unwrap();
        for f in [
            "compile_ms",
            "run_ms",
            "saturation_ms",
            "solve_ms",
            "confirm_ms",
        ] {
            k.remove(f);
        }
        for s in k["slots"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("solve_ms");
        }
    }
    v
}

/// Every file of a capture folder that is the same in every run (its launches and blobs),
/// by path relative to `root`, with contents.
fn capture_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            if rel == "campaigns" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if rel.ends_with("launches.jsonl") || rel.contains("blobs/") {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn assert_same_suite(a: &Path, b: &Path) {
    assert_eq!(
        normal_json(a),
        normal_json(b),
        "fuzz.json of {} and {}",
        a.display(),
        b.display()
    );
    let (fa, fb) = (capture_files(a), capture_files(b));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fa), names(&fb));
    assert!(
        fa.iter().any(|x| x.0 == "findings/d/launches.jsonl"),
        "{:?}",
        names(&fa)
    );
    for (x, y) in fa.iter().zip(&fb) {
        assert!(
            x.1 == y.1,
            "{} differs between {} and {}",
            x.0,
            a.display(),
            b.display()
        );
    }
}

/// A plain run into `dir/NAME`: (report, suite).
fn plain(
    dir: &Path,
    k: &str,
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (String, PathBuf) {
    let suite = dir.join(name);
    let mut args = vec![
        "fuzz",
        k,
        "--budget",
        "2000",
        "--out",
        suite.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = common::cltrap(&args, env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("suite written to"), "{out}{err}");
    (normal_report(&out, &suite), suite)
}

#[test]
fn three_shards_merged_give_the_suite_and_report_of_one_run() {
    let (dir, k) = setup("fuzz-campaign-shards");
    let (report, suite) = plain(&dir, &k, "one", &[], &[]);
    // Kernel d crashes: its findings are located (Oclgrind), and renumbered by the merge.
    assert!(report.contains("finding in d: crash"), "{report}");
    let shard_suite = dir.join("sharded");
    let mut shards = Vec::new();
    for i in 0..3 {
        let cdir = dir.join(format!("shard{i}"));
        let (code, out, err) = common::cltrap(
            &[
                "fuzz",
                &k,
                "--budget",
                "2000",
                "--out",
                shard_suite.to_str().unwrap(),
                "--shard",
                &format!("{i}/3"),
                "--campaign-dir",
                cdir.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, 0, "{out}{err}");
        // Shards write no report and no suite: the merge does.
        assert!(out.is_empty(), "{out}");
        assert!(!shard_suite.join("fuzz.json").exists());
        shards.push(cdir.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged");
    let mut args = vec!["merge", merged.to_str().unwrap()];
    args.extend(shards.iter().map(String::as_str));
    let (code, out, err) = common::cltrap(&args, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let merged_suite = merged.join("sharded");
    assert_eq!(normal_report(&out, &merged_suite), report);
    assert_same_suite(&suite, &merged_suite);
}

/// The processes `pid` started, and theirs (from /proc).
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
                out.push(k);
                todo.push(k);
            }
        }
    }
    out
}

fn finished_units(cdir: &Path) -> usize {
    std::fs::read_to_string(cdir.join("units.jsonl"))
        .map(|t| t.lines().skip(1).filter(|l| l.ends_with('}')).count())
        .unwrap_or(0)
}

/// Runs `cltrap ARGS` and kills it (with every process it started, as a node that goes
/// down) after its first unit is journaled in `cdir`, a moment later that changes from run
/// to run; returns how many units the journal holds then (some, not all of the four).
fn kill_after_first_unit(args: &[&str], cdir: &Path) -> usize {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed (with every process it started, as a node that goes down) after its first
    // kernel is journaled, a moment later that changes from run to run.
    let start = Instant::now();
    while finished_units(cdir) == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended before any kill"
        );
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no kernel finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::thread::sleep(Duration::from_millis(u64::from(nanos % 100)));
    let all = descendants(child.id());
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
        for p in &all {
            libc::kill(*p as i32, libc::SIGKILL);
        }
    }
    let status = child.wait().unwrap();
    assert!(
        status.code().is_none(),
        "the campaign finished before it was killed"
    );
    let before = finished_units(cdir);
    assert!((1..4).contains(&before), "{before} kernel(s) journaled");
    before
}

/// The devices the journal in `cdir` says units ran on (the second PoCL device among them).
fn journal_devices(cdir: &Path) -> BTreeSet<String> {
    let journal = std::fs::read_to_string(cdir.join("units.jsonl")).unwrap();
    let devices: BTreeSet<String> = journal
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["device"].to_string())
        .collect();
    assert!(devices.iter().any(|d| d.contains("0:1 ")), "{journal}");
    devices
}

#[test]
fn a_run_killed_partway_and_resumed_gives_the_suite_and_report_of_a_clean_run() {
    let (dir, k) = setup("fuzz-campaign-resume");
    let (report, suite) = plain(&dir, &k, "clean", &["--no-locate"], &[]);
    let killed = dir.join("killed");
    let cdir = dir.join("campaign");
    let args = [
        "fuzz",
        &k,
        "--budget",
        "2000",
        "--out",
        killed.to_str().unwrap(),
        "--no-locate",
        "--campaign-dir",
        cdir.to_str().unwrap(),
    ];
    let before = kill_after_first_unit(&args, &cdir);
    assert!(!killed.join("fuzz.json").exists());
    let mut again: Vec<&str> = args.to_vec();
    again.push("--resume");
    let (code, out, err) = common::cltrap(&again, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!("--resume: {before} of 4 unit(s) finished before")),
        "{err}"
    );
    assert_eq!(normal_report(&out, &killed), report);
    assert_same_suite(&suite, &killed);
}

#[test]
fn two_devices_share_the_kernels_and_give_the_results_of_one() {
    let two = [("POCL_DEVICES", "pthread pthread")];
    let (dir, k) = setup("fuzz-campaign-devices");
    let (report, suite) = plain(&dir, &k, "one", &["--no-locate"], &two);
    let cdir = dir.join("campaign");
    let (report2, suite2) = plain(
        &dir,
        &k,
        "two",
        &[
            "--no-locate",
            "--devices",
            "all",
            "--campaign-dir",
            cdir.to_str().unwrap(),
        ],
        &two,
    );
    assert_eq!(journal_devices(&cdir).len(), 2);
    assert_eq!(report2, report);
    assert_same_suite(&suite, &suite2);
}

/// Copies the capture folder `from` to `to` (its campaigns left out).
fn copy_suite(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_name() == "campaigns" {
            continue;
        }
        if src.is_dir() {
            copy_suite(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A suite with branches fuzzing left (kernels a, b and d), copied to `dir/NAME` per name.
fn solve_setup(name: &str, copies: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let (dir, k) = setup(name);
    let base = dir.join("base");
    let (code, out, err) = common::cltrap(
        &[
            "fuzz",
            &k,
            "--budget",
            "300",
            "--no-locate",
            "--out",
            base.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let out = copies
        .iter()
        .map(|c| {
            let to = dir.join(c);
            copy_suite(&base, &to);
            to
        })
        .collect();
    (dir, out)
}

/// `cltrap solve`'s report without timings: the table's last two columns and the solver's
/// time per branch.
fn normal_solve_report(text: &str, suite: &Path) -> String {
    normal_report(text, suite)
        .lines()
        .map(|l| match l.rfind(" (") {
            Some(i) if l.ends_with(" ms)") => l[..i].to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn solve(suite: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["solve", suite.to_str().unwrap(), "--solver-time", "20"];
    args.extend_from_slice(extra);
    let (code, out, err) = common::cltrap(&args, env);
    assert_eq!(code, 0, "{out}{err}");
    normal_solve_report(&out, suite)
}

#[test]
fn solve_in_three_shards_merged_completes_the_suite_as_one_run() {
    let (dir, suites) = solve_setup("solve-campaign-shards", &["one", "sharded"]);
    let report = solve(&suites[0], &[], &[]);
    assert!(report.contains("solved and confirmed"), "{report}");
    let mut shards = Vec::new();
    for i in 0..3 {
        let cdir = dir.join(format!("shard{i}"));
        let (code, out, err) = common::cltrap(
            &[
                "solve",
                suites[1].to_str().unwrap(),
                "--solver-time",
                "20",
                "--shard",
                &format!("{i}/3"),
                "--campaign-dir",
                cdir.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.is_empty(), "{out}");
        shards.push(cdir.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged");
    let mut args = vec!["merge", merged.to_str().unwrap()];
    args.extend(shards.iter().map(String::as_str));
    let (code, out, err) = common::cltrap(&args, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(normal_solve_report(&out, &suites[1]), report);
    assert_same_suite(&suites[0], &suites[1]);
}

#[test]
fn solve_killed_partway_and_resumed_completes_the_suite_as_a_clean_run() {
    let (dir, suites) = solve_setup("solve-campaign-resume", &["clean", "killed"]);
    let report = solve(&suites[0], &[], &[]);
    let cdir = dir.join("campaign");
    let args = [
        "solve",
        suites[1].to_str().unwrap(),
        "--solver-time",
        "20",
        "--campaign-dir",
        cdir.to_str().unwrap(),
    ];
    let before = kill_after_first_unit(&args, &cdir);
    let mut again: Vec<&str> = args.to_vec();
    again.push("--resume");
    let (code, out, err) = common::cltrap(&again, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!("--resume: {before} of 4 unit(s) finished before")),
        "{err}"
    );
    assert_eq!(normal_solve_report(&out, &suites[1]), report);
    assert_same_suite(&suites[0], &suites[1]);
}

#[test]
fn solve_on_two_devices_completes_the_suite_as_on_one() {
    let two = [("POCL_DEVICES", "pthread pthread")];
    let (dir, suites) = solve_setup("solve-campaign-devices", &["one", "two"]);
    let report = solve(&suites[0], &[], &two);
    let cdir = dir.join("campaign");
    let report2 = solve(
        &suites[1],
        &["--devices", "all", "--campaign-dir", cdir.to_str().unwrap()],
        &two,
    );
    assert_eq!(journal_devices(&cdir).len(), 2);
    assert_eq!(report2, report);
    assert_same_suite(&suites[0], &suites[1]);
}
