//! `cltrap mutate` as a campaign on the real PoCL runtime: three shards merged with
//! `cltrap merge`, a run killed partway and resumed, and two PoCL devices with
//! `--devices all` all write the same reports (terminal and mutation JSON) as one plain run.
//! The original's runs on the test cases are units too (`case-<launch>`, journaled in the
//! campaign folder's `cases/`): they spread over both devices, and a merge takes them from
//! the shards' journals instead of running the original again.

mod common;
use common::*;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One PoCL thread per device, so the verdicts do not depend on the machine.
const ENV: &[(&str, &str)] = &[("POCL_MAX_PTHREAD_COUNT", "1")];

/// A suite of two launches of `threshold.cl` (two test cases, a dozen mutants).
fn suite(name: &str) -> Fixture {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("POCL_MAX_PTHREAD_COUNT", "1");
    let mut f = Fixture::new(name);
    for (values, t) in [(&[1, 5, 9, 4][..], 5), (&[7, 2, 6, 3, 8, 0][..], 6)] {
        f.launch(
            "../mutate/threshold.cl",
            "threshold",
            &[values.len() as u64],
            None,
            None,
            vec![
                A::Buf("in", "int*", i32s(values)),
                A::Buf("out", "int*", i32s(&vec![0; values.len()])),
                int("t", t),
            ],
        );
    }
    f
}

/// The command line of the campaign (the report JSON at `json`) plus `extra`.
fn args(f: &Fixture, json: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "mutate",
        f.dir.to_str().unwrap(),
        "--operators",
        "all",
        "--timeout-ms",
        "20000",
        "--jobs",
        "1",
        "--no-locate",
        "--json",
        json.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The reference for the schema tests: the campaign compiled one mutant at a time, its report
/// in `per-mutant.json`; returns the report's path and the run's stdout.
fn per_mutant_reference(f: &Fixture, env: &[(&str, &str)]) -> (std::path::PathBuf, String) {
    let json = f.dir.join("per-mutant.json");
    let dir = f.dir.join("per-mutant-campaign");
    let extra = [
        "--per-mutant-compile",
        "--campaign-dir",
        dir.to_str().unwrap(),
    ];
    let out = run(&args(f, &json, &extra), env);
    (json, out)
}

fn run(a: &[String], env: &[(&str, &str)]) -> String {
    let v: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, out, err) = cltrap(&v, env);
    assert_eq!(code, 0, "cltrap {}\n{out}\n{err}", a.join(" "));
    out
}

/// The journal's lines: the header, then one finished unit each.
fn journal(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("units.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn units_of(j: &[Value]) -> Vec<&Value> {
    j.iter().filter(|l| l.get("unit").is_some()).collect()
}

/// The campaign `a` started in the background (its stderr to `stderr`).
fn spawn(a: &[String], stderr: std::process::Stdio) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(a)
        .envs(ENV.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Waits until the journal in `dir` holds a finished unit.
fn wait_for_a_unit(dir: &Path) {
    let start = Instant::now();
    while units_of(&journal(dir)).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no unit finished in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A plain run's terminal report and mutation JSON, and its unit count.
fn single(f: &Fixture, extra: &[&str]) -> (String, String, usize) {
    let json = f.dir.join("single.json");
    let dir = f.dir.join("single-campaign");
    let mut e = vec!["--campaign-dir", dir.to_str().unwrap()];
    e.extend_from_slice(extra);
    let out = run(&args(f, &json, &e), ENV);
    let units = units_of(&journal(&dir)).len();
    assert!(units >= 6, "a campaign of several units: {units}\n{out}");
    assert!(
        out.contains("KILLED") || out.contains("Killed") || out.contains("killed"),
        "{out}"
    );
    (out, std::fs::read_to_string(&json).unwrap(), units)
}

#[test]
fn three_shards_merged_write_the_reports_of_one_run() {
    let f = suite("campaign-shards");
    let (out, json, units) = single(&f, &[]);
    let mut shards: Vec<PathBuf> = Vec::new();
    for i in 0..3 {
        let dir = f.dir.join(format!("shard-{i}"));
        let shard = format!("{i}/3");
        let printed = run(
            &args(
                &f,
                &f.dir.join("shard.json"),
                &["--shard", &shard, "--campaign-dir", dir.to_str().unwrap()],
            ),
            ENV,
        );
        assert_eq!(printed, "", "a shard writes no report");
        let n = units_of(&journal(&dir)).len();
        assert!(n > 0 && n < units, "shard {i} ran {n} of {units} units");
        shards.push(dir);
    }
    let merged = f.dir.join("merged");
    let mut m = vec!["merge".to_string(), merged.to_str().unwrap().to_string()];
    m.extend(shards.iter().map(|p| p.to_str().unwrap().to_string()));
    let merged_out = run(&m, ENV);
    assert_eq!(merged_out, out, "the merge's terminal report");
    // The report file the shards' command names, written into the merge's folder.
    let merged_json = std::fs::read_to_string(merged.join("shard.json")).unwrap();
    assert_eq!(merged_json, json, "the merge's mutation JSON");

    // A shard's test-case journal planted as a link is refused, said, and the cases it held
    // run again in the merge: the same reports.
    let cases = shards[0].join("cases").join("units.jsonl");
    let real = shards[0].join("cases-real.jsonl");
    std::fs::rename(&cases, &real).unwrap();
    std::os::unix::fs::symlink(&real, &cases).unwrap();
    let again = f.dir.join("merged-again");
    m[1] = again.to_str().unwrap().to_string();
    let v: Vec<&str> = m.iter().map(String::as_str).collect();
    let (code, again_out, err) = cltrap(&v, ENV);
    assert_eq!(code, 0, "{again_out}\n{err}");
    assert_eq!(again_out, out, "the merge's terminal report");
    assert!(
        err.contains("symbolic link") && err.contains("run again"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(again.join("shard.json")).unwrap(),
        json
    );
}

#[test]
fn a_run_killed_partway_and_resumed_writes_the_reports_of_one_run() {
    let f = suite("campaign-resume");
    // Many repeats make each unit last long enough to kill the run between two of them.
    let slow = ["--repeats", "60"];
    let (out, json, units) = single(&f, &slow);
    let dir = f.dir.join("killed");
    let report = f.dir.join("resumed.json");
    let mut a = args(&f, &report, &["--campaign-dir", dir.to_str().unwrap()]);
    a.extend(slow.iter().map(|s| s.to_string()));
    let mut child = spawn(&a, std::process::Stdio::null());
    // Killed once some but not all units finished.
    wait_for_a_unit(&dir);
    child.kill().unwrap();
    child.wait().unwrap();
    let before = units_of(&journal(&dir)).len();
    assert!(before < units, "killed after {before} of {units} units");
    assert!(!report.exists(), "the killed run wrote no report");
    let mut again = a.clone();
    again.push("--resume".into());
    let resumed = run(&again, ENV);
    assert_eq!(resumed, out, "the resumed run's terminal report");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), json);
    assert_eq!(
        units_of(&journal(&dir)).len(),
        units,
        "every unit once in the journal"
    );
}

#[test]
fn two_pocl_devices_share_the_units_and_give_the_same_reports() {
    let f = suite("campaign-devices");
    let (out, json, _) = single(&f, &[]);
    let dir = f.dir.join("devices");
    let report = f.dir.join("devices.json");
    let env = [
        ("POCL_MAX_PTHREAD_COUNT", "1"),
        ("POCL_DEVICES", "pthread pthread"),
    ];
    let a = args(
        &f,
        &report,
        &["--devices", "all", "--campaign-dir", dir.to_str().unwrap()],
    );
    let printed = run(&a, &env);
    assert_eq!(printed, out.replace("single.json", "devices.json"));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), json);
    let devices: std::collections::BTreeSet<String> = units_of(&journal(&dir))
        .iter()
        .map(|l| l["device"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(devices.len(), 2, "units on both devices: {devices:?}");
}

/// Ctrl-C while the original runs on the test cases (the first of mutate's two campaigns)
/// ends the command as an interrupted campaign does: exit 130, saying `--resume` goes on; and
/// `--resume` then writes the report of one plain run.
#[test]
fn ctrl_c_during_the_test_cases_exits_130_and_resume_finishes() {
    let f = wide_suite("campaign-cases-sigint", 60);
    let (out, _, _) = single(&f, &[]);
    let dir = f.dir.join("interrupted");
    let report = f.dir.join("interrupted.json");
    let a = args(&f, &report, &["--campaign-dir", dir.to_str().unwrap()]);
    let child = spawn(&a, std::process::Stdio::piped());
    wait_for_a_unit(&dir.join("cases"));
    // SAFETY: signals a child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    let cases = units_of(&journal(&dir.join("cases"))).len();
    if cases < 60 {
        // Stopped among the test cases (on a fast machine the signal may land later).
        assert_eq!(ended.status.code(), Some(130), "{err}");
        assert!(err.contains("--resume"), "{err}");
        assert!(
            !report.exists(),
            "no report from a run stopped before its mutants"
        );
    }
    let mut again = a.clone();
    again.push("--resume".into());
    assert_eq!(run(&again, ENV), out, "the resumed run's terminal report");
}

/// A suite of `n` launches of `threshold.cl`, launch `i` on six inputs and a threshold
/// `row(i)` gives.
fn threshold_suite(name: &str, n: usize, row: impl Fn(i32) -> ([i32; 6], i32)) -> Fixture {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("POCL_MAX_PTHREAD_COUNT", "1");
    let mut f = Fixture::new(name);
    for i in 0..n as i32 {
        let (values, t) = row(i);
        f.launch(
            "../mutate/threshold.cl",
            "threshold",
            &[values.len() as u64],
            None,
            None,
            vec![
                A::Buf("in", "int*", i32s(&values)),
                A::Buf("out", "int*", i32s(&[0; 6])),
                int("t", t),
            ],
        );
    }
    f
}

/// A suite of `n` launches of `threshold.cl`.
fn wide_suite(name: &str, n: usize) -> Fixture {
    threshold_suite(name, n, |i| ([i, 5 - i, 9, 4 + i, 2 * i, 7], 4 + i % 3))
}

#[test]
fn the_test_cases_run_as_units_on_both_devices() {
    let f = wide_suite("campaign-cases-devices", 8);
    let dir = f.dir.join("devices");
    let env = [
        ("POCL_MAX_PTHREAD_COUNT", "1"),
        ("POCL_DEVICES", "pthread pthread"),
    ];
    let a = args(
        &f,
        &f.dir.join("devices.json"),
        &["--devices", "all", "--campaign-dir", dir.to_str().unwrap()],
    );
    run(&a, &env);
    let cases = journal(&dir.join("cases"));
    let units = units_of(&cases);
    let case_units: Vec<&&Value> = units
        .iter()
        .filter(|l| l["unit"].as_str().unwrap_or("").starts_with("case-"))
        .collect();
    assert_eq!(case_units.len(), 8, "one case unit per launch: {units:?}");
    let devices: std::collections::BTreeSet<String> = case_units
        .iter()
        .map(|l| l["device"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(devices.len(), 2, "test cases on both devices: {devices:?}");
}

#[test]
fn a_merge_takes_the_test_cases_from_the_shards_journals() {
    let f = suite("campaign-cases-merge");
    let (out, _, _) = single(&f, &[]);
    let mut shards: Vec<PathBuf> = Vec::new();
    for i in 0..2 {
        let dir = f.dir.join(format!("shard-{i}"));
        let shard = format!("{i}/2");
        run(
            &args(
                &f,
                &f.dir.join("shard.json"),
                &["--shard", &shard, "--campaign-dir", dir.to_str().unwrap()],
            ),
            ENV,
        );
        // Every shard ran the original on every test case.
        let cases = units_of(&journal(&dir.join("cases")))
            .iter()
            .filter(|l| l["unit"].as_str().unwrap_or("").starts_with("case-"))
            .count();
        assert_eq!(cases, 2);
        shards.push(dir);
    }
    // The merge of the untouched shards writes the single run's report, and runs no case.
    let merged = f.dir.join("merged");
    let mut m = vec!["merge".to_string(), merged.to_str().unwrap().to_string()];
    m.extend(shards.iter().map(|p| p.to_str().unwrap().to_string()));
    assert_eq!(run(&m, ENV), out, "the merge's terminal report");
    assert!(
        !merged.join("cases").exists(),
        "the merge ran no test case itself"
    );
    // A case result planted in the shards' journals, each line sealed with this user's key as
    // cltrap seals it, is what the merge reports: it read them rather than running the
    // original again. Planted without a seal (a journal from elsewhere), it is refused, said,
    // and the cases run again: the true report.
    use cltrap_analyzer::campaign::seal::Seal;
    let plant = |sealed: bool| {
        for dir in &shards {
            let path = dir.join("cases").join("units.jsonl");
            let text = std::fs::read_to_string(&path).unwrap();
            // Result lines are sealed in the context of their header's seal.
            let context = Seal::of(text.lines().next().unwrap()).unwrap().to_string();
            let planted: Vec<String> = text
                .lines()
                .map(|l| {
                    let mut v: Value = serde_json::from_str(l).unwrap();
                    if v["unit"] != "case-0" {
                        return l.to_string();
                    }
                    v["result"]["dropped"] =
                        Value::String("launch 0 (threshold): not a test case: planted".into());
                    v.as_object_mut().unwrap().remove("seal");
                    if sealed {
                        Seal::get().seal(&context, &v.to_string())
                    } else {
                        v.to_string()
                    }
                })
                .collect();
            std::fs::write(&path, planted.join("\n") + "\n").unwrap();
        }
    };
    plant(false);
    let forged = f.dir.join("merged-forged");
    m[1] = forged.to_str().unwrap().to_string();
    let v: Vec<&str> = m.iter().map(String::as_str).collect();
    let (code, forged_out, err) = cltrap(&v, ENV);
    assert_eq!(code, 0, "{forged_out}\n{err}");
    assert_eq!(forged_out, out, "the forged case result was used");
    assert!(err.contains("carry no seal of your journal key"), "{err}");
    plant(true);
    let again = f.dir.join("merged-again");
    m[1] = again.to_str().unwrap().to_string();
    let replanted = run(&m, ENV);
    assert!(
        replanted.contains("not a test case: planted"),
        "the merge took the cases from the journals:\n{replanted}"
    );
}

/// Each mutant's id and verdict in a mutation JSON report.
fn verdicts(json: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(json).unwrap();
    let mut out = Vec::new();
    for f in v["files"].as_object().unwrap().values() {
        for m in f["mutants"].as_array().unwrap() {
            out.push((
                m["id"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

#[test]
fn a_schema_the_driver_cannot_run_falls_back_to_one_compile_per_mutant() {
    let f = suite("campaign-schema-fallback");
    let (per_mutant, _) = per_mutant_reference(&f, ENV);
    // The knob makes every run of the original through the schema crash its worker, as a
    // driver that cannot run the schema would.
    let json = f.dir.join("fallback.json");
    let dir = f.dir.join("fallback-campaign");
    let mut env = ENV.to_vec();
    env.push(("CLTRAP_TEST_SCHEMA_CRASH", "1"));
    let out = run(
        &args(&f, &json, &["--campaign-dir", dir.to_str().unwrap()]),
        &env,
    );
    assert!(
        out.contains("cannot run the original through the mutant schema"),
        "the fallback is noted:\n{out}"
    );
    let checks = units_of(&journal(&dir.join("cases")))
        .iter()
        .filter(|l| l["unit"].as_str().unwrap_or("").starts_with("schema-"))
        .count();
    assert!(checks >= 1, "the schema was checked in a unit of its own");
    let expected = verdicts(&std::fs::read_to_string(&per_mutant).unwrap());
    let got = verdicts(&std::fs::read_to_string(&json).unwrap());
    assert_eq!(got, expected, "the verdicts of one compile per mutant");
}

/// A worker whose coverage build fails runs its test cases through the captured program
/// itself, not through the mutants' schema: a schema the driver cannot run then costs no test
/// case (it crashed every case before), its own check finds it, and its mutants fall back to
/// one compile each, with the verdicts of a campaign compiled one mutant at a time.
#[test]
fn without_a_coverage_build_a_crashing_schema_costs_no_test_case() {
    let f = suite("campaign-no-coverage-build");
    let fail = ("CLTRAP_TEST_COVERAGE_BUILD_FAIL", "1");
    let mut env = ENV.to_vec();
    env.push(fail);
    let (per_mutant, want) = per_mutant_reference(&f, &env);
    let json = f.dir.join("crashing.json");
    let dir = f.dir.join("crashing-campaign");
    env.push(("CLTRAP_TEST_SCHEMA_CRASH", "1"));
    let out = run(
        &args(&f, &json, &["--campaign-dir", dir.to_str().unwrap()]),
        &env,
    );
    for o in [&want, &out] {
        assert!(
            o.contains("the coverage build failed"),
            "the failure is noted:\n{o}"
        );
        assert!(!o.contains("not a test case"), "no test case is lost:\n{o}");
    }
    assert!(
        out.contains("cannot run the original through the mutant schema"),
        "the schema's crash is found by its check:\n{out}"
    );
    let cases = units_of(&journal(&dir.join("cases")))
        .iter()
        .filter(|l| l["unit"].as_str().unwrap_or("").starts_with("case-"))
        .filter(|l| l["result"]["dropped"].is_null())
        .count();
    assert_eq!(cases, 2, "both launches are test cases");
    let expected = verdicts(&std::fs::read_to_string(&per_mutant).unwrap());
    let got = verdicts(&std::fs::read_to_string(&json).unwrap());
    assert!(got.iter().any(|(_, s)| s == "Killed"), "{got:?}");
    assert_eq!(got, expected, "the verdicts of one compile per mutant");
}

/// A mutant whose run writes into a guard zone is a RUNTIME-ERROR whose worker retires after
/// it (`Campaign::spent`): the mutant after it runs in a fresh worker, whatever the number of
/// workers, and one worker writes the mutation JSON of three. On a GPU such a run can leave
/// the process's device context broken for every later run (CUDA's sticky errors), which would
/// make a verdict depend on which mutant ran before it in the same worker.
#[test]
fn a_mutant_that_writes_into_a_guard_zone_retires_its_worker() {
    let f = suite("campaign-retire");
    let mut reports = Vec::new();
    for workers in ["1", "3"] {
        let json = f.dir.join("retire.json");
        let dir = f.dir.join(format!("workers-{workers}"));
        let mut a = args(&f, &json, &["--campaign-dir", dir.to_str().unwrap()]);
        let jobs = a.iter().position(|s| s == "--jobs").unwrap() + 1;
        a[jobs] = workers.to_string();
        let out = run(&a, ENV);
        // Units in the order they finished, and which of them wrote into a guard zone.
        let guarded: Vec<bool> = units_of(&journal(&dir))
            .iter()
            .map(|l| {
                l["result"]["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("(caught in its guard zone)")
            })
            .collect();
        let breaches = guarded.iter().filter(|g| **g).count();
        let stats: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap())
                .unwrap();
        assert!(
            breaches >= 2,
            "mutants that write out of bounds: {guarded:?}\n{out}"
        );
        assert_eq!(
            stats["retired"].as_u64(),
            Some(breaches as u64),
            "{stats}\n{out}"
        );
        if workers == "1" {
            // In the one slot, other mutants ran after a breach: in fresh workers, the first
            // one and one per retirement (spares included).
            let first = guarded.iter().position(|g| *g).unwrap_or(guarded.len());
            assert!(guarded[first..].iter().any(|g| !*g), "{guarded:?}");
            assert_eq!(stats["workers"].as_u64(), Some(1), "{stats}");
            assert!(
                stats["started"].as_u64().unwrap() > breaches as u64,
                "a worker per retirement, and the first: {stats}"
            );
        }
        reports.push((out, std::fs::read_to_string(&json).unwrap()));
    }
    assert_eq!(
        reports[0], reports[1],
        "one worker and three write the same reports"
    );
}

/// `n` launches of `threshold.cl` none of whose inputs equals its threshold but the last
/// launch's: `<` turned into `<=` survives every test case but the last.
fn late_kill_suite(name: &str, n: usize) -> Fixture {
    threshold_suite(name, n, |i| {
        let last = i + 1 == n as i32;
        ([i % 4, 10 + i, 9, 1, 7, if last { 5 } else { 3 }], 5)
    })
}

/// A schema mutant's test cases split into batches (`CLTRAP_TEST_CASES_PER_UNIT` lowers the
/// batch size from 64 to 4: ten test cases make three batches) run as units of their own, and
/// their merge writes the reports of one unit per mutant: a mutant that survives the first
/// batches and dies in the last is KILLED with the last batch's detail, a survivor survives,
/// and three shards merged with `cltrap merge` agree.
#[test]
fn a_mutants_test_cases_in_batches_give_the_reports_of_one_unit_per_mutant() {
    let f = late_kill_suite("campaign-batches", 10);
    let (out, json, units) = single(&f, &[]);
    let batches = [
        ("POCL_MAX_PTHREAD_COUNT", "1"),
        ("CLTRAP_TEST_CASES_PER_UNIT", "4"),
    ];
    let dir = f.dir.join("batched");
    let report = f.dir.join("batched.json");
    let printed = run(
        &args(&f, &report, &["--campaign-dir", dir.to_str().unwrap()]),
        &batches,
    );
    assert_eq!(
        printed,
        out.replace("single.json", "batched.json"),
        "the terminal report"
    );
    assert_eq!(
        std::fs::read_to_string(&report).unwrap(),
        json,
        "the mutation JSON"
    );
    let batched_journal = journal(&dir);
    let finished = units_of(&batched_journal);
    assert!(
        finished.len() > units,
        "{} units in batches, {units} without",
        finished.len()
    );
    // Per split mutant, its batches' verdicts in batch order.
    let mut split: std::collections::BTreeMap<String, Vec<(u64, String)>> = Default::default();
    for l in &finished {
        let id = l["unit"].as_str().unwrap();
        if let Some((mutant, b)) = id.split_once("-cases-") {
            let status = l["result"]["status"].as_str().unwrap().to_string();
            split
                .entry(mutant.to_string())
                .or_default()
                .push((b.parse().unwrap(), status));
        }
    }
    for v in split.values_mut() {
        v.sort();
    }
    let statuses = |v: &Vec<(u64, String)>| v.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    // Every batch up to a mutant's first decisive one ran (the verdict is the walk's), and
    // the batches after it are dropped: units go out batch-major, so a mutant's first batch
    // has finished long before its second is handed out. (A batch already taken from the
    // queue when the result arrives still runs: drops are counted, not required of each.)
    let decisive = ["KILLED", "TIMEOUT", "RUNTIME-ERROR", "COMPILE-ERROR"];
    for (mutant, v) in &split {
        let numbers: Vec<u64> = v.iter().map(|(b, _)| *b).collect();
        let end = v
            .iter()
            .position(|(_, s)| decisive.contains(&s.as_str()))
            .map_or(3, |d| d + 1);
        assert!(
            numbers.starts_with(&(0..end as u64).collect::<Vec<_>>()),
            "{mutant}: {split:?}"
        );
    }
    let dropped = split.values().filter(|v| v.len() < 3).count();
    assert!(
        dropped > 0,
        "a mutant decided before its last batch: {split:?}"
    );
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    assert!(stats["superseded"].as_u64().unwrap() > 0, "{stats}");
    assert!(
        split
            .values()
            .any(|v| statuses(v) == ["SURVIVED", "SURVIVED", "KILLED"]),
        "a mutant killed in its last batch only: {split:?}"
    );
    assert!(
        split
            .values()
            .any(|v| statuses(v) == ["SURVIVED", "SURVIVED", "SURVIVED"]),
        "a surviving mutant in three batches: {split:?}"
    );
    assert!(
        verdicts(&json).iter().any(|(_, s)| s == "Survived"),
        "a survivor in the report: {json}"
    );
    // The same under permuted schedules and repeats (every batch carries its test cases'
    // seeds); and one compile per mutant is one unit per mutant (each batch would compile it).
    for extra in [
        &["--schedules", "2", "--repeats", "2"][..],
        &["--per-mutant-compile"],
    ] {
        let name = if extra.len() > 1 {
            "schedules"
        } else {
            "per-mutant"
        };
        let plain = f.dir.join(format!("{name}-plain"));
        let mut e = vec!["--campaign-dir", plain.to_str().unwrap()];
        e.extend_from_slice(extra);
        let json_path = f.dir.join(format!("{name}.json"));
        let want = run(&args(&f, &json_path, &e), ENV);
        let want_json = std::fs::read_to_string(&json_path).unwrap();
        let dir = f.dir.join(format!("{name}-batched"));
        e[1] = dir.to_str().unwrap();
        assert_eq!(run(&args(&f, &json_path, &e), &batches), want, "{name}");
        assert_eq!(
            std::fs::read_to_string(&json_path).unwrap(),
            want_json,
            "{name}"
        );
        let split = units_of(&journal(&dir))
            .iter()
            .any(|l| l["unit"].as_str().unwrap().contains("-cases-"));
        assert_eq!(split, name == "schedules", "{name}: split into batches");
    }
    // Three shards of the batched campaign (batches of one mutant in different shards) and
    // their merge, which splits the mutants the same way.
    let mut shards: Vec<PathBuf> = Vec::new();
    for i in 0..3 {
        let dir = f.dir.join(format!("shard-{i}"));
        let shard = format!("{i}/3");
        run(
            &args(
                &f,
                &f.dir.join("shard.json"),
                &["--shard", &shard, "--campaign-dir", dir.to_str().unwrap()],
            ),
            &batches,
        );
        shards.push(dir);
    }
    let merged = f.dir.join("merged");
    let mut m = vec!["merge".to_string(), merged.to_str().unwrap().to_string()];
    m.extend(shards.iter().map(|p| p.to_str().unwrap().to_string()));
    assert_eq!(
        run(&m, &batches),
        out.replace("single.json", "shard.json"),
        "the merge's terminal report"
    );
    assert_eq!(
        std::fs::read_to_string(merged.join("shard.json")).unwrap(),
        json
    );
}

/// A batched campaign killed partway (some of a mutant's batches journaled, others not) and
/// run again with `--resume` writes the reports of one plain run, each batch once.
#[test]
fn a_batched_run_killed_partway_and_resumed_writes_the_reports_of_one_run() {
    let f = late_kill_suite("campaign-batches-resume", 10);
    // Many repeats make each unit last long enough to kill the run between two of them.
    let slow = ["--repeats", "20"];
    let (out, json, _) = single(&f, &slow);
    let dir = f.dir.join("killed");
    let report = f.dir.join("resumed.json");
    let mut a = args(&f, &report, &["--campaign-dir", dir.to_str().unwrap()]);
    a.extend(slow.iter().map(|s| s.to_string()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(&a)
        .envs(ENV.iter().copied())
        .env("CLTRAP_TEST_CASES_PER_UNIT", "4")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_a_unit(&dir);
    child.kill().unwrap();
    child.wait().unwrap();
    let before = units_of(&journal(&dir)).len();
    let mut again = a.clone();
    again.push("--resume".into());
    let batches = [
        ("POCL_MAX_PTHREAD_COUNT", "1"),
        ("CLTRAP_TEST_CASES_PER_UNIT", "4"),
    ];
    let resumed = run(&again, &batches);
    assert_eq!(resumed, out, "the resumed run's terminal report");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), json);
    let ids: Vec<String> = units_of(&journal(&dir))
        .iter()
        .map(|l| l["unit"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "every unit once in the journal: {ids:?}"
    );
    assert!(ids.iter().any(|i| i.contains("-cases-")), "{ids:?}");
    assert!(
        before < ids.len(),
        "killed after {before} of {} units",
        ids.len()
    );
}

/// Ctrl-C amid a batched campaign (two workers, so a mutant's later batch may finish before
/// an earlier one): the report of what finished gives each mutant the verdict of the full
/// run, or none ("not evaluated") where its finished batches cannot decide it yet; never a
/// verdict that an unfinished earlier batch could still overturn.
#[test]
fn an_interrupted_batched_campaign_reports_only_decided_mutants() {
    let f = late_kill_suite("campaign-batches-sigint", 10);
    let slow = ["--repeats", "20"];
    let (_, json, _) = single(&f, &slow);
    let full = verdicts(&json);
    let dir = f.dir.join("interrupted");
    let report = f.dir.join("interrupted.json");
    let mut a = args(&f, &report, &["--campaign-dir", dir.to_str().unwrap()]);
    a.extend(slow.iter().map(|s| s.to_string()));
    let jobs = a.iter().position(|s| s == "--jobs").unwrap() + 1;
    a[jobs] = "2".into();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(&a)
        .envs(ENV.iter().copied())
        .env("CLTRAP_TEST_CASES_PER_UNIT", "4")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_unit(&dir);
    // SAFETY: signals a child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let ended = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&ended.stdout);
    let text = std::fs::read_to_string(&report).unwrap();
    let reasons: Vec<String> = {
        let v: Value = serde_json::from_str(&text).unwrap();
        v["files"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|f| f["mutants"].as_array().unwrap().clone())
            .map(|m| m["statusReason"].as_str().unwrap().to_string())
            .collect()
    };
    let got = verdicts(&text);
    assert_eq!(got.len(), full.len(), "{out}");
    for (((id, status), (full_id, full_status)), reason) in got.iter().zip(&full).zip(&reasons) {
        assert_eq!(id, full_id);
        assert!(
            status == full_status || reason.contains("not evaluated: the campaign was interrupted"),
            "mutant {id}: {reason} after Ctrl-C, {full_status} in the full run\n{out}"
        );
    }
}
